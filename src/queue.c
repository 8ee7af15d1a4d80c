/* queue.c - the context's bounded task queue, sequence numbers, fences and waits.

   A ring of job pointers guarded by ctx->mu, in sequence order. The ring starts small
   and doubles up to the configured capacity (so a capacity of 1 << 24 costs nothing
   until used). Submitters wait on cv_room for at most submit_timeout_ms; the dispatcher
   waits on cv_work; fences wait on cv_done. All condition variables use CLOCK_MONOTONIC
   so that a wall-clock change cannot stretch or cut a timeout.

   Priorities: a job that asks for high priority (gpuos_task.priority) runs in lane 1
   when it need not wait for earlier normal work (no memory conflict with an unfinished
   lane-0 job); lane 1 is taken first. A job stays in the ring until it and every older
   one finished, so "every job up to seq has finished" is ctx->completed >= seq, and a
   lane-1 job that finished early is found by its place in the ring (seqs are
   contiguous from the head). On the host executor the dispatcher takes the oldest
   lane-1 job when there is one, else the oldest queued job; on the GPU each lane has its
   own device queue (cuda_backend.c). */
#include "gpuos_runtime.h"

#include <errno.h>  /* ETIMEDOUT, EINTR */
#include <sched.h>  /* sched_yield */
#include <stdlib.h> /* malloc, calloc, free */
#include <string.h> /* memset */

#define QUEUE_INITIAL_SLOTS 256u
#define QUEUE_FREE_JOBS 4096 /* recycled jobs kept per context (thousands are in flight on a GPU) */

/* ---------------------------------------------------------------- time */
void gpuos__deadline(uint32_t timeout_ms, struct timespec *ts) {
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += (time_t)(timeout_ms / 1000u);
    ts->tv_nsec += (long)(timeout_ms % 1000u) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec += 1;
        ts->tv_nsec -= 1000000000L;
    }
}

int gpuos__cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, const struct timespec *deadline) {
    int rc;
    do rc = pthread_cond_timedwait(cv, mu, deadline);
    while (rc == EINTR);
    return rc == ETIMEDOUT ? ETIMEDOUT : 0;
}

int gpuos__cond_init_monotonic(pthread_cond_t *cv) {
    pthread_condattr_t attr;
    int ok;
    if (pthread_condattr_init(&attr) != 0) return 0;
    ok = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 && pthread_cond_init(cv, &attr) == 0;
    pthread_condattr_destroy(&attr);
    return ok;
}

/* ---------------------------------------------------------------- ring */
int gpuos__queue_init(gpuos_context *ctx) {
    ctx->ring_size = ctx->capacity < QUEUE_INITIAL_SLOTS ? ctx->capacity : QUEUE_INITIAL_SLOTS;
    ctx->ring = (gpuos__job **)calloc(ctx->ring_size, sizeof *ctx->ring);
    ctx->ring_head = ctx->ring_count = 0;
    return ctx->ring != NULL;
}

/* Doubles the ring (ctx->mu held). 0 when out of memory. */
static int queue_grow(gpuos_context *ctx) {
    uint32_t size = ctx->ring_size * 2u, i;
    gpuos__job **ring = (gpuos__job **)malloc((size_t)size * sizeof *ring);
    if (!ring) return 0;
    for (i = 0; i < ctx->ring_count; i++) ring[i] = ctx->ring[(ctx->ring_head + i) & (ctx->ring_size - 1u)];
    free(ctx->ring);
    ctx->ring = ring;
    ctx->ring_size = size;
    ctx->ring_head = 0;
    return 1;
}

/* Host executor: storage i of job a (its st, then its xst) and whether a writes it: its
   output's storage, st[0], any of a graph launch job's xst, and for a matmul with a fused
   layernorm prologue (which also writes the layernorm's output) any of its st. */
static gpuos__storage *queue_job_st(const gpuos__job *a, int i, int *w) {
    *w = i == 0 || i >= a->n_st || (a->kind == GPUOS__KIND_MATMUL && a->plan.matmul.pro);
    return i < a->n_st ? a->st[i] : a->xst[i - a->n_st];
}
/* Host executor: counts an unfinished lane-0 job in its storages' host_w0 and host_u0 (d = 1),
   or takes it out (d = -1; ctx->mu held). */
static void queue_host_count(gpuos__job *job, int d) {
    int i, w;
    for (i = 0; i < job->n_st + job->n_xst; i++) {
        gpuos__storage *s = queue_job_st(job, i, &w);
        s->host_u0 += (uint32_t)d;
        if (w) s->host_w0 += (uint32_t)d;
    }
    job->host_c0 = d > 0;
}

/* Drops a job's storage references and recycles it (ctx->mu held). */
static void queue_retire_locked(gpuos_context *ctx, gpuos__job *job) {
    int i;
    if (job->host_c0) queue_host_count(job, -1); /* (one that never ran) */
    for (i = 0; i < job->n_st; i++) (void)gpuos__storage_release_locked(job->st[i]); /* ctx->refs > 0 here */
    job->n_st = 0;
    if (job->rt) {
        if (job->rt_tmpl) job->rt->tmpl_refs--;
        gpuos__rt_release_locked(job->rt);
    }
    job->rt = NULL;
    job->rt_tmpl = 0;
    for (i = 0; i < job->n_xrt; i++) gpuos__rt_release_locked(job->xrt[i]);
    free(job->xrt);
    job->xrt = NULL;
    job->n_xrt = 0;
    for (i = 0; i < job->n_xst; i++) (void)gpuos__storage_release_locked(job->xst[i]);
    free(job->xst);
    job->xst = NULL;
    job->n_xst = 0;
    if (ctx->ring && ctx->n_free_jobs < QUEUE_FREE_JOBS) { /* no recycling after gpuos__queue_fini */
        job->next_free = ctx->free_jobs;
        ctx->free_jobs = job;
        ctx->n_free_jobs++;
    } else {
        free(job);
    }
}

void gpuos__queue_fini(gpuos_context *ctx) {
    gpuos__job *job;
    pthread_mutex_lock(&ctx->mu);
    while (ctx->ring_count > 0) {
        job = ctx->ring[ctx->ring_head];
        ctx->ring_head = (ctx->ring_head + 1u) & (ctx->ring_size - 1u);
        ctx->ring_count--;
        queue_retire_locked(ctx, job);
    }
    ctx->cuda_sent = 0; /* the GPU's reaper may still run (gpuos__cuda_close stops it next): it must see no jobs */
    while ((job = ctx->free_jobs) != NULL) {
        ctx->free_jobs = job->next_free;
        free(job);
    }
    ctx->n_free_jobs = 0;
    free(ctx->tcache);
    ctx->tcache = NULL;
    free(ctx->ring);
    ctx->ring = NULL;
    ctx->ring_size = 0;
    pthread_mutex_unlock(&ctx->mu);
}

gpuos__job *gpuos__job_alloc(gpuos_context *ctx) {
    gpuos__job *job;
    pthread_mutex_lock(&ctx->mu);
    job = ctx->free_jobs;
    if (job) {
        ctx->free_jobs = job->next_free;
        ctx->n_free_jobs--;
    }
    pthread_mutex_unlock(&ctx->mu);
    if (!job) job = (gpuos__job *)malloc(sizeof *job);
    if (job) memset(job, 0, sizeof *job);
    return job;
}

void gpuos__job_free(gpuos_context *ctx, gpuos__job *job) {
    if (!job) return;
    pthread_mutex_lock(&ctx->mu);
    job->n_st = 0; /* no references taken yet */
    job->n_xst = 0;
    queue_retire_locked(ctx, job);
    pthread_mutex_unlock(&ctx->mu);
}

/* ---------------------------------------------------------------- submitter side */
/* Queues one job (ctx->mu held; may wait for room, releasing it). On error the job is
   retired (freed) and nothing of it is queued. */
gpuos_status gpuos__queue_wait_room_locked(gpuos_context *ctx) {
    gpuos_status st = GPUOS_OK;
    if (ctx->ring_count >= ctx->capacity && ctx->cfg.submit_timeout_ms == 0 && !ctx->paused) {
        /* "Do not wait" still lets a dispatcher that shares our CPU drain the queue once:
           without it, a submitter that never blocks can starve it for a whole time slice.
           (Woken first: a batch signals the host workers only now and then.) */
        pthread_cond_broadcast(&ctx->cv_work);
        pthread_mutex_unlock(&ctx->mu);
        sched_yield();
        pthread_mutex_lock(&ctx->mu);
    }
    if (ctx->destroyed) {
        st = gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT, "gpuos_submit: the context was destroyed");
        goto fail;
    }
    if (ctx->sticky != GPUOS_OK) {
        st = gpuos__set_error(ctx, ctx->sticky, "gpuos_submit: the context has failed earlier (%s)",
                              ctx->sticky_msg[0] ? ctx->sticky_msg : gpuos__status_name(ctx->sticky));
        goto fail;
    }
    if (ctx->ring_count >= ctx->capacity) {
        if (ctx->cfg.submit_timeout_ms > 0) {
            struct timespec deadline;
            if (ctx->cuda && ctx->cuda_sent < ctx->ring_count) (void)gpuos__cuda_pump_locked(ctx);
            /* what is queued runs meanwhile: a batch (a graph launch's tasks) signals the host
               workers only once it is all in, so a batch longer than the queue waited for room
               that no worker was told to make */
            pthread_cond_broadcast(&ctx->cv_work);
            gpuos__deadline(ctx->cfg.submit_timeout_ms, &deadline);
            while (ctx->ring_count >= ctx->capacity && !ctx->destroyed && ctx->sticky == GPUOS_OK)
                if (gpuos__cond_wait_until(&ctx->cv_room, &ctx->mu, &deadline) == ETIMEDOUT) break;
            if (ctx->destroyed || ctx->sticky != GPUOS_OK) {
                st = gpuos__set_error(ctx, ctx->destroyed ? GPUOS_ERR_INVALID_ARGUMENT : ctx->sticky,
                                      "gpuos_submit: the context failed or was destroyed while waiting for room");
                goto fail;
            }
        }
        if (ctx->ring_count >= ctx->capacity) {
            st = gpuos__set_error(ctx, GPUOS_ERR_QUEUE_FULL,
                                  "gpuos_submit: the queue stayed full (%u tasks) for submit_timeout_ms = %u ms%s; "
                                  "the task was not queued",
                                  (unsigned)ctx->capacity, (unsigned)ctx->cfg.submit_timeout_ms,
                                  ctx->paused ? " (the executor is paused by gpuos_debug_pause)" : "");
            goto fail;
        }
    }
    if (ctx->ring_count == ctx->ring_size && !queue_grow(ctx))
        st = gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "gpuos_submit: no memory to grow the queue to %u tasks",
                              (unsigned)(ctx->ring_size * 2u));
fail:
    return st;
}

/* The job i places behind the ring's head (ctx->mu held). */
static gpuos__job *queue_at(const gpuos_context *ctx, uint32_t i) {
    return ctx->ring[(ctx->ring_head + i) & (ctx->ring_size - 1u)];
}

/* Host executor: does job a write memory that job b uses (storage ranges; what a job writes:
   queue_job_st)? */
static int queue_st_overlap(const gpuos__storage *x, const gpuos__storage *y) {
    return x == y || (x->data < y->data + y->bytes && y->data < x->data + x->bytes);
}
static int queue_writes_into(const gpuos__job *a, const gpuos__job *b) {
    int i, j, w, r;
    for (i = 0; i < a->n_st + a->n_xst; i++) {
        const gpuos__storage *x = queue_job_st(a, i, &w);
        if (!w) continue; /* an input */
        for (j = 0; j < b->n_st + b->n_xst; j++)
            if (queue_st_overlap(x, queue_job_st(b, j, &r))) return 1;
    }
    return 0;
}
/* Either job writes memory the other uses: they keep program order. */
static int queue_conflict(const gpuos__job *a, const gpuos__job *b) {
    return queue_writes_into(a, b) || queue_writes_into(b, a);
}

/* Host executor: lane 1 for a high-priority job that conflicts with no unfinished
   lane-0 job (ctx->mu held). While no two storages overlap (none is wrapped: distinct ones
   the library allocated are disjoint), its storages' counts of such jobs say it at once;
   else every unfinished job is looked at (with a backlog of 4096 normal tasks that cost each
   urgent submission 62-227 us, a soak test's find). */
static int queue_host_lane(const gpuos_context *ctx, const gpuos__job *job) {
    uint32_t i;
    int k, w;
    if (job->prio <= 0) return 0;
    if (GPUOS__ALOAD(INT, &ctx->host_wraps, GPUOS__RELAXED) == 0) {
        for (k = 0; k < job->n_st + job->n_xst; k++) {
            const gpuos__storage *s = queue_job_st(job, k, &w);
            if (s->host_w0 > 0 || (w && s->host_u0 > 0)) return 0;
        }
        return 1;
    }
    for (i = 0; i < ctx->ring_count; i++) {
        const gpuos__job *o = queue_at(ctx, i);
        if (o->lane == 0 && o->state != GPUOS__JOB_DONE && queue_conflict(o, job)) return 0;
    }
    return 1;
}

/* ctx->mu held, room there: the job joins the ring (storage references, sequence number). */
static void queue_insert_locked(gpuos_context *ctx, gpuos__job *job, uint64_t *seq) {
    int i;
    job->state = GPUOS__JOB_QUEUED;
    if (!ctx->cuda) { /* the CUDA backend picks the lane when it encodes the job */
        /* a batch's lane 1 is checked again: work queued while the batch waited for room
           may conflict with it (then it and, by the cap, the rest of the batch go to lane 0;
           the dispatcher finishes lane-1 jobs before it takes lane-0 ones, so the earlier
           part still finishes first) */
        if (!(job->lane_fixed && job->lane == 0)) job->lane = queue_host_lane(ctx, job);
        ctx->host_queued++;
        if (job->lane && ctx->host_hi == 0) ctx->host_hi_low = ctx->submitted + 1; /* (its seq, below) */
        if (job->lane) ctx->host_hi++;
        if (job->lane && job->deadline_ns) ctx->host_dl++;
        if (job->lane) job->host_c0 = 0;
        else queue_host_count(job, 1);
    } else {
        job->host_c0 = 0;
    }
    if (job->dl_open) ctx->dl_open++;
    job->seq = ++ctx->submitted;
    for (i = 0; i < job->n_st; i++) {
        gpuos__storage_retain_locked(job->st[i]);
        job->st[i]->last_use = job->seq;
    }
    for (i = 0; i < job->n_xst; i++) {
        gpuos__storage_retain_locked(job->xst[i]);
        job->xst[i]->last_use = job->seq;
    }
    ctx->ring[(ctx->ring_head + ctx->ring_count) & (ctx->ring_size - 1u)] = job;
    ctx->ring_count++;
    if (seq) *seq = job->seq;
}

/* Queues one job (ctx->mu held; may wait for room, releasing it). On error the job is
   retired (freed) and nothing of it is queued. */
static gpuos_status queue_push_locked(gpuos_context *ctx, gpuos__job *job, uint64_t *seq, int pump) {
    uint64_t t0 = GPUOS__PH_NOW();
    gpuos_status st = gpuos__queue_wait_room_locked(ctx);
    if (st != GPUOS_OK) {
        job->n_st = 0; /* no references were taken */
        job->n_xst = 0;
        queue_retire_locked(ctx, job);
        return st;
    }
    queue_insert_locked(ctx, job, seq);
    GPUOS__PH(GPUOS__PH_INSERT, t0);
    if (ctx->cuda && pump) {
        /* The job is queued (it has its sequence number); a failure to hand it to the
           device now is retried by the next submission, wait or the reaper. */
        t0 = GPUOS__PH_NOW();
        (void)gpuos__cuda_pump_locked(ctx);
        GPUOS__PH(GPUOS__PH_ENCODE, t0);
        /* a repeat's plan left in its entry (tcache_job_locked): not needed once encoded;
           fetched now if the job stays queued unsent (the entry may change later) */
        if (job->plan_src) {
            if (job->dseq) job->plan_src = NULL;
            else gpuos__job_plan_fetch(job);
        }
        /* Every reap_every submissions the submitter retires what finished itself: left to the
           reaper thread (every 200 us), a fast submitter waited for its lock while it retired
           hundreds of jobs written by this thread's cache. */
        if (ctx->reap_every && ++ctx->reap_count >= ctx->reap_every) {
            ctx->reap_count = 0;
            (void)gpuos__cuda_reap_locked(ctx);
        }
    }
    return GPUOS_OK;
}

void gpuos__queue_push_sent_locked(gpuos_context *ctx, gpuos__job *job, uint64_t *seq) {
    queue_insert_locked(ctx, job, seq);
    ctx->cuda_sent++; /* every earlier job was sent: the caller pumped them first */
    pthread_cond_signal(&ctx->cv_work);
}

/* Host executor: the lane of a batch's jobs [from, n) as one: 1 when every one of them
   could take it (queue_host_lane) and cap allows, else 0. A graph launch's tasks so stay in
   one lane, so that its last task finishes after every other (its seq stands for the
   launch), as the GPU's launch does; a launch split between lanes let a later node that
   conflicts with nothing run ahead of an earlier one that waits for lane-0 work. (The GPU's
   is decided in gpuos__queue_push_batch too: gpuos__cuda_batch_lane_locked.) */
static void queue_host_batch_lane(const gpuos_context *ctx, gpuos__job *const *jobs, int from, int n, int cap) {
    int i, lane = cap;
    for (i = from; i < n && lane; i++) lane = queue_host_lane(ctx, jobs[i]);
    for (i = from; i < n; i++) jobs[i]->lane = lane, jobs[i]->lane_fixed = 1;
}

/* Queues n jobs in order under one lock (consecutive sequence numbers unless the queue
   fills), handing them to the device once; *n_queued says how many went in. On an error
   the remaining jobs are retired (freed). */
gpuos_status gpuos__queue_push_batch(gpuos_context *ctx, gpuos__job *const *jobs, int n, uint64_t *seq, int *n_queued) {
    gpuos_status st = GPUOS_OK;
    int i;
    uint64_t first = 0;
    pthread_mutex_lock(&ctx->mu);
    for (i = 0; i < n; i++) jobs[i]->batch_left = n - 1 - i, jobs[i]->lane_fixed = 0, jobs[i]->batch_id = 0;
    if (!ctx->cuda) {
        queue_host_batch_lane(ctx, jobs, 0, n, 1);
    } else if (n > 1 && jobs[0]->prio > 0) {
        /* one lane for the batch on the GPU too: lane 1 only if all of it fits the queue now
           (no wait for room, so no other thread's task comes between its tasks; a lane-1
           batch's tasks are then encoded one after another, against complete logs) */
        const int lane = ctx->ring_count + (uint32_t)n <= ctx->capacity && gpuos__cuda_batch_lane_locked(ctx, jobs, n);
        for (i = 0; i < n; i++) jobs[i]->lane = lane, jobs[i]->lane_fixed = 1;
    }
    /* the ring grown for the whole batch first (up to the capacity), so that no memory for it
       refuses the batch whole rather than after the part that fitted (a fault-injection audit:
       256 of a launch's 300 tasks queued, and a message blaming a destroyed context) */
    while (ctx->ring_size < ctx->capacity && ctx->ring_count + (uint32_t)n > ctx->ring_size)
        if (!queue_grow(ctx)) {
            st = gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "gpuos_submit: no memory to grow the queue to %u tasks "
                                  "for a batch of %d; nothing of it was queued", (unsigned)(ctx->ring_size * 2u), n);
            for (i = 0; i < n; i++) {
                jobs[i]->n_st = jobs[i]->n_xst = 0; /* no references were taken */
                queue_retire_locked(ctx, jobs[i]);
            }
            *n_queued = 0;
            pthread_mutex_unlock(&ctx->mu);
            return st;
        }
    for (i = 0; i < n; i++) {
        const uint64_t before = ctx->submitted;
        if (n > 1) jobs[i]->batch_id = first; /* (the first task's own is set below) */
        st = queue_push_locked(ctx, jobs[i], seq, 0);
        if (st != GPUOS_OK) break;
        if (i == 0 && n > 1) first = jobs[0]->batch_id = jobs[0]->seq;
        /* others queued work while this one waited for room (the lock was let go): the
           rest of the batch is placed again against it, never in a higher lane than the
           part already queued (it would run ahead of it) */
        if (!ctx->cuda && ctx->submitted != before + 1 && i + 1 < n)
            queue_host_batch_lane(ctx, jobs, i + 1, n, jobs[i]->lane);
    }
    *n_queued = i;
    if (st != GPUOS_OK)
        for (i = i + 1; i < n; i++) {
            jobs[i]->n_st = jobs[i]->n_xst = 0; /* no references were taken */
            queue_retire_locked(ctx, jobs[i]);
        }
    if (ctx->cuda) (void)gpuos__cuda_pump_locked(ctx);
    pthread_cond_signal(&ctx->cv_work);
    pthread_mutex_unlock(&ctx->mu);
    return st;
}

#if defined(GPUOS__PROF_HOST) && defined(__x86_64__)
uint64_t gpuos__prof_host[GPUOS__PH_N];
#endif

/* ---------------------------------------------------------------- repeated submissions */
/* Programs submit the same task again and again (a loop's x = x + s, a frame's update of
   the same tensors). Planning it (validation, broadcasting, byte ranges, aliasing) is most
   of a submission's host cost, and its result depends only on the task's fields and its
   tensors, which never change after creation (views are new tensors). So the job
   gpuos__plan_task built is kept in a small direct-mapped table, keyed by every field of
   the task but its priority and deadline; a handle counts as the same tensor only with
   the same context and uid (an address reused by a new tensor has a new uid). A repeat
   copies the job instead of planning it (run-time operators excepted: their versions
   change). */
/* ctx->tcache_n entries (GPUOS__TCACHE) in sets of QUEUE_TCACHE_WAYS (256 tasks repeated in
   turn in a table of 1024: 4 ways left 5-15% of them without an entry in every round) */
#define QUEUE_TCACHE_WAYS 8u
struct gpuos__tcache {
    int used;
    uint64_t stamp;                       /* when it was last used: the set's oldest goes first (64-bit: never wraps) */
    uint32_t ver;                         /* bumped when the entry takes another task (gpuos__job.rep_ver) */
    gpuos_task task;                      /* the key (priority and deadline ignored) */
    uint64_t uid[1 + GPUOS_MAX_INPUTS];   /* out's and the inputs' uids (0: none) */
    gpuos__job job;                       /* as gpuos__plan_task built it, before queueing */
};

void gpuos__job_plan_fetch(gpuos__job *job) {
    const struct gpuos__tcache *e = (const struct gpuos__tcache *)job->plan_src;
    memcpy(&job->plan, &e->job.plan, sizeof job->plan);
    job->plan_src = NULL;
}

static int tcache_ok(const gpuos_task *t) {
    return t->struct_size == sizeof(gpuos_task) && (unsigned)t->op < (unsigned)GPUOS_OP_COUNT && t->out &&
           (t->priority == GPUOS_PRIORITY_NORMAL || t->priority == GPUOS_PRIORITY_HIGH);
}

static uint32_t tcache_slot(const gpuos_context *ctx, const gpuos_task *t) {
    /* a multiply after each handle: an in-place task's out and in[0] are one pointer */
    uint64_t h = ((uint64_t)t->op + 1) * 0x9e3779b97f4a7c15ull;
    int k;
    h = (h ^ (uint64_t)(uintptr_t)t->out) * 0xff51afd7ed558ccdull;
    for (k = 0; k < GPUOS_MAX_INPUTS; k++) h = (h ^ (h >> 31) ^ (uint64_t)(uintptr_t)t->in[k]) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
    return ((uint32_t)(h ^ (h >> 32)) & (ctx->tcache_n / QUEUE_TCACHE_WAYS - 1u)) * QUEUE_TCACHE_WAYS;
}

static int tcache_match(const gpuos_context *ctx, const struct gpuos__tcache *e, const gpuos_task *t) {
    const gpuos_task *k = &e->task;
    int i;
    if (!e->used || k->op != t->op || k->out != t->out || memcmp(k->in, t->in, sizeof t->in) != 0 ||
        memcmp(k->scalar, t->scalar, sizeof t->scalar) != 0 || k->axes != t->axes || k->axis != t->axis ||
        k->keepdim != t->keepdim || k->correction != t->correction)
        return 0;
    if (t->out->ctx != ctx || t->out->uid != e->uid[0]) return 0;
    for (i = 0; i < GPUOS_MAX_INPUTS; i++)
        if (t->in[i] && (t->in[i]->ctx != ctx || t->in[i]->uid != e->uid[1 + i])) return 0;
    return 1;
}

/* The job of a recent task identical to task (ctx->mu held), or NULL: none in the repeat
   table, or no memory for a job (the full path reports that). */
static gpuos__job *tcache_job_locked(gpuos_context *ctx, const gpuos_task *task) {
    struct gpuos__tcache *e = NULL;
    gpuos__job *job;
    if (!ctx->tcache) return NULL;
    {
        struct gpuos__tcache *set = &ctx->tcache[tcache_slot(ctx, task)];
        uint32_t w;
        for (w = 0; w < QUEUE_TCACHE_WAYS && !e; w++)
            if (tcache_match(ctx, &set[w], task)) e = &set[w];
    }
    if (!e) return NULL;
    e->stamp = ++ctx->tcache_clock;
    job = ctx->free_jobs;
    if (job) {
        ctx->free_jobs = job->next_free;
        ctx->n_free_jobs--;
    } else if (!(job = (gpuos__job *)malloc(sizeof *job))) {
        return NULL;
    }
    if (ctx->cuda && ctx->ring_count < ctx->capacity) {
        /* the GPU's encoder repeats the memo's descriptor without the plan: it is fetched only
           for a full encoding (gpuos__job_plan_fetch). The entry cannot change before: the
           caller queues the job under this lock hold (room: queue_push_locked does not let
           the lock go) and fetches the plan of a job left unsent (queue_push_locked) */
        memcpy(job, &e->job, offsetof(gpuos__job, plan));
        job->plan_src = e;
    } else {
        memcpy(job, &e->job, sizeof *job);
    }
    job->rep_key = e;
    job->rep_ver = e->ver;
    job->rep_slot = (uint32_t)(e - ctx->tcache);
    job->prio = gpuos__urgency(task->priority, task->deadline_us);
    job->deadline_ns = gpuos__deadline_at(task->deadline_us);
    job->dl_open = task->deadline_us != 0;
    return job;
}

/* Several threads repeating tasks at once: a thread that finds ctx->mu taken leaves its task in
   ctx->combine (a list, pushed with a compare-and-swap) and the thread that holds or next takes
   the lock queues it with its own (flat combining), while the first spins on its request's done.
   Each handed the lock to the other for every task before, and moved the queue's state between
   their caches with it: two threads queued fewer tasks than one (H200: 1.23 M tasks/s against
   3.17 M). A thread has one request out at a time, so its own tasks keep their order; tasks of
   threads submitting at once have none between them, as before. A request is done when its
   task is queued (r = 1, st its status), found not to repeat (r = 0: the caller plans it), or
   handed back because the queue is full (r = -1: the caller queues it itself, waiting for
   room within its own submit_timeout_ms; a combining thread never waits for room on others'
   behalf, which made a submission wait once per request it carried, and kept their owners
   spinning on a lock it had let go: a helper's review). */
struct gpuos__combine {
    struct gpuos__combine *next;
    const gpuos_task *task;
    uint64_t *seq;
    gpuos_status st;
    int r;
    int done; /* atomic: set last, with release (the request lives on its thread's stack) */
};

/* Queues one repeated task (ctx->mu held): 1 and *st, or 0 when it does not repeat. */
static int queue_repeat_locked(gpuos_context *ctx, const gpuos_task *task, uint64_t *seq, gpuos_status *st) {
    uint64_t t1 = GPUOS__PH_NOW();
    gpuos__job *job = tcache_job_locked(ctx, task);
    if (!job) return 0;
    GPUOS__PH(GPUOS__PH_REPEAT, t1);
    *st = queue_push_locked(ctx, job, seq, 1); /* (may let the lock go while it waits for room) */
    return 1;
}

/* Queues the requests waiting in ctx->combine, oldest first (ctx->mu held); returns how many
   were queued. A few rounds at most: a thread that keeps finding requests would otherwise
   hold the lock for as long as others submit. */
static int queue_combine_locked(gpuos_context *ctx) {
    int rounds, queued = 0;
    for (rounds = 0; rounds < 4; rounds++) {
        struct gpuos__combine *l = GPUOS__AXCHG_PTR(struct gpuos__combine *, &ctx->combine, (struct gpuos__combine *)NULL, GPUOS__ACQUIRE);
        struct gpuos__combine *fifo = NULL;
        if (!l) break;
        while (l) { /* pushed newest first */
            struct gpuos__combine *nx = l->next;
            l->next = fifo;
            fifo = l;
            l = nx;
        }
        while (fifo) {
            struct gpuos__combine *nx = fifo->next; /* (read before done: then it may be gone) */
            if (ctx->ring_count >= ctx->capacity) {
                fifo->r = -1; /* full: its owner waits for room itself */
            } else {
                fifo->r = queue_repeat_locked(ctx, fifo->task, fifo->seq, &fifo->st); /* (no wait: room) */
                queued += fifo->r && fifo->st == GPUOS_OK;
            }
            GPUOS__ASTORE(&fifo->done, 1, GPUOS__RELEASE);
            fifo = nx;
        }
    }
    return queued;
}

int gpuos__queue_submit_repeat(gpuos_context *ctx, const gpuos_task *task, uint64_t *seq, gpuos_status *st) {
    struct gpuos__combine q;
    uint64_t t0 = GPUOS__PH_NOW(), t1;
    int r, queued, spins = 0;
    if (!tcache_ok(task)) return 0;
    if (pthread_mutex_trylock(&ctx->mu) != 0) { /* taken: the task goes to the lock's holder */
        q.task = task, q.seq = seq, q.st = GPUOS_OK, q.r = 0, q.done = 0;
        q.next = GPUOS__ALOAD_PTR(struct gpuos__combine *, &ctx->combine, GPUOS__RELAXED);
        while (!GPUOS__ACAS_WEAK(&ctx->combine, &q.next, &q, GPUOS__RELEASE, GPUOS__RELAXED)) {
        }
        while (!GPUOS__ALOAD(INT, &q.done, GPUOS__ACQUIRE)) {
            /* the lock's holder may not combine (a wait, the reaper, a host worker): take it,
               after a while blocking, and queue what waits, this request among it (a combining
               thread holds the lock until its requests are done, so this returns with q done) */
            if (pthread_mutex_trylock(&ctx->mu) == 0 || (++spins > 200 && pthread_mutex_lock(&ctx->mu) == 0)) {
                queued = queue_combine_locked(ctx);
                if (queued) pthread_cond_signal(&ctx->cv_work);
                pthread_mutex_unlock(&ctx->mu);
                spins = 0;
                continue;
            }
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
            __builtin_ia32_pause();
#endif
        }
        if (q.r >= 0) {
            GPUOS__PH(GPUOS__PH_LOCK, t0);
            *st = q.st;
            return q.r;
        }
        gpuos__lock_spin(&ctx->mu); /* handed back (the queue was full): its own wait for room, below */
    }
    GPUOS__PH(GPUOS__PH_LOCK, t0);
    /* the lock held: its own task, then any waiting */
    r = queue_repeat_locked(ctx, task, seq, st);
    queued = r && *st == GPUOS_OK;
    if (GPUOS__ALOAD_PTR(struct gpuos__combine *, &ctx->combine, GPUOS__RELAXED)) queued += queue_combine_locked(ctx);
    t1 = GPUOS__PH_NOW();
    if (queued) pthread_cond_signal(&ctx->cv_work);
    pthread_mutex_unlock(&ctx->mu);
    GPUOS__PH(GPUOS__PH_UNLOCK, t1);
    return r;
}

/* Queues tasks[0..n) while each repeats a recent task, holding ctx->mu for up to
   QUEUE_MANY_HOLD of them at a time (between holds the host workers, which need the lock to
   take work and to retire it, and other threads get it); stops at the first that does not
   repeat, or at an error (*st). Returns how many it queued. */
#define QUEUE_MANY_HOLD 64
static int queue_submit_repeats(gpuos_context *ctx, const gpuos_task *tasks, int n, uint64_t *seqs, gpuos_status *st) {
    int i;
    *st = GPUOS_OK;
    if (n <= 0 || !tcache_ok(&tasks[0])) return 0;
    gpuos__lock_spin(&ctx->mu);
    for (i = 0; i < n; i++) {
        gpuos__job *job = tcache_ok(&tasks[i]) ? tcache_job_locked(ctx, &tasks[i]) : NULL;
        if (!job) break;
        *st = queue_push_locked(ctx, job, seqs ? &seqs[i] : NULL, 1); /* (frees the job on an error) */
        if (*st != GPUOS_OK) break;
        if (i % QUEUE_MANY_HOLD == QUEUE_MANY_HOLD - 1 && i + 1 < n) {
            pthread_cond_signal(&ctx->cv_work);
            pthread_mutex_unlock(&ctx->mu);
            gpuos__lock_spin(&ctx->mu);
        }
    }
    if (i > 0) pthread_cond_signal(&ctx->cv_work);
    pthread_mutex_unlock(&ctx->mu);
    return i;
}

gpuos_status gpuos_submit_many(gpuos_context *ctx, const gpuos_task *tasks, int n, uint64_t *seqs, int *n_queued) {
    gpuos_status s = GPUOS_OK;
    int i = 0;
    if (n_queued) *n_queued = 0;
    if (!ctx) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "gpuos_submit_many: ctx is NULL");
    if (n < 0) return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT, "gpuos_submit_many: n is %d", n);
    if (n > 0 && !tasks) return gpuos__set_error(ctx, GPUOS_ERR_NULL_POINTER, "gpuos_submit_many: tasks is NULL");
    while (i < n) {
        /* a run of repeated tasks under one lock, then one task the whole way (gpuos_submit) */
        i += queue_submit_repeats(ctx, tasks + i, n - i, seqs ? seqs + i : NULL, &s);
        if (s != GPUOS_OK || i == n) break;
        if ((s = gpuos_submit(ctx, &tasks[i], seqs ? &seqs[i] : NULL)) != GPUOS_OK) break;
        i++;
    }
    if (n_queued) *n_queued = i;
    if (s != GPUOS_OK) { /* the task's own detail (its status name off), said of the batch */
        char why[GPUOS__ERR_LEN];
        const char *w;
        gpuos__last_error_copy(ctx, why, sizeof why);
        w = gpuos__error_detail(why);
        gpuos__set_error(ctx, s, "gpuos_submit_many: task %d of %d not queued, nor those after it (the %d before it were): %s",
                         i, n, i, w);
    }
    return s;
}

gpuos_status gpuos__queue_push_task(gpuos_context *ctx, const gpuos_task *task, gpuos__job *job, uint64_t *seq) {
    gpuos_status st;
    gpuos__lock_spin(&ctx->mu);
    if (!job->rt && !job->xst && tcache_ok(task) && ctx->ring) {
        if (!ctx->tcache) ctx->tcache = (struct gpuos__tcache *)calloc(ctx->tcache_n, sizeof *ctx->tcache);
        if (ctx->tcache) { /* (without memory: no repeats, nothing else changes) */
            struct gpuos__tcache *set = &ctx->tcache[tcache_slot(ctx, task)], *e = set;
            uint32_t w;
            int i;
            for (w = 1; w < QUEUE_TCACHE_WAYS; w++) /* an empty way, else the least recently used */
                if (e->used && (!set[w].used || set[w].stamp < e->stamp)) e = &set[w];
            e->used = 1;
            e->stamp = ++ctx->tcache_clock;
            e->ver++;
            e->task = *task;
            e->uid[0] = task->out->uid;
            for (i = 0; i < GPUOS_MAX_INPUTS; i++) e->uid[1 + i] = task->in[i] ? task->in[i]->uid : 0;
            memcpy(&e->job, job, sizeof *job);
        }
    }
    st = queue_push_locked(ctx, job, seq, 1);
    if (st == GPUOS_OK) pthread_cond_signal(&ctx->cv_work);
    pthread_mutex_unlock(&ctx->mu);
    return st;
}

/* ---------------------------------------------------------------- dispatcher side */
/* Host executor, lane-1 jobs with deadlines queued: the queued lane-1 job with the earliest
   deadline (none: latest; ties: the older) among those that overlap no older queued lane-1
   job's memory where either writes (those keep program order). The oldest queued lane-1
   job always qualifies (the dispatcher runs one job at a time: everything older in lane 1
   finished). Looks at up to QUEUE_EDF_SCAN lane-1 jobs (ctx->mu held). */
#define QUEUE_EDF_SCAN 64
static gpuos__job *queue_pop_edf(gpuos_context *ctx) {
    gpuos__job *older[QUEUE_EDF_SCAN];
    gpuos__job *best = NULL;
    int n = 0, j;
    uint32_t i = 0;
    const uint64_t head_seq = ctx->ring_count ? queue_at(ctx, 0)->seq : 0;
    /* from the oldest queued lane-1 job on (a backlog of normal work ahead of it took 20 us a
       pick with 50000 queued) */
    if (ctx->host_hi_low > head_seq) i = (uint32_t)(ctx->host_hi_low - head_seq);
    for (; i < ctx->ring_count && n < QUEUE_EDF_SCAN; i++) {
        gpuos__job *job = queue_at(ctx, i);
        int ok = 1;
        if (job->lane != 1 || job->state != GPUOS__JOB_QUEUED) continue;
        if (n == 0) ctx->host_hi_low = job->seq;
        /* after every older one it conflicts with, and after its own batch's older tasks (a
           graph launch's seq is its last task: it must finish last) */
        for (j = 0; j < n && ok; j++) ok = !queue_conflict(older[j], job) && !(job->batch_id && older[j]->batch_id == job->batch_id);
        if (ok && (!best || (job->deadline_ns ? job->deadline_ns : UINT64_MAX) <
                                (best->deadline_ns ? best->deadline_ns : UINT64_MAX)))
            best = job;
        older[n++] = job;
    }
    return best;
}

void gpuos__deadline_count_locked(gpuos_context *ctx, gpuos__job *job, uint64_t now_ns) {
    if (!job->dl_open) return;
    job->dl_open = 0;
    ctx->dl_open--;
    if (now_ns > job->deadline_ns) ctx->dl_missed++;
    else ctx->dl_met++;
}

gpuos_status gpuos_deadline_stats(gpuos_context *ctx, uint64_t *met, uint64_t *missed) {
    if (!ctx) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "gpuos_deadline_stats: ctx is NULL");
    if (gpuos__check_alive(ctx, "gpuos_deadline_stats") != GPUOS_OK) return GPUOS_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->mu);
    if (ctx->cuda) (void)gpuos__cuda_reap_locked(ctx); /* what finished by now */
    if (met) *met = ctx->dl_met;
    if (missed) *missed = ctx->dl_missed;
    pthread_mutex_unlock(&ctx->mu);
    return GPUOS_OK;
}

/* The oldest queued job (older ones are running or finished; ctx->mu held, host_queued > 0). */
static gpuos__job *queue_oldest_queued_locked(const gpuos_context *ctx) {
    uint32_t i;
    for (i = 0; i < ctx->ring_count; i++)
        if (queue_at(ctx, i)->state == GPUOS__JOB_QUEUED) return queue_at(ctx, i);
    return NULL; /* (not reached while host_queued > 0) */
}
static void queue_mark_taken_locked(gpuos_context *ctx, gpuos__job *job) {
    job->state = GPUOS__JOB_TAKEN;
    ctx->host_queued--;
    ctx->host_running = 1;
}

/* The job to run next (ctx->mu held; host_queued > 0), not taken yet: lane 1 first, by
   deadline when some have one, else the oldest queued job. */
static gpuos__job *queue_next_locked(gpuos_context *ctx) {
    gpuos__job *job = NULL;
    uint32_t i = 0;
    if (ctx->host_dl > 0) return queue_pop_edf(ctx); /* lane 1 by deadline */
    if (ctx->host_hi > 0) { /* the oldest lane-1 job: lane-1 jobs are taken in order */
        const uint64_t head_seq = queue_at(ctx, 0)->seq;
        if (ctx->host_hi_next > head_seq) i = (uint32_t)(ctx->host_hi_next - head_seq);
        for (; i < ctx->ring_count; i++) {
            job = queue_at(ctx, i);
            if (job->lane == 1 && job->state == GPUOS__JOB_QUEUED) break;
        }
        return job;
    }
    return queue_oldest_queued_locked(ctx);
}

/* Takes job, which queue_next_locked just returned (ctx->mu held throughout). */
static void queue_taken_locked(gpuos_context *ctx, gpuos__job *job) {
    if (ctx->host_dl > 0) {
        ctx->host_hi--;
        ctx->host_dl -= job->deadline_ns != 0;
        ctx->host_hi_next = 0; /* taken out of order: the next pick scans from the head */
    } else if (ctx->host_hi > 0) {
        ctx->host_hi--;
        ctx->host_hi_next = job->seq + 1;
    }
    queue_mark_taken_locked(ctx, job);
}

/* Takes the job to run next (ctx->mu held; host_queued > 0). */
static gpuos__job *queue_take_locked(gpuos_context *ctx) {
    gpuos__job *job = queue_next_locked(ctx);
    queue_taken_locked(ctx, job);
    return job;
}

gpuos__job *gpuos__queue_pop(gpuos_context *ctx) {
    gpuos__job *job;
    pthread_mutex_lock(&ctx->mu);
    while (!ctx->stopping && (ctx->paused || ctx->host_queued == 0 || ctx->host_running))
        pthread_cond_wait(&ctx->cv_work, &ctx->mu);
    if (ctx->stopping) {
        pthread_mutex_unlock(&ctx->mu);
        return NULL;
    }
    job = queue_take_locked(ctx);
    pthread_mutex_unlock(&ctx->mu);
    return job;
}

void gpuos__queue_retire_head_locked(gpuos_context *ctx) {
    gpuos__job *job = ctx->ring[ctx->ring_head];
    if (job->dl_open) gpuos__deadline_count_locked(ctx, job, gpuos__now_ns()); /* the GPU's, seen now */
    ctx->ring[ctx->ring_head] = NULL;
    ctx->ring_head = (ctx->ring_head + 1u) & (ctx->ring_size - 1u);
    ctx->ring_count--;
    ctx->completed = job->seq;
    queue_retire_locked(ctx, job);
}

void gpuos__queue_done(gpuos_context *ctx, gpuos__job *job) {
    const uint64_t now = job->dl_open ? gpuos__now_ns() : 0;
    pthread_mutex_lock(&ctx->mu);
    uint32_t freed = ctx->ring_count;
    job->state = GPUOS__JOB_DONE;
    if (job->host_c0) queue_host_count(job, -1);
    gpuos__deadline_count_locked(ctx, job, now);
    while (ctx->ring_count > 0 && queue_at(ctx, 0)->state == GPUOS__JOB_DONE) /* retire in order */
        gpuos__queue_retire_head_locked(ctx);
    freed -= ctx->ring_count;
    ctx->host_running = 0;
    if (ctx->host_queued > 0) pthread_cond_signal(&ctx->cv_work); /* (the dispatcher, if a waiter ran it) */
    pthread_cond_broadcast(&ctx->cv_done);
    if (freed > 1) /* room for several: every submitter waiting for room may go */
        pthread_cond_broadcast(&ctx->cv_room);
    else if (freed == 1)
        pthread_cond_signal(&ctx->cv_room);
    pthread_mutex_unlock(&ctx->mu);
}

int gpuos__seq_done_locked(gpuos_context *ctx, uint64_t seq, int one) {
    uint64_t off;
    const gpuos__job *job;
    if (ctx->completed >= seq) return 1;
    if (!one || ctx->ring_count == 0) return 0;
    off = seq - queue_at(ctx, 0)->seq;
    if (off >= ctx->ring_count) return 0;
    job = queue_at(ctx, (uint32_t)off);
    if (ctx->cuda) return gpuos__cuda_job_done_locked(ctx, job, (uint32_t)off);
    return job->state == GPUOS__JOB_DONE;
}

/* ---------------------------------------------------------------- fences and waits */
/* Host executor: a waiting thread runs the next job itself when no job runs and that job is
   small, instead of sleeping until the dispatcher's wake-up (several microseconds, tens on a
   busy VM) has run it: one job at a time still, taken in the dispatcher's order
   (queue_take_locked), under the executor's floating-point environment. Small: at most
   QUEUE_HELP_WORK element operations of a built-in operator (2^20 of an f64 pow took 9-12 ms
   on one thread; a run-time operator's body may loop for a second an element), so that a
   wait's timeout is not held up by a long job; never with timeout 0 nor once the context is
   being destroyed. A waiting thread that the system preempts while it runs one holds the
   executor up meanwhile, as the dispatcher would. Returns 1 when it ran one (ctx->mu held
   again). */
#define QUEUE_HELP_WORK ((int64_t)1 << 16)
static int queue_help_locked(gpuos_context *ctx, uint32_t timeout_ms) {
    gpuos__job *job;
    int64_t work;
    if (ctx->cuda || timeout_ms == 0 || ctx->paused || ctx->destroyed || ctx->host_running || ctx->host_queued == 0)
        return 0;
    job = queue_next_locked(ctx); /* the one the dispatcher would take: lane 1 first, by deadline */
    if (!job || job->rt) return 0;
    if (!gpuos__mul64(job->items, job->item_cost > 0 ? job->item_cost : 1, &work) || work > QUEUE_HELP_WORK) return 0;
    queue_taken_locked(ctx, job);
    pthread_mutex_unlock(&ctx->mu);
    gpuos__host_run_job(ctx, job);
    gpuos__queue_done(ctx, job);
    pthread_mutex_lock(&ctx->mu);
    return 1;
}

gpuos_status gpuos__wait_seq(gpuos_context *ctx, uint64_t seq, int one, uint32_t timeout_ms, const char *what) {
    gpuos_status st = GPUOS_OK;
    pthread_mutex_lock(&ctx->mu);
    if (ctx->stopping) { /* after gpuos_destroy: nothing will run any more */
        st = gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT, "%s: the context was destroyed", what);
    } else if (seq > ctx->submitted) {
        st = gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT,
                              "%s: sequence number %llu was never issued (the last task is %llu)", what,
                              (unsigned long long)seq, (unsigned long long)ctx->submitted);
    } else if (!gpuos__seq_done_locked(ctx, seq, one) && ctx->sticky == GPUOS_OK) {
        if (ctx->cuda) { /* spins on the GPU's progress words, then sleeps in short steps */
            (void)gpuos__cuda_wait_locked(ctx, seq, one, timeout_ms);
        } else {
            struct timespec deadline;
            const uint64_t t0 = gpuos__now_ns();
            gpuos__deadline(timeout_ms, &deadline);
            while (!gpuos__seq_done_locked(ctx, seq, one) && ctx->sticky == GPUOS_OK && !ctx->stopping) {
                /* (helping, too, ends with the timeout: many small jobs ahead add up) */
                if (gpuos__now_ns() - t0 < (uint64_t)timeout_ms * 1000000u && queue_help_locked(ctx, timeout_ms)) continue;
                if (gpuos__cond_wait_until(&ctx->cv_done, &ctx->mu, &deadline) == ETIMEDOUT) break;
            }
        }
        if (ctx->stopping && !gpuos__seq_done_locked(ctx, seq, one))
            st = gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT, "%s: the context was destroyed", what);
        else if (!gpuos__seq_done_locked(ctx, seq, one) && ctx->sticky == GPUOS_OK)
            st = gpuos__set_error(ctx, GPUOS_ERR_TIMEOUT,
                                  "%s: timed out after %u ms waiting for task %llu (tasks up to %llu of %llu are "
                                  "done%s); the work is still queued",
                                  what, (unsigned)timeout_ms, (unsigned long long)seq,
                                  (unsigned long long)ctx->completed, (unsigned long long)ctx->submitted,
                                  ctx->paused ? ", the executor is paused by gpuos_debug_pause" : "");
    }
    if (st == GPUOS_OK && ctx->sticky != GPUOS_OK)
        st = gpuos__set_error(ctx, ctx->sticky, "%s: the context has failed (%s)", what,
                              ctx->sticky_msg[0] ? ctx->sticky_msg : gpuos__status_name(ctx->sticky));
    pthread_mutex_unlock(&ctx->mu);
    return st;
}

uint64_t gpuos_fence(gpuos_context *ctx) {
    uint64_t s;
    if (!ctx) return 0;
    gpuos__lock_spin(&ctx->mu);
    s = ctx->submitted;
    pthread_mutex_unlock(&ctx->mu);
    return s;
}

int gpuos_fence_done(gpuos_context *ctx, uint64_t seq) {
    int done;
    if (!ctx) return 0;
    pthread_mutex_lock(&ctx->mu);
    if (ctx->cuda) gpuos__cuda_reap_locked(ctx);
    done = ctx->completed >= seq;
    pthread_mutex_unlock(&ctx->mu);
    return done;
}

gpuos_status gpuos_wait_fence(gpuos_context *ctx, uint64_t seq, uint32_t timeout_ms) {
    if (!ctx) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "gpuos_wait_fence: ctx is NULL");
    return gpuos__wait_seq(ctx, seq, 0, timeout_ms, "gpuos_wait_fence");
}

gpuos_status gpuos_wait(gpuos_context *ctx, uint32_t timeout_ms) {
    if (!ctx) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "gpuos_wait: ctx is NULL");
    return gpuos__wait_seq(ctx, gpuos_fence(ctx), 0, timeout_ms, "gpuos_wait");
}

int gpuos_task_done(gpuos_context *ctx, uint64_t seq) {
    int done;
    if (!ctx) return 0;
    pthread_mutex_lock(&ctx->mu);
    if (ctx->cuda) gpuos__cuda_reap_locked(ctx);
    done = seq <= ctx->submitted && gpuos__seq_done_locked(ctx, seq, 1);
    pthread_mutex_unlock(&ctx->mu);
    return done;
}

gpuos_status gpuos_wait_task(gpuos_context *ctx, uint64_t seq, uint32_t timeout_ms) {
    if (!ctx) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "gpuos_wait_task: ctx is NULL");
    return gpuos__wait_seq(ctx, seq, 1, timeout_ms, "gpuos_wait_task");
}
