/* test_fuse.c - matmul epilogues fused by recorded graphs (src/graph.c, gpuos.h "Fusion"), on
   the device the tests run on ($GPUOS_TEST_DEVICE).

   Random programs: a matmul into h (a plain tensor, a column slice of a wider one, or a
   transposed view) followed by 1..6 element-wise nodes in place on h: epilogue operators
   with operands broadcast every way ([], [N], [1, N], [M, 1], [M, N], a transposed view; h
   first or second), and now and then a node that must end the fusion (a reader of h, an
   operator outside the epilogue set, h + h, an out-of-place add, a third distinct operand);
   before the matmul a node may write an operand, after the group one may overwrite it.
   Every dtype a matmul has. Each program is launched as a graph (fused) and submitted
   eagerly (never fused): every output must be equal BIT FOR BIT, and the graph must have
   queued exactly the tasks the fusion rules give (gpuos_debug_graph_tasks). Also: a launch
   with bindings (not fused) equals the fused one, launches in flight on the same graph,
   GPUOS_GRAPH_FUSE=0, and the tiny MLP layer (matmul, bias, gelu, residual, layernorm). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctest.h"
#include "gpuos.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(uint64_t n) { /* xorshift64, [0, n) */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng % n;
}

static gpuos_context *ctx;
static gpuos_config cfg;

/* Tensors allocated but not filled yet: every tensor of a program is allocated before its
   first task, so that compute-sanitizer's memcheck sees them (it cannot see memory allocated
   while a kernel runs; run_gpu.sh runs this test so, with a fresh context per program). */
static struct pending {
    gpuos_tensor *t, *f;
    int64_t n;
    int ints;
} pend[32];
static int n_pend;

/* A new tensor of dtype dt and the given shape, to be filled (fill_all) with small random
   values (made in f32 and cast, so that every dtype gets them without host conversions). */
static gpuos_tensor *rand_tensor(gpuos_dtype dt, int rank, const int64_t *shape, int ints) {
    gpuos_tensor *t = NULL, *f = NULL;
    int64_t n = 1;
    int k;
    for (k = 0; k < rank; k++) n *= shape[k];
    CHECK(gpuos_tensor_new(ctx, dt, rank, shape, &t) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, rank, shape, &f) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    pend[n_pend].t = t, pend[n_pend].f = f, pend[n_pend].n = n, pend[n_pend++].ints = ints;
    return t;
}

static void fill_all(void) {
    int i, k;
    for (i = 0; i < n_pend; i++) {
        const int64_t n = pend[i].n;
        float *h = (float *)malloc((size_t)(n ? n : 1) * sizeof(float));
        for (k = 0; k < n; k++) h[k] = pend[i].ints ? (float)((int)rnd(9) - 4) : (float)((double)rnd(2001) / 1000.0 - 1.0);
        CHECK(gpuos_upload(ctx, pend[i].f, h, (size_t)n * sizeof(float)) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_cast(ctx, pend[i].t, pend[i].f) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        free(h);
        gpuos_tensor_release(pend[i].f);
    }
    n_pend = 0;
}

/* A fresh context per program ($GPUOS_TEST_FRESH, for the sanitizers), else one for all. */
static int fresh_begin(void) {
    if (ctx) return 1;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        fprintf(stderr, "gpuos_create: %s\n", gpuos_last_error(NULL));
        CHECK(0, "gpuos_create");
        return 0;
    }
    return 1;
}
static void fresh_end(void) {
    if (getenv("GPUOS_TEST_FRESH")) {
        gpuos_destroy(ctx);
        ctx = NULL;
    }
}

/* Another handle on all of t (rank 0: a reshape, else a full slice). */
static gpuos_tensor *whole(gpuos_tensor *t) {
    gpuos_tensor *v = NULL;
    gpuos_tensor_info info;
    CHECK(gpuos_tensor_get_info(t, &info) == GPUOS_OK, "info");
    if (info.rank == 0) CHECK(gpuos_view_reshape(t, 0, NULL, &v) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    else CHECK(gpuos_view_slice(t, 0, 0, GPUOS_SLICE_END, 1, &v) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    return v;
}

/* A new contiguous tensor like t (contiguous itself), and its bytes. */
static gpuos_tensor *like(gpuos_tensor *t, size_t *bytes) {
    gpuos_tensor *v = NULL;
    gpuos_tensor_info info;
    int64_t n = 1;
    int k;
    CHECK(gpuos_tensor_get_info(t, &info) == GPUOS_OK, "info");
    for (k = 0; k < info.rank; k++) n *= info.shape[k];
    *bytes = (size_t)n * gpuos_dtype_size(info.dtype);
    CHECK(gpuos_tensor_new(ctx, info.dtype, info.rank, info.shape, &v) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    return v;
}

/* Bytes of t (contiguous), downloaded. */
static void *grab(gpuos_tensor *t, size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    CHECK(gpuos_download(ctx, t, p, bytes) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    return p;
}

enum { MAXN = 12 };
typedef struct program {
    gpuos_task t[MAXN];
    int n, expect_tasks;
} program;

static int is_float(gpuos_dtype dt) { return dt == GPUOS_F16 || dt == GPUOS_BF16 || dt == GPUOS_F32 || dt == GPUOS_F64; }

/* Runs p as a graph (twice: a second launch in flight on the same tensors) and eagerly, each
   from the same inputs (copied back in between), and compares the bytes of every tensor in
   outs. */
static void run_both(const char *what, program *p, gpuos_tensor **base, const size_t *bytes, int n_base,
                     gpuos_tensor **init, int fuse_expected, const gpuos_graph_bind *bind) {
    void *after[2][8];
    int mode, k, i;
    gpuos_graph *g;
    CHECK(gpuos_graph_create(ctx, &g) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (i = 0; i < p->n; i++) CHECK(gpuos_graph_add(g, &p->t[i], NULL) == GPUOS_OK, "%s node %d: %s", what, i, gpuos_last_error(ctx));
    for (mode = 0; mode < 2; mode++) {
        for (k = 0; k < n_base; k++) CHECK(gpuos_copy(ctx, base[k], init[k]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        if (mode == 0) {
            uint64_t seq = 0;
            CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, &seq) == GPUOS_OK, "%s: %s", what, gpuos_last_error(ctx));
            CHECK(gpuos_wait_fence(ctx, seq, 60000) == GPUOS_OK, "%s: %s", what, gpuos_last_error(ctx));
            if (fuse_expected)
                CHECK(gpuos_debug_graph_tasks(g) == p->expect_tasks, "%s: the launch queued %d tasks, expected %d", what,
                      gpuos_debug_graph_tasks(g), p->expect_tasks);
            else
                CHECK(gpuos_debug_graph_tasks(g) == p->n, "%s: %d tasks with fusion off, expected %d", what,
                      gpuos_debug_graph_tasks(g), p->n);
        } else {
            for (i = 0; i < p->n; i++) CHECK(gpuos_submit(ctx, &p->t[i], NULL) == GPUOS_OK, "%s: %s", what, gpuos_last_error(ctx));
        }
        for (k = 0; k < n_base; k++) after[mode][k] = grab(base[k], bytes[k]);
    }
    for (k = 0; k < n_base; k++) {
        CHECK(memcmp(after[0][k], after[1][k], bytes[k]) == 0, "%s: tensor %d differs between the fused graph and eager tasks",
              what, k);
        free(after[0][k]);
        free(after[1][k]);
    }
    /* two launches in flight (the second's copy-in waits for the first's readers) give the same */
    {
        uint64_t seq = 0;
        void *x;
        for (k = 0; k < n_base; k++) CHECK(gpuos_copy(ctx, base[k], init[k]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, NULL) == GPUOS_OK, "%s: %s", what, gpuos_last_error(ctx));
        for (k = 0; k < n_base; k++) CHECK(gpuos_copy(ctx, base[k], init[k]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, &seq) == GPUOS_OK, "%s: %s", what, gpuos_last_error(ctx));
        CHECK(gpuos_wait_fence(ctx, seq, 60000) == GPUOS_OK, "%s: %s", what, gpuos_last_error(ctx));
        x = grab(base[0], bytes[0]);
        for (k = 0; k < n_base; k++) CHECK(gpuos_copy(ctx, base[k], init[k]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        for (i = 0; i < p->n; i++) CHECK(gpuos_submit(ctx, &p->t[i], NULL) == GPUOS_OK, "%s: %s", what, gpuos_last_error(ctx));
        {
            void *y = grab(base[0], bytes[0]);
            CHECK(memcmp(x, y, bytes[0]) == 0, "%s: a second launch in flight differs", what);
            free(y);
        }
        free(x);
    }
    /* a launch with a binding (an input bound to a copy of itself: planned again, fused the
       same way) gives the same bytes */
    if (bind) {
        uint64_t seq = 0;
        void *x, *y;
        for (k = 0; k < n_base; k++) CHECK(gpuos_copy(ctx, base[k], init[k]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_graph_launch(g, bind, 1, NULL, 0, &seq) == GPUOS_OK, "%s: %s", what, gpuos_last_error(ctx));
        CHECK(gpuos_wait_fence(ctx, seq, 60000) == GPUOS_OK, "%s: %s", what, gpuos_last_error(ctx));
        CHECK(gpuos_debug_graph_tasks(g) == (fuse_expected ? p->expect_tasks : p->n),
              "%s: the bound launch queued %d tasks, expected %d", what, gpuos_debug_graph_tasks(g),
              fuse_expected ? p->expect_tasks : p->n);
        x = grab(base[0], bytes[0]);
        for (k = 0; k < n_base; k++) CHECK(gpuos_copy(ctx, base[k], init[k]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        for (i = 0; i < p->n; i++) CHECK(gpuos_submit(ctx, &p->t[i], NULL) == GPUOS_OK, "%s: %s", what, gpuos_last_error(ctx));
        y = grab(base[0], bytes[0]);
        CHECK(memcmp(x, y, bytes[0]) == 0, "%s: the bound launch differs from eager tasks", what);
        free(x);
        free(y);
    }
    gpuos_graph_release(g);
}

static const gpuos_op BIN[] = {GPUOS_OP_ADD, GPUOS_OP_SUB, GPUOS_OP_MUL, GPUOS_OP_MAXIMUM, GPUOS_OP_MINIMUM};
static const gpuos_op UNF[] = {GPUOS_OP_RELU, GPUOS_OP_GELU, GPUOS_OP_GELU_TANH, GPUOS_OP_SILU, GPUOS_OP_SIGMOID, GPUOS_OP_TANH};

static void random_program(int pi, gpuos_dtype dt) {
    /* (N 512: the GPU's row tiles in 64-column slices, cuda_matmul_rows) */
    static const int64_t Ms[] = {1, 3, 8, 13, 40}, Ks[] = {1, 7, 64, 128, 256}, Ns[] = {1, 5, 8, 64, 256, 300, 512};
    const int64_t M = Ms[rnd(5)], K = Ks[rnd(5)], N = Ns[rnd(7)];
    const int ints = !is_float(dt);
    const int layout = (int)rnd(3); /* h: plain, a column slice of [M, N + 3], a transpose of [N, M] */
    gpuos_tensor *A, *B, *A2 = NULL, *hb, *h = NULL, *y[3], *yb[3], *init[5], *base[5], *s = NULL;
    gpuos_graph_bind bind;
    size_t bytes[5];
    program p;
    int i, k, fused = 1, n_epi = 0, slots = 0, used[3] = {0, 0, 0}, open = 1;
    char what[128];
    memset(&p, 0, sizeof p);
    if (!fresh_begin()) return;
    CHECK(gpuos_tensor_new(ctx, dt, 0, NULL, &s) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    {
        int64_t sa[2] = {M, K}, sb[2] = {K, N};
        A = rand_tensor(dt, 2, sa, ints);
        B = rand_tensor(dt, 2, sb, ints);
        CHECK(gpuos_tensor_new(ctx, dt, 2, sa, &A2) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    }
    if (layout == 1) {
        int64_t sh[2] = {M, N + 3};
        hb = rand_tensor(dt, 2, sh, ints);
        CHECK(gpuos_view_slice(hb, 1, 1, 1 + N, 1, &h) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    } else if (layout == 2) {
        int64_t sh[2] = {N, M};
        hb = rand_tensor(dt, 2, sh, ints);
        CHECK(gpuos_view_transpose(hb, 0, 1, &h) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    } else {
        int64_t sh[2] = {M, N};
        hb = rand_tensor(dt, 2, sh, ints);
        h = whole(hb);
    }
    /* three operands, broadcast to [M, N] in some way each */
    for (k = 0; k < 3; k++) {
        const int form = (int)rnd(6);
        gpuos_tensor *v = NULL;
        if (form == 0) {
            yb[k] = rand_tensor(dt, 0, NULL, ints);
            v = whole(yb[k]);
        } else if (form == 1 || form == 2) { /* [N] or [1, N] */
            int64_t sh[2] = {1, N};
            yb[k] = rand_tensor(dt, form == 1 ? 1 : 2, form == 1 ? sh + 1 : sh, ints);
            v = whole(yb[k]);
        } else if (form == 3) { /* [M, 1] */
            int64_t sh[2] = {M, 1};
            yb[k] = rand_tensor(dt, 2, sh, ints);
            v = whole(yb[k]);
        } else if (form == 4) { /* [M, N] */
            int64_t sh[2] = {M, N};
            yb[k] = rand_tensor(dt, 2, sh, ints);
            v = whole(yb[k]);
        } else { /* the transpose of [N, M] */
            int64_t sh[2] = {N, M};
            yb[k] = rand_tensor(dt, 2, sh, ints);
            CHECK(gpuos_view_transpose(yb[k], 0, 1, &v) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        }
        y[k] = v;
    }
    /* before: maybe a write of operand 0 (the fused task must wait for it) */
    if (rnd(3) == 0) {
        gpuos_task t = GPUOS_TASK_INIT;
        t.op = GPUOS_OP_ADD, t.out = y[0], t.in[0] = y[0], t.in[1] = y[0];
        p.t[p.n++] = t;
    }
    {
        gpuos_task t = GPUOS_TASK_INIT;
        t.op = GPUOS_OP_MATMUL, t.out = h, t.in[0] = A, t.in[1] = B;
        p.t[p.n++] = t;
    }
    {
        const int steps = 1 + (int)rnd(6);
        for (i = 0; i < steps; i++) {
            gpuos_task t = GPUOS_TASK_INIT;
            const int brk = rnd(7) == 0 ? 1 + (int)rnd(4) : 0;
            int ok = 1;
            t.out = h;
            if (brk == 1) { /* a reader of h: not in place */
                t.op = GPUOS_OP_SUM, t.out = s, t.in[0] = h;
                ok = 0;
            } else if (brk == 2) { /* outside the epilogue set */
                t.op = ints ? GPUOS_OP_NEG : GPUOS_OP_EXP, t.in[0] = h;
                ok = 0;
            } else if (brk == 3) { /* h + h */
                t.op = GPUOS_OP_ADD, t.in[0] = h, t.in[1] = h;
                ok = 0;
            } else if (brk == 4) { /* out of place: writes an operand, reads h */
                t.op = GPUOS_OP_ADD, t.out = y[2], t.in[0] = y[2], t.in[1] = y[2];
                ok = 0;
            } else if (ints || rnd(2)) { /* binary, h first or second */
                const int w = (int)rnd(3), sw = (int)rnd(2);
                t.op = BIN[rnd(5)];
                t.in[sw] = h, t.in[1 - sw] = y[w];
                if (!used[w]) {
                    if (slots == 2) ok = 0;
                    else if (open) used[w] = 1, slots++;
                }
            } else {
                t.op = UNF[rnd(6)], t.in[0] = h;
            }
            if (open && ok && n_epi < 4) n_epi++;
            else open = 0;
            p.t[p.n++] = t;
        }
    }
    /* after: maybe an overwrite of operand 0 (the fused task's read comes first) */
    if (rnd(3) == 0) {
        gpuos_task t = GPUOS_TASK_INIT;
        t.op = GPUOS_OP_MUL, t.out = y[0], t.in[0] = y[0], t.in[1] = y[0];
        p.t[p.n++] = t;
    }
    fused = n_epi > 0;
    p.expect_tasks = p.n - n_epi;
    base[0] = hb, base[1] = yb[0], base[2] = yb[1], base[3] = yb[2];
    for (k = 0; k < 4; k++) init[k] = like(base[k], &bytes[k]);
    fill_all(); /* the first tasks */
    CHECK(gpuos_copy(ctx, A2, A) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    bind.recorded = A, bind.actual = A2;
    for (k = 0; k < 4; k++) CHECK(gpuos_copy(ctx, init[k], base[k]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    snprintf(what, sizeof what, "program %d (%s, M %d K %d N %d, layout %d, %d nodes, %d fused)", pi,
             gpuos_dtype_name(dt), (int)M, (int)K, (int)N, layout, p.n, n_epi);
    run_both(what, &p, base, bytes, 4, init, 1, &bind);
    (void)fused;
    gpuos_tensor_release(A);
    gpuos_tensor_release(A2);
    gpuos_tensor_release(B);
    gpuos_tensor_release(h);
    gpuos_tensor_release(s);
    for (k = 0; k < 4; k++) {
        gpuos_tensor_release(base[k]);
        gpuos_tensor_release(init[k]);
    }
    for (k = 0; k < 3; k++) gpuos_tensor_release(y[k]);
    fresh_end();
}

/* The tiny MLP's layers (bench/ tiny_mlp): matmul, + bias, gelu, + x, layernorm, 3 layers;
   fused (2 tasks a layer: the matmul with 3 epilogue operators, the layernorm), launched
   bound to the same x0 and to a copy of it (the bound nodes planned again, fused the same
   way), and eager: all equal bit for bit; with fusion off a launch is every node. With H = 256
   in f32 each layernorm but the last is the next matmul's prologue: NL + 1 tasks. */
/* Would the device's layernorm give a row of n elements, alone in its tile, to its whole block of
   256 threads (gpuos__d_group's cost model, device_ops.cu)? graph.c fuses a layernorm in front of
   a matmul only then (the prologue reduces as that block does). */
static int ln_block(int64_t n) {
    const int64_t n_in = 3 * n, c1 = n_in, c32 = (n_in + 31) / 32 + 8, cb = (n_in + 255) / 256 + 24;
    return !(c1 <= c32 && c1 <= cb) && cb < c32;
}

static void mlp(gpuos_dtype dt, int H) {
    enum { B = 8, NL = 3 };
    /* f32 with rows the block reduces: each layernorm is the next matmul's prologue */
    const int expect = dt == GPUOS_F32 && ln_block(H) && H <= 512 ? NL + 1 : 2 * NL;
    gpuos_tensor *x[NL + 1], *h[NL], *w[NL], *bias[NL], *x0b;
    gpuos_graph *g, *g0;
    int64_t sx[2] = {B, H}, sw[2] = {H, H}, sb[1] = {H};
    size_t bytes;
    void *r[4];
    int l, mode;
    if (!fresh_begin()) return;
    for (l = 0; l <= NL; l++) x[l] = rand_tensor(dt, 2, sx, 0);
    for (l = 0; l < NL; l++) h[l] = rand_tensor(dt, 2, sx, 0), w[l] = rand_tensor(dt, 2, sw, 0), bias[l] = rand_tensor(dt, 1, sb, 0);
    x0b = rand_tensor(dt, 2, sx, 0);
    bytes = (size_t)B * H * gpuos_dtype_size(dt);
    fill_all();
    CHECK(gpuos_graph_create(ctx, &g) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (l = 0; l < NL; l++) {
        gpuos_task t = GPUOS_TASK_INIT;
        t.op = GPUOS_OP_MATMUL, t.out = h[l], t.in[0] = x[l], t.in[1] = w[l];
        CHECK(gpuos_graph_add(g, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        t.op = GPUOS_OP_ADD, t.out = h[l], t.in[0] = h[l], t.in[1] = bias[l];
        CHECK(gpuos_graph_add(g, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        t.op = GPUOS_OP_GELU, t.in[1] = NULL;
        CHECK(gpuos_graph_add(g, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        t.op = GPUOS_OP_ADD, t.in[1] = x[l];
        CHECK(gpuos_graph_add(g, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        t.op = GPUOS_OP_LAYERNORM, t.out = x[l + 1], t.in[0] = h[l], t.in[1] = NULL, t.scalar[0] = 1e-5;
        CHECK(gpuos_graph_add(g, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    }
    setenv("GPUOS_GRAPH_FUSE", "0", 1);
    CHECK(gpuos_graph_create(ctx, &g0) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    {
        gpuos_task t = GPUOS_TASK_INIT;
        t.op = GPUOS_OP_MATMUL, t.out = h[0], t.in[0] = x[0], t.in[1] = w[0];
        CHECK(gpuos_graph_add(g0, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        t.op = GPUOS_OP_ADD, t.out = h[0], t.in[0] = h[0], t.in[1] = bias[0];
        CHECK(gpuos_graph_add(g0, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    }
    CHECK(gpuos_graph_launch(g0, NULL, 0, NULL, 0, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_debug_graph_tasks(g0) == 2, "GPUOS_GRAPH_FUSE=0: %d tasks, expected 2", gpuos_debug_graph_tasks(g0));
    unsetenv("GPUOS_GRAPH_FUSE");
    gpuos_graph_release(g0);
    for (mode = 0; mode < 4; mode++) { /* fused, bound to the same tensor (not fused), bound to another x0, eager */
        uint64_t seq = 0;
        gpuos_graph_bind b;
        b.recorded = x[0], b.actual = mode == 2 ? x0b : x[0];
        if (mode == 2) CHECK(gpuos_copy(ctx, x0b, x[0]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        if (mode < 3) {
            CHECK(gpuos_graph_launch(g, mode ? &b : NULL, mode ? 1 : 0, NULL, 0, &seq) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            CHECK(gpuos_debug_graph_tasks(g) == expect, "mlp %s H %d launch %d: %d tasks, expected %d",
                  gpuos_dtype_name(dt), H, mode, gpuos_debug_graph_tasks(g), expect);
        } else {
            for (l = 0; l < NL; l++) {
                CHECK(gpuos_matmul(ctx, h[l], x[l], w[l]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
                CHECK(gpuos_add(ctx, h[l], h[l], bias[l]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
                CHECK(gpuos_gelu(ctx, h[l], h[l]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
                CHECK(gpuos_add(ctx, h[l], h[l], x[l]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
                CHECK(gpuos_layernorm(ctx, x[l + 1], h[l], NULL, NULL, 1e-5) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            }
            seq = gpuos_fence(ctx);
        }
        CHECK(gpuos_wait_fence(ctx, seq, 60000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        r[mode] = grab(x[NL], bytes);
    }
    for (mode = 1; mode < 4; mode++)
        CHECK(memcmp(r[0], r[mode], bytes) == 0, "mlp %s H %d: the fused forward differs from %s", gpuos_dtype_name(dt), H,
              mode == 1 ? "the bound launch" : mode == 2 ? "a launch bound to a copy of x0" : "eager tasks");
    for (mode = 0; mode < 4; mode++) free(r[mode]);
    gpuos_graph_release(g);
    for (l = 0; l <= NL; l++) gpuos_tensor_release(x[l]);
    for (l = 0; l < NL; l++) gpuos_tensor_release(h[l]), gpuos_tensor_release(w[l]), gpuos_tensor_release(bias[l]);
    gpuos_tensor_release(x0b);
    fresh_end();
}

/* A layernorm in front of a matmul that reads its output (graph.c's prologue, f32): x =
   layernorm(hin), h = x @ W, then some of h + bias, gelu(h), h + x (when K == N), maybe a
   reader of x after. Shapes at the rules' edges (M <= 8, N >= 9, rows the block reduces, K <=
   512 and <= 8 ceil(N / 8)); hin a plain tensor, a column slice or a transpose; x plain or a
   column slice; now and then a layernorm weight or one in place (x is hin: never fused).
   The graph queues what the rules give and equals eager tasks bit for bit. */
static int n_pro_fused, n_pro;
static void random_pro(int pi) {
    static const int64_t Ms[] = {1, 3, 8, 8, 9}, Ks[] = {64, 128, 200, 224, 256, 256, 300, 512, 513},
                         Ns[] = {8, 9, 64, 256, 300, 512, 1024};
    const int64_t M = Ms[rnd(5)], K = Ks[rnd(9)];
    const int64_t N = rnd(2) ? K : Ns[rnd(7)];
    const int in_layout = (int)rnd(3), out_layout = (int)rnd(2), weighted = rnd(8) == 0, alias = rnd(8) == 0;
    gpuos_tensor *hb, *hin = NULL, *xb, *x = NULL, *W, *h, *bias, *wt = NULL, *s = NULL, *h2 = NULL, *init[4], *base[4];
    size_t bytes[4];
    program p;
    int k, n_epi = 0, n_base = 3, pro;
    char what[160];
    memset(&p, 0, sizeof p);
    if (!fresh_begin()) return;
    if (in_layout == 1) {
        int64_t sh[2] = {M, K + 5};
        hb = rand_tensor(GPUOS_F32, 2, sh, 0);
        CHECK(gpuos_view_slice(hb, 1, 2, 2 + K, 1, &hin) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    } else if (in_layout == 2) {
        int64_t sh[2] = {K, M};
        hb = rand_tensor(GPUOS_F32, 2, sh, 0);
        CHECK(gpuos_view_transpose(hb, 0, 1, &hin) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    } else {
        int64_t sh[2] = {M, K};
        hb = rand_tensor(GPUOS_F32, 2, sh, 0);
        hin = whole(hb);
    }
    if (alias) { /* in place: x is hin */
        x = whole(hin);
        xb = hb;
    } else if (out_layout == 1) {
        int64_t sh[2] = {M, K + 3};
        xb = rand_tensor(GPUOS_F32, 2, sh, 0);
        CHECK(gpuos_view_slice(xb, 1, 1, 1 + K, 1, &x) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    } else {
        int64_t sh[2] = {M, K};
        xb = rand_tensor(GPUOS_F32, 2, sh, 0);
        x = whole(xb);
    }
    {
        int64_t sw[2] = {K, N}, sh[2] = {M, N}, sb[1] = {N}, sk[1] = {K};
        W = rand_tensor(GPUOS_F32, 2, sw, 0);
        h = rand_tensor(GPUOS_F32, 2, sh, 0);
        bias = rand_tensor(GPUOS_F32, 1, sb, 0);
        if (weighted) wt = rand_tensor(GPUOS_F32, 1, sk, 0);
    }
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 0, NULL, &s) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    {
        gpuos_task t = GPUOS_TASK_INIT;
        t.op = GPUOS_OP_LAYERNORM, t.out = x, t.in[0] = hin, t.in[1] = wt, t.scalar[0] = 1e-5;
        p.t[p.n++] = t;
        t = (gpuos_task)GPUOS_TASK_INIT;
        t.op = GPUOS_OP_MATMUL, t.out = h, t.in[0] = x, t.in[1] = W;
        p.t[p.n++] = t;
    }
    if (rnd(2)) {
        gpuos_task t = GPUOS_TASK_INIT;
        t.op = GPUOS_OP_ADD, t.out = h, t.in[0] = h, t.in[1] = bias;
        p.t[p.n++] = t, n_epi++;
    }
    if (rnd(2)) {
        gpuos_task t = GPUOS_TASK_INIT;
        t.op = GPUOS_OP_GELU, t.out = h, t.in[0] = h;
        p.t[p.n++] = t, n_epi++;
    }
    if (K == N && rnd(3)) { /* the residual: reads back the prologue's output */
        gpuos_task t = GPUOS_TASK_INIT;
        t.op = GPUOS_OP_ADD, t.out = h, t.in[0] = x, t.in[1] = h;
        p.t[p.n++] = t, n_epi++;
    }
    if (rnd(3) == 0) { /* a reader of x after the fused task */
        gpuos_task t = GPUOS_TASK_INIT;
        t.op = GPUOS_OP_SUM, t.out = s, t.in[0] = x;
        p.t[p.n++] = t;
    }
    pro = !weighted && !alias && M <= 8 && N >= 9 && K <= 512 && K <= 8 * ((N + 7) / 8) && ln_block(K);
    n_pro++, n_pro_fused += pro;
    p.expect_tasks = p.n - n_epi - pro;
    base[0] = xb, base[1] = h, base[2] = s;
    for (k = 0; k < n_base; k++) init[k] = like(base[k], &bytes[k]);
    if (in_layout == 0 && !alias) { /* the copy of hin bound below, allocated before the first task */
        int64_t sh2[2] = {M, K};
        CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 2, sh2, &h2) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    }
    fill_all();
    for (k = 0; k < n_base; k++) CHECK(gpuos_copy(ctx, init[k], base[k]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    snprintf(what, sizeof what, "prologue program %d (M %d K %d N %d, in %d out %d%s%s, %d nodes, %d epilogue, %s)", pi,
             (int)M, (int)K, (int)N, in_layout, out_layout, weighted ? ", weight" : "", alias ? ", in place" : "",
             p.n, n_epi, pro ? "prologue" : "no prologue");
    if (h2) { /* also launched with hin bound to a copy of it (fused as bound) */
        gpuos_graph_bind bind;
        CHECK(gpuos_copy(ctx, h2, hin) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        bind.recorded = hin, bind.actual = h2;
        run_both(what, &p, base, bytes, n_base, init, 1, &bind);
        gpuos_tensor_release(h2);
    } else {
        run_both(what, &p, base, bytes, n_base, init, 1, NULL);
    }
    if (!alias) gpuos_tensor_release(hb); /* else it is base[0] */
    gpuos_tensor_release(hin);
    gpuos_tensor_release(x);
    gpuos_tensor_release(W);
    gpuos_tensor_release(bias);
    if (wt) gpuos_tensor_release(wt);
    for (k = 0; k < n_base; k++) {
        gpuos_tensor_release(base[k]);
        gpuos_tensor_release(init[k]);
    }
    fresh_end();
}

/* The prologue's operand limits and writes (review findings):
   1. W and the bias are views of one storage, the residual r another: the fused task would
      have 6 operand views (h, hin, W, x, b, r), one more than the device's dependency scan
      lists, so the residual add is not fused (r is written just before: the fused task must
      not read it early);
   2. a high-priority max(x) submitted behind a launch whose fused task writes x (queued
      while the executor is paused) reads the new x: the queue sees the prologue's write. */
static void pro_limits(void) {
    enum { M = 8, K = 256 };
    gpuos_tensor *P, *W = NULL, *b = NULL, *hin, *x, *h, *r, *s, *s2, *init[4], *base[4];
    size_t bytes[4];
    program p;
    int k;
    if (!fresh_begin()) return;
    memset(&p, 0, sizeof p);
    {
        int64_t sp[2] = {K + 1, K}, sx[2] = {M, K};
        P = rand_tensor(GPUOS_F32, 2, sp, 0);
        hin = rand_tensor(GPUOS_F32, 2, sx, 0);
        x = rand_tensor(GPUOS_F32, 2, sx, 0);
        h = rand_tensor(GPUOS_F32, 2, sx, 0);
        r = rand_tensor(GPUOS_F32, 2, sx, 0);
    }
    CHECK(gpuos_view_slice(P, 0, 0, K, 1, &W) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_view_slice(P, 0, K, K + 1, 1, &b) == GPUOS_OK, "%s", gpuos_last_error(ctx)); /* [1, K] */
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 0, NULL, &s) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 0, NULL, &s2) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    base[0] = x, base[1] = h, base[2] = r, base[3] = P;
    for (k = 0; k < 4; k++) init[k] = like(base[k], &bytes[k]); /* before the first task (memcheck) */
    fill_all();
    {
        gpuos_task t = GPUOS_TASK_INIT;
        t.op = GPUOS_OP_ADD, t.out = r, t.in[0] = r, t.in[1] = r;
        p.t[p.n++] = t;
        t.op = GPUOS_OP_LAYERNORM, t.out = x, t.in[0] = hin, t.in[1] = NULL, t.scalar[0] = 1e-5;
        p.t[p.n++] = t;
        t = (gpuos_task)GPUOS_TASK_INIT;
        t.op = GPUOS_OP_MATMUL, t.out = h, t.in[0] = x, t.in[1] = W;
        p.t[p.n++] = t;
        t.op = GPUOS_OP_ADD, t.out = h, t.in[0] = h, t.in[1] = b;
        p.t[p.n++] = t;
        t.op = GPUOS_OP_ADD, t.out = h, t.in[0] = h, t.in[1] = r;
        p.t[p.n++] = t;
    }
    p.expect_tasks = 3; /* r + r; layernorm + matmul + bias; + r */
    for (k = 0; k < 4; k++) CHECK(gpuos_copy(ctx, init[k], base[k]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    run_both("prologue with a sixth operand view", &p, base, bytes, 4, init, 1, NULL);
    { /* 2: the fused task (nodes 1-3) writes x; a high-priority reader of x behind it */
        gpuos_graph *g;
        gpuos_task t = GPUOS_TASK_INIT;
        float a = 0, e = 0;
        CHECK(gpuos_graph_create(ctx, &g) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        for (k = 1; k < 4; k++) CHECK(gpuos_graph_add(g, &p.t[k], NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_fill(ctx, x, 0.0) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_wait(ctx, 60000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        gpuos_debug_pause(ctx, 1);
        CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_debug_graph_tasks(g) == 1, "the layernorm, matmul and bias: %d tasks, expected 1",
              gpuos_debug_graph_tasks(g));
        t.op = GPUOS_OP_MAX, t.out = s, t.in[0] = x, t.priority = GPUOS_PRIORITY_HIGH; /* > 0 once normalised */
        CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        gpuos_debug_pause(ctx, 0);
        CHECK(gpuos_wait(ctx, 60000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        t.priority = GPUOS_PRIORITY_NORMAL, t.out = s2; /* the same max, after everything */
        CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_download(ctx, s, &a, sizeof a) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_download(ctx, s2, &e, sizeof e) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(a == e && e > 0, "a high-priority max(x) behind the fused task read %g, expected %g (the new x)", a, e);
        gpuos_graph_release(g);
    }
    gpuos_tensor_release(W);
    gpuos_tensor_release(b);
    gpuos_tensor_release(hin);
    gpuos_tensor_release(s);
    gpuos_tensor_release(s2);
    for (k = 0; k < 4; k++) {
        gpuos_tensor_release(base[k]);
        gpuos_tensor_release(init[k]);
    }
    fresh_end();
}

/* Chains of row-wise tasks (layernorm, softmax, rmsnorm) and layers (layernorm, matmul by W,
   + bias, gelu, + the layernorm's output) on views of [R, n] tensors (plain, or rows of a wider
   tensor), mixed with element-wise tasks and row sums, eagerly and as recorded graphs launched
   twice (the layers fused: a prologue and an epilogue, run on the GPU as row tiles where n is
   128 and as lean narrow blocks, gpuos__d_mm_lean, where it is 256). On the GPU a row-wise task of one row a tile, or a row tile, is tile-aligned
   with the last writer of its rows (cuda_align_sigs) and waits for nothing; the same program
   on a context whose every task waits for all earlier ones (GPUOS_CUDA_SERIALIZE=1: the same
   device code and tiling) must give the same bytes, and so must one without row tiles
   (GPUOS_CUDA_MM_ROWS=0: narrow blocks, summed in the same order; at n = 256 the lean ones,
   as the default) and one with row tiles even where the default runs the lean narrow block
   (GPUOS_CUDA_MM_ROWS=2: n = 256, where lean blocks are checked against row tiles; the lean
   block against the general narrow one: `devbench mmlean`, on the same plans byte for
   byte). On the host executor the contexts run the same code (the checks
   then hold trivially). */
static void row_chains(void) {
    static const int64_t Rs[] = {1, 3, 8, 8, 40}, Ns[] = {64, 128, 256, 256, 1000};
    enum { NC = 4 };
    static const char *const envs[NC] = {NULL, "GPUOS_CUDA_SERIALIZE", "GPUOS_CUDA_MM_ROWS", "GPUOS_CUDA_MM_ROWS"};
    static const char *const vals[NC] = {NULL, "1", "0", "2"};
    const int programs = getenv("GPUOS_TEST_QUICK") ? 8 : 24;
    int prog, c, i, n_graphs = 0, n_fused = 0;
    for (prog = 0; prog < programs; prog++) {
        /* NC fresh contexts per program, every tensor made before the first task (memcheck
           cannot see memory allocated while the kernel runs) */
        gpuos_context *cx[NC] = {NULL, NULL, NULL, NULL};
        const int64_t R = Rs[rnd(5)], n = Ns[rnd(5)], wide = rnd(3) == 0, nn = R * n;
        const int as_graph = prog % 2 == 1, layers_only = prog % 4 == 3;
        const int steps = layers_only ? 2 + (int)rnd(4) : 6 + (int)rnd(10);
        uint32_t ops[16], from[16], to[16];
        float *in = (float *)malloc((size_t)nn * 3 * sizeof(float)), *out[NC][3];
        int ok = 1;
        for (c = 0; c < NC; c++) {
            const char *old = c ? getenv(envs[c]) : NULL;
            if (c) setenv(envs[c], vals[c], 1);
            if (gpuos_create(&cfg, &cx[c]) != GPUOS_OK) CHECK(0, "gpuos_create: %s", gpuos_last_error(NULL));
            if (c && old) setenv(envs[c], old, 1);
            else if (c) unsetenv(envs[c]);
            ok &= cx[c] != NULL;
        }
        for (i = 0; i < nn * 3; i++) in[i] = (float)((double)rnd(2001) / 1000.0 - 1.0);
        for (i = 0; i < steps; i++) {
            ops[i] = layers_only ? 6 : rnd(7), from[i] = rnd(3), to[i] = rnd(3);
            if (ops[i] == 6 && to[i] == from[i]) to[i] = (from[i] + 1) % 3; /* a layer: a, x, h distinct */
            if (layers_only && i > 0) /* an MLP: this layer reads the last one's h */
                from[i] = 3 - from[i - 1] - to[i - 1], to[i] = from[i - 1];
        }
        for (c = 0; c < NC && ok; c++) {
            gpuos_context *x = cx[c];
            gpuos_tensor *t[3] = {NULL, NULL, NULL}, *tb[3] = {NULL, NULL, NULL}, *w = NULL, *b = NULL, *v = NULL;
            gpuos_tensor *hc[3] = {NULL, NULL, NULL}; /* contiguous copies in and out */
            gpuos_graph *g = NULL;
            int64_t sh[2] = {R, wide ? n + 4 : n}, sc[2] = {R, n}, sw[2] = {n, n};
            uint64_t seq;
            for (i = 0; i < 3; i++) { /* t[i]: [R, n], or columns 2 .. n + 2 of [R, n + 4] */
                CHECK(gpuos_tensor_new(x, GPUOS_F32, 2, sh, &tb[i]) == GPUOS_OK, "%s", gpuos_last_error(x));
                CHECK(gpuos_tensor_new(x, GPUOS_F32, 2, sc, &hc[i]) == GPUOS_OK, "%s", gpuos_last_error(x));
                if (wide) CHECK(gpuos_view_slice(tb[i], 1, 2, 2 + n, 1, &t[i]) == GPUOS_OK, "%s", gpuos_last_error(x));
                else t[i] = tb[i];
            }
            CHECK(gpuos_tensor_new(x, GPUOS_F32, 2, sw, &w) == GPUOS_OK, "%s", gpuos_last_error(x));
            CHECK(gpuos_tensor_new(x, GPUOS_F32, 1, &n, &b) == GPUOS_OK, "%s", gpuos_last_error(x));
            CHECK(gpuos_tensor_new(x, GPUOS_F32, 1, &R, &v) == GPUOS_OK, "%s", gpuos_last_error(x));
            for (i = 0; i < 3; i++) { /* the view's values from in, through its contiguous copy */
                CHECK(gpuos_fill(x, tb[i], 0.25) == GPUOS_OK, "%s", gpuos_last_error(x));
                CHECK(gpuos_upload(x, hc[i], in + i * nn, (size_t)nn * sizeof(float)) == GPUOS_OK, "%s",
                      gpuos_last_error(x));
                CHECK(gpuos_copy(x, t[i], hc[i]) == GPUOS_OK, "%s", gpuos_last_error(x));
            }
            CHECK(gpuos_fill(x, w, 1.0 / (double)n) == GPUOS_OK, "%s", gpuos_last_error(x));
            CHECK(gpuos_fill(x, b, 0.125) == GPUOS_OK, "%s", gpuos_last_error(x));
            if (as_graph) CHECK(gpuos_graph_create(x, &g) == GPUOS_OK, "%s", gpuos_last_error(x));
            int nodes = 0;
            for (i = 0; i < steps; i++) {
                gpuos_task k[5];
                int nk = 1, q;
                gpuos_tensor *a = t[from[i]], *o = t[to[i]];
                for (q = 0; q < 5; q++) k[q] = (gpuos_task)GPUOS_TASK_INIT;
                switch (ops[i]) {
                case 0: k[0].op = GPUOS_OP_LAYERNORM, k[0].out = o, k[0].in[0] = a, k[0].scalar[0] = 1e-5; break;
                case 1: k[0].op = GPUOS_OP_SOFTMAX, k[0].out = o, k[0].in[0] = a; break;
                case 2: k[0].op = GPUOS_OP_RMSNORM, k[0].out = o, k[0].in[0] = a, k[0].scalar[0] = 1e-5; break;
                case 3: k[0].op = GPUOS_OP_ADD, k[0].out = o, k[0].in[0] = o, k[0].in[1] = a; break;
                case 4: k[0].op = GPUOS_OP_MUL, k[0].out = a, k[0].in[0] = a, k[0].in[1] = a; break;
                case 5: k[0].op = GPUOS_OP_SUM, k[0].out = v, k[0].in[0] = a, k[0].axes = 2; break;
                default: { /* a layer: x = layernorm(a), h = x @ W + bias, gelu, + x (h the third tensor) */
                    gpuos_tensor *h = t[3 - from[i] - to[i]];
                    nk = 5;
                    k[0].op = GPUOS_OP_LAYERNORM, k[0].out = o, k[0].in[0] = a, k[0].scalar[0] = 1e-5;
                    k[1].op = GPUOS_OP_MATMUL, k[1].out = h, k[1].in[0] = o, k[1].in[1] = w;
                    k[2].op = GPUOS_OP_ADD, k[2].out = h, k[2].in[0] = h, k[2].in[1] = b;
                    k[3].op = GPUOS_OP_GELU, k[3].out = h, k[3].in[0] = h;
                    k[4].op = GPUOS_OP_ADD, k[4].out = h, k[4].in[0] = h, k[4].in[1] = o;
                    break;
                }
                }
                for (q = 0; q < nk; q++, nodes++) {
                    if (g) CHECK(gpuos_graph_add(g, &k[q], NULL) == GPUOS_OK, "%s", gpuos_last_error(x));
                    else CHECK(gpuos_submit(x, &k[q], NULL) == GPUOS_OK, "%s", gpuos_last_error(x));
                }
            }
            if (g && c == 0) { /* how many launched tasks (fused layers: fewer than nodes) */
                n_graphs++;
                n_fused += gpuos_debug_graph_tasks(g) < nodes;
            }
            if (g) {
                CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, &seq) == GPUOS_OK, "%s", gpuos_last_error(x));
                CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, &seq) == GPUOS_OK, "%s", gpuos_last_error(x));
            }
            for (i = 0; i < 3; i++) {
                out[c][i] = (float *)malloc((size_t)nn * sizeof(float));
                CHECK(gpuos_copy(x, hc[i], t[i]) == GPUOS_OK, "%s", gpuos_last_error(x));
                CHECK(gpuos_download(x, hc[i], out[c][i], (size_t)nn * sizeof(float)) == GPUOS_OK, "%s",
                      gpuos_last_error(x));
            }
            if (g) gpuos_graph_release(g);
            for (i = 0; i < 3; i++) {
                if (wide) gpuos_tensor_release(t[i]);
                gpuos_tensor_release(tb[i]);
                gpuos_tensor_release(hc[i]);
            }
            gpuos_tensor_release(w);
            gpuos_tensor_release(b);
            gpuos_tensor_release(v);
        }
        for (i = 0; i < 3 && ok; i++) {
            for (c = 1; c < NC; c++)
                CHECK(memcmp(out[0][i], out[c][i], (size_t)nn * sizeof(float)) == 0,
                      "row chain %d (R %lld, n %lld%s, %d steps%s): tensor %d differs from the context with %s=%s", prog,
                      (long long)R, (long long)n, wide ? " in a wider tensor" : "", steps,
                      as_graph ? ", a graph launched twice" : "", i, envs[c], vals[c]);
            for (c = 0; c < NC; c++) free(out[c][i]);
        }
        free(in);
        for (c = 0; c < NC; c++)
            if (cx[c]) gpuos_destroy(cx[c]);
    }
    printf("test_fuse: %d of %d row-chain graphs fused layers\n", n_fused, n_graphs);
    CHECK(n_fused > 0 || getenv("GPUOS_TEST_QUICK"), "no row-chain graph fused a layer");
}

/* Matmuls that cannot lead a fused task: batch axes, a 1-D output; and an epilogue that
   would need a third tensor operand. Each launch queues what the rules give and equals eager
   tasks bit for bit. */
static void refused(void) {
    static const struct {
        int ra, rb;
        int64_t sa[3], sb[3];
        int extra; /* 1: the 3-operand case */
    } cases[] = {
        {3, 2, {2, 5, 7}, {7, 9}, 0}, /* batched: [2, 5, 9] */
        {2, 1, {5, 7}, {7}, 0},       /* matrix @ vector: [5] */
        {1, 2, {7}, {7, 9}, 0},       /* vector @ matrix: [9] */
        {2, 2, {5, 7}, {7, 9}, 1},    /* fuses 2 of 3 adds: a third distinct operand */
    };
    int c, k;
    for (c = 0; c < 4; c++) {
        gpuos_tensor *A, *Bm, *h, *y[3], *init[4], *base[4];
        int64_t so[3];
        int ro = 0;
        size_t bytes[4];
        program p;
        char what[64];
        if (!fresh_begin()) return;
        memset(&p, 0, sizeof p);
        A = rand_tensor(GPUOS_F32, cases[c].ra, cases[c].sa, 0);
        Bm = rand_tensor(GPUOS_F32, cases[c].rb, cases[c].sb, 0);
        if (cases[c].ra == 3) so[ro++] = cases[c].sa[0];
        if (cases[c].ra >= 2) so[ro++] = cases[c].sa[cases[c].ra - 2];
        if (cases[c].rb == 2) so[ro++] = cases[c].sb[1];
        h = rand_tensor(GPUOS_F32, ro, so, 0);
        for (k = 0; k < 3; k++) y[k] = rand_tensor(GPUOS_F32, ro, so, 0);
        base[0] = h, base[1] = y[0], base[2] = y[1], base[3] = y[2];
        for (k = 0; k < 4; k++) init[k] = like(base[k], &bytes[k]);
        fill_all();
        for (k = 0; k < 4; k++) CHECK(gpuos_copy(ctx, init[k], base[k]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        {
            gpuos_task t = GPUOS_TASK_INIT;
            t.op = GPUOS_OP_MATMUL, t.out = h, t.in[0] = A, t.in[1] = Bm;
            p.t[p.n++] = t;
        }
        for (k = 0; k < 3; k++) {
            gpuos_task t = GPUOS_TASK_INIT;
            t.op = GPUOS_OP_ADD, t.out = h, t.in[0] = h, t.in[1] = y[k];
            p.t[p.n++] = t;
        }
        p.expect_tasks = cases[c].extra ? 2 : p.n; /* matmul + 2 adds, then the third add */
        snprintf(what, sizeof what, "refused case %d", c);
        run_both(what, &p, base, bytes, 4, init, 1, NULL);
        gpuos_tensor_release(A);
        gpuos_tensor_release(Bm);
        for (k = 0; k < 4; k++) {
            gpuos_tensor_release(base[k]);
            gpuos_tensor_release(init[k]);
        }
        fresh_end();
    }
}

int main(void) {
    static const gpuos_config init = GPUOS_CONFIG_INIT;
    static const gpuos_dtype dts[] = {GPUOS_F32, GPUOS_F16, GPUOS_BF16, GPUOS_F64, GPUOS_I32, GPUOS_I64, GPUOS_I16,
                                      GPUOS_I8,  GPUOS_U8};
    const int programs = getenv("GPUOS_TEST_QUICK") ? 18 : 90;
    int pi;
    cfg = init;
    cfg.device = ctest_device();
    cfg.wait_timeout_ms = 60000;
    if (!fresh_begin()) return ctest_summary("test_fuse");
    rng = ctest_rng(ctest_seed("test_fuse"), rng);
    for (pi = 0; pi < programs; pi++) random_program(pi, dts[pi % 9]);
    refused();
    pro_limits();
    for (pi = 0; pi < programs; pi++) random_pro(pi);
    row_chains();
    printf("test_fuse: %d of %d layernorm + matmul programs fused as a prologue\n", n_pro_fused, n_pro);
    mlp(GPUOS_F32, 64);
    mlp(GPUOS_F32, 128);
    mlp(GPUOS_F32, 256);
    mlp(GPUOS_F16, 64);
    mlp(GPUOS_F16, 256);
    mlp(GPUOS_BF16, 64);
    CHECK(gpuos_debug_graph_tasks(NULL) == -1, "NULL graph");
    if (ctx) gpuos_destroy(ctx);
    return ctest_summary("test_fuse");
}
