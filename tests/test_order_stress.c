/* test_order_stress.c - program order under concurrency: 8 host threads share one context
   with a small queue, each streams tasks on its own tensor, alternating x = x * 3 and
   x = x + 1 on i32 (wrapping), so that a lost, repeated or reordered task changes the
   result. Each thread checks its tensor against plain C every CHECK_EVERY tasks (a wait in the
   middle of the stream) and at the end. $GPUOS_TEST_STRESS_TASKS sets the total (default
   1,000,000 on any device; the GPU acceptance run uses 10,000,000). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ctest.h"
#include "gpuos.h"

#define NTHREADS 8
#define N 64               /* elements per thread's tensor: tiny tasks */
#define CHECK_EVERY 250000 /* tasks between checks against plain C */

typedef struct worker {
    gpuos_context *ctx;
    gpuos_tensor *three, *one; /* shared 0-d operands */
    int id;
    long tasks;
    int passed, failed;
    char first_error[256];
} worker;

static void note(worker *w, const char *msg) {
    w->failed++;
    if (!w->first_error[0]) snprintf(w->first_error, sizeof w->first_error, "thread %d: %s", w->id, msg);
}

static void verify(worker *w, gpuos_tensor *x, const uint32_t *expect, long done) {
    int32_t got[N];
    char msg[200];
    int i;
    gpuos_status st = gpuos_download(w->ctx, x, got, sizeof got);
    if (st != GPUOS_OK) {
        snprintf(msg, sizeof msg, "download after %ld tasks: %s", done, gpuos_last_error(w->ctx));
        note(w, msg);
        return;
    }
    for (i = 0; i < N; i++)
        if ((uint32_t)got[i] != expect[i]) {
            snprintf(msg, sizeof msg, "after %ld tasks x[%d] = %u, expected %u (a task lost, repeated or reordered)",
                     done, i, (unsigned)got[i], (unsigned)expect[i]);
            note(w, msg);
            return;
        }
    w->passed++;
}

static void *run(void *arg) {
    worker *w = (worker *)arg;
    int64_t n = N;
    gpuos_tensor *x;
    uint32_t expect[N];
    int32_t init[N];
    long j;
    int i;
    if (gpuos_tensor_new(w->ctx, GPUOS_I32, 1, &n, &x) != GPUOS_OK) {
        note(w, "tensor_new failed");
        return NULL;
    }
    for (i = 0; i < N; i++) expect[i] = (uint32_t)(init[i] = w->id * 1000 + i);
    if (gpuos_upload(w->ctx, x, init, sizeof init) != GPUOS_OK) note(w, "upload failed");
    for (j = 0; j < w->tasks; j++) {
        gpuos_status st = (j & 1) ? gpuos_add(w->ctx, x, x, w->one) : gpuos_mul(w->ctx, x, x, w->three);
        if (st != GPUOS_OK) {
            char msg[200];
            snprintf(msg, sizeof msg, "submission %ld: %s", j, gpuos_last_error(w->ctx));
            note(w, msg);
            break;
        }
        for (i = 0; i < N; i++) expect[i] = (j & 1) ? expect[i] + 1u : expect[i] * 3u;
        if ((j + 1) % CHECK_EVERY == 0) verify(w, x, expect, j + 1);
    }
    verify(w, x, expect, w->tasks);
    gpuos_tensor_release(x);
    return NULL;
}

int main(void) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx;
    gpuos_tensor *three, *one;
    pthread_t th[NTHREADS];
    worker w[NTHREADS];
    const char *e = getenv("GPUOS_TEST_STRESS_TASKS");
    long total = e ? atol(e) : 1000000L;
    int t;
    cfg.device = ctest_device();
    cfg.queue_capacity = 1024;      /* small: submitters keep hitting a full queue */
    cfg.submit_timeout_ms = 60000;
    cfg.wait_timeout_ms = 60000;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        fprintf(stderr, "gpuos_create: %s\n", gpuos_last_error(NULL));
        return 1;
    }
    CHECK(gpuos_tensor_scalar(ctx, GPUOS_I32, 3, &three) == GPUOS_OK, "scalar");
    CHECK(gpuos_tensor_scalar(ctx, GPUOS_I32, 1, &one) == GPUOS_OK, "scalar");
    for (t = 0; t < NTHREADS; t++) {
        memset(&w[t], 0, sizeof w[t]);
        w[t].ctx = ctx;
        w[t].three = three;
        w[t].one = one;
        w[t].id = t;
        w[t].tasks = total / NTHREADS;
        pthread_create(&th[t], NULL, run, &w[t]);
    }
    for (t = 0; t < NTHREADS; t++) {
        pthread_join(th[t], NULL);
        ctest_passed += w[t].passed;
        ctest_failed += w[t].failed;
        if (w[t].first_error[0]) fprintf(stderr, "FAIL %s\n", w[t].first_error);
    }
    printf("%ld tasks from %d threads on the %s executor\n", total / NTHREADS * NTHREADS, NTHREADS,
           gpuos_context_backend(ctx) == GPUOS_BACKEND_CUDA ? "GPU" : "host");
    gpuos_tensor_release(three);
    gpuos_tensor_release(one);
    gpuos_destroy(ctx);
    return ctest_summary("test_order_stress");
}
