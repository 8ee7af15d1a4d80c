/* test_semantics.c - promises of the manual that a new user's programs found broken
   (session 22's review), on $GPUOS_TEST_DEVICE:
   - views of one allocation that interleave without sharing an element (x[:, 0::2] and
     x[:, 1::2]) are accepted as output and input of one task, and give the right values;
     views that do share an element are still refused (GPUOS_ERR_ALIASING);
   - a high-priority graph launch behind conflicting normal work: its seq stands for the whole
     launch (gpuos_wait_task returns only once every node ran), and program order holds;
   - a node recorded with its own deadline_us does not count in gpuos_deadline_stats: a
     launch counts once, by the graph's deadline;
   - calls on a context after gpuos_destroy (a tensor keeps the handle alive) return
     GPUOS_ERR_INVALID_ARGUMENT;
   - gpuos_destroy waits for queued work at most wait_timeout_ms, also for the job running
     then (host executor: a long job stops between its chunks and items; it held the destroy
     for the whole job, a helper's audit).
   Values are checked exactly (i32) or within 1e-5 relative (f32 softmax) against C. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <time.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctest.h"
#include "gpuos.h"

static uint64_t rng;
static uint32_t rnd(uint32_t n) { return ctest_below(&rng, n); }

#define OKC(call) CHECK((call) == GPUOS_OK, "%s", gpuos_last_error(ctx))

/* x: a new [R, W] i32 tensor holding random values in -1000..1000, which *h (malloc'd) holds
   too; *got: room for a download of it. NULL (a failed check, nothing left allocated) if
   it cannot be made. */
static gpuos_tensor *random_i32(gpuos_context *ctx, int R, int W, int32_t **h, int32_t **got) {
    int64_t shape[2];
    gpuos_tensor *x = NULL;
    int i;
    shape[0] = R, shape[1] = W;
    *h = (int32_t *)malloc((size_t)R * W * sizeof **h);
    *got = (int32_t *)malloc((size_t)R * W * sizeof **got);
    if (!*h || !*got || gpuos_tensor_new(ctx, GPUOS_I32, 2, shape, &x) != GPUOS_OK) {
        CHECK(0, "no memory: %s", gpuos_last_error(ctx));
        free(*h);
        free(*got);
        return NULL;
    }
    for (i = 0; i < R * W; i++) (*h)[i] = (int32_t)rnd(2001) - 1000;
    OKC(gpuos_upload(ctx, x, *h, (size_t)R * W * sizeof **h));
    return x;
}

/* x: [R, K * C] i32; part p (0 <= p < K) is the view x[:, p::K], [R, C]. Random element-wise
   tasks between parts (out part != in parts), checked against the same on a C copy. */
static void interleave(gpuos_context *ctx, int round) {
    const int R = 1 + (int)rnd(9), C = 1 + (int)rnd(300), K = 2 + (int)rnd(3), W = K * C;
    int32_t *h, *got;
    gpuos_tensor *x = random_i32(ctx, R, W, &h, &got), *part[4] = {NULL}, *half = NULL;
    int i, t, bad = 0;
    if (!x) return;
    for (i = 0; i < K; i++) OKC(gpuos_view_slice(x, 1, i, GPUOS_SLICE_END, K, &part[i]));
    for (t = 0; t < 12; t++) {
        const int o = (int)rnd((uint32_t)K), a = (int)((o + 1 + rnd((uint32_t)K - 1)) % K),
                  b = (int)((o + 1 + rnd((uint32_t)K - 1)) % K), op = (int)rnd(4);
        gpuos_status s;
        int r, c;
        switch (op) {
        case 0: s = gpuos_sub(ctx, part[o], part[o], part[a]); break; /* in place on o, reading a */
        case 1: s = gpuos_add(ctx, part[o], part[a], part[b]); break;
        case 2: s = gpuos_mul(ctx, part[o], part[a], part[b]); break;
        default: s = gpuos_neg(ctx, part[o], part[a]); break;
        }
        CHECK(s == GPUOS_OK, "round %d task %d: op %d on parts %d <- %d, %d of %d: %s", round, t, op, o, a, b, K,
              gpuos_last_error(ctx));
        for (r = 0; r < R; r++)
            for (c = 0; c < C; c++) {
                int32_t *po = &h[r * W + c * K + o];
                const int32_t va = h[r * W + c * K + a], vb = h[r * W + c * K + b];
                switch (op) { /* wrapping arithmetic, as gpuos's integers */
                case 0: *po = ctest_wrap_sub(*po, va); break;
                case 1: *po = ctest_wrap_add(va, vb); break;
                case 2: *po = ctest_wrap_mul(va, vb); break;
                default: *po = (int32_t)(0u - (uint32_t)va); break;
                }
            }
    }
    OKC(gpuos_download(ctx, x, got, (size_t)R * W * sizeof *got));
    for (i = 0; i < R * W; i++) bad += got[i] != h[i];
    CHECK(bad == 0, "round %d: [%d, %d] in %d interleaved parts: %d elements differ", round, R, W, K, bad);
    /* a part and the first C columns (same shape, element 0 of every row in both): refused */
    if (C >= 2) {
        OKC(gpuos_view_slice(x, 1, 0, C, 1, &half));
        CHECK(gpuos_neg(ctx, part[0], half) == GPUOS_ERR_ALIASING, "round %d: a part and a view sharing its elements: %s",
              round, gpuos_last_error(ctx));
    }
    gpuos_tensor_release(half);
    for (i = 0; i < K; i++) gpuos_tensor_release(part[i]);
    gpuos_tensor_release(x);
    free(h);
    free(got);
}

/* The even and odd columns of x [1024, 4096] i32: 2^21 elements each, past the exact alias
   check's reach (2^20 output elements), were refused as "may overlap"; the strides' gcd (8
   bytes, the parts 4 bytes apart) shows at once that they share nothing. A part and the
   first half of the columns (which do share elements) stay refused. */
static void interleave_large(gpuos_context *ctx) {
    enum { R = 1024, W = 4096 };
    int32_t *h, *got;
    gpuos_tensor *x = random_i32(ctx, R, W, &h, &got), *ev = NULL, *od = NULL, *left = NULL;
    int i, bad = 0;
    if (!x) return;
    OKC(gpuos_view_slice(x, 1, 0, GPUOS_SLICE_END, 2, &ev));
    OKC(gpuos_view_slice(x, 1, 1, GPUOS_SLICE_END, 2, &od));
    OKC(gpuos_add(ctx, ev, ev, od));
    OKC(gpuos_mul(ctx, od, ev, ev));
    for (i = 0; i < R * W; i += 2) {
        h[i] = ctest_wrap_add(h[i], h[i + 1]);
        h[i + 1] = ctest_wrap_mul(h[i], h[i]);
    }
    OKC(gpuos_download(ctx, x, got, (size_t)R * W * sizeof *got));
    for (i = 0; i < R * W; i++) bad += got[i] != h[i];
    CHECK(bad == 0, "interleave_large: %d of %d elements differ", bad, R * W);
    OKC(gpuos_view_slice(x, 1, 0, W / 2, 1, &left));
    CHECK(gpuos_neg(ctx, ev, left) == GPUOS_ERR_ALIASING, "interleave_large: a part and a view sharing its elements: %s",
          gpuos_last_error(ctx));
    gpuos_tensor_release(left);
    gpuos_tensor_release(ev);
    gpuos_tensor_release(od);
    gpuos_tensor_release(x);
    free(h);
    free(got);
}

/* softmax of the odd columns into the even ones: a row operator between interleaved views */
static void interleave_rows(gpuos_context *ctx) {
    enum { R = 5, C = 37 };
    int64_t shape[2] = {R, 2 * C};
    float h[R * 2 * C], got[R * 2 * C];
    gpuos_tensor *x = NULL, *ev = NULL, *od = NULL;
    int r, c, bad = 0;
    for (r = 0; r < R * 2 * C; r++) h[r] = (float)((int)rnd(2001) - 1000) / 250.0f;
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 2, shape, &x));
    OKC(gpuos_upload(ctx, x, h, sizeof h));
    OKC(gpuos_view_slice(x, 1, 0, GPUOS_SLICE_END, 2, &ev));
    OKC(gpuos_view_slice(x, 1, 1, GPUOS_SLICE_END, 2, &od));
    OKC(gpuos_softmax(ctx, ev, od, -1));
    OKC(gpuos_download(ctx, x, got, sizeof got));
    for (r = 0; r < R; r++) {
        double m = -INFINITY, sum = 0.0;
        for (c = 0; c < C; c++) m = fmax(m, (double)h[r * 2 * C + 2 * c + 1]);
        for (c = 0; c < C; c++) sum += exp((double)h[r * 2 * C + 2 * c + 1] - m);
        for (c = 0; c < C; c++) {
            const double want = exp((double)h[r * 2 * C + 2 * c + 1] - m) / sum;
            bad += fabs((double)got[r * 2 * C + 2 * c] - want) > 1e-5 * want + 1e-30;
            bad += got[r * 2 * C + 2 * c + 1] != h[r * 2 * C + 2 * c + 1]; /* the input part is untouched */
        }
    }
    CHECK(bad == 0, "softmax between interleaved views: %d values wrong", bad);
    gpuos_tensor_release(ev);
    gpuos_tensor_release(od);
    gpuos_tensor_release(x);
}

/* A high-priority graph of fills: first = v0 (node 0, the one that meets earlier work), then
   each of rest = v1. NULL if it cannot be made (the check says why). */
static gpuos_graph *fill_graph(gpuos_context *ctx, gpuos_tensor *first, double v0, gpuos_tensor *const *rest,
                               int n_rest, double v1) {
    gpuos_graph *g = NULL;
    gpuos_task t = GPUOS_TASK_INIT;
    int i;
    OKC(gpuos_graph_create(ctx, &g));
    if (!g) return NULL;
    OKC(gpuos_graph_set_priority(g, GPUOS_PRIORITY_HIGH));
    t.op = GPUOS_OP_FILL;
    t.out = first;
    t.scalar[0] = v0;
    OKC(gpuos_graph_add(g, &t, NULL));
    for (i = 0; i < n_rest; i++) {
        t.out = rest[i];
        t.scalar[0] = v1;
        OKC(gpuos_graph_add(g, &t, NULL));
    }
    return g;
}

/* A high-priority launch whose first node conflicts with queued normal work, its last not. */
static void graph_priority(gpuos_context *ctx, int host) {
    int64_t sa[2] = {300, 300}, sb = 4;
    gpuos_tensor *A = NULL, *Y = NULL, *B = NULL;
    gpuos_graph *g = NULL;
    uint64_t seq = 0;
    float y[300 * 300], b[4];
    int i, bad = 0;
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 2, sa, &A));
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 2, sa, &Y));
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 1, &sb, &B));
    OKC(gpuos_fill(ctx, A, 1.0));
    OKC(gpuos_wait(ctx, 10000));
    g = fill_graph(ctx, A, 5.0, &B, 1, 7.0); /* node 0 overwrites what the matmul below reads; node 1
                                                conflicts with nothing */
    if (host) (void)gpuos_debug_pause(ctx, 1); /* both queued before anything runs */
    OKC(gpuos_matmul(ctx, Y, A, A));
    OKC(gpuos_graph_launch(g, NULL, 0, NULL, 0, &seq));
    if (host) (void)gpuos_debug_pause(ctx, 0);
    OKC(gpuos_wait_task(ctx, seq, 20000));
    CHECK(gpuos_task_done(ctx, seq - 1) == 1, "gpuos_wait_task on the launch's seq returned before its first node ran");
    OKC(gpuos_wait(ctx, 20000));
    OKC(gpuos_download(ctx, Y, y, sizeof y));
    OKC(gpuos_download(ctx, B, b, sizeof b));
    for (i = 0; i < 300 * 300; i++) bad += y[i] != 300.0f; /* the matmul read A before the launch's fill */
    for (i = 0; i < 4; i++) bad += b[i] != 7.0f;
    CHECK(bad == 0, "program order around a high-priority launch: %d values wrong", bad);
    gpuos_graph_release(g);
    gpuos_tensor_release(A);
    gpuos_tensor_release(Y);
    gpuos_tensor_release(B);
}

/* The same launch with a binding (the GPU plans such a launch node by node, each task its own
   job): one lane for the launch there too. 2048x2048 products queued before it, 4 times. */
static void graph_priority_bound(gpuos_context *ctx) {
    int64_t sa[2] = {1024, 1024}, sb = 4;
    gpuos_tensor *A = NULL, *Y = NULL, *B = NULL, *B2 = NULL;
    gpuos_graph *g = NULL;
    float b[4];
    int r, k, early = 0;
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 2, sa, &A));
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 2, sa, &Y));
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 1, &sb, &B));
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 1, &sb, &B2));
    g = fill_graph(ctx, A, 5.0, &B, 1, 7.0);
    for (r = 0; r < 4; r++) {
        gpuos_graph_bind bd;
        uint64_t seq = 0;
        bd.recorded = B;
        bd.actual = B2;
        OKC(gpuos_fill(ctx, A, 1.0));
        OKC(gpuos_wait(ctx, 20000));
        for (k = 0; k < 2; k++) OKC(gpuos_matmul(ctx, Y, A, A));
        OKC(gpuos_graph_launch(g, &bd, 1, NULL, 0, &seq));
        OKC(gpuos_wait_task(ctx, seq, 20000));
        early += gpuos_task_done(ctx, seq - 1) != 1;
        OKC(gpuos_wait(ctx, 20000));
        OKC(gpuos_download(ctx, B2, b, sizeof b));
        CHECK(b[0] == 7.0f && b[3] == 7.0f, "the bound launch wrote %g into the bound tensor", b[0]);
    }
    CHECK(early == 0, "a bound high-priority launch: its seq finished before its first node in %d of 4 launches", early);
    gpuos_graph_release(g);
    gpuos_tensor_release(A);
    gpuos_tensor_release(Y);
    gpuos_tensor_release(B);
    gpuos_tensor_release(B2);
}

/* Host: a high-priority launch longer than the room left in a small queue waits for room
   part way, while another thread queues lane-0 work: the rest of the launch must not be placed
   in a higher lane than its first part (it would run ahead of it). */
static gpuos_context *qctx;
static gpuos_graph *qg;
static gpuos_tensor *qe;
static uint64_t qseq;
static gpuos_status qst;
static void *q_launch(void *arg) {
    (void)arg;
    qst = gpuos_graph_launch(qg, NULL, 0, NULL, 0, &qseq);
    return NULL;
}
static void *q_other(void *arg) {
    (void)arg;
    (void)gpuos_fill(qctx, qe, 3.0);
    return NULL;
}
static void graph_priority_small_queue(void) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx;
    int64_t big = (int64_t)1 << 20, sa[2] = {256, 256}, s1 = 4;
    gpuos_tensor *A = NULL, *Y = NULL, *F = NULL, *Bn[9] = {NULL};
    const struct timespec pause = {0, 20000000L};
    int i, r, early = 0;
    cfg.device = GPUOS_DEVICE_HOST;
    cfg.queue_capacity = 16;
    cfg.submit_timeout_ms = 60000;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        CHECK(0, "gpuos_create: %s", gpuos_last_error(NULL));
        return;
    }
    qctx = ctx;
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 2, sa, &A));
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 2, sa, &Y));
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 1, &big, &F));
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 1, &s1, &qe));
    for (i = 0; i < 9; i++) OKC(gpuos_tensor_new(ctx, GPUOS_F32, 1, &s1, &Bn[i]));
    qg = fill_graph(ctx, A, 5.0, Bn, 9, 7.0); /* node 0 conflicts with the matmul below: lane 0 */
    for (r = 0; r < 5; r++) {
        pthread_t a1, a2;
        uint64_t m = 0;
        gpuos_task mt = GPUOS_TASK_INIT;
        OKC(gpuos_fill(ctx, A, 1.0));
        OKC(gpuos_wait(ctx, 20000));
        (void)gpuos_debug_pause(ctx, 1);
        mt.op = GPUOS_OP_MATMUL;
        mt.out = Y;
        mt.in[0] = A;
        mt.in[1] = A;
        OKC(gpuos_submit(ctx, &mt, &m));
        for (i = 0; i < 11; i++) OKC(gpuos_fill(ctx, F, (double)i)); /* 12 queued: the launch waits for room */
        pthread_create(&a1, NULL, q_launch, NULL);
        nanosleep(&pause, NULL);
        pthread_create(&a2, NULL, q_other, NULL); /* lane-0 work while the launch waits */
        nanosleep(&pause, NULL);
        (void)gpuos_debug_pause(ctx, 0);
        pthread_join(a1, NULL);
        CHECK(qst == GPUOS_OK, "%s", gpuos_last_error(ctx));
        OKC(gpuos_wait_task(ctx, qseq, 20000));
        early += gpuos_task_done(ctx, m + 12) != 1; /* node 0 */
        pthread_join(a2, NULL);
        OKC(gpuos_wait(ctx, 20000));
    }
    CHECK(early == 0, "a launch that waited for room: its seq finished before its first node in %d of 5", early);
    gpuos_graph_release(qg);
    gpuos_tensor_release(A);
    gpuos_tensor_release(Y);
    gpuos_tensor_release(F);
    gpuos_tensor_release(qe);
    for (i = 0; i < 9; i++) gpuos_tensor_release(Bn[i]);
    gpuos_destroy(ctx);
}

/* A bound high-priority launch whose sixth node reads what five others wrote (more
   dependencies than a task carries: it waits for every earlier task, and on the GPU, with
   unrelated normal work unretired, goes to lane 0): the launch's seq still stands for it. */
static void graph_priority_wait_all(gpuos_context *ctx, int host) {
    const int64_t m = host ? 64 : 1024, mb = host ? 128 : 2048;
    int64_t sx[2] = {5 * m, m}, sa[2] = {m, m}, sb[2] = {mb, mb}, s1 = 4;
    gpuos_tensor *A = NULL, *X = NULL, *Xs[5] = {NULL}, *Z = NULL, *B = NULL, *BY = NULL, *Q = NULL, *Q2 = NULL;
    gpuos_graph *g = NULL;
    gpuos_task t = GPUOS_TASK_INIT;
    int i, r, k, early = 0;
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 2, sa, &A));
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 2, sx, &X));
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 2, sx, &Z));
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 2, sb, &B));
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 2, sb, &BY));
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 1, &s1, &Q));
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 1, &s1, &Q2));
    for (i = 0; i < 5; i++) OKC(gpuos_view_slice(X, 0, i * m, (i + 1) * m, 1, &Xs[i]));
    OKC(gpuos_fill(ctx, A, 0.001));
    OKC(gpuos_fill(ctx, B, 0.001));
    OKC(gpuos_graph_create(ctx, &g));
    OKC(gpuos_graph_set_priority(g, GPUOS_PRIORITY_HIGH));
    for (i = 0; i < 5; i++) {
        t = (gpuos_task)GPUOS_TASK_INIT;
        t.op = GPUOS_OP_MATMUL;
        t.out = Xs[i];
        t.in[0] = A;
        t.in[1] = A;
        OKC(gpuos_graph_add(g, &t, NULL));
    }
    t = (gpuos_task)GPUOS_TASK_INIT;
    t.op = GPUOS_OP_ADD;
    t.out = Z;
    t.in[0] = X;
    t.in[1] = X;
    OKC(gpuos_graph_add(g, &t, NULL));
    t = (gpuos_task)GPUOS_TASK_INIT;
    t.op = GPUOS_OP_FILL;
    t.out = Q;
    t.scalar[0] = 7.0;
    OKC(gpuos_graph_add(g, &t, NULL));
    for (r = 0; r < 4; r++) {
        gpuos_graph_bind bd;
        uint64_t seq = 0;
        bd.recorded = Q;
        bd.actual = Q2;
        OKC(gpuos_wait(ctx, 20000));
        for (k = 0; k < 3; k++) OKC(gpuos_matmul(ctx, BY, B, B)); /* unrelated normal work */
        OKC(gpuos_graph_launch(g, &bd, 1, NULL, 0, &seq));
        OKC(gpuos_wait_task(ctx, seq, 20000));
        for (k = 1; k <= 6; k++) early += gpuos_task_done(ctx, seq - (uint64_t)k) != 1;
    }
    OKC(gpuos_wait(ctx, 20000));
    CHECK(early == 0, "a launch's seq finished before %d of its other nodes (4 launches of 7 nodes)", early);
    gpuos_graph_release(g);
    for (i = 0; i < 5; i++) gpuos_tensor_release(Xs[i]);
    gpuos_tensor_release(A);
    gpuos_tensor_release(X);
    gpuos_tensor_release(Z);
    gpuos_tensor_release(B);
    gpuos_tensor_release(BY);
    gpuos_tensor_release(Q);
    gpuos_tensor_release(Q2);
}

/* Host: with deadlines the executor takes lane-1 work by deadline; a launch's nodes still
   run in their order (node 0 waits for an older high-priority matmul, node 1 does not). */
static void graph_priority_deadline_order(gpuos_context *ctx) {
    int64_t sa[2] = {256, 256}, s1 = 4;
    gpuos_tensor *A = NULL, *Y = NULL, *Q = NULL;
    gpuos_graph *g = NULL;
    gpuos_task mt = GPUOS_TASK_INIT;
    int r, early = 0;
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 2, sa, &A));
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 2, sa, &Y));
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 1, &s1, &Q));
    OKC(gpuos_fill(ctx, A, 1.0));
    g = fill_graph(ctx, Y, 5.0, &Q, 1, 7.0); /* node 0: the matmul's output; node 1: unrelated */
    OKC(gpuos_graph_set_deadline(g, 100000));
    for (r = 0; r < 5; r++) {
        uint64_t seq = 0;
        OKC(gpuos_wait(ctx, 20000));
        (void)gpuos_debug_pause(ctx, 1);
        mt.op = GPUOS_OP_MATMUL;
        mt.out = Y;
        mt.in[0] = A;
        mt.in[1] = A;
        mt.priority = GPUOS_PRIORITY_HIGH; /* lane 1, no deadline */
        OKC(gpuos_submit(ctx, &mt, NULL));
        OKC(gpuos_graph_launch(g, NULL, 0, NULL, 0, &seq));
        (void)gpuos_debug_pause(ctx, 0);
        OKC(gpuos_wait_task(ctx, seq, 20000));
        early += gpuos_task_done(ctx, seq - 1) != 1;
    }
    OKC(gpuos_wait(ctx, 20000));
    CHECK(early == 0, "deadline order: a launch's seq finished before its node 0 in %d of 5", early);
    gpuos_graph_release(g);
    gpuos_tensor_release(A);
    gpuos_tensor_release(Y);
    gpuos_tensor_release(Q);
}

/* A node recorded with its own deadline: a launch counts once, by the graph's deadline. */
static void graph_node_deadline(gpuos_context *ctx) {
    int64_t n = 16;
    gpuos_tensor *x = NULL;
    gpuos_graph *g = NULL;
    gpuos_task t = GPUOS_TASK_INIT;
    uint64_t met0 = 0, missed0 = 0, met1 = 0, missed1 = 0, met2 = 0, missed2 = 0;
    int i;
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &x));
    OKC(gpuos_graph_create(ctx, &g));
    t.op = GPUOS_OP_FILL;
    t.out = x;
    t.scalar[0] = 1.0;
    t.deadline_us = 1000000; /* the node's own deadline: not the launch's */
    OKC(gpuos_graph_add(g, &t, NULL));
    t.deadline_us = 0;
    t.scalar[0] = 2.0;
    OKC(gpuos_graph_add(g, &t, NULL));
    OKC(gpuos_wait(ctx, 10000));
    OKC(gpuos_deadline_stats(ctx, &met0, &missed0));
    for (i = 0; i < 10; i++) OKC(gpuos_graph_launch(g, NULL, 0, NULL, 0, NULL));
    OKC(gpuos_wait(ctx, 10000));
    OKC(gpuos_deadline_stats(ctx, &met1, &missed1));
    CHECK(met1 == met0 && missed1 == missed0, "launches of a graph without a deadline counted: met +%llu, missed +%llu",
          (unsigned long long)(met1 - met0), (unsigned long long)(missed1 - missed0));
    OKC(gpuos_graph_set_deadline(g, 10000000)); /* 10 s: met */
    for (i = 0; i < 10; i++) OKC(gpuos_graph_launch(g, NULL, 0, NULL, 0, NULL));
    OKC(gpuos_wait(ctx, 10000));
    OKC(gpuos_deadline_stats(ctx, &met2, &missed2));
    CHECK(met2 - met1 == 10 && missed2 == missed1, "10 launches with a 10 s deadline: met +%llu, missed +%llu",
          (unsigned long long)(met2 - met1), (unsigned long long)(missed2 - missed1));
    gpuos_graph_release(g);
    gpuos_tensor_release(x);
}

/* wait_timeout_ms = 0 ("do not wait" for the implicit waits): the executor's own stops still
   wait for the device (on a GPU every idle stop was a false GPUOS_ERR_DEVICE_LOST, and
   creation could time out clearing the queue's memory: a helper's reading of the code). */
static void zero_wait_timeout(int device) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx = NULL;
    gpuos_tensor *x = NULL, *one = NULL, *pin = NULL;
    int64_t n = 4096;
    static float h[4096];
    int k, i, bad = 0;
    uint64_t seq = 0;
    struct timespec ts = {0, 30 * 1000000L};
    cfg.device = device;
    cfg.wait_timeout_ms = 0;
    cfg.idle_ms = 5;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        CHECK(0, "gpuos_create with wait_timeout_ms = 0: %s", gpuos_last_error(NULL));
        return;
    }
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &x));
    OKC(gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one));
    OKC(gpuos_fill(ctx, x, 0.0));
    for (k = 0; k < 3; k++) { /* each round after an idle stop of the kernel */
        OKC(gpuos_add(ctx, x, x, one));
        seq = gpuos_fence(ctx);
        OKC(gpuos_wait_fence(ctx, seq, 20000));
        nanosleep(&ts, NULL);
    }
    /* read back through a pinned tensor and an explicit wait (gpuos_download's implicit wait
       would not wait: wait_timeout_ms = 0) */
    OKC(gpuos_tensor_new_pinned(ctx, GPUOS_F32, 1, &n, &pin));
    OKC(gpuos_copy(ctx, pin, x));
    OKC(gpuos_wait(ctx, 20000));
    memcpy(h, gpuos_tensor_host_data(pin), sizeof h);
    for (i = 0; i < 4096; i++) bad += h[i] != 3.0f;
    CHECK(bad == 0, "wait_timeout_ms = 0: %d of 4096 elements not 3", bad);
    CHECK(gpuos_context_status(ctx) == GPUOS_OK, "wait_timeout_ms = 0: the context is healthy after idle stops: %s",
          gpuos_last_error(ctx));
    gpuos_tensor_release(x);
    gpuos_tensor_release(one);
    gpuos_tensor_release(pin);
    gpuos_destroy(ctx);
}

/* After gpuos_destroy, with a tensor keeping the handle alive. */
static void after_destroy(int device) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx = NULL;
    gpuos_tensor *x = NULL, *t = NULL, *w = NULL;
    gpuos_graph *g = NULL, *g2 = NULL;
    gpuos_tensor *v = NULL;
    gpuos_op_def d = GPUOS_OP_DEF_INIT;
    gpuos_op op = GPUOS_OP_ADD;
    int64_t n = 4;
    float mem[4];
    uint64_t met, missed;
    cfg.device = device;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        CHECK(0, "gpuos_create: %s", gpuos_last_error(NULL));
        return;
    }
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &x));
    OKC(gpuos_graph_create(ctx, &g2));
    { /* a node of a run-time operator: its version is dropped at destroy (the launch below
         planned it again and said GPUOS_ERR_UNKNOWN_OP) */
        gpuos_op_def d2 = GPUOS_OP_DEF_INIT;
        gpuos_op op2;
        gpuos_task tk = GPUOS_TASK_INIT;
        d2.name = "plus1";
        d2.source = "out = a + 1.0f;";
        d2.n_inputs = 1;
        OKC(gpuos_op_define(ctx, &d2, &op2));
        tk.op = op2, tk.out = x, tk.in[0] = x;
        OKC(gpuos_graph_add(g2, &tk, NULL));
    }
    gpuos_destroy(ctx); /* x keeps the handle alive */
    CHECK(gpuos_graph_launch(g2, NULL, 0, NULL, 0, NULL) == GPUOS_ERR_INVALID_ARGUMENT, "graph_launch after destroy");
    CHECK(gpuos_context_status(ctx) == GPUOS_ERR_INVALID_ARGUMENT, "context_status after destroy");
    {
        gpuos_task tk = GPUOS_TASK_INIT;
        int node = 0;
        tk.op = GPUOS_OP_ADD, tk.out = x, tk.in[0] = x, tk.in[1] = x;
        CHECK(gpuos_graph_add(g2, &tk, &node) == GPUOS_ERR_INVALID_ARGUMENT, "graph_add after destroy");
        CHECK(gpuos_graph_add_dep(g2, 0, 0) == GPUOS_ERR_INVALID_ARGUMENT, "graph_add_dep after destroy");
        OKC(gpuos_view_slice(x, 0, 1, 3, 1, &v)); /* a view needs only the memory x keeps */
        gpuos_tensor_release(v);
    }
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &t) == GPUOS_ERR_INVALID_ARGUMENT && !t, "tensor_new after destroy");
    CHECK(gpuos_tensor_new_pinned(ctx, GPUOS_F32, 1, &n, &t) == GPUOS_ERR_INVALID_ARGUMENT && !t, "tensor_new_pinned after destroy");
    CHECK(gpuos_tensor_wrap(ctx, mem, sizeof mem, GPUOS_F32, 1, &n, NULL, &w) == GPUOS_ERR_INVALID_ARGUMENT && !w,
          "tensor_wrap after destroy");
    CHECK(gpuos_graph_create(ctx, &g) == GPUOS_ERR_INVALID_ARGUMENT && !g, "graph_create after destroy");
    d.name = "k";
    d.source = "out = 1;";
    CHECK(gpuos_op_define(ctx, &d, &op) == GPUOS_ERR_INVALID_ARGUMENT, "op_define after destroy");
    CHECK(gpuos_op_redefine(ctx, GPUOS_OP_RUNTIME_BASE, &d) == GPUOS_ERR_INVALID_ARGUMENT, "op_redefine after destroy");
    CHECK(gpuos_op_remove(ctx, GPUOS_OP_RUNTIME_BASE) == GPUOS_ERR_INVALID_ARGUMENT, "op_remove after destroy");
    CHECK(gpuos_deadline_stats(ctx, &met, &missed) == GPUOS_ERR_INVALID_ARGUMENT, "deadline_stats after destroy");
    CHECK(gpuos_add(ctx, x, x, x) == GPUOS_ERR_INVALID_ARGUMENT, "submit after destroy");
    CHECK(strstr(gpuos_last_error(ctx), "destroyed") != NULL, "the message says why: %s", gpuos_last_error(ctx));
    gpuos_tensor_release(t);
    gpuos_tensor_release(w);
    gpuos_graph_release(g);
    gpuos_graph_release(g2);
    gpuos_tensor_release(x); /* frees the context */
    { /* a graph without nodes holds the context too (it was freed at destroy: a use after free) */
        gpuos_graph *e = NULL;
        gpuos_task tk = GPUOS_TASK_INIT;
        if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
            CHECK(0, "gpuos_create: %s", gpuos_last_error(NULL));
            return;
        }
        OKC(gpuos_graph_create(ctx, &e));
        gpuos_destroy(ctx); /* e keeps the handle alive */
        CHECK(gpuos_graph_add(e, &tk, NULL) == GPUOS_ERR_INVALID_ARGUMENT, "empty graph: add after destroy");
        CHECK(gpuos_graph_launch(e, NULL, 0, NULL, 0, NULL) == GPUOS_ERR_INVALID_ARGUMENT,
              "empty graph: launch after destroy");
        CHECK(gpuos_graph_add_dep(e, 0, 0) == GPUOS_ERR_INVALID_ARGUMENT, "empty graph: add_dep after destroy");
        CHECK(gpuos_graph_set_priority(e, 99) != GPUOS_OK, "empty graph: a bad priority after destroy");
        gpuos_graph_release(e); /* frees the context */
    }
}

/* An empty tensor whose other sizes multiply past 2^63 (a fuzzer's find: signed overflows in
   the reduction's element counts and the slice's offset). Reductions over it and slices of it
   are valid and reach nothing: an empty result, the context healthy. */
static void empty_huge(gpuos_context *ctx) {
    const int64_t big = (int64_t)1 << 40, shape[3] = {0, big, big}, oshape[1] = {0};
    gpuos_tensor *t = NULL, *v = NULL, *o = NULL;
    const int axes[2] = {1, 2};
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 3, shape, &t) == GPUOS_OK && t, "%s", gpuos_last_error(ctx));
    if (!t) return;
    {
        gpuos_tensor_info info;
        CHECK(gpuos_view_slice(t, 2, 5, 100, 3, &v) == GPUOS_OK && v && gpuos_tensor_get_info(v, &info) == GPUOS_OK &&
                  info.numel == 0 && info.shape[2] == 32,
              "a slice of the empty tensor: %s", gpuos_last_error(ctx));
    }
    gpuos_tensor_release(v);
    v = NULL;
    { /* unsqueeze: the new axis' stride is size x stride of the next one, which overflows here */
        const int64_t hs[3] = {0, (int64_t)1 << 62, 4};
        gpuos_tensor *h = NULL;
        CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 3, hs, &h) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        if (h) CHECK(gpuos_view_unsqueeze(h, 1, &v) == GPUOS_OK, "unsqueeze of an empty huge tensor: %s", gpuos_last_error(ctx));
        gpuos_tensor_release(v);
        v = NULL;
        gpuos_tensor_release(h);
    }
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 1, oshape, &o) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    if (o) CHECK(gpuos_sum(ctx, o, t, axes, 2, 0) == GPUOS_OK, "sum over the huge axes: %s", gpuos_last_error(ctx));
    /* a helper's fuzzing under UBSan (session 30): plans and kernels multiplied an empty
       tensor's huge sizes or strides (signed overflow); the results and statuses are checked
       here, the overflow itself under the sanitizers */
    {
        const int64_t sh[3] = {(int64_t)1 << 61, (int64_t)1 << 62, 0};
        const int64_t sa[4] = {big, big, 0, 4}, sb[2] = {4, 5}, so[4] = {big, big, 0, 5};
        const int64_t n8 = 8, vs[3] = {3, 5, 0}, vst[3] = {1, ((int64_t)1 << 61) + 1, 1}, os[2] = {3, 5};
        const int64_t bs[2] = {3, 0}, bst[2] = {(int64_t)1 << 62, 1}, three = 3;
        gpuos_tensor *a = NULL, *b = NULL, *c = NULL, *w = NULL, *rs = NULL;
        int ax = 2;
        float got[15];
        unsigned char any[3] = {1, 1, 1};
        int i, bad = 0;
        CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 3, sh, &a) == GPUOS_OK && gpuos_tensor_new(ctx, GPUOS_F32, 3, sh, &c) == GPUOS_OK,
              "%s", gpuos_last_error(ctx));
        if (a && c) CHECK(gpuos_softmax(ctx, c, a, -1) == GPUOS_OK, "softmax of [2^61, 2^62, 0]: %s", gpuos_last_error(ctx));
        gpuos_tensor_release(a), gpuos_tensor_release(c), a = c = NULL;
        CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 4, sa, &a) == GPUOS_OK && gpuos_tensor_new(ctx, GPUOS_F32, 2, sb, &b) == GPUOS_OK &&
                  gpuos_tensor_new(ctx, GPUOS_F32, 4, so, &c) == GPUOS_OK,
              "%s", gpuos_last_error(ctx));
        if (a && b && c)
            CHECK(gpuos_matmul(ctx, c, a, b) == GPUOS_OK, "matmul of [2^40, 2^40, 0, 4] and [4, 5]: %s", gpuos_last_error(ctx));
        gpuos_tensor_release(a), gpuos_tensor_release(b), gpuos_tensor_release(c), a = b = c = NULL;
        /* sum over the empty axis of a view with a huge stride: 15 zeros */
        CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 1, &n8, &b) == GPUOS_OK && gpuos_view_strided(b, 3, vs, vst, 0, &a) == GPUOS_OK &&
                  gpuos_tensor_new(ctx, GPUOS_F32, 2, os, &c) == GPUOS_OK && gpuos_fill(ctx, c, 7.0) == GPUOS_OK,
              "%s", gpuos_last_error(ctx));
        if (a && c) {
            CHECK(gpuos_sum(ctx, c, a, &ax, 1, 0) == GPUOS_OK, "sum over an empty axis: %s", gpuos_last_error(ctx));
            CHECK(gpuos_download(ctx, c, got, sizeof got) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            for (i = 0; i < 15; i++) bad += got[i] != 0.0f;
            CHECK(bad == 0, "sum over an empty axis of a strided view: %d of 15 not 0", bad);
        }
        gpuos_tensor_release(a), gpuos_tensor_release(b), gpuos_tensor_release(c), a = b = c = NULL;
        /* any over the empty axis of a bool view with stride 2^62: false */
        ax = 1;
        CHECK(gpuos_tensor_new(ctx, GPUOS_BOOL, 1, &n8, &b) == GPUOS_OK && gpuos_view_strided(b, 2, bs, bst, 0, &a) == GPUOS_OK &&
                  gpuos_tensor_new(ctx, GPUOS_BOOL, 1, &three, &c) == GPUOS_OK && gpuos_fill(ctx, c, 1.0) == GPUOS_OK,
              "%s", gpuos_last_error(ctx));
        if (a && c) {
            CHECK(gpuos_any(ctx, c, a, &ax, 1, 0) == GPUOS_OK, "any over an empty axis: %s", gpuos_last_error(ctx));
            CHECK(gpuos_download(ctx, c, any, sizeof any) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            CHECK(!any[0] && !any[1] && !any[2], "any over an empty axis: %d %d %d, want 0 0 0", any[0], any[1], any[2]);
        }
        gpuos_tensor_release(a), gpuos_tensor_release(b), gpuos_tensor_release(c), a = b = c = NULL;
        /* an empty shape whose other sizes multiply past 2^63 reshapes (to itself, and from [0]) */
        if (t) {
            const int64_t huge[3] = {big, big, 0}, zero1[1] = {0};
            CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 3, huge, &w) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            if (w) CHECK(gpuos_view_reshape(w, 3, huge, &rs) == GPUOS_OK, "reshape [2^40, 2^40, 0] to itself: %s",
                         gpuos_last_error(ctx));
            gpuos_tensor_release(rs), rs = NULL;
            if (w) CHECK(gpuos_view_reshape(w, 1, zero1, &rs) == GPUOS_OK && gpuos_view_reshape(rs, 3, huge, &a) == GPUOS_OK,
                         "reshape [0] to [2^40, 2^40, 0]: %s", gpuos_last_error(ctx));
            gpuos_tensor_release(a), gpuos_tensor_release(rs), gpuos_tensor_release(w);
        }
    }
    CHECK(gpuos_wait(ctx, 20000) == GPUOS_OK && gpuos_context_status(ctx) == GPUOS_OK, "healthy: %s",
          gpuos_last_error(ctx));
    gpuos_tensor_release(o);
    gpuos_tensor_release(v);
    gpuos_tensor_release(t);
}

/* gpuos_last_error from several threads failing at once: each string read is whole (the
   process-wide buffer's slots were handed out and rewritten under the reader: torn strings). */
static int lerr_torn;
static void *lerr_thread(void *arg) {
    gpuos_tensor_info in;
    int i;
    (void)arg;
    for (i = 0; i < 20000; i++) {
        const char *s;
        gpuos_tensor_get_info(NULL, &in);
        s = gpuos_last_error(NULL);
        if (strcmp(s, "GPUOS_ERR_NULL_POINTER: gpuos_tensor_get_info: t is NULL") != 0)
            __atomic_add_fetch(&lerr_torn, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}
static void last_error_threads(void) {
    pthread_t t[4];
    int k, n = 0;
    for (k = 0; k < 4; k++) n += pthread_create(&t[k], NULL, lerr_thread, NULL) == 0;
    for (k = 0; k < n; k++) pthread_join(t[k], NULL);
    CHECK(n == 4 && lerr_torn == 0, "gpuos_last_error from 4 failing threads: %d strings not the message", lerr_torn);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A host-executor context for destroy_long_job: one thread (k = 0: steps) or the default
   pool (chunks), wait_timeout_ms = 100. NULL (and a failed check) if it cannot be made. */
static gpuos_context *long_job_ctx(int k) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx = NULL;
    cfg.device = GPUOS_DEVICE_HOST;
    cfg.host_threads = k == 0 ? 1 : 0;
    cfg.wait_timeout_ms = 100;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        CHECK(0, "gpuos_create: %s", gpuos_last_error(NULL));
        return NULL;
    }
    return ctx;
}

/* Lets the job start, then times the release of the n tensors ts and gpuos_destroy: it must
   return long before the job would end (it waited for all of it). */
static void destroy_timed(gpuos_context *ctx, gpuos_tensor **ts, int n, const char *what, int k) {
    struct timespec sl = {0, 50000000};
    double t0, t1;
    int i;
    nanosleep(&sl, NULL); /* the job runs */
    t0 = now_s();
    for (i = 0; i < n; i++) gpuos_tensor_release(ts[i]);
    gpuos_destroy(ctx);
    t1 = now_s();
    CHECK(t1 - t0 < 3.0, "gpuos_destroy (wait_timeout_ms 100) during %s (%s) took %.2f s: it waited for the running job",
          what, k == 0 ? "one thread" : "a pool", t1 - t0);
}

/* gpuos_destroy during a long job, on one thread and on a pool. First a run-time operator of
   ~3 ms an element (a loop of 400000 steps) on 4096 elements: ~12 s of work on one thread (a
   few on several). Then a built-in job: sum over axis 1 of a [4096, 2^26] broadcast view of a
   [4096, 1] tensor (16 KB of memory, ~2.7e11 additions: minutes); its pool's chunks were a
   quarter of the job each, and only chunk boundaries were checked. Host executor only (on the
   GPU these run in microseconds). */
static void destroy_long_job(void) {
    int k;
    for (k = 0; k < 2; k++) {
        gpuos_context *ctx = long_job_ctx(k);
        gpuos_op_def d = GPUOS_OP_DEF_INIT;
        gpuos_op op;
        gpuos_task t = GPUOS_TASK_INIT;
        gpuos_tensor *x = NULL;
        int64_t n = 4096;
        if (!ctx) return;
        d.name = "slow";
        d.n_inputs = 1;
        d.source = "float s = 0; for (int i = 0; i < 400000; i++) { s = s + 1.0f; } out = a + s;";
        OKC(gpuos_op_define(ctx, &d, &op));
        OKC(gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &x));
        t.op = op, t.out = x, t.in[0] = x;
        OKC(gpuos_submit(ctx, &t, NULL));
        destroy_timed(ctx, &x, 1, "a long run-time operator", k);
    }
    for (k = 0; k < 2; k++) {
        const int64_t col[2] = {4096, 1}, wide[2] = {4096, (int64_t)1 << 26}, n1 = 4096;
        gpuos_context *ctx = long_job_ctx(k);
        gpuos_tensor *ts[3] = {NULL, NULL, NULL}; /* the column, its broadcast view, the sums */
        const int axis = 1;
        if (!ctx) return;
        OKC(gpuos_tensor_new(ctx, GPUOS_F32, 2, col, &ts[0]));
        OKC(gpuos_fill(ctx, ts[0], 1.0));
        OKC(gpuos_view_broadcast_to(ts[0], 2, wide, &ts[1]));
        OKC(gpuos_tensor_new(ctx, GPUOS_F32, 1, &n1, &ts[2]));
        OKC(gpuos_sum(ctx, ts[2], ts[1], &axis, 1, 0));
        destroy_timed(ctx, ts, 3, "a long sum", k);
    }
}

/* gpuos_destroy with a long queue already on the device (GPU only): a chain of in-place
   run-time tasks of ~0.1 s each (a dependent loop in every element) worth ~6 s in all,
   wait_timeout_ms = 100. The destroy's cancel makes the workers skip the tiles left, so it
   returns after its wait, the tile running then and the stop: well under 0.1 s + two tasks +
   0.3 s (the previous library took 1.10 s for tasks of 67 and of 134 ms alike, H200: its stop's
   1 s bound, after which it leaves the kernel running). The chain's first two tasks are timed
   to size the queue. */
static void destroy_long_gpu(int device) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx = NULL;
    gpuos_op_def d = GPUOS_OP_DEF_INIT;
    gpuos_op op;
    gpuos_task t = GPUOS_TASK_INIT;
    gpuos_tensor *x = NULL;
    int64_t n = 256, i, k;
    double t0, per;
    cfg.device = device;
    cfg.wait_timeout_ms = 100;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        CHECK(0, "gpuos_create: %s", gpuos_last_error(NULL));
        return;
    }
    if (gpuos_context_backend(ctx) != GPUOS_BACKEND_CUDA) { /* the host's case is destroy_long_job */
        gpuos_destroy(ctx);
        return;
    }
    d.name = "slow_gpu";
    d.n_inputs = 1;
    d.source = "float s = a; for (int i = 0; i < 16000000; i++) { s = s * 0.999999f + 0.000001f; } out = s;";
    OKC(gpuos_op_define(ctx, &d, &op));
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &x));
    OKC(gpuos_fill(ctx, x, 1.0));
    t.op = op, t.out = x, t.in[0] = x;
    OKC(gpuos_submit(ctx, &t, NULL)); /* (compiled and warm) */
    OKC(gpuos_wait(ctx, 20000));
    t0 = now_s();
    OKC(gpuos_submit(ctx, &t, NULL));
    OKC(gpuos_submit(ctx, &t, NULL));
    OKC(gpuos_wait(ctx, 20000));
    per = (now_s() - t0) / 2;
    k = (int64_t)(6.0 / (per > 1e-3 ? per : 1e-3));
    if (k > 3000) k = 3000;
    for (i = 0; i < k; i++) OKC(gpuos_submit(ctx, &t, NULL));
    printf("destroy_long_gpu: %lld tasks of %.1f ms queued (%.1f s of work)\n", (long long)k, per * 1e3, per * (double)k);
    {
        struct timespec sl = {0, 50000000};
        double t1;
        nanosleep(&sl, NULL); /* the chain runs */
        t0 = now_s();
        gpuos_tensor_release(x);
        gpuos_destroy(ctx);
        t1 = now_s();
        printf("destroy_long_gpu: gpuos_destroy took %.3f s\n", t1 - t0);
        CHECK(t1 - t0 < 0.4 + 2 * per,
              "gpuos_destroy (wait_timeout_ms 100) with %.1f s of work on the device took %.2f s: it drained the queue",
              per * (double)k, t1 - t0);
    }
}

/* Host executor: a waiting thread runs the next job itself when it is small (queue.c,
   queue_help_locked), but never a long one: a wait with a 20 ms timeout for a small task queued
   behind a matmul of a second or so returns GPUOS_ERR_TIMEOUT after about 20 ms (whoever takes
   the matmul, the wait must not be held for it); then the small task's wait, with time,
   succeeds. (The dispatcher, woken by the unpause, usually takes the matmul first, so a waiter
   that would run any job passes too unless it wins that race: the check guards the common
   interleaving, not every one.) */
static void help_bounded(void) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx = NULL;
    gpuos_tensor *a = NULL, *o = NULL, *x = NULL;
    const int64_t sq[2] = {1536, 1536}, n = 16;
    uint64_t small = 0;
    gpuos_status st;
    double t0, t1;
    cfg.device = GPUOS_DEVICE_HOST;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        CHECK(0, "gpuos_create: %s", gpuos_last_error(NULL));
        return;
    }
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 2, sq, &a));
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 2, sq, &o));
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &x));
    OKC(gpuos_fill(ctx, a, 0.5));
    OKC(gpuos_wait(ctx, 60000));
    (void)gpuos_debug_pause(ctx, 1);
    OKC(gpuos_matmul(ctx, o, a, a)); /* 3.6e9 multiply-adds: seconds on a host */
    {
        gpuos_task t = GPUOS_TASK_INIT;
        t.op = GPUOS_OP_FILL, t.out = x, t.scalar[0] = 3.0;
        OKC(gpuos_submit(ctx, &t, &small));
    }
    (void)gpuos_debug_pause(ctx, 0);
    t0 = now_s();
    st = gpuos_wait_task(ctx, small, 20);
    t1 = now_s();
    CHECK(st == GPUOS_ERR_TIMEOUT && t1 - t0 < 0.5, "a 20 ms wait behind a long matmul: %s after %.3f s (%s)",
          gpuos_status_string(st), t1 - t0, gpuos_last_error(ctx));
    OKC(gpuos_wait_task(ctx, small, 120000));
    {
        float h[16];
        int i, bad = 0;
        OKC(gpuos_download(ctx, x, h, sizeof h));
        for (i = 0; i < 16; i++) bad += h[i] != 3.0f;
        CHECK(bad == 0, "the small task's result: %d of 16 wrong", bad);
    }
    gpuos_tensor_release(a);
    gpuos_tensor_release(o);
    gpuos_tensor_release(x);
    gpuos_destroy(ctx);
}

/* Host executor: a waiting thread that runs small jobs itself stops with its timeout however
   many are queued ahead (4000 adds on 2^18 floats, about a second of work: a 50 ms wait for the
   last returns GPUOS_ERR_TIMEOUT well within 0.5 s; it ran them all before the check). */
static void help_many_timeout(void) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx = NULL;
    gpuos_tensor *x = NULL, *one = NULL;
    const int64_t n = (int64_t)1 << 18;
    uint64_t last = 0;
    gpuos_status st;
    double t0, t1;
    int i;
    cfg.device = GPUOS_DEVICE_HOST;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        CHECK(0, "gpuos_create: %s", gpuos_last_error(NULL));
        return;
    }
    OKC(gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &x));
    OKC(gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one));
    OKC(gpuos_fill(ctx, x, 0.0));
    OKC(gpuos_wait(ctx, 60000));
    (void)gpuos_debug_pause(ctx, 1);
    for (i = 0, st = GPUOS_OK; i < 4000 && st == GPUOS_OK; i++) st = gpuos_add(ctx, x, x, one);
    CHECK(st == GPUOS_OK, "4000 adds queued: %s", gpuos_last_error(ctx));
    last = gpuos_fence(ctx);
    (void)gpuos_debug_pause(ctx, 0);
    t0 = now_s();
    st = gpuos_wait_fence(ctx, last, 50);
    t1 = now_s();
    CHECK(st == GPUOS_ERR_TIMEOUT && t1 - t0 < 0.5, "a 50 ms wait behind 4000 small adds: %s after %.3f s",
          gpuos_status_string(st), t1 - t0);
    OKC(gpuos_wait(ctx, 120000));
    {
        float h[4] = {0, 0, 0, 0};
        gpuos_tensor *head = NULL;
        OKC(gpuos_view_slice(x, 0, 0, 4, 1, &head));
        OKC(gpuos_download(ctx, head, h, sizeof h));
        CHECK(h[0] == 4000.0f && h[3] == 4000.0f, "after 4000 adds of 1: %g %g", h[0], h[3]);
        gpuos_tensor_release(head);
    }
    gpuos_tensor_release(x);
    gpuos_tensor_release(one);
    gpuos_destroy(ctx);
}

int main(void) {
    const unsigned long long seed = ctest_seed("test_semantics");
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx;
    int r, host;
    rng = ctest_rng(seed, 1);
    cfg.device = ctest_device();
    cfg.wait_timeout_ms = 20000;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        fprintf(stderr, "gpuos_create: %s\n", gpuos_last_error(NULL));
        return 1;
    }
    host = gpuos_context_backend(ctx) == GPUOS_BACKEND_HOST;
    for (r = 0; r < 20; r++) interleave(ctx, r);
    interleave_rows(ctx);
    interleave_large(ctx);
    for (r = 0; r < 3; r++) graph_priority(ctx, host);
    graph_priority_bound(ctx);
    graph_priority_wait_all(ctx, host);
    if (host) graph_priority_deadline_order(ctx);
    graph_node_deadline(ctx);
    empty_huge(ctx);
    CHECK(gpuos_context_status(ctx) == GPUOS_OK, "healthy: %s", gpuos_last_error(ctx));
    gpuos_destroy(ctx);
    if (host) graph_priority_small_queue();
    after_destroy(cfg.device);
    zero_wait_timeout(cfg.device);
    last_error_threads();
    destroy_long_job();
    destroy_long_gpu(cfg.device);
    help_bounded();
    help_many_timeout();
    return ctest_summary("test_semantics");
}
