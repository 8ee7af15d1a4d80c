/* host_exec.c - the host executor: one dispatcher thread and a pool of workers.

   The dispatcher pops jobs in order (gpuos__queue_pop), runs each one to completion
   and then marks it done (gpuos__queue_done), so program order holds trivially (a
   waiting thread may run a small next job itself, one job at a time still: queue.c,
   queue_help_locked, through gpuos__host_run_job). A job
   with enough work (HOST_SPLIT_WORK element operations) is cut into chunks of work
   items; the workers and the dispatcher itself take chunks until none is left, and the
   dispatcher waits for the last one before it marks the job done. Small jobs run
   inline on the dispatcher. The generated kernels take an item range, so a chunk is
   just a call with [begin, end). */
#include "gpuos_runtime.h"

#include <signal.h> /* sigfillset, pthread_sigmask */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* memset */

#define HOST_SPLIT_WORK ((int64_t)32768)  /* element operations before a job is split */
#define HOST_CHUNK_WORK ((int64_t)8192)   /* at least this much work per chunk */
#define HOST_CHUNKS_PER_THREAD 4

struct gpuos__pool {
    const int *cancel;      /* the context's cancel flag (gpuos_destroy) */
    pthread_mutex_t mu;
    pthread_cond_t cv_work; /* a job was posted, or stop */
    pthread_cond_t cv_done; /* the last chunk of the posted job finished */
    const gpuos__job *job;  /* the job being split, NULL between jobs */
    int64_t chunk;          /* items per chunk */
    int64_t n_chunks, next, finished;
    int stop;
    int n_threads; /* workers started */
    pthread_t threads[GPUOS__MAX_HOST_THREADS];
};

/* ---------------------------------------------------------------- running a range */
/* Rows [begin, end) of a matmul with a fused layernorm prologue (gpuos__matmul_plan.pro:
   no batch axes, so an item is a row): each row normalised by the layernorm kernel into
   pro_out, then multiplied from there; the epilogue may read back only that row. */
static void host_matmul_pro(const gpuos__matmul_plan *p, gpuos__matmul_fn mm, int64_t begin, int64_t end) {
    const gpuos__rows_fn ln = gpuos__host_rows(GPUOS_OP_LAYERNORM, GPUOS_F32);
    gpuos__rows_plan r;
    gpuos__matmul_plan q = *p;
    memset(&r, 0, sizeof r);
    r.outer_rank = 1;
    r.outer_numel = p->M;
    r.outer_shape[0] = p->M;
    r.outer_in_stride[0] = p->a_m;
    r.outer_out_stride[0] = p->pro_om;
    r.n = p->K;
    r.in_stride = p->a_k;
    r.out_stride = p->pro_ok;
    r.out = p->pro_out;
    r.in = p->a;
    r.eps = p->pro_eps;
    ln(&r, begin, end);
    q.pro = 0;
    q.a = p->pro_out;
    q.a_m = p->pro_om;
    q.a_k = p->pro_ok;
    mm(&q, begin, end);
}

static void host_run_range(const gpuos__job *job, int64_t begin, int64_t end) {
    switch (job->kind) {
    case GPUOS__KIND_EW:
        if (job->rt) gpuos__rt_host_run(job, begin, end); /* a run-time operator (rtops.c) */
        else job->ew_iter(&job->plan.ew, job->ew_loop, begin, end);
        break;
    case GPUOS__KIND_REDUCE: job->reduce_fn(&job->plan.reduce, begin, end); break;
    case GPUOS__KIND_ROWS: gpuos__host_rows_run(&job->plan.rows, job->rows_fn, job->elsize[0], begin, end); break;
    case GPUOS__KIND_MATMUL:
        if (job->plan.matmul.pro) host_matmul_pro(&job->plan.matmul, job->matmul_fn, begin, end);
        else job->matmul_fn(&job->plan.matmul, begin, end);
        break;
    default: break; /* plan.c never queues another kind */
    }
}

static int host_cancelled(const int *cancel) { return GPUOS__ALOAD(INT, cancel, GPUOS__RELAXED) != 0; }

/* Items [begin, end) in steps of about HOST_SPLIT_WORK element operations, stopping between
   them once *cancel is set (gpuos_destroy gave up waiting; the context is going). */
static void host_run_steps(const int *cancel, const gpuos__job *job, int64_t begin, int64_t end) {
    const int64_t cost = job->item_cost > 0 ? job->item_cost : 1;
    int64_t step = cost >= HOST_SPLIT_WORK ? 1 : HOST_SPLIT_WORK / cost, b;
    for (b = begin; b < end && !host_cancelled(cancel); b += step) host_run_range(job, b, end - b < step ? end : b + step);
}

static void host_run_chunk(const struct gpuos__pool *p, const gpuos__job *job, int64_t c) {
    int64_t begin = c * p->chunk;
    int64_t end = begin + p->chunk;
    if (end > job->items) end = job->items;
    host_run_steps(p->cancel, job, begin, end);
}

/* ---------------------------------------------------------------- worker pool */
static void *host_worker(void *arg) {
    struct gpuos__pool *p = (struct gpuos__pool *)arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        const gpuos__job *job;
        int64_t c;
        while (!p->stop && (p->job == NULL || p->next >= p->n_chunks)) pthread_cond_wait(&p->cv_work, &p->mu);
        if (p->stop) break;
        job = p->job;
        c = p->next++;
        pthread_mutex_unlock(&p->mu);
        host_run_chunk(p, job, c);
        pthread_mutex_lock(&p->mu);
        if (++p->finished == p->n_chunks) pthread_cond_signal(&p->cv_done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Runs job over the pool and the calling thread; returns when every chunk is done. */
static void host_run_split(struct gpuos__pool *p, const gpuos__job *job, int64_t work) {
    int64_t parts = (int64_t)(p->n_threads + 1) * HOST_CHUNKS_PER_THREAD;
    int64_t n = work / HOST_CHUNK_WORK;
    if (n > parts) n = parts;
    if (n > job->items) n = job->items;
    if (n < 2) n = 2;
    pthread_mutex_lock(&p->mu);
    p->job = job;
    p->chunk = (job->items + n - 1) / n;
    p->n_chunks = (job->items + p->chunk - 1) / p->chunk;
    p->next = 0;
    p->finished = 0;
    pthread_cond_broadcast(&p->cv_work);
    while (p->next < p->n_chunks) {
        int64_t c = p->next++;
        pthread_mutex_unlock(&p->mu);
        host_run_chunk(p, job, c);
        pthread_mutex_lock(&p->mu);
        p->finished++;
    }
    while (p->finished < p->n_chunks) pthread_cond_wait(&p->cv_done, &p->mu);
    p->job = NULL;
    pthread_mutex_unlock(&p->mu);
}

/* A matmul whose B is not row-contiguous (x @ W^T, a Linear layer's weight): read in place,
   each step along a row of B is a strided scalar load (512^3 f32 on the CI-class CPU: 61 ms
   against 7-8 ms for a row-major B, a review). With 16 rows or more and one B for every batch
   index, B is copied row-major first (its bits: the same sums in the same order) into a buffer
   of at most HOST_MM_PACK elements, and *q, a copy of the job that reads it, runs instead.
   Returns the buffer (the caller frees it), or NULL to run the job as it is (also with no
   memory for the copy). The copy costs about as much as 8 rows' products read in place
   (8 x 256 by 256 x 256: 154 us in place, 259 with the copy). */
#define HOST_MM_PACK ((int64_t)1 << 22)
static void *host_mm_pack(const gpuos__job *job, gpuos__job *q) {
    const gpuos__matmul_plan *p = &job->plan.matmul;
    const int64_t es = job->elsize[2], K = p->K, N = p->N;
    char *buf;
    int64_t k, n;
    int d;
    if (job->kind != GPUOS__KIND_MATMUL || p->b_n == es || job->items < 16 || K <= 0 || N <= 0 ||
        K > HOST_MM_PACK / N || (es != 1 && es != 2 && es != 4 && es != 8))
        return NULL;
    for (d = 0; d < p->batch_rank; d++)
        if (p->batch_b_stride[d] != 0 && p->batch_shape[d] > 1) return NULL;
    buf = (char *)malloc((size_t)(K * N * es));
    if (!buf) return NULL;
    for (n = 0; n < N; n++)
        for (k = 0; k < K; k++) gpuos__copy_el(buf + (k * N + n) * es, p->b + k * p->b_k + n * p->b_n, (size_t)es);
    *q = *job;
    q->plan.matmul.b = buf;
    q->plan.matmul.b_k = N * es;
    q->plan.matmul.b_n = es;
    return buf;
}

static void host_run(gpuos_context *ctx, const gpuos__job *job) {
    int64_t work;
    gpuos__job packed;
    void *buf;
    if (job->items <= 0) return; /* zero-size output: nothing to do */
    if ((buf = host_mm_pack(job, &packed)) != NULL) job = &packed;
    if (!gpuos__mul64(job->items, job->item_cost > 0 ? job->item_cost : 1, &work)) work = INT64_MAX;
    if (work < HOST_SPLIT_WORK || job->items < 2) {
        host_run_range(job, 0, job->items);
    } else if (ctx->pool == NULL) { /* one thread: in steps, so that a destroy that gave up
                                       waiting stops it between them */
        host_run_steps(&ctx->cancel, job, 0, job->items);
    } else
        host_run_split(ctx->pool, job, work);
    free(buf);
}

void gpuos__host_run_job(gpuos_context *ctx, const gpuos__job *job) {
    /* under the executor's floating-point environment, not the waiting thread's (its rounding
       mode would change the results: a review) */
    fenv_t own;
    const int swap = fegetenv(&own) == 0 && fesetenv(&ctx->host_fenv) == 0;
    host_run(ctx, job);
    if (swap) (void)fesetenv(&own);
}

/* ---------------------------------------------------------------- dispatcher */
static void *host_dispatcher(void *arg) {
    gpuos_context *ctx = (gpuos_context *)arg;
    gpuos__job *job;
    while ((job = gpuos__queue_pop(ctx)) != NULL) {
        host_run(ctx, job);
        gpuos__queue_done(ctx, job);
    }
    return NULL;
}

/* ---------------------------------------------------------------- start / stop */
/* Starts a thread with every signal blocked, so that the application's signal
   handlers never run on gpuos threads. */
static int host_thread_start(pthread_t *t, void *(*fn)(void *), void *arg) {
    sigset_t all, old;
    int rc;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(t, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc == 0;
}

static void host_pool_stop(struct gpuos__pool *p) {
    int i;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
    for (i = 0; i < p->n_threads; i++) pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->cv_done);
    pthread_cond_destroy(&p->cv_work);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

static gpuos_status host_pool_start(gpuos_context *ctx, int n_workers) {
    struct gpuos__pool *p = (struct gpuos__pool *)calloc(1, sizeof *p);
    if (!p) return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "no memory for the host worker pool");
    p->cancel = &ctx->cancel;
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p);
        return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "cannot create the host worker pool's mutex (out of resources)");
    }
    if (pthread_cond_init(&p->cv_work, NULL) != 0) {
        pthread_mutex_destroy(&p->mu);
        free(p);
        return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "cannot create the host worker pool's condition variable (out of resources)");
    }
    if (pthread_cond_init(&p->cv_done, NULL) != 0) {
        pthread_cond_destroy(&p->cv_work);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "cannot create the host worker pool's condition variable (out of resources)");
    }
    while (p->n_threads < n_workers && host_thread_start(&p->threads[p->n_threads], host_worker, p)) p->n_threads++;
    if (p->n_threads == 0) { /* not even one: run everything on the dispatcher */
        host_pool_stop(p);
        return GPUOS_OK;
    }
    ctx->pool = p;
    return GPUOS_OK;
}

gpuos_status gpuos__host_start(gpuos_context *ctx) {
    (void)fegetenv(&ctx->host_fenv); /* what the threads below inherit */
    if (ctx->host_threads > 1) {
        gpuos_status st = host_pool_start(ctx, ctx->host_threads - 1);
        if (st != GPUOS_OK) return st;
    }
    if (!host_thread_start(&ctx->dispatcher, host_dispatcher, ctx)) {
        if (ctx->pool) host_pool_stop(ctx->pool);
        ctx->pool = NULL;
        return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "cannot start the host executor's dispatcher thread");
    }
    ctx->dispatcher_running = 1;
    return GPUOS_OK;
}

void gpuos__host_stop(gpuos_context *ctx) {
    pthread_mutex_lock(&ctx->mu);
    ctx->stopping = 1;
    pthread_cond_broadcast(&ctx->cv_work);
    pthread_cond_broadcast(&ctx->cv_room);
    pthread_cond_broadcast(&ctx->cv_done);
    pthread_mutex_unlock(&ctx->mu);
    if (ctx->dispatcher_running) pthread_join(ctx->dispatcher, NULL);
    ctx->dispatcher_running = 0;
    /* a job a waiting thread took (queue.c, queue_help_locked: small, and it stops at its next
       step once ctx->cancel is set) ends before the pool it may use and the queue go */
    pthread_mutex_lock(&ctx->mu);
    while (ctx->host_running) pthread_cond_wait(&ctx->cv_done, &ctx->mu);
    pthread_mutex_unlock(&ctx->mu);
    if (ctx->pool) host_pool_stop(ctx->pool);
    ctx->pool = NULL;
}
