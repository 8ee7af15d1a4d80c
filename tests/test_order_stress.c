/* test_order_stress.c - program order under concurrency: 8 host threads share one context
   with a small queue, each streams tasks on its own tensor, alternating x = x * 3 and
   x = x + 1 on i32 (wrapping), so that a lost, repeated or reordered task changes the
   result; the odd threads submit them in batches (gpuos_submit_many). Each thread checks its tensor against plain C every CHECK_EVERY tasks (a wait in the
   middle of the stream) and at the end. $GPUOS_TEST_STRESS_TASKS sets the total (default
   1,000,000 on any device; the GPU acceptance run uses 10,000,000). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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
    for (j = 0; j < w->tasks;) {
        gpuos_status st;
        long nb = 1, q;
        int nq = 1;
        if (w->id & 1) { /* odd threads: gpuos_submit_many, batches of 1 to 64 */
            gpuos_task t[64];
            nb = 1 + (j / 7) % 64;
            if (nb > w->tasks - j) nb = w->tasks - j;
            if (nb > CHECK_EVERY - j % CHECK_EVERY) nb = CHECK_EVERY - j % CHECK_EVERY;
            for (q = 0; q < nb; q++) {
                gpuos_task e = GPUOS_TASK_INIT;
                e.op = ((j + q) & 1) ? GPUOS_OP_ADD : GPUOS_OP_MUL;
                e.out = x, e.in[0] = x, e.in[1] = ((j + q) & 1) ? w->one : w->three;
                t[q] = e;
            }
            nq = -1;
            st = gpuos_submit_many(w->ctx, t, (int)nb, NULL, &nq);
            if (st == GPUOS_OK && nq != (int)nb) st = GPUOS_ERR_INTERNAL;
            if (nq < 0) nq = 0;
        } else {
            st = (j & 1) ? gpuos_add(w->ctx, x, x, w->one) : gpuos_mul(w->ctx, x, x, w->three);
            if (st != GPUOS_OK) nq = 0;
        }
        for (q = 0; q < nq; q++)
            for (i = 0; i < N; i++) expect[i] = ((j + q) & 1) ? expect[i] + 1u : expect[i] * 3u;
        j += nq;
        if (st != GPUOS_OK) {
            char msg[200];
            snprintf(msg, sizeof msg, "submission %ld: %s (%d of a batch of %ld queued)", j, gpuos_last_error(w->ctx), nq, nb);
            note(w, msg);
            break;
        }
        if (j % CHECK_EVERY == 0) verify(w, x, expect, j);
    }
    verify(w, x, expect, w->tasks);
    gpuos_tensor_release(x);
    return NULL;
}

/* Write-after-read past the dependency log: one slow reader R1 and one tiny reader R2 of
   region A of a buffer, then more readers of region B than the per-storage log holds
   (so R1 and R2 are forgotten), then a write to A. The write must wait for R1 too, not
   only for the newest forgotten access (R2): R1's result must be A's old values + 1. */
static void forgotten_readers(gpuos_context *ctx, gpuos_tensor *one) {
    const int64_t na = 1 << 20, nb = 64, n = na + 16 * nb;
    gpuos_tensor *buf, *a, *a2, *r1, *r2, *b[16], *rb[16];
    int32_t *host = (int32_t *)malloc((size_t)na * sizeof(int32_t));
    int rep, k, ok = 1;
    int64_t i, bad = -1;
    CHECK(host != NULL, "malloc");
    if (!host) return;
    CHECK(gpuos_tensor_new(ctx, GPUOS_I32, 1, &n, &buf) == GPUOS_OK, "buffer");
    CHECK(gpuos_view_slice(buf, 0, 0, na, 1, &a) == GPUOS_OK, "region A");
    CHECK(gpuos_view_slice(buf, 0, 0, 64, 1, &a2) == GPUOS_OK, "head of A");
    CHECK(gpuos_tensor_new(ctx, GPUOS_I32, 1, &na, &r1) == GPUOS_OK, "r1");
    CHECK(gpuos_tensor_new(ctx, GPUOS_I32, 1, &nb, &r2) == GPUOS_OK, "r2");
    for (k = 0; k < 16; k++) {
        CHECK(gpuos_view_slice(buf, 0, na + k * nb, na + (k + 1) * nb, 1, &b[k]) == GPUOS_OK, "region B");
        CHECK(gpuos_tensor_new(ctx, GPUOS_I32, 1, &nb, &rb[k]) == GPUOS_OK, "rb");
    }
    for (rep = 0; rep < 20 && ok; rep++) {
        ok &= gpuos_arange(ctx, a, (double)rep, 1.0) == GPUOS_OK;
        ok &= gpuos_add(ctx, r1, a, one) == GPUOS_OK;  /* R1: slow, every worker */
        ok &= gpuos_add(ctx, r2, a2, one) == GPUOS_OK; /* R2: tiny */
        for (k = 0; k < 16; k++) ok &= gpuos_add(ctx, rb[k], b[k], one) == GPUOS_OK;
        ok &= gpuos_fill(ctx, a, -7.0) == GPUOS_OK; /* W: must wait for R1 */
        ok &= gpuos_download(ctx, r1, host, (size_t)na * sizeof(int32_t)) == GPUOS_OK;
        for (i = 0; i < na && bad < 0; i++)
            if (host[i] != (int32_t)(rep + i + 1)) bad = i;
        if (bad >= 0) {
            fprintf(stderr, "FAIL forgotten_readers rep %d: r1[%lld] = %d, expected %lld (a write overtook a forgotten reader)\n",
                    rep, (long long)bad, host[bad], (long long)(rep + bad + 1));
            ok = 0;
        }
    }
    CHECK(ok, "a write waits for every reader the dependency log forgot (20 rounds, 1M-element reader)");
    for (k = 0; k < 16; k++) {
        gpuos_tensor_release(b[k]);
        gpuos_tensor_release(rb[k]);
    }
    gpuos_tensor_release(a);
    gpuos_tensor_release(a2);
    gpuos_tensor_release(r1);
    gpuos_tensor_release(r2);
    gpuos_tensor_release(buf);
    free(host);
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
    forgotten_readers(ctx, one);
    printf("%ld tasks from %d threads on the %s executor\n", total / NTHREADS * NTHREADS, NTHREADS,
           gpuos_context_backend(ctx) == GPUOS_BACKEND_CUDA ? "GPU" : "host");
    gpuos_tensor_release(three);
    gpuos_tensor_release(one);
    gpuos_destroy(ctx);
    return ctest_summary("test_order_stress");
}
