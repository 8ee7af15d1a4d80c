/* cuda_backend.c - the GPU executor: the persistent kernel and its host side.

   At context creation: load the CUDA driver (dlopen), compile the whole device
   source (generated kernels + src/device/persistent.cuh) with NVRTC for the
   device's compute capability, or load it from the disk cache, load the module and
   allocate the queue. Everything is loaded BEFORE the persistent kernel first runs:
   loading code while it runs blocks (GPU-FINDINGS.md).

   Submission (gpuos__cuda_pump_locked, called by the queue's pushes with ctx->mu
   held) turns each queued job into ring slots (src/gpuos_queue.h): a cached plan id
   (the plan is sent once, in PLAN slots, and reused while its bytes stay the same),
   a kernel id, a tiling, a base worker, and the dependencies that the per-storage
   access logs find (read-after-write, write-after-read, write-after-write). An
   element-wise task whose conflicting operand maps item i to the very element that
   its producer's item i touched inherits the producer's base: its tile t then runs
   on the same worker block as the producer's tile t, after it, and needs no wait.

   Completion: the kernel's retirer writes the last retired device sequence number
   into mapped host memory; whoever waits (and a reaper thread) retires the jobs up
   to it. The reaper also stops the kernel after idle_ms without work (so that other
   CUDA work and module loads are never blocked for long) and turns a device fault
   into the sticky GPUOS_ERR_DEVICE_LOST. */
#include "gpuos_runtime.h"

#include <errno.h>    /* errno */
#include <stdarg.h>   /* va_list */
#include <stdio.h>    /* snprintf, fopen */
#include <stdlib.h>   /* malloc, getenv */
#include <sched.h>    /* sched_yield */
#include <string.h>   /* memcpy, memcmp */
#include <sys/stat.h> /* mkdir */
#include <time.h>     /* nanosleep, clock_gettime */
#include <unistd.h>   /* getpid */

/* ---------------------------------------------------------------- driver constants */
#define CU_SUCCESS 0
#define CU_ERROR_NOT_READY 600
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY 19
#define CU_MEMHOSTALLOC_PORTABLE 0x01
#define CU_MEMHOSTALLOC_DEVICEMAP 0x02
#define CU_STREAM_NON_BLOCKING 0x1

#define CUDA__RING_SLOTS (1u << 16)  /* host ring: 4 MB of pinned memory */
#define CUDA__TASK_CAP (1u << 16)    /* device task ring */
#define CUDA__GPOOL (1u << 15)       /* recorded graphs' node descriptors on the device (1.8 MB) */
#define CUDA__INBOX_CAP 256u         /* entries per worker inbox */
#define CUDA__PLAN_CAP 4096u         /* cached plans on the device */
#define CUDA__PLAN_PROBE 8u
#define CUDA__LOG_LEN 8              /* remembered accesses per storage */
/* A wait spins this long before it sleeps: a sleep of 20 us lasts ~70 us with Linux's default
   timer slack, which added up to that much to every wait longer than the old spin budget
   (20000 reads, ~20-50 us: a 22-task job measured 78 us when waited for alone). */
#define CUDA__SPIN_NS 1000000ull
#define CUDA__TILE_EW 1024           /* element-wise items per tile (small tasks) */
#define CUDA__GRAPH_WIDE 4           /* a recorded graph this many times wider than deep ... */
#define CUDA__TILE_WIDE 4096         /* ... runs its element-wise tasks of up to this many items as one tile */
#define CUDA__EW_PASS 1024           /* items of one vector pass of a worker block (256 threads x 4) */
#define CUDA__MAX_PARTS 8 /* relocatable programs the device code is compiled as, at most (gen/gen.py MAX_PARTS) */
#define CUDA__OLD_MODS 16            /* swapped-out run-time modules kept until an idle stop */
/* A launch whose blocks are not all resident after this long fails the context: the workers
   wait on each other, so a block that never starts would hang the queue. */
#define CUDA__RESIDENT_NS 5000000000ull
#define CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES 1
#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8
#define CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT 9
#define CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR 81

/* One remembered access of a storage (device sequence numbers). */
typedef struct cuda__access {
    uint64_t dseq;
    uint64_t lo, hi; /* byte range */
    uint64_t sig;    /* element map of an element-wise operand; 0 = none */
    uint32_t base;
    uint32_t tile;   /* items a tile: tasks align only with equal tiles (the workers a tile count
                        gives depend on the launch's run-time workers, cuda_job_workers) */
    uint32_t lin;    /* bytes an item when tile t reaches exactly [lo + t tile lin, lo + (t + 1) tile
                        lin) (a contiguous element-wise operand of a built-in operator); 0: unknown */
    int write;
    int lane;        /* the task's lane (dseq is in its sequence) */
} cuda__access;

typedef struct cuda__log {
    int n;
    /* Accesses forgotten for room: every forgotten write (read) has a seq <= floor_w
       (floor_r). A later reader waits until floor_w retired, a later writer until both
       did (GPUOS__DEP_RETIRED): waiting for the floor task alone would miss older ones. */
    uint64_t floor_w[GPUOS__LANES], floor_r[GPUOS__LANES]; /* per lane */
    uint32_t ver;  /* changes (cuda_log_record, a repeat's renumbering): a task that writes here repeats
                      its last encoding only if nothing else touched the log since (cuda__memo) */
    uint32_t wver; /* writes recorded, write floors raised: likewise for a task that only reads here */
    cuda__access a[CUDA__LOG_LEN];
} cuda__log;

/* How a repeated task (gpuos__job.rep_key, rep_ver: the repeat table's entry, queue.c) was
   last encoded, so that the next identical one may repeat its descriptor (cuda_encode_repeat):
   kept only for an element-wise lane-0 task that had nothing to wait for. */
typedef struct cuda__memo {
    const void *rep_key;  /* NULL: empty */
    uint32_t rep_ver;
    uint32_t launch;      /* cuda's launches then: placement is per launch */
    uint64_t dseq;        /* its lane-0 sequence number */
    gpuos__qdesc d;       /* its descriptor */
    uint64_t plan_key;    /* its plan row's key (the row's epoch is in d.kind) */
    int n_acc;
    struct cuda__log *lg[GPUOS__MAX_PTR]; /* the log entries it recorded (dseq, lo, hi, write) */
    uint64_t lo[GPUOS__MAX_PTR], hi[GPUOS__MAX_PTR];
    int write[GPUOS__MAX_PTR];
    uint32_t ver[GPUOS__MAX_PTR];         /* the log's ver (written here) or wver (only read) after it */
    int xp;                               /* it was encoded express (cuda_xpress_pre): one tile on the express worker */
} cuda__memo;

typedef struct cuda__plan_entry {
    uint64_t key;
    uint64_t last_dseq[GPUOS__LANES]; /* the last task of each lane using it; reusable once retired */
    uint64_t wpos;      /* ring position after its chunks were last written, in lane wlane */
    int wlane;
    uint32_t bytes;
    uint32_t epoch;     /* plan writes numbering (24 bits): workers reuse their copy of a row of the same epoch */
    int used;
    int pins;           /* recorded graphs that refer to this row: never evicted while > 0 */
    unsigned char plan[GPUOS__PLAN_SLOTS * GPUOS__SLOT_PAYLOAD];
} cuda__plan_entry;

/* a fused few-row product's row tiles are cut in S 64-column slices from S = this on
   (cuda_matmul_rows; N >= 512; GPUOS_CUDA_MM_SLICES overrides, 0: never): bench/NOTES.md, session 23 */
#define CUDA__MM_SLICES 8
/* Express tasks (cuda_xpress_pre): at most this many tiles (element-wise; other kinds one),
   run whole by the express worker. GPUOS_CUDA_EXPRESS=N sets it; 0 turns express off.
   H100, same call, on (4) against off: a lone task's round trip 6.68 against 8.03 us, a task
   and a small download of its result 12.1-12.9 against 13.7-13.9 us (bench/NOTES.md, session
   24). On since session 25, when the whole GPU suite, the stress test and the sanitizers
   passed with it on (H100) */
#define CUDA__XPRESS_TILES 4
/* GPUOS_CUDA_EXPRESS's ceiling: a whole task on one block is slow past a few tiles, and its
   items must fit a descriptor's 32-bit tile size */
#define CUDA__XPRESS_MAX 64
/* ... and at most this many unretired at once (GPUOS_CUDA_EXPRESS_RUN). 1: only a task sent
   when every earlier one is retired; 2: also the task sent right behind it (a small download
   of its result), which the express worker takes next (the fetcher leaves it to the worker
   that has the task before it) */
#define CUDA__XPRESS_RUN 2
struct gpuos__cuda {
    const gpuos__cuda_api *cu;
    gpuos__CUdevice dev;
    gpuos__CUcontext cuctx;
    gpuos__CUmodule mod;         /* the built-in code and gpuos__pk_main: loaded once, at gpuos_create */
    gpuos__CUfunction fn;
    gpuos__CUstream stream;      /* the persistent kernel */
    /* run-time operators: the current generation's module and its kernel gpuos__pk_rt (none
       while no operator is defined), the one before a swap (unloaded at the next stop) */
    gpuos__CUmodule rt_mod;
    gpuos__CUmodule old_rt[CUDA__OLD_MODS]; /* swapped-out generations, unloaded at a stop that is no swap's */
    int n_old_rt;
    int swapping;                /* the stop is a swap's: unloading would add to its pause */
    int graph_waiting;           /* graph launches waiting for their turn with ctx->mu let go */
    gpuos__CUfunction rt_fn;
    gpuos__CUstream rt_stream;
    int n_rt;                    /* worker blocks of gpuos__pk_rt (0: none); the main kernel has n_workers - n_rt */
    int carveout;                /* preferred shared-memory carveout (%) of both kernels; -1: not set */
    int smem_main;               /* gpuos__pk_main's static shared memory (bytes; -1: unknown) */
    int smem_rt;                 /* gpuos__pk_rt's (the current run-time module's) */
    uint32_t *up;                /* pinned, mapped: n_blocks words, the blocks' residency (gpuos__pk_params.up) */
    int all_up;                  /* every block of the current launch was seen started */
    uint64_t launch_ns;
    gpuos__CUstream copy_stream; /* uploads and downloads */
    char name[128];
    int cc_major, cc_minor, sm_count, n_blocks, n_workers;
    double compile_ms;           /* 0 when the module came from the cache */
    double slowest_part_ms;      /* the slowest program's NVRTC time, and the link's (0: from the cache) */
    double link_ms;
    int from_cache;

    /* per lane (gpuos_queue.h): 0 normal, 1 high priority */
    gpuos__qslot *ring[GPUOS__LANES];         /* pinned, mapped */
    gpuos__pk_ctl *ctl;                       /* pinned, mapped */
    gpuos__pk_params P;                       /* device addresses */
    uint64_t pos[GPUOS__LANES];               /* next ring position */
    uint64_t dseq[GPUOS__LANES];              /* next device sequence number */
    uint64_t fetched_seen[GPUOS__LANES];      /* cached ctl->fetched, fetched_hi */
    uint64_t retired_seen[GPUOS__LANES];      /* cached ctl->retired, retired_hi */
    int running;
    int stuck;                   /* the kernel did not stop in time: free nothing the driver would wait on */
    uint32_t next_base;          /* round robin for unaligned tasks */
    uint32_t plan_epoch;         /* plans written so far */
    uint32_t plan_pins;          /* pinned plan rows (recorded graphs' nodes): at most half the table */
    int align;                   /* tile-local alignment on (GPUOS_CUDA_ALIGN=0 turns it off) */
    int subalign;                /* one-tile tasks within a tile of a contiguous element-wise access go
                                    to its worker (GPUOS_CUDA_SUBALIGN=0 turns it off) */
    int mm_rows;                 /* row tiles for fused few-row products (GPUOS_CUDA_MM_ROWS: 0 off, 2 also where
                                    the lean narrow block runs: A/B; default 1) */
    int mm_slices;               /* those rows in S 64-column slices from S = mm_slices (GPUOS_CUDA_MM_SLICES; 0: never) */
    int mm_f32;                  /* the f32 matmul's device kernel id */
    uint32_t tile_ew;            /* smallest element-wise tile (CUDA__TILE_EW; GPUOS_CUDA_TILE_EW, tuning) */
    uint32_t graph_wide;         /* CUDA__GRAPH_WIDE (GPUOS_CUDA_GRAPH_WIDE; 0: off) */
    uint32_t ew_per_worker;      /* a large element-wise task's tiles per worker (0: 4, or 2 for the largest:
                                    cuda_tiling; GPUOS_CUDA_EW_PER_WORKER, tuning) */
    int graph_slots;             /* launch recorded graphs as one slot per node (GPUOS_CUDA_GRAPH_SLOTS=1, A/B) */
    gpuos__qdesc *gpool;         /* device, CUDA__GPOOL descriptors: recorded graphs' nodes (allocated with
                                    the queue, before any kernel runs: memory allocated later is invisible
                                    to compute-sanitizer's checks of a running kernel) */
    struct cuda__grange *granges; /* the pool's used ranges, by lo */
    int n_granges, cap_granges;
    int serialize;               /* every task waits for all earlier ones (GPUOS_CUDA_SERIALIZE=1) */
    int hi_used;                 /* a task asked for high priority: lane-0 tasks get GPUOS__KIND_HICHECK */
    uint32_t xtiles;             /* express tasks of at most this many tiles (0: none; cuda_xpress_ok) */
    uint64_t xcount;             /* express tasks sent (the next one's q: mailbox slot q % GPUOS__XBOX) */
    uint64_t xseq[GPUOS__XBOX];  /* the seq of each mailbox slot's task (0: none) */
    uint64_t xfirst, xend;       /* the last run of consecutive express seqs: [xfirst, xend) */
    uint64_t xrun;               /* at most this many unretired express tasks (CUDA__XPRESS_RUN) */
    uint64_t last_activity_ns;   /* the reaper's last sight of a new task (or the launch) */
    uint64_t idle_dseq;          /* dseq at that sight */

    cuda__plan_entry *plans;
    cuda__memo *memo;            /* repeated tasks' last encodings (cuda_encode_repeat): one per repeat-table
                                    entry (gpuos__job.rep_slot) */
    uint32_t n_memo;             /* memo's count (ctx->tcache_n; 0: none) */
    uint32_t launches;           /* kernel launches so far (cuda__memo.launch) */

    /* run-time operators: what a module generation is linked from (cuda_build_module) */
    uint64_t base_key;           /* cache key of the built-in device code */
    int n_parts;                 /* relocatable programs it was compiled as (0: not relocatable) */
    char *opt_store[10];         /* the NVRTC options it was compiled with (copies; cuda_build_module's all) */
    int n_opt_store;
    void *rtw_img;               /* the run-time module's own code (part GPUOS__D_PART_RT), relocatable:
                                    compiled with the built-ins, else read from the cache on first need */
    size_t rtw_size;
    int generation;              /* modules swapped in so far */
    double last_swap_ms;         /* the last swap's pause: stop, load, table (diagnostics) */
    double last_rt_compile_ms;   /* the last run-time operator's NVRTC time (0: from the cache) */
    uint64_t open_ns[8];         /* gpuos_create's phases, ns from its start (probes): driver loaded,
                                    cuInit, context, module, function + occupancy, streams, queue, reaper */
    double last_rt_link_ms;      /* its generation's nvJitLink time (0: from the cache) */

    int in_gate;                 /* counted running in the device gate (cuda_gate_enter .. cuda_gate_leave) */
    struct gpuos__cuda *gate_next; /* the next context in its gate's queue of waiting launches */
    int gate_queued;             /* ... it is queued (a launch that waits, or one that will try again) */
    uint64_t gate_try_ns;        /* when a launch last tried the gate */
    int gate_stuck;              /* ... and counted there as stuck (a stuck kernel may run on: launches fail fast) */
    pthread_t reaper;
    int reaper_running, reaper_stop;
    pthread_t preload;           /* loads NVRTC and nvJitLink while the driver creates the context */
    int preload_running;
};

/* ---------------------------------------------------------------- small helpers */
static uint64_t cuda_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void cuda_sleep_ns(long ns) {
    struct timespec ts;
    ts.tv_sec = 0;
    ts.tv_nsec = ns;
    nanosleep(&ts, NULL);
}

/* A 64-bit hash, 8 bytes per step (FNV-style multiply, shift mixing, a final fold): keys of
   plans (hashed at every submission), cache files and the device source. */
static uint64_t cuda_hash(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    uint64_t w;
    while (n >= 8) {
        memcpy(&w, b, 8);
        h = (h ^ w) * 1099511628211ull;
        h ^= h >> 29;
        b += 8;
        n -= 8;
    }
    while (n--) h = (h ^ *b++) * 1099511628211ull;
    h ^= h >> 32;
    return h;
}
#define CUDA__HASH0 14695981039346656037ull

/* The plan-cache key, hashed at every submission: four independent multiply chains
   (a plan is ~400 bytes; one chain is a ~200-cycle latency chain, four take a quarter). */
static uint64_t cuda_plan_hash(uint64_t seed, const void *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    uint64_t h0 = seed, h1 = seed ^ 0x9e3779b97f4a7c15ull, h2 = seed ^ 0xc2b2ae3d27d4eb4full,
             h3 = seed ^ 0x165667b19e3779f9ull, w0, w1, w2, w3;
    const uint64_t m = 1099511628211ull;
    while (n >= 32) {
        memcpy(&w0, b, 8);
        memcpy(&w1, b + 8, 8);
        memcpy(&w2, b + 16, 8);
        memcpy(&w3, b + 24, 8);
        h0 = (h0 ^ w0) * m;
        h1 = (h1 ^ w1) * m;
        h2 = (h2 ^ w2) * m;
        h3 = (h3 ^ w3) * m;
        h0 ^= h0 >> 29;
        h1 ^= h1 >> 29;
        h2 ^= h2 >> 29;
        h3 ^= h3 >> 29;
        b += 32;
        n -= 32;
    }
    return cuda_hash(h0 ^ (h1 * 3) ^ (h2 * 5) ^ (h3 * 7), b, n);
}

static const char *cuda_errname(const gpuos__cuda_api *cu, gpuos__CUresult r) {
    const char *s = NULL;
    if (cu->cuGetErrorName) cu->cuGetErrorName(r, &s);
    return s ? s : "CUDA_ERROR_UNKNOWN";
}

#define CUDA_TRY(ctx, call, what)                                                                      \
    do {                                                                                               \
        gpuos__CUresult r_ = (call);                                                                   \
        if (r_ != CU_SUCCESS)                                                                          \
            return gpuos__set_error(ctx, GPUOS_ERR_NO_DEVICE, "%s failed: %s (%d)", what,              \
                                    cuda_errname(c->cu, r_), (int)r_);                                 \
    } while (0)

static uint64_t cuda_load_acquire(const volatile uint64_t *p) { return GPUOS__ALOAD(U64, p, GPUOS__ACQUIRE); }
/* The device's progress words of a lane, in mapped memory. */
static const volatile uint64_t *cuda_ctl_retired(const struct gpuos__cuda *c, int lane) {
    return lane ? &c->ctl->retired_hi : &c->ctl->retired;
}
static const volatile uint64_t *cuda_ctl_fetched(const struct gpuos__cuda *c, int lane) {
    return lane ? &c->ctl->fetched_hi : &c->ctl->fetched;
}
/* The word that says express task seq finished on the express worker (NULL: not express,
   or its slot holds a later task, which is sent only once seq is done). */
static const volatile uint64_t *cuda_xfin_of(const struct gpuos__cuda *c, uint64_t seq) {
    unsigned k;
    if (seq < c->xfirst || seq >= c->xend) return NULL;
    for (k = 0; k < GPUOS__XBOX; k++)
        if (c->xseq[k] == seq) return &c->ctl->xfin[k];
    return NULL;
}
static void cuda_refresh_retired(struct gpuos__cuda *c) {
    int l;
    for (l = 0; l < GPUOS__LANES; l++) {
        uint64_t r = cuda_load_acquire(cuda_ctl_retired(c, l));
        if (r > c->retired_seen[l]) c->retired_seen[l] = r;
    }
    /* express tasks the express worker finished, next in line: every task before an express
       one had retired when it was sent, or was express itself */
    for (;;) {
        const volatile uint64_t *x = cuda_xfin_of(c, c->retired_seen[0] + 1);
        if (!x || cuda_load_acquire(x) != c->retired_seen[0] + 1) break;
        c->retired_seen[0]++;
    }
}

/* ---------------------------------------------------------------- module: compile or load from cache */
/* The cache directory: config, $GPUOS_CACHE_DIR, $XDG_CACHE_HOME/gpuos, ~/.cache/gpuos.
   Created if missing; "" when none can be had (then nothing is cached). */
static void cuda_cache_dir(const gpuos_context *ctx, char *out, size_t n) {
    const char *e;
    out[0] = 0;
    if (ctx->cfg.cache_dir && ctx->cfg.cache_dir[0])
        snprintf(out, n, "%s", ctx->cfg.cache_dir);
    else if ((e = getenv("GPUOS_CACHE_DIR")) && e[0])
        snprintf(out, n, "%s", e);
    else if ((e = getenv("XDG_CACHE_HOME")) && e[0])
        snprintf(out, n, "%s/gpuos", e);
    else if ((e = getenv("HOME")) && e[0])
        snprintf(out, n, "%s/.cache/gpuos", e);
    if (out[0]) {
        char *p;
        for (p = out + 1; *p; p++) /* mkdir -p */
            if (*p == '/') {
                *p = 0;
                mkdir(out, 0755);
                *p = '/';
            }
        if (mkdir(out, 0755) != 0 && errno != EEXIST) out[0] = 0;
    }
}

typedef struct cuda__cache_header {
    char magic[8];      /* "GPUOSCB1" */
    uint64_t key;
    uint64_t size;
    uint64_t checksum;  /* cuda_hash of the cubin */
} cuda__cache_header;

/* Reads a cached cubin; NULL if absent, short, or its checksum or key differ (corrupt). */
static void *cuda_cache_read(const char *path, uint64_t key, size_t *size) {
    cuda__cache_header h;
    void *buf = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    if (fread(&h, sizeof h, 1, f) == 1 && memcmp(h.magic, "GPUOSCB1", 8) == 0 && h.key == key && h.size > 0 &&
        h.size < (1ull << 31) && (buf = malloc((size_t)h.size)) != NULL) {
        if (fread(buf, 1, (size_t)h.size, f) != h.size || cuda_hash(CUDA__HASH0, buf, (size_t)h.size) != h.checksum) {
            free(buf);
            buf = NULL;
        } else {
            *size = (size_t)h.size;
        }
    }
    fclose(f);
    return buf;
}

/* Writes atomically: a temporary file in the same directory, then rename. */
static void cuda_cache_write(const char *path, uint64_t key, const void *cubin, size_t size) {
    char tmp[1200];
    cuda__cache_header h;
    FILE *f;
    int ok;
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    f = fopen(tmp, "wb");
    if (!f) return;
    memcpy(h.magic, "GPUOSCB1", 8);
    h.key = key;
    h.size = size;
    h.checksum = cuda_hash(CUDA__HASH0, cubin, size);
    ok = fwrite(&h, sizeof h, 1, f) == 1 && fwrite(cubin, 1, size, f) == size;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) remove(tmp);
}

/* One part of a split compile of the device source (device_ops.cu, "parts"). */
typedef struct cuda__part {
    const gpuos_context *ctx;
    const char *src;
    const char *opts[12];
    int n_opts;
    char def[2][40];
    void *cubin;
    size_t size;
    char *log;
    gpuos_status st;
    double ms; /* its NVRTC time */
} cuda__part;

static void *cuda_part_main(void *arg) {
    cuda__part *p = (cuda__part *)arg;
    const uint64_t t0 = cuda_now_ns();
    p->st = gpuos__nvrtc_compile(p->ctx, p->src, "gpuos_device.cu", p->opts, p->n_opts, 1, &p->cubin, &p->size, &p->log);
    p->ms = (double)(cuda_now_ns() - t0) / 1e6;
    return NULL;
}

/* Compiles the device source as n_parts programs, one thread each (part k with
   -DGPUOS__D_NPARTS=n_parts -DGPUOS__D_PART=k when n_parts > 1), then with_rt programs
   more: the run-time module's own code (-DGPUOS__D_PART=GPUOS__D_PART_RT), in parts[n_parts]. */
static void cuda_compile_parts(gpuos_context *ctx, const char *src, const char *const *opts, int n_opts, int n_parts,
                               int with_rt, cuda__part *parts) {
    pthread_t th[CUDA__MAX_PARTS + 1];
    int started[CUDA__MAX_PARTS + 1], k, i;
    const int n = n_parts + (with_rt ? 1 : 0);
    memset(parts, 0, sizeof(cuda__part) * (size_t)n);
    for (k = 0; k < n; k++) {
        cuda__part *p = &parts[k];
        p->ctx = ctx;
        p->src = src;
        for (i = 0; i < n_opts; i++) p->opts[p->n_opts++] = opts[i];
        if (k == n_parts) { /* defines none of the built-in groups: NPARTS >= 2 */
            snprintf(p->def[0], sizeof p->def[0], "-DGPUOS__D_NPARTS=%d", n_parts > 1 ? n_parts : 2);
            snprintf(p->def[1], sizeof p->def[1], "-DGPUOS__D_PART=%d", GPUOS__D_PART_RT);
        } else if (n_parts > 1) {
            snprintf(p->def[0], sizeof p->def[0], "-DGPUOS__D_NPARTS=%d", n_parts);
            snprintf(p->def[1], sizeof p->def[1], "-DGPUOS__D_PART=%d", k);
        }
        if (p->def[0][0]) {
            p->opts[p->n_opts++] = p->def[0];
            p->opts[p->n_opts++] = p->def[1];
        }
    }
    for (k = 1; k < n; k++) started[k] = pthread_create(&th[k], NULL, cuda_part_main, &parts[k]) == 0;
    cuda_part_main(&parts[0]);
    for (k = 1; k < n; k++) {
        if (started[k]) pthread_join(th[k], NULL);
        else cuda_part_main(&parts[k]); /* no thread: compile it here */
    }
}

/* The disk-cache file of the run-time module's own code (one per built-in key). */
static void cuda_rtw_path(const struct gpuos__cuda *c, const char *dir, char *path, size_t n) {
    snprintf(path, n, "%s/gpuos-%016llx-sm%d%d-rtworker.o", dir, (unsigned long long)c->base_key, c->cc_major,
             c->cc_minor);
}

/* NVRTC and nvJitLink are needed even when the device code comes from the disk cache (the
   cache key holds NVRTC's version); loading them (~15 ms of dlopen in a fresh process)
   overlaps the primary context's creation (~100-140 ms) on a thread of its own, started
   after cuInit (cuda_open_device). */
static void *cuda_preload_main(void *arg) {
    char why[512];
    (void)arg;
    gpuos__nvrtc_load(why, sizeof why);
    gpuos__nvjitlink_load(why, sizeof why);
    return NULL;
}
static void cuda_preload_join(struct gpuos__cuda *c) {
    if (c->preload_running) pthread_join(c->preload, NULL);
    c->preload_running = 0;
}

static gpuos__CUresult cuda_gate_load(const struct gpuos__cuda *c, gpuos__CUmodule *mod, const void *image,
                                      const char *kernel, uint32_t timeout_ms, int *timed_out);
static gpuos_status cuda_load_timeout(gpuos_context *ctx, const char *fn) {
    return gpuos__set_error(ctx, GPUOS_ERR_TIMEOUT,
                            "%s: loading device code waits until no persistent kernel runs on the GPU, and another "
                            "context's kept running for wait_timeout_ms = %u ms",
                            fn, (unsigned)ctx->cfg.wait_timeout_ms);
}

static gpuos_status cuda_build_module(gpuos_context *ctx, struct gpuos__cuda *c) {
    char why[512], arch[64], dir[1024], path[1200], maxrreg[32];
    const gpuos__nvrtc_api *nv;
    const char *opts[10]; /* (all kept in opt_store: the run-time module's worker code is built with them) */
    size_t src_len = 0, cubin_size = 0;
    char *src, *log = NULL;
    void *cubin = NULL;
    uint64_t key, t_compile0;
    gpuos_status st;
    int i, n_opts = 0, n_parts = 1, timed_out = 0;
    gpuos__CUresult r;
    cuda__part parts[CUDA__MAX_PARTS + 1];

    /* Relocatable code linked by nvJitLink: 3x faster to compile than one whole-program
       pass over the whole source (7.7 s against 25 s, measured), and the form that
       run-time operators will be linked with. Without nvJitLink: one whole-program pass. */
    const gpuos__nvjitlink_api *jl;
    cuda_preload_join(c);
    jl = gpuos__nvjitlink_load(why, sizeof why);
    snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", c->cc_major, c->cc_minor);
    opts[n_opts++] = arch;
    opts[n_opts++] = "-default-device";
    opts[n_opts++] = "--std=c++17";
    if (jl) opts[n_opts++] = "-rdc=true";
    /* Relocatable functions each take the registers they want (204-254 measured), which
       allows one 256-thread block per multiprocessor; 128 allows two. */
    {
        const char *e = getenv("GPUOS_CUDA_MAXRREG"); /* tuning knob: 32..255 */
        int regs = e ? atoi(e) : GPUOS__MAXRREG;
        if (regs < 32 || regs > 255) regs = GPUOS__MAXRREG;
        snprintf(maxrreg, sizeof maxrreg, "--maxrregcount=%d", regs);
        opts[n_opts++] = maxrreg;
        /* the kernel's launch bounds ask for two blocks per multiprocessor (128 registers) */
        if (regs > GPUOS__MAXRREG) opts[n_opts++] = "-DGPUOS__PK_MIN_BLOCKS=1";
    }
    /* diagnostic: the kernel stamps %globaltimer into gpuos__pk_ctl.stamp (fetched, a
       worker's done, retired, an express task's claim, run and finish) for latency probes
       (tests/gpu/probe_latency.c, probe_express.c) */
    if (getenv("GPUOS_CUDA_TIMESTAMPS") && atoi(getenv("GPUOS_CUDA_TIMESTAMPS")) > 0)
        opts[n_opts++] = "-DGPUOS__PK_TIMESTAMPS";
    /* tuning knobs: one or two more NVRTC options, e.g. GPUOS_CUDA_NVRTC_OPT=-DGPUOS__D_EW_D=4 */
    if (getenv("GPUOS_CUDA_NVRTC_OPT") && getenv("GPUOS_CUDA_NVRTC_OPT")[0])
        opts[n_opts++] = getenv("GPUOS_CUDA_NVRTC_OPT");
    if (getenv("GPUOS_CUDA_NVRTC_OPT2") && getenv("GPUOS_CUDA_NVRTC_OPT2")[0])
        opts[n_opts++] = getenv("GPUOS_CUDA_NVRTC_OPT2");
    src = gpuos__device_source_joined(&src_len);
    if (!src) return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "gpuos_create: no memory for the device source");
    nv = gpuos__nvrtc_load(why, sizeof why);
    key = cuda_hash(CUDA__HASH0, src, src_len);
    for (i = 0; i < n_opts; i++) key = cuda_hash(key, opts[i], strlen(opts[i]) + 1);
    if (nv) key = cuda_hash(key, &nv->version_major, sizeof(int) * 2);
    /* Relocatable code is compiled as n_parts programs on n_parts threads (NVRTC is
       single-threaded per program) and linked: one per CPU, at most CUDA__MAX_PARTS, the
       groups spread by their measured NVRTC time ("parts" in device_ops.cu; on the CI
       machine's CPU the slowest of 8 programs is the kernel's, 2.8 s, against 16 s for one
       program). GPUOS_CUDA_PARTS=1..8 overrides the count. */
    {
        const char *e = getenv("GPUOS_CUDA_PARTS");
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        n_parts = ncpu < 1 ? 1 : ncpu > CUDA__MAX_PARTS ? CUDA__MAX_PARTS : (int)ncpu;
        if (e && atoi(e) >= 1 && atoi(e) <= CUDA__MAX_PARTS) n_parts = atoi(e);
        if (!jl) n_parts = 1;
        key = cuda_hash(key, &n_parts, sizeof n_parts);
    }
    /* what run-time operators' module generations are built with */
    c->base_key = key;
    c->n_parts = jl ? n_parts : 0;
    for (i = 0; i < n_opts && c->n_opt_store < (int)(sizeof c->opt_store / sizeof c->opt_store[0]); i++) {
        size_t L = strlen(opts[i]) + 1;
        char *cp = (char *)malloc(L);
        if (!cp) break;
        memcpy(cp, opts[i], L);
        c->opt_store[c->n_opt_store++] = cp;
    }

    cuda_cache_dir(ctx, dir, sizeof dir);
    path[0] = 0;
    if (dir[0]) {
        snprintf(path, sizeof path, "%s/gpuos-%016llx-sm%d%d.cubin", dir, (unsigned long long)key, c->cc_major,
                 c->cc_minor);
        cubin = cuda_cache_read(path, key, &cubin_size);
    }
    if (cubin) {
        r = cuda_gate_load(c, &c->mod, cubin, "gpuos__pk_main", ctx->cfg.wait_timeout_ms, &timed_out);
        if (r == CU_SUCCESS || timed_out) {
            free(cubin);
            free(src);
            if (timed_out) return cuda_load_timeout(ctx, "gpuos_create");
            c->from_cache = 1;
            return GPUOS_OK;
        }
        free(cubin); /* unusable: compile again and overwrite */
        cubin = NULL;
    }
    if (!nv) {
        free(src);
        return gpuos__set_error(ctx, GPUOS_ERR_NO_DEVICE,
                                "gpuos_create: %s, and no compiled device code is cached", why);
    }
    /* with relocatable code, the run-time module's own code is compiled alongside (one
       thread more; cached, so that a later gpuos_op_define need not compile it) */
    t_compile0 = cuda_now_ns();
    cuda_compile_parts(ctx, src, opts, n_opts, n_parts, jl != NULL, parts);
    c->compile_ms = (double)(cuda_now_ns() - t_compile0) / 1e6;
    for (i = 0; i < n_parts + (jl != NULL); i++)
        if (parts[i].ms > c->slowest_part_ms) c->slowest_part_ms = parts[i].ms;
    free(src);
    st = GPUOS_OK;
    for (i = 0; i < n_parts && st == GPUOS_OK; i++)
        if (parts[i].st != GPUOS_OK)
            st = gpuos__set_error(ctx, parts[i].st, "gpuos_create: compiling the device code for sm_%d%d failed:\n%s",
                                  c->cc_major, c->cc_minor, parts[i].log ? parts[i].log : "");
    for (i = 0; i < n_parts + (jl != NULL); i++) free(parts[i].log);
    if (jl) { /* the run-time module's code: kept if it compiled (else compiled again on first need) */
        if (parts[n_parts].st == GPUOS_OK && st == GPUOS_OK) {
            c->rtw_img = parts[n_parts].cubin;
            c->rtw_size = parts[n_parts].size;
            if (dir[0]) {
                char pp[1200];
                cuda_rtw_path(c, dir, pp, sizeof pp);
                cuda_cache_write(pp, key, c->rtw_img, c->rtw_size);
            }
        } else {
            free(parts[n_parts].cubin);
        }
    }
    if (st != GPUOS_OK) {
        for (i = 0; i < n_parts; i++) free(parts[i].cubin);
        return st;
    }
    if (jl) { /* link the relocatable parts into a loadable cubin */
        char larch[32];
        const char *lopts[1];
        const void *images[CUDA__MAX_PARTS];
        size_t sizes[CUDA__MAX_PARTS];
        int types[CUDA__MAX_PARTS];
        void *linked = NULL;
        size_t linked_size = 0;
        snprintf(larch, sizeof larch, "-arch=sm_%d%d", c->cc_major, c->cc_minor);
        lopts[0] = larch;
        for (i = 0; i < n_parts; i++) {
            images[i] = parts[i].cubin;
            sizes[i] = parts[i].size;
            types[i] = GPUOS__NVJITLINK_INPUT_CUBIN;
        }
        {
            const uint64_t t_link0 = cuda_now_ns();
            st = gpuos__nvjitlink_link(ctx, lopts, 1, images, sizes, types, n_parts, &linked, &linked_size, &log);
            c->link_ms = (double)(cuda_now_ns() - t_link0) / 1e6;
        }
        for (i = 0; i < n_parts; i++) free(parts[i].cubin);
        if (st != GPUOS_OK) {
            st = gpuos__set_error(ctx, st, "gpuos_create: linking the device code failed:\n%s", log ? log : "");
            free(log);
            return st;
        }
        free(log);
        cubin = linked;
        cubin_size = linked_size;
        c->compile_ms = (double)(cuda_now_ns() - t_compile0) / 1e6;
    } else {
        cubin = parts[0].cubin;
        cubin_size = parts[0].size;
    }
    r = cuda_gate_load(c, &c->mod, cubin, "gpuos__pk_main", ctx->cfg.wait_timeout_ms, &timed_out);
    if (r == CU_SUCCESS && path[0]) cuda_cache_write(path, key, cubin, cubin_size);
    free(cubin);
    if (timed_out) return cuda_load_timeout(ctx, "gpuos_create");
    if (r != CU_SUCCESS)
        return gpuos__set_error(ctx, GPUOS_ERR_NO_DEVICE, "gpuos_create: cuModuleLoadData failed: %s (%d)",
                                cuda_errname(c->cu, r), (int)r);
    return GPUOS_OK;
}

/* ---------------------------------------------------------------- open and close */
/* ---------------------------------------------------------------- the device gate
   cuMemFree, cuMemFreeHost and cuModuleUnload synchronise the CUDA context: they wait for
   every kernel running in it, holding the driver's lock. Every gpuos context on a device
   shares the device's primary context, so such a call made while any context's persistent
   kernel runs waits for that kernel's idle exit; and a thread that holds that context's lock
   (which its reaper needs to stop the kernel) and makes any driver call waits for the
   driver's lock: a deadlock (seen on the H200: test_fuse's row chains, several contexts in
   one process, one free at an idle stop, 3 runs of 8). So these calls are made only while no
   gpuos kernel runs in the CUDA context: cuda_gate_enter (before a launch) and
   cuda_gate_leave (once a kernel is seen stopped; a stuck one never leaves) count the running
   kernels per CUDA context, cuda_release does the call at once when none runs and else keeps
   it, and the kernel whose stop leaves none running does what was kept, both with cuda_gate_mu
   let go and counted in the gate's `loads` (launches in that CUDA context wait, within their
   timeouts; cuda_gate_release_unlocked). The lock order is a context's mu, then cuda_gate_mu. */
enum { CUDA__REL_MEM, CUDA__REL_HOST, CUDA__REL_MOD };
typedef struct cuda__kept {
    const gpuos__cuda_api *cu;
    gpuos__CUcontext cuctx;
    int kind;
    uint64_t h; /* the device pointer, host pointer or module */
} cuda__kept;
#define CUDA__GATES 64
static pthread_mutex_t cuda_gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cuda_gate_cv; /* running or loads changed (CLOCK_MONOTONIC, cuda_gate_init) */
static pthread_once_t cuda_gate_once = PTHREAD_ONCE_INIT;
static struct {
    gpuos__CUcontext cuctx;
    int running; /* gpuos kernels running in it (both kernels of a context count once) */
    int loads;   /* module loads waiting for running == 0, and releases under way (read without the lock by reapers) */
    int stuck;   /* of the running, kernels of failed contexts that did not stop (may never) */
    int waiting; /* launches waiting for another context's kernel to stop (read likewise) */
    struct gpuos__cuda *head, *tail; /* contexts waiting to launch, first come first served (gate_next) */
} cuda_gates[CUDA__GATES];
static void cuda_gate_reap_zombies_locked(int g, int make);
static cuda__kept *cuda_kept; /* calls kept until their CUDA context has no gpuos kernel running */
static int cuda_n_kept, cuda_cap_kept;

static void cuda_gate_init(void) {
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&cuda_gate_cv, &a);
    pthread_condattr_destroy(&a);
}
static void cuda_gate_lock(void) {
    pthread_once(&cuda_gate_once, cuda_gate_init);
    pthread_mutex_lock(&cuda_gate_mu);
}
/* Waits (cuda_gate_mu held) for a change of the gate, at most 1 ms. */
static void cuda_gate_wait_1ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += 1000000L;
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(&cuda_gate_cv, &cuda_gate_mu, &ts);
}

/* The gate of cuctx (cuda_gate_mu held), made if make; -1 if none (table full: no gating). */
static int cuda_gate_find(gpuos__CUcontext cuctx, int make) {
    int g, free_g = -1;
    for (g = 0; g < CUDA__GATES; g++) {
        if (cuda_gates[g].cuctx == cuctx) return g;
        if (free_g < 0 && !cuda_gates[g].cuctx) free_g = g;
    }
    if (!make || free_g < 0) return -1;
    GPUOS__ASTORE(&cuda_gates[free_g].cuctx, cuctx, GPUOS__RELAXED); /* read unlocked by the reapers */
    cuda_gates[free_g].running = 0;
    cuda_gates[free_g].loads = 0;
    cuda_gates[free_g].stuck = 0;
    cuda_gates[free_g].waiting = 0;
    cuda_gates[free_g].head = cuda_gates[free_g].tail = NULL;
    return free_g;
}

static void cuda_release_now(const gpuos__cuda_api *cu, gpuos__CUcontext cuctx, int kind, uint64_t h) {
    cu->cuCtxSetCurrent(cuctx);
    if (kind == CUDA__REL_MEM)
        cu->cuMemFree((gpuos__CUdeviceptr)h);
    else if (kind == CUDA__REL_HOST)
        cu->cuMemFreeHost((void *)(uintptr_t)h);
    else
        cu->cuModuleUnload((gpuos__CUmodule)(uintptr_t)h);
}

/* Makes the n calls of list (cuda_gate_mu held, no gpuos kernel running in gate g's CUDA
   context) with the gate's lock let go, counted in the gate's `loads` meanwhile so that no
   launch in that CUDA context starts before they are done (it waits, within its timeout);
   returns with the lock held again. A cuMemFree may wait for the program's own kernels:
   under the lock, every context's launch, stop and release on every device would wait too. */
static void cuda_gate_release_unlocked(int g, const cuda__kept *list, int n) {
    int i;
    if (n <= 0) return;
    GPUOS__ASTORE(&cuda_gates[g].loads, cuda_gates[g].loads + 1, GPUOS__RELAXED);
    pthread_mutex_unlock(&cuda_gate_mu);
    for (i = 0; i < n; i++) cuda_release_now(list[i].cu, list[i].cuctx, list[i].kind, list[i].h);
    cuda_gate_lock();
    GPUOS__ASTORE(&cuda_gates[g].loads, cuda_gates[g].loads - 1, GPUOS__RELAXED);
    pthread_cond_broadcast(&cuda_gate_cv);
}

/* Frees device memory (CUDA__REL_MEM), pinned host memory (CUDA__REL_HOST) or unloads a
   module (CUDA__REL_MOD) now if no gpuos kernel runs in c's CUDA context, else once none
   does. Out of host memory to keep it: leaked rather than a stall. */
static void cuda_release(const struct gpuos__cuda *c, int kind, uint64_t h) {
    int g;
    if (!h) return;
    cuda_gate_lock();
    g = cuda_gate_find(c->cuctx, 1);
    if (g < 0) { /* no gate (the table full: no gating): nothing to count the call in */
        cuda_release_now(c->cu, c->cuctx, kind, h);
    } else if (cuda_gates[g].running == 0) {
        cuda__kept k;
        k.cu = c->cu, k.cuctx = c->cuctx, k.kind = kind, k.h = h;
        cuda_gate_release_unlocked(g, &k, 1);
    } else {
        if (cuda_n_kept == cuda_cap_kept) {
            const int cap = cuda_cap_kept ? 2 * cuda_cap_kept : 64;
            cuda__kept *k = (cuda__kept *)realloc(cuda_kept, (size_t)cap * sizeof *k);
            if (k) cuda_kept = k, cuda_cap_kept = cap;
        }
        if (cuda_n_kept < cuda_cap_kept) {
            cuda__kept *k = &cuda_kept[cuda_n_kept++];
            k->cu = c->cu, k->cuctx = c->cuctx, k->kind = kind, k->h = h;
        }
    }
    pthread_mutex_unlock(&cuda_gate_mu);
}

/* c out of its gate's queue, if it is in it (cuda_gate_mu held). */
static void cuda_gate_unqueue_locked(struct gpuos__cuda *c, int g) {
    struct gpuos__cuda *prev = NULL, **pp;
    if (!c->gate_queued) return;
    for (pp = &cuda_gates[g].head; *pp && *pp != c; pp = &(*pp)->gate_next) prev = *pp;
    if (*pp) *pp = c->gate_next;
    if (cuda_gates[g].tail == c) cuda_gates[g].tail = prev;
    c->gate_queued = 0;
    GPUOS__ASTORE(&cuda_gates[g].waiting, cuda_gates[g].waiting - 1, GPUOS__RELAXED);
    pthread_cond_broadcast(&cuda_gate_cv); /* the next one may go */
}
/* c no longer waits for a turn (it launched elsewhere, has nothing to launch, failed, or is
   being destroyed): out of the queue, which it would otherwise hold up. */
static void cuda_gate_unqueue(struct gpuos__cuda *c) {
    int g;
    if (!c->gate_queued) return;
    cuda_gate_lock();
    g = cuda_gate_find(c->cuctx, 0);
    if (g >= 0) cuda_gate_unqueue_locked(c, g);
    c->gate_queued = 0;
    pthread_mutex_unlock(&cuda_gate_mu);
}

/* Before a launch (c's kernel is not running; ctx->mu held). Each context's kernel fills the
   GPU, so another context's running kernel would keep this one from becoming resident for as
   long as it stays busy: the launch waits, counted in `waiting`, which makes the other
   contexts' reapers stop their kernels (queued tasks run first); a module load waiting for
   the device goes first, and waiting launches go in the order they came (a queue of contexts
   per gate: one that finds the gate free while others wait queues behind them). Contexts with
   work thus take turns on the GPU, a turn at least one reaper pass (200 us) long. 1 once
   counted running; 0 if the wait took timeout_ms, or a stuck kernel holds the GPU (not
   counted: the caller does not launch). keep: a launch that did not go stays queued (its
   context tries again: a submission does not wait, its work stays queued, and the reaper or
   a wait launches it); else it leaves the queue. */
static int cuda_gate_enter(struct gpuos__cuda *c, uint32_t timeout_ms, int keep) {
    const uint64_t limit = (uint64_t)timeout_ms * 1000000ull;
    const int was_queued = c->gate_queued; /* a kept turn keeps its place whatever this call does */
    uint64_t t0;
    int g, ok = 1;
    cuda_gate_lock();
    t0 = cuda_now_ns();
    g = cuda_gate_find(c->cuctx, 1);
    if (g >= 0) {
        for (;;) {
            /* a stuck kernel holds the GPU (for good, maybe): no wait, the launch fails */
            /* (the calls kept meanwhile are not made here: a cuMemFree may outlast timeout_ms;
               the next kernel out makes them) */
            if (cuda_gates[g].stuck > 0) cuda_gate_reap_zombies_locked(g, 0);
            if (cuda_gates[g].stuck > 0) {
                ok = 0;
                break;
            }
            if (cuda_gates[g].loads == 0 && cuda_gates[g].running == 0 &&
                cuda_gates[g].head == (c->gate_queued ? c : NULL)) {
                ok = 1;
                break;
            }
            if (!c->gate_queued) {
                c->gate_next = NULL;
                if (cuda_gates[g].tail)
                    cuda_gates[g].tail->gate_next = c;
                else
                    cuda_gates[g].head = c;
                cuda_gates[g].tail = c;
                GPUOS__ASTORE(&cuda_gates[g].waiting, cuda_gates[g].waiting + 1, GPUOS__RELAXED);
                c->gate_queued = 1;
            }
            if (cuda_now_ns() - t0 >= limit) {
                ok = 0;
                break;
            }
            cuda_gate_wait_1ms();
        }
        if (ok || (!keep && !was_queued) || cuda_gates[g].stuck > 0) cuda_gate_unqueue_locked(c, g);
        if (ok) cuda_gates[g].running++;
    }
    if (ok) c->in_gate = 1, c->gate_stuck = 0;
    pthread_mutex_unlock(&cuda_gate_mu);
    return ok;
}

/* c failed with its kernel maybe still running (ctx->mu held): counted stuck, so that
   launches beside it fail at once instead of waiting; left once its kernels are seen gone. */
static void cuda_gate_mark_stuck(struct gpuos__cuda *c) {
    int g;
    if (!c->in_gate || c->gate_stuck) return;
    cuda_gate_lock();
    g = cuda_gate_find(c->cuctx, 0);
    if (g >= 0) cuda_gates[g].stuck++;
    c->gate_stuck = 1;
    pthread_mutex_unlock(&cuda_gate_mu);
}

/* Another context's module load or launch waits in c's CUDA context: c's running kernel
   should stop (the reaper's hint; read without the lock). */
static int cuda_gate_others_waiting(const struct gpuos__cuda *c) {
    int g;
    for (g = 0; g < CUDA__GATES; g++)
        if (GPUOS__ALOAD_PTR(gpuos__CUcontext, &cuda_gates[g].cuctx, GPUOS__RELAXED) == c->cuctx)
            return GPUOS__ALOAD(INT, &cuda_gates[g].loads, GPUOS__RELAXED) > 0 ||
                   GPUOS__ALOAD(INT, &cuda_gates[g].waiting, GPUOS__RELAXED) > 0;
    return 0;
}

/* Runs fn(arg) with no gpuos kernel running in c's CUDA context, and none starting (it runs
   counted in `loads`, which launches wait for; not under cuda_gate_mu). Another context's kernel may run for as long as its program keeps
   it busy, so this registers as a load (every reaper then stops its kernel, and launches wait
   in cuda_gate_enter) and waits up to timeout_ms for none to run. 0 if kernels still ran at
   the timeout (fn not run). */
static int cuda_gate_quiet(const struct gpuos__cuda *c, uint32_t timeout_ms, void (*fn)(void *), void *arg) {
    const uint64_t limit = (uint64_t)timeout_ms * 1000000ull;
    uint64_t t0;
    int g, ok;
    cuda_gate_lock();
    t0 = cuda_now_ns();
    g = cuda_gate_find(c->cuctx, 1);
    if (g >= 0) {
        GPUOS__ASTORE(&cuda_gates[g].loads, cuda_gates[g].loads + 1, GPUOS__RELAXED);
        while (cuda_gates[g].running > 0 && cuda_now_ns() - t0 <= limit) {
            if (cuda_gates[g].stuck > 0) cuda_gate_reap_zombies_locked(g, 1);
            if (cuda_gates[g].running > 0) cuda_gate_wait_1ms();
        }
    }
    ok = g < 0 || cuda_gates[g].running == 0;
    if (ok) { /* with the gate's lock let go: loads > 0 keeps every launch of this CUDA context
                 waiting, and a load (tens of ms) no longer holds up other devices' gates */
        pthread_mutex_unlock(&cuda_gate_mu);
        fn(arg);
        cuda_gate_lock();
    }
    if (g >= 0) {
        GPUOS__ASTORE(&cuda_gates[g].loads, cuda_gates[g].loads - 1, GPUOS__RELAXED);
        pthread_cond_broadcast(&cuda_gate_cv);
    }
    pthread_mutex_unlock(&cuda_gate_mu);
    return ok;
}

/* cuModuleLoadData never returns while a persistent kernel runs (GPU-FINDINGS): loads go
   through cuda_gate_quiet, with the module's kernel looked up there too (lazy loading, the
   driver's default, loads a kernel's code at its first lookup, which blocks the same way).
   *timed_out: 1 if kernels still ran at the timeout (nothing loaded). */
typedef struct cuda__load_arg {
    const struct gpuos__cuda *c;
    gpuos__CUmodule *mod;
    const void *image;
    const char *kernel;
    gpuos__CUresult r;
} cuda__load_arg;
static void cuda_gate_load_fn(void *p) {
    cuda__load_arg *a = (cuda__load_arg *)p;
    a->c->cu->cuCtxSetCurrent(a->c->cuctx);
    a->r = a->c->cu->cuModuleLoadData(a->mod, a->image);
    if (a->r == CU_SUCCESS && a->kernel) {
        gpuos__CUfunction f; /* looked up again by the caller: then loaded, it does not block */
        (void)a->c->cu->cuModuleGetFunction(&f, *a->mod, a->kernel);
    }
}
static gpuos__CUresult cuda_gate_load(const struct gpuos__cuda *c, gpuos__CUmodule *mod, const void *image,
                                      const char *kernel, uint32_t timeout_ms, int *timed_out) {
    cuda__load_arg a;
    a.c = c, a.mod = mod, a.image = image, a.kernel = kernel, a.r = CU_ERROR_NOT_READY;
    *timed_out = !cuda_gate_quiet(c, timeout_ms, cuda_gate_load_fn, &a);
    return a.r;
}

/* A kernel leaves gate g (cuda_gate_mu held; stuck: it was counted stuck there): the last one
   in the CUDA context out makes the kept calls (if make; else they stay kept for the next),
   with the lock let go meanwhile. */
static void cuda_gate_leave_locked(gpuos__CUcontext cuctx, int g, int stuck, int make) {
    int i, n = 0;
    if (stuck && cuda_gates[g].stuck > 0) cuda_gates[g].stuck--;
    if (cuda_gates[g].running > 0) pthread_cond_broadcast(&cuda_gate_cv); /* a load may wait */
    if (cuda_gates[g].running > 0 && --cuda_gates[g].running == 0 && make) {
        /* this CUDA context's kept calls move to `mine` and are made with the lock let go
           (cuda_gate_release_unlocked); without memory for the list, under the lock */
        cuda__kept *mine = NULL;
        int nm = 0;
        for (i = 0; i < cuda_n_kept; i++)
            if (cuda_kept[i].cuctx == cuctx) nm++;
        if (nm) mine = (cuda__kept *)malloc((size_t)nm * sizeof *mine);
        nm = 0;
        for (i = 0; i < cuda_n_kept; i++) {
            if (cuda_kept[i].cuctx != cuctx)
                cuda_kept[n++] = cuda_kept[i];
            else if (mine)
                mine[nm++] = cuda_kept[i];
            else
                cuda_release_now(cuda_kept[i].cu, cuda_kept[i].cuctx, cuda_kept[i].kind, cuda_kept[i].h);
        }
        cuda_n_kept = n;
        if (cuda_n_kept == 0) {
            free(cuda_kept);
            cuda_kept = NULL;
            cuda_cap_kept = 0;
        }
        cuda_gate_release_unlocked(g, mine, nm);
        free(mine);
    }
}

/* c's kernel is seen stopped: the last one in the CUDA context out does the kept calls. */
static void cuda_gate_leave(struct gpuos__cuda *c) {
    int g;
    if (!c->in_gate) return; /* never entered, or left already */
    cuda_gate_lock();
    c->in_gate = 0;
    g = cuda_gate_find(c->cuctx, 0);
    if (g >= 0) cuda_gate_leave_locked(c->cuctx, g, c->gate_stuck, 1);
    c->gate_stuck = 0;
    pthread_mutex_unlock(&cuda_gate_mu);
}

/* Kernels of destroyed contexts that had not stopped (stuck: they may never) stay counted in
   their gate, so launches beside them fail at once; the gate keeps their streams here and
   asks whether they have ended whenever a launch or a load finds it stuck, and one that has
   leaves the gate as its context's reaper would have (its memory stays: it was not freed
   while the kernel might use it). Without this a kernel that ran long but ended kept its
   device unusable to the process for good. The table grows as needed (one that cannot grow
   leaves the kernel counted stuck, as before: its device refuses launches in that CUDA context). */
typedef struct cuda__zombie {
    const gpuos__cuda_api *cu;
    gpuos__CUcontext cuctx;
    gpuos__CUstream s[2]; /* the main kernel's stream, the run-time workers' (or NULL) */
    int stuck;            /* counted stuck in the gate */
} cuda__zombie;
static cuda__zombie *cuda_zombies; /* cuda_gate_mu; never freed (process-wide, as the gates) */
static int cuda_n_zombies, cuda_cap_zombies;

/* c, being destroyed with its kernel counted in the gate and stuck (ctx->mu held): the gate
   keeps asking about it. */
static void cuda_gate_adopt_stuck(struct gpuos__cuda *c) {
    if (!c->stuck || !c->in_gate) return;
    cuda_gate_lock();
    if (cuda_n_zombies == cuda_cap_zombies) {
        const int cap = cuda_cap_zombies ? 2 * cuda_cap_zombies : 16;
        cuda__zombie *t = (cuda__zombie *)realloc(cuda_zombies, (size_t)cap * sizeof *t);
        if (t) cuda_zombies = t, cuda_cap_zombies = cap;
    }
    if (cuda_n_zombies < cuda_cap_zombies) {
        cuda__zombie *z = &cuda_zombies[cuda_n_zombies++];
        z->cu = c->cu, z->cuctx = c->cuctx, z->stuck = c->gate_stuck;
        z->s[0] = c->stream, z->s[1] = c->P.n_rt ? c->rt_stream : NULL;
        c->in_gate = 0, c->gate_stuck = 0; /* the gate's now */
    }
    pthread_mutex_unlock(&cuda_gate_mu);
}

/* Gate g's kept kernels that have ended leave it (cuda_gate_mu held; let go and taken again
   when a leave makes kept calls, only if make). */
static void cuda_gate_reap_zombies_locked(int g, int make) {
    int i;
    for (i = 0; i < cuda_n_zombies; i++) {
        cuda__zombie z = cuda_zombies[i];
        gpuos__CUresult r0, r1 = CU_SUCCESS;
        if (z.cuctx != cuda_gates[g].cuctx || !z.cu->cuStreamQuery) continue;
        z.cu->cuCtxSetCurrent(z.cuctx);
        r0 = z.cu->cuStreamQuery(z.s[0]);
        if (z.s[1]) r1 = z.cu->cuStreamQuery(z.s[1]);
        if (r0 == CU_ERROR_NOT_READY || r1 == CU_ERROR_NOT_READY) continue;
        cuda_zombies[i] = cuda_zombies[--cuda_n_zombies];
        cuda_gate_leave_locked(z.cuctx, g, z.stuck, make);
        i = -1; /* (the lock may have been let go: from the start) */
    }
}

/* Frees device memory, or mapped pinned host memory when the address carries bit 0
   (pinned blocks are page-aligned), through the gate. */
static void cuda_free_addr(const struct gpuos__cuda *c, void *p) {
    if ((uintptr_t)p & 1u)
        cuda_release(c, CUDA__REL_HOST, (uint64_t)((uintptr_t)p & ~(uintptr_t)1u));
    else
        cuda_release(c, CUDA__REL_MEM, (uint64_t)(uintptr_t)p);
}

static void *cuda_reaper_main(void *arg);
static void cuda_gate_check_stuck(struct gpuos__cuda *c);

/* Unloads the swapped-out run-time modules (c's kernels stopped; through the gate). */
static void cuda_unload_old_rt(struct gpuos__cuda *c) {
    int i;
    for (i = 0; i < c->n_old_rt; i++) cuda_release(c, CUDA__REL_MOD, (uint64_t)(uintptr_t)c->old_rt[i]);
    c->n_old_rt = 0;
}

/* The limit of a wait for the device itself to act (the queue's memory cleared at creation, the
   persistent kernel's stop: no task retired for this long means it is stuck): wait_timeout_ms,
   but at least CUDA__DEV_WAIT_MIN_MS, since even a healthy kernel needs microseconds to leave
   (wait_timeout_ms = 0, "do not wait", made every idle stop a false device loss). */
#define CUDA__DEV_WAIT_MIN_MS 1000u
static uint32_t cuda_dev_wait_ms(const gpuos_context *ctx) {
    return ctx->cfg.wait_timeout_ms > CUDA__DEV_WAIT_MIN_MS ? ctx->cfg.wait_timeout_ms : CUDA__DEV_WAIT_MIN_MS;
}

/* The copy stream's work done (cuda_gate_quiet's fn): polled up to timeout_ms. */
typedef struct cuda__sync_arg {
    const struct gpuos__cuda *c;
    uint32_t timeout_ms;
    gpuos__CUresult r;
} cuda__sync_arg;
static void cuda_copy_sync_fn(void *p) {
    cuda__sync_arg *a = (cuda__sync_arg *)p;
    const uint64_t t0 = cuda_now_ns();
    a->c->cu->cuCtxSetCurrent(a->c->cuctx);
    while ((a->r = a->c->cu->cuStreamQuery(a->c->copy_stream)) == CU_ERROR_NOT_READY &&
           cuda_now_ns() - t0 <= (uint64_t)a->timeout_ms * 1000000ull)
        cuda_sleep_ns(20000);
}

static gpuos_status cuda_alloc_queue(gpuos_context *ctx, struct gpuos__cuda *c) {
    gpuos__CUdeviceptr d;
    size_t inbox_bytes;
    void *h;
    int l;
    c->P.ring_slots = CUDA__RING_SLOTS;
    for (c->P.ring_log2 = 0; (1ull << c->P.ring_log2) < CUDA__RING_SLOTS; c->P.ring_log2++) {
    }
    c->P.task_cap = CUDA__TASK_CAP;
    c->P.inbox_cap = CUDA__INBOX_CAP;
    CUDA_TRY(ctx, c->cu->cuMemHostAlloc(&h, sizeof(gpuos__pk_ctl), CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
             "cuMemHostAlloc (control block)");
    c->ctl = (gpuos__pk_ctl *)h;
    memset(c->ctl, 0, sizeof *c->ctl);
    CUDA_TRY(ctx, c->cu->cuMemHostGetDevicePointer(&d, h, 0), "cuMemHostGetDevicePointer (control block)");
    c->P.ctl = (gpuos__pk_ctl *)(uintptr_t)d;
    CUDA_TRY(ctx, c->cu->cuMemHostAlloc(&h, (size_t)c->n_blocks * sizeof(uint32_t),
                                        CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
             "cuMemHostAlloc (residency words)");
    c->up = (uint32_t *)h;
    memset(c->up, 0, (size_t)c->n_blocks * sizeof(uint32_t));
    CUDA_TRY(ctx, c->cu->cuMemHostGetDevicePointer(&d, h, 0), "cuMemHostGetDevicePointer (residency words)");
    c->P.up = (uint32_t *)(uintptr_t)d;
    CUDA_TRY(ctx, c->cu->cuMemAlloc(&d, 64 + GPUOS__PROF_N * 8), "cuMemAlloc (retired)");
    c->P.retired = (uint64_t *)(uintptr_t)d; /* [lane] */
    CUDA_TRY(ctx, c->cu->cuMemsetD8Async(d, 0, 64 + GPUOS__PROF_N * 8, c->copy_stream), "cuMemsetD8Async (retired)");
    c->P.prof = (unsigned long long *)(uintptr_t)(d + 64); /* probe builds' counters */
    c->P.xclaim = (unsigned long long *)(uintptr_t)(d + 32); /* express claims (zeroed with it) */
    c->P.xruns = (unsigned long long *)(uintptr_t)(d + 40);  /* express tasks the express worker ran */
    c->P.xfetched = (uint64_t *)(uintptr_t)(d + 48);         /* lane 0's next seq to fetch */
    c->P.cancel = (uint32_t *)(uintptr_t)(d + 56);           /* gpuos_destroy's cancel (zeroed with it) */
    CUDA_TRY(ctx, c->cu->cuMemAlloc(&d, GPUOS__XOWN * 8), "cuMemAlloc (express marks)");
    c->P.xown = (uint64_t *)(uintptr_t)d;
    CUDA_TRY(ctx, c->cu->cuMemsetD8Async(d, 0, GPUOS__XOWN * 8, c->copy_stream), "cuMemsetD8Async (express marks)");
    CUDA_TRY(ctx, c->cu->cuMemAlloc(&d, (size_t)CUDA__PLAN_CAP * GPUOS__PLAN_BYTES), "cuMemAlloc (plans)");
    c->P.plans = (char *)(uintptr_t)d;
    CUDA_TRY(ctx, c->cu->cuMemAlloc(&d, (size_t)CUDA__GPOOL * sizeof(gpuos__qdesc)), "cuMemAlloc (graph descriptors)");
    c->gpool = (gpuos__qdesc *)(uintptr_t)d;
    inbox_bytes = (size_t)c->n_workers * CUDA__INBOX_CAP * sizeof(gpuos__ientry);
    /* the rings are cached host memory: write-combined rings measured no faster (H200,
       bench/NOTES.md session 20) */
    for (l = 0; l < GPUOS__LANES; l++) {
        CUDA_TRY(ctx, c->cu->cuMemHostAlloc(&h, CUDA__RING_SLOTS * sizeof(gpuos__qslot),
                                            CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
                 "cuMemHostAlloc (task ring)");
        c->ring[l] = (gpuos__qslot *)h;
        memset(c->ring[l], 0, CUDA__RING_SLOTS * sizeof(gpuos__qslot));
        CUDA_TRY(ctx, c->cu->cuMemHostGetDevicePointer(&d, h, 0), "cuMemHostGetDevicePointer (task ring)");
        c->P.ring[l] = (gpuos__qslot *)(uintptr_t)d;
        CUDA_TRY(ctx, c->cu->cuMemAlloc(&d, CUDA__TASK_CAP * sizeof(gpuos__dtask)), "cuMemAlloc (tasks)");
        c->P.tasks[l] = (gpuos__dtask *)(uintptr_t)d;
        CUDA_TRY(ctx, c->cu->cuMemsetD8Async(d, 0xff, CUDA__TASK_CAP * sizeof(gpuos__dtask), c->copy_stream), "cuMemsetD8Async (tasks)");
        /* done stamps (gpuos_queue.h): all ones, earlier than any task */
        CUDA_TRY(ctx, c->cu->cuMemAlloc(&d, CUDA__TASK_CAP * sizeof(uint64_t)), "cuMemAlloc (done stamps)");
        c->P.done[l] = (uint64_t *)(uintptr_t)d;
        CUDA_TRY(ctx, c->cu->cuMemsetD8Async(d, 0xff, CUDA__TASK_CAP * sizeof(uint64_t), c->copy_stream), "cuMemsetD8Async (done stamps)");
        CUDA_TRY(ctx, c->cu->cuMemAlloc(&d, inbox_bytes), "cuMemAlloc (inboxes)");
        c->P.inbox[l] = (gpuos__ientry *)(uintptr_t)d;
        CUDA_TRY(ctx, c->cu->cuMemsetD8Async(d, 0, inbox_bytes, c->copy_stream), "cuMemsetD8Async (inboxes)");
        CUDA_TRY(ctx, c->cu->cuMemAlloc(&d, (size_t)c->n_workers * sizeof(uint32_t)), "cuMemAlloc (worker positions)");
        c->P.wpos[l] = (uint32_t *)(uintptr_t)d;
        CUDA_TRY(ctx, c->cu->cuMemsetD8Async(d, 0, (size_t)c->n_workers * sizeof(uint32_t), c->copy_stream), "cuMemsetD8Async (worker positions)");
        c->pos[l] = 0;
        c->dseq[l] = 1;
    }
    c->plans = (cuda__plan_entry *)calloc(CUDA__PLAN_CAP, sizeof(cuda__plan_entry));
    if (!c->plans) return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "gpuos_create: no memory for the plan cache");
    c->memo = (cuda__memo *)calloc(ctx->tcache_n, sizeof(cuda__memo)); /* without it: no repeated encodings */
    c->n_memo = c->memo ? ctx->tcache_n : 0;
    /* The memsets must be done before the kernel's first launch: a plain cuMemsetD8 goes on
       the legacy stream, which the kernels' non-blocking streams do not wait for, and while
       another context's kernel filled the GPU it ran after this context's kernel started
       (which read garbage inboxes: CUDA_ERROR_ILLEGAL_ADDRESS, test_contexts on the H200,
       session 20). Waited for with no kernel running (they need the multiprocessors: the
       gate stops other contexts' kernels) and a timeout. */
    {
        cuda__sync_arg a;
        a.c = c, a.timeout_ms = cuda_dev_wait_ms(ctx), a.r = CU_ERROR_NOT_READY;
        if (!cuda_gate_quiet(c, cuda_dev_wait_ms(ctx), cuda_copy_sync_fn, &a) || a.r == CU_ERROR_NOT_READY)
            return gpuos__set_error(ctx, GPUOS_ERR_TIMEOUT,
                                    "gpuos_create: clearing the queue's device memory did not finish within "
                                    "%u ms (wait_timeout_ms, at least %u; other kernels fill the GPU)",
                                    (unsigned)cuda_dev_wait_ms(ctx), CUDA__DEV_WAIT_MIN_MS);
        if (a.r != CU_SUCCESS)
            return gpuos__set_error(ctx, GPUOS_ERR_NO_DEVICE, "gpuos_create: clearing the queue's device memory failed: %s (%d)",
                                    cuda_errname(c->cu, a.r), (int)a.r);
    }
    return GPUOS_OK;
}

/* The process keeps each device's primary context once a gpuos context has made it, as the
   CUDA runtime does (one more retain, never released): a later gpuos_create after the last
   gpuos_destroy then skips the driver's context creation (~110 ms on an H100 host). Its memory
   goes back at exit, or to a program that resets the device (cudaDeviceReset). Set
   GPUOS_CUDA_KEEP_CONTEXT=0 to release it with the last gpuos context instead. */
#define CUDA__KEEP_DEVICES 64
static void cuda_keep_primary(struct gpuos__cuda *c, int ordinal) {
    static int kept[CUDA__KEEP_DEVICES];
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    const char *e = getenv("GPUOS_CUDA_KEEP_CONTEXT");
    gpuos__CUcontext again;
    if ((e && atoi(e) == 0) || ordinal < 0 || ordinal >= CUDA__KEEP_DEVICES) return;
    pthread_mutex_lock(&mu);
    if (!kept[ordinal] && c->cu->cuDevicePrimaryCtxRetain(&again, c->dev) == CU_SUCCESS) kept[ordinal] = 1;
    pthread_mutex_unlock(&mu);
}

static gpuos_status cuda_open_device(gpuos_context *ctx, struct gpuos__cuda *c, int ordinal) {
    int count = 0, map = 0, occ = 0;
    CUDA_TRY(ctx, c->cu->cuInit(0), "cuInit");
    c->open_ns[1] = cuda_now_ns();
    /* NVRTC and nvJitLink (the module's key needs NVRTC's version) load on a second thread
       while the driver makes the primary context. Not beside cuInit: the two threads' library
       loads contended (H100 host, fresh processes: cuInit 112-115 ms with the loads beside it
       against 97-101 without, ~10 and 23-24 beside another process holding the GPU) */
    if (!(getenv("GPUOS_CUDA_PRELOAD") && getenv("GPUOS_CUDA_PRELOAD")[0] == '0')) /* diagnosis: 0 loads them when needed */
        c->preload_running = pthread_create(&c->preload, NULL, cuda_preload_main, NULL) == 0;
    CUDA_TRY(ctx, c->cu->cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (count <= 0) return gpuos__set_error(ctx, GPUOS_ERR_NO_DEVICE, "gpuos_create: no CUDA device");
    if (ordinal >= count)
        return gpuos__set_error(ctx, GPUOS_ERR_NO_DEVICE, "gpuos_create: CUDA device %d requested, %d present", ordinal,
                                count);
    CUDA_TRY(ctx, c->cu->cuDeviceGet(&c->dev, ordinal), "cuDeviceGet");
    c->cu->cuDeviceGetName(c->name, (int)sizeof c->name, c->dev);
    CUDA_TRY(ctx, c->cu->cuDeviceGetAttribute(&c->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, c->dev),
             "cuDeviceGetAttribute");
    CUDA_TRY(ctx, c->cu->cuDeviceGetAttribute(&c->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, c->dev),
             "cuDeviceGetAttribute");
    CUDA_TRY(ctx, c->cu->cuDeviceGetAttribute(&c->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, c->dev),
             "cuDeviceGetAttribute");
    CUDA_TRY(ctx, c->cu->cuDeviceGetAttribute(&map, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, c->dev),
             "cuDeviceGetAttribute");
    if (!map) return gpuos__set_error(ctx, GPUOS_ERR_NO_DEVICE, "gpuos_create: the device cannot map host memory");
    if (c->cc_major < 7)
        return gpuos__set_error(ctx, GPUOS_ERR_NO_DEVICE, "gpuos_create: compute capability %d.%d; gpuos needs 7.0+",
                                c->cc_major, c->cc_minor);
    CUDA_TRY(ctx, c->cu->cuDevicePrimaryCtxRetain(&c->cuctx, c->dev), "cuDevicePrimaryCtxRetain");
    cuda_keep_primary(c, ordinal);
    CUDA_TRY(ctx, c->cu->cuCtxSetCurrent(c->cuctx), "cuCtxSetCurrent");
    c->open_ns[2] = cuda_now_ns();
    {
        gpuos_status st = cuda_build_module(ctx, c);
        if (st != GPUOS_OK) return st;
    }
    c->open_ns[3] = cuda_now_ns();
    CUDA_TRY(ctx, c->cu->cuModuleGetFunction(&c->fn, c->mod, "gpuos__pk_main"), "cuModuleGetFunction(gpuos__pk_main)");
    /* Every block must be resident at once: the workers wait on each other. */
    CUDA_TRY(ctx, c->cu->cuOccupancyMaxActiveBlocksPerMultiprocessor(&occ, c->fn, GPUOS__PK_THREADS, 0),
             "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    if (occ < 1) return gpuos__set_error(ctx, GPUOS_ERR_NO_DEVICE, "gpuos_create: the persistent kernel cannot fit");
    if (occ > 8) occ = 8;
    c->n_blocks = c->sm_count * occ;
    /* One shared-memory carveout for both kernels (the run-time one sets it too): enough for
       occ main blocks. A multiprocessor keeps the carveout of the blocks it runs, so with
       different preferences a main block may not fit beside a run-time block, and a main
       block that never becomes resident hangs the queue. */
    c->carveout = -1;
    c->smem_main = -1;
    if (c->cu->cuFuncGetAttribute && c->cu->cuFuncSetAttribute) {
        int smem = 0, per_sm = 0;
        const char *e = getenv("GPUOS_CUDA_CARVEOUT"); /* diagnosis: 0 leaves the driver's choice */
        if (c->cu->cuFuncGetAttribute(&smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, c->fn) == CU_SUCCESS) c->smem_main = smem;
        if (c->smem_main >= 0 && !(e && e[0] == '0') &&
            c->cu->cuDeviceGetAttribute(&per_sm, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, c->dev) ==
                CU_SUCCESS &&
            per_sm > 0) {
            const long long need = (long long)occ * (smem + 1024);
            int pct = (int)((100 * need + per_sm - 1) / per_sm);
            if (pct > 100) pct = 100;
            if (c->cu->cuFuncSetAttribute(c->fn, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, pct) == CU_SUCCESS)
                c->carveout = pct;
        }
    }
    if (c->n_blocks - 1 > GPUOS__MAX_WORKERS) c->n_blocks = GPUOS__MAX_WORKERS + 1;
    c->n_workers = c->n_blocks - 1;
    c->open_ns[4] = cuda_now_ns();
    CUDA_TRY(ctx, c->cu->cuStreamCreate(&c->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    CUDA_TRY(ctx, c->cu->cuStreamCreate(&c->copy_stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    CUDA_TRY(ctx, c->cu->cuStreamCreate(&c->rt_stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    c->open_ns[5] = cuda_now_ns();
    {
        gpuos_status st = cuda_alloc_queue(ctx, c);
        c->open_ns[6] = cuda_now_ns();
        return st;
    }
}

/* Environment variable name as an integer clamped to [lo, hi], or dflt when it is not set. */
static int cuda_env_clamp(const char *name, int dflt, int lo, int hi) {
    const char *e = getenv(name);
    const int v = e ? atoi(e) : dflt;
    return v < lo ? lo : v > hi ? hi : v;
}

gpuos_status gpuos__cuda_open(gpuos_context *ctx, int ordinal) {
    char why[512];
    struct gpuos__cuda *c;
    gpuos_status st;
    const gpuos__cuda_api *cu;
    if (sizeof(void *) != 8) /* plans, rings and tables hold host-filled device pointers as void * */
        return gpuos__set_error(ctx, GPUOS_ERR_NO_DEVICE, "gpuos_create: the CUDA backend needs a 64-bit process");
    cu = gpuos__cuda_load(why, sizeof why);
    if (!cu) return gpuos__set_error(ctx, GPUOS_ERR_NO_DEVICE, "gpuos_create: %s", why);
    c = (struct gpuos__cuda *)calloc(1, sizeof *c);
    if (!c) return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "gpuos_create: no memory for the CUDA backend");
    c->cu = cu;
    ctx->cuda = c;
    c->open_ns[0] = cuda_now_ns(); /* made relative at the end */
    /* Diagnostic switches (documented in docs/ARCHITECTURE.md): correctness never needs them. */
    c->align = !(getenv("GPUOS_CUDA_ALIGN") && getenv("GPUOS_CUDA_ALIGN")[0] == '0');
    c->subalign = !(getenv("GPUOS_CUDA_SUBALIGN") && getenv("GPUOS_CUDA_SUBALIGN")[0] == '0');
    c->xtiles = (uint32_t)cuda_env_clamp("GPUOS_CUDA_EXPRESS", CUDA__XPRESS_TILES, 0, CUDA__XPRESS_MAX); /* 0: off */
    c->xrun = (uint64_t)cuda_env_clamp("GPUOS_CUDA_EXPRESS_RUN", CUDA__XPRESS_RUN, 1, (int)GPUOS__XBOX);
    { /* "0..." off, "2..." everywhere, anything else (unset, "1", "yes") the default */
        const char *v = getenv("GPUOS_CUDA_MM_ROWS");
        c->mm_rows = v && v[0] == '0' ? 0 : v && v[0] == '2' ? 2 : 1;
    }
    c->mm_slices = getenv("GPUOS_CUDA_MM_SLICES") ? atoi(getenv("GPUOS_CUDA_MM_SLICES")) : CUDA__MM_SLICES;
    c->mm_f32 = gpuos__device_kernel_id(GPUOS_OP_MATMUL, GPUOS_F32, GPUOS_F32);
    c->tile_ew = CUDA__TILE_EW;
    c->graph_wide = (uint32_t)cuda_env_clamp("GPUOS_CUDA_GRAPH_WIDE", CUDA__GRAPH_WIDE, 0, 1 << 20);
    c->ew_per_worker = 0;
    if (getenv("GPUOS_CUDA_EW_PER_WORKER")) {
        const long v = strtol(getenv("GPUOS_CUDA_EW_PER_WORKER"), NULL, 10);
        if (v >= 1 && v <= 64) c->ew_per_worker = (uint32_t)v;
    }
    c->graph_slots = getenv("GPUOS_CUDA_GRAPH_SLOTS") && atoi(getenv("GPUOS_CUDA_GRAPH_SLOTS")) == 1;
    if (getenv("GPUOS_CUDA_TILE_EW")) {
        const long v = strtol(getenv("GPUOS_CUDA_TILE_EW"), NULL, 10);
        if (v >= 256 && v <= (1L << 20)) c->tile_ew = (uint32_t)v & ~255u;
    }
    c->serialize = getenv("GPUOS_CUDA_SERIALIZE") && getenv("GPUOS_CUDA_SERIALIZE")[0] == '1';
    ctx->reap_every = 32; /* tuning knob (A/B): GPUOS_CUDA_REAP_EVERY=0 leaves retiring to the reaper thread */
    if (getenv("GPUOS_CUDA_REAP_EVERY")) ctx->reap_every = (uint32_t)strtoul(getenv("GPUOS_CUDA_REAP_EVERY"), NULL, 10);
    st = cuda_open_device(ctx, c, ordinal < 0 ? 0 : ordinal);
    cuda_preload_join(c); /* joined already unless the device failed before its code */
    if (st == GPUOS_OK) {
        c->last_activity_ns = cuda_now_ns();
        if (pthread_create(&c->reaper, NULL, cuda_reaper_main, ctx) != 0)
            st = gpuos__set_error(ctx, GPUOS_ERR_INTERNAL, "gpuos_create: cannot start the reaper thread");
        else
            c->reaper_running = 1;
        c->open_ns[7] = cuda_now_ns();
        {
            int k;
            for (k = 7; k >= 1; k--) c->open_ns[k] = c->open_ns[k] ? c->open_ns[k] - c->open_ns[0] : 0;
            c->open_ns[0] = 0;
        }
    }
    if (st != GPUOS_OK) gpuos__cuda_close(ctx);
    return st;
}

/* Sends EXIT and waits for the kernel to leave (ctx->mu held). */
static void cuda_stop_kernel_locked(gpuos_context *ctx);

/* gpuos_destroy gave up waiting (wait_timeout_ms) with tasks still on the device: its
   workers skip the tiles they have not run (gpuos__pk_params.cancel, written through the copy
   stream, which runs beside the kernels), so the stop that follows drains the queue already
   sent in microseconds a task, not in the tasks' whole time (a queue of 4096 long tasks took
   as long as they would). A tile already running finishes. */
static void cuda_cancel_locked(gpuos_context *ctx, struct gpuos__cuda *c) {
    static const uint32_t one = 1;
    cuda_refresh_retired(c);
    if (ctx->sticky != GPUOS_OK || c->stuck ||
        (c->retired_seen[0] + 1 >= c->dseq[0] && c->retired_seen[1] + 1 >= c->dseq[1]))
        return; /* nothing left to skip (or a failed kernel: the stop says so) */
    (void)gpuos__cuda_memcpy(ctx, c->P.cancel, &one, sizeof one, 1); /* (a failure: the stop drains as before) */
}

void gpuos__cuda_close(gpuos_context *ctx) {
    struct gpuos__cuda *c = ctx->cuda;
    int i;
    if (!c) return;
    if (c->reaper_running) {
        pthread_mutex_lock(&ctx->mu);
        c->reaper_stop = 1;
        pthread_mutex_unlock(&ctx->mu);
        pthread_join(c->reaper, NULL);
        c->reaper_running = 0;
    }
    pthread_mutex_lock(&ctx->mu);
    cuda_gate_unqueue(c); /* (before c is freed: the queue links contexts) */
    if (c->running) cuda_cancel_locked(ctx, c);
    if (c->running) cuda_stop_kernel_locked(ctx);
    cuda_gate_check_stuck(c); /* a stuck kernel that ended leaves the gate; one that runs stays counted */
    cuda_gate_adopt_stuck(c); /* ... and the gate keeps asking about it */
    pthread_mutex_unlock(&ctx->mu);
    if (c->cuctx && !c->stuck) { /* freeing under a running kernel would block: a stuck one keeps it all */
        /* through the gate: now, or once no other context's kernel runs on the device (the
           primary context stays: those contexts hold it) */
        c->cu->cuCtxSetCurrent(c->cuctx);
        for (i = 0; i < GPUOS__LANES; i++) {
            cuda_release(c, CUDA__REL_MEM, (uint64_t)(uintptr_t)c->P.tasks[i]);
            cuda_release(c, CUDA__REL_MEM, (uint64_t)(uintptr_t)c->P.done[i]);
            cuda_release(c, CUDA__REL_MEM, (uint64_t)(uintptr_t)c->P.inbox[i]);
            cuda_release(c, CUDA__REL_MEM, (uint64_t)(uintptr_t)c->P.wpos[i]);
            cuda_release(c, CUDA__REL_HOST, (uint64_t)(uintptr_t)c->ring[i]);
        }
        cuda_release(c, CUDA__REL_MEM, (uint64_t)(uintptr_t)c->P.retired);
        cuda_release(c, CUDA__REL_MEM, (uint64_t)(uintptr_t)c->P.plans);
        if (c->P.xown) cuda_release(c, CUDA__REL_MEM, (uint64_t)(uintptr_t)c->P.xown);
        cuda_release(c, CUDA__REL_MEM, (uint64_t)(uintptr_t)c->gpool);
        cuda_release(c, CUDA__REL_HOST, (uint64_t)(uintptr_t)c->ctl);
        cuda_release(c, CUDA__REL_HOST, (uint64_t)(uintptr_t)c->up);
        if (c->stream) c->cu->cuStreamDestroy(c->stream);
        if (c->copy_stream) c->cu->cuStreamDestroy(c->copy_stream);
        if (c->rt_stream) c->cu->cuStreamDestroy(c->rt_stream);
        cuda_release(c, CUDA__REL_MOD, (uint64_t)(uintptr_t)c->mod);
        cuda_release(c, CUDA__REL_MOD, (uint64_t)(uintptr_t)c->rt_mod);
        cuda_unload_old_rt(c);
        c->cu->cuDevicePrimaryCtxRelease(c->dev);
    }
    {
        int k;
        free(c->rtw_img);
        for (k = 0; k < c->n_opt_store; k++) free(c->opt_store[k]);
    }
    free(c->granges);
    free(c->plans);
    free(c->memo);
    free(c);
    ctx->cuda = NULL;
}

/* ---------------------------------------------------------------- device memory */
gpuos_status gpuos__cuda_alloc(gpuos_context *ctx, size_t bytes, void **out) {
    struct gpuos__cuda *c = ctx->cuda;
    gpuos__CUdeviceptr d = 0;
    gpuos__CUresult r;
    c->cu->cuCtxSetCurrent(c->cuctx);
    r = c->cu->cuMemAlloc(&d, bytes ? bytes : 1);
    if (r != CU_SUCCESS)
        return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "cuMemAlloc(%zu bytes) failed: %s", bytes,
                                cuda_errname(c->cu, r));
    *out = (void *)(uintptr_t)d;
    return GPUOS_OK;
}

gpuos_status gpuos__cuda_alloc_pinned(gpuos_context *ctx, size_t bytes, void **host, void **dev) {
    struct gpuos__cuda *c = ctx->cuda;
    gpuos__CUdeviceptr d = 0;
    void *h = NULL;
    gpuos__CUresult r;
    c->cu->cuCtxSetCurrent(c->cuctx);
    r = c->cu->cuMemHostAlloc(&h, bytes ? bytes : 1, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
    if (r != CU_SUCCESS)
        return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "cuMemHostAlloc(%zu bytes) failed: %s", bytes,
                                cuda_errname(c->cu, r));
    r = c->cu->cuMemHostGetDevicePointer(&d, h, 0);
    if (r != CU_SUCCESS) {
        cuda_release(c, CUDA__REL_HOST, (uint64_t)(uintptr_t)h);
        return gpuos__set_error(ctx, GPUOS_ERR_INTERNAL, "cuMemHostGetDevicePointer failed: %s", cuda_errname(c->cu, r));
    }
    *host = h;
    *dev = (void *)(uintptr_t)d;
    return GPUOS_OK;
}

void gpuos__cuda_free_pinned_locked(gpuos_context *ctx, void *host) {
    if (host) gpuos__cuda_free_locked(ctx, (void *)((uintptr_t)host | 1u));
}

/* cuMemFree synchronises the device, which would wait for the persistent kernels (this
   context's and any other's on the device): through the gate (cuda_release), now or once
   none runs (an idle exit, a destroy). */
void gpuos__cuda_free_locked(gpuos_context *ctx, void *p) {
    struct gpuos__cuda *c = ctx->cuda;
    if (!p || c->stuck) return; /* a stuck kernel may still use it */
    cuda_free_addr(c, p);
}

/* Synchronous copy on the copy stream (never waits for the persistent kernel). */
gpuos_status gpuos__cuda_memcpy(gpuos_context *ctx, void *dst, const void *src, size_t bytes, int to_device) {
    struct gpuos__cuda *c = ctx->cuda;
    gpuos__CUresult r;
    if (bytes == 0) return GPUOS_OK;
    c->cu->cuCtxSetCurrent(c->cuctx);
    if (to_device)
        r = c->cu->cuMemcpyHtoDAsync((gpuos__CUdeviceptr)(uintptr_t)dst, src, bytes, c->copy_stream);
    else
        r = c->cu->cuMemcpyDtoHAsync(dst, (gpuos__CUdeviceptr)(uintptr_t)src, bytes, c->copy_stream);
    if (r == CU_SUCCESS) r = c->cu->cuStreamSynchronize(c->copy_stream);
    if (r != CU_SUCCESS)
        return gpuos__set_error(ctx, GPUOS_ERR_DEVICE_LOST, "%s of %zu bytes failed: %s (%d)",
                                to_device ? "copy to the device" : "copy from the device", bytes,
                                cuda_errname(c->cu, r), (int)r);
    return GPUOS_OK;
}

/* ---------------------------------------------------------------- the ring */
static void cuda_check_fault_locked(gpuos_context *ctx);
/* One pass of a submission's wait for room (ctx->mu held): GPUOS_OK after a short sleep while
   submit_timeout_ms has not passed since *t0 (0: the first pass, which starts it); then the
   fault of a kernel that died meanwhile, else GPUOS_ERR_QUEUE_FULL saying what stayed full. */
static gpuos_status cuda_full_wait(gpuos_context *ctx, uint64_t *t0, const char *what) {
    if (!*t0) *t0 = cuda_now_ns();
    if (cuda_now_ns() - *t0 > ((uint64_t)ctx->cfg.submit_timeout_ms + 1) * 1000000ull) {
        cuda_check_fault_locked(ctx); /* a kernel that died with the queue full: say so, not QUEUE_FULL */
        if (ctx->sticky != GPUOS_OK) return ctx->sticky;
        return gpuos__set_error(ctx, GPUOS_ERR_QUEUE_FULL, "gpuos_submit: %s for %u ms", what,
                                (unsigned)ctx->cfg.submit_timeout_ms);
    }
    cuda_sleep_ns(2000);
    return GPUOS_OK;
}

/* Waits (submit_timeout_ms) until `need` more slots fit in lane's ring (ctx->mu held). */
static gpuos_status cuda_ring_room(gpuos_context *ctx, struct gpuos__cuda *c, int lane, uint64_t need) {
    uint64_t t0 = 0;
    while (c->pos[lane] + need - c->fetched_seen[lane] > c->P.ring_slots) {
        gpuos_status st;
        c->fetched_seen[lane] = cuda_load_acquire(cuda_ctl_fetched(c, lane));
        if (c->pos[lane] + need - c->fetched_seen[lane] <= c->P.ring_slots) break;
        if ((st = cuda_full_wait(ctx, &t0, "the device did not take tasks (ring full)")) != GPUOS_OK) return st;
    }
    return GPUOS_OK;
}

/* Writes a 56-byte body into lane's next slot as 8 self-tagged words (gpuos_queue.h):
   each word is one aligned 8-byte store, in any order, so no fence is needed. The words are
   built first and stored back to back: on a little-endian host word k is the 8 bytes at 7k
   masked to 7 (the last one the 8 at 48 shifted down, inside the body), not 7 byte loads and
   shifts (a fake-device profile, prof/fakedev.c: ~420 instructions a slot, a quarter of a
   repeated submission's; ~40 now), and the device's poll, which reads the slot's line, finds
   it between the stores for a few cycles rather than the whole packing loop. */
static void cuda_put_slot(volatile uint64_t *w, const void *body, uint64_t tag) {
    const unsigned char *b = (const unsigned char *)body;
    uint64_t v[8];
    int k;
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (k = 0; k < 7; k++) {
        memcpy(&v[k], b + 7 * k, 8);
        v[k] &= 0x00ffffffffffffffull;
    }
    memcpy(&v[7], b + 48, 8);
    v[7] >>= 8;
#else
    for (k = 0; k < 8; k++) {
        int j;
        v[k] = 0;
        for (j = 6; j >= 0; j--) v[k] = (v[k] << 8) | b[7 * k + j]; /* little-endian, whatever the host's order */
    }
#endif
    for (k = 0; k < 8; k++) GPUOS__ASTORE(&w[k], v[k] | tag << 56, GPUOS__RELAXED);
}
static void cuda_put(struct gpuos__cuda *c, int lane, const void *body) {
    cuda_put_slot(c->ring[lane][c->pos[lane] & (c->P.ring_slots - 1)].w, body,
                  GPUOS__LAP_TAG(c->pos[lane], c->P.ring_log2));
    c->pos[lane]++;
}

static int cuda_plan_fetched(struct gpuos__cuda *c, const struct cuda__plan_entry *e);
/* Express tasks (docs/ARCHITECTURE.md). An express task is encoded as ONE tile on the
   express worker (base P.xworker): whether that worker takes it early from its mailbox or
   the fetcher places it, it runs there, whole, after everything its inbox held before, so
   its log entries are true (a later task may align with it, on that worker). May the job,
   n_tiles tiles as usual, be one (before the dependency scan, which the tiling decides)?
   When it is small (one tile, or a few of an element-wise operator, whose items as one tile
   give the same elements) and a built-in operator's, every earlier task is known retired or
   is one of the last few express tasks (a run of dependent tasks goes faster tile-aligned
   through the queue), and its mailbox slot is free
   (the task it held is done). The device relies on that rule: the express worker looks only
   at the newest claim for a task owed to it (gpuos__pk_xowed) and counts every dependency at
   or below the last express task it ran as done (gpuos__pk_xready), so an express task sent
   while an earlier ordinary task is unretired could be lost or run early. */
static int cuda_xpress_pre(struct gpuos__cuda *c, const gpuos__job *job, int lane, int64_t n_tiles) {
    const uint64_t me = c->dseq[0], prev = c->xseq[c->xcount % GPUOS__XBOX];
    if (!c->xtiles || lane != 0 || c->hi_used || c->serialize || !c->running || c->P.xworker >= c->P.n_main) return 0;
    if (n_tiles < 1 || n_tiles > (int64_t)c->xtiles || (n_tiles > 1 && job->kind != GPUOS__KIND_EW) ||
        job->dev_kernel >= GPUOS__RT_KERNEL_BASE)
        return 0;
    if (c->retired_seen[0] + 1 != me &&
        (c->xend != me || c->retired_seen[0] + 1 < c->xfirst || me - (c->retired_seen[0] + 1) >= c->xrun))
        return 0;
    if (prev > c->retired_seen[0]) {
        cuda_refresh_retired(c);
        if (prev > c->retired_seen[0]) return 0;
    }
    return 1;
}
/* ... and, encoded as such (d), may it go to the mailbox: its plan row is in the device's
   table (the express worker reads it from there), it does not wait for everything. */
static int cuda_xpress_ok(struct gpuos__cuda *c, const gpuos__qdesc *d) {
    return d->n_tiles == 1 && d->base == c->P.xworker && d->n_deps != GPUOS__DEPS_ALL &&
           cuda_plan_fetched(c, &c->plans[d->plan_id]);
}
/* Task d (seq) into the express mailbox, before its ring slot (whichever the device reads
   first, the express worker's claim or the fetcher's decides who runs it). */
static void cuda_xbox_put(struct gpuos__cuda *c, const gpuos__qdesc *d, uint64_t seq) {
    const uint64_t q = c->xcount++, tag = GPUOS__XTAG(q);
    const unsigned k = (unsigned)(q % GPUOS__XBOX);
    uint64_t w[7];
    memset(w, 0, sizeof w);
    w[0] = seq | q << 56; /* body bytes 0..6 the seq, 7..13 q (slot words 0 and 1 of xbox[k][1]) */
    w[1] = q >> 8;
    cuda_put_slot(c->ctl->xbox[k][0].w, d, tag);
    cuda_put_slot(c->ctl->xbox[k][1].w, w, tag);
    c->xseq[k] = seq;
    if (c->xend != seq) c->xfirst = seq;
    c->xend = seq + 1;
}

/* Blocks [first, first + n) of the current launch seen started (gpuos__pk_params.up). */
static int cuda_up_count(const struct gpuos__cuda *c, uint32_t first, uint32_t n) {
    uint32_t k;
    int up = 0;
    for (k = first; k < first + n; k++) up += GPUOS__ALOAD(U32, &c->up[k], GPUOS__ACQUIRE) == c->P.epoch;
    return up;
}

/* Launches c's kernel (ctx->mu held), without waiting: while another context's kernel holds
   the GPU the context stays queued for its turn and GPUOS__LAUNCH_LATER is returned, no error
   set (the caller's work stays queued: the reaper, a wait or the next submission tries again;
   a graph launch tries again itself, cuda_graph_kernel_locked). */
#define GPUOS__LAUNCH_LATER GPUOS_ERR_TIMEOUT
static gpuos_status cuda_launch_locked(gpuos_context *ctx, struct gpuos__cuda *c) {
    void *args[1];
    gpuos__CUresult r;
    int l;
    if (c->stuck || ctx->sticky != GPUOS_OK) { /* its kernel may still run on the queue's memory */
        cuda_gate_unqueue(c);
        return gpuos__set_error(ctx, ctx->sticky != GPUOS_OK ? ctx->sticky : GPUOS_ERR_DEVICE_LOST,
                                "the context has failed; no kernel is launched (%s)", ctx->sticky_msg);
    }
    /* before the launch: no synchronising call starts after it (left at the stop); waits
       while another context's kernel runs or a module load waits. A kept turn is tried at
       most every 100 us (a wait's loop pumps far more often; each try takes the gate's lock) */
    if (c->gate_queued && cuda_now_ns() - c->gate_try_ns < 100000u) return GPUOS__LAUNCH_LATER;
    c->gate_try_ns = cuda_now_ns();
    if (!cuda_gate_enter(c, 0, 1)) {
        if (c->gate_queued) return GPUOS__LAUNCH_LATER;
        return gpuos__set_error(ctx, GPUOS_ERR_TIMEOUT,
                                "another context's persistent kernel that does not stop holds the GPU; the work "
                                "stays queued");
    }
    for (l = 0; l < GPUOS__LANES; l++) {
        c->P.start_pos[l] = c->pos[l];
        c->P.start_seq[l] = c->dseq[l];
    }
    /* the run-time kernel only while some version holds a slot (defined, or still used by
       queued tasks): once every operator is removed the built-ins get every worker back */
    c->P.n_rt = 0;
    if (c->rt_fn)
        for (l = 0; l < GPUOS__RT_SLOTS && l < 2 * GPUOS_MAX_RUNTIME_OPS; l++)
            if (ctx->rt_slot[l]) {
                c->P.n_rt = (uint32_t)c->n_rt;
                break;
            }
    c->P.n_main = (uint32_t)c->n_workers - c->P.n_rt;
    c->P.xworker = c->xtiles && c->P.n_main > 1 ? c->P.n_main - 1 : UINT32_MAX; /* the express worker */
    c->P.xq0 = c->xcount; /* every express task sent before ran before EXIT */
    c->P.epoch++;
    c->all_up = 0;
    c->launch_ns = cuda_now_ns();
    c->ctl->alive = 1;
    args[0] = &c->P;
    c->cu->cuCtxSetCurrent(c->cuctx);
    /* The run-time operators' workers first, on their own stream: both kernels must be
       resident together (they wait on each other's tiles), and the main kernel leaves
       exactly their n_rt block slots free (the swap checked that one of them fits where a
       main block does). */
    r = CU_SUCCESS;
    if (c->P.n_rt) {
        /* padded with dynamic shared memory to the main kernel's size, so that a
           multiprocessor set up for one kind of block has room for the other; and the main
           kernel goes only once every run-time block runs (each block writes its word) */
        const unsigned pad = c->smem_main > c->smem_rt ? (unsigned)(c->smem_main - c->smem_rt) : 0u;
        const uint64_t t0 = cuda_now_ns();
        int up = 0;
        r = c->cu->cuLaunchKernel(c->rt_fn, c->P.n_rt, 1, 1, GPUOS__PK_THREADS, 1, 1, pad, c->rt_stream, args, NULL);
        while (r == CU_SUCCESS && (up = cuda_up_count(c, c->P.n_main + 1, c->P.n_rt)) < (int)c->P.n_rt &&
               cuda_now_ns() - t0 < CUDA__RESIDENT_NS)
            if (cuda_now_ns() - t0 > 200000) cuda_sleep_ns(20000);
        if (r == CU_SUCCESS && up < (int)c->P.n_rt) {
            c->ctl->alive = 0;
            c->stuck = 1;
            gpuos__fail_locked(ctx, "only %d of the run-time operators' %d worker blocks started within %d s", up,
                               (int)c->P.n_rt, (int)(CUDA__RESIDENT_NS / 1000000000ull));
            return GPUOS_ERR_DEVICE_LOST;
        }
    }
    if (r == CU_SUCCESS)
        r = c->cu->cuLaunchKernel(c->fn, c->P.n_main + 1, 1, 1, GPUOS__PK_THREADS, 1, 1, 0, c->stream, args, NULL);
    if (r != CU_SUCCESS) {
        c->ctl->alive = 0;
        if (c->P.n_rt && c->cu->cuStreamQuery(c->rt_stream) == CU_ERROR_NOT_READY) {
            /* the run-time workers run and only EXIT from the scheduler ends them: keep
               every allocation (as for a kernel that does not stop) and fail the context */
            c->stuck = 1;
            gpuos__fail_locked(ctx, "launching the persistent kernel failed: %s (%d)", cuda_errname(c->cu, r), (int)r);
        } else {
            cuda_gate_leave(c); /* nothing of this context runs */
        }
        return gpuos__set_error(ctx, GPUOS_ERR_DEVICE_LOST, "launching the persistent kernel failed: %s (%d)",
                                cuda_errname(c->cu, r), (int)r);
    }
    c->running = 1;
    c->launches++; /* repeated tasks encode in full once: placement may differ */
    return GPUOS_OK;
}

/* Both kernels' state: CU_ERROR_NOT_READY while either runs, else the first error, else success. */
static gpuos__CUresult cuda_kernels_query(const struct gpuos__cuda *c) {
    gpuos__CUresult r = c->cu->cuStreamQuery(c->stream), r2;
    if (!c->P.n_rt) return r;
    r2 = c->cu->cuStreamQuery(c->rt_stream);
    if (r != CU_SUCCESS && r != CU_ERROR_NOT_READY) return r;
    if (r2 != CU_SUCCESS && r2 != CU_ERROR_NOT_READY) return r2;
    return r == CU_ERROR_NOT_READY ? r : r2;
}

/* Nanoseconds since a stop last saw the device retire a task (either lane): *done the count
   seen, *t_prog when it changed. */
static uint64_t cuda_stop_progress(const struct gpuos__cuda *c, uint64_t *done, uint64_t *t_prog) {
    const uint64_t now = cuda_now_ns(),
                   d = cuda_load_acquire(&c->ctl->retired) + cuda_load_acquire(&c->ctl->retired_hi);
    if (d != *done) *done = d, *t_prog = now;
    return now - *t_prog;
}

/* Before a stop that something else waits for (another context's turn on the device, a
   run-time operator's swap): lets the device retire what was sent to it so far with ctx->mu
   let go, so that this context's other threads (submissions, waits with their timeouts) are
   not held up for a whole queue's drain, as they were when the stop drained it holding the
   lock; the stop then drains only what was sent meanwhile. Ends on no progress for
   wait_timeout_ms (the stop then says so), a fault, or the context closing (ctx->mu held,
   released meanwhile). */
static void cuda_predrain_locked(gpuos_context *ctx, struct gpuos__cuda *c) {
    const uint64_t want0 = c->dseq[0] - 1, want1 = c->dseq[1] - 1, t0 = cuda_now_ns(),
                   limit = (uint64_t)cuda_dev_wait_ms(ctx) * 1000000ull;
    uint64_t done = 0, t_prog = t0;
    while (c->running && ctx->sticky == GPUOS_OK && !c->stuck && !c->reaper_stop) {
        cuda_refresh_retired(c);
        if (c->retired_seen[0] >= want0 && c->retired_seen[1] >= want1) break;
        if (cuda_stop_progress(c, &done, &t_prog) > limit) break;
        pthread_mutex_unlock(&ctx->mu);
        /* the first 2 ms without sleeping (a 20 us sleep lasts ~70: a swap behind a short queue
           paused the device that much longer, swap_pause_us 300 -> 380 on the H100) */
        if (cuda_now_ns() - t0 > 2000000) cuda_sleep_ns(20000);
        else sched_yield();
        pthread_mutex_lock(&ctx->mu);
        (void)gpuos__cuda_reap_locked(ctx); /* waiters see what finished */
        cuda_check_fault_locked(ctx);
    }
}

static void cuda_stop_kernel_locked(gpuos_context *ctx) {
    struct gpuos__cuda *c = ctx->cuda;
    gpuos__qdesc d;
    gpuos__CUresult r;
    gpuos_status room;
    int i;
    const uint64_t t0 = cuda_now_ns(), limit = (uint64_t)cuda_dev_wait_ms(ctx) * 1000000ull;
    uint64_t t_prog = t0, done = 0; /* the timeout counts from the last task retired: a long drain is no fault */
    if (!c->running) return;
    c->cu->cuCtxSetCurrent(c->cuctx);
    /* EXIT goes on lane 0 and ends lane 1 with it: lane 1 must have retired everything first
       (lane-1 tasks never wait for lane 0, so this finishes unless the kernel failed) */
    while (cuda_load_acquire(&c->ctl->retired_hi) + 1 < c->dseq[1] && cuda_stop_progress(c, &done, &t_prog) <= limit &&
           cuda_kernels_query(c) == CU_ERROR_NOT_READY)
        cuda_sleep_ns(5000);
    memset(&d, 0, sizeof d);
    d.kind = GPUOS__SLOT_EXIT;
    /* room for EXIT: a stop asked for by another context may find the ring full */
    while ((room = cuda_ring_room(ctx, c, 0, 1)) != GPUOS_OK && cuda_stop_progress(c, &done, &t_prog) <= limit &&
           cuda_kernels_query(c) == CU_ERROR_NOT_READY)
        cuda_sleep_ns(5000);
    if (room == GPUOS_OK) {
        cuda_put(c, 0, &d);
        c->dseq[0]++;
    }
    /* the kernels leave once EXIT retired (or at a fault); waited for with a timeout, polled
       without sleeping for the first 2 ms (a swap's pause; a 20 us sleep lasts ~70) */
    while ((r = cuda_kernels_query(c)) == CU_ERROR_NOT_READY && cuda_stop_progress(c, &done, &t_prog) <= limit)
        if (cuda_now_ns() - t0 > 2000000) cuda_sleep_ns(20000);
    c->running = 0;
    if (r == CU_ERROR_NOT_READY) { /* still running: its memory stays allocated, nothing waits on it */
        c->stuck = 1;
        gpuos__fail_locked(ctx, "the persistent kernel did not stop: no task retired for %u ms (wait_timeout_ms, at "
                         "least %u)", (unsigned)cuda_dev_wait_ms(ctx), CUDA__DEV_WAIT_MIN_MS);
        return;
    }
    if (r != CU_SUCCESS) gpuos__fail_locked(ctx, "the persistent kernel failed: %s (%d)", cuda_errname(c->cu, r), (int)r);
    for (i = 0; i < GPUOS__LANES; i++) c->retired_seen[i] = c->dseq[i] - 1;
    cuda_gate_leave(c); /* the last kernel on the device out frees what was kept */
    if (!c->swapping || c->n_old_rt == CUDA__OLD_MODS) cuda_unload_old_rt(c); /* swapped-out generations (small) */
}

/* ---------------------------------------------------------------- encoding a job */
typedef struct cuda__operand {
    const char *ptr;
    int rank;
    const int64_t *shape;
    const int64_t *stride; /* bytes */
    int64_t pre_shape[2 * GPUOS__MAX_RANK];
    int64_t pre_stride[2 * GPUOS__MAX_RANK];
    size_t elsize;
    int write;
    uint64_t sig; /* element-wise item->element map, 0 if none */
    uint32_t lin; /* cuda__access.lin */
} cuda__operand;

/* Byte range [lo, hi) that an operand reaches. */
static void cuda_operand_range(const cuda__operand *o, uint64_t *lo, uint64_t *hi) {
    int64_t a = 0, b = 0;
    int k;
    for (k = 0; k < o->rank; k++) {
        if (o->shape[k] == 0) {
            *lo = *hi = (uint64_t)(uintptr_t)o->ptr;
            return;
        }
        if (o->stride[k] > 0) b += o->stride[k] * (o->shape[k] - 1);
        else a += o->stride[k] * (o->shape[k] - 1);
    }
    *lo = (uint64_t)(uintptr_t)o->ptr + (uint64_t)a;
    *hi = (uint64_t)(uintptr_t)o->ptr + (uint64_t)b + o->elsize;
}

/* A read-only 1-D operand (layernorm's weight and bias). */
static void cuda_operand_vector(cuda__operand *o, const char *ptr, int64_t n, int64_t stride, size_t elsize) {
    o->ptr = ptr;
    o->pre_shape[0] = n;
    o->pre_stride[0] = stride;
    o->rank = 1;
    o->shape = o->pre_shape;
    o->stride = o->pre_stride;
    o->elsize = elsize;
}

/* Row maps: operands whose tile t touches exactly row t of a [rows, cols] view (a row-tiled
   product's output, A, prologue output and row-wise epilogue operands; a row-wise task's
   input and output, one row a tile) get the view's hash as their sig, so that two such
   accesses with equal tiles are tile-aligned as element-wise operands are (the row's
   bytes, the same worker). A different tag from the element-wise sigs. */
static uint64_t cuda_row_sig(const cuda__operand *o) { /* o: [rows, cols] */
    int64_t v[5];
    uint64_t h;
    v[0] = o->shape[0], v[1] = o->stride[0], v[2] = o->shape[1], v[3] = o->stride[1], v[4] = o->elsize;
    h = cuda_hash(cuda_hash(CUDA__HASH0 ^ 0x524f5753ull, &o->ptr, sizeof o->ptr), v, sizeof v);
    return h ? h : 2;
}
static int64_t cuda_matmul_cb(const struct gpuos__cuda *c, const gpuos__job *job);
static void cuda_align_sigs(const struct gpuos__cuda *c, const gpuos__job *job, cuda__operand *ops, int n) {
    int k;
    if (job->kind == GPUOS__KIND_MATMUL && cuda_matmul_cb(c, job) == GPUOS__MM_ROWS) {
        for (k = 0; k < n; k++) /* [M, *] views (B, [K, N], is read whole by every tile) */
            if (k != 2 && ops[k].rank == 2 && ops[k].shape[0] == job->plan.matmul.M && ops[k].stride[0] != 0)
                ops[k].sig = cuda_row_sig(&ops[k]);
    } else if (job->kind == GPUOS__KIND_ROWS && job->plan.rows.outer_rank == 1 && !job->rt) {
        for (k = 0; k < 2; k++) /* out, in: [rows, n] (not rows broadcast from one: every tile reads it) */
            if (ops[k].stride[0] != 0) ops[k].sig = cuda_row_sig(&ops[k]);
    }
}

/* Lists a job's operands (out first) from its plan, with their sigs (element maps, row maps:
   cuda_align_sigs). */
static int cuda_operands(const struct gpuos__cuda *c, const gpuos__job *job, cuda__operand *ops) {
    int n = 0, k;
    for (k = 0; k < GPUOS__MAX_PTR; k++) { /* the fields every kind reads; pre_* are scratch */
        ops[k].ptr = NULL;
        ops[k].rank = 0;
        ops[k].write = 0;
        ops[k].sig = 0;
        ops[k].lin = 0;
    }
    switch (job->kind) {
    case GPUOS__KIND_EW: {
        const gpuos__ew_plan *p = &job->plan.ew;
        for (k = 0; k < p->n_ptr; k++) {
            ops[n].ptr = p->ptr[k];
            ops[n].rank = p->rank;
            ops[n].shape = p->shape;
            ops[n].stride = p->stride[k];
            ops[n].elsize = job->elsize[k];
            ops[n].write = k == 0;
            ops[n].sig = cuda_hash(cuda_hash(cuda_hash(cuda_hash(CUDA__HASH0, &p->ptr[k], sizeof p->ptr[k]), &p->rank, 4),
                                           p->shape, sizeof(int64_t) * (size_t)p->rank),
                                  p->stride[k], sizeof(int64_t) * (size_t)p->rank);
            ops[n].sig ^= (uint64_t)job->elsize[k] << 56;
            /* run-time operators' tiles run on other worker blocks: never aligned with built-ins' */
            if (job->dev_kernel >= GPUOS__RT_KERNEL_BASE) ops[n].sig ^= 0x5254000000000000ull;
            if (!ops[n].sig) ops[n].sig = 1;
            /* item i at byte ptr + i elsize: tile t reaches its tile of items exactly */
            if (job->dev_kernel < GPUOS__RT_KERNEL_BASE && p->numel == job->items &&
                (p->rank == 0 || (p->rank == 1 && p->stride[k][0] == (int64_t)job->elsize[k])))
                ops[n].lin = (uint32_t)job->elsize[k];
            n++;
        }
        break;
    }
    case GPUOS__KIND_REDUCE: {
        const gpuos__reduce_plan *p = &job->plan.reduce;
        ops[0].ptr = p->out;
        ops[0].rank = p->outer_rank;
        ops[0].shape = p->outer_shape;
        ops[0].stride = p->outer_out_stride;
        ops[0].write = 1;
        ops[1].ptr = p->in;
        for (k = 0; k < p->outer_rank; k++) {
            ops[1].pre_shape[k] = p->outer_shape[k];
            ops[1].pre_stride[k] = p->outer_in_stride[k];
        }
        for (k = 0; k < p->inner_rank; k++) {
            ops[1].pre_shape[p->outer_rank + k] = p->inner_shape[k];
            ops[1].pre_stride[p->outer_rank + k] = p->inner_in_stride[k];
        }
        ops[1].rank = p->outer_rank + p->inner_rank;
        ops[1].shape = ops[1].pre_shape;
        ops[1].stride = ops[1].pre_stride;
        ops[0].elsize = job->elsize[0];
        ops[1].elsize = job->elsize[1];
        n = 2;
        break;
    }
    case GPUOS__KIND_ROWS: {
        const gpuos__rows_plan *p = &job->plan.rows;
        for (k = 0; k < 2; k++) {
            int j;
            for (j = 0; j < p->outer_rank; j++) {
                ops[k].pre_shape[j] = p->outer_shape[j];
                ops[k].pre_stride[j] = k ? p->outer_in_stride[j] : p->outer_out_stride[j];
            }
            ops[k].pre_shape[p->outer_rank] = p->n;
            ops[k].pre_stride[p->outer_rank] = k ? p->in_stride : p->out_stride;
            ops[k].rank = p->outer_rank + 1;
            ops[k].shape = ops[k].pre_shape;
            ops[k].stride = ops[k].pre_stride;
            ops[k].elsize = job->elsize[k];
        }
        ops[0].ptr = p->out;
        ops[0].write = 1;
        ops[1].ptr = p->in;
        n = 2;
        if (p->weight) cuda_operand_vector(&ops[n++], p->weight, p->n, p->weight_stride, job->elsize[2]);
        if (p->bias) cuda_operand_vector(&ops[n++], p->bias, p->n, p->bias_stride, job->elsize[3]);
        break;
    }
    default: { /* matmul */
        const gpuos__matmul_plan *p = &job->plan.matmul;
        const char *ptrs[3];
        int64_t r0[3], s0[3], r1[3], s1[3];
        ptrs[0] = p->out; r0[0] = p->M; s0[0] = p->o_m; r1[0] = p->N; s1[0] = p->o_n;
        ptrs[1] = p->a;   r0[1] = p->M; s0[1] = p->a_m; r1[1] = p->K; s1[1] = p->a_k;
        ptrs[2] = p->b;   r0[2] = p->K; s0[2] = p->b_k; r1[2] = p->N; s1[2] = p->b_n;
        for (k = 0; k < 3; k++) {
            int j;
            for (j = 0; j < p->batch_rank; j++) {
                ops[k].pre_shape[j] = p->batch_shape[j];
                ops[k].pre_stride[j] = k == 0 ? p->batch_out_stride[j] : k == 1 ? p->batch_a_stride[j] : p->batch_b_stride[j];
            }
            ops[k].pre_shape[p->batch_rank] = r0[k];
            ops[k].pre_stride[p->batch_rank] = s0[k];
            ops[k].pre_shape[p->batch_rank + 1] = r1[k];
            ops[k].pre_stride[p->batch_rank + 1] = s1[k];
            ops[k].rank = p->batch_rank + 2;
            ops[k].shape = ops[k].pre_shape;
            ops[k].stride = ops[k].pre_stride;
            ops[k].ptr = ptrs[k];
            ops[k].elsize = job->elsize[k];
            ops[k].write = k == 0;
        }
        n = 3;
        if (p->pro) { /* a fused layernorm prologue writes its output, [M, K] (before the epilogue's
                         operands: a read of that same view is then covered by this write) */
            ops[n].ptr = p->pro_out;
            ops[n].pre_shape[0] = p->M;
            ops[n].pre_stride[0] = p->pro_om;
            ops[n].pre_shape[1] = p->K;
            ops[n].pre_stride[1] = p->pro_ok;
            ops[n].rank = 2;
            ops[n].shape = ops[n].pre_shape;
            ops[n].stride = ops[n].pre_stride;
            ops[n].elsize = job->elsize[0];
            ops[n].write = 1;
            n++;
        }
        for (k = 0; k < p->n_epi; k++) { /* a fused epilogue's tensor operands, read as [M, N] */
            const int32_t e = p->epi[k];
            const int j = (e >> GPUOS__EPI_IN_SHIFT) & 1;
            int q;
            if (!gpuos__epi_binary(e)) continue;
            for (q = 3; q < n && !(ops[q].ptr == p->epi_ptr[j] && ops[q].stride[0] == p->epi_sm[j] && ops[q].stride[1] == p->epi_sn[j]); q++)
                continue;
            if (q < n || n == GPUOS__MAX_PTR) continue;
            ops[n].ptr = p->epi_ptr[j];
            ops[n].pre_shape[0] = p->M;
            ops[n].pre_stride[0] = p->epi_sm[j];
            ops[n].pre_shape[1] = p->N;
            ops[n].pre_stride[1] = p->epi_sn[j];
            ops[n].rank = 2;
            ops[n].shape = ops[n].pre_shape;
            ops[n].stride = ops[n].pre_stride;
            ops[n].elsize = job->elsize[0];
            n++;
        }
    }
    }
    cuda_align_sigs(c, job, ops, n);
    return n;
}

/* The storage that holds the whole byte range [lo, hi) (among the job's). Allocations
   may be adjacent (the driver packs them), so an end address must not match the next. */
static gpuos__storage *cuda_storage_of(const gpuos__job *job, uint64_t lo, uint64_t hi) {
    int i;
    for (i = 0; i < job->n_st; i++) {
        uint64_t b = (uint64_t)(uintptr_t)job->st[i]->data;
        if (lo >= b && hi <= b + job->st[i]->bytes) return job->st[i];
    }
    return NULL;
}

/* Writes plan row e (id) into lane's ring as PLAN slots. */
static void cuda_plan_send(struct gpuos__cuda *c, cuda__plan_entry *e, uint32_t id, int lane) {
    uint32_t chunk;
    for (chunk = 0; chunk * GPUOS__SLOT_PAYLOAD < e->bytes; chunk++) {
        gpuos__qplan q;
        memset(&q, 0, sizeof q);
        q.kind = GPUOS__SLOT_PLAN;
        q.plan_id = id;
        q.chunk = chunk;
        memcpy(q.payload, e->plan + chunk * GPUOS__SLOT_PAYLOAD, GPUOS__SLOT_PAYLOAD);
        cuda_put(c, lane, &q);
    }
    e->wlane = lane;
    e->wpos = c->pos[lane];
}

/* Has the device copied row e into its plan table? */
static int cuda_plan_fetched(struct gpuos__cuda *c, const struct cuda__plan_entry *e) {
    if (e->wpos <= c->fetched_seen[e->wlane]) return 1;
    c->fetched_seen[e->wlane] = cuda_load_acquire(cuda_ctl_fetched(c, e->wlane));
    return e->wpos <= c->fetched_seen[e->wlane];
}

/* May plan row e be replaced: unused, or every task that used it retired and no recorded
   graph pins it? */
static int cuda_plan_free(const struct gpuos__cuda *c, const cuda__plan_entry *e) {
    return !e->used ||
           (e->last_dseq[0] <= c->retired_seen[0] && e->last_dseq[1] <= c->retired_seen[1] && e->pins == 0);
}

/* Finds or sends the plan for a task of `lane`; returns its id (ctx->mu held). */
static gpuos_status cuda_plan_id(gpuos_context *ctx, struct gpuos__cuda *c, const gpuos__job *job, const void *plan,
                                 uint32_t bytes, int lane, uint32_t *id, uint32_t *epoch) {
    uint64_t key = cuda_plan_hash(CUDA__HASH0 ^ (uint64_t)(uint32_t)job->dev_kernel, plan, bytes);
    uint32_t h = (uint32_t)(key ^ (key >> 32)), i, victim = UINT32_MAX;
    uint64_t t0 = 0;
    for (;;) {
        /* the victim: an unused row of the window, else the free row used longest ago (by its
           last task of this lane). Taking the first free row evicted another plan's retired row
           while unused ones followed it: two plans whose windows start at the same row then
           evicted each other at every use (bench's independent on the fake device: 7% of the
           submissions encoded in full, each sending its 12 plan slots again) */
        uint64_t victim_use = UINT64_MAX;
        for (i = 0; i < CUDA__PLAN_PROBE; i++) {
            uint32_t s = (h + i) & (CUDA__PLAN_CAP - 1);
            cuda__plan_entry *e = &c->plans[s];
            if (e->used && e->key == key && e->bytes == bytes && memcmp(e->plan, plan, bytes) == 0) {
                /* written through the other lane's ring and not fetched yet: this lane's
                   fetcher may come first, so it gets the (same) bytes through its own ring */
                if (e->wlane != lane && !cuda_plan_fetched(c, e)) {
                    gpuos_status st = cuda_ring_room(ctx, c, lane, GPUOS__PLAN_SLOTS);
                    if (st != GPUOS_OK) return st;
                    cuda_plan_send(c, e, s, lane);
                }
                e->last_dseq[lane] = c->dseq[lane];
                *id = s;
                *epoch = e->epoch;
                return GPUOS_OK;
            }
            if (victim_use != 0 && cuda_plan_free(c, e)) {
                const uint64_t use = e->used ? e->last_dseq[lane] + 1 : 0;
                if (use < victim_use) victim = s, victim_use = use;
            }
        }
        if (victim != UINT32_MAX) break;
        /* the window is taken (recorded graphs' pinned rows cluster there, or queued tasks'):
           any free row will do, found by a scan (later lookups miss it: a duplicate row at
           worst). Only a table held whole by queued tasks waits. */
        for (i = 0; i < CUDA__PLAN_CAP && victim == UINT32_MAX; i++) {
            const uint32_t s = (h + CUDA__PLAN_PROBE + i) & (CUDA__PLAN_CAP - 1);
            if (cuda_plan_free(c, &c->plans[s])) victim = s;
        }
        if (victim != UINT32_MAX) break;
        /* every candidate is in use by queued tasks: wait for some to retire */
        cuda_refresh_retired(c);
        {
            gpuos_status st = cuda_full_wait(ctx, &t0,
                                             "no free plan slot (the device's plan rows are all held by queued tasks "
                                             "and recorded graphs)");
            if (st != GPUOS_OK) return st;
        }
    }
    {
        cuda__plan_entry *e = &c->plans[victim];
        gpuos_status st = cuda_ring_room(ctx, c, lane, GPUOS__PLAN_SLOTS);
        if (st != GPUOS_OK) return st;
        e->used = 1;
        e->key = key;
        e->bytes = bytes;
        memset(e->plan, 0, sizeof e->plan);
        memcpy(e->plan, plan, bytes);
        e->last_dseq[0] = e->last_dseq[1] = 0;
        e->last_dseq[lane] = c->dseq[lane];
        e->epoch = ++c->plan_epoch & 0xffffffu;
        cuda_plan_send(c, e, victim, lane);
        *id = victim;
        *epoch = e->epoch;
    }
    return GPUOS_OK;
}

/* Bytes of a job's plan. */
static uint32_t cuda_plan_bytes(int kind) {
    switch (kind) {
    case GPUOS__KIND_EW: return sizeof(gpuos__ew_plan);
    case GPUOS__KIND_REDUCE: return sizeof(gpuos__reduce_plan);
    case GPUOS__KIND_ROWS: return sizeof(gpuos__rows_plan);
    default: return sizeof(gpuos__matmul_plan);
    }
}
/* every plan fits its row of the device table (the matmul plan fills it: 480 of 480 bytes) */
typedef char cuda__plans_fit[sizeof(gpuos__ew_plan) <= GPUOS__PLAN_SLOTS * GPUOS__SLOT_PAYLOAD &&
                                     sizeof(gpuos__reduce_plan) <= GPUOS__PLAN_SLOTS * GPUOS__SLOT_PAYLOAD &&
                                     sizeof(gpuos__rows_plan) <= GPUOS__PLAN_SLOTS * GPUOS__SLOT_PAYLOAD &&
                                     sizeof(gpuos__matmul_plan) <= GPUOS__PLAN_SLOTS * GPUOS__SLOT_PAYLOAD
                                 ? 1
                                 : -1];

/* The worker blocks a job's tiles are spread over: the run-time module's for a run-time
   operator, else the main kernel's (as last launched; a job is encoded once it runs). */
static int cuda_job_workers(const struct gpuos__cuda *c, const gpuos__job *job) {
    return job->dev_kernel >= GPUOS__RT_KERNEL_BASE && c->n_rt > 0 ? c->n_rt : c->n_workers - (int)c->P.n_rt;
}

/* Matmul column blocks: a matmul of few output rows (8 rows are one 32-row tile: one block
   for the whole product) is also split by columns, so that about half the workers share it:
   blocks of at least 8 columns when M <= 8 (the device's narrow path, gpuos__d_mm_narrow),
   else 32 (the device rounds a block up to that many). 1: not split. */
static int64_t cuda_matmul_cols(const struct gpuos__cuda *c, const gpuos__job *job) {
    const gpuos__matmul_plan *p = &job->plan.matmul;
    const int64_t cw = p->M <= 8 ? 8 : 32;
    int64_t row_tiles, ncb;
    if (job->kind != GPUOS__KIND_MATMUL || job->items <= 0) return 1;
    if (p->pro) return (p->N + 7) / 8; /* a fused prologue runs on narrow blocks only (src/graph.c) */
    if (p->N < 64) return 1;
    row_tiles = (job->items + 31) / 32;
    ncb = ((int64_t)cuda_job_workers(c, job) / 2) / row_tiles;
    if (ncb > (p->N + cw - 1) / cw) ncb = (p->N + cw - 1) / cw;
    return ncb < 1 ? 1 : ncb;
}

/* Row tiles (gpuos__matmul_plan.n_cb = GPUOS__MM_ROWS, the device's gpuos__d_mm_row): a
   fused f32 product of at most 8 rows (a recorded graph's layer: a prologue or an epilogue)
   that would otherwise run on narrow column blocks is tiled one output row a tile, every
   output summed as the narrow blocks sum it (bit for bit), so that the next layer's fused
   product, whose prologue reads that row, or a layernorm of it, is tile-aligned with it
   (cuda_align_sigs) and runs on the same block with no wait. Where gpuos__d_mm_row_ok holds:
   K = 128 or 256 (slices of 4 or 8 values for 256 threads; a prologue only at 256: graph.c
   fuses a layernorm only where the device gives its row to the whole block), N a multiple
   of 4, B row-major and 16-byte aligned, no batch axes. Not where the device's lean narrow
   block runs (gpuos__d_mm_lean_ok: K = 256, N a multiple of 8): 32 of them make a layer of
   bench's tiny_mlp in less time than 8 row tiles (57.4 against 74.3 us a forward, H100,
   bench/NOTES.md session 34). Returns 0 (no row tiles), 1 (whole rows) or S (each row in S
   64-column slices). */
static int cuda_matmul_rows(const struct gpuos__cuda *c, const gpuos__job *job, int64_t ncb) {
    const gpuos__matmul_plan *p = &job->plan.matmul;
    if (!c->mm_rows || job->dev_kernel != c->mm_f32) return 0;
    if ((!p->pro && p->n_epi == 0) || p->batch_rank != 0 || p->batch_numel != 1 || p->M > 8) return 0;
    if (p->N % 4 != 0 || p->b_n != 4 || p->b_k % 16 != 0 || ((uintptr_t)p->b & 15) != 0) return 0;
    /* gpuos__d_mm_row: 256 columns a pass over 256 threads, slices of 4 or 8 values of K */
    if (GPUOS__PK_THREADS != 256 || (p->K != 128 && p->K != 256)) return 0;
    if (c->mm_rows == 1 && p->K == 256 && p->N % 8 == 0) return 0; /* the lean narrow block */
    /* only where the product would run on narrow blocks (a prologue always does) */
    if (!(p->pro || (ncb > 1 && p->N <= 8 * ncb))) return 0;
    /* S 64-column slices a row (gpuos__d_mm_rowslice) where N is S * 64 and S >= mm_slices:
       B is streamed by S blocks at once, but the next task waits for the whole product (a
       whole row tile lets the next layer's row follow it on its block) */
    if (c->mm_slices >= 2 && p->N % 64 == 0 && p->N / 64 >= c->mm_slices) return (int)(p->N / 64);
    return 1;
}

/* gpuos__matmul_plan.n_cb as the device gets it: GPUOS__MM_ROWS (row tiles) or -S (row tiles
   of S column slices), else the column blocks (1: not split). */
static int64_t cuda_matmul_cb(const struct gpuos__cuda *c, const gpuos__job *job) {
    const int64_t ncb = cuda_matmul_cols(c, job);
    const int s = job->kind == GPUOS__KIND_MATMUL && job->items > 0 ? cuda_matmul_rows(c, job, ncb) : 0;
    return s > 0 ? -(int64_t)s : ncb;
}

/* A job's items as the device counts them: a matmul split in ncb column blocks has each row
   once per block, one in -ncb row slices once per slice (whole row tiles and unsplit
   products: the job's own). */
static int64_t cuda_device_items(const gpuos__job *job, int64_t ncb) {
    return ncb > 1 ? job->items * ncb : ncb < 0 ? job->items * -ncb : job->items;
}

/* The plan the device gets (a matmul's column blocks or row tiles set) and its item count. */
static const void *cuda_device_plan(const struct gpuos__cuda *c, const gpuos__job *job, gpuos__matmul_plan *tmp,
                                    int64_t *n_items) {
    const int64_t ncb = cuda_matmul_cb(c, job);
    *n_items = cuda_device_items(job, ncb);
    if (ncb == 1) return &job->plan;
    *tmp = job->plan.matmul;
    tmp->n_cb = ncb;
    return tmp;
}

#define CUDA__EW_DEEP 16384 /* GPUOS__D_EW_BIG: a tile this large runs the deep vector loop */
/* Tiling: small element-wise tasks in tiles of tile_ew items (1024: one vector pass of 256
   threads x 4); large ones in about four tiles per worker (two for the largest), whole
   passes each; others one
   tile per worker (matmul: 32 rows or a column block). one > 0: an element-wise task of at
   most `one` items is one tile (a wide recorded graph's: cuda_graph_wide). */
static void cuda_tiling(const struct gpuos__cuda *c, const gpuos__job *job, uint32_t one, uint32_t *tile_out,
                        int64_t *n_tiles) {
    uint32_t tile;
    if (job->kind == GPUOS__KIND_MATMUL) { /* one row, 32 rows, or one column block of a few rows */
        const int64_t ncb = cuda_matmul_cb(c, job), M = job->plan.matmul.M;
        const int64_t items = cuda_device_items(job, ncb);
        tile = ncb < 0 ? 1u : ncb > 1 && M < 32 ? (uint32_t)(M < 1 ? 1 : M) : 32u; /* (row tiles: one row or slice) */
        *tile_out = tile;
        *n_tiles = items > 0 ? (items + tile - 1) / tile : 0;
        return;
    }
    if (job->kind == GPUOS__KIND_EW) {
        const int64_t nw = cuda_job_workers(c, job);
        /* 2 tiles a worker once a tile would be at least CUDA__EW_DEEP items (the group
           functions' deep vector loop): fewer tile boundaries, 0.85 -> 0.94 of a copy on 64M
           floats (H100); else 4, finer for what shares the workers */
        const int64_t per = (int64_t)(c->ew_per_worker ? c->ew_per_worker
                                      : job->items >= 2 * nw * CUDA__EW_DEEP ? 2 : 4) * nw;
        int64_t t = (job->items + per - 1) / per;
        if (one > 0 && job->items > (int64_t)c->tile_ew && job->items <= (int64_t)one)
            tile = one; /* (a task within one tile_ew keeps it: eager tasks on it still align) */
        else if (t <= (int64_t)c->tile_ew)
            tile = c->tile_ew;
        else { /* whole vector passes (CUDA__EW_PASS items), nearest to t: a tile with a
                  partial pass runs its tail in the scalar mode, outside the worker's runs */
            t = (t + CUDA__EW_PASS / 2) / CUDA__EW_PASS * CUDA__EW_PASS;
            tile = (uint32_t)(t < (int64_t)c->tile_ew ? c->tile_ew : t > (1 << 30) ? (1 << 30) : t);
        }
    } else {
        const int64_t nw = cuda_job_workers(c, job);
        int64_t t = (job->items + nw - 1) / nw;
        tile = (uint32_t)(t < 1 ? 1 : t > (1 << 30) ? (1 << 30) : t);
    }
    *tile_out = tile;
    *n_tiles = job->items > 0 ? (job->items + tile - 1) / tile : 0;
}

/* Appends access a to a storage's log: first forgets retired accesses and those a write
   of a covers (a's task runs after them), then, when the log is full, the oldest, which
   raises the write or read floor (ctx->mu held). */
static void cuda_log_record(const struct gpuos__cuda *c, cuda__log *lg, const cuda__access *a) {
    int j;
    for (j = 0; j < lg->n;) {
        const cuda__access *o = &lg->a[j];
        /* covered: a runs after every earlier access it overlaps (a dependency or, for a
           lane-1 access, a lane-0 task's wait for lane 1); o is earlier unless it is a's own */
        if (o->dseq <= c->retired_seen[o->lane] ||
            (a->write && o->lo >= a->lo && o->hi <= a->hi && (o->lane != a->lane || o->dseq < a->dseq)))
            lg->a[j] = lg->a[--lg->n];
        else
            j++;
    }
    if (lg->n == CUDA__LOG_LEN) {
        int oldest = 0;
        for (j = 1; j < lg->n; j++)
            if (lg->a[j].dseq < lg->a[oldest].dseq) oldest = j;
        {
            const cuda__access *o = &lg->a[oldest];
            uint64_t *f = o->write ? &lg->floor_w[o->lane] : &lg->floor_r[o->lane];
            if (o->dseq > *f) *f = o->dseq;
            if (o->write) lg->wver++;
        }
        lg->a[oldest] = lg->a[--lg->n];
    }
    lg->a[lg->n++] = *a;
    lg->ver++;
    if (a->write) lg->wver++;
}

/* The unretired floor of lane l that an access (write or read) of lg's storage must wait
   for, or 0: a reader waits for the forgotten writes, a writer for forgotten reads too. */
static uint64_t cuda_log_floor(const struct gpuos__cuda *c, const cuda__log *lg, int l, int write) {
    uint64_t f = lg->floor_w[l];
    if (write && lg->floor_r[l] > f) f = lg->floor_r[l];
    return f > c->retired_seen[l] ? f : 0;
}

/* Does an access of [lo, hi) (write or read) conflict with the remembered access a, which
   has not retired? */
static int cuda_conflicts(const struct gpuos__cuda *c, const cuda__access *a, uint64_t lo, uint64_t hi, int write) {
    return a->dseq > c->retired_seen[a->lane] && a->hi > lo && hi > a->lo && (a->write || write);
}

/* newest[l]: the newest unretired task of lane l (floors included) that an access of
   [lo, hi) must follow, raised to it when later than what newest[l] holds. */
static void cuda_log_newest(const struct gpuos__cuda *c, const cuda__log *lg, uint64_t lo, uint64_t hi, int write,
                            uint64_t newest[GPUOS__LANES]) {
    int l, j;
    for (l = 0; l < GPUOS__LANES; l++) {
        const uint64_t f = cuda_log_floor(c, lg, l, write);
        if (f > newest[l]) newest[l] = f;
    }
    for (j = 0; j < lg->n; j++)
        if (cuda_conflicts(c, &lg->a[j], lo, hi, write) && lg->a[j].dseq > newest[lg->a[j].lane])
            newest[lg->a[j].lane] = lg->a[j].dseq;
}

/* Can a task that touches ops[0..n) go on lane 1? Not when it conflicts with unretired
   lane-0 work (it would wait for lane 0, which runs after lane 1), nor with tasks the
   host has not encoded yet. (ctx->mu held; retired marks fresh) */
static int cuda_lane1_ok(const struct gpuos__cuda *c, const gpuos__job *job, const cuda__operand *ops, int n) {
    int k;
    for (k = 0; k < n; k++) {
        uint64_t lo, hi, newest[GPUOS__LANES] = {0, 0};
        const gpuos__storage *s;
        cuda_operand_range(&ops[k], &lo, &hi);
        if (lo == hi) continue;
        s = cuda_storage_of(job, lo, hi);
        if (!s) return 0;
        if (!s->cuda_log) continue;
        cuda_log_newest(c, (const cuda__log *)s->cuda_log, lo, hi, ops[k].write, newest);
        if (newest[0]) return 0;
    }
    return 1;
}

int gpuos__cuda_batch_lane_locked(gpuos_context *ctx, gpuos__job *const *jobs, int n) {
    struct gpuos__cuda *c = ctx->cuda;
    cuda__operand ops[GPUOS__MAX_PTR];
    int i;
    /* the logs hold every earlier task only once all of them were encoded */
    if (c->serialize || ctx->cuda_sent < ctx->ring_count) return 0;
    cuda_refresh_retired(c);
    for (i = 0; i < n; i++)
        if (jobs[i]->prio <= 0 || !cuda_lane1_ok(c, jobs[i], ops, cuda_operands(c, jobs[i], ops))) return 0;
    return 1;
}

/* The memo of a repeated job's table entry: indexed by the entry, so repeats never evict
   each other (a hash of 256 entries into 512 memos left half of them colliding). */
static cuda__memo *cuda_memo_of(struct gpuos__cuda *c, const gpuos__job *job) {
    return c->memo && job->rep_slot < c->n_memo ? &c->memo[job->rep_slot] : NULL;
}

/* The log entries memo m recorded (e[k], NULL for a read a full log dropped since): 0 when
   one of its writes is gone (cannot happen while the log's ver is m's). */
static int cuda_memo_find(const cuda__memo *m, cuda__access **e) {
    int k, j;
    for (k = 0; k < m->n_acc; k++) {
        cuda__log *lg = m->lg[k];
        e[k] = NULL;
        for (j = 0; j < lg->n && !e[k]; j++) {
            cuda__access *a = &lg->a[j];
            if (a->dseq == m->dseq && a->lane == 0 && a->lo == m->lo[k] && a->hi == m->hi[k] && a->write == m->write[k])
                e[k] = a;
        }
        if (!e[k] && m->write[k]) return 0;
    }
    return 1;
}

/* The repeat's accesses in the logs, as task dseq with descriptor d: first the entries found
   (renumbered: now the newest, so no record below drops them), then the reads a full log
   dropped (recording moves entries: e[] is not used after it); then m is this task. */
static void cuda_memo_relog(const struct gpuos__cuda *c, cuda__memo *m, cuda__access *const *e, uint64_t dseq,
                            const gpuos__qdesc *d) {
    int k;
    for (k = 0; k < m->n_acc; k++)
        if (e[k]) {
            e[k]->dseq = dseq;
            m->lg[k]->ver++;
        }
    for (k = 0; k < m->n_acc; k++)
        if (!e[k]) {
            cuda__access a;
            memset(&a, 0, sizeof a);
            a.dseq = dseq;
            a.lo = m->lo[k];
            a.hi = m->hi[k];
            a.sig = 0; /* no one aligns with it: conservative */
            a.base = d->base;
            a.tile = d->tile_items;
            a.write = 0;
            a.lane = 0;
            cuda_log_record(c, m->lg[k], &a);
        }
    for (k = 0; k < m->n_acc; k++) m->ver[k] = m->write[k] ? m->lg[k]->ver : m->lg[k]->wver;
    m->dseq = dseq;
}

/* A repeated task (the same as one encoded before: loops' x = x + s, a frame's updates) gets
   the descriptor of its last encoding m (ctx->mu held; GPUOS_ERR_UNSUPPORTED: encode it in
   full) when what decided it is unchanged: m had nothing to wait for and was element-wise
   (each access of two instances that conflict is tile-aligned: same element maps, tiling and
   base, so the same workers run their tiles in order; or m had one tile and was placed on the
   worker of the producer tile it reads, cuda__access.lin, where the repeat runs too, after
   that tile: the producer writing again changes the log and stops the repeat); since m, no one touched the logs of
   the storages it writes (ver), and no one wrote to those it only reads (wver); the same
   kernel launch (placement) and plan row (key, epoch). So the dependency scan would find what
   it found then: nothing. Its log entries are m's, renumbered (its write covers m's, and a
   later task that waits for it waits for m too, whose tiles ran before its own on each
   worker); a read entry of m's that a full log dropped is recorded anew. */
static gpuos_status cuda_encode_repeat(gpuos_context *ctx, struct gpuos__cuda *c, gpuos__job *job, cuda__memo *m) {
    cuda__plan_entry *pe = &c->plans[m->d.plan_id];
    cuda__access *e[GPUOS__MAX_PTR];
    gpuos__qdesc d;
    gpuos_status st;
    int k;
    uint64_t t0 = GPUOS__PH_NOW(); /* (phases in the diagnostic build: checks as operands, the log
                                      search as dependencies, express as plan, put, relog as log) */
    if (job->prio != 0 || !c->running || c->serialize || m->launch != c->launches || !pe->used ||
        pe->key != m->plan_key || pe->epoch != ((m->d.kind >> 8) & 0xffffffu))
        return GPUOS_ERR_UNSUPPORTED;
    for (k = 0; k < m->n_acc; k++)
        if ((m->write[k] ? m->lg[k]->ver : m->lg[k]->wver) != m->ver[k]) return GPUOS_ERR_UNSUPPORTED;
    GPUOS__PH(GPUOS__PH_OPERANDS, t0);
    t0 = GPUOS__PH_NOW();
    if (!cuda_memo_find(m, e)) return GPUOS_ERR_UNSUPPORTED;
    GPUOS__PH(GPUOS__PH_DEPS, t0);
    t0 = GPUOS__PH_NOW();
    d = m->d;
    d.kind = (d.kind & ~(uint32_t)GPUOS__KIND_HICHECK) | (c->hi_used ? (uint32_t)GPUOS__KIND_HICHECK : 0u);
    d.stamp &= ~(uint32_t)GPUOS__DESC_XPRESS;
    /* m was express (one tile on the express worker): so is a repeat that may be (and runs
       after it there), else the full encoding gives it the usual tiles (a burst of repeats
       runs on many workers); m was not: a repeat that may go express is encoded anew */
    if (cuda_xpress_pre(c, job, 0, m->d.n_tiles) != m->xp) return GPUOS_ERR_UNSUPPORTED;
    if (m->xp) {
        if (!cuda_xpress_ok(c, &d)) return GPUOS_ERR_UNSUPPORTED;
        d.stamp |= GPUOS__DESC_XPRESS;
    }
    GPUOS__PH(GPUOS__PH_PLAN, t0);
    t0 = GPUOS__PH_NOW();
    st = cuda_ring_room(ctx, c, 0, 1);
    if (st != GPUOS_OK) return st;
    if (d.stamp & GPUOS__DESC_XPRESS) cuda_xbox_put(c, &d, c->dseq[0]);
    cuda_put(c, 0, &d);
    job->dseq = c->dseq[0];
    job->lane = 0;
    pe->last_dseq[0] = job->dseq; /* its plan row stays until it retires */
    GPUOS__PH(GPUOS__PH_PUT, t0);
    t0 = GPUOS__PH_NOW();
    cuda_memo_relog(c, m, e, job->dseq, &d);
    c->dseq[0]++;
    if ((c->dseq[0] & 63) == 0) cuda_refresh_retired(c); /* as cuda_encode does */
    GPUOS__PH(GPUOS__PH_LOG, t0);
    return GPUOS_OK;
}

/* Job (being encoded, at ring offset cuda_sent) leaves its batch's lane 1: the batch's tasks
   queued after it go to lane 0 too. A lane-1 batch is queued whole and contiguous
   (gpuos__queue_push_batch), so they are the next batch_left jobs of the ring. */
static void cuda_batch_lower(gpuos_context *ctx, gpuos__job *job) {
    uint32_t j;
    job->lane = 0;
    if (ctx->cuda_sent >= ctx->ring_count || ctx->ring[(ctx->ring_head + ctx->cuda_sent) & (ctx->ring_size - 1u)] != job)
        return;
    for (j = 1; j <= (uint32_t)job->batch_left && ctx->cuda_sent + j < ctx->ring_count; j++) {
        gpuos__job *s = ctx->ring[(ctx->ring_head + ctx->cuda_sent + j) & (ctx->ring_size - 1u)];
        if (s->batch_id != job->batch_id || !s->lane_fixed) break;
        s->lane = 0;
    }
}

/* Encodes one job into its lane's ring (ctx->mu held). job->prio > 0 asks for lane 1. */
static gpuos_status cuda_encode(gpuos_context *ctx, struct gpuos__cuda *c, gpuos__job *job) {
    cuda__operand ops[GPUOS__MAX_PTR];
    uint64_t deps[2 * GPUOS__MAX_PTR * (CUDA__LOG_LEN + 1)], floor = 0, hi_max = 0;
    int n_deps = 0, all = 0, n, k, j, lane = 0, sysw = 0, xcand;
    uint32_t plan_bytes, plan_id = 0, plan_epoch = 0, tile, base = UINT32_MAX;
    int64_t n_tiles, n_items = job->items;
    const void *plan = &job->plan;
    gpuos__qdesc d;
    gpuos_status st;
    cuda__memo *memo;
    uint64_t me, t0 = GPUOS__PH_NOW();

    plan_bytes = cuda_plan_bytes(job->kind);
    if (job->dev_kernel < 0)
        return gpuos__set_error(ctx, GPUOS_ERR_UNSUPPORTED, "gpuos_submit: no device code for %s on this dtype",
                                gpuos_op_name(job->op));
    if (job->dev_kernel >= GPUOS__RT_KERNEL_BASE && c->n_rt == 0) /* cannot happen: a version is installed first */
        return gpuos__set_error(ctx, GPUOS_ERR_INTERNAL, "gpuos_submit: no run-time module holds %s",
                                gpuos_op_name(job->op));
    if (job->rep_key) {
        cuda__memo *m = cuda_memo_of(c, job);
        if (m && m->rep_key == job->rep_key && m->rep_ver == job->rep_ver) {
            st = cuda_encode_repeat(ctx, c, job, m);
            if (st != GPUOS_ERR_UNSUPPORTED) return st;
        }
    }
    if (job->plan_src) gpuos__job_plan_fetch(job); /* a repeat's plan, not copied (queue.c) */

    /* Launch first: the kernel starts reading the ring at the current position, so it
       must be running before this job writes its first slot (a plan chunk, maybe); and
       the launch sets the run-time workers (P.n_rt), on which the tiling, the row tiles
       and the plan's column blocks all depend: they must see the same count. */
    if (!c->running) {
        st = cuda_launch_locked(ctx, c); /* another context's kernel running: later, the work stays queued */
        if (st != GPUOS_OK) return st;
    }
    cuda_tiling(c, job, 0, &tile, &n_tiles);

    /* Dependencies from each operand's storage log. The retired mark is the line the
       GPU keeps writing: reading it costs a cache miss, so it is refreshed once in 64
       submissions (a stale mark only adds dependencies on finished tasks, which the
       device sees as done at once), and for every high-priority task (a stale mark
       would send it to lane 0). */
    n = cuda_operands(c, job, ops);
    GPUOS__PH(GPUOS__PH_OPERANDS, t0);
    t0 = GPUOS__PH_NOW();
    if (job->prio > 0) c->hi_used = 1;
    if (job->prio > 0 && !c->serialize) {
        cuda_refresh_retired(c);
        /* a batch placed in lane 0 stays there (gpuos__cuda_batch_lane_locked); its lane 1
           is checked again, as a single task's */
        lane = job->lane_fixed && job->lane == 0 ? 0 : cuda_lane1_ok(c, job, ops, n);
        if (job->lane_fixed && job->lane == 1 && !lane) cuda_batch_lower(ctx, job); /* (a safety net) */
    } else if ((c->dseq[0] & 63) == 0) {
        cuda_refresh_retired(c);
    }
    me = c->dseq[lane];
    xcand = cuda_xpress_pre(c, job, lane, n_tiles) && n_items <= (int64_t)UINT32_MAX;
    if (xcand && n_tiles > 1) { /* one tile of every item (element-wise: the same elements) */
        tile = (uint32_t)n_items;
        n_tiles = 1;
    }
    for (k = 0; k < n; k++) {
        uint64_t lo, hi;
        gpuos__storage *s;
        cuda__log *lg;
        int l;
        cuda_operand_range(&ops[k], &lo, &hi);
        if (lo == hi) continue;
        s = cuda_storage_of(job, lo, hi);
        if (!s) { /* cannot happen for a valid plan; if it does, order by waiting for all */
            all = 1;
            continue;
        }
        if (ops[k].write && s->pinned) sysw = 1; /* mapped host memory (GPUOS__DESC_SYSW) */
        if (!s->cuda_log) {
            s->cuda_log = calloc(1, sizeof(cuda__log));
            if (!s->cuda_log) return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "gpuos_submit: no memory");
        }
        lg = (cuda__log *)s->cuda_log;
        for (l = 0; l < GPUOS__LANES; l++) { /* forgotten accesses (lane 1 never sees lane 0's here) */
            const uint64_t f = cuda_log_floor(c, lg, l, ops[k].write);
            if (l == lane) {
                if (f > floor) floor = f;
            } else if (f > hi_max) {
                hi_max = f;
            }
        }
        for (j = 0; j < lg->n; j++) {
            const cuda__access *a = &lg->a[j];
            if (!cuda_conflicts(c, a, lo, hi, ops[k].write)) continue;
            if (a->lane != lane) { /* lane 0 waiting for lane 1 */
                if (a->dseq > hi_max) hi_max = a->dseq;
                continue;
            }
            /* tile-aligned: same item->element map (or row map), same tiling: the same worker runs both */
            if (c->align && a->sig && a->sig == ops[k].sig && a->tile == tile &&
                (base == UINT32_MAX || base == a->base)) {
                base = a->base;
                continue;
            }
            /* a task of one tile whose access lies within one tile of a contiguous element-wise
               access: on that tile's worker, after it in the inbox, with nothing to wait for
               (a small download of part of what a task just wrote; the task's other tiles
               reach other bytes). The producer is unretired, so in this launch (same n_main). */
            if (c->align && c->subalign && n_tiles == 1 && a->lin && a->tile && lo >= a->lo && hi <= a->hi &&
                job->dev_kernel < GPUOS__RT_KERNEL_BASE && c->P.n_main > 0) {
                const uint64_t span = (uint64_t)a->tile * a->lin, t = (lo - a->lo) / span;
                const uint32_t b = (uint32_t)(((uint64_t)(a->base % c->P.n_main) + t) % c->P.n_main);
                if ((hi - 1 - a->lo) / span == t && (base == UINT32_MAX || base == b)) {
                    base = b;
                    continue;
                }
            }
            deps[n_deps++] = a->dseq;
        }
    }
    /* a fresh base: past the previous fresh task's tiles, so that independent tasks of
       several tiles land on different worker blocks */
    if (base == UINT32_MAX && xcand) {
        base = c->P.xworker; /* (an aligned one is an unretired producer: an express task, there too) */
    } else if (base == UINT32_MAX) {
        base = c->next_base;
        c->next_base += n_tiles < 1 ? 1u : n_tiles < (int64_t)c->n_workers ? (uint32_t)n_tiles : (uint32_t)c->n_workers;
    }
    /* An aligned producer stays aligned only with the same tiling: its sig includes
       the plan shape, and the tile size is a function of items, so equal maps mean
       equal tiles. Dedupe the explicit dependencies; too many means wait for all. */
    {
        int m = 0, a, b;
        for (a = 0; a < n_deps; a++) {
            for (b = 0; b < m; b++)
                if (deps[b] == deps[a]) break;
            if (b == m) deps[m++] = deps[a];
        }
        n_deps = m;
        if (floor) { /* waits for retirement up to the floor: covers the explicit ones below it */
            for (a = 0, m = 0; a < n_deps; a++)
                if (deps[a] > floor) deps[m++] = deps[a];
            n_deps = m;
        }
        if (n_deps + (floor != 0) + (hi_max != 0) > (int)GPUOS__MAX_DEPS || c->serialize) all = 1;
    }
    /* lane 1 waits for all only within lane 1: it may not while lane 0 has unretired work */
    if (all && lane == 1 && c->dseq[0] - 1 > c->retired_seen[0]) {
        /* a batch's queued rest follows it to lane 0 (it waits for every earlier task of both
           lanes, its own batch's lane-1 part included, and lane 0 retires in order: the
           batch's last task still finishes last) */
        if (job->lane_fixed) cuda_batch_lower(ctx, job);
        job->prio = 0; /* encode it again on lane 0 */
        st = cuda_encode(ctx, c, job);
        job->prio = 1;
        return st;
    }

    GPUOS__PH(GPUOS__PH_DEPS, t0);
    t0 = GPUOS__PH_NOW();
    {
        gpuos__matmul_plan mp;
        plan = cuda_device_plan(c, job, &mp, &n_items);
        st = cuda_plan_id(ctx, c, job, plan, plan_bytes, lane, &plan_id, &plan_epoch);
    }
    if (st != GPUOS_OK) return st;
    GPUOS__PH(GPUOS__PH_PLAN, t0);
    t0 = GPUOS__PH_NOW();
    st = cuda_ring_room(ctx, c, lane, 1);
    if (st != GPUOS_OK) return st;

    memset(&d, 0, sizeof d);
    d.kind = GPUOS__SLOT_TASK | plan_epoch << 8 | (lane == 0 && c->hi_used ? GPUOS__KIND_HICHECK : 0u);
    d.kernel_id = job->dev_kernel;
    d.plan_id = plan_id;
    d.n_items = n_items;
    d.tile_items = tile;
    d.n_tiles = (uint32_t)n_tiles;
    d.base = base;
    d.stamp = sysw ? GPUOS__DESC_SYSW : 0u;
    if (all) {
        d.n_deps = GPUOS__DEPS_ALL;
        if (lane == 0 && c->dseq[1] - 1 > c->retired_seen[1]) /* and every earlier lane-1 task */
            d.dep_delta[0] = GPUOS__DEP_HI | (uint32_t)((c->dseq[1] - 1) & GPUOS__DEP_HI_MASK);
    } else {
        d.n_deps = (uint32_t)n_deps;
        for (k = 0; k < n_deps; k++) d.dep_delta[k] = (uint32_t)(me - deps[k]);
        if (floor) d.dep_delta[d.n_deps++] = (uint32_t)(me - floor) | GPUOS__DEP_RETIRED;
        if (hi_max) d.dep_delta[d.n_deps++] = GPUOS__DEP_HI | (uint32_t)(hi_max & GPUOS__DEP_HI_MASK);
    }
    if (xcand && cuda_xpress_ok(c, &d)) {
        d.stamp |= GPUOS__DESC_XPRESS;
        cuda_xbox_put(c, &d, me);
    }
    cuda_put(c, lane, &d);
    job->dseq = me;
    job->lane = lane;
    c->dseq[lane]++;
    GPUOS__PH(GPUOS__PH_PUT, t0);
    /* an identical later task may repeat this one's descriptor (cuda_encode_repeat) */
    memo = job->rep_key ? cuda_memo_of(c, job) : NULL;
    if (memo && (lane != 0 || d.n_deps != 0 || job->kind != GPUOS__KIND_EW || !c->align)) {
        if (memo->rep_key == job->rep_key) memo->rep_key = NULL; /* its last encoding is not this */
        memo = NULL;
    }
    if (memo) {
        memo->rep_key = job->rep_key;
        memo->rep_ver = job->rep_ver;
        memo->launch = c->launches;
        memo->dseq = me;
        memo->d = d;
        memo->plan_key = c->plans[plan_id].key;
        memo->n_acc = 0;
        memo->xp = xcand;
    }
    t0 = GPUOS__PH_NOW();

    /* Record this task's accesses. */
    for (k = 0; k < n; k++) {
        uint64_t lo, hi;
        gpuos__storage *s;
        cuda__log *lg;
        cuda__access a;
        cuda_operand_range(&ops[k], &lo, &hi);
        if (lo == hi) continue;
        s = cuda_storage_of(job, lo, hi);
        if (!s || !s->cuda_log) continue;
        lg = (cuda__log *)s->cuda_log;
        a.dseq = me;
        a.lo = lo;
        a.hi = hi;
        a.sig = ops[k].sig;
        a.base = base;
        a.tile = tile;
        a.lin = ops[k].lin;
        a.write = ops[k].write;
        a.lane = lane;
        cuda_log_record(c, lg, &a);
        if (memo) {
            const int q = memo->n_acc++;
            memo->lg[q] = lg;
            memo->lo[q] = lo;
            memo->hi[q] = hi;
            memo->write[q] = a.write;
        }
    }
    if (memo) /* after its own entries: later changes are others' */
        for (k = 0; k < memo->n_acc; k++) memo->ver[k] = memo->write[k] ? memo->lg[k]->ver : memo->lg[k]->wver;
    GPUOS__PH(GPUOS__PH_LOG, t0);
    return GPUOS_OK;
}

/* Sends every queued job not yet on the device, in order (ctx->mu held). */
gpuos_status gpuos__cuda_pump_locked(gpuos_context *ctx) {
    struct gpuos__cuda *c = ctx->cuda;
    gpuos_status st = GPUOS_OK;
    if (ctx->paused) return GPUOS_OK;
    while (ctx->cuda_sent < ctx->ring_count) {
        gpuos__job *job = ctx->ring[(ctx->ring_head + ctx->cuda_sent) & (ctx->ring_size - 1u)];
        st = cuda_encode(ctx, c, job);
        if (st != GPUOS_OK) return st;
        ctx->cuda_sent++;
    }
    return st;
}

/* ---------------------------------------------------------------- completion */
/* Retires finished jobs in order (ctx->mu held); 1 if any. */
int gpuos__cuda_reap_locked(gpuos_context *ctx) {
    struct gpuos__cuda *c = ctx->cuda;
    int any = 0;
    cuda_refresh_retired(c);
    if (ctx->dl_open > 0) { /* deadlines of jobs finished ahead of older ones (lane 1) */
        const uint64_t now = cuda_now_ns();
        uint32_t i;
        for (i = 0; i < ctx->cuda_sent && i < 1024; i++) { /* deeper ones: counted when they retire */
            gpuos__job *job = ctx->ring[(ctx->ring_head + i) & (ctx->ring_size - 1u)];
            if (job->dl_open && job->dseq <= c->retired_seen[job->lane]) gpuos__deadline_count_locked(ctx, job, now);
        }
    }
    while (ctx->cuda_sent > 0) {
        const gpuos__job *job = ctx->ring[ctx->ring_head];
        if (job->dseq > c->retired_seen[job->lane]) break;
        gpuos__queue_retire_head_locked(ctx);
        ctx->cuda_sent--;
        any = 1;
    }
    if (any) {
        pthread_cond_broadcast(&ctx->cv_done);
        pthread_cond_broadcast(&ctx->cv_room);
    }
    return any;
}

int gpuos__cuda_job_done_locked(gpuos_context *ctx, const gpuos__job *job, uint32_t index) {
    struct gpuos__cuda *c = ctx->cuda;
    if (index >= ctx->cuda_sent) return 0; /* not on the device yet */
    if (job->dseq <= c->retired_seen[job->lane]) return 1;
    cuda_refresh_retired(c);
    return job->dseq <= c->retired_seen[job->lane];
}

/* The device's sticky error, if the kernel stopped by itself, or a launch whose blocks did
   not all become resident (ctx->mu held). */
static void cuda_check_fault_locked(gpuos_context *ctx) {
    struct gpuos__cuda *c = ctx->cuda;
    gpuos__CUresult r;
    if (!c->running || ctx->sticky != GPUOS_OK) return;
    if (!c->all_up) {
        const int n = (int)(c->P.n_main + 1 + c->P.n_rt), up_rt = cuda_up_count(c, c->P.n_main + 1, c->P.n_rt),
                  up = cuda_up_count(c, 0, c->P.n_main + 1) + up_rt;
        if (up == n) {
            c->all_up = 1;
        } else if (cuda_now_ns() - c->launch_ns > CUDA__RESIDENT_NS) {
            /* the resident blocks cannot be stopped (EXIT needs every worker): keep their memory */
            c->running = 0;
            c->stuck = 1;
            gpuos__fail_locked(ctx,
                               "only %d of the persistent kernels' %d blocks became resident within %d s (run-time "
                               "workers: %d of %d): other work on the GPU leaves no room for them (gpuos needs every "
                               "block resident while it runs)",
                               up, n, (int)(CUDA__RESIDENT_NS / 1000000000ull), up_rt, (int)c->P.n_rt);
            return;
        }
    }
    c->cu->cuCtxSetCurrent(c->cuctx);
    r = c->cu->cuStreamQuery(c->stream);
    if (r == CU_ERROR_NOT_READY && c->P.n_rt) { /* a fault in a run-time operator stops its kernel */
        const gpuos__CUresult r2 = c->cu->cuStreamQuery(c->rt_stream);
        if (r2 != CU_SUCCESS && r2 != CU_ERROR_NOT_READY) r = r2;
    }
    if (r == CU_ERROR_NOT_READY) return;
    c->running = 0;
    if (cuda_kernels_query(c) != CU_ERROR_NOT_READY)
        cuda_gate_leave(c);
    else
        c->stuck = 1; /* the run-time workers still run: keep their memory (and the gate) */
    if (r == CU_SUCCESS)
        gpuos__fail_locked(ctx, "the persistent kernel stopped unexpectedly (retired %llu of %llu device tasks)",
                         (unsigned long long)cuda_load_acquire(&c->ctl->retired), (unsigned long long)(c->dseq[0] - 1));
    else
        gpuos__fail_locked(ctx, "the GPU reported a fault while running tasks: %s (%d); the context is lost",
                         cuda_errname(c->cu, r), (int)r);
}

/* Waits for job seq (one: that task alone, else every task up to it) with low latency:
   spins on the mapped progress words for a while, then sleeps in short steps (ctx->mu
   held on entry and exit). */
gpuos_status gpuos__cuda_wait_locked(gpuos_context *ctx, uint64_t seq, int one, uint32_t timeout_ms) {
    struct gpuos__cuda *c = ctx->cuda;
    const uint64_t t0 = cuda_now_ns(), limit = (uint64_t)timeout_ms * 1000000ull;
    uint64_t spins = 0;
    unsigned passes = 0;
    for (;;) {
        gpuos__cuda_reap_locked(ctx);
        if (gpuos__seq_done_locked(ctx, seq, one) || ctx->sticky != GPUOS_OK || ctx->stopping) return GPUOS_OK;
        if (cuda_now_ns() - t0 > limit) return GPUOS_ERR_TIMEOUT;
        if (ctx->cuda_sent < ctx->ring_count && !ctx->paused)
            (void)gpuos__cuda_pump_locked(ctx); /* a full ring: retried on the next pass */
        {
            const uint64_t seen0 = c->retired_seen[0], seen1 = c->retired_seen[1];
            const volatile uint64_t *xf = cuda_xfin_of(c, seen0 + 1); /* the next task, if express */
            pthread_mutex_unlock(&ctx->mu);
            if (cuda_now_ns() - t0 < CUDA__SPIN_NS) { /* spinning on two cached words */
                /* (<=: seen0 may be ahead of the device's count, through express finish words) */
                while (cuda_load_acquire(&c->ctl->retired) <= seen0 && cuda_load_acquire(&c->ctl->retired_hi) == seen1 &&
                       (!xf || cuda_load_acquire(xf) != seen0 + 1) && ++spins % 256) {
                }
            } else {
                cuda_sleep_ns(20000);
            }
            pthread_mutex_lock(&ctx->mu);
        }
        /* every 16 passes: ~4096 spins while spinning, ~0.3 ms while sleeping (spins stops
           counting then, so a check on its count ran every pass or never) */
        if (++passes % 16 == 0) cuda_check_fault_locked(ctx);
    }
}

/* A failed context still counted in the gate (ctx->mu held): counted stuck while its kernels
   run (launches beside it fail at once), out of the gate once they are gone. */
static void cuda_gate_check_stuck(struct gpuos__cuda *c) {
    if (!c->stuck || !c->in_gate) return;
    if (cuda_kernels_query(c) != CU_ERROR_NOT_READY)
        cuda_gate_leave(c);
    else
        cuda_gate_mark_stuck(c);
}

static void *cuda_reaper_main(void *arg) {
    gpuos_context *ctx = (gpuos_context *)arg;
    struct gpuos__cuda *c = ctx->cuda;
    pthread_mutex_lock(&ctx->mu);
    c->cu->cuCtxSetCurrent(c->cuctx);
    while (!c->reaper_stop) {
        cuda_gate_check_stuck(c);
        gpuos__cuda_reap_locked(ctx);
        cuda_check_fault_locked(ctx);
        if (ctx->cuda_sent < ctx->ring_count && !ctx->paused) (void)gpuos__cuda_pump_locked(ctx);
        /* a turn asked for (a submission's launch that did not wait) that is no longer
           wanted: out of the gate's queue, which it would hold up */
        if (c->gate_queued && (c->running || ctx->sticky != GPUOS_OK || c->stuck ||
                               (!c->graph_waiting && (ctx->paused || ctx->cuda_sent >= ctx->ring_count))))
            cuda_gate_unqueue(c);
        /* idle: nothing queued and nothing submitted for idle_ms: let the kernel go
           (activity is noticed here, every 200 us, not timed at every submission) */
        if (c->dseq[0] + c->dseq[1] != c->idle_dseq) {
            c->idle_dseq = c->dseq[0] + c->dseq[1];
            c->last_activity_ns = cuda_now_ns();
        }
        if (c->running && ctx->ring_count == 0 &&
            cuda_now_ns() - c->last_activity_ns > (uint64_t)ctx->cfg.idle_ms * 1000000ull)
            cuda_stop_kernel_locked(ctx);
        /* another context's module load (gpuos_create, gpuos_op_define) or launch waits for
           the device: stop at once (queued tasks run first); the next launch waits its turn */
        if (c->running && cuda_gate_others_waiting(c)) {
            cuda_predrain_locked(ctx, c);
            if (c->running && !c->reaper_stop) cuda_stop_kernel_locked(ctx);
        }
        pthread_mutex_unlock(&ctx->mu);
        cuda_sleep_ns(200000);
        pthread_mutex_lock(&ctx->mu);
    }
    pthread_mutex_unlock(&ctx->mu);
    return NULL;
}

/* ---------------------------------------------------------------- queries */
const char *gpuos__cuda_device_name(const gpuos_context *ctx) { return ctx->cuda ? ctx->cuda->name : ""; }

/* ---------------------------------------------------------------- run-time operators */
/* The run-time module's own code (the worker loop, the run-time dispatcher and
   gpuos__pk_rt, relocatable): kept since the build, else read from the disk cache, else
   compiled (once). */
static gpuos_status cuda_rt_worker(gpuos_context *ctx, struct gpuos__cuda *c, const char *dir) {
    cuda__part part;
    const char *opts[sizeof c->opt_store / sizeof c->opt_store[0]];
    char pp[1200], *src;
    size_t len;
    int k;
    gpuos_status st = GPUOS_OK;
    if (c->rtw_img) return GPUOS_OK;
    if (dir[0]) {
        cuda_rtw_path(c, dir, pp, sizeof pp);
        c->rtw_img = cuda_cache_read(pp, c->base_key, &c->rtw_size);
        if (c->rtw_img) return GPUOS_OK;
    }
    src = gpuos__device_source_joined(&len);
    if (!src) return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "gpuos_op_define: no memory for the device source");
    for (k = 0; k < c->n_opt_store; k++) opts[k] = c->opt_store[k];
    cuda_compile_parts(ctx, src, opts, c->n_opt_store, 0, 1, &part);
    free(src);
    if (part.st != GPUOS_OK) {
        st = gpuos__set_error(ctx, part.st, "gpuos_op_define: compiling the run-time module's worker code failed:\n%s",
                              part.log ? part.log : "");
        free(part.cubin);
    } else {
        c->rtw_img = part.cubin;
        c->rtw_size = part.size;
        if (dir[0]) cuda_cache_write(pp, c->base_key, c->rtw_img, c->rtw_size);
    }
    free(part.log);
    return st;
}

/* Compiles v's device code into a relocatable object (disk cache: the object's hash). */
static gpuos_status cuda_rt_compile(gpuos_context *ctx, struct gpuos__cuda *c, gpuos__rt_version *v, const char *dir) {
    char *code, *src, *log = NULL, pp[1200], part[2][32];
    const char *opts[12];
    size_t len, clen;
    int k, n_opts = 0;
    gpuos_status st;
    c->last_rt_compile_ms = 0;
    code = gpuos__rt_device_code(v, 0); /* the hash names symbols: hash the text without it */
    if (!code) return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "gpuos_op_define: no memory");
    v->hash = cuda_hash(c->base_key ^ 0x7274ull, code, strlen(code));
    free(code);
    if (dir[0]) {
        snprintf(pp, sizeof pp, "%s/gpuos-rt-%016llx-sm%d%d.o", dir, (unsigned long long)v->hash, c->cc_major,
                 c->cc_minor);
        v->obj = cuda_cache_read(pp, v->hash, &v->obj_size);
        if (v->obj) return GPUOS_OK;
    }
    code = gpuos__rt_device_code(v, v->hash);
    src = gpuos__device_source_joined(&len);
    if (!code || !src) {
        free(code);
        free(src);
        return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "gpuos_op_define: no memory for the device source");
    }
    clen = strlen(code);
    {
        char *all = (char *)realloc(src, len + clen + 1);
        if (!all) {
            free(code);
            free(src);
            return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "gpuos_op_define: no memory for the device source");
        }
        memcpy(all + len, code, clen + 1);
        src = all;
        free(code);
    }
    /* the built-ins' options, and a part number that defines none of their groups */
    for (k = 0; k < c->n_opt_store && n_opts < 8; k++)
        if (strncmp(c->opt_store[k], "-DGPUOS__PK_", 12) != 0) opts[n_opts++] = c->opt_store[k];
    snprintf(part[0], sizeof part[0], "-DGPUOS__D_NPARTS=%d", c->n_parts > 1 ? c->n_parts : 2);
    snprintf(part[1], sizeof part[1], "-DGPUOS__D_PART=%d", GPUOS__D_PART_OP);
    opts[n_opts++] = part[0];
    opts[n_opts++] = part[1];
    {
        const uint64_t t0 = cuda_now_ns();
        st = gpuos__nvrtc_compile(ctx, src, v->name, opts, n_opts, 1, &v->obj, &v->obj_size, &log);
        c->last_rt_compile_ms = (double)(cuda_now_ns() - t0) / 1e6;
    }
    free(src);
    if (st != GPUOS_OK) {
        st = gpuos__set_error(ctx, st, "gpuos_op_define: '%s' does not compile for sm_%d%d:\n%s", v->name, c->cc_major,
                              c->cc_minor, log ? log : "");
        free(log);
        v->obj = NULL;
        return st;
    }
    free(log);
    if (dir[0]) cuda_cache_write(pp, v->hash, v->obj, v->obj_size);
    return GPUOS_OK;
}

/* Worker blocks of the run-time module's kernel (GPUOS_CUDA_RT_WORKERS: tuning). */
static int cuda_rt_blocks(const struct gpuos__cuda *c) {
    const char *e = getenv("GPUOS_CUDA_RT_WORKERS");
    int n = e && atoi(e) > 0 ? atoi(e) : c->sm_count / 8;
    if (n > c->n_workers / 2) n = c->n_workers / 2;
    return n < 1 ? 1 : n;
}

/* Stops the kernels at a task boundary (everything queued before runs to the end), loads
   the new run-time module (small: the worker loop and the operators; the built-in module
   stays loaded) and fills its operator table, and lets the next submission relaunch both
   kernels on the same queue (ctx->mu held). On failure the old module stays. */
static gpuos_status cuda_rt_swap_locked(gpuos_context *ctx, struct gpuos__cuda *c, const void *cubin,
                                        gpuos__rt_version *const *vs, int n) {
    gpuos__CUmodule mod = NULL;
    gpuos__CUfunction fn = NULL;
    gpuos__CUdeviceptr tab, pv;
    size_t tsz, psz;
    void *table[GPUOS__RT_SLOTS];
    int occ = 0, k, smem_rt = 0;
    gpuos_status st;
    const int occ_main = c->n_blocks / c->sm_count;
    gpuos__CUresult r;
    const uint64_t t0 = cuda_now_ns();
    cuda_predrain_locked(ctx, c); /* (what is queued runs first; not holding the lock meanwhile) */
    c->swapping = 1;
    cuda_stop_kernel_locked(ctx);
    c->swapping = 0;
    if (ctx->sticky != GPUOS_OK)
        return gpuos__set_error(ctx, ctx->sticky, "gpuos_op_define: the context has failed (%s)", ctx->sticky_msg);
    c->cu->cuCtxSetCurrent(c->cuctx);
    if (n > 0) {
        int timed_out;
        r = cuda_gate_load(c, &mod, cubin, "gpuos__pk_rt", ctx->cfg.wait_timeout_ms, &timed_out);
        if (timed_out) return cuda_load_timeout(ctx, "gpuos_op_define");
        if (r != CU_SUCCESS)
            return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY,
                                    "gpuos_op_define: loading the new module failed: %s (%d)", cuda_errname(c->cu, r),
                                    (int)r);
        r = c->cu->cuModuleGetFunction(&fn, mod, "gpuos__pk_rt");
        if (r == CU_SUCCESS && c->carveout >= 0) /* the main kernel's carveout (cuda_open_device) */
            r = c->cu->cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, c->carveout);
        if (r == CU_SUCCESS && c->smem_main >= 0) {
            if (c->cu->cuFuncGetAttribute(&smem_rt, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn) != CU_SUCCESS)
                smem_rt = c->smem_main;
            if (smem_rt < c->smem_main) /* padded to the main kernel's size at launch */
                r = c->cu->cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, c->smem_main - smem_rt);
        }
        if (r == CU_SUCCESS) /* with the launch's padding (none when the sizes are unknown) */
            r = c->cu->cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &occ, fn, GPUOS__PK_THREADS, c->smem_main > smem_rt ? (size_t)(c->smem_main - smem_rt) : 0);
        if (r == CU_SUCCESS && smem_rt > c->smem_main && c->smem_main >= 0) occ = 0; /* could not take a main block's place */
        /* a run-time block takes the slot of a main block: it must fit wherever one does */
        if (r == CU_SUCCESS && occ < occ_main) {
            cuda_release(c, CUDA__REL_MOD, (uint64_t)(uintptr_t)mod);
            return gpuos__set_error(ctx, GPUOS_ERR_UNSUPPORTED,
                                    "gpuos_op_define: with this operator the run-time kernel fits %d blocks per "
                                    "multiprocessor, not %d (static shared memory?); nothing changed",
                                    occ, occ_main);
        }
        memset(table, 0, sizeof table);
        if (r == CU_SUCCESS) r = c->cu->cuModuleGetGlobal(&tab, &tsz, mod, "gpuos__rt_table");
        for (k = 0; k < n && r == CU_SUCCESS; k++) {
            char sym[64];
            snprintf(sym, sizeof sym, "gpuos__rt_ptr_%016llx", (unsigned long long)vs[k]->hash);
            r = c->cu->cuModuleGetGlobal(&pv, &psz, mod, sym);
            if (r == CU_SUCCESS) r = c->cu->cuMemcpyDtoH(&table[vs[k]->slot], pv, sizeof(void *));
        }
        /* gpuos__cuda_memcpy (the copy stream, synchronised): a pageable cuMemcpyHtoD may
           return before the copy lands, and the legacy stream orders nothing with the
           kernels' streams */
        if (r == CU_SUCCESS && (st = gpuos__cuda_memcpy(ctx, (void *)(uintptr_t)tab, table, sizeof table, 1)) != GPUOS_OK) {
            cuda_release(c, CUDA__REL_MOD, (uint64_t)(uintptr_t)mod);
            return st; /* GPUOS_ERR_DEVICE_LOST, the copy's failure in the detail */
        }
        if (r != CU_SUCCESS) {
            cuda_release(c, CUDA__REL_MOD, (uint64_t)(uintptr_t)mod);
            return gpuos__set_error(ctx, GPUOS_ERR_DEVICE_LOST,
                                    "gpuos_op_define: setting up the new module failed: %s (%d)",
                                    cuda_errname(c->cu, r), (int)r);
        }
    }
    /* the old module goes when the kernels next stop: unloading it now would add to the pause */
    if (c->n_old_rt == CUDA__OLD_MODS) cuda_unload_old_rt(c); /* no kernel runs (the stop above) */
    if (c->rt_mod) c->old_rt[c->n_old_rt++] = c->rt_mod;
    c->rt_mod = mod;
    c->rt_fn = fn;
    c->smem_rt = smem_rt;
    c->n_rt = n > 0 ? cuda_rt_blocks(c) : 0;
    c->generation++;
    c->last_swap_ms = (double)(cuda_now_ns() - t0) / 1e6;
    if (ctx->cuda_sent < ctx->ring_count) (void)gpuos__cuda_pump_locked(ctx); /* relaunch for queued work */
    return GPUOS_OK;
}

/* ELF64 (a relocatable cubin): the symbol table's section and its string table, or 0. */
static uint64_t cuda_elf_u(const unsigned char *p, int n) {
    uint64_t v = 0;
    while (n-- > 0) v = v << 8 | p[n];
    return v;
}
static int cuda_elf_symtab(const unsigned char *e, size_t n, const unsigned char **sym, size_t *n_sym,
                           const char **str, size_t *n_str) {
    uint64_t shoff, i, shnum, shentsize;
    if (n < 64 || memcmp(e, "\177ELF", 4) != 0 || e[4] != 2 /* 64-bit */ || e[5] != 1 /* little-endian */) return 0;
    shoff = cuda_elf_u(e + 0x28, 8), shentsize = cuda_elf_u(e + 0x3a, 2), shnum = cuda_elf_u(e + 0x3c, 2);
    if (shentsize < 64 || shoff > n || shnum > (n - shoff) / shentsize) return 0;
    for (i = 0; i < shnum; i++) {
        const unsigned char *sh = e + shoff + i * shentsize, *lk;
        uint64_t off = cuda_elf_u(sh + 0x18, 8), size = cuda_elf_u(sh + 0x20, 8), link = cuda_elf_u(sh + 0x28, 4);
        uint64_t loff, lsize;
        if (cuda_elf_u(sh + 4, 4) != 2 /* SHT_SYMTAB */) continue;
        if (off > n || size > n - off || link >= shnum) return 0;
        lk = e + shoff + link * shentsize;
        loff = cuda_elf_u(lk + 0x18, 8), lsize = cuda_elf_u(lk + 0x20, 8);
        if (loff > n || lsize > n - loff) return 0;
        *sym = e + off, *n_sym = (size_t)(size / 24), *str = (const char *)e + loff, *n_str = (size_t)lsize;
        return 1;
    }
    return 0;
}
/* The name of symbol i of a symbol table (str: its string table) if the object defines it
   with binding GLOBAL or WEAK (an extern "C" inline function is weak), else NULL. */
static const char *cuda_elf_defined(const unsigned char *sym, size_t i, const char *str, size_t n_str) {
    const unsigned char *s = sym + 24 * i;
    const uint64_t nm = cuda_elf_u(s, 4);
    if ((s[4] >> 4 != 1 && s[4] >> 4 != 2) /* STB_GLOBAL, STB_WEAK */ || cuda_elf_u(s + 6, 2) == 0 /* undefined */ ||
        nm >= n_str || !memchr(str + nm, 0, n_str - nm) || !str[nm])
        return NULL;
    return str + nm;
}
/* Does object b define a symbol (cuda_elf_defined) that object a defines too? Its name into
   name. nvJitLink keeps the first of two such definitions, says so on stderr only and
   reports success: the second object would run the first's code or data. */
static int cuda_elf_dup(const void *a, size_t an, const void *b, size_t bn, char *name, size_t cap) {
    const unsigned char *sa, *sb;
    const char *ta, *tb, *x, *y;
    size_t na, nb, nta, ntb, i, j;
    if (!cuda_elf_symtab((const unsigned char *)a, an, &sa, &na, &ta, &nta) ||
        !cuda_elf_symtab((const unsigned char *)b, bn, &sb, &nb, &tb, &ntb))
        return 0;
    for (i = 0; i < nb; i++)
        if ((x = cuda_elf_defined(sb, i, tb, ntb)) != NULL)
            for (j = 0; j < na; j++)
                if ((y = cuda_elf_defined(sa, j, ta, nta)) != NULL && strcmp(x, y) == 0) {
                    snprintf(name, cap, "%s", x);
                    return 1;
                }
    return 0;
}

gpuos_status gpuos__cuda_rt_install(gpuos_context *ctx, gpuos__rt_version *v) {
    struct gpuos__cuda *c = ctx->cuda;
    gpuos__rt_version *vs[GPUOS__RT_SLOTS];
    const void *images[1 + GPUOS__RT_SLOTS];
    size_t sizes[1 + GPUOS__RT_SLOTS];
    int types[1 + GPUOS__RT_SLOTS];
    char dir[1024], path[1200], larch[32], *log = NULL;
    const char *lopts[1];
    void *cubin = NULL;
    size_t cubin_size = 0;
    uint64_t gkey;
    int n = 0, k;
    gpuos_status st;
    if (c->n_parts < 1)
        return gpuos__set_error(ctx, GPUOS_ERR_UNSUPPORTED,
                                "gpuos_op_define: run-time operators need nvJitLink (libnvJitLink.so), which could not "
                                "be loaded");
    cuda_cache_dir(ctx, dir, sizeof dir);
    if ((st = cuda_rt_worker(ctx, c, dir)) != GPUOS_OK) return st;
    if ((st = cuda_rt_compile(ctx, c, v, dir)) != GPUOS_OK) return st;
    /* every version in a slot (v included): retained, so none goes while linking */
    pthread_mutex_lock(&ctx->mu);
    for (k = 0; k < GPUOS__RT_SLOTS && k < 2 * GPUOS_MAX_RUNTIME_OPS; k++)
        if (ctx->rt_slot[k] && ctx->rt_slot[k]->obj) {
            vs[n++] = ctx->rt_slot[k];
            ctx->rt_slot[k]->refs++;
        }
    pthread_mutex_unlock(&ctx->mu);
    c->last_rt_link_ms = 0;
    gkey = cuda_hash(c->base_key, "rtgen", 5);
    for (k = 0; k < n; k++) {
        gkey = cuda_hash(gkey, &vs[k]->hash, sizeof vs[k]->hash);
        gkey = cuda_hash(gkey, &vs[k]->slot, sizeof vs[k]->slot);
    }
    path[0] = 0;
    if (dir[0]) {
        snprintf(path, sizeof path, "%s/gpuos-rtgen-%016llx-sm%d%d.cubin", dir, (unsigned long long)gkey, c->cc_major,
                 c->cc_minor);
        cubin = cuda_cache_read(path, gkey, &cubin_size);
    }
    if (!cubin) { /* the module: the run-time worker code and every version in a slot */
        int m = 0, j;
        images[0] = c->rtw_img;
        sizes[0] = c->rtw_size;
        types[0] = GPUOS__NVJITLINK_INPUT_CUBIN;
        for (k = 0; k < n; k++) {
            /* two versions of one hash (an operator defined again with the same source while
               tasks of the first are not yet retired) are one object: linked once (twice, its
               symbols were defined twice and the link failed), its pointer serves both slots */
            for (j = 0; j < k && vs[j]->hash != vs[k]->hash; j++) {
            }
            if (j < k) continue;
            images[1 + m] = vs[k]->obj;
            sizes[1 + m] = vs[k]->obj_size;
            types[1 + m] = GPUOS__NVJITLINK_INPUT_CUBIN;
            m++;
        }
        snprintf(larch, sizeof larch, "-arch=sm_%d%d", c->cc_major, c->cc_minor);
        lopts[0] = larch;
        /* a name that two objects define (extern "C" names in full functions: each source's
           other names are in a namespace of its own) is refused: nvJitLink would keep one */
        st = GPUOS_OK;
        for (k = 1; k < 1 + m && st == GPUOS_OK; k++) {
            char dup[128];
            for (j = 0; j < k && st == GPUOS_OK; j++)
                if (cuda_elf_dup(images[j], sizes[j], images[k], sizes[k], dup, sizeof dup))
                    st = gpuos__set_error(ctx, GPUOS_ERR_COMPILE,
                                          "gpuos_op_define: '%s' defines '%s', which %s defines too (every version "
                                          "in use is linked into one module: an extern \"C\" name must differ "
                                          "between operators and between an operator's versions)",
                                          v->name, dup, j == 0 ? "the run-time worker code" : "another version in use");
        }
        if (st == GPUOS_OK) {
            const uint64_t t0 = cuda_now_ns();
            st = gpuos__nvjitlink_link(ctx, lopts, 1, images, sizes, types, 1 + m, &cubin, &cubin_size, &log);
            c->last_rt_link_ms = (double)(cuda_now_ns() - t0) / 1e6;
            if (st != GPUOS_OK)
                st = gpuos__set_error(ctx, st, "gpuos_op_define: linking '%s' with the kernel failed:\n%s", v->name,
                                      log ? log : "");
        }
        if (st != GPUOS_OK) {
            cubin = NULL;
        } else if (path[0]) {
            cuda_cache_write(path, gkey, cubin, cubin_size);
        }
        free(log);
    }
    pthread_mutex_lock(&ctx->mu);
    if (st == GPUOS_OK) st = cuda_rt_swap_locked(ctx, c, cubin, vs, n);
    for (k = 0; k < n; k++) gpuos__rt_release_locked(vs[k]);
    pthread_mutex_unlock(&ctx->mu);
    free(cubin);
    return st;
}

void gpuos_debug_create_times(gpuos_context *ctx, double *driver_ms, double *context_ms, double *code_ms,
                              double *rest_ms) {
    const struct gpuos__cuda *c = ctx ? ctx->cuda : NULL;
    const double ms[4] = {c ? (double)c->open_ns[1] / 1e6 : 0, c ? (double)(c->open_ns[2] - c->open_ns[1]) / 1e6 : 0,
                          c ? (double)(c->open_ns[4] - c->open_ns[2]) / 1e6 : 0,
                          c ? (double)(c->open_ns[7] - c->open_ns[4]) / 1e6 : 0};
    if (driver_ms) *driver_ms = ms[0];
    if (context_ms) *context_ms = ms[1];
    if (code_ms) *code_ms = ms[2];
    if (rest_ms) *rest_ms = ms[3];
}

void gpuos_debug_compile_times(gpuos_context *ctx, int *programs, double *compile_ms, double *slowest_ms,
                               double *link_ms) {
    const struct gpuos__cuda *c = ctx ? ctx->cuda : NULL;
    if (programs) *programs = c ? c->n_parts : 0;
    if (compile_ms) *compile_ms = c ? c->compile_ms : 0;
    if (slowest_ms) *slowest_ms = c ? c->slowest_part_ms : 0;
    if (link_ms) *link_ms = c ? c->link_ms : 0;
}

void gpuos_debug_express(gpuos_context *ctx, uint64_t *sent, uint64_t *by_worker) {
    struct gpuos__cuda *c = ctx ? ctx->cuda : NULL;
    uint64_t n = 0;
    if (sent) *sent = 0;
    if (by_worker) *by_worker = 0;
    if (!c) return;
    pthread_mutex_lock(&ctx->mu);
    if (sent) *sent = c->xcount;
    if (by_worker && gpuos__cuda_memcpy(ctx, &n, c->P.xruns, sizeof n, 0) == GPUOS_OK) *by_worker = n;
    pthread_mutex_unlock(&ctx->mu);
}

void gpuos_debug_rt_times(gpuos_context *ctx, double *compile_ms, double *link_ms, double *swap_ms) {
    const struct gpuos__cuda *c = ctx ? ctx->cuda : NULL;
    if (compile_ms) *compile_ms = c ? c->last_rt_compile_ms : 0;
    if (link_ms) *link_ms = c ? c->last_rt_link_ms : 0;
    if (swap_ms) *swap_ms = c ? c->last_swap_ms : 0;
}

/* ---------------------------------------------------------------- recorded graphs */
/* A graph's tasks encoded once (gpuos__cuda_graph_make): descriptors with dependencies
   between its own nodes as deltas and bases relative to the launch, plans pinned in the
   device table. A launch (gpuos__cuda_graph_launch_locked) copies them into the ring with
   the launch's base and one external dependency for the nodes that first touch memory
   outside the graph's own ordering, updates the storages' logs, and queues ONE host job. */
typedef struct cuda__gacc {
    gpuos__storage *st;
    uint64_t lo, hi, sig;
    int node, write;
    int dead;  /* covered by a later write of the graph: later nodes (and tasks) need not see it */
    int apred; /* the earlier node this access is tile-aligned with (it runs after it), or -1 */
    int stood; /* a read that a later read of the graph stands for: launches do not record it
                  (cuda_graph_stand_ins) */
} cuda__gacc;

/* A range of the device's graph descriptor pool (gpuos__cuda.gpool). Once its graph is
   gone it is reused only after the fetcher has passed the slot of its last launch on each
   lane (a launch is expanded from the pool before the fetcher reports its slot fetched). */
typedef struct cuda__grange {
    uint32_t lo, n;
    uint64_t pos[GPUOS__LANES]; /* ring position just past its last launch's slot (0: none) */
    int freed;
} cuda__grange;

static int cuda_grange_reusable(struct gpuos__cuda *c, const cuda__grange *r) {
    int l;
    if (!r->freed) return 0;
    if (!c->running) return 1; /* the kernel stopped after fetching everything */
    for (l = 0; l < GPUOS__LANES; l++) {
        if (r->pos[l] <= c->fetched_seen[l]) continue;
        c->fetched_seen[l] = cuda_load_acquire(cuda_ctl_fetched(c, l));
        if (r->pos[l] > c->fetched_seen[l]) return 0;
    }
    return 1;
}

/* n descriptors of the pool (first fit; ranges kept by lo); NULL when none are free. */
static cuda__grange *cuda_gpool_alloc(struct gpuos__cuda *c, uint32_t n) {
    int i, k = 0;
    uint32_t at = 0;
    for (i = 0; i < c->n_granges; i++)
        if (!cuda_grange_reusable(c, &c->granges[i])) c->granges[k++] = c->granges[i];
    c->n_granges = k;
    for (i = 0; i < c->n_granges && c->granges[i].lo - at < n; i++) at = c->granges[i].lo + c->granges[i].n;
    if (n > CUDA__GPOOL - at && i == c->n_granges) return NULL;
    if (c->n_granges == c->cap_granges) {
        const int cap = c->cap_granges ? 2 * c->cap_granges : 16;
        cuda__grange *r = (cuda__grange *)realloc(c->granges, (size_t)cap * sizeof *r);
        if (!r) return NULL;
        c->granges = r;
        c->cap_granges = cap;
    }
    memmove(&c->granges[i + 1], &c->granges[i], (size_t)(c->n_granges - i) * sizeof *c->granges);
    c->n_granges++;
    memset(&c->granges[i], 0, sizeof c->granges[i]);
    c->granges[i].lo = at;
    c->granges[i].n = n;
    return &c->granges[i];
}

static cuda__grange *cuda_grange_of(struct gpuos__cuda *c, const void *ddesc) {
    const uint32_t lo = (uint32_t)((const gpuos__qdesc *)ddesc - c->gpool);
    int i;
    for (i = 0; i < c->n_granges; i++)
        if (c->granges[i].lo == lo && !c->granges[i].freed) return &c->granges[i];
    return NULL;
}

struct gpuos__cuda_graph {
    int n;
    gpuos__qdesc *desc;   /* per node; stamp: GPUOS__DESC_EXT, GPUOS__DESC_SYSW */
    void *ddesc;          /* desc in the device pool (a launch is one GRAPH slot); NULL: one slot per node */
    uint32_t *base_rel;   /* per node */
    uint32_t n_rel;
    uint32_t *plan_ids;   /* the nodes' rows; the first n_pinned are pinned */
    int n_pinned;
    cuda__gacc *acc;      /* every operand access, in node order */
    int n_acc;
    gpuos__storage **st;  /* distinct storages (the launch job's references) */
    int n_st;
};

int gpuos__cuda_graph_storages(const struct gpuos__cuda_graph *g) { return g->n_st; }

void gpuos__cuda_graph_free_locked(gpuos_context *ctx, struct gpuos__cuda_graph *g) {
    int k;
    if (!g) return;
    if (ctx->cuda) {
        for (k = 0; k < g->n_pinned; k++) ctx->cuda->plans[g->plan_ids[k]].pins--;
        ctx->cuda->plan_pins -= (uint32_t)g->n_pinned;
        if (g->ddesc) {
            cuda__grange *r = cuda_grange_of(ctx->cuda, g->ddesc);
            if (r) r->freed = 1; /* reused once its launches are fetched */
        }
    }
    free(g->desc);
    free(g->base_rel);
    free(g->plan_ids);
    free(g->acc);
    free(g->st);
    free(g);
}

/* Encodes jobs[0..n) (templates, in launch order) once (ctx->mu held). NULL with
   GPUOS_ERR_UNSUPPORTED when the graph cannot be pre-encoded (the caller falls back). */
static gpuos_status cuda_graph_kernel_locked(gpuos_context *ctx, struct gpuos__cuda *c, uint64_t t0, int *released);

/* Does node f's completion imply node e's (e < f)? Followed back from f: an explicit
   dependency (the node waits for it), a wait for every earlier task, or tile alignment with a
   node of no more tiles (each of its tiles ran on the same worker before f's tile of that
   index). seen[] holds stamps (*stamp is this query's). */
static int cuda_graph_implies(const struct gpuos__cuda_graph *g, const int *first, int f, int e, int *seen, int stamp,
                              int *stack, long *budget) {
    int sp = 0, a, j;
    stack[sp++] = f;
    seen[f] = stamp;
    while (sp > 0) {
        const int k = stack[--sp];
        if (--*budget < 0) return 0; /* (a huge graph: its reads stay recorded) */
        const gpuos__qdesc *d = &g->desc[k];
        if (k == e) return 1;
        if (d->n_deps == GPUOS__DEPS_ALL) return 1; /* (k > e: it waited for every earlier task) */
        for (a = 0; a < (int)d->n_deps; a++) {
            const int p = k - (int)d->dep_delta[a];
            if (p >= e && seen[p] != stamp) seen[p] = stamp, stack[sp++] = p;
        }
        for (j = first[k]; j < first[k + 1]; j++) {
            const int p = g->acc[j].apred;
            if (p >= e && seen[p] != stamp && g->desc[p].n_tiles <= d->n_tiles) seen[p] = stamp, stack[sp++] = p;
        }
    }
    return 0;
}

/* A launch records the graph's live accesses in the storages' logs, which later tasks
   read; a read is not recorded when a later node reads the same bytes (or more) through the
   same element map (or one no task aligns with) and its completion implies the reader's
   (cuda_graph_implies): a later writer waits for the later reader, or follows its tile t
   on the same worker, and so comes after both. pipeline_jobs' 20 adds each read the scalar `one`: their 20
   records were half of a launch's host time (H200: 1.0 of 2.0 us). At most ~10^7 steps of
   the search a graph (some ms, once at its making); past them the rest stay recorded. */
static void cuda_graph_stand_ins(struct gpuos__cuda_graph *g) {
    long budget = 10000000;
    int *first = (int *)malloc((size_t)(g->n + 1) * sizeof(int));
    int *seen = (int *)calloc((size_t)g->n, sizeof(int));
    int *stack = (int *)malloc((size_t)g->n * sizeof(int));
    int i, j, k, stamp = 0;
    if (first && seen && stack) {
        for (k = 0, i = 0; k <= g->n; k++) { /* accesses are in node order */
            while (i < g->n_acc && g->acc[i].node < k) i++;
            first[k] = i;
        }
        for (i = 0; i < g->n_acc; i++) {
            cuda__gacc *e = &g->acc[i];
            if (e->write || e->dead) continue;
            for (j = g->n_acc - 1; j > i && !e->stood; j--) {
                const cuda__gacc *f = &g->acc[j];
                /* f's record must order a later writer after e's reads wherever that writer aligns
                   with it (tile t after f's tile t, after e's tile t): the same element map (or
                   none, so nothing aligns with f); another map let e's other tiles read bytes
                   the writer's tile t writes (a helper's review: Y = XT + XT, then Z = Y + X) */
                if (f->write || f->dead || f->node <= e->node || f->st != e->st || f->lo > e->lo || f->hi < e->hi ||
                    (f->sig != 0 && f->sig != e->sig))
                    continue;
                if (cuda_graph_implies(g, first, f->node, e->node, seen, ++stamp, stack, &budget)) e->stood = 1;
            }
        }
    }
    free(first);
    free(seen);
    free(stack);
}

/* Is the graph of jobs[0..n) wide: at least c->graph_wide times as many nodes as its longest
   chain of memory conflicts (a node after every earlier one that it conflicts with, as the
   encoding orders them)? Then each of its small element-wise tasks runs as one tile: its
   own tasks keep the workers busy side by side, and a task of 4 tiles costs the fetcher 4
   inbox entries and 4 finishes where 1 does (H200, GPUOS_CUDA_TILE_EW=4096 for everything:
   branchy_dag -12%, pipeline_jobs +4%, but the eager chain 0.25 -> 0.36 us/op: a chain's
   task on one block instead of four). */
static int cuda_graph_wide(const struct gpuos__cuda *c, gpuos__job *const *jobs, int n) {
    typedef struct { const gpuos__storage *st; uint64_t lo, hi; int node, write; } wacc;
    wacc *a;
    int *depth, na = 0, maxd = 0, k, q, j, wide;
    if (c->graph_wide == 0 || n < (int)c->graph_wide) return 0;
    a = (wacc *)malloc((size_t)n * GPUOS__MAX_PTR * sizeof *a);
    depth = (int *)malloc((size_t)n * sizeof *depth);
    if (!a || !depth) {
        free(a);
        free(depth);
        return 0;
    }
    for (k = 0; k < n; k++) {
        cuda__operand ops[GPUOS__MAX_PTR];
        const int no = cuda_operands(c, jobs[k], ops);
        int d = 1;
        for (q = 0; q < no; q++) {
            uint64_t lo, hi;
            const gpuos__storage *sto;
            cuda_operand_range(&ops[q], &lo, &hi);
            if (lo == hi) continue;
            if (!(sto = cuda_storage_of(jobs[k], lo, hi))) { /* after everything before it */
                if (d < maxd + 1) d = maxd + 1;
                continue;
            }
            for (j = 0; j < na; j++)
                if (a[j].node != k && a[j].st == sto && a[j].lo < hi && lo < a[j].hi && (a[j].write || ops[q].write) &&
                    d < depth[a[j].node] + 1)
                    d = depth[a[j].node] + 1;
            a[na].st = sto, a[na].lo = lo, a[na].hi = hi, a[na].node = k, a[na].write = ops[q].write;
            na++;
        }
        depth[k] = d;
        if (d > maxd) maxd = d;
    }
    wide = (int64_t)n >= (int64_t)c->graph_wide * maxd;
    free(a);
    free(depth);
    return wide;
}

gpuos_status gpuos__cuda_graph_make_locked(gpuos_context *ctx, gpuos__job *const *jobs, int n,
                                           struct gpuos__cuda_graph **out) {
    struct gpuos__cuda *c = ctx->cuda;
    struct gpuos__cuda_graph *g;
    int k, j, q;
    uint32_t one;
    gpuos_status st = GPUOS_OK;
    *out = NULL;
    /* the kernel first: plan chunks go to the ring (waiting for its turn with the lock let go,
       as a launch does; the state below is read after, and the lock is held from here on) */
    if (!c->running && (st = cuda_graph_kernel_locked(ctx, c, cuda_now_ns(), NULL)) != GPUOS_OK) return st;
    /* (refused: launched node by node) the plan chunks must fit the ring, and the pinned
       plan rows half the device's table, so that queued tasks always find rows */
    if (n < 1 || (uint64_t)n + GPUOS__PLAN_SLOTS * (uint64_t)n > c->P.ring_slots / 2 ||
        c->plan_pins + (uint64_t)n > CUDA__PLAN_CAP / 2)
        return GPUOS_ERR_UNSUPPORTED;
    g = (struct gpuos__cuda_graph *)calloc(1, sizeof *g);
    if (!g) return GPUOS_ERR_OUT_OF_MEMORY;
    g->n = n;
    one = cuda_graph_wide(c, jobs, n) ? CUDA__TILE_WIDE : 0u;
    g->desc = (gpuos__qdesc *)calloc((size_t)n, sizeof *g->desc);
    g->base_rel = (uint32_t *)calloc((size_t)n, sizeof(uint32_t));
    g->plan_ids = (uint32_t *)calloc((size_t)n, sizeof(uint32_t));
    g->acc = (cuda__gacc *)calloc((size_t)n * GPUOS__MAX_PTR, sizeof *g->acc);
    g->st = (gpuos__storage **)calloc((size_t)n * GPUOS__MAX_PTR, sizeof *g->st);
    if (!g->desc || !g->base_rel || !g->plan_ids || !g->acc || !g->st) {
        gpuos__cuda_graph_free_locked(ctx, g);
        return GPUOS_ERR_OUT_OF_MEMORY;
    }
    for (k = 0; k < n; k++) {
        const gpuos__job *job = jobs[k];
        cuda__operand ops[GPUOS__MAX_PTR];
        uint64_t deps[GPUOS__MAX_PTR * 64];
        int n_deps = 0, all = 0, m, a, b, no, ext = 0, sysw = 0;
        uint32_t base = UINT32_MAX, plan_bytes, tile, epoch = 0;
        int64_t n_tiles, n_items = job->items;
        gpuos__qdesc *d = &g->desc[k];
        if (job->dev_kernel < 0) { st = GPUOS_ERR_UNSUPPORTED; break; }
        plan_bytes = cuda_plan_bytes(job->kind);
        cuda_tiling(c, job, one, &tile, &n_tiles);
        no = cuda_operands(c, job, ops);
        for (q = 0; q < no; q++) {
            uint64_t lo, hi;
            gpuos__storage *sto;
            int same_range = 0;
            cuda_operand_range(&ops[q], &lo, &hi);
            if (lo == hi) continue;
            sto = cuda_storage_of(job, lo, hi);
            if (!sto) { all = 1; continue; }
            /* earlier accesses of this graph: dependencies, or tile alignment */
            g->acc[g->n_acc].apred = -1;
            g->acc[g->n_acc].stood = 0;
            for (j = g->n_acc - 1; j >= 0; j--) {
                const cuda__gacc *e = &g->acc[j];
                if (e->node == k || e->dead || e->st != sto || e->hi <= lo || hi <= e->lo) continue; /* not itself */
                if (e->lo == lo && e->hi == hi) same_range = 1;
                if (!(e->write || ops[q].write)) continue;
                if (c->align && e->sig && e->sig == ops[q].sig && g->desc[e->node].tile_items == tile &&
                    (base == UINT32_MAX || base == g->base_rel[e->node])) {
                    base = g->base_rel[e->node];
                    if (g->acc[g->n_acc].apred < 0) g->acc[g->n_acc].apred = e->node; /* (the latest) */
                    continue;
                }
                if (n_deps < (int)(sizeof deps / sizeof deps[0])) deps[n_deps++] = (uint64_t)e->node;
                else all = 1;
            }
            if (!same_range) ext = 1; /* memory the graph's own order does not cover: wait for the outside */
            g->acc[g->n_acc].st = sto;
            g->acc[g->n_acc].lo = lo;
            g->acc[g->n_acc].hi = hi;
            g->acc[g->n_acc].sig = ops[q].sig;
            g->acc[g->n_acc].node = k;
            g->acc[g->n_acc].write = ops[q].write;
            g->n_acc++;
            for (j = 0; j < g->n_st && g->st[j] != sto; j++) {
            }
            if (j == g->n_st) g->st[g->n_st++] = sto;
            if (!sto->cuda_log && !(sto->cuda_log = calloc(1, sizeof(cuda__log)))) { /* launches record into it */
                st = GPUOS_ERR_OUT_OF_MEMORY;
                break;
            }
        }
        if (st != GPUOS_OK) break;
        /* this node runs after every earlier access its writes cover: later nodes need not see them */
        for (q = 0; q < g->n_acc; q++) {
            const cuda__gacc *w = &g->acc[q];
            if (w->node != k || !w->write) continue;
            if (w->st->pinned) sysw = 1; /* mapped host memory: published after a system fence */
            for (j = 0; j < g->n_acc; j++)
                if (g->acc[j].node != k && g->acc[j].st == w->st && g->acc[j].lo >= w->lo && g->acc[j].hi <= w->hi)
                    g->acc[j].dead = 1;
        }
        if (base == UINT32_MAX) { /* a fresh base, past the previous one's tiles (as cuda_encode) */
            base = g->n_rel;
            g->n_rel += n_tiles < 1 ? 1u : n_tiles < (int64_t)c->n_workers ? (uint32_t)n_tiles : (uint32_t)c->n_workers;
        }
        g->base_rel[k] = base;
        for (a = 0, m = 0; a < n_deps; a++) { /* dedupe */
            for (b = 0; b < m; b++)
                if (deps[b] == deps[a]) break;
            if (b == m) deps[m++] = deps[a];
        }
        n_deps = m;
        if (n_deps > (int)GPUOS__MAX_DEPS - 1 || c->serialize) all = 1; /* one left for the external one */
        {
            gpuos__matmul_plan mp;
            st = cuda_plan_id(ctx, c, job, cuda_device_plan(c, job, &mp, &n_items), plan_bytes, 0, &g->plan_ids[k],
                              &epoch);
        }
        if (st != GPUOS_OK) break;
        c->plans[g->plan_ids[k]].pins++;
        c->plan_pins++;
        g->n_pinned = k + 1;
        memset(d, 0, sizeof *d);
        d->kind = GPUOS__SLOT_TASK | epoch << 8;
        d->kernel_id = job->dev_kernel;
        d->plan_id = g->plan_ids[k];
        d->n_items = n_items;
        d->tile_items = tile;
        d->n_tiles = (uint32_t)n_tiles;
        d->base = base;
        d->stamp = (ext ? GPUOS__DESC_EXT : 0u) | (sysw ? GPUOS__DESC_SYSW : 0u);
        if (all) {
            d->n_deps = GPUOS__DEPS_ALL;
        } else {
            d->n_deps = (uint32_t)n_deps;
            for (a = 0; a < n_deps; a++) d->dep_delta[a] = (uint32_t)((uint64_t)k - deps[a]);
        }
    }
    if (st == GPUOS_OK) cuda_graph_stand_ins(g);
    /* the descriptors on the device: the fetcher expands a launch from them (without the
       table, or told so, a launch sends one slot per node) */
    if (st == GPUOS_OK && !c->graph_slots && c->gpool) {
        cuda__grange *r = cuda_gpool_alloc(c, (uint32_t)n);
        if (r) {
            g->ddesc = c->gpool + r->lo;
            if ((st = gpuos__cuda_memcpy(ctx, g->ddesc, g->desc, (size_t)n * sizeof *g->desc, 1)) != GPUOS_OK) {
                r->freed = 1;
                g->ddesc = NULL;
            }
        }
    }
    if (st != GPUOS_OK) {
        gpuos__cuda_graph_free_locked(ctx, g);
        return st;
    }
    *out = g;
    return GPUOS_OK;
}

/* The external dependencies of a launch of g: per lane, the newest unretired access
   outside the graph that a node flagged as touching outside memory must follow. */
static void cuda_graph_ext(const struct gpuos__cuda *c, const struct gpuos__cuda_graph *g, uint64_t ext[GPUOS__LANES]) {
    int k;
    ext[0] = ext[1] = 0;
    for (k = 0; k < g->n_acc; k++) {
        const cuda__gacc *e = &g->acc[k];
        if ((g->desc[e->node].stamp & GPUOS__DESC_EXT) && e->st->cuda_log)
            cuda_log_newest(c, (const cuda__log *)e->st->cuda_log, e->lo, e->hi, e->write, ext);
    }
}

/* May a launch of g with external dependencies ext go on lane 1? Not when it would wait
   for lane-0 work, nor when its plans (sent through lane 0's ring) are not fetched yet. */
static int cuda_graph_lane1_ok(struct gpuos__cuda *c, const struct gpuos__cuda_graph *g, const uint64_t *ext) {
    int k;
    if (ext[0]) return 0;
    for (k = 0; k < g->n; k++) /* waiting for all earlier tasks includes lane 0 */
        if (g->desc[k].n_deps == GPUOS__DEPS_ALL && c->dseq[0] - 1 > c->retired_seen[0]) return 0;
    for (k = 0; k < g->n_pinned; k++)
        if (!cuda_plan_fetched(c, &c->plans[g->plan_ids[k]])) return 0;
    return 1;
}

/* The kernel for a graph launch or a graph's making (ctx->mu held): waits for its turn at the
   device gate (up to wait_timeout_ms from t0) with ctx->mu let go between tries, so that the
   context's other threads go on while another context's kernel holds the GPU (a blocking
   launch, as there once was, held the lock throughout). *released (if not NULL): the lock was
   let go, so what the caller checked before may have changed. */
static gpuos_status cuda_graph_kernel_locked(gpuos_context *ctx, struct gpuos__cuda *c, uint64_t t0, int *released) {
    const uint64_t limit = (uint64_t)ctx->cfg.wait_timeout_ms * 1000000ull;
    gpuos_status st;
    for (;;) {
        if (c->running) return GPUOS_OK; /* launched meanwhile (a submission, a wait, the reaper) */
        st = cuda_launch_locked(ctx, c);
        if (st != GPUOS__LAUNCH_LATER || !c->gate_queued) return st; /* launched, or failed (error set) */
        if (cuda_now_ns() - t0 > limit) {
            if (ctx->cuda_sent >= ctx->ring_count && !c->graph_waiting) cuda_gate_unqueue(c); /* nothing else of ours wants the turn */
            return gpuos__set_error(ctx, GPUOS_ERR_TIMEOUT,
                                    "gpuos_graph_launch: the GPU stayed taken by another context's persistent kernel "
                                    "(for wait_timeout_ms = %u ms, or one that does not stop); nothing of the launch "
                                    "was queued",
                                    (unsigned)ctx->cfg.wait_timeout_ms);
        }
        c->graph_waiting++; /* the reaper keeps the turn queued meanwhile */
        if (released) *released = 1;
        pthread_mutex_unlock(&ctx->mu);
        cuda_sleep_ns(50000);
        pthread_mutex_lock(&ctx->mu);
        c->graph_waiting--;
        if (ctx->sticky != GPUOS_OK || ctx->destroyed) {
            if (ctx->cuda_sent >= ctx->ring_count && !c->graph_waiting) cuda_gate_unqueue(c);
            return gpuos__set_error(ctx, ctx->sticky != GPUOS_OK ? ctx->sticky : GPUOS_ERR_INVALID_ARGUMENT,
                                    "gpuos_graph_launch: the context %s while the launch waited for the GPU",
                                    ctx->sticky != GPUOS_OK ? "failed" : "was destroyed");
        }
    }
}

/* Queues one launch of g (ctx->mu held): job is the launch's host job (no plan) with room
   for g's storages in job->xst; it is queued as already sent to the device. prio > 0 asks
   for lane 1 (granted unless the launch would wait for lane-0 work). */
gpuos_status gpuos__cuda_graph_launch_locked(gpuos_context *ctx, struct gpuos__cuda_graph *g, gpuos__job *job,
                                             int prio, uint64_t *seq) {
    struct gpuos__cuda *c = ctx->cuda;
    uint64_t s0, ext[GPUOS__LANES], ext_max, hi_max;
    uint32_t base0;
    int k, lane = 0;
    gpuos_status st;
    const uint64_t t0 = cuda_now_ns();
    for (;;) {
        int released = 0;
        /* everything queued before goes to the device first: ring order is sequence order */
        if ((st = gpuos__queue_wait_room_locked(ctx)) != GPUOS_OK) return st; /* room for the launch's job */
        if (ctx->paused && ctx->cuda_sent < ctx->ring_count) /* (the pump sends nothing while paused) */
            return gpuos__set_error(ctx, GPUOS_ERR_QUEUE_FULL, "gpuos_graph_launch: earlier tasks could not be sent");
        /* the kernel first (waiting for the GPU, as a submission's pump does not) */
        if (c->running) break;
        if ((st = cuda_graph_kernel_locked(ctx, c, t0, &released)) != GPUOS_OK) return st;
        if (!released) break; /* else the checks again: others ran meanwhile */
    }
    if (ctx->cuda_sent < ctx->ring_count && (st = gpuos__cuda_pump_locked(ctx)) != GPUOS_OK) return st;
    if (ctx->cuda_sent < ctx->ring_count)
        return gpuos__set_error(ctx, GPUOS_ERR_QUEUE_FULL, "gpuos_graph_launch: earlier tasks could not be sent");
    cuda_refresh_retired(c);
    if (prio > 0) c->hi_used = 1;
    cuda_graph_ext(c, g, ext);
    if (prio > 0 && !c->serialize && cuda_graph_lane1_ok(c, g, ext)) lane = 1;
    ext_max = ext[lane];
    hi_max = lane == 0 ? ext[1] : 0;
    if ((st = cuda_ring_room(ctx, c, lane, g->ddesc ? 1u : (uint64_t)g->n)) != GPUOS_OK) return st;
    s0 = c->dseq[lane];
    base0 = c->next_base;
    c->next_base += g->n_rel;
    { /* the launch's parts of every node (gpuos__qgraph_node): in ONE slot when the nodes are
         on the device (the fetcher expands it, gpuos__fetch_graph), else one slot per node */
        gpuos__qbody qb; /* cuda_put reads the whole 56-byte body */
        gpuos__qgraph *q = &qb.g;
        memset(&qb, 0, sizeof qb);
        q->kind = GPUOS__SLOT_GRAPH | (lane == 0 && c->hi_used ? GPUOS__KIND_HICHECK : 0u);
        q->n = (uint32_t)g->n;
        q->desc = (uint64_t)(uintptr_t)g->ddesc;
        q->ext = ext_max;
        q->base = base0;
        q->hi = hi_max ? GPUOS__DEP_HI | (uint32_t)(hi_max & GPUOS__DEP_HI_MASK) : 0u;
        if (lane == 0 && c->dseq[1] - 1 > c->retired_seen[1])
            q->hi_all = GPUOS__DEP_HI | (uint32_t)((c->dseq[1] - 1) & GPUOS__DEP_HI_MASK);
        if (g->ddesc) {
            cuda__grange *r = cuda_grange_of(c, g->ddesc);
            cuda_put(c, lane, &qb);
            if (r) r->pos[lane] = c->pos[lane];
        } else {
            for (k = 0; k < g->n; k++) {
                gpuos__qdesc d = g->desc[k];
                gpuos__qgraph_node(q, &d, s0 + (uint64_t)k);
                cuda_put(c, lane, &d);
            }
        }
        for (k = 0; k < g->n; k++) c->plans[g->desc[k].plan_id].last_dseq[lane] = s0 + (uint64_t)k;
    }
    c->dseq[lane] += (uint64_t)g->n;
    /* the storages' logs: the launch's accesses that later tasks must see (the live ones) */
    for (k = 0; k < g->n_acc; k++) {
        const cuda__gacc *e = &g->acc[k];
        cuda__log *lg;
        cuda__access a;
        if (e->dead || e->stood) continue;
        lg = (cuda__log *)e->st->cuda_log; /* made by gpuos__cuda_graph_make_locked */
        a.dseq = s0 + (uint64_t)e->node;
        a.lo = e->lo;
        a.hi = e->hi;
        a.sig = e->sig;
        a.base = base0 + g->base_rel[e->node];
        a.tile = g->desc[e->node].tile_items;
        a.lin = 0; /* (not recorded for graph nodes) */
        a.write = e->write;
        a.lane = lane;
        cuda_log_record(c, lg, &a);
    }
    /* one host job for the launch: it holds the storages and retires with the last node */
    memcpy(job->xst, g->st, (size_t)g->n_st * sizeof *g->st);
    job->n_xst = g->n_st;
    job->dseq = s0 + (uint64_t)g->n - 1;
    job->lane = lane;
    c->last_activity_ns = cuda_now_ns();
    gpuos__queue_push_sent_locked(ctx, job, seq);
    return GPUOS_OK;
}
