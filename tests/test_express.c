/* test_express.c - small tasks sent while nothing else is in flight ($GPUOS_TEST_DEVICE).

   On the GPU such a task is also written to the express worker's mailbox, and whoever claims
   it first, that worker (which runs all of it on its one block) or the fetcher (which places
   it as any task), runs it (src/cuda_backend.c, cuda_xpress_ok; docs/ARCHITECTURE.md,
   "Express tasks"). The tasks sent right after it while it runs must wait for it (no tile of
   theirs may assume its tiles ran where the fetcher would have put them), a small download or
   a pinned tensor must see what it wrote, and a repeat of it must not reuse an encoding that
   assumed the ordinary placement. Each round of a random program makes the device idle now
   and then (a wait), then runs a few random steps on x and y (i32: exact), of random sizes
   around the tile (1024 items): in-place adds (repeats), products, strided and broadcast views,
   a reduction, small downloads and a pinned copy, each checked against the same program on
   the host in C. On the GPU it also checks that express tasks were sent and that the express
   worker ran some of them (gpuos_debug_express). Express tasks are on by default; this test
   sets GPUOS_CUDA_EXPRESS=4 itself unless the environment sets it (=0: the test of them off). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctest.h"
#include "gpuos.h"

#define NMAX 20000
static uint64_t rng;
static uint32_t rnd(uint32_t n) { return ctest_below(&rng, n); }

static int32_t hx[NMAX], hy[NMAX], got[NMAX];

static int relaunch; /* pause 3 ms at some idle points (the kernel of make_ctx(1) stops after 2 ms idle) */

static int program(gpuos_context *ctx, int rounds) {
    static const int64_t sizes[] = {1, 7, 100, 1023, 1024, 1025, 3000, 4096, 5000, 20000};
    const int64_t n = sizes[rnd((uint32_t)(sizeof sizes / sizeof sizes[0]))];
    gpuos_tensor *x = NULL, *y = NULL, *c = NULL, *three = NULL, *s = NULL, *pin = NULL;
    int64_t one = 1;
    int r, k, i, bad = 0, idles = 0;
    int32_t hs = 0;
    CHECK(gpuos_tensor_new(ctx, GPUOS_I32, 1, &n, &x) == GPUOS_OK && gpuos_tensor_new(ctx, GPUOS_I32, 1, &n, &y) == GPUOS_OK &&
              gpuos_tensor_scalar(ctx, GPUOS_I32, 5.0, &c) == GPUOS_OK &&
              gpuos_tensor_scalar(ctx, GPUOS_I32, 3.0, &three) == GPUOS_OK &&
              gpuos_tensor_new(ctx, GPUOS_I32, 1, &one, &s) == GPUOS_OK &&
              gpuos_tensor_new_pinned(ctx, GPUOS_I32, 1, &n, &pin) == GPUOS_OK,
          "%s", gpuos_last_error(ctx));
    if (!x || !y || !c || !three || !s || !pin) return 0;
    for (i = 0; i < n; i++) hx[i] = (int32_t)rnd(1000) - 500, hy[i] = (int32_t)rnd(1000) - 500;
    hs = (int32_t)rnd(100);
    CHECK(gpuos_upload(ctx, x, hx, (size_t)n * 4) == GPUOS_OK && gpuos_upload(ctx, y, hy, (size_t)n * 4) == GPUOS_OK &&
              gpuos_upload(ctx, s, &hs, 4) == GPUOS_OK,
          "%s", gpuos_last_error(ctx));
    for (r = 0; r < rounds; r++) {
        const int steps = 1 + (int)rnd(5);
        if (rnd(2) == 0) { /* idle: the next task may go express */
            CHECK(gpuos_wait(ctx, 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            idles++;
            if (relaunch && rnd(4) == 0) { /* the kernel stops; the next task launches it again */
                struct timespec ts = {0, 3000000};
                nanosleep(&ts, NULL);
            }
        }
        for (k = 0; k < steps; k++) {
            const int what = (int)rnd(9);
            if (what <= 2) { /* x = x + 5: a repeated task */
                CHECK(gpuos_add(ctx, x, x, c) == GPUOS_OK, "%s", gpuos_last_error(ctx));
                for (i = 0; i < n; i++) hx[i] = ctest_wrap_add(hx[i], 5);
            } else if (what == 3) { /* y = x * 3 */
                CHECK(gpuos_mul(ctx, y, x, three) == GPUOS_OK, "%s", gpuos_last_error(ctx));
                for (i = 0; i < n; i++) hy[i] = ctest_wrap_mul(hx[i], 3);
            } else if (what == 4) { /* x = x + y */
                CHECK(gpuos_add(ctx, x, x, y) == GPUOS_OK, "%s", gpuos_last_error(ctx));
                for (i = 0; i < n; i++) hx[i] = ctest_wrap_add(hx[i], hy[i]);
            } else if (what == 5) { /* x[::2] = x[::2] + s (a strided view, a broadcast one-element tensor) */
                gpuos_tensor *v = NULL;
                CHECK(gpuos_view_slice(x, 0, 0, n, 2, &v) == GPUOS_OK, "%s", gpuos_last_error(ctx));
                if (v) CHECK(gpuos_add(ctx, v, v, s) == GPUOS_OK, "%s", gpuos_last_error(ctx));
                for (i = 0; i < n; i += 2) hx[i] = ctest_wrap_add(hx[i], hs);
                gpuos_tensor_release(v);
            } else if (what == 6) { /* s = sum(x) (a reduction: one tile), then y = y + s */
                int32_t t = 0;
                CHECK(gpuos_sum(ctx, s, x, NULL, 0, 1) == GPUOS_OK, "%s", gpuos_last_error(ctx));
                for (i = 0; i < n; i++) t = ctest_wrap_add(t, hx[i]);
                hs = t;
                CHECK(gpuos_add(ctx, y, y, s) == GPUOS_OK, "%s", gpuos_last_error(ctx));
                for (i = 0; i < n; i++) hy[i] = ctest_wrap_add(hy[i], hs);
            } else if (what == 7) { /* a small download of a slice of x, checked at once */
                const int64_t a = rnd((uint32_t)n), len = 1 + rnd((uint32_t)(n - a < 64 ? n - a : 64));
                gpuos_tensor *v = NULL;
                int32_t buf[64];
                int b2 = 0;
                CHECK(gpuos_view_slice(x, 0, a, a + len, 1, &v) == GPUOS_OK, "%s", gpuos_last_error(ctx));
                CHECK(v && gpuos_download(ctx, v, buf, (size_t)len * 4) == GPUOS_OK, "%s", gpuos_last_error(ctx));
                for (i = 0; i < len; i++) b2 += buf[i] != hx[a + i];
                CHECK(b2 == 0, "round %d: download of x[%lld:%lld] (n %lld): %d elements differ", r, (long long)a,
                      (long long)(a + len), (long long)n, b2);
                gpuos_tensor_release(v);
            } else { /* pin = x (mapped host memory), read once the task is done */
                const int32_t *p = (const int32_t *)gpuos_tensor_host_data(pin);
                int b2 = 0;
                CHECK(gpuos_copy(ctx, pin, x) == GPUOS_OK, "%s", gpuos_last_error(ctx));
                CHECK(gpuos_wait_fence(ctx, gpuos_fence(ctx), 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
                for (i = 0; p && i < n; i++) b2 += p[i] != hx[i];
                CHECK(p && b2 == 0, "round %d: the pinned copy of x (n %lld): %d elements differ", r, (long long)n, b2);
            }
        }
    }
    CHECK(gpuos_download(ctx, x, got, (size_t)n * 4) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (i = 0; i < n; i++) bad += got[i] != hx[i];
    CHECK(bad == 0, "x (n %lld) after %d rounds: %d elements differ from the reference", (long long)n, rounds, bad);
    CHECK(gpuos_download(ctx, y, got, (size_t)n * 4) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (i = 0, bad = 0; i < n; i++) bad += got[i] != hy[i];
    CHECK(bad == 0, "y (n %lld) after %d rounds: %d elements differ from the reference", (long long)n, rounds, bad);
    gpuos_tensor_release(x);
    gpuos_tensor_release(y);
    gpuos_tensor_release(c);
    gpuos_tensor_release(three);
    gpuos_tensor_release(s);
    gpuos_tensor_release(pin);
    return idles;
}

/* The round trip's loop: x = x + 1, then wait for it, many times; then a burst of the same
   task without waits (the first goes express, the rest wait for it or follow each other). */
static void roundtrips(gpuos_context *ctx, int n_rt) {
    const int64_t n = 4096;
    const int n_max = n_rt + 2000;
    gpuos_tensor *x = NULL, *one = NULL;
    int i, bad = 0;
    CHECK(gpuos_tensor_new(ctx, GPUOS_I32, 1, &n, &x) == GPUOS_OK && gpuos_tensor_scalar(ctx, GPUOS_I32, 1.0, &one) == GPUOS_OK,
          "%s", gpuos_last_error(ctx));
    if (!x || !one) return;
    memset(got, 0, (size_t)n * 4);
    CHECK(gpuos_upload(ctx, x, got, (size_t)n * 4) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (i = 0; i < n_rt; i++) {
        CHECK(gpuos_add(ctx, x, x, one) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        if (i % 50 < 40) CHECK(gpuos_wait_fence(ctx, gpuos_fence(ctx), 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        /* Whether the express worker or the fetcher claims a task first is a race of their
           polls: under compute-sanitizer (every access trapped) the fetcher once won all 200.
           The mailbox path must run for the program to test it: up to 2000 more round trips
           while the worker has run none (the caller's express_counts checks it has; the same
           tensors: memcheck cannot see memory allocated while the kernel runs) */
        if (i == n_rt - 1 && n_rt < n_max) {
            uint64_t s0 = 0, r0 = 0;
            gpuos_debug_express(ctx, &s0, &r0);
            if (s0 > 0 && r0 == 0) n_rt += 100;
        }
    }
    CHECK(gpuos_download(ctx, x, got, (size_t)n * 4) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (i = 0; i < n; i++) bad += got[i] != n_rt;
    CHECK(bad == 0, "x after %d adds of 1: %d of %lld elements differ (element 0: %d)", n_rt, bad, (long long)n, got[0]);
    gpuos_tensor_release(x);
    gpuos_tensor_release(one);
}

/* Express tasks around a run-time operator's definition (on a GPU the definition stops the
   kernel and launches it again with run-time workers, so the express worker changes): express
   tasks before it (one right behind another, left to the express worker), then a fill whose
   plan is new (one tile on the new express worker, not express), the operator reading it, a
   small download; then the same after a redefinition. The GPU suite once hung here: after the
   relaunch the express worker thought a task of the last launch was still owed to it. */
static void around_define(gpuos_context *ctx) {
    gpuos_op_def d = GPUOS_OP_DEF_INIT;
    gpuos_op op = 0;
    gpuos_tensor *x = NULL, *y = NULL, *z = NULL, *one = NULL, *z0 = NULL;
    const int64_t n = 64, nz = 4096;
    float h[64], hz = -1.0f;
    int i, bad = 0;
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &x) == GPUOS_OK && gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &y) == GPUOS_OK &&
              gpuos_tensor_new(ctx, GPUOS_F32, 1, &nz, &z) == GPUOS_OK &&
              gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one) == GPUOS_OK,
          "%s", gpuos_last_error(ctx));
    if (!x || !y || !z || !one) return;
    CHECK(gpuos_view_slice(z, 0, 0, 1, 1, &z0) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_fill(ctx, z, 0.0) == GPUOS_OK && gpuos_wait(ctx, 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (i = 0; i < 20; i++) { /* a task and a small download of its result, each time idle */
        CHECK(gpuos_add(ctx, z, z, one) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(z0 && gpuos_download(ctx, z0, &hz, sizeof hz) == GPUOS_OK && hz == (float)(i + 1), "z[0] %g, want %d: %s",
              hz, i + 1, gpuos_last_error(ctx));
    }
    for (int round = 0; round < 2; round++) {
        d.name = "x_affine";
        d.source = round == 0 ? "out = a * 2.0f + 1.0f;" : "out = a * 3.0f;";
        d.n_inputs = 1;
        if (round == 0)
            CHECK(gpuos_op_define(ctx, &d, &op) == GPUOS_OK, "define: %s", gpuos_last_error(ctx));
        else
            CHECK(gpuos_op_redefine(ctx, op, &d) == GPUOS_OK, "redefine: %s", gpuos_last_error(ctx));
        CHECK(gpuos_fill(ctx, x, 3.0 + round) == GPUOS_OK, "fill: %s", gpuos_last_error(ctx));
        {
            gpuos_task t = GPUOS_TASK_INIT;
            t.op = op, t.out = y, t.in[0] = x;
            CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "submit: %s", gpuos_last_error(ctx));
        }
        for (i = 0; i < 64; i++) h[i] = -1.0f;
        CHECK(gpuos_download(ctx, y, h, sizeof h) == GPUOS_OK, "download: %s", gpuos_last_error(ctx));
        for (i = 0, bad = 0; i < 64; i++) bad += h[i] != (round == 0 ? 7.0f : 12.0f);
        CHECK(bad == 0, "round %d: %d of 64 outputs of the run-time operator wrong (y[0] %g)", round, bad, h[0]);
        CHECK(gpuos_add(ctx, z, z, one) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(z0 && gpuos_download(ctx, z0, &hz, sizeof hz) == GPUOS_OK && hz == (float)(21 + round),
              "z[0] %g after the definition: %s", hz, gpuos_last_error(ctx));
    }
    CHECK(gpuos_op_remove(ctx, op) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_wait(ctx, 20000) == GPUOS_OK && gpuos_context_status(ctx) == GPUOS_OK, "healthy: %s",
          gpuos_last_error(ctx));
    gpuos_tensor_release(z0);
    gpuos_tensor_release(x);
    gpuos_tensor_release(y);
    gpuos_tensor_release(z);
    gpuos_tensor_release(one);
}

static gpuos_context *make_ctx(int short_idle) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx = NULL;
    cfg.device = ctest_device();
    cfg.wait_timeout_ms = 20000;
    if (short_idle) cfg.idle_ms = 2;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) fprintf(stderr, "gpuos_create: %s\n", gpuos_last_error(NULL));
    return ctx;
}

/* The express counts of ctx, checked (on the GPU with express on: some sent, some run by the
   express worker, when want_some), then added to the totals. */
static void express_counts(gpuos_context *ctx, int want_some, uint64_t *sent_all, uint64_t *ran_all) {
    uint64_t sent = 0, ran = 0;
    gpuos_debug_express(ctx, &sent, &ran);
    if (gpuos_context_backend(ctx) == GPUOS_BACKEND_CUDA &&
        !(getenv("GPUOS_CUDA_EXPRESS") && atoi(getenv("GPUOS_CUDA_EXPRESS")) <= 0)) {
        /* the round trips send one after each wait; a worker that never took one would be a
           broken mailbox, not a busy worker */
        if (want_some) CHECK(sent >= 100, "express tasks sent: %llu", (unsigned long long)sent);
        if (want_some) CHECK(ran > 0, "express tasks run by the express worker: %llu", (unsigned long long)ran);
        CHECK(ran <= sent, "express tasks run by the express worker: %llu of %llu", (unsigned long long)ran,
              (unsigned long long)sent);
    } else {
        CHECK(sent == 0 && ran == 0, "express tasks without a GPU or with express off: %llu, %llu",
              (unsigned long long)sent, (unsigned long long)ran);
    }
    *sent_all += sent;
    *ran_all += ran;
}

int main(void) {
    const unsigned long long seed = ctest_seed("test_express");
    gpuos_context *ctx;
    uint64_t sent = 0, ran = 0;
    int p, idles = 0, cuda;
    const int quick = getenv("GPUOS_TEST_QUICK") != NULL, programs = quick ? 2 : 24;
    /* GPUOS_TEST_FRESH=1: a context per program, every tensor made before its first task
       (compute-sanitizer's memcheck cannot see memory allocated while a kernel runs) */
    const int fresh = getenv("GPUOS_TEST_FRESH") && atoi(getenv("GPUOS_TEST_FRESH")) > 0;
    rng = ctest_rng(seed, 1);
    /* express tasks are on by default: on here too (4 tiles), unless the environment says */
    if (!getenv("GPUOS_CUDA_EXPRESS")) setenv("GPUOS_CUDA_EXPRESS", "4", 1);
    if (!(ctx = make_ctx(0))) return 1;
    cuda = gpuos_context_backend(ctx) == GPUOS_BACKEND_CUDA;
    roundtrips(ctx, quick ? 200 : 2000);
    if (!fresh) around_define(ctx); /* (FRESH, for memcheck: no kernel relaunched mid-program) */
    for (p = 0; p < programs; p++) {
        /* the second half: a context whose kernel stops after 2 ms idle, with 3 ms pauses
           (express state across launches: a task left to the express worker in one launch) */
        if (!fresh && p == programs / 2) {
            CHECK(gpuos_context_status(ctx) == GPUOS_OK, "healthy: %s", gpuos_last_error(ctx));
            express_counts(ctx, 1, &sent, &ran);
            gpuos_destroy(ctx);
            if (!(ctx = make_ctx(1))) return 1;
            relaunch = 1;
        }
        if (fresh) {
            CHECK(gpuos_context_status(ctx) == GPUOS_OK, "healthy: %s", gpuos_last_error(ctx));
            express_counts(ctx, p == 0, &sent, &ran);
            gpuos_destroy(ctx);
            if (!(ctx = make_ctx(0))) return 1;
        }
        idles += program(ctx, 40);
    }
    CHECK(gpuos_context_status(ctx) == GPUOS_OK, "healthy: %s", gpuos_last_error(ctx));
    express_counts(ctx, 0, &sent, &ran);
    printf("%d programs (%d idle points) on %s; express tasks sent %llu, run by the express worker %llu\n", programs,
           idles, cuda ? "the device" : "the host executor", (unsigned long long)sent, (unsigned long long)ran);
    gpuos_destroy(ctx);
    return ctest_summary("test_express");
}
