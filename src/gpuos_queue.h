/* gpuos_queue.h - the host-to-device task queue, shared by the host C code
   (src/cuda_backend.c) and the persistent kernel (src/device/persistent.cuh).

   The host writes 64-byte slots into a ring in pinned, mapped host memory. A slot
   carries one 56-byte body (a task descriptor, one chunk of a plan that a later
   descriptor uses, or EXIT; plans are cached in a device-side table, so a repeated
   task costs one slot) as 8 words of 7 body bytes plus a lap tag byte (NCCL's LL
   idea): every aligned 8-byte word is written and read atomically, so a slot whose 8
   tags all equal its lap's tag is complete, and ONE read of mapped memory (a PCIe
   round trip) both detects and delivers it, with no ordering between the host's
   stores at all. The persistent kernel's scheduler block polls slots in batches,
   copies descriptors into a device-memory task ring indexed by sequence number, and
   reports the last retired sequence number back into mapped host memory
   (gpuos__pk_ctl). */
#ifndef GPUOS_QUEUE_H
#define GPUOS_QUEUE_H

#define GPUOS__SLOT_TASK 1u
#define GPUOS__SLOT_PLAN 2u
#define GPUOS__SLOT_EXIT 3u
#define GPUOS__SLOT_GRAPH 4u /* a launch of a recorded graph whose descriptors are in device memory */
#define GPUOS__KIND(k) ((k) & 0x7fu) /* qdesc.kind: the slot kind; bits 8..31: the plan's epoch */
#define GPUOS__KIND_HICHECK 0x80u    /* qdesc.kind flag of a lane-0 task: look for lane-1 work between its tiles */

#define GPUOS__SLOT_PAYLOAD 40u  /* plan bytes per PLAN slot */
#define GPUOS__PLAN_SLOTS 12u    /* PLAN slots per plan: 12 * 40 = 480 bytes */
#define GPUOS__PLAN_BYTES 512u   /* stride of the device plan table */
#define GPUOS__MAX_DEPS 4u       /* explicit dependencies per task */
#define GPUOS__DEPS_ALL 0xffffffffu /* n_deps value: wait until every earlier task retired */
#define GPUOS__DEP_RETIRED 0x80000000u /* dep_delta flag: wait until every task up to that one retired */
/* dep_delta flag of a normal-lane task: wait until the high lane retired task X, where the
   low 30 bits are X mod 2^30 (compared modulo 2^30: the lanes never drift that far apart) */
#define GPUOS__DEP_HI 0x40000000u
#define GPUOS__DEP_HI_MASK 0x3fffffffu
/* Lanes: two independent queues (ring, sequence numbers, task ring, done counters,
   retirement, worker inboxes) that share the workers. Lane 0 carries normal work, lane 1
   high-priority work, which workers run first: between tiles, between tasks, and while
   normal work waits for dependencies. A lane-1 task never depends on lane-0 work (the host
   sends such a task on lane 0); a lane-0 task may wait for lane 1 (GPUOS__DEP_HI). */
#define GPUOS__LANES 2
#define GPUOS__PK_THREADS 256    /* threads per block of the persistent kernel */

/* qdesc.stamp flag: the task writes mapped host memory (a pinned tensor, the staging of a
   small download). The worker publishes it after a system-scope fence, so the host, which
   reads that memory once it sees the task retired, sees the writes: a GPU-scope fence does
   not order them before the retirer's write to the host (a download missed 2 of its
   16-byte stores so, in one GPU suite run). */
#define GPUOS__DESC_SYSW 2u
/* qdesc.stamp flag of a recorded graph's node (host and gpuos__qgraph_node): it waits for the
   launch's external dependency; cleared when the node becomes a task */
#define GPUOS__DESC_EXT 1u
/* qdesc.stamp flag: an express task (docs/ARCHITECTURE.md, "Express tasks"): one tile on the
   express worker (gpuos__pk_params.xworker) that the host also wrote to that worker's
   mailbox (gpuos__pk_ctl.xbox). Whoever claims it first (atomicMax of xclaim to its seq), the
   express worker from the mailbox or the fetcher from the ring, has it: the worker runs it
   at once and writes its done stamp; the fetcher queues it as any task (to that worker). */
#define GPUOS__DESC_XPRESS 4u
#define GPUOS__XBOX 8u /* express mailbox slots (a ring: express task q in slot q % 8) */
#define GPUOS__XOWN 1024u /* the fetcher's marks of express tasks, by seq (gpuos__pk_params.xown) */
#define GPUOS__XOWN_X (1ull << 63)

/* Done stamps: task seq's word in the lane's done array (slot seq mod task_cap) holds its
   identity and its progress in one 64-bit value, so that one load tells a reader both. The
   fetcher writes (uint32_t)seq << 32 | -n_tiles (mod 2^32) before publishing the task; each
   worker adds the tiles it finished; the last one carries into the high half, which then
   reads seq + 1 with a low half of 0. A task with no tiles is written finished; EXIT as
   finished with low half 1. A reader of seq: high half - (uint32_t)seq (mod 2^32, signed)
   < 0: an earlier task of that slot (seq is not published yet); 0: seq runs; 1: finished
   (low half 0 or 1); more: a later task holds the slot, so seq retired long ago. Memory
   starts all ones (high half 2^32 - 1: earlier than every small seq). */
#define GPUOS__DONE_INIT(seq, n_tiles) (((uint64_t)(uint32_t)(seq) << 32) + (uint64_t)(uint32_t)(0u - (uint32_t)(n_tiles)) + ((n_tiles) ? 0ull : 1ull << 32))
#define GPUOS__DONE_EXIT(seq) (((uint64_t)(uint32_t)((seq) + 1u) << 32) | 1ull)
/* seq's state in done stamp v: < 0 not published, 0 running, 1 finished, > 1 retired long ago */
#define GPUOS__DONE_AGE(v, seq) ((int32_t)((uint32_t)((v) >> 32) - (uint32_t)(seq)))
#define GPUOS__DONE_FIN(v, seq) (GPUOS__DONE_AGE(v, seq) == 1 && (uint32_t)(v) <= 1u)

/* A task as the device sees it (56 bytes). */
typedef struct gpuos__qdesc {
    uint32_t kind;       /* GPUOS__SLOT_TASK or GPUOS__SLOT_EXIT, | plan epoch << 8 (GPUOS__KIND) */
    int32_t kernel_id;   /* gpuos__device_kernel_id */
    uint32_t plan_id;    /* row of the device plan table */
    uint32_t n_deps;     /* dependencies to wait for, each seq - dep_delta[k] (GPUOS__DEP_RETIRED: and all before) */
    int64_t n_items;     /* work items of the plan (gpuos_plan.h) */
    uint32_t tile_items; /* items per tile */
    uint32_t n_tiles;
    uint32_t base;       /* tile t runs on worker (base + t) % n (gpuos__pk_params.n_main, n_rt) */
    uint32_t stamp;      /* GPUOS__DESC_SYSW, GPUOS__DESC_EXT */
    uint32_t dep_delta[GPUOS__MAX_DEPS];
} gpuos__qdesc;

/* One chunk of a plan (56 bytes). */
typedef struct gpuos__qplan {
    uint32_t kind;       /* GPUOS__SLOT_PLAN */
    uint32_t plan_id;
    uint32_t chunk;      /* 0 .. GPUOS__PLAN_SLOTS-1 */
    uint32_t pad_;
    uint64_t payload[GPUOS__SLOT_PAYLOAD / 8];
} gpuos__qplan;

/* A launch of a recorded graph (48 bytes): its n nodes become tasks seq .. seq + n - 1 of
   the lane, expanded by the fetcher from the descriptors the host uploaded once
   (gpuos__cuda_graph_make_locked), so that a launch is one slot whatever its size. The
   launch's own parts (as the host would add them to each node's descriptor): */
typedef struct gpuos__qgraph {
    uint32_t kind;   /* GPUOS__SLOT_GRAPH, | GPUOS__KIND_HICHECK: its tasks get that flag */
    uint32_t n;      /* nodes (>= 1) */
    uint64_t desc;   /* device address of gpuos__qdesc[n] (GPUOS__DESC_EXT: the node first touches
                        memory outside the graph's own order and waits for ext and hi) */
    uint64_t ext;    /* such nodes wait until this lane retired task ext (0: nothing) */
    uint32_t base;   /* added to every node's base */
    uint32_t hi;     /* such nodes also wait for GPUOS__DEP_HI | X (0: nothing) */
    uint32_t hi_all; /* dep_delta[0] of a node that waits for everything earlier (0: unchanged) */
    uint32_t pad_[3];
} gpuos__qgraph;

/* Functions both sides compile: the host's C and the device source (NVRTC). */
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define GPUOS__QFN static __device__ __forceinline__
#else
#define GPUOS__QFN static inline
#endif

/* Node d of launch g (its descriptor as uploaded) as task seq: the launch's base, priority
   check flag and external dependencies added. The host uses it when it sends one slot per
   node, the fetcher when it expands a GRAPH slot (gpuos__fetch_graph). */
GPUOS__QFN void gpuos__qgraph_node(const gpuos__qgraph *g, gpuos__qdesc *d, uint64_t seq) {
    const uint32_t ext = d->stamp & GPUOS__DESC_EXT;
    d->stamp &= GPUOS__DESC_SYSW;
    d->base += g->base;
    d->kind |= g->kind & GPUOS__KIND_HICHECK;
    if (ext && (g->ext || g->hi) && d->n_deps != GPUOS__DEPS_ALL) {
        if (d->n_deps + (g->ext != 0) + (g->hi != 0) > GPUOS__MAX_DEPS) {
            d->n_deps = GPUOS__DEPS_ALL;
        } else {
            if (g->ext) d->dep_delta[d->n_deps++] = (uint32_t)(seq - g->ext) | GPUOS__DEP_RETIRED;
            if (g->hi) d->dep_delta[d->n_deps++] = g->hi;
        }
    }
    if (d->n_deps == GPUOS__DEPS_ALL && g->hi_all) d->dep_delta[0] = g->hi_all;
}

typedef union gpuos__qbody {
    gpuos__qdesc d;
    gpuos__qplan p;
    gpuos__qgraph g;
    uint64_t w[7];
} gpuos__qbody;

/* A ring slot: word k holds body bytes 7k .. 7k+6 in its low 7 bytes (little-endian)
   and the lap tag GPUOS__LAP_TAG(pos) in its top byte. */
typedef struct gpuos__qslot {
    uint64_t w[8];
} gpuos__qslot;
#define GPUOS__LAP_TAG(pos, log2_slots) ((uint64_t)((((pos) >> (log2_slots)) + 1u) & 0xffu))

/* A task in the device task ring (device memory), indexed by seq & (task_cap - 1). */
typedef struct gpuos__dtask {
    gpuos__qdesc d;
    uint64_t pad; /* (64 bytes; a task's state is its done stamp) */
} gpuos__dtask;

/* An entry of a worker's inbox: one 8-byte word, written with one store after the
   scheduler's fence, so that the word that says "written" is the entry itself. The low 16
   bits are a stamp, (inbox index + 1) mod 2^16: a slot holds the entry of the lap before
   until it is rewritten, whose stamp differs as long as inbox_cap < 2^16. The high 48 bits
   are the task's seq mod 2^48; the worker reads the descriptor from the task ring
   (tasks[seq & (task_cap - 1)], not reused before the task retires, which needs this
   worker's tiles) and rebuilds the full seq from one it saw before (the seqs of an inbox
   only grow; they would have to jump by 2^47 for this to fail). */
typedef uint64_t gpuos__ientry;
#define GPUOS__IE_STAMP(k) ((uint32_t)((k) + 1u) & 0xffffu) /* the stamp of inbox index k */
#define GPUOS__IE_MAKE(seq, k) ((uint64_t)(seq) << 16 | GPUOS__IE_STAMP(k))
#define GPUOS__IE_SEQ_MASK 0xffffffffffffull
#define GPUOS__IE_WRITTEN(v, k) ((uint32_t)((v) & 0xffffu) == GPUOS__IE_STAMP(k)) /* word v holds entry k */
/* the full seq of an entry word, given ref <= it, less than 2^47 before it */
#define GPUOS__IE_SEQ(v, ref) ((ref) + ((((v) >> 16) - (ref)) & GPUOS__IE_SEQ_MASK))
#define GPUOS__MAX_WORKERS 1024 /* worker blocks the scheduler can track (per lane: shared memory) */

/* Device -> host progress, in mapped host memory. */
typedef struct gpuos__pk_ctl {
    uint64_t retired;  /* every task with seq <= retired has finished */
    uint64_t exit_pos; /* after EXIT: the ring position the next launch starts at */
    uint64_t exit_seq; /* after EXIT: the sequence number the next launch starts at */
    uint64_t alive;    /* 1 while the kernel runs (set at start, cleared at exit) */
    uint64_t fetched;  /* ring positions below this have been copied: the host may reuse them */
    uint64_t retired_hi; /* lane 1 (high priority): as retired */
    uint64_t fetched_hi; /* lane 1: as fetched */
    uint64_t pad_;
    /* GPUOS__PK_TIMESTAMPS builds only (latency probes): %globaltimer when the fetcher
       saw a batch [0] and had pushed it [1], a worker saw an inbox entry [2], finished
       its tiles [3] and flushed its done counts [4], the retirer retired [5]; lane 1's
       fetcher had pushed a batch [6] and its retirer retired [7] */
    uint64_t stamp[8];
    /* Device -> host: the seq of the task of mailbox slot k that the express worker ran,
       written once it finished (the others of its slot are retired by the retirer) */
    uint64_t xfin[GPUOS__XBOX];
    /* Host -> device: the express mailbox, read in order by the express worker
       (gpuos__pk_params.xworker). Express task q (0, 1, ...) is in xbox[q % GPUOS__XBOX]: two
       slots as the ring's (8 self-tagged words each), the task's body, then its seq and q;
       every word's tag is GPUOS__XTAG(q). The host rewrites a slot only once its task is done. */
    gpuos__qslot xbox[GPUOS__XBOX][2];
} gpuos__pk_ctl;
#define GPUOS__XTAG(q) ((uint64_t)(((q) / GPUOS__XBOX) % 255u + 1u))

/* GPUOS__PK_TIMESTAMPS builds: worker cycle counts (clock64, thread 0 of every worker,
   summed over all workers), in device memory (gpuos__pk_params.prof). */
enum {
    GPUOS__PROF_WAIT,    /* polling an empty inbox */
    GPUOS__PROF_START,   /* entries seen -> the block starts the batch (barrier) */
    GPUOS__PROF_DEPS,    /* flushing and waiting for explicit dependencies */
    GPUOS__PROF_PLAN,    /* copying plans into shared memory */
    GPUOS__PROF_RUN,     /* gpuos__d_run (thread 0's share of the tiles) */
    GPUOS__PROF_SYNC,    /* the barrier after each tile */
    GPUOS__PROF_FLUSH,   /* publishing the batch's done counts and inbox position */
    GPUOS__PROF_BATCHES,
    GPUOS__PROF_TASKS,   /* inbox entries run */
    GPUOS__PROF_TILES,
    GPUOS__PROF_PLANS,   /* plan copies */
    /* the fetcher (thread 0 of the scheduler block) */
    GPUOS__PROF_F_POLL,  /* cycles of polls that found nothing */
    GPUOS__PROF_F_BATCH, /* cycles of polls that found slots, until they are pushed */
    GPUOS__PROF_F_EMPTY, /* polls that found nothing */
    GPUOS__PROF_F_FULL,  /* polls that found slots */
    GPUOS__PROF_F_SLOTS, /* slots fetched */
    /* the fetcher's processor (gpuos__fetch_process), cycles per phase */
    GPUOS__PROF_F_RING,   /* descriptors into the task ring */
    GPUOS__PROF_F_LAYOUT, /* each task's inbox range */
    GPUOS__PROF_F_PUSH,   /* the inbox entries (one word each, after the fence) */
    GPUOS__PROF_F_FENCE,  /* the fence after the task-ring entries */
    GPUOS__PROF_F_STAMP,  /* (none since done stamps: the task ring's seq words) */
    GPUOS__PROF_F_PAIRS,  /* inbox entries pushed */
    GPUOS__PROF_F_HANDOVER, /* the processor waiting for the poller's next batch */
    GPUOS__PROF_RUNS,       /* runs of identical tasks run as one (gpuos__pk_run) */
    GPUOS__PROF_N = 24
};

/* Parameters of the persistent kernel (passed by value).
   Arrays [GPUOS__LANES] are per lane. */
typedef struct gpuos__pk_params {
    gpuos__qslot *ring[GPUOS__LANES];  /* mapped pinned host memory, ring_slots slots */
    gpuos__pk_ctl *ctl;                /* mapped pinned host memory */
    gpuos__dtask *tasks[GPUOS__LANES]; /* device, task_cap entries */
    uint64_t *done[GPUOS__LANES];      /* device, task_cap done stamps (GPUOS__DONE_*) */
    uint64_t *retired;                 /* device, [lane]: copies of ctl's retired words, for dependency checks */
    char *plans;                       /* device, plan_cap * GPUOS__PLAN_BYTES (both lanes) */
    gpuos__ientry *inbox[GPUOS__LANES]; /* device, (n_main + n_rt) * inbox_cap entries: each worker's tasks, in order */
    uint32_t *wpos[GPUOS__LANES];      /* device, per worker: inbox entries it has consumed */
    uint32_t inbox_cap;     /* power of two, < 2^16 (GPUOS__IE_STAMP) */
    uint32_t ring_log2;     /* log2(ring_slots) */
    uint64_t ring_slots;    /* power of two */
    uint64_t task_cap;      /* power of two */
    uint64_t start_pos[GPUOS__LANES]; /* first ring position to read */
    uint64_t start_seq[GPUOS__LANES]; /* first task sequence number (>= 1) */
    unsigned long long *prof; /* device, GPUOS__PROF_N counters (GPUOS__PK_TIMESTAMPS builds) */
    /* Workers: inboxes 0..n_main-1 belong to the persistent kernel's worker blocks (built-in
       kernels), n_main..n_main+n_rt-1 to the run-time module's kernel gpuos__pk_rt (run-time
       operators; n_rt = 0 while none is defined). Tile t of a task goes to inbox
       (base + t) % n_main, or n_main + (base + t) % n_rt for a run-time operator. */
    uint32_t n_main, n_rt;
    /* Residency: block b of gpuos__pk_main (b = 0..n_main), and block i of gpuos__pk_rt as
       n_main + 1 + i, write epoch (the launch's number) to up[...] when they start (mapped
       host memory): the host sees whether every block became resident. */
    uint32_t *up;
    uint32_t epoch;
    /* Express tasks (GPUOS__DESC_XPRESS): the worker that polls ctl->xbox (n_main - 1;
       >= n_main: none) */
    uint32_t xworker;
    unsigned long long *xclaim; /* device: the claim word (atomicMax to an express task's seq) */
    unsigned long long *xruns;  /* device: express tasks it ran from the mailbox (gpuos_debug_express) */
    uint64_t *xfetched;         /* device: lane 0's next seq to fetch (the fetcher's progress) */
    uint64_t *xown;             /* device, GPUOS__XOWN words: express task seq's fetcher's mark, seq
                                   | GPUOS__XOWN_X when it left the task to the express worker */
    uint64_t xq0;               /* the first express task's q this launch reads */
    /* device: 0, or nonzero once gpuos_destroy gave up waiting (written through the copy
       stream, beside the kernels): workers then skip the tiles they have not run (read by
       thread 0 during each tile, its value joins the tile's barrier, __syncthreads_or), so a
       destroy does not wait for the whole queue already sent to the device */
    uint32_t *cancel;
} gpuos__pk_params;

#endif /* GPUOS_QUEUE_H */
