/* test_graph.c - recorded graphs (gpuos_graph_*) on the device the tests run on
   ($GPUOS_TEST_DEVICE): launches equal eager submission bit for bit on fresh inputs, data
   changes between launches without re-recording, bindings of other tensors and scalars,
   many launches in flight on their own buffers, explicit dependencies and refused cycles,
   a run-time operator redefined after recording, large graphs launched many times over
   (on a GPU: expanded on the device in chunks, past the task ring's size), many graphs of
   many distinct nodes alive at once (the device's plan table), and every error of the API. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctest.h"
#include "gpuos.h"

#define N 1000
static uint64_t rng = 0x243f6a8885a308d3ull;
static uint64_t next_rng(void) { /* xorshift64 */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static float frand(void) { return (float)((double)(next_rng() >> 11) / 9007199254740992.0 * 2.0 - 1.0); }

static gpuos_tensor *vec(gpuos_context *ctx, int64_t n) {
    gpuos_tensor *t = NULL;
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &t) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    return t;
}

static void fill_random(gpuos_context *ctx, gpuos_tensor *t, float *h, int n) {
    int i;
    for (i = 0; i < n; i++) h[i] = frand();
    CHECK(gpuos_upload(ctx, t, h, (size_t)n * 4) == GPUOS_OK, "%s", gpuos_last_error(ctx));
}

/* y = a + b; z = y * s (a 0-d tensor); w = exp(z); r = sum(w): recorded, or submitted eagerly */
typedef struct prog {
    gpuos_tensor *a, *b, *s, *y, *z, *w, *r;
} prog;

static void prog_tasks(const prog *p, gpuos_task t[4]) {
    int k;
    for (k = 0; k < 4; k++) {
        gpuos_task x = GPUOS_TASK_INIT;
        t[k] = x;
    }
    t[0].op = GPUOS_OP_ADD, t[0].out = p->y, t[0].in[0] = p->a, t[0].in[1] = p->b;
    t[1].op = GPUOS_OP_MUL, t[1].out = p->z, t[1].in[0] = p->y, t[1].in[1] = p->s;
    t[2].op = GPUOS_OP_EXP, t[2].out = p->w, t[2].in[0] = p->z;
    t[3].op = GPUOS_OP_SUM, t[3].out = p->r, t[3].in[0] = p->w;
}

static void test_equal_eager(gpuos_context *ctx) {
    prog p, q;
    gpuos_graph *g;
    gpuos_task t[4];
    static float ha[N], hb[N], w1[N], w2[N];
    float r1, r2, sv = 0.5f;
    int k, launch;
    int64_t one = 1;
    p.a = vec(ctx, N), p.b = vec(ctx, N), p.y = vec(ctx, N), p.z = vec(ctx, N), p.w = vec(ctx, N);
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 0, &one, &p.s) == GPUOS_OK, "s");
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 0, &one, &p.r) == GPUOS_OK, "r");
    q = p;
    q.y = vec(ctx, N), q.z = vec(ctx, N), q.w = vec(ctx, N);
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 0, &one, &q.r) == GPUOS_OK, "r");
    CHECK(gpuos_graph_create(ctx, &g) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    prog_tasks(&p, t);
    for (k = 0; k < 4; k++) {
        int node = -2;
        CHECK(gpuos_graph_add(g, &t[k], &node) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(node == k, "node index %d, expected %d", node, k);
    }
    CHECK(gpuos_graph_size(g) == 4, "size");
    for (launch = 0; launch < 3; launch++) { /* new data each time, the same graph */
        uint64_t seq = 0;
        fill_random(ctx, p.a, ha, N);
        fill_random(ctx, p.b, hb, N);
        sv = 0.25f * (float)(launch + 1);
        CHECK(gpuos_upload(ctx, p.s, &sv, 4) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, &seq) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(seq == gpuos_fence(ctx), "the launch's fence is its last task");
        prog_tasks(&q, t);
        for (k = 0; k < 4; k++) CHECK(gpuos_submit(ctx, &t[k], NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_download(ctx, p.w, w1, sizeof w1) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_download(ctx, q.w, w2, sizeof w2) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_download(ctx, p.r, &r1, 4) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_download(ctx, q.r, &r2, 4) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(memcmp(w1, w2, sizeof w1) == 0 && memcmp(&r1, &r2, 4) == 0,
              "launch %d: the graph's results differ from eager submission", launch);
        {
            double ref = 0;
            int i, bad = 0;
            for (i = 0; i < N; i++) {
                double e = exp((double)(ha[i] + hb[i]) * sv);
                bad += fabs(w1[i] - e) > 1e-5 * e;
                ref += e;
            }
            CHECK(bad == 0 && fabs(r1 - ref) <= 1e-4 * ref, "launch %d: %d elements off, sum %g vs %g", launch, bad,
                  r1, ref);
        }
    }
    /* the graph keeps its memory alive after the caller let go */
    gpuos_tensor_release(p.y);
    gpuos_tensor_release(p.z);
    gpuos_tensor_release(p.w);
    CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_download(ctx, p.r, &r2, 4) == GPUOS_OK && r2 == r1, "a launch after the caller released tensors");

    /* bindings: other inputs and output for one launch; the recorded ones stay untouched */
    {
        gpuos_tensor *a2 = vec(ctx, N), *r2t;
        gpuos_graph_bind bind[2];
        gpuos_graph_scalar sc = {0, 0, 0.0};
        float got, before;
        static float h2[N];
        double ref = 0;
        int i;
        CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 0, &one, &r2t) == GPUOS_OK, "r2");
        fill_random(ctx, a2, h2, N);
        bind[0].recorded = p.a, bind[0].actual = a2;
        bind[1].recorded = p.r, bind[1].actual = r2t;
        CHECK(gpuos_download(ctx, p.r, &before, 4) == GPUOS_OK, "download");
        CHECK(gpuos_graph_launch(g, bind, 2, NULL, 0, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_download(ctx, r2t, &got, 4) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        for (i = 0; i < N; i++) ref += exp((double)(h2[i] + hb[i]) * sv);
        CHECK(fabs(got - ref) <= 1e-4 * ref, "bound launch: %g vs %g", got, ref);
        CHECK(gpuos_download(ctx, p.r, &r1, 4) == GPUOS_OK && r1 == before, "the recorded output is untouched");
        /* errors: checked before anything is queued */
        {
            uint64_t f0 = gpuos_fence(ctx);
            gpuos_tensor *bad;
            int64_t n2 = N + 1;
            CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 1, &n2, &bad) == GPUOS_OK, "bad");
            bind[0].actual = bad;
            CHECK(gpuos_graph_launch(g, bind, 1, NULL, 0, NULL) == GPUOS_ERR_SHAPE_MISMATCH, "a binding of another shape");
            {
                gpuos_tensor *bad_dt;
                int64_t n1 = N;
                CHECK(gpuos_tensor_new(ctx, GPUOS_I32, 1, &n1, &bad_dt) == GPUOS_OK, "bad dtype");
                bind[0].actual = bad_dt;
                CHECK(gpuos_graph_launch(g, bind, 1, NULL, 0, NULL) == GPUOS_ERR_DTYPE_MISMATCH,
                      "a binding of another dtype: %s", gpuos_last_error(ctx));
                gpuos_tensor_release(bad_dt);
            }
            CHECK(gpuos_graph_launch(g, NULL, 0, NULL, -2, NULL) == GPUOS_ERR_INVALID_ARGUMENT, "a negative scalar count");
            CHECK(gpuos_graph_launch(g, NULL, 1, NULL, 0, NULL) == GPUOS_ERR_NULL_POINTER, "a NULL binding array");
            bind[0].actual = NULL;
            CHECK(gpuos_graph_launch(g, bind, 1, NULL, 0, NULL) == GPUOS_ERR_NULL_POINTER, "a NULL binding");
            bind[0].recorded = bad, bind[0].actual = a2;
            CHECK(gpuos_graph_launch(g, bind, 1, NULL, 0, NULL) == GPUOS_ERR_INVALID_ARGUMENT, "an unknown recorded tensor");
            { /* tensors of another context, recorded or actual */
                gpuos_config oc = GPUOS_CONFIG_INIT;
                gpuos_context *other = NULL;
                gpuos_tensor *ot = NULL;
                int64_t n1 = N;
                oc.device = GPUOS_DEVICE_HOST;
                CHECK(gpuos_create(&oc, &other) == GPUOS_OK && gpuos_tensor_new(other, GPUOS_F32, 1, &n1, &ot) == GPUOS_OK,
                      "another context and its tensor");
                if (ot) {
                    bind[0].recorded = ot, bind[0].actual = a2;
                    CHECK(gpuos_graph_launch(g, bind, 1, NULL, 0, NULL) == GPUOS_ERR_CONTEXT_MISMATCH,
                          "a recorded tensor of another context: %s", gpuos_last_error(ctx));
                    bind[0].recorded = p.a, bind[0].actual = ot;
                    CHECK(gpuos_graph_launch(g, bind, 1, NULL, 0, NULL) == GPUOS_ERR_CONTEXT_MISMATCH,
                          "an actual tensor of another context: %s", gpuos_last_error(ctx));
                    bind[0].recorded = bad, bind[0].actual = a2;
                }
                gpuos_tensor_release(ot);
                gpuos_destroy(other);
            }
            sc.node = 9;
            CHECK(gpuos_graph_launch(g, NULL, 0, &sc, 1, NULL) == GPUOS_ERR_INVALID_ARGUMENT, "a scalar of no node");
            sc.node = 0, sc.index = 2;
            CHECK(gpuos_graph_launch(g, NULL, 0, &sc, 1, NULL) == GPUOS_ERR_INVALID_ARGUMENT, "a scalar index 2");
            CHECK(gpuos_graph_launch(g, bind, 1, NULL, 0, NULL) != GPUOS_OK && gpuos_fence(ctx) == f0,
                  "nothing queued by a refused launch");
            CHECK(gpuos_graph_launch(g, NULL, -1, NULL, 0, NULL) == GPUOS_ERR_INVALID_ARGUMENT, "n_binds < 0");
            gpuos_tensor_release(bad);
        }
        gpuos_tensor_release(a2);
        gpuos_tensor_release(r2t);
    }
    gpuos_graph_release(g);
    gpuos_tensor_release(p.a), gpuos_tensor_release(p.b), gpuos_tensor_release(p.s), gpuos_tensor_release(p.r);
    gpuos_tensor_release(q.y), gpuos_tensor_release(q.z), gpuos_tensor_release(q.w), gpuos_tensor_release(q.r);
}

/* many launches in flight at once, each binding its own buffers, no waits in between */
static void test_in_flight(gpuos_context *ctx) {
    enum { L = 16 };
    gpuos_graph *g;
    gpuos_tensor *x, *y, *xs[L], *ys[L];
    gpuos_task t = GPUOS_TASK_INIT;
    static float hx[L][N], hy[N];
    int l, i, k, bad = 0;
    x = vec(ctx, N), y = vec(ctx, N);
    CHECK(gpuos_graph_create(ctx, &g) == GPUOS_OK, "create");
    /* y = x * x; y = y + x; y = sqrt(abs(y)) ... a dependent chain of 6 */
    t.op = GPUOS_OP_MUL, t.out = y, t.in[0] = x, t.in[1] = x;
    CHECK(gpuos_graph_add(g, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (k = 0; k < 5; k++) {
        gpuos_task u = GPUOS_TASK_INIT;
        u.op = k % 2 ? GPUOS_OP_ABS : GPUOS_OP_ADD, u.out = y, u.in[0] = y;
        if (!(k % 2)) u.in[1] = x;
        CHECK(gpuos_graph_add(g, &u, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    }
    for (l = 0; l < L; l++) {
        gpuos_graph_bind b[2];
        xs[l] = vec(ctx, N), ys[l] = vec(ctx, N);
        fill_random(ctx, xs[l], hx[l], N);
        b[0].recorded = x, b[0].actual = xs[l];
        b[1].recorded = y, b[1].actual = ys[l];
        CHECK(gpuos_graph_launch(g, b, 2, NULL, 0, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    }
    CHECK(gpuos_wait(ctx, 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (l = 0; l < L; l++) {
        CHECK(gpuos_download(ctx, ys[l], hy, sizeof hy) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        for (i = 0; i < N; i++) {
            float v = hx[l][i] * hx[l][i];
            for (k = 0; k < 5; k++) v = k % 2 ? fabsf(v) : v + hx[l][i];
            bad += hy[i] != v;
        }
        gpuos_tensor_release(xs[l]);
        gpuos_tensor_release(ys[l]);
    }
    CHECK(bad == 0, "%d launches in flight: %d elements differ from one at a time", L, bad);
    gpuos_graph_release(g);
    gpuos_tensor_release(x);
    gpuos_tensor_release(y);
}

static void test_deps_and_errors(gpuos_context *ctx) {
    gpuos_graph *g;
    gpuos_tensor *x = vec(ctx, 16), *wrong = vec(ctx, 17);
    gpuos_task f1 = GPUOS_TASK_INIT, f2 = GPUOS_TASK_INIT, bad = GPUOS_TASK_INIT;
    gpuos_graph_scalar sc;
    float h[16];
    int n0, n1, n2;
    CHECK(gpuos_graph_create(ctx, &g) == GPUOS_OK, "create");
    f1.op = f2.op = GPUOS_OP_FILL;
    f1.out = f2.out = x;
    f1.scalar[0] = 1.0, f2.scalar[0] = 2.0;
    CHECK(gpuos_graph_add(g, &f1, &n0) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_graph_add(g, &f2, &n1) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_graph_add(g, &f2, &n2) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, NULL) == GPUOS_OK && gpuos_download(ctx, x, h, sizeof h) == GPUOS_OK &&
              h[0] == 2.0f, "recorded order: the last fill wins (%g)", h[0]);
    CHECK(gpuos_graph_add_dep(g, n1, n0) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_graph_add_dep(g, n2, n0) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, NULL) == GPUOS_OK && gpuos_download(ctx, x, h, sizeof h) == GPUOS_OK &&
              h[0] == 1.0f, "node 0 after nodes 1 and 2: its fill wins (%g)", h[0]);
    { /* a dependency moves only what it has to: p = copy(a) stays after the fill of a it reads
         when node 0 (that fill) must wait for node 3 (a review's find: p kept its old value) */
        gpuos_graph *g2;
        gpuos_tensor *a = vec(ctx, 16), *b = vec(ctx, 16), *p = vec(ctx, 16), *q = vec(ctx, 16);
        gpuos_task fa = GPUOS_TASK_INIT, cp = GPUOS_TASK_INIT, fb = GPUOS_TASK_INIT, cq = GPUOS_TASK_INIT;
        float hp[16], hq[16];
        int m0 = -1, m3 = -1;
        fa.op = fb.op = GPUOS_OP_FILL, fa.out = a, fb.out = b, fa.scalar[0] = 7.0, fb.scalar[0] = 1.0;
        cp.op = cq.op = GPUOS_OP_COPY, cp.out = p, cp.in[0] = a, cq.out = q, cq.in[0] = b;
        CHECK(gpuos_fill(ctx, a, -1.0) == GPUOS_OK && gpuos_fill(ctx, b, -1.0) == GPUOS_OK, "fill");
        CHECK(gpuos_fill(ctx, p, -1.0) == GPUOS_OK && gpuos_fill(ctx, q, -1.0) == GPUOS_OK, "fill");
        CHECK(gpuos_graph_create(ctx, &g2) == GPUOS_OK, "create");
        CHECK(gpuos_graph_add(g2, &fa, &m0) == GPUOS_OK && gpuos_graph_add(g2, &cp, NULL) == GPUOS_OK &&
                  gpuos_graph_add(g2, &fb, NULL) == GPUOS_OK && gpuos_graph_add(g2, &cq, &m3) == GPUOS_OK,
              "%s", gpuos_last_error(ctx));
        CHECK(gpuos_graph_add_dep(g2, m3, m0) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_graph_launch(g2, NULL, 0, NULL, 0, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_download(ctx, p, hp, sizeof hp) == GPUOS_OK && gpuos_download(ctx, q, hq, sizeof hq) == GPUOS_OK,
              "download");
        CHECK(hp[0] == 7.0f && hp[15] == 7.0f, "copy(a) after the fill of a it reads: %g, expected 7", hp[0]);
        CHECK(hq[0] == 1.0f && hq[15] == 1.0f, "copy(b) after the fill of b it reads: %g, expected 1", hq[0]);
        gpuos_graph_release(g2);
        gpuos_tensor_release(a);
        gpuos_tensor_release(b);
        gpuos_tensor_release(p);
        gpuos_tensor_release(q);
    }
    CHECK(gpuos_graph_add_dep(g, n0, n1) == GPUOS_ERR_INVALID_ARGUMENT, "a cycle 0 -> 1 -> 0 is refused");
    CHECK(strstr(gpuos_last_error(ctx), "cycle") != NULL, "the message says cycle: %s", gpuos_last_error(ctx));
    CHECK(gpuos_graph_add_dep(g, n0, n0) == GPUOS_ERR_INVALID_ARGUMENT, "a self dependency");
    CHECK(gpuos_graph_add_dep(g, n0, 7) == GPUOS_ERR_INVALID_ARGUMENT, "a node out of range");
    sc.node = n0, sc.index = 0, sc.value = 5.0;
    CHECK(gpuos_graph_launch(g, NULL, 0, &sc, 1, NULL) == GPUOS_OK && gpuos_download(ctx, x, h, sizeof h) == GPUOS_OK &&
              h[15] == 5.0f, "a scalar bound for one launch (%g)", h[15]);
    CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, NULL) == GPUOS_OK && gpuos_download(ctx, x, h, sizeof h) == GPUOS_OK &&
              h[15] == 1.0f, "and the recorded scalar the next (%g)", h[15]);
    {
        gpuos_graph_scalar two[2] = {sc, sc};
        two[1].value = 6.0;
        CHECK(gpuos_graph_launch(g, NULL, 0, two, 2, NULL) == GPUOS_ERR_INVALID_ARGUMENT &&
                  strstr(gpuos_last_error(ctx), "already") != NULL,
              "a scalar set twice in one launch: %s", gpuos_last_error(ctx));
    }
    {
        gpuos_tensor *y = vec(ctx, 16), *z = vec(ctx, 16);
        gpuos_graph_bind b2[2] = {{x, y}, {x, z}};
        CHECK(gpuos_graph_launch(g, b2, 2, NULL, 0, NULL) == GPUOS_ERR_INVALID_ARGUMENT &&
                  strstr(gpuos_last_error(ctx), "already") != NULL,
              "a tensor bound twice in one launch: %s", gpuos_last_error(ctx));
        gpuos_tensor_release(y);
        gpuos_tensor_release(z);
    }
    sc.index = 1; /* fill reads scalar 0 only: refused (it was accepted and ignored, a user's review) */
    CHECK(gpuos_graph_launch(g, NULL, 0, &sc, 1, NULL) == GPUOS_ERR_INVALID_ARGUMENT &&
              strstr(gpuos_last_error(ctx), "takes 1 scalar") != NULL,
          "a scalar fill does not read: %s", gpuos_last_error(ctx));
    /* recording validates as gpuos_submit does */
    bad.op = GPUOS_OP_ADD, bad.out = x, bad.in[0] = x, bad.in[1] = wrong;
    CHECK(gpuos_graph_add(g, &bad, NULL) == GPUOS_ERR_SHAPE_MISMATCH, "a bad task is refused at recording");
    bad.op = (gpuos_op)999;
    CHECK(gpuos_graph_add(g, &bad, NULL) == GPUOS_ERR_UNKNOWN_OP, "an unknown op");
    CHECK(gpuos_graph_add(g, NULL, NULL) == GPUOS_ERR_NULL_POINTER, "task NULL");
    CHECK(gpuos_graph_add(NULL, &f1, NULL) == GPUOS_ERR_NULL_POINTER, "graph NULL");
    CHECK(gpuos_graph_launch(NULL, NULL, 0, NULL, 0, NULL) == GPUOS_ERR_NULL_POINTER, "launch NULL");
    CHECK(gpuos_graph_create(ctx, NULL) == GPUOS_ERR_NULL_POINTER, "create NULL");
    CHECK(gpuos_graph_size(g) == 3, "refused tasks are not recorded");
    gpuos_graph_release(g);
    gpuos_graph_release(NULL);
    CHECK(gpuos_graph_create(ctx, &g) == GPUOS_OK, "create");
    CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, NULL) == GPUOS_OK, "an empty graph");
    gpuos_graph_release(g);
    gpuos_tensor_release(x);
    gpuos_tensor_release(wrong);
}

/* The launch order of a graph with dependencies, as gpuos.h promises it, checked against a
   plain O(n^2) implementation of the rule here: random graphs of nodes x_k = x_k * 3 + i on a
   few i64 accumulators (each node writes its own accumulator, so the recorded order is a chain
   per accumulator and the final values spell the order the nodes ran in), random dependencies;
   a dependency is refused exactly when it would close a cycle of explicit ones. Then a
   review's case: a dependency whose `after` node is a fill holds that node back, and the
   nodes between keep their recorded order. */
enum { DO_N = 24, DO_ACC = 3, DO_DEPS = 16 };
static int dep_reaches(int (*dep)[2], int nd, int from, int to) { /* over explicit dependencies */
    int seen[DO_N] = {0}, stack[DO_N], n = 0, e;
    seen[from] = 1, stack[n++] = from;
    while (n > 0) {
        const int v = stack[--n];
        if (v == to) return 1;
        for (e = 0; e < nd; e++)
            if (dep[e][0] == v && !seen[dep[e][1]]) seen[dep[e][1]] = 1, stack[n++] = dep[e][1];
    }
    return 0;
}
static void dep_order(const int *acc, int (*dep)[2], int nd, int *order) {
    int used[DO_N] = {0}, done, i, e;
    for (done = 0; done < DO_N; done++) {
        int pick = -1, fallback = -1;
        for (i = 0; i < DO_N && pick < 0; i++) {
            int xr = 1, ir = 1, j;
            if (used[i]) continue;
            for (e = 0; e < nd; e++) xr &= dep[e][1] != i || used[dep[e][0]];
            for (j = 0; j < i; j++) /* the previous node on the same accumulator (recorded order) */
                if (acc[j] == acc[i]) ir = used[j];
            if (xr && ir) pick = i;
            if (xr && fallback < 0) fallback = i;
        }
        if (pick < 0) pick = fallback;
        used[pick] = 1;
        order[done] = pick;
    }
}
static void test_dep_order(gpuos_context *ctx) {
    gpuos_tensor *x[DO_ACC], *three, *c[DO_N];
    int64_t one = 1, trial;
    for (int k = 0; k < DO_ACC; k++) CHECK(gpuos_tensor_new(ctx, GPUOS_I64, 1, &one, &x[k]) == GPUOS_OK, "new");
    CHECK(gpuos_tensor_scalar(ctx, GPUOS_I64, 3.0, &three) == GPUOS_OK, "scalar");
    for (int i = 0; i < DO_N; i++) CHECK(gpuos_tensor_scalar(ctx, GPUOS_I64, (double)(i + 1), &c[i]) == GPUOS_OK, "scalar");
    for (trial = 0; trial < 60; trial++) {
        int acc[DO_N], dep[DO_DEPS][2], nd = 0, order[DO_N], refused = 0;
        int64_t want[DO_ACC] = {0}, got[DO_ACC];
        gpuos_graph *g;
        CHECK(gpuos_graph_create(ctx, &g) == GPUOS_OK, "create");
        for (int i = 0; i < DO_N; i++) {
            gpuos_task t = GPUOS_TASK_INIT;
            acc[i] = (int)(next_rng() % DO_ACC);
            t.op = GPUOS_OP_FMA, t.out = x[acc[i]], t.in[0] = x[acc[i]], t.in[1] = three, t.in[2] = c[i];
            CHECK(gpuos_graph_add(g, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        }
        for (int k = 0; k < DO_DEPS; k++) {
            const int a = (int)(next_rng() % DO_N), b = (int)(next_rng() % DO_N);
            const gpuos_status st = a == b ? GPUOS_OK : gpuos_graph_add_dep(g, a, b);
            if (a == b) continue;
            if (dep_reaches(dep, nd, b, a)) {
                CHECK(st == GPUOS_ERR_INVALID_ARGUMENT, "trial %d: %d -> %d closes a cycle: refused (%d)", (int)trial, a, b, st);
                refused++;
            } else {
                CHECK(st == GPUOS_OK, "trial %d: %d -> %d: %s", (int)trial, a, b, gpuos_last_error(ctx));
                dep[nd][0] = a, dep[nd][1] = b, nd++;
            }
        }
        for (int k = 0; k < DO_ACC; k++) CHECK(gpuos_fill(ctx, x[k], 0.0) == GPUOS_OK, "fill");
        CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        dep_order(acc, dep, nd, order);
        for (int i = 0; i < DO_N; i++) want[acc[order[i]]] = want[acc[order[i]]] * 3 + order[i] + 1;
        for (int k = 0; k < DO_ACC; k++) {
            CHECK(gpuos_download(ctx, x[k], &got[k], sizeof got[k]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            CHECK(got[k] == want[k], "trial %d (%d dependencies, %d refused): accumulator %d %lld, expected %lld",
                  (int)trial, nd, refused, k, (long long)got[k], (long long)want[k]);
        }
        gpuos_graph_release(g);
    }
    /* denser random dependencies, verdicts only (the cycle check keeps a topological order and
       reorders the nodes between a dependency against it: every path of that is taken here) */
    for (trial = 0; trial < 300; trial++) {
        int dep[5 * DO_N][2], nd = 0;
        gpuos_graph *g;
        CHECK(gpuos_graph_create(ctx, &g) == GPUOS_OK, "create");
        for (int i = 0; i < DO_N; i++) {
            gpuos_task t = GPUOS_TASK_INIT;
            t.op = GPUOS_OP_FMA, t.out = x[i % DO_ACC], t.in[0] = x[i % DO_ACC], t.in[1] = three, t.in[2] = c[i];
            CHECK(gpuos_graph_add(g, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        }
        for (int k = 0; k < 5 * DO_N; k++) {
            const int a = (int)(next_rng() % DO_N), b = (int)(next_rng() % DO_N);
            gpuos_status st;
            if (a == b) continue;
            st = gpuos_graph_add_dep(g, a, b);
            if (dep_reaches(dep, nd, b, a)) {
                CHECK(st == GPUOS_ERR_INVALID_ARGUMENT, "dense trial %d: %d -> %d closes a cycle: refused (%d)", (int)trial,
                      a, b, st);
            } else {
                CHECK(st == GPUOS_OK, "dense trial %d: %d -> %d: %s", (int)trial, a, b, gpuos_last_error(ctx));
                dep[nd][0] = a, dep[nd][1] = b, nd++;
            }
        }
        gpuos_graph_release(g);
    }
    { /* the review's case: 0: a = 1; 1: a = 2; 2: o1 = a; 3: o2 = a; node 0 after node 2 */
        gpuos_graph *g;
        gpuos_tensor *a = vec(ctx, 4), *o1 = vec(ctx, 4), *o2 = vec(ctx, 4);
        gpuos_task f1 = GPUOS_TASK_INIT, f2 = GPUOS_TASK_INIT, c1 = GPUOS_TASK_INIT, c2 = GPUOS_TASK_INIT;
        float ha[4], h1[4], h2[4];
        f1.op = f2.op = GPUOS_OP_FILL, f1.out = f2.out = a, f1.scalar[0] = 1.0, f2.scalar[0] = 2.0;
        c1.op = c2.op = GPUOS_OP_COPY, c1.out = o1, c2.out = o2, c1.in[0] = c2.in[0] = a;
        CHECK(gpuos_graph_create(ctx, &g) == GPUOS_OK, "create");
        CHECK(gpuos_graph_add(g, &f1, NULL) == GPUOS_OK && gpuos_graph_add(g, &f2, NULL) == GPUOS_OK &&
                  gpuos_graph_add(g, &c1, NULL) == GPUOS_OK && gpuos_graph_add(g, &c2, NULL) == GPUOS_OK,
              "%s", gpuos_last_error(ctx));
        CHECK(gpuos_graph_add_dep(g, 2, 0) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_download(ctx, a, ha, sizeof ha) == GPUOS_OK && gpuos_download(ctx, o1, h1, sizeof h1) == GPUOS_OK &&
                  gpuos_download(ctx, o2, h2, sizeof h2) == GPUOS_OK, "download");
        CHECK(h1[0] == 2.0f && ha[0] == 1.0f && h2[3] == 1.0f,
              "order 1, 2, 0, 3: o1 = %g (expected 2), a = %g and o2 = %g (expected 1)", h1[0], ha[0], h2[3]);
        gpuos_graph_release(g);
        gpuos_tensor_release(a);
        gpuos_tensor_release(o1);
        gpuos_tensor_release(o2);
    }
    for (int k = 0; k < DO_ACC; k++) gpuos_tensor_release(x[k]);
    gpuos_tensor_release(three);
    for (int i = 0; i < DO_N; i++) gpuos_tensor_release(c[i]);
}

/* a run-time operator in a graph: the launch runs its current version */
static void test_runtime_op(gpuos_context *ctx) {
    gpuos_op_def d = GPUOS_OP_DEF_INIT;
    gpuos_op op;
    gpuos_graph *g;
    gpuos_task t = GPUOS_TASK_INIT;
    gpuos_tensor *x = vec(ctx, 64), *y = vec(ctx, 64);
    float h[64];
    for (int i = 0; i < 64; i++) h[i] = -1.0f; /* (a failed download leaves it: not stack garbage) */
    d.name = "g_affine";
    d.source = "out = a * 2.0f + 1.0f;";
    d.n_inputs = 1;
    CHECK(gpuos_op_define(ctx, &d, &op) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_fill(ctx, x, 3.0) == GPUOS_OK, "fill");
    CHECK(gpuos_graph_create(ctx, &g) == GPUOS_OK, "create");
    t.op = op, t.out = y, t.in[0] = x;
    CHECK(gpuos_graph_add(g, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, NULL) == GPUOS_OK, "launch: %s", gpuos_last_error(ctx));
    CHECK(gpuos_download(ctx, y, h, sizeof h) == GPUOS_OK, "download: %s", gpuos_last_error(ctx));
    CHECK(h[0] == 7.0f, "run-time operator in a graph: %g", h[0]);
    d.source = "out = a * 3.0f;";
    CHECK(gpuos_op_redefine(ctx, op, &d) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, NULL) == GPUOS_OK && gpuos_download(ctx, y, h, sizeof h) == GPUOS_OK &&
              h[63] == 9.0f, "after a redefinition the launch runs the new version: %g", h[63]);
    d.source = "out = a * 4.0f;";
    CHECK(gpuos_op_redefine(ctx, op, &d) == GPUOS_OK, "the graph does not pin an old version: %s", gpuos_last_error(ctx));
    CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, NULL) == GPUOS_OK && gpuos_download(ctx, y, h, sizeof h) == GPUOS_OK &&
              h[1] == 12.0f, "third version: %g", h[1]);
    gpuos_graph_release(g);
    gpuos_op_remove(ctx, op);
    gpuos_tensor_release(x);
    gpuos_tensor_release(y);
}

/* launches without waits, interleaved with eager tasks on the same memory: x = (x + 10) * 2
   per round, from 10 recorded x = x + 1 and one eager x = x * 2 (not commutative: any
   reordering across a launch's boundary shows) */
static void test_interleaved(gpuos_context *ctx) {
    gpuos_graph *g;
    gpuos_tensor *x = vec(ctx, 4096), *one, *two;
    gpuos_task t = GPUOS_TASK_INIT;
    static float h[4096];
    double want = 0;
    int k, r, bad = 0;
    CHECK(gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one) == GPUOS_OK, "one");
    CHECK(gpuos_tensor_scalar(ctx, GPUOS_F32, 2.0, &two) == GPUOS_OK, "two");
    CHECK(gpuos_fill(ctx, x, 0.0) == GPUOS_OK, "fill");
    CHECK(gpuos_graph_create(ctx, &g) == GPUOS_OK, "create");
    t.op = GPUOS_OP_ADD, t.out = x, t.in[0] = x, t.in[1] = one;
    for (k = 0; k < 10; k++) CHECK(gpuos_graph_add(g, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (r = 0; r < 12; r++) {
        CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_mul(ctx, x, x, two) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        want = (want + 10) * 2;
    }
    CHECK(gpuos_download(ctx, x, h, sizeof h) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (k = 0; k < 4096; k++) bad += h[k] != (float)want;
    CHECK(bad == 0, "12 launches interleaved with eager tasks: x = %g, expected %g (%d elements)", h[0], want, bad);
    gpuos_graph_release(g);
    gpuos_tensor_release(x);
    gpuos_tensor_release(one);
    gpuos_tensor_release(two);
}

/* A scalar read by the nodes of a graph, written by an eager task right after each launch:
   every node must read the old value. Node 0 reads it alone, nodes 1..10 in a chain of
   in-place adds, nodes 11..42 side by side (43 nodes, 10 deep: a wide graph, one tile a task). On the GPU a launch records in the
   scalar's log only the reads no later read stands for (cuda_graph_stand_ins: the chain's
   last add stands for the chain, not for node 0 or the side-by-side ones): a read left out
   wrongly lets the eager write overtake a node still to read it. */
static void test_war_after_launch(gpuos_context *ctx) {
    enum { W = 32, R = 40, NW = 4096 };
    gpuos_graph *g;
    gpuos_tensor *x = vec(ctx, NW), *z = vec(ctx, NW), *y = vec(ctx, NW), *one, *s, *w[W], *yw[W];
    gpuos_task t = GPUOS_TASK_INIT;
    static float h[NW];
    int64_t shape0[1] = {1};
    int k, r, bad = 0;
    double sv = 3.0, xv = 0.0;
    CHECK(gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one) == GPUOS_OK, "one");
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 0, shape0, &s) == GPUOS_OK, "s");
    CHECK(gpuos_fill(ctx, s, sv) == GPUOS_OK && gpuos_fill(ctx, x, 0.0) == GPUOS_OK && gpuos_fill(ctx, z, 5.0) == GPUOS_OK,
          "fill");
    CHECK(gpuos_graph_create(ctx, &g) == GPUOS_OK, "create");
    t.op = GPUOS_OP_ADD, t.out = y, t.in[0] = z, t.in[1] = s;
    CHECK(gpuos_graph_add(g, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    t.out = x, t.in[0] = x;
    for (k = 0; k < 10; k++) CHECK(gpuos_graph_add(g, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (k = 0; k < W; k++) {
        w[k] = vec(ctx, NW), yw[k] = vec(ctx, NW);
        CHECK(gpuos_fill(ctx, w[k], (double)(100 * k)) == GPUOS_OK, "fill w");
        t.out = yw[k], t.in[0] = w[k];
        CHECK(gpuos_graph_add(g, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    }
    for (r = 0; r < R; r++) {
        CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        xv += 10 * sv;
        if (r + 1 < R) { /* (the last launch's values are checked against the last s) */
            CHECK(gpuos_add(ctx, s, s, one) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            sv += 1;
        }
    }
    CHECK(gpuos_download(ctx, x, h, sizeof h) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (k = 0; k < NW; k++) bad += h[k] != (float)xv;
    CHECK(bad == 0, "war: chain x = %g, expected %g (%d elements)", h[0], xv, bad);
    CHECK(gpuos_download(ctx, y, h, sizeof h) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (k = 0, bad = 0; k < NW; k++) bad += h[k] != (float)(5.0 + sv);
    CHECK(bad == 0, "war: node 0 y = %g, expected %g (%d elements)", h[0], 5.0 + sv, bad);
    for (r = 0; r < W; r++) {
        CHECK(gpuos_download(ctx, yw[r], h, sizeof h) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        for (k = 0, bad = 0; k < NW; k++) bad += h[k] != (float)(100 * r + sv);
        CHECK(bad == 0, "war: side node %d = %g, expected %g (%d elements)", r, h[0], 100 * r + sv, bad);
        gpuos_tensor_release(w[r]);
        gpuos_tensor_release(yw[r]);
    }
    gpuos_graph_release(g);
    gpuos_tensor_release(x);
    gpuos_tensor_release(y);
    gpuos_tensor_release(z);
    gpuos_tensor_release(s);
    gpuos_tensor_release(one);
}

/* Reads of one tensor through different element maps in a graph, the tensor written by an
   eager task after each launch: node 0 reads X transposed, node 1 reads X as is and is
   tile-aligned with node 0 through Y; the eager X = X + 1 aligns with node 1's read of X, so
   node 0's read must stay recorded (its tiles read other bytes than node 1's tile of the same
   index: a helper's review of cuda_graph_stand_ins). The race is narrow (on an H100 four runs
   with the faulty stand-ins passed): test_cudalog checks the encoding itself. */
static void test_war_views(gpuos_context *ctx) {
    enum { R = 30 };
    int64_t shape[2] = {64, 128};
    gpuos_graph *g;
    gpuos_tensor *big = NULL, *x = NULL, *xt = NULL, *y = NULL, *z = NULL, *one = NULL;
    gpuos_task t = GPUOS_TASK_INIT;
    static float hb[64 * 128], hy[64 * 64], hz[64 * 64];
    int i, j, r, bad = 0;
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 2, shape, &big) == GPUOS_OK, "big");
    CHECK(gpuos_view_slice(big, 1, 0, 64, 1, &x) == GPUOS_OK && gpuos_view_transpose(x, 0, 1, &xt) == GPUOS_OK, "views");
    shape[1] = 64;
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 2, shape, &y) == GPUOS_OK && gpuos_tensor_new(ctx, GPUOS_F32, 2, shape, &z) == GPUOS_OK,
          "y, z");
    CHECK(gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one) == GPUOS_OK, "one");
    for (i = 0; i < 64 * 128; i++) hb[i] = (float)(i % 1000);
    CHECK(gpuos_upload(ctx, big, hb, sizeof hb) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_graph_create(ctx, &g) == GPUOS_OK, "create");
    t.op = GPUOS_OP_ADD, t.out = y, t.in[0] = xt, t.in[1] = xt;
    CHECK(gpuos_graph_add(g, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    t.out = z, t.in[0] = y, t.in[1] = x;
    CHECK(gpuos_graph_add(g, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (r = 0; r < R; r++) {
        CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        if (r + 1 < R) CHECK(gpuos_add(ctx, x, x, one) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    }
    CHECK(gpuos_download(ctx, y, hy, sizeof hy) == GPUOS_OK && gpuos_download(ctx, z, hz, sizeof hz) == GPUOS_OK, "%s",
          gpuos_last_error(ctx));
    for (i = 0; i < 64; i++) /* x[i][j] ends at its start + R - 1 */
        for (j = 0; j < 64; j++) {
            const float xv = hb[i * 128 + j] + (R - 1), xtv = hb[j * 128 + i] + (R - 1);
            bad += hy[i * 64 + j] != xtv + xtv || hz[i * 64 + j] != (xtv + xtv) + xv;
        }
    CHECK(bad == 0, "war through views: %d of 4096 elements differ", bad);
    gpuos_graph_release(g);
    gpuos_tensor_release(z);
    gpuos_tensor_release(y);
    gpuos_tensor_release(xt);
    gpuos_tensor_release(x);
    gpuos_tensor_release(big);
    gpuos_tensor_release(one);
}

/* Jobs staged through pinned tensors, 8 in flight: copy-in (a task reading pinned host
   memory), y = x * x + x, |y|, copy-out (a task writing pinned host memory); the host
   refills a slot's input and reads its output only after that slot's previous job's
   fence. One graph per slot (no bindings: the pre-encoded path on a GPU) and one graph
   with bindings (the general path). */
static void test_pinned_pipeline(gpuos_context *ctx) {
    enum { S = 8, J = 40 };
    gpuos_graph *g[S], *gb;
    gpuos_tensor *pin_in[S], *pin_out[S], *x[S], *y[S];
    uint64_t fence[S] = {0};
    int job_of[S];
    int64_t n = N;
    int s, j, i, bad = 0, checked = 0;
    static float want[S][N];
    CHECK(gpuos_tensor_host_data(NULL) == NULL, "host data of NULL");
    for (s = 0; s < S; s++) {
        gpuos_task t = GPUOS_TASK_INIT;
        CHECK(gpuos_tensor_new_pinned(ctx, GPUOS_F32, 1, &n, &pin_in[s]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_tensor_new_pinned(ctx, GPUOS_F32, 1, &n, &pin_out[s]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        x[s] = vec(ctx, N), y[s] = vec(ctx, N);
        CHECK(gpuos_tensor_host_data(pin_in[s]) != NULL, "pinned tensors have host data");
        CHECK(gpuos_tensor_host_data(x[s]) == NULL, "only pinned tensors have host data");
        CHECK(gpuos_graph_create(ctx, &g[s]) == GPUOS_OK, "create");
        t.op = GPUOS_OP_COPY, t.out = x[s], t.in[0] = pin_in[s];
        CHECK(gpuos_graph_add(g[s], &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        t.op = GPUOS_OP_MUL, t.out = y[s], t.in[0] = x[s], t.in[1] = x[s];
        CHECK(gpuos_graph_add(g[s], &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        t.op = GPUOS_OP_ADD, t.out = y[s], t.in[0] = y[s], t.in[1] = x[s];
        CHECK(gpuos_graph_add(g[s], &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        t.op = GPUOS_OP_ABS, t.out = y[s], t.in[0] = y[s], t.in[1] = NULL;
        CHECK(gpuos_graph_add(g[s], &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        t.op = GPUOS_OP_COPY, t.out = pin_out[s], t.in[0] = y[s];
        CHECK(gpuos_graph_add(g[s], &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        job_of[s] = -1;
    }
    gb = g[0]; /* the same program with bindings: slot s's tensors in place of slot 0's */
    for (j = 0; j < J; j++) {
        float *in, *out;
        s = j % S;
        if (job_of[s] >= 0) { /* the slot's previous job: wait, check its output */
            CHECK(gpuos_wait_fence(ctx, fence[s], 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            out = (float *)gpuos_tensor_host_data(pin_out[s]);
            for (i = 0; i < N; i++) bad += out[i] != want[s][i];
            checked++;
        }
        in = (float *)gpuos_tensor_host_data(pin_in[s]);
        for (i = 0; i < N; i++) {
            const float v = frand() * 4.0f, sq = v * v; /* rounded as the task rounds (x87 too) */
            in[i] = v;
            want[s][i] = fabsf(sq + v);
        }
        if (j % 3 == 2) {
            gpuos_graph_bind b[4];
            b[0].recorded = pin_in[0], b[0].actual = pin_in[s];
            b[1].recorded = pin_out[0], b[1].actual = pin_out[s];
            b[2].recorded = x[0], b[2].actual = x[s];
            b[3].recorded = y[0], b[3].actual = y[s];
            CHECK(gpuos_graph_launch(gb, b, 4, NULL, 0, &fence[s]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        } else {
            CHECK(gpuos_graph_launch(g[s], NULL, 0, NULL, 0, &fence[s]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        }
        job_of[s] = j;
    }
    CHECK(gpuos_wait(ctx, 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (s = 0; s < S; s++) {
        float *out = (float *)gpuos_tensor_host_data(pin_out[s]);
        for (i = 0; i < N; i++) bad += out[i] != want[s][i];
        checked++;
    }
    CHECK(bad == 0 && checked == J, "pinned pipeline: %d elements wrong over %d jobs", bad, checked);
    {   /* a view's host data starts at its first element; pinned tensors work eagerly too */
        gpuos_tensor *v = NULL;
        int64_t start = 10;
        CHECK(gpuos_view_slice(pin_in[0], 0, start, GPUOS_SLICE_END, 1, &v) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK((char *)gpuos_tensor_host_data(v) == (char *)gpuos_tensor_host_data(pin_in[0]) + 40, "view host data");
        CHECK(gpuos_neg(ctx, pin_out[0], pin_in[0]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_wait(ctx, 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        bad = 0;
        for (i = 0; i < N; i++)
            bad += ((float *)gpuos_tensor_host_data(pin_out[0]))[i] != -((float *)gpuos_tensor_host_data(pin_in[0]))[i];
        CHECK(bad == 0, "eager neg on pinned tensors: %d elements wrong", bad);
        gpuos_tensor_release(v);
    }
    for (s = 0; s < S; s++) {
        gpuos_graph_release(g[s]);
        gpuos_tensor_release(pin_in[s]);
        gpuos_tensor_release(pin_out[s]);
        gpuos_tensor_release(x[s]);
        gpuos_tensor_release(y[s]);
    }
}

/* A graph of 400 nodes over int32 tensors of 5000 elements (several tiles): x = x + y,
   y = y + c, s = sum(x), z = z + s (s broadcast: cross-tile dependencies), launched 170
   times back to back (68000 tasks; 3 with GPUOS_TEST_QUICK, more than the device task ring holds, so its expansion
   waits for room), with eager tasks on its tensors in between: against a C reference,
   exactly (int32 wraps). */
#define BIG_N 5000
#define BIG_G 100
static void big_ref_group(uint32_t *x, uint32_t *y, uint32_t *z, uint32_t c) {
    uint32_t s = 0;
    int i;
    for (i = 0; i < BIG_N; i++) x[i] += y[i];
    for (i = 0; i < BIG_N; i++) y[i] += c;
    for (i = 0; i < BIG_N; i++) s += x[i];
    for (i = 0; i < BIG_N; i++) z[i] += s;
}
static void test_large(gpuos_context *ctx) {
    static uint32_t hx[BIG_N], hy[BIG_N], hz[BIG_N], gx[BIG_N], gy[BIG_N], gz[BIG_N];
    gpuos_tensor *x = NULL, *y = NULL, *z = NULL, *s = NULL, *c = NULL;
    gpuos_graph *g = NULL;
    gpuos_task t[4];
    int64_t n = BIG_N;
    int i, k, r, bad = 0;
    const int launches = getenv("GPUOS_TEST_QUICK") ? 3 : 170; /* sanitizer runs (racecheck: ~1000x slower): fewer */
    CHECK(gpuos_tensor_new(ctx, GPUOS_I32, 1, &n, &x) == GPUOS_OK && gpuos_tensor_new(ctx, GPUOS_I32, 1, &n, &y) == GPUOS_OK &&
              gpuos_tensor_new(ctx, GPUOS_I32, 1, &n, &z) == GPUOS_OK && gpuos_tensor_new(ctx, GPUOS_I32, 0, &n, &s) == GPUOS_OK &&
              gpuos_tensor_scalar(ctx, GPUOS_I32, 3.0, &c) == GPUOS_OK,
          "%s", gpuos_last_error(ctx));
    if (!x || !y || !z || !s || !c) return;
    for (i = 0; i < BIG_N; i++) {
        const uint64_t v = next_rng();
        hx[i] = (uint32_t)v, hy[i] = (uint32_t)(v >> 32), hz[i] = (uint32_t)(v >> 16);
    }
    CHECK(gpuos_upload(ctx, x, hx, sizeof hx) == GPUOS_OK && gpuos_upload(ctx, y, hy, sizeof hy) == GPUOS_OK &&
              gpuos_upload(ctx, z, hz, sizeof hz) == GPUOS_OK,
          "%s", gpuos_last_error(ctx));
    for (k = 0; k < 4; k++) {
        gpuos_task e = GPUOS_TASK_INIT;
        t[k] = e;
    }
    t[0].op = GPUOS_OP_ADD, t[0].out = x, t[0].in[0] = x, t[0].in[1] = y;
    t[1].op = GPUOS_OP_ADD, t[1].out = y, t[1].in[0] = y, t[1].in[1] = c;
    t[2].op = GPUOS_OP_SUM, t[2].out = s, t[2].in[0] = x, t[2].axes = GPUOS_AXES_ALL;
    t[3].op = GPUOS_OP_ADD, t[3].out = z, t[3].in[0] = z, t[3].in[1] = s;
    CHECK(gpuos_graph_create(ctx, &g) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (k = 0; k < 4 * BIG_G; k++) CHECK(gpuos_graph_add(g, &t[k % 4], NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (r = 0; r < launches; r++) {
        CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, NULL) == GPUOS_OK, "launch %d: %s", r, gpuos_last_error(ctx));
        for (k = 0; k < BIG_G; k++) big_ref_group(hx, hy, hz, 3u);
        if (r % 40 == 1) { /* eager work on the graph's tensors between launches */
            CHECK(gpuos_add(ctx, y, y, x) == GPUOS_OK && gpuos_sum(ctx, s, z, NULL, 0, 0) == GPUOS_OK &&
                      gpuos_add(ctx, x, x, s) == GPUOS_OK,
                  "%s", gpuos_last_error(ctx));
            uint32_t sz = 0;
            for (i = 0; i < BIG_N; i++) hy[i] += hx[i];
            for (i = 0; i < BIG_N; i++) sz += hz[i];
            for (i = 0; i < BIG_N; i++) hx[i] += sz;
        }
    }
    CHECK(gpuos_download(ctx, x, gx, sizeof gx) == GPUOS_OK && gpuos_download(ctx, y, gy, sizeof gy) == GPUOS_OK &&
              gpuos_download(ctx, z, gz, sizeof gz) == GPUOS_OK,
          "%s", gpuos_last_error(ctx));
    for (i = 0; i < BIG_N; i++) bad += gx[i] != hx[i] || gy[i] != hy[i] || gz[i] != hz[i];
    CHECK(bad == 0, "%d launches of a 400-node graph: %d of %d elements differ from the reference", launches, bad, BIG_N);
    gpuos_graph_release(g);
    gpuos_tensor_release(x);
    gpuos_tensor_release(y);
    gpuos_tensor_release(z);
    gpuos_tensor_release(s);
    gpuos_tensor_release(c);
}

/* Many graphs of many distinct nodes alive at once (on a GPU each node pins a row of the
   device's plan table, 4096 rows, at most half of them pinned; linear probing clusters them):
   every launch must be queued at once and be right, the graphs past the pinning limit
   launched node by node. Four graphs of 1200 out_k = in_k + c_g, launched in turn, then the
   eager out_k = out_k * 2 on every tensor. */
#define MANY_G 4
#define MANY_N 1200
#define MANY_E 16
static void test_many_plans(gpuos_context *ctx) {
    static float hin[MANY_N][MANY_E], got[MANY_E];
    gpuos_tensor **in = (gpuos_tensor **)calloc(MANY_N, sizeof *in), **out = (gpuos_tensor **)calloc(MANY_N, sizeof *out);
    gpuos_tensor *c[MANY_G] = {NULL};
    gpuos_graph *g[MANY_G] = {NULL};
    int i, k, r, bad = 0;
    if (!in || !out) {
        CHECK(0, "out of host memory");
        free(in);
        free(out);
        return;
    }
    for (i = 0; i < MANY_N; i++) {
        in[i] = vec(ctx, MANY_E);
        out[i] = vec(ctx, MANY_E);
        if (!in[i] || !out[i]) return;
        fill_random(ctx, in[i], hin[i], MANY_E);
    }
    for (k = 0; k < MANY_G; k++) {
        CHECK(gpuos_tensor_scalar(ctx, GPUOS_F32, (double)(k + 1), &c[k]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_graph_create(ctx, &g[k]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        if (!c[k] || !g[k]) return;
        for (i = 0; i < MANY_N; i++) {
            gpuos_task t = GPUOS_TASK_INIT;
            t.op = GPUOS_OP_ADD, t.out = out[i], t.in[0] = in[i], t.in[1] = c[k];
            CHECK(gpuos_graph_add(g[k], &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        }
    }
    for (r = 0; r < 2; r++)
        for (k = 0; k < MANY_G; k++) {
            uint64_t seq = 0;
            const gpuos_status st = gpuos_graph_launch(g[k], NULL, 0, NULL, 0, &seq);
            CHECK(st == GPUOS_OK, "round %d, graph %d: %s: %s", r, k, gpuos_status_string(st), gpuos_last_error(ctx));
        }
    for (i = 0; i < MANY_N; i++) CHECK(gpuos_mul(ctx, out[i], out[i], c[1]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (i = 0; i < MANY_N; i++) { /* the last launch's (graph MANY_G - 1) sums, doubled */
        CHECK(gpuos_download(ctx, out[i], got, sizeof got) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        for (k = 0; k < MANY_E; k++) {
            const float sum = hin[i][k] + (float)MANY_G; /* rounded as the task rounds (x87) */
            bad += got[k] != sum * 2.0f;
        }
    }
    CHECK(bad == 0, "%d graphs of %d distinct nodes: %d elements wrong", MANY_G, MANY_N, bad);
    for (k = 0; k < MANY_G; k++) {
        gpuos_graph_release(g[k]);
        gpuos_tensor_release(c[k]);
    }
    for (i = 0; i < MANY_N; i++) {
        gpuos_tensor_release(in[i]);
        gpuos_tensor_release(out[i]);
    }
    free(in);
    free(out);
}

/* A graph of more nodes than the queue holds: its launch waits for room while the earlier
   nodes run, as single submissions do (the host executor's workers were not woken while a
   launch waited for room, so such a launch always failed with GPUOS_ERR_QUEUE_FULL). */
static void test_small_queue(void) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx = NULL;
    gpuos_tensor *x = NULL, *one = NULL;
    gpuos_graph *g = NULL;
    gpuos_task t = GPUOS_TASK_INIT;
    int64_t n = 1000;
    static int32_t h[1000], got[1000];
    int i, r, bad = 0;
    cfg.device = ctest_device();
    cfg.queue_capacity = 16;
    cfg.wait_timeout_ms = 20000;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        CHECK(0, "gpuos_create (queue of 16): %s", gpuos_last_error(NULL));
        return;
    }
    CHECK(gpuos_tensor_new(ctx, GPUOS_I32, 1, &n, &x) == GPUOS_OK && gpuos_tensor_scalar(ctx, GPUOS_I32, 3.0, &one) == GPUOS_OK,
          "%s", gpuos_last_error(ctx));
    for (i = 0; i < 1000; i++) h[i] = (int32_t)(next_rng() % 100000);
    CHECK(gpuos_upload(ctx, x, h, sizeof h) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    t.op = GPUOS_OP_ADD, t.out = x, t.in[0] = x, t.in[1] = one;
    CHECK(gpuos_graph_create(ctx, &g) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (i = 0; i < 100; i++) CHECK(gpuos_graph_add(g, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (r = 0; r < 3; r++)
        CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, NULL) == GPUOS_OK, "a 100-node launch into a queue of 16 (%d): %s", r,
              gpuos_last_error(ctx));
    CHECK(gpuos_download(ctx, x, got, sizeof got) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (i = 0; i < 1000; i++) bad += got[i] != h[i] + 900;
    CHECK(bad == 0, "3 launches of 100 adds of 3 through a queue of 16: %d of 1000 elements differ", bad);
    gpuos_graph_release(g);
    gpuos_tensor_release(x);
    gpuos_tensor_release(one);
    gpuos_destroy(ctx);

    /* a launch into a queue already full queues nothing, and its error says so (it named
       gpuos_submit and "the task") */
    cfg.submit_timeout_ms = 0;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        CHECK(0, "gpuos_create (queue of 16): %s", gpuos_last_error(NULL));
        return;
    }
    CHECK(gpuos_tensor_new(ctx, GPUOS_I32, 1, &n, &x) == GPUOS_OK && gpuos_tensor_scalar(ctx, GPUOS_I32, 3.0, &one) == GPUOS_OK,
          "%s", gpuos_last_error(ctx));
    CHECK(gpuos_upload(ctx, x, h, sizeof h) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    t.out = x, t.in[0] = x, t.in[1] = one;
    CHECK(gpuos_graph_create(ctx, &g) == GPUOS_OK && gpuos_graph_add(g, &t, NULL) == GPUOS_OK &&
              gpuos_graph_add(g, &t, NULL) == GPUOS_OK,
          "%s", gpuos_last_error(ctx));
    gpuos_debug_pause(ctx, 1);
    for (i = 0; i < 16; i++) CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    {
        const gpuos_status st = gpuos_graph_launch(g, NULL, 0, NULL, 0, NULL);
        const char *want = "GPUOS_ERR_QUEUE_FULL: gpuos_graph_launch: none of the launch's 2 tasks were queued: ";
        CHECK(st == GPUOS_ERR_QUEUE_FULL && strncmp(gpuos_last_error(ctx), want, strlen(want)) == 0,
              "a launch into a full queue: %s", gpuos_last_error(ctx));
    }
    gpuos_debug_pause(ctx, 0);
    CHECK(gpuos_download(ctx, x, got, sizeof got) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (i = 0, bad = 0; i < 1000; i++) bad += got[i] != h[i] + 48;
    CHECK(bad == 0, "16 adds of 3 and a launch refused: %d of 1000 elements differ", bad);
    gpuos_graph_release(g);
    gpuos_tensor_release(x);
    gpuos_tensor_release(one);
    gpuos_destroy(ctx);
}

int main(void) {
    rng = ctest_rng(ctest_seed("test_graph"), rng);
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx;
    cfg.device = ctest_device();
    cfg.wait_timeout_ms = 20000;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        fprintf(stderr, "gpuos_create: %s\n", gpuos_last_error(NULL));
        return 1;
    }
    if (getenv("GPUOS_TEST_ONLY") && strcmp(getenv("GPUOS_TEST_ONLY"), "large") == 0) {
        /* sanitizer runs: every tensor exists before the kernel starts (memcheck cannot see
           memory allocated while a kernel runs) */
        test_large(ctx);
    } else {
        test_equal_eager(ctx);
        test_in_flight(ctx);
        test_deps_and_errors(ctx);
        test_dep_order(ctx);
        test_runtime_op(ctx);
        test_interleaved(ctx);
        test_war_after_launch(ctx);
        test_war_views(ctx);
        test_pinned_pipeline(ctx);
        test_large(ctx);
        test_many_plans(ctx);
        test_small_queue();
    }
    CHECK(gpuos_context_status(ctx) == GPUOS_OK, "healthy: %s", gpuos_last_error(ctx));
    gpuos_destroy(ctx);
    return ctest_summary("test_graph");
}
