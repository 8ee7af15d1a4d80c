/* gpuos_runtime.h - the runtime's internal structs and the functions its files share.

   Not part of the public API. Every src/ .c file includes this header (and system headers)
   only, so that the amalgamated gpuos.c is one translation unit without clashes:
   private functions are either static with a per-file prefix or named gpuos__*.

   Where a task goes:
     gpuos_submit (plan.c)        a repeat of a recent task copies its job from the repeat
                                  table (queue.c); else validates it, builds a gpuos__job
     gpuos__queue_push_task       takes storage references, gives the job its sequence
       (queue.c)                  number, puts it in the context's bounded ring
     dispatcher (host_exec.c)     pops jobs in order, runs them (split over the worker
                                  pool when large), releases their storages, and
                                  advances ctx->completed, which the waits watch;
     or the GPU (cuda_backend.c)  encodes it into the device's ring (see that file).

   Locking: ctx->mu guards the queue, the sequence numbers, the state flags and every
   reference count (context, storages). The error detail has its own mutex (err_mu),
   the worker pool its own (host_exec.c). Never take ctx->mu while holding err_mu. */
#ifndef GPUOS_RUNTIME_H
#define GPUOS_RUNTIME_H

#include "gpuos_ops.h"
#include "gpuos_queue.h"

#include <fenv.h>    /* fenv_t (the host executor's floating-point environment) */
#include <pthread.h> /* mutexes, condition variables, threads */
#include <stdarg.h>  /* va_list for the error detail */
#include <stddef.h>  /* size_t, offsetof */
#include <stdint.h>  /* int64_t, INT64_MAX */
#include <time.h>    /* struct timespec */

/* ---------------------------------------------------------------- atomics */
/* The few atomic accesses of the runtime (a cancel flag, the combining list of repeated
   submissions, the CUDA gates' counters, words in mapped memory), written by the type of the
   object: GPUOS__ALOAD(INT | U32 | U64, p, order), GPUOS__ALOAD_PTR(type, p, order),
   GPUOS__ASTORE(p, v, order), GPUOS__AADD(p, v, order) (no result), GPUOS__AXCHG_PTR(type, p, v, order), GPUOS__ACAS_WEAK(p, expected,
   desired, order, failure order). GCC, clang and the compilers that follow them have the
   __atomic builtins, used as they are. Any other C99 compiler (tcc, for one) gets one
   process-wide mutex around each access (pthread_mutex_lock and _unlock order memory: POSIX
   4.12): correct, slower. GPUOS__ATOMIC_MUTEX=1 asks for the mutex with gcc or clang too (to
   test that path). */
#if (defined(__GNUC__) || defined(__clang__) || defined(__INTEL_COMPILER)) && \
    !(defined(GPUOS__ATOMIC_MUTEX) && GPUOS__ATOMIC_MUTEX)
#define GPUOS__RELAXED __ATOMIC_RELAXED
#define GPUOS__ACQUIRE __ATOMIC_ACQUIRE
#define GPUOS__RELEASE __ATOMIC_RELEASE
#define GPUOS__ALOAD(kind, p, mo) __atomic_load_n(p, mo)
#define GPUOS__ALOAD_PTR(type, p, mo) __atomic_load_n(p, mo)
#define GPUOS__ASTORE(p, v, mo) __atomic_store_n(p, v, mo)
#define GPUOS__AADD(p, v, mo) ((void)__atomic_fetch_add(p, v, mo))
#define GPUOS__AXCHG_PTR(type, p, v, mo) __atomic_exchange_n(p, v, mo)
#define GPUOS__ACAS_WEAK(p, e, d, mo, mo_fail) __atomic_compare_exchange_n(p, e, d, 1, mo, mo_fail)
#else
#undef GPUOS__ATOMIC_MUTEX
#define GPUOS__ATOMIC_MUTEX 1
extern pthread_mutex_t gpuos__atomic_mu; /* context.c */
extern void *gpuos__atomic_tmp;          /* an exchange's old value, under gpuos__atomic_mu */
static inline int gpuos__alock(void) { return pthread_mutex_lock(&gpuos__atomic_mu), 0; }
static inline void gpuos__aunlock(void) { pthread_mutex_unlock(&gpuos__atomic_mu); }
/* unlock, then return v (read before the call, under the lock) */
static inline int gpuos__aunlock_INT(int v) { return gpuos__aunlock(), v; }
static inline uint32_t gpuos__aunlock_U32(uint32_t v) { return gpuos__aunlock(), v; }
static inline uint64_t gpuos__aunlock_U64(uint64_t v) { return gpuos__aunlock(), v; }
static inline void *gpuos__aunlock_PTR(void *v) { return gpuos__aunlock(), v; }
#define GPUOS__RELAXED 0
#define GPUOS__ACQUIRE 2
#define GPUOS__RELEASE 3
#define GPUOS__ALOAD(kind, p, mo) ((void)(mo), gpuos__alock(), gpuos__aunlock_##kind(*(p)))
#define GPUOS__ALOAD_PTR(type, p, mo) ((type)((void)(mo), gpuos__alock(), gpuos__aunlock_PTR((void *)*(p))))
#define GPUOS__ASTORE(p, v, mo) ((void)(mo), (void)gpuos__alock(), (void)(*(p) = (v)), gpuos__aunlock())
#define GPUOS__AADD(p, v, mo) ((void)(mo), (void)gpuos__alock(), (void)(*(p) += (v)), gpuos__aunlock())
#define GPUOS__AXCHG_PTR(type, p, v, mo)                                                           \
    ((type)((void)(mo), (void)gpuos__alock(), gpuos__atomic_tmp = (void *)*(p), (void)(*(p) = (v)), \
            gpuos__aunlock_PTR(gpuos__atomic_tmp)))
#define GPUOS__ACAS_WEAK(p, e, d, mo, mo_fail)                                                       \
    ((void)(mo), (void)(mo_fail), (void)gpuos__alock(),                                              \
     *(p) == *(e) ? ((void)(*(p) = (d)), gpuos__aunlock_INT(1)) : ((void)(*(e) = *(p)), gpuos__aunlock_INT(0)))
#endif

/* ---------------------------------------------------------------- storage and tensors */
/* The memory behind tensors: owned (allocated by gpuos, 64-byte aligned) or wrapped.
   Every tensor handle and every queued job that uses it holds a reference. */
typedef struct gpuos__storage {
    gpuos_context *ctx;
    char *data;        /* first byte */
    void *block;       /* what free() takes: owned memory; NULL when wrapped */
    size_t bytes;      /* size of the memory from data */
    int owned;
    int refs;          /* under ctx->mu */
    uint64_t last_use; /* sequence number of the last job that uses it; under ctx->mu */
    uint32_t host_w0;  /* host executor: unfinished lane-0 jobs that write it (queue_host_count; ctx->mu) */
    uint32_t host_u0;  /* host executor: unfinished lane-0 jobs that use it */
    void *cuda_log;    /* CUDA backend: recent accesses, for dependencies (cuda_backend.c) */
    int on_device;     /* data is a device address (CUDA backend) */
    void *pinned;      /* gpuos_tensor_new_pinned: the host address of data (mapped pinned memory on GPU
                          contexts, data itself on host contexts); NULL otherwise */
} gpuos__storage;

struct gpuos_tensor {
    gpuos_context *ctx;
    gpuos__storage *st;
    gpuos_dtype dtype;
    int rank;
    int64_t shape[GPUOS_MAX_RANK];
    int64_t strides[GPUOS_MAX_RANK]; /* elements */
    int64_t offset;                  /* elements from st->data */
    int64_t numel;
    uint64_t uid;                    /* unique in the context (ctx->tensor_uid): a handle whose address is reused differs */
};

/* ---------------------------------------------------------------- jobs (queued tasks) */
/* A version of a run-time operator (rtops.c). */
typedef struct gpuos__rt_version {
    gpuos_context *ctx;
    int refs;                  /* the operator's (while current) + one per job and graph template; ctx->mu */
    int tmpl_refs;             /* of refs, the graph templates' (gpuos__rt_template_locked): they keep the
                                  version's memory, not its code slot, which a redefinition may take
                                  back once only templates refer to it (the graph plans that node again) */
    int index, slot;           /* operator index; physical slot 2 * index + 0 or 1 */
    uint64_t def_id;           /* its definition's (gpuos_op_define; a redefinition keeps it): a
                                  graph node of a removed operator never runs one defined later
                                  at its index */
    gpuos_opdef_kind kind;
    int n_in, n_scalars;
    gpuos_dtype out_dtype, in_dtype[GPUOS_RUNTIME_MAX_INPUTS];
    char name[64];
    char var[1 + GPUOS_RUNTIME_MAX_INPUTS + 2][64]; /* out, inputs, scalars */
    char *source;
    struct gpuos__ex_program *prog; /* host executor: the compiled body */
    uint64_t hash;             /* GPU: the device symbols' suffix and the object's cache key */
    void *obj;                 /* GPU: the relocatable object (NVRTC -rdc) */
    size_t obj_size;
} gpuos__rt_version;

/* Host-path profile (a diagnostic build only: cc -DGPUOS__PROF_HOST on x86-64): cycles per
   phase of a submission, summed in gpuos__prof_host[] (tests/gpu/probe_submit.c prints them;
   indices GPUOS__PH_*). Otherwise the macros are nothing. */
enum {
    GPUOS__PH_SUBMIT, GPUOS__PH_LOCK, GPUOS__PH_REPEAT, GPUOS__PH_INSERT, GPUOS__PH_ENCODE, GPUOS__PH_OPERANDS,
    GPUOS__PH_DEPS, GPUOS__PH_PLAN, GPUOS__PH_PUT, GPUOS__PH_LOG, GPUOS__PH_UNLOCK, GPUOS__PH_COUNT, GPUOS__PH_N
};
#if defined(GPUOS__PROF_HOST) && defined(__x86_64__)
#include <x86intrin.h> /* __rdtsc */
extern uint64_t gpuos__prof_host[GPUOS__PH_N];
#define GPUOS__PH_NOW() __rdtsc()
#define GPUOS__PH(i, t0) (gpuos__prof_host[i] += __rdtsc() - (t0))
#define GPUOS__PH_INC(i) (gpuos__prof_host[i]++)
#else
#define GPUOS__PH_NOW() ((uint64_t)0)
#define GPUOS__PH(i, t0) ((void)(t0))
#define GPUOS__PH_INC(i) ((void)0)
#endif

typedef struct gpuos__job {
    uint64_t seq;
    gpuos_op op;
    int kind; /* gpuos__kind */
    gpuos__ew_loop_fn ew_loop;
    gpuos__ew_iter_fn ew_iter;
    gpuos__reduce_fn reduce_fn;
    gpuos__rows_fn rows_fn;
    gpuos__matmul_fn matmul_fn;
    int64_t items;     /* work items: the kernels run ranges of [0, items) */
    int64_t item_cost; /* rough element operations per item, to decide on splitting */
    int n_st;
    gpuos__storage *st[GPUOS__MAX_PTR]; /* distinct storages the job uses */
    int dev_kernel;                     /* CUDA backend: gpuos__device_kernel_id, -1 if none */
    uint8_t elsize[GPUOS__MAX_PTR];     /* bytes per element of out, in[0], in[1], ... */
    uint64_t dseq;                      /* CUDA backend: the task's device sequence number */
    gpuos__rt_version *rt;              /* run-time operator: the version it runs (a reference) */
    int rt_tmpl;                        /* rt is a graph template's: counted in rt->tmpl_refs too */
    gpuos__storage **xst;               /* a graph launch's job: its storages (malloc'd, owned) */
    int n_xst;
    gpuos__rt_version **xrt;            /* a graph launch's job: the run-time operator versions its
                                           nodes run (malloc'd, one reference each) */
    int n_xrt;
    int prio;                           /* GPUOS_PRIORITY_*: > 0 asks for lane 1 (so does a deadline) */
    uint64_t deadline_ns;               /* CLOCK_MONOTONIC time it should finish by; 0: none */
    int dl_open;                        /* counts in gpuos_deadline_stats and is not counted yet */
    int lane;                           /* the lane it runs in: 1 (high priority) only when it need not
                                           wait for earlier lane-0 work; set when queued (host) or encoded */
    int lane_fixed;                     /* lane set for its whole batch (a graph launch's tasks) */
    int host_c0;                        /* host executor: counted in its storages' host_w0/host_u0 */
    int batch_left;                     /* a batch's tasks queued after it (gpuos__queue_push_batch) */
    uint64_t batch_id;                  /* the seq of its batch's first task; 0: not in a batch */
    int state;                          /* host executor: GPUOS__JOB_QUEUED, _TAKEN, _DONE */
    const void *rep_key;                /* a repeat's table entry (queue.c) and its version: two jobs with */
    uint32_t rep_ver;                   /* the same pair are the same task (the CUDA encoder's repeat path) */
    uint32_t rep_slot;                  /* that entry's index in the table (< ctx->tcache_n) */
    struct gpuos__job *next_free;
    /* non-NULL: plan below was not copied; it is that repeat-table entry's (queue.c,
       tcache_job_locked: a GPU context's repeat, whose encoding is most often its memo's and
       never reads the plan), unchanged until the job is encoded or gpuos__job_plan_fetch */
    const void *plan_src;
    /* last: a repeat copies the job up to here (456 of its 736 bytes are the plan) */
    union {
        gpuos__ew_plan ew;
        gpuos__reduce_plan reduce;
        gpuos__rows_plan rows;
        gpuos__matmul_plan matmul;
    } plan;
} gpuos__job;

enum { GPUOS__JOB_QUEUED = 0, GPUOS__JOB_TAKEN = 1, GPUOS__JOB_DONE = 2 };

/* ---------------------------------------------------------------- context */
/* The register cap of the device code (--maxrregcount): the persistent kernel's launch
   bounds (two 256-thread blocks per multiprocessor) allow 128, and __launch_bounds__
   overrides the option for the kernel, so the functions it calls get the same cap. */
#define GPUOS__MAXRREG 128
/* Entries of the repeat table (queue.c): a task submitted again while its entry holds it is
   copied, not planned; the CUDA encoder keeps one last encoding per entry (cuda__memo).
   8192 entries (888 bytes each on x86-64, and 264 for the GPU encoder's memo; allocated on
   first use, pages touched as entries are):
   with 1024, an H100 program repeating 1024, 2048, 4096 distinct tasks in turn submitted and
   ran them at 1.20, 1.79, 2.15 us a task, with 8192 at 0.51-0.82, 0.63-1.09, 0.66-1.62
   (tests/gpu/probe_pool.c, alternating in one call); GPUOS_REPEAT_TABLE sets another size. */
#define GPUOS__TCACHE 8192u

/* ctx->mu for the submission paths, whose holders keep it for about a microsecond: a
   while of polite retries before sleeping in the kernel. A plain pthread_mutex_lock sends
   a second submitting thread to sleep and the first one's unlock through a wake-up of
   several microseconds: measured, two submitting threads did less than half the work of
   one (make bench, independent). */
static inline void gpuos__lock_spin(pthread_mutex_t *mu) {
    int i;
    for (i = 0; i < 200; i++) {
        if (pthread_mutex_trylock(mu) == 0) return;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
        __builtin_ia32_pause();
#endif
    }
    pthread_mutex_lock(mu);
}
#define GPUOS__STR_(x) #x
#define GPUOS__STR(x) GPUOS__STR_(x)
#define GPUOS__ERR_SLOTS 4
#define GPUOS__ERR_LEN 4096
#define GPUOS__MAX_HOST_THREADS 16

typedef struct gpuos__errbuf {
    pthread_mutex_t mu;
    unsigned cur; /* slot of the latest message */
    char msg[GPUOS__ERR_SLOTS][GPUOS__ERR_LEN];
} gpuos__errbuf;

struct gpuos__pool; /* host_exec.c */

struct gpuos_context {
    gpuos_config cfg;      /* copy; cfg.cache_dir points at cache_dir */
    char *cache_dir;
    gpuos_backend backend;
    int host_threads;      /* resolved: 1 .. GPUOS__MAX_HOST_THREADS */

    pthread_mutex_t mu;
    pthread_cond_t cv_room; /* the queue got room (submitters wait) */
    pthread_cond_t cv_work; /* work, unpause or stop (the dispatcher waits) */
    pthread_cond_t cv_done; /* a job finished (waits) */

    gpuos__job **ring;     /* ring of unfinished jobs in sequence order; grows up to capacity */
    uint32_t ring_size;    /* allocated slots, a power of two */
    uint32_t ring_head;    /* index of the oldest unfinished job */
    uint32_t ring_count;   /* unfinished jobs: queued, running, or finished out of order behind an
                              older one (lane 1); they retire from the head, in order */
    uint32_t host_queued;  /* host executor: jobs not yet taken by the dispatcher */
    int host_running;      /* host executor: a job is running (on the dispatcher, or on a waiting
                              thread that took it: one at a time, in the dispatcher's order) */
    fenv_t host_fenv;      /* host executor: its threads' floating-point environment (gpuos_create's
                              thread's, which they inherit); a waiting thread runs a job under it */
    uint32_t host_hi;      /* host executor: lane-1 jobs among them */
    uint64_t host_hi_next; /* host executor: lane-1 jobs below this seq were all taken */
    uint64_t host_hi_low;  /* host executor: no queued lane-1 job has a smaller seq (queue_pop_edf) */
    int host_wraps;        /* wrapped storages alive (atomic): while 0 no two storages overlap */
    uint32_t host_dl;      /* host executor: queued lane-1 jobs with a deadline (earliest first) */
    uint32_t dl_open;      /* jobs whose deadline is not counted yet (job->dl_open) */
    uint64_t dl_met, dl_missed; /* gpuos_deadline_stats */
    uint32_t capacity;     /* cfg.queue_capacity */
    uint64_t submitted;    /* sequence number of the last queued job */
    uint64_t completed;    /* every job up to this one has finished */
    int paused;            /* gpuos_debug_pause */
    int stopping;          /* the dispatcher exits at the next job boundary */
    int cancel;   /* host executor: gpuos_destroy gave up waiting: the running job stops between its
                     chunks and items (host_exec.c, rtops.c; read with GPUOS__ALOAD) */
    int destroyed;         /* gpuos_destroy ran; the handle lives on for tensors */
    gpuos_status sticky;   /* GPUOS_OK while healthy */
    char sticky_msg[1024]; /* what made the context fail, repeated by every later error */
    int refs;              /* the user's handle + one per storage and one per graph */
    uint64_t tensor_uid;   /* the last gpuos_tensor.uid given (mu) */
    gpuos__job *free_jobs; /* recycled jobs */
    int n_free_jobs;
    struct gpuos__tcache *tcache; /* jobs of recent submissions, to repeat (queue.c; mu) */
    uint32_t reap_every;   /* GPU: submissions between the submitter's own reaps (GPUOS_CUDA_REAP_EVERY; 0: never) */
    uint32_t reap_count;   /* submissions since the last one */
    uint64_t tcache_clock;
    uint32_t tcache_n;     /* the repeat table's entries (a power of two, >= 8: GPUOS__TCACHE or GPUOS_REPEAT_TABLE) */
    struct gpuos__combine *combine; /* repeated submissions waiting for a thread that holds mu to
                                       queue them (queue.c, gpuos__queue_submit_repeat; atomic) */

    pthread_t dispatcher;
    int dispatcher_running;
    struct gpuos__pool *pool; /* NULL with one host thread */

    /* run-time operators (rtops.c): the current version of each, by index; the version
       in each physical code slot (two per operator) while anything refers to it */
    struct gpuos__rt_version *rt_cur[GPUOS_MAX_RUNTIME_OPS];
    struct gpuos__rt_version *rt_slot[2 * GPUOS_MAX_RUNTIME_OPS];
    char rt_reserved[GPUOS_MAX_RUNTIME_OPS]; /* an index being defined */
    uint32_t rt_gen[GPUOS_MAX_RUNTIME_OPS];  /* removals of each index (in its handles: gpuos__rt_index) */
    uint64_t rt_defs;                        /* gpuos_op_define calls so far (rt_version.def_id) */
    pthread_mutex_t rt_mu;                     /* one definition at a time (before mu) */
    pthread_mutex_t stage_mu;  /* small GPU downloads, one at a time through the staging below (tensor.c) */
    size_t stage_bytes;        /* downloads up to this size go through it (its size; 0: none, as on the host) */
    gpuos_tensor *stage_buf;   /* mapped pinned staging (stage_bytes of u8), allocated before the kernel's first launch */
    gpuos_tensor *stage_view;  /* the last download's view of it (dtype, shape), reused while they repeat */

    struct gpuos__cuda *cuda; /* the CUDA backend (cuda_backend.c); NULL on the host */
    uint32_t cuda_sent;       /* queued jobs (from ring_head) already sent to the device */

    gpuos__errbuf err;
};

/* ---------------------------------------------------------------- status.c */
/* ctx's last error copied under its buffer's lock (for re-reporting it). */
void gpuos__last_error_copy(const gpuos_context *ctx, char *buf, size_t n);
const char *gpuos__error_detail(const char *msg); /* msg past its "GPUOS_ERR_X: " */
/* Records the detail of an error on ctx (or process-wide when ctx is NULL) and
   returns status, so that `return gpuos__set_error(ctx, GPUOS_ERR_X, "...", ...);`. */
gpuos_status gpuos__set_error(const gpuos_context *ctx, gpuos_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* GPUOS_ERR_INVALID_ARGUMENT, with fn in the message, once gpuos_destroy ran on ctx (a
   tensor or graph keeps the handle alive, not the context); else GPUOS_OK. */
gpuos_status gpuos__check_alive(gpuos_context *ctx, const char *fn);
gpuos_status gpuos__set_errorv(const gpuos_context *ctx, gpuos_status status, const char *fmt, va_list ap);
/* The context fails for good with GPUOS_ERR_DEVICE_LOST (ctx->mu held); every waiter wakes. */
void gpuos__fail_locked(gpuos_context *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
int gpuos__errbuf_init(gpuos__errbuf *e);
void gpuos__errbuf_fini(gpuos__errbuf *e);
/* Short name of a status ("GPUOS_ERR_AXIS"). */
const char *gpuos__status_name(gpuos_status status);

/* ---------------------------------------------------------------- context.c */
/* Frees the context struct itself (after the last reference went). */
void gpuos__context_free(gpuos_context *ctx);
/* Takes one reference on ctx (a storage, a graph), or drops one and frees ctx if that was the
   last (both take ctx->mu: not held). */
void gpuos__context_ref(gpuos_context *ctx);
void gpuos__context_unref(gpuos_context *ctx);

/* ---------------------------------------------------------------- tensor.c */
/* 1 and *r = a*b (a+b) when it fits in int64_t, else 0. */
int gpuos__mul64(int64_t a, int64_t b, int64_t *r);
/* Row-major strides (elements) of shape; a zero-size shape's stop growing past 2^63 (tensor.c). */
void gpuos__contiguous_strides(int rank, const int64_t *shape, int64_t *strides);
int gpuos__add64(int64_t a, int64_t b, int64_t *r);
/* Product of the shape; GPUOS_ERR_INVALID_ARGUMENT (with a message on ctx) for a
   negative size or an overflow. */
gpuos_status gpuos__shape_numel(const gpuos_context *ctx, const char *what, int rank, const int64_t *shape,
                                int64_t *numel);
/* Lowest and highest element offset a view reaches, relative to its offset (numel > 0).
   0 on overflow. */
int gpuos__view_extent(int rank, const int64_t *shape, const int64_t *strides, int64_t *lo, int64_t *hi);
/* GPUOS_OK when every element of the view lies inside bytes of memory, else
   GPUOS_ERR_BAD_STRIDES (message prefixed with fn). */
gpuos_status gpuos__check_in_storage(const gpuos_context *ctx, const char *fn, size_t bytes, size_t elsize,
                                     int rank, const int64_t *shape, const int64_t *strides, int64_t offset);
/* Bytes per element; 0 for an unknown dtype. */
size_t gpuos__elsize(gpuos_dtype dtype);
/* GPUOS_ERR_BAD_STRIDES when view o, written (a task's output, an upload's target), would
   write an element several times or may (plan.c); else GPUOS_OK. */
gpuos_status gpuos__check_output_view(const gpuos_context *ctx, const gpuos_tensor *o, const char *name);
int gpuos__is_contiguous(int rank, const int64_t *shape, const int64_t *strides);
/* small GPU downloads' pinned staging (tensor.c): allocated after the CUDA backend opens, freed at destroy */
void gpuos__stage_open(gpuos_context *ctx);
void gpuos__stage_close(gpuos_context *ctx);
/* A new handle on st (takes a reference on it). shape and strides are trusted. */
gpuos_status gpuos__tensor_make(gpuos_context *ctx, gpuos__storage *st, gpuos_dtype dtype, int rank,
                                const int64_t *shape, const int64_t *strides, int64_t offset, gpuos_tensor **out);
/* Reference counting; the _locked forms need ctx->mu held. release_locked returns 1
   when it dropped the context's last reference: the caller then calls
   gpuos__context_free(ctx) after unlocking. */
void gpuos__storage_retain_locked(gpuos__storage *st);
int gpuos__storage_release_locked(gpuos__storage *st);
/* Stores value converted as a cast from f64 would (bool: != 0; integers: truncate,
   saturate, NaN -> 0; floats: round to nearest even). */
void gpuos__store_f64(gpuos_dtype dtype, double value, void *dst);

/* ---------------------------------------------------------------- queue.c */
/* Absolute CLOCK_MONOTONIC time timeout_ms from now. */
void gpuos__deadline(uint32_t timeout_ms, struct timespec *ts);
/* pthread_cond_timedwait on a CLOCK_MONOTONIC condition variable; returns 0 or ETIMEDOUT. */
int gpuos__cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, const struct timespec *deadline);
int gpuos__cond_init_monotonic(pthread_cond_t *cv);
int gpuos__queue_init(gpuos_context *ctx);
/* Releases every job still queued (their work is dropped) and frees the ring. Call
   with the dispatcher stopped. */
void gpuos__queue_fini(gpuos_context *ctx);
/* Copies job->plan from its repeat-table entry (job->plan_src, then NULL): before anything
   reads the plan of a repeat on a GPU context (cuda_encode's full path; queue.c for a job left
   unsent, while the entry is still as copied). */
void gpuos__job_plan_fetch(gpuos__job *job);
/* A zeroed job (recycled when possible); NULL when out of memory. */
gpuos__job *gpuos__job_alloc(gpuos_context *ctx);
void gpuos__job_free(gpuos_context *ctx, gpuos__job *job);
/* gpuos_submit's repeat path: 1 when task repeats a recent submission (same operator,
   tensor handles, scalars and parameters), whose job was copied and queued (*st says how). */
int gpuos__queue_submit_repeat(gpuos_context *ctx, const gpuos_task *task, uint64_t *seq, gpuos_status *st);
/* Queues a job gpuos__plan_task built for task, remembering it for repeats. */
gpuos_status gpuos__queue_push_task(gpuos_context *ctx, const gpuos_task *task, gpuos__job *job, uint64_t *seq);
/* ctx->mu held: waits (submit_timeout_ms) until the queue has room for one more job. */
gpuos_status gpuos__queue_wait_room_locked(gpuos_context *ctx);
/* ctx->mu held, room checked: queues a job the CUDA backend already sent to the device. */
void gpuos__queue_push_sent_locked(gpuos_context *ctx, gpuos__job *job, uint64_t *seq);
/* cuda_backend.c: recorded graphs encoded once (graph.c) */
struct gpuos__cuda_graph;
gpuos_status gpuos__cuda_graph_make_locked(gpuos_context *ctx, gpuos__job *const *jobs, int n,
                                           struct gpuos__cuda_graph **out);
gpuos_status gpuos__cuda_graph_launch_locked(gpuos_context *ctx, struct gpuos__cuda_graph *g, gpuos__job *job,
                                             int prio, uint64_t *seq);
void gpuos__cuda_graph_free_locked(gpuos_context *ctx, struct gpuos__cuda_graph *g);
int gpuos__cuda_graph_storages(const struct gpuos__cuda_graph *g);
/* n jobs in order under one lock; *n_queued of them went in; the rest are freed on error. */
gpuos_status gpuos__queue_push_batch(gpuos_context *ctx, gpuos__job *const *jobs, int n, uint64_t *seq, int *n_queued);
/* Dispatcher side: the next job, or NULL when stopping. Waits while paused or empty. */
gpuos__job *gpuos__queue_pop(gpuos_context *ctx);
/* Dispatcher side: job has finished; retires it and every finished job behind it in order
   (storages released, ctx->completed advanced). */
void gpuos__queue_done(gpuos_context *ctx, gpuos__job *job);
/* Retires the ring's head job, which has finished (ctx->mu held): takes it off the ring,
   advances ctx->completed, releases its storages. The caller broadcasts cv_done. */
void gpuos__queue_retire_head_locked(gpuos_context *ctx);
/* Waits until every job up to seq has finished (one: job seq itself), at most timeout_ms. */
gpuos_status gpuos__wait_seq(gpuos_context *ctx, uint64_t seq, int one, uint32_t timeout_ms, const char *what);
/* ctx->mu held: job seq has finished (one), or every job up to it (!one). */
int gpuos__seq_done_locked(gpuos_context *ctx, uint64_t seq, int one);

/* ---------------------------------------------------------------- host_exec.c */
gpuos_status gpuos__host_start(gpuos_context *ctx);
/* Stops at the next job boundary and joins every thread. */
void gpuos__host_stop(gpuos_context *ctx);
/* Runs one taken job (its items over the pool when large), as the dispatcher does. */
void gpuos__host_run_job(gpuos_context *ctx, const gpuos__job *job);

/* ---------------------------------------------------------------- cuda_backend.c */
struct gpuos__cuda;
/* Opens the GPU (device ordinal), builds or loads the device module, allocates the queue. */
gpuos_status gpuos__cuda_open(gpuos_context *ctx, int ordinal);
/* Stops the kernel and frees everything (queued work already drained or dropped). */
void gpuos__cuda_close(gpuos_context *ctx);
gpuos_status gpuos__cuda_alloc(gpuos_context *ctx, size_t bytes, void **out);
/* Frees device memory now, or when the kernel stops if it is running (ctx->mu held). */
void gpuos__cuda_free_locked(gpuos_context *ctx, void *p);
/* Mapped pinned host memory: *host for the program, *dev for tasks (cuMemHostAlloc). */
gpuos_status gpuos__cuda_alloc_pinned(gpuos_context *ctx, size_t bytes, void **host, void **dev);
void gpuos__cuda_free_pinned_locked(gpuos_context *ctx, void *host);
/* Synchronous copy between host and device memory on the copy stream. */
gpuos_status gpuos__cuda_memcpy(gpuos_context *ctx, void *dst, const void *src, size_t bytes, int to_device);
/* Sends queued jobs not yet on the device (ctx->mu held). */
gpuos_status gpuos__cuda_pump_locked(gpuos_context *ctx);
/* Retires finished jobs (ctx->mu held); 1 if any. */
int gpuos__cuda_reap_locked(gpuos_context *ctx);
/* Waits for job seq (one) or every job up to it with low latency (ctx->mu held);
   GPUOS_ERR_TIMEOUT after timeout_ms. */
gpuos_status gpuos__cuda_wait_locked(gpuos_context *ctx, uint64_t seq, int one, uint32_t timeout_ms);
/* job, at ring index `index` from the head, has finished on the device (ctx->mu held). */
int gpuos__cuda_job_done_locked(gpuos_context *ctx, const gpuos__job *job, uint32_t index);
/* The lane a batch's jobs take as one (gpuos__queue_push_batch, ctx->mu held): 1 only when
   every one asks for it, nothing queued before them is still unsent, and each could take it
   now (the encoder checks lane 1 again; lane 0 is kept). */
int gpuos__cuda_batch_lane_locked(gpuos_context *ctx, gpuos__job *const *jobs, int n);
const char *gpuos__cuda_device_name(const gpuos_context *ctx);

/* ---------------------------------------------------------------- cuda_loader.c */
/* Minimal CUDA driver / NVRTC / nvJitLink types, so that no CUDA header is needed. */
typedef int gpuos__CUresult;
typedef int gpuos__CUdevice;
typedef struct gpuos__CUctx_st *gpuos__CUcontext;
typedef struct gpuos__CUmod_st *gpuos__CUmodule;
typedef struct gpuos__CUfunc_st *gpuos__CUfunction;
typedef struct gpuos__CUstream_st *gpuos__CUstream;
typedef struct gpuos__CUevent_st *gpuos__CUevent;
typedef unsigned long long gpuos__CUdeviceptr;
typedef int gpuos__nvrtcResult;
typedef struct gpuos__nvrtcProgram_st *gpuos__nvrtcProgram;
typedef int gpuos__nvJitLinkResult;
typedef struct gpuos__nvJitLink_st *gpuos__nvJitLinkHandle;

/* CUDA driver entry points (libcuda.so.1). */
typedef struct gpuos__cuda_api {
    gpuos__CUresult (*cuInit)(unsigned int flags);
    gpuos__CUresult (*cuDriverGetVersion)(int *version);
    gpuos__CUresult (*cuGetErrorName)(gpuos__CUresult error, const char **str);
    gpuos__CUresult (*cuGetErrorString)(gpuos__CUresult error, const char **str);
    gpuos__CUresult (*cuDeviceGetCount)(int *count);
    gpuos__CUresult (*cuDeviceGet)(gpuos__CUdevice *device, int ordinal);
    gpuos__CUresult (*cuDeviceGetName)(char *name, int len, gpuos__CUdevice dev);
    gpuos__CUresult (*cuDeviceGetAttribute)(int *value, int attrib, gpuos__CUdevice dev);
    gpuos__CUresult (*cuDevicePrimaryCtxRetain)(gpuos__CUcontext *pctx, gpuos__CUdevice dev);
    gpuos__CUresult (*cuDevicePrimaryCtxRelease)(gpuos__CUdevice dev);          /* _v2 */
    gpuos__CUresult (*cuCtxSetCurrent)(gpuos__CUcontext ctx);
    gpuos__CUresult (*cuCtxSynchronize)(void);
    gpuos__CUresult (*cuModuleLoadData)(gpuos__CUmodule *module, const void *image);
    gpuos__CUresult (*cuModuleUnload)(gpuos__CUmodule hmod);
    gpuos__CUresult (*cuModuleGetFunction)(gpuos__CUfunction *hfunc, gpuos__CUmodule hmod, const char *name);
    gpuos__CUresult (*cuModuleGetGlobal)(gpuos__CUdeviceptr *dptr, size_t *bytes, gpuos__CUmodule hmod,
                                         const char *name);                     /* _v2 */
    gpuos__CUresult (*cuFuncSetAttribute)(gpuos__CUfunction hfunc, int attrib, int value);
    gpuos__CUresult (*cuFuncGetAttribute)(int *value, int attrib, gpuos__CUfunction hfunc);
    gpuos__CUresult (*cuLaunchKernel)(gpuos__CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                      unsigned by, unsigned bz, unsigned shared_bytes, gpuos__CUstream stream,
                                      void **params, void **extra);
    gpuos__CUresult (*cuStreamCreate)(gpuos__CUstream *stream, unsigned int flags);
    gpuos__CUresult (*cuStreamDestroy)(gpuos__CUstream stream);                /* _v2 */
    gpuos__CUresult (*cuStreamSynchronize)(gpuos__CUstream stream);
    gpuos__CUresult (*cuStreamQuery)(gpuos__CUstream stream);
    gpuos__CUresult (*cuMemAlloc)(gpuos__CUdeviceptr *dptr, size_t bytes);     /* _v2 */
    gpuos__CUresult (*cuMemFree)(gpuos__CUdeviceptr dptr);                     /* _v2 */
    gpuos__CUresult (*cuMemHostAlloc)(void **pp, size_t bytes, unsigned int flags);
    gpuos__CUresult (*cuMemFreeHost)(void *p);
    gpuos__CUresult (*cuMemHostGetDevicePointer)(gpuos__CUdeviceptr *pdptr, void *p, unsigned int flags); /* _v2 */
    gpuos__CUresult (*cuMemcpyDtoH)(void *dst, gpuos__CUdeviceptr src, size_t bytes);        /* _v2 */
    gpuos__CUresult (*cuMemcpyHtoDAsync)(gpuos__CUdeviceptr dst, const void *src, size_t bytes,
                                         gpuos__CUstream stream);                          /* _v2 */
    gpuos__CUresult (*cuMemcpyDtoHAsync)(void *dst, gpuos__CUdeviceptr src, size_t bytes,
                                         gpuos__CUstream stream);                          /* _v2 */
    gpuos__CUresult (*cuMemsetD8Async)(gpuos__CUdeviceptr dst, unsigned char value, size_t n,
                                       gpuos__CUstream stream); /* _v2 */
    gpuos__CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *blocks, gpuos__CUfunction f, int block_size,
                                                                  size_t dynamic_smem);
} gpuos__cuda_api;

/* NVRTC entry points. */
typedef struct gpuos__nvrtc_api {
    int version_major, version_minor;
    const char *(*nvrtcGetErrorString)(gpuos__nvrtcResult result);
    gpuos__nvrtcResult (*nvrtcVersion)(int *major, int *minor);
    gpuos__nvrtcResult (*nvrtcCreateProgram)(gpuos__nvrtcProgram *prog, const char *src, const char *name,
                                             int num_headers, const char *const *headers,
                                             const char *const *include_names);
    gpuos__nvrtcResult (*nvrtcDestroyProgram)(gpuos__nvrtcProgram *prog);
    gpuos__nvrtcResult (*nvrtcCompileProgram)(gpuos__nvrtcProgram prog, int num_options,
                                              const char *const *options);
    gpuos__nvrtcResult (*nvrtcGetProgramLogSize)(gpuos__nvrtcProgram prog, size_t *size);
    gpuos__nvrtcResult (*nvrtcGetProgramLog)(gpuos__nvrtcProgram prog, char *log);
    gpuos__nvrtcResult (*nvrtcGetPTXSize)(gpuos__nvrtcProgram prog, size_t *size);
    gpuos__nvrtcResult (*nvrtcGetPTX)(gpuos__nvrtcProgram prog, char *ptx);
    gpuos__nvrtcResult (*nvrtcGetCUBINSize)(gpuos__nvrtcProgram prog, size_t *size); /* may be NULL */
    gpuos__nvrtcResult (*nvrtcGetCUBIN)(gpuos__nvrtcProgram prog, char *cubin);      /* may be NULL */
} gpuos__nvrtc_api;

/* nvJitLink entry points (input types: 1 cubin, 2 PTX, 3 LTO-IR, 4 fatbin). */
#define GPUOS__NVJITLINK_INPUT_CUBIN 1
#define GPUOS__NVJITLINK_INPUT_PTX 2
typedef struct gpuos__nvjitlink_api {
    gpuos__nvJitLinkResult (*nvJitLinkCreate)(gpuos__nvJitLinkHandle *handle, uint32_t num_options,
                                              const char **options);
    gpuos__nvJitLinkResult (*nvJitLinkDestroy)(gpuos__nvJitLinkHandle *handle);
    gpuos__nvJitLinkResult (*nvJitLinkAddData)(gpuos__nvJitLinkHandle handle, int input_type, const void *data,
                                               size_t size, const char *name);
    gpuos__nvJitLinkResult (*nvJitLinkComplete)(gpuos__nvJitLinkHandle handle);
    gpuos__nvJitLinkResult (*nvJitLinkGetLinkedCubinSize)(gpuos__nvJitLinkHandle handle, size_t *size);
    gpuos__nvJitLinkResult (*nvJitLinkGetLinkedCubin)(gpuos__nvJitLinkHandle handle, void *cubin);
    gpuos__nvJitLinkResult (*nvJitLinkGetErrorLogSize)(gpuos__nvJitLinkHandle handle, size_t *size);
    gpuos__nvJitLinkResult (*nvJitLinkGetErrorLog)(gpuos__nvJitLinkHandle handle, char *log);
    gpuos__nvJitLinkResult (*nvJitLinkGetInfoLogSize)(gpuos__nvJitLinkHandle handle, size_t *size);
    gpuos__nvJitLinkResult (*nvJitLinkGetInfoLog)(gpuos__nvJitLinkHandle handle, char *log);
} gpuos__nvjitlink_api;

/* Load the library once per process (thread safe); NULL when it cannot be loaded, with
   the reason in why (why_size bytes). The tables stay valid for the process' life. */
const gpuos__cuda_api *gpuos__cuda_load(char *why, size_t why_size);
const gpuos__nvrtc_api *gpuos__nvrtc_load(char *why, size_t why_size);
const gpuos__nvjitlink_api *gpuos__nvjitlink_load(char *why, size_t why_size);

/* Compiles source with NVRTC. On success *code (malloc'd; cubin when want_cubin, else
   PTX with its terminating NUL counted in *code_size) and *log (malloc'd, may be "").
   GPUOS_ERR_COMPILE with the log in *log; GPUOS_ERR_UNSUPPORTED without NVRTC.
   The caller frees *code and *log. Error detail goes to ctx (NULL: process-wide). */
gpuos_status gpuos__nvrtc_compile(const gpuos_context *ctx, const char *source, const char *name,
                                  const char *const *options, int n_options, int want_cubin, void **code,
                                  size_t *code_size, char **log);
/* Links cubin/PTX images into one cubin with nvJitLink (options such as "-arch=sm_90").
   The caller frees *cubin and *log. */
gpuos_status gpuos__nvjitlink_link(const gpuos_context *ctx, const char *const *options, int n_options,
                                   const void *const *images, const size_t *sizes, const int *input_types,
                                   int n_images, void **cubin, size_t *cubin_size, char **log);
/* The generated device source, joined (malloc'd); NULL when out of memory. */
char *gpuos__device_source_joined(size_t *length);

/* ---------------------------------------------------------------- plan.c */
/* GPUOS_OK for a valid priority, else GPUOS_ERR_INVALID_ARGUMENT ("<fn>: <what> is ..."). */
gpuos_status gpuos__check_priority(const gpuos_context *ctx, const char *fn, const char *what, int priority);
/* The priority a submission runs at: a deadline makes it GPUOS_PRIORITY_HIGH. */
int gpuos__urgency(int priority, uint32_t deadline_us);
/* CLOCK_MONOTONIC in ns; the absolute deadline deadline_us from now (0: none). */
uint64_t gpuos__now_ns(void);
uint64_t gpuos__deadline_at(uint32_t deadline_us);
/* Counts a finished job's deadline, if it has one not counted yet (ctx->mu held). */
void gpuos__deadline_count_locked(gpuos_context *ctx, gpuos__job *job, uint64_t now_ns);
/* Validates task and builds its job, not queued (push it, or gpuos__job_free it). */
gpuos_status gpuos__plan_task(gpuos_context *ctx, const gpuos_task *task, gpuos__job **out);

/* ---------------------------------------------------------------- rtops.c */
gpuos_status gpuos__rt_lookup(gpuos_context *ctx, gpuos_op op, gpuos__rt_version **out); /* retained */
void gpuos__rt_release(gpuos_context *ctx, gpuos__rt_version *v);
void gpuos__rt_release_locked(gpuos__rt_version *v);
void gpuos__rt_retain_locked(gpuos__rt_version *v);
void gpuos__rt_template_locked(gpuos__job *job);
void gpuos__rt_fini(gpuos_context *ctx);
void gpuos__rt_host_run(const gpuos__job *job, int64_t begin, int64_t end);
char *gpuos__rt_device_code(const gpuos__rt_version *v, uint64_t hash);
/* cuda_backend.c: compiles v (disk cache), links every live version into a new module
   generation and swaps it in at a task boundary (ctx->rt_mu held, ctx->mu not). */
gpuos_status gpuos__cuda_rt_install(gpuos_context *ctx, gpuos__rt_version *v);

#endif /* GPUOS_RUNTIME_H */
