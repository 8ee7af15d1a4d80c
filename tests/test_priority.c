/* test_priority.c - priorities on the device the tests run on ($GPUOS_TEST_DEVICE): a
   short high-priority job submitted behind a long normal one finishes first (eager tasks
   and a graph launch); program order holds whatever the priorities (a high-priority task
   that reads or overwrites what earlier normal work writes or reads waits for it, normal
   work waits for the high-priority work it depends on), checked exactly on random
   programs of mixed priorities over views of shared tensors against a sequential
   reference; deadlines (overtaking, counting met and missed ones, earliest deadline first
   on the host executor); and the API's errors. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctest.h"
#include "gpuos.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t urand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}

static gpuos_tensor *tensor(gpuos_context *ctx, gpuos_dtype dt, int64_t n) {
    gpuos_tensor *t = NULL;
    CHECK(gpuos_tensor_new(ctx, dt, 1, &n, &t) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    return t;
}

static uint64_t submit(gpuos_context *ctx, gpuos_op op, gpuos_tensor *out, gpuos_tensor *a, gpuos_tensor *b,
                       int prio) {
    gpuos_task t = GPUOS_TASK_INIT;
    uint64_t seq = 0;
    t.op = op;
    t.out = out;
    t.in[0] = a;
    t.in[1] = b;
    t.priority = prio;
    CHECK(gpuos_submit(ctx, &t, &seq) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    return seq;
}

static int is_gpu(gpuos_context *ctx) { return gpuos_context_backend(ctx) != GPUOS_BACKEND_HOST; }

/* A long normal job (n_long tasks on `big` floats) then a short high-priority chain on its
   own tensors: the chain finishes while the long job is still running. */
static void test_overtakes(gpuos_context *ctx) {
    const int64_t big = is_gpu(ctx) ? (4 << 20) : (1 << 20);
    const int n_long = is_gpu(ctx) ? 400 : 60;
    gpuos_tensor *x = tensor(ctx, GPUOS_F32, big), *one = NULL, *a = tensor(ctx, GPUOS_F32, 4096),
                 *b = tensor(ctx, GPUOS_F32, 4096), *c = tensor(ctx, GPUOS_F32, 4096);
    static float h[4096];
    float x0 = 0.f;
    uint64_t last_long = 0, hi = 0;
    int i, early, round;
    CHECK(gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_fill(ctx, x, 0.0) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (i = 0; i < 4096; i++) h[i] = (float)(i % 97);
    CHECK(gpuos_upload(ctx, a, h, sizeof h) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_wait(ctx, 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (round = 0; round < 3; round++) {
        for (i = 0; i < n_long; i++) last_long = submit(ctx, GPUOS_OP_ADD, x, x, one, GPUOS_PRIORITY_NORMAL);
        (void)submit(ctx, GPUOS_OP_ADD, b, a, one, GPUOS_PRIORITY_HIGH);  /* b = a + 1 */
        hi = submit(ctx, GPUOS_OP_MUL, c, b, b, GPUOS_PRIORITY_HIGH);      /* c = b * b */
        CHECK(hi > last_long, "the high-priority task is submitted after the long job");
        CHECK(gpuos_wait_task(ctx, hi, 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        early = !gpuos_fence_done(ctx, last_long);
        CHECK(early, "round %d: the high-priority job finished first (the long job of %d tasks was done already)",
              round, n_long);
        CHECK(gpuos_task_done(ctx, hi) == 1, "gpuos_task_done after gpuos_wait_task");
        CHECK(gpuos_download(ctx, c, h, sizeof h) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        for (i = 0; i < 4096; i++)
            if (h[i] != (float)((i % 97 + 1) * (i % 97 + 1))) break;
        CHECK(i == 4096, "c = (a + 1)^2 at %d: %g", i, (double)h[i % 4096]);
        CHECK(gpuos_wait(ctx, 60000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        x0 += (float)n_long;
        {
            float *hx = (float *)malloc((size_t)big * sizeof(float));
            int64_t k;
            CHECK(gpuos_download(ctx, x, hx, (size_t)big * sizeof(float)) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            for (k = 0; k < big && hx[k] == x0; k++) {
            }
            CHECK(k == big, "the long job's result: x[%lld] = %g, not %g", (long long)k, (double)hx[k % big],
                  (double)x0);
            free(hx);
        }
    }
    gpuos_tensor_release(x);
    gpuos_tensor_release(one);
    gpuos_tensor_release(a);
    gpuos_tensor_release(b);
    gpuos_tensor_release(c);
}

/* The same with the short job as a graph launched at high priority. */
static void test_graph_priority(gpuos_context *ctx) {
    const int64_t big = is_gpu(ctx) ? (4 << 20) : (1 << 20);
    const int n_long = is_gpu(ctx) ? 400 : 60;
    gpuos_tensor *x = tensor(ctx, GPUOS_F32, big), *one = NULL, *a = tensor(ctx, GPUOS_F32, 4096),
                 *b = tensor(ctx, GPUOS_F32, 4096), *c = tensor(ctx, GPUOS_F32, 4096);
    gpuos_graph *g = NULL;
    gpuos_task t1 = GPUOS_TASK_INIT, t2 = GPUOS_TASK_INIT;
    static float h[4096];
    uint64_t last_long = 0, seq = 0;
    int i, round;
    CHECK(gpuos_tensor_scalar(ctx, GPUOS_F32, 2.0, &one) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_fill(ctx, x, 0.0) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_fill(ctx, a, 3.0) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_graph_create(ctx, &g) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    t1.op = GPUOS_OP_ADD, t1.out = b, t1.in[0] = a, t1.in[1] = one; /* b = a + 2 */
    t2.op = GPUOS_OP_MUL, t2.out = c, t2.in[0] = b, t2.in[1] = one; /* c = b * 2 */
    CHECK(gpuos_graph_add(g, &t1, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_graph_add(g, &t2, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_graph_set_priority(g, GPUOS_PRIORITY_HIGH) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, &seq) == GPUOS_OK, "%s", gpuos_last_error(ctx)); /* encoded once */
    CHECK(gpuos_wait(ctx, 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (round = 0; round < 3; round++) {
        /* x += 2, x -= 2, ...: neighbours differ, so the long job is not one run of identical
           in-place tasks (which the GPU applies in one pass) and takes milliseconds */
        for (i = 0; i < n_long; i++)
            last_long = submit(ctx, (i & 1) ? GPUOS_OP_SUB : GPUOS_OP_ADD, x, x, one, GPUOS_PRIORITY_NORMAL);
        CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, &seq) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_wait_task(ctx, seq, 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(!gpuos_fence_done(ctx, last_long), "round %d: the high-priority graph launch finished first", round);
        CHECK(gpuos_download(ctx, c, h, sizeof h) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        for (i = 0; i < 4096 && h[i] == 10.f; i++) {
        }
        CHECK(i == 4096, "c = (a + 2) * 2 = 10 at %d: %g", i, (double)h[i % 4096]);
        CHECK(gpuos_wait(ctx, 60000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        {
            float *hx = (float *)malloc((size_t)big * sizeof(float));
            int64_t k;
            CHECK(gpuos_download(ctx, x, hx, (size_t)big * sizeof(float)) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            for (k = 0; k < big && hx[k] == 0.f; k++) {
            }
            CHECK(k == big, "the long job's result: x[%lld] = %g, not 0", (long long)k, (double)hx[k % big]);
            free(hx);
        }
    }
    gpuos_graph_release(g);
    gpuos_tensor_release(x);
    gpuos_tensor_release(one);
    gpuos_tensor_release(a);
    gpuos_tensor_release(b);
    gpuos_tensor_release(c);
}

/* High-priority tasks that conflict with earlier normal work keep program order. */
static void test_conflicts(gpuos_context *ctx) {
    const int64_t n = 100000;
    gpuos_tensor *a = tensor(ctx, GPUOS_F32, n), *d = tensor(ctx, GPUOS_F32, n), *e = tensor(ctx, GPUOS_F32, n),
                 *f = tensor(ctx, GPUOS_F32, n), *one = NULL, *two = NULL;
    float *h = (float *)malloc((size_t)n * sizeof(float));
    int i, k;
    CHECK(gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_tensor_scalar(ctx, GPUOS_F32, 2.0, &two) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_fill(ctx, a, 5.0) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (i = 0; i < 100; i++) submit(ctx, GPUOS_OP_ADD, a, a, one, GPUOS_PRIORITY_NORMAL); /* a = 105 */
    submit(ctx, GPUOS_OP_MUL, d, a, two, GPUOS_PRIORITY_HIGH);   /* read after write: d = 210 */
    submit(ctx, GPUOS_OP_ADD, e, a, one, GPUOS_PRIORITY_NORMAL); /* e = 106 */
    submit(ctx, GPUOS_OP_MUL, a, d, one, GPUOS_PRIORITY_HIGH);   /* write after read: a = 210 */
    submit(ctx, GPUOS_OP_ADD, f, d, one, GPUOS_PRIORITY_HIGH);   /* f = 211 */
    submit(ctx, GPUOS_OP_ADD, e, e, f, GPUOS_PRIORITY_NORMAL);   /* normal after high: e = 317 */
    submit(ctx, GPUOS_OP_MUL, f, f, two, GPUOS_PRIORITY_HIGH);   /* write after normal read: f = 422 */
    CHECK(gpuos_wait(ctx, 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    {
        gpuos_tensor *ts[4] = {a, d, e, f};
        const float want[4] = {210.f, 210.f, 317.f, 422.f};
        for (k = 0; k < 4; k++) {
            CHECK(gpuos_download(ctx, ts[k], h, (size_t)n * sizeof(float)) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            for (i = 0; i < n && h[i] == want[k]; i++) {
            }
            CHECK(i == n, "tensor %d at %d: %g, not %g", k, i, (double)h[i % n], (double)want[k]);
        }
    }
    free(h);
    gpuos_tensor_release(a);
    gpuos_tensor_release(d);
    gpuos_tensor_release(e);
    gpuos_tensor_release(f);
    gpuos_tensor_release(one);
    gpuos_tensor_release(two);
}

/* Random programs of mixed priorities over views of shared int32 tensors, checked exactly
   against the same program run in order on the host. */
#define RT 6      /* tensors */
#define RN 8192   /* elements each: 8 tiles of 1024 on a GPU */
#define RH (RN / 2)
static int32_t ref[RT][RN];

/* view v of a tensor: 0 all; 1, 2 the halves; 3, 4 even and odd elements */
static gpuos_tensor *rview(gpuos_tensor *t, int v) {
    gpuos_tensor *o = NULL;
    if (v == 0) (void)gpuos_view_slice(t, 0, 0, RN, 1, &o);
    else if (v <= 2) (void)gpuos_view_slice(t, 0, (v - 1) * RH, v * RH, 1, &o);
    else (void)gpuos_view_slice(t, 0, v - 3, RN, 2, &o);
    return o;
}
static int32_t *relem(int t, int v, int i) {
    if (v == 0) return &ref[t][i];
    if (v <= 2) return &ref[t][(v - 1) * RH + i];
    return &ref[t][2 * i + (v - 3)];
}

static void test_random(gpuos_context *ctx, int n_tasks, int seed) {
    gpuos_tensor *t[RT], *one = NULL;
    static int32_t h[RN], tmp[RN];
    int k, i, bad = 0, hi = 0;
    rng ^= (uint64_t)seed * 0x2545f4914f6cdd1dull;
    CHECK(gpuos_tensor_scalar(ctx, GPUOS_I32, 1.0, &one) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (k = 0; k < RT; k++) {
        t[k] = tensor(ctx, GPUOS_I32, RN);
        for (i = 0; i < RN; i++) ref[k][i] = (int32_t)(urand() & 0xffff);
        CHECK(gpuos_upload(ctx, t[k], ref[k], sizeof ref[k]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    }
    for (k = 0; k < n_tasks; k++) {
        const int half = urand() % 3 != 0;                /* 1024-element views or whole tensors */
        const int vo = half ? 1 + (int)(urand() % 4) : 0; /* the output's view */
        const int to = (int)(urand() % RT);
        int ta = (int)(urand() % RT), tb = (int)(urand() % RT);
        int va = half ? 1 + (int)(urand() % 4) : 0, vb = half ? 1 + (int)(urand() % 4) : 0;
        const int kind = (int)(urand() % 4), prio = urand() % 10 < 4;
        const int len = half ? RH : RN;
        gpuos_tensor *o, *a, *b = NULL;
        gpuos_op op = kind == 0 ? GPUOS_OP_BITWISE_XOR : kind == 1 ? GPUOS_OP_MAXIMUM : kind == 2 ? GPUOS_OP_ADD
                                                                                                   : GPUOS_OP_COPY;
        /* an input in the output's tensor must be the output's very view (in place) */
        if (ta == to) va = vo;
        if (tb == to) vb = vo;
        o = rview(t[to], vo);
        a = rview(t[ta], va);
        if (kind == 2) b = one; /* a + 1 (broadcast 0-d) */
        else if (kind != 3) b = rview(t[tb], vb);
        for (i = 0; i < len; i++) {
            const int32_t x = *relem(ta, va, i), y = kind == 2 ? 1 : kind == 3 ? 0 : *relem(tb, vb, i);
            tmp[i] = kind == 0 ? (x ^ y) : kind == 1 ? (x > y ? x : y) : kind == 2 ? x + 1 : x;
        }
        for (i = 0; i < len; i++) *relem(to, vo, i) = tmp[i];
        submit(ctx, op, o, a, kind == 3 ? NULL : b, prio ? GPUOS_PRIORITY_HIGH : GPUOS_PRIORITY_NORMAL);
        hi += prio;
        gpuos_tensor_release(o);
        gpuos_tensor_release(a);
        if (b != one) gpuos_tensor_release(b);
        if (k % 500 == 499) CHECK(gpuos_wait(ctx, 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    }
    CHECK(gpuos_wait(ctx, 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (k = 0; k < RT; k++) {
        CHECK(gpuos_download(ctx, t[k], h, sizeof h) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        for (i = 0; i < RN && h[i] == ref[k][i]; i++) {
        }
        if (i < RN) bad++;
        CHECK(i == RN, "seed %d: tensor %d differs at %d: %d, not %d (%d tasks, %d high)", seed, k, i, h[i % RN],
              ref[k][i % RN], n_tasks, hi);
        gpuos_tensor_release(t[k]);
    }
    (void)bad;
    gpuos_tensor_release(one);
}

static void test_errors(gpuos_context *ctx) {
    gpuos_tensor *a = tensor(ctx, GPUOS_F32, 16);
    gpuos_task t = GPUOS_TASK_INIT;
    gpuos_graph *g = NULL;
    uint64_t seq = 0;
    t.op = GPUOS_OP_NEG, t.out = a, t.in[0] = a;
    t.priority = 2;
    CHECK(gpuos_submit(ctx, &t, &seq) == GPUOS_ERR_INVALID_ARGUMENT, "priority 2 refused");
    CHECK(strstr(gpuos_last_error(ctx), "priority") != NULL, "message names the priority: %s", gpuos_last_error(ctx));
    t.priority = -1;
    CHECK(gpuos_submit(ctx, &t, &seq) == GPUOS_ERR_INVALID_ARGUMENT, "priority -1 refused");
    t.priority = GPUOS_PRIORITY_HIGH;
    CHECK(gpuos_submit(ctx, &t, &seq) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_wait_task(ctx, seq, 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_wait_task(ctx, seq + 1000, 10) == GPUOS_ERR_INVALID_ARGUMENT, "wait for a task never issued");
    CHECK(gpuos_task_done(ctx, seq + 1000) == 0, "a task never issued is not done");
    CHECK(gpuos_wait_task(NULL, seq, 10) == GPUOS_ERR_NULL_POINTER, "NULL context");
    CHECK(gpuos_task_done(NULL, seq) == 0, "NULL context");
    CHECK(gpuos_graph_set_priority(NULL, 1) == GPUOS_ERR_NULL_POINTER, "NULL graph");
    CHECK(gpuos_graph_create(ctx, &g) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_graph_set_priority(g, 7) == GPUOS_ERR_INVALID_ARGUMENT, "graph priority 7 refused");
    CHECK(gpuos_graph_set_priority(g, GPUOS_PRIORITY_NORMAL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    gpuos_graph_release(g);
    gpuos_tensor_release(a);
}

/* Deadlines: a task with a deadline overtakes a long normal job as a high-priority one
   does and its deadline is counted (met when generous, missed when impossible); on the
   host executor ready urgent work is taken earliest deadline first, except where program
   order holds it back; a graph launch with a deadline counts once. */
static void test_deadlines(gpuos_context *ctx) {
    const int64_t big = is_gpu(ctx) ? (4 << 20) : (1 << 20), n4 = 4 << 20;
    const int n_long = is_gpu(ctx) ? 400 : 60;
    gpuos_tensor *x = tensor(ctx, GPUOS_F32, big), *one = NULL, *a = tensor(ctx, GPUOS_F32, 4096);
    gpuos_tensor *d[3], *s = tensor(ctx, GPUOS_F32, n4), *u = tensor(ctx, GPUOS_F32, n4);
    gpuos_graph *g = NULL;
    gpuos_task t = GPUOS_TASK_INIT;
    uint64_t met0 = 0, missed0 = 0, met = 0, missed = 0, last_long = 0, seq = 0, dseq[3];
    static float h[4096];
    int i, k;
    CHECK(gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_fill(ctx, x, 0.0) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_fill(ctx, a, 5.0) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_wait(ctx, 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_deadline_stats(ctx, &met0, &missed0) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    /* a generous deadline, normal priority: it overtakes and is met */
    for (i = 0; i < n_long; i++) last_long = submit(ctx, GPUOS_OP_ADD, x, x, one, GPUOS_PRIORITY_NORMAL);
    t.op = GPUOS_OP_ADD, t.out = a, t.in[0] = a, t.in[1] = one, t.deadline_us = 10000000; /* 10 s */
    CHECK(gpuos_submit(ctx, &t, &seq) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_wait_task(ctx, seq, 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(!gpuos_fence_done(ctx, last_long), "the task with a deadline finished before the long job");
    CHECK(gpuos_download(ctx, a, h, sizeof h) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (i = 0; i < 4096 && h[i] == 6.f; i++) {
    }
    CHECK(i == 4096, "a + 1 = 6 at %d: %g", i, (double)h[i % 4096]);
    CHECK(gpuos_wait(ctx, 60000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_deadline_stats(ctx, &met, &missed) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(met == met0 + 1 && missed == missed0, "generous deadline met: met %llu -> %llu, missed %llu -> %llu",
          (unsigned long long)met0, (unsigned long long)met, (unsigned long long)missed0, (unsigned long long)missed);
    /* an impossible one (1 us for 4M elements) is missed */
    t.out = s, t.in[0] = s, t.deadline_us = 1;
    CHECK(gpuos_submit(ctx, &t, &seq) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_wait(ctx, 60000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_deadline_stats(ctx, &met0, &missed0) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(met0 == met && missed0 == missed + 1, "impossible deadline missed: met %llu, missed %llu -> %llu",
          (unsigned long long)met0, (unsigned long long)missed, (unsigned long long)missed0);
    /* a graph launch with a deadline counts once */
    CHECK(gpuos_graph_create(ctx, &g) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    t.deadline_us = 0, t.out = a, t.in[0] = a;
    CHECK(gpuos_graph_add(g, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_graph_add(g, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_graph_set_deadline(g, 10000000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (k = 0; k < 2; k++) CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, &seq) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_wait(ctx, 60000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_deadline_stats(ctx, &met, &missed) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(met == met0 + 2 && missed == missed0, "two graph launches met their deadline: met %llu -> %llu",
          (unsigned long long)met0, (unsigned long long)met);
    CHECK(gpuos_download(ctx, a, h, sizeof h) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(h[0] == 10.f && h[4095] == 10.f, "6 + 4 launches' adds = 10: %g %g", (double)h[0], (double)h[4095]);
    gpuos_graph_release(g);
    if (!is_gpu(ctx)) {
        /* earliest deadline first: three independent urgent tasks queued while the
           executor is paused run in deadline order; a fourth that reads what an earlier
           urgent task with a later deadline writes still runs after it */
        static const uint32_t dl[3] = {50000000, 10000000, 30000000};
        int order[3], n_done = 0;
        for (k = 0; k < 3; k++) d[k] = tensor(ctx, GPUOS_F32, n4);
        CHECK(gpuos_fill(ctx, s, 1.0) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_wait(ctx, 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        gpuos_debug_pause(ctx, 1);
        for (k = 0; k < 3; k++) {
            t.out = d[k], t.in[0] = s, t.in[1] = one, t.deadline_us = dl[k];
            CHECK(gpuos_submit(ctx, &t, &dseq[k]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        }
        t.out = u, t.in[0] = d[0], t.in[1] = d[0], t.deadline_us = 1000000; /* u = 2 d0, after d0 */
        CHECK(gpuos_submit(ctx, &t, &seq) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        gpuos_debug_pause(ctx, 0);
        /* Whenever a task is seen finished, every task with an earlier deadline must have
           finished already (asked after seeing it: done stays done, so a poller that is
           descheduled between two queries cannot misorder them, as the completion order
           of one sweep could). */
        {
            int seen[3] = {0, 0, 0}, late = 0;
            while (n_done < 3) {
                for (k = 0; k < 3; k++) {
                    int j;
                    if (seen[k] || !gpuos_task_done(ctx, dseq[k])) continue;
                    seen[k] = 1;
                    order[n_done++] = k;
                    for (j = 0; j < 3; j++)
                        if (dl[j] < dl[k] && !gpuos_task_done(ctx, dseq[j])) late++;
                }
            }
            CHECK(late == 0, "deadline order 10 s, 30 s, 50 s: %d task(s) finished before one with an earlier deadline "
                             "(seen in the order %d %d %d)",
                  late, order[0], order[1], order[2]);
        }
        CHECK(gpuos_wait(ctx, 60000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        {
            float *hu = (float *)malloc((size_t)n4 * sizeof(float));
            int64_t j = 0;
            CHECK(hu && gpuos_download(ctx, u, hu, (size_t)n4 * sizeof(float)) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            while (hu && j < n4 && hu[j] == 4.f) j++;
            CHECK(j == n4, "u = 2 * (s + 1) = 4 (after its producer) at %lld: %g", (long long)j,
                  hu ? (double)hu[j % n4] : 0.0);
            free(hu);
        }
        for (k = 0; k < 3; k++) gpuos_tensor_release(d[k]);
    }
    CHECK(gpuos_graph_set_deadline(NULL, 1) == GPUOS_ERR_NULL_POINTER, "NULL graph");
    CHECK(gpuos_deadline_stats(NULL, &met, &missed) == GPUOS_ERR_NULL_POINTER, "NULL context");
    gpuos_tensor_release(x);
    gpuos_tensor_release(one);
    gpuos_tensor_release(a);
    gpuos_tensor_release(s);
    gpuos_tensor_release(u);
}

static gpuos_context *open_ctx(void) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx = NULL;
    cfg.device = ctest_device();
    cfg.wait_timeout_ms = 60000;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) fprintf(stderr, "gpuos_create: %s\n", gpuos_last_error(NULL));
    return ctx;
}

static void close_ctx(gpuos_context *ctx) {
    CHECK(gpuos_context_status(ctx) == GPUOS_OK, "healthy: %s", gpuos_last_error(ctx));
    gpuos_destroy(ctx);
}

int main(void) {
    rng = ctest_rng(ctest_seed("test_priority"), rng);
    gpuos_context *ctx;
    int s;
    if (getenv("GPUOS_TEST_QUICK")) {
        /* under compute-sanitizer: the order tests, small, each on a fresh context whose
           tensors exist before its kernel starts (memcheck does not see memory allocated
           while a kernel runs, and reports its accesses as out of bounds) */
        if (!(ctx = open_ctx())) return 1;
        test_conflicts(ctx);
        close_ctx(ctx);
        if (!(ctx = open_ctx())) return 1;
        test_random(ctx, 300, 1);
        close_ctx(ctx);
        return ctest_summary("test_priority");
    }
    if (!(ctx = open_ctx())) return 1;
    test_errors(ctx);
    test_conflicts(ctx);
    for (s = 1; s <= 6; s++) test_random(ctx, 3000, s);
    test_overtakes(ctx);
    test_graph_priority(ctx);
    test_deadlines(ctx);
    close_ctx(ctx);
    return ctest_summary("test_priority");
}
