/* test_runs.c - runs of identical in-place element-wise tasks ($GPUOS_TEST_DEVICE). On the
   GPU a worker runs such a run as one pass that applies the operator once per task between
   one load and one store (persistent.cuh, GPUOS__PK_RUNS); nothing outside the run may
   see the values it skips. Each random program (runs of 1 to 40 identical tasks of one of
   eight in-place forms, in four dtypes, sizes with and without tails, contiguous, strided
   and in two halves of one allocation, broken by readers on the same tiles, by reductions
   on other tiles and by writes to the other operand) runs three ways on the context: one
   task at a time (a wait after each: every batch holds one task, nothing is fused),
   submitted back to back, and as a recorded graph. The three must agree bit for bit, and
   with the host executor (integers exactly, floats within 1e-4 relative, 16-bit floats
   within 2e-2; a float sum is summed in another order there). Every reader's output is checked too, so a skipped value that someone did
   read would show. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctest.h"
#include "gpuos.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)((rng >> 16) % n);
}

/* the tensors of a program, on one context */
enum { T_X, T_Y, T_M, T_S, T_R0, T_R1, T_R2, T_R3, T_SUM, T_N }; /* x, other operand, bool mask, 0-d scalar, readers, a sum */
enum { NREAD = 4 };
typedef struct ptensors {
    gpuos_tensor *t[T_N];
    gpuos_tensor *base; /* the allocation of x (and y for the halves layout) */
    gpuos_tensor *xc;   /* $GPUOS_TEST_FRESH, strided x: its contiguous copy for the download */
} ptensors;
/* $GPUOS_TEST_FRESH (for memcheck, which cannot see memory allocated while a kernel runs):
   every tensor allocated before the program's first task, the contiguous copy of a strided x
   too (gpuos_download would allocate one above its 64 KB staging, while the kernel runs:
   memcheck reported the copy task's writes to it as out of bounds, seed 861645376) */
static int fresh;

/* one step: the form (0..7 in place on x, 8 reader, 9 sum, 10 write y) */
typedef struct step {
    int form, reader;
} step;

enum { LAYOUT_CONTIG, LAYOUT_STRIDED, LAYOUT_HALVES };

static gpuos_status make_tensors(gpuos_context *ctx, gpuos_dtype dt, int64_t n, int layout, ptensors *p) {
    gpuos_status st;
    int64_t n2 = 2 * n, one = 1;
    memset(p, 0, sizeof *p);
    if (layout == LAYOUT_CONTIG) {
        if ((st = gpuos_tensor_new(ctx, dt, 1, &n, &p->t[T_X])) != GPUOS_OK) return st;
        if ((st = gpuos_tensor_new(ctx, dt, 1, &n, &p->t[T_Y])) != GPUOS_OK) return st;
    } else if (layout == LAYOUT_STRIDED) { /* x = base[::2]: no vector mode */
        if ((st = gpuos_tensor_new(ctx, dt, 1, &n2, &p->base)) != GPUOS_OK) return st;
        if ((st = gpuos_view_slice(p->base, 0, 0, n2, 2, &p->t[T_X])) != GPUOS_OK) return st;
        if ((st = gpuos_tensor_new(ctx, dt, 1, &n, &p->t[T_Y])) != GPUOS_OK) return st;
        if (fresh && (st = gpuos_tensor_new(ctx, dt, 1, &n, &p->xc)) != GPUOS_OK) return st;
    } else { /* x and y: the two halves of one allocation */
        if ((st = gpuos_tensor_new(ctx, dt, 1, &n2, &p->base)) != GPUOS_OK) return st;
        if ((st = gpuos_view_slice(p->base, 0, 0, n, 1, &p->t[T_X])) != GPUOS_OK) return st;
        if ((st = gpuos_view_slice(p->base, 0, n, n2, 1, &p->t[T_Y])) != GPUOS_OK) return st;
    }
    if ((st = gpuos_tensor_new(ctx, GPUOS_BOOL, 1, &n, &p->t[T_M])) != GPUOS_OK) return st;
    if ((st = gpuos_tensor_new(ctx, dt, 0, &one, &p->t[T_S])) != GPUOS_OK) return st;
    for (int k = 0; k < NREAD; k++)
        if ((st = gpuos_tensor_new(ctx, dt, 1, &n, &p->t[T_R0 + k])) != GPUOS_OK) return st;
    return gpuos_tensor_new(ctx, dt, 0, &one, &p->t[T_SUM]);
}

static void release_tensors(ptensors *p) {
    for (int k = 0; k < T_N; k++) gpuos_tensor_release(p->t[k]);
    gpuos_tensor_release(p->base);
    gpuos_tensor_release(p->xc);
}

/* the task of step s */
static gpuos_task task_of(const ptensors *p, const step *s) {
    gpuos_task t = GPUOS_TASK_INIT;
    gpuos_tensor *x = p->t[T_X], *y = p->t[T_Y], *sc = p->t[T_S], *m = p->t[T_M];
    t.out = x;
    switch (s->form) {
    case 0: t.op = GPUOS_OP_ADD, t.in[0] = x, t.in[1] = sc; break;      /* x = x + s */
    case 1: t.op = GPUOS_OP_MUL, t.in[0] = x, t.in[1] = y; break;       /* x = x * y */
    case 2: t.op = GPUOS_OP_ADD, t.in[0] = x, t.in[1] = x; break;       /* x = x + x */
    case 3: t.op = GPUOS_OP_SUB, t.in[0] = y, t.in[1] = x; break;       /* x = y - x */
    case 4: t.op = GPUOS_OP_FMA, t.in[0] = x, t.in[1] = sc, t.in[2] = y; break; /* x = x * s + y */
    case 5: t.op = GPUOS_OP_FMA, t.in[0] = sc, t.in[1] = y, t.in[2] = x; break; /* x = s * y + x */
    case 6: t.op = GPUOS_OP_WHERE, t.in[0] = m, t.in[1] = y, t.in[2] = x; break; /* x = m ? y : x */
    case 7: t.op = GPUOS_OP_MAXIMUM, t.in[0] = x, t.in[1] = y; break;   /* x = max(x, y) */
    case 8: t.op = GPUOS_OP_MUL, t.out = p->t[T_R0 + s->reader], t.in[0] = x, t.in[1] = sc; break; /* reader, same tiles */
    case 9: t.op = GPUOS_OP_SUM, t.out = p->t[T_SUM], t.in[0] = x, t.axes = GPUOS_AXES_ALL; break; /* other tiles */
    default: t.op = GPUOS_OP_SUB, t.out = y, t.in[0] = y, t.in[1] = sc; break; /* y = y - s: x's operand changes */
    }
    return t;
}

/* inputs: x, y in [-2, 2) (16-bit floats: small integers, so that sums stay exact
   enough), mask random, s 1 (integers) or 0.75 */
static void make_inputs(gpuos_dtype dt, int64_t n, double *hx, double *hy, uint8_t *hm, double *hs) {
    for (int64_t i = 0; i < n; i++) {
        if (dt == GPUOS_I32) {
            hx[i] = (double)((int)rnd(2001) - 1000);
            hy[i] = (double)((int)rnd(7) - 3);
        } else if (dt == GPUOS_F16 || dt == GPUOS_BF16) {
            hx[i] = (double)((int)rnd(9) - 4) * 0.25;
            hy[i] = (double)((int)rnd(5) - 2) * 0.5;
        } else {
            hx[i] = (double)rnd(1u << 20) / (1 << 19) - 1.0;
            hy[i] = (double)rnd(1u << 20) / (1 << 19) - 1.0;
        }
        hm[i] = (uint8_t)(rnd(3) == 0);
    }
    *hs = dt == GPUOS_I32 ? 1.0 : 0.75;
}

/* value -> dt's bytes (f16/bf16 by the library: a cast task would be circular; here by hand) */
static uint16_t to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sgn = (x >> 16) & 0x8000u, e = (x >> 23) & 0xffu, m = x & 0x7fffffu;
    if (e == 0 && m == 0) return (uint16_t)sgn;
    /* the inputs are small multiples of 0.25: normal, exact */
    return (uint16_t)(sgn | ((e - 112) << 10) | (m >> 13));
}
static void to_bytes(gpuos_dtype dt, const double *v, int64_t n, void *out) {
    for (int64_t i = 0; i < n; i++) {
        if (dt == GPUOS_F32) ((float *)out)[i] = (float)v[i];
        else if (dt == GPUOS_I32) ((int32_t *)out)[i] = (int32_t)v[i];
        else if (dt == GPUOS_F16) ((uint16_t *)out)[i] = to_f16((float)v[i]);
        else {
            float f = (float)v[i];
            uint32_t x;
            memcpy(&x, &f, 4);
            ((uint16_t *)out)[i] = (uint16_t)(x >> 16); /* exact for these inputs */
        }
    }
}

static gpuos_status upload_all(gpuos_context *ctx, const ptensors *p, gpuos_dtype dt, int64_t n, const double *hx,
                               const double *hy, const uint8_t *hm, double hs, int layout) {
    size_t es = gpuos_dtype_size(dt);
    char *b = (char *)malloc((size_t)(2 * n + 1) * es);
    gpuos_status st = GPUOS_ERR_OUT_OF_MEMORY;
    if (!b) return st;
    if (layout == LAYOUT_CONTIG) {
        to_bytes(dt, hx, n, b);
        if ((st = gpuos_upload(ctx, p->t[T_X], b, (size_t)n * es)) != GPUOS_OK) goto out;
        to_bytes(dt, hy, n, b);
        if ((st = gpuos_upload(ctx, p->t[T_Y], b, (size_t)n * es)) != GPUOS_OK) goto out;
    } else {
        double *v = (double *)malloc((size_t)(2 * n + 1) * sizeof(double));
        if (!v) goto out;
        for (int64_t i = 0; i < n; i++) {
            if (layout == LAYOUT_STRIDED) v[2 * i] = hx[i], v[2 * i + 1] = 0;
            else v[i] = hx[i], v[n + i] = hy[i];
        }
        to_bytes(dt, v, 2 * n, b);
        free(v);
        if ((st = gpuos_upload(ctx, p->base, b, (size_t)(2 * n) * es)) != GPUOS_OK) goto out;
        if (layout == LAYOUT_STRIDED) {
            to_bytes(dt, hy, n, b);
            if ((st = gpuos_upload(ctx, p->t[T_Y], b, (size_t)n * es)) != GPUOS_OK) goto out;
        }
    }
    if ((st = gpuos_upload(ctx, p->t[T_M], hm, (size_t)n)) != GPUOS_OK) goto out;
    to_bytes(dt, &hs, 1, b);
    st = gpuos_upload(ctx, p->t[T_S], b, es);
out:
    free(b);
    return st;
}

/* what a program leaves: x, y, the readers' outputs, the sum (bytes) */
typedef struct result {
    char *bytes;
    size_t len;
} result;

static gpuos_status download_all(gpuos_context *ctx, const ptensors *p, gpuos_dtype dt, int64_t n, result *r) {
    size_t es = gpuos_dtype_size(dt), off = 0;
    gpuos_status st;
    const int which[] = {T_X, T_Y, T_R0, T_R1, T_R2, T_R3};
    r->len = (size_t)n * es * 6 + es;
    r->bytes = (char *)calloc(1, r->len ? r->len : 1);
    if (!r->bytes) return GPUOS_ERR_OUT_OF_MEMORY;
    if (p->xc && (st = gpuos_copy(ctx, p->xc, p->t[T_X])) != GPUOS_OK) return st; /* (FRESH: see fresh) */
    for (int k = 0; k < 6; k++, off += (size_t)n * es)
        if ((st = gpuos_download(ctx, k == 0 && p->xc ? p->xc : p->t[which[k]], r->bytes + off, (size_t)n * es)) != GPUOS_OK)
            return st;
    return gpuos_download(ctx, p->t[T_SUM], r->bytes + off, es);
}

enum { MODE_STEPWISE, MODE_BULK, MODE_GRAPH };

static gpuos_status run_program(gpuos_context *ctx, gpuos_dtype dt, int64_t n, int layout, const step *prog, int len,
                                int mode, const double *hx, const double *hy, const uint8_t *hm, double hs, result *r) {
    ptensors p;
    gpuos_status st = make_tensors(ctx, dt, n, layout, &p);
    gpuos_graph *g = NULL;
    if (st == GPUOS_OK) st = upload_all(ctx, &p, dt, n, hx, hy, hm, hs, layout);
    /* the readers' outputs and the sum start at 0 */
    for (int k = 0; k < NREAD && st == GPUOS_OK; k++) {
        gpuos_task f = GPUOS_TASK_INIT;
        f.op = GPUOS_OP_FILL, f.out = p.t[T_R0 + k], f.scalar[0] = 0;
        st = gpuos_submit(ctx, &f, NULL);
    }
    if (st == GPUOS_OK) {
        gpuos_task f = GPUOS_TASK_INIT;
        f.op = GPUOS_OP_FILL, f.out = p.t[T_SUM], f.scalar[0] = 0;
        st = gpuos_submit(ctx, &f, NULL);
    }
    if (st == GPUOS_OK) st = gpuos_wait(ctx, 20000);
    if (st == GPUOS_OK && mode == MODE_GRAPH) st = gpuos_graph_create(ctx, &g);
    for (int i = 0; i < len && st == GPUOS_OK; i++) {
        gpuos_task t = task_of(&p, &prog[i]);
        if (mode == MODE_GRAPH) {
            st = gpuos_graph_add(g, &t, NULL);
        } else {
            st = gpuos_submit(ctx, &t, NULL);
            if (st == GPUOS_OK && mode == MODE_STEPWISE) st = gpuos_wait(ctx, 20000);
        }
    }
    if (st == GPUOS_OK && mode == MODE_GRAPH) st = gpuos_graph_launch(g, NULL, 0, NULL, 0, NULL);
    if (st == GPUOS_OK) st = gpuos_wait(ctx, 20000);
    if (st == GPUOS_OK) st = download_all(ctx, &p, dt, n, r);
    gpuos_graph_release(g);
    release_tensors(&p);
    return st;
}

static double value_at(gpuos_dtype dt, const char *b, size_t i) {
    if (dt == GPUOS_F32) return ((const float *)b)[i];
    if (dt == GPUOS_I32) return ((const int32_t *)b)[i];
    uint16_t h = ((const uint16_t *)b)[i];
    uint32_t x;
    float f;
    if (dt == GPUOS_BF16) {
        x = (uint32_t)h << 16;
    } else {
        uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
        if (e == 0x1f) x = s | 0x7f800000u | (m << 13);
        else if (e == 0) {
            f = (float)m / 16777216.0f;
            return (h & 0x8000u) ? -f : f;
        } else x = s | ((e + 112) << 23) | (m << 13);
    }
    memcpy(&f, &x, 4);
    return f;
}

/* the host executor's result against the context's: integers exact, floats within tol */
static int close_enough(gpuos_dtype dt, const result *a, const result *b, double tol, size_t *where) {
    size_t es = gpuos_dtype_size(dt), cnt = a->len / es;
    if (a->len != b->len) return 0;
    for (size_t i = 0; i < cnt; i++) {
        double x = value_at(dt, a->bytes, i), y = value_at(dt, b->bytes, i);
        if (i == cnt - 1 && dt != GPUOS_I32) continue; /* a float sum: summed in another order (the GPU's modes agree bit for bit) */
        if (dt == GPUOS_I32 ? x != y : !(x == y || fabs(x - y) <= tol * (fabs(x) + fabs(y)) || (x != x && y != y))) {
            *where = i;
            return 0;
        }
    }
    return 1;
}

int main(void) {
    rng = ctest_rng(ctest_seed("test_runs"), rng);
    gpuos_config cfg = GPUOS_CONFIG_INIT, hcfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx, *host;
    static const gpuos_dtype dts[] = {GPUOS_F32, GPUOS_I32, GPUOS_F16, GPUOS_BF16};
    static const int64_t sizes[] = {1, 5, 1000, 1024, 4096, 4100, 70000};
    const int programs = getenv("GPUOS_TEST_QUICK") ? 4 : 48;
    fresh = getenv("GPUOS_TEST_FRESH") != NULL;
    cfg.device = ctest_device();
    cfg.wait_timeout_ms = 20000;
    hcfg.device = GPUOS_DEVICE_HOST;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK || gpuos_create(&hcfg, &host) != GPUOS_OK) {
        fprintf(stderr, "gpuos_create: %s\n", gpuos_last_error(NULL));
        return 1;
    }
    for (int pi = 0; pi < programs; pi++) {
        const gpuos_dtype dt = dts[pi % 4];
        const int64_t n = sizes[rnd(7)];
        const int layout = pi % 5 == 3 ? LAYOUT_STRIDED : pi % 5 == 4 ? LAYOUT_HALVES : LAYOUT_CONTIG;
        step prog[400];
        int len = 0, nreaders = 0;
        /* runs of one form, 1..40 long, separated now and then by readers, sums, writes to y */
        while (len < 300) {
            int form = (int)rnd(8), k = 1 + (int)rnd(40);
            if (dt != GPUOS_F32 && form == 2) k = k > 6 ? 6 : k; /* doubling: stay finite in 16 bits */
            for (int j = 0; j < k && len < 300; j++) prog[len].form = form, prog[len++].reader = 0;
            int brk = (int)rnd(6);
            if (brk == 0 && nreaders < NREAD) prog[len].form = 8, prog[len++].reader = nreaders++;
            else if (brk == 1) prog[len].form = 9, prog[len++].reader = 0;
            else if (brk == 2) prog[len].form = 10, prog[len++].reader = 0;
        }
        double *hx = (double *)malloc((size_t)n * sizeof(double)), *hy = (double *)malloc((size_t)n * sizeof(double)), hs;
        uint8_t *hm = (uint8_t *)malloc((size_t)n);
        result r[3] = {{0}}, ref = {0};
        CHECK(hx && hy && hm, "out of memory");
        if (!hx || !hy || !hm) return 1;
        make_inputs(dt, n, hx, hy, hm, &hs);
        for (int mode = 0; mode < 3; mode++) {
            /* $GPUOS_TEST_FRESH: a fresh context per program (see fresh) */
            if (fresh) {
                gpuos_destroy(ctx);
                if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
                    CHECK(0, "gpuos_create: %s", gpuos_last_error(NULL));
                    return ctest_summary("test_runs");
                }
            }
            gpuos_status st = run_program(ctx, dt, n, layout, prog, len, mode, hx, hy, hm, hs, &r[mode]);
            CHECK(st == GPUOS_OK, "program %d mode %d: %s", pi, mode, gpuos_last_error(ctx));
        }
        gpuos_status st = run_program(host, dt, n, layout, prog, len, MODE_BULK, hx, hy, hm, hs, &ref);
        CHECK(st == GPUOS_OK, "program %d on the host executor: %s", pi, gpuos_last_error(host));
        for (int mode = 1; mode < 3; mode++)
            CHECK(r[0].len == r[mode].len && r[0].bytes && r[mode].bytes && memcmp(r[0].bytes, r[mode].bytes, r[0].len) == 0,
                  "program %d (%s, n %lld, layout %d, %d steps): %s differs from one task at a time", pi,
                  gpuos_dtype_name(dt), (long long)n, layout, len, mode == 1 ? "back to back" : "the graph");
        {
            size_t where = 0;
            const double tol = dt == GPUOS_F32 ? 1e-4 : 2e-2;
            CHECK(r[1].bytes && ref.bytes && close_enough(dt, &ref, &r[1], tol, &where),
                  "program %d (%s, n %lld, layout %d): element %zu differs from the host executor", pi,
                  gpuos_dtype_name(dt), (long long)n, layout, where);
        }
        for (int mode = 0; mode < 3; mode++) free(r[mode].bytes);
        free(ref.bytes);
        free(hx);
        free(hy);
        free(hm);
    }
    CHECK(gpuos_context_status(ctx) == GPUOS_OK, "healthy: %s", gpuos_last_error(ctx));
    gpuos_destroy(ctx);
    gpuos_destroy(host);
    return ctest_summary("test_runs");
}
