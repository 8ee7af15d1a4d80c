/* context.c - creating and destroying contexts, and what a context reports.

   A context is reference counted: the user's handle holds one reference and every
   storage (tensor memory) holds one. gpuos_destroy drains and stops the executor and
   drops the user's reference; the struct itself lives on (as SQLite's close_v2 does)
   until the last tensor is released, so releasing tensors after gpuos_destroy is safe. */
#include "gpuos_runtime.h"

#include <stdlib.h> /* calloc, free, malloc, getenv, strtol */
#include <string.h> /* memcpy, strlen */
#include <unistd.h> /* sysconf */

#if defined(GPUOS__ATOMIC_MUTEX) && GPUOS__ATOMIC_MUTEX /* a compiler without the __atomic builtins (gpuos_runtime.h) */
pthread_mutex_t gpuos__atomic_mu = PTHREAD_MUTEX_INITIALIZER;
void *gpuos__atomic_tmp;
#endif

/* ---------------------------------------------------------------- configuration */
static gpuos_status context_check_config(const gpuos_config *c) {
    if (c->struct_size != sizeof(gpuos_config))
        return gpuos__set_error(NULL, GPUOS_ERR_BAD_CONFIG,
                                "config->struct_size is %zu but this library's gpuos_config is %zu bytes: "
                                "start from GPUOS_CONFIG_INIT and build with the gpuos.h that matches the library",
                                c->struct_size, sizeof(gpuos_config));
    if (c->api_version / 100 != GPUOS_VERSION_NUMBER / 100)
        return gpuos__set_error(NULL, GPUOS_ERR_BAD_CONFIG,
                                "config->api_version is %d but this library is %d (%s): major and minor "
                                "versions must match; start from GPUOS_CONFIG_INIT",
                                c->api_version, GPUOS_VERSION_NUMBER, GPUOS_VERSION_STRING);
    if (c->device < GPUOS_DEVICE_AUTO)
        return gpuos__set_error(NULL, GPUOS_ERR_BAD_CONFIG,
                                "config->device is %d: use GPUOS_DEVICE_AUTO (-2), GPUOS_DEVICE_HOST (-1) or a "
                                "CUDA ordinal >= 0",
                                c->device);
    if (c->queue_capacity < 16u || c->queue_capacity > (1u << 24) ||
        (c->queue_capacity & (c->queue_capacity - 1u)) != 0)
        return gpuos__set_error(NULL, GPUOS_ERR_BAD_CONFIG,
                                "config->queue_capacity is %u: it must be a power of two from 16 to %u",
                                (unsigned)c->queue_capacity, 1u << 24);
    if (c->host_threads < 0)
        return gpuos__set_error(NULL, GPUOS_ERR_BAD_CONFIG,
                                "config->host_threads is %d: use 0 (one per core) or a positive count",
                                c->host_threads);
    return GPUOS_OK;
}

static int context_host_threads(int requested) {
    long n = requested;
    if (n == 0) {
        n = sysconf(_SC_NPROCESSORS_ONLN);
        if (n < 1) n = 1;
    }
    if (n > GPUOS__MAX_HOST_THREADS) n = GPUOS__MAX_HOST_THREADS;
    return (int)n;
}

/* The repeat table's entries (queue.c): GPUOS_REPEAT_TABLE if set (rounded up to a power of
   two, 8 .. 65536), else GPUOS__TCACHE. */
static uint32_t context_tcache_n(void) {
    const char *e = getenv("GPUOS_REPEAT_TABLE");
    long v = e && *e ? strtol(e, NULL, 10) : 0;
    uint32_t n = 8;
    if (v <= 0) return GPUOS__TCACHE;
    if (v > 65536) v = 65536;
    while (n < (uint32_t)v) n *= 2;
    return n;
}

/* ---------------------------------------------------------------- create / destroy */
/* The context's last error without its "GPUOS_ERR_X: " prefix, to be re-reported. */
static const char *context_detail(const gpuos_context *ctx) { return gpuos__error_detail(gpuos_last_error(ctx)); }

gpuos_status gpuos_create(const gpuos_config *config, gpuos_context **out) {
    gpuos_context *ctx;
    gpuos_status st;
    int mu_ok = 0, room_ok = 0, work_ok = 0, done_ok = 0, err_ok = 0, queue_ok = 0;

    if (out) *out = NULL;
    if (!config) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "gpuos_create: config is NULL");
    if (!out) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "gpuos_create: out is NULL");
    st = context_check_config(config);
    if (st != GPUOS_OK) return st;


    ctx = (gpuos_context *)calloc(1, sizeof *ctx);
    if (!ctx) return gpuos__set_error(NULL, GPUOS_ERR_OUT_OF_MEMORY, "gpuos_create: no memory for the context");
    ctx->cfg = *config;
    ctx->cfg.cache_dir = NULL;
    if (config->cache_dir) {
        size_t n = strlen(config->cache_dir) + 1;
        ctx->cache_dir = (char *)malloc(n);
        if (!ctx->cache_dir) {
            st = gpuos__set_error(NULL, GPUOS_ERR_OUT_OF_MEMORY, "gpuos_create: no memory for cache_dir");
            goto fail;
        }
        memcpy(ctx->cache_dir, config->cache_dir, n);
        ctx->cfg.cache_dir = ctx->cache_dir;
    }
    ctx->backend = GPUOS_BACKEND_HOST;
    ctx->host_threads = context_host_threads(config->host_threads);
    ctx->capacity = config->queue_capacity;
    ctx->tcache_n = context_tcache_n();
    ctx->sticky = GPUOS_OK;
    ctx->refs = 1;

    st = GPUOS_ERR_INTERNAL;
    if (!(mu_ok = pthread_mutex_init(&ctx->mu, NULL) == 0)) goto fail_sync;
    if (pthread_mutex_init(&ctx->rt_mu, NULL) != 0) {
        pthread_mutex_destroy(&ctx->mu);
        mu_ok = 0;
        goto fail_sync;
    }
    if (pthread_mutex_init(&ctx->stage_mu, NULL) != 0) {
        pthread_mutex_destroy(&ctx->rt_mu);
        pthread_mutex_destroy(&ctx->mu);
        mu_ok = 0;
        goto fail_sync;
    }
    if (!(room_ok = gpuos__cond_init_monotonic(&ctx->cv_room))) goto fail_sync;
    if (!(work_ok = gpuos__cond_init_monotonic(&ctx->cv_work))) goto fail_sync;
    if (!(done_ok = gpuos__cond_init_monotonic(&ctx->cv_done))) goto fail_sync;
    if (!(err_ok = gpuos__errbuf_init(&ctx->err))) goto fail_sync;
    if (!(queue_ok = gpuos__queue_init(ctx))) {
        st = gpuos__set_error(NULL, GPUOS_ERR_OUT_OF_MEMORY, "gpuos_create: no memory for the task queue");
        goto fail;
    }
    /* A GPU when one was asked for (an ordinal) or may be used (AUTO); AUTO falls back
       to the host executor when no GPU works. */
    if (config->device != GPUOS_DEVICE_HOST) {
        st = gpuos__cuda_open(ctx, config->device);
        if (st == GPUOS_OK) {
            ctx->backend = GPUOS_BACKEND_CUDA;
            gpuos__stage_open(ctx);
        } else if (config->device >= 0) {
            gpuos__set_error(NULL, st, "%s; use GPUOS_DEVICE_AUTO or GPUOS_DEVICE_HOST to run on the host",
                             context_detail(ctx));
            goto fail;
        }
    }
    if (ctx->backend == GPUOS_BACKEND_HOST) {
        st = gpuos__host_start(ctx);
        if (st != GPUOS_OK) {
            gpuos__set_error(NULL, st, "gpuos_create: %s", context_detail(ctx));
            goto fail;
        }
    }
    *out = ctx;
    return GPUOS_OK;

fail_sync:
    st = gpuos__set_error(NULL, GPUOS_ERR_OUT_OF_MEMORY,
                          "gpuos_create: cannot create the context's mutexes or condition variables");
fail:
    if (queue_ok) gpuos__queue_fini(ctx);
    if (err_ok) gpuos__errbuf_fini(&ctx->err);
    if (done_ok) pthread_cond_destroy(&ctx->cv_done);
    if (work_ok) pthread_cond_destroy(&ctx->cv_work);
    if (room_ok) pthread_cond_destroy(&ctx->cv_room);
    if (mu_ok) {
        pthread_mutex_destroy(&ctx->mu);
        pthread_mutex_destroy(&ctx->rt_mu);
        pthread_mutex_destroy(&ctx->stage_mu);
    }
    free(ctx->cache_dir);
    free(ctx);
    return st;
}

void gpuos__context_free(gpuos_context *ctx) {
    gpuos__errbuf_fini(&ctx->err);
    pthread_cond_destroy(&ctx->cv_done);
    pthread_cond_destroy(&ctx->cv_work);
    pthread_cond_destroy(&ctx->cv_room);
    pthread_mutex_destroy(&ctx->mu);
    pthread_mutex_destroy(&ctx->rt_mu);
    pthread_mutex_destroy(&ctx->stage_mu);
    free(ctx->cache_dir);
    free(ctx);
}

gpuos_status gpuos__check_alive(gpuos_context *ctx, const char *fn) {
    int dead;
    pthread_mutex_lock(&ctx->mu);
    dead = ctx->destroyed;
    pthread_mutex_unlock(&ctx->mu);
    return dead ? gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT, "%s: the context was destroyed", fn) : GPUOS_OK;
}

void gpuos_destroy(gpuos_context *ctx) {
    uint64_t last;
    if (!ctx) return;
    pthread_mutex_lock(&ctx->mu);
    if (ctx->destroyed) { /* a second destroy of a context that tensors keep alive */
        pthread_mutex_unlock(&ctx->mu);
        return;
    }
    ctx->destroyed = 1;
    ctx->paused = 0; /* a paused queue would never drain */
    pthread_cond_broadcast(&ctx->cv_work);
    pthread_cond_broadcast(&ctx->cv_room); /* submitters waiting for room give up */
    last = ctx->submitted;
    pthread_mutex_unlock(&ctx->mu);

    /* Let queued work finish (at most wait_timeout_ms); what is left is dropped. */
    (void)gpuos__wait_seq(ctx, last, 0, ctx->cfg.wait_timeout_ms, "gpuos_destroy");
    /* host executor: the running job stops at its next chunk or item (a job of hours would
       otherwise hold the join below) */
    GPUOS__ASTORE(&ctx->cancel, 1, GPUOS__RELAXED);
    gpuos__stage_close(ctx);
    if (ctx->cuda) {
        gpuos__queue_fini(ctx); /* storages of dropped jobs go back while the GPU is still open */
        gpuos__cuda_close(ctx);
    } else {
        gpuos__host_stop(ctx);
        gpuos__queue_fini(ctx);
    }
    gpuos__rt_fini(ctx); /* run-time operators: the jobs' references went with the queue */

    gpuos__context_unref(ctx);
}

void gpuos__context_ref(gpuos_context *ctx) {
    pthread_mutex_lock(&ctx->mu);
    ctx->refs++;
    pthread_mutex_unlock(&ctx->mu);
}

void gpuos__context_unref(gpuos_context *ctx) {
    int last;
    pthread_mutex_lock(&ctx->mu);
    last = --ctx->refs == 0;
    pthread_mutex_unlock(&ctx->mu);
    if (last) gpuos__context_free(ctx);
}

/* ---------------------------------------------------------------- queries */
gpuos_backend gpuos_context_backend(const gpuos_context *ctx) {
    return ctx ? ctx->backend : GPUOS_BACKEND_HOST;
}

gpuos_status gpuos_context_status(const gpuos_context *ctx) {
    gpuos_context *c = (gpuos_context *)ctx; /* the mutex is mutable state */
    gpuos_status st;
    if (!ctx) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "gpuos_context_status: ctx is NULL");
    if ((st = gpuos__check_alive(c, "gpuos_context_status")) != GPUOS_OK) return st;
    pthread_mutex_lock(&c->mu);
    st = c->sticky;
    pthread_mutex_unlock(&c->mu);
    return st;
}

int gpuos_debug_pause(gpuos_context *ctx, int paused) {
    int prev;
    if (!ctx) return 0;
    pthread_mutex_lock(&ctx->mu);
    prev = ctx->paused;
    ctx->paused = paused != 0 && !ctx->destroyed;
    if (!ctx->paused) pthread_cond_broadcast(&ctx->cv_work);
    if (!ctx->paused && ctx->cuda) (void)gpuos__cuda_pump_locked(ctx);
    pthread_mutex_unlock(&ctx->mu);
    return prev;
}
