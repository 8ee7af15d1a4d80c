/* test_rtops.c - run-time operators (gpuos_op_define / redefine / remove) on the device the
   tests run on ($GPUOS_TEST_DEVICE; the host executor interprets element-wise bodies, a GPU
   compiles them with NVRTC and swaps kernel generations). Every result is checked against
   plain C on fresh random inputs: integers exactly, floats within 1e-5 relative. Covers every
   dtype, broadcasting, transposed views, 0-d and zero-size tensors, redefinition with tasks
   queued (dual slots), removal, compile errors, bad definitions and bad submissions, and
   $GPUOS_TEST_RT_TASKS tasks (default 100000) from 4 threads while the operator is redefined. */
#define _POSIX_C_SOURCE 200809L
#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctest.h"
#include "gpuos.h"
#include "src/generated/gpuos_dtypes.h" /* GPUOS__DTYPES: each dtype's class */

/* "BOOL", "SINT", "UINT", "FLOAT" or "HALF" for each dtype (gen/ops.py, through make gen) */
#define DTYPE_CLASS(E, N, CLS, T, C, SIZE, LO, HI, VT) [E] = #CLS,
static const char *const dtype_class[GPUOS_DTYPE_COUNT] = {GPUOS__DTYPES(DTYPE_CLASS)};
#undef DTYPE_CLASS

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static double urand(double lo, double hi) { return lo + (hi - lo) * (double)(rnd() >> 11) / 9007199254740992.0; }

static gpuos_tensor *f32_tensor(gpuos_context *ctx, int rank, const int64_t *shape, float *host, double lo, double hi) {
    gpuos_tensor *t = NULL;
    int64_t n = 1, i;
    int k;
    for (k = 0; k < rank; k++) n *= shape[k];
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, rank, shape, &t) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    if (!t) return NULL;
    for (i = 0; i < n; i++) host[i] = (float)urand(lo, hi);
    if (n) CHECK(gpuos_upload(ctx, t, host, (size_t)n * 4) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    return t;
}

/* got within tol of the terms' magnitude: the body's a * s0 + b, as an FMA or not, differs from
   the C reference by a rounding of the product at most (no absolute floor: a constant error of
   1e-5 passed with the old tol * (1 + |want|)) */
static int close_f(double got, double want, double tol, double terms) {
    return fabs(got - want) <= tol * (fabs(want) + terms);
}

/* ---------------------------------------------------------------- f32: broadcasting, views */
static void test_saxpy(gpuos_context *ctx) {
    gpuos_op_def d = GPUOS_OP_DEF_INIT;
    gpuos_op op;
    gpuos_task t = GPUOS_TASK_INIT;
    int64_t s2[2] = {37, 53}, s1[1] = {53}, st[2] = {53, 37}, z[2] = {0, 5};
    static float ha[37 * 53], hb[53], hout[37 * 53], hat[53 * 37];
    gpuos_tensor *a, *b, *out, *at, *atv, *o0, *a0, *b0, *oz, *az;
    int i, j, bad = 0;
    d.name = "saxpy_relu";
    d.source = "float t = a * (float)s0 + b;\nout = t > 0.f ? t : 0.f;";
    d.n_inputs = 2;
    d.n_scalars = 1;
    CHECK(gpuos_op_define(ctx, &d, &op) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK((long)op >= GPUOS_OP_RUNTIME_BASE, "handle %ld", (long)op);

    a = f32_tensor(ctx, 2, s2, ha, -2, 2);
    b = f32_tensor(ctx, 1, s1, hb, -1, 1); /* broadcast along axis 0 */
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 2, s2, &out) == GPUOS_OK, "out");
    t.op = op;
    t.out = out;
    t.in[0] = a;
    t.in[1] = b;
    t.scalar[0] = 1.5;
    CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_download(ctx, out, hout, sizeof hout) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (i = 0; i < 37; i++)
        for (j = 0; j < 53; j++) {
            float x = ha[i * 53 + j] * 1.5f + hb[j];
            bad += !close_f(hout[i * 53 + j], x > 0 ? x : 0, 1e-6, fabs(ha[i * 53 + j] * 1.5) + fabs(hb[j]));
        }
    CHECK(bad == 0, "saxpy_relu with a broadcast input: %d of %d elements differ", bad, 37 * 53);

    /* a transposed view as input */
    at = f32_tensor(ctx, 2, st, hat, -2, 2);
    CHECK(gpuos_view_transpose(at, 0, 1, &atv) == GPUOS_OK, "transpose");
    t.in[0] = atv;
    t.scalar[0] = -0.5;
    CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_download(ctx, out, hout, sizeof hout) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    bad = 0;
    for (i = 0; i < 37; i++)
        for (j = 0; j < 53; j++) {
            float x = hat[j * 37 + i] * -0.5f + hb[j];
            bad += !close_f(hout[i * 53 + j], x > 0 ? x : 0, 1e-6, fabs(hat[j * 37 + i] * 0.5) + fabs(hb[j]));
        }
    CHECK(bad == 0, "saxpy_relu on a transposed view: %d elements differ", bad);

    /* 0-d operands */
    {
        float x = 0;
        CHECK(gpuos_tensor_scalar(ctx, GPUOS_F32, 2.0, &a0) == GPUOS_OK, "scalar");
        CHECK(gpuos_tensor_scalar(ctx, GPUOS_F32, 0.25, &b0) == GPUOS_OK, "scalar");
        CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 0, NULL, &o0) == GPUOS_OK, "0-d");
        t.out = o0;
        t.in[0] = a0;
        t.in[1] = b0;
        t.scalar[0] = 3.0;
        CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_download(ctx, o0, &x, 4) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(x == 6.25f, "0-d: %g, expected 6.25", x);
    }
    /* zero-size: nothing written, no error */
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 2, z, &oz) == GPUOS_OK, "zero-size");
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 2, z, &az) == GPUOS_OK, "zero-size");
    t.out = oz;
    t.in[0] = az;
    t.in[1] = b0;
    CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "zero-size: %s", gpuos_last_error(ctx));

    /* in place: out is in[0] */
    t.out = a;
    t.in[0] = a;
    t.in[1] = b;
    t.scalar[0] = 2.0;
    CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "in place: %s", gpuos_last_error(ctx));
    CHECK(gpuos_download(ctx, a, hout, sizeof hout) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    bad = 0;
    for (i = 0; i < 37 * 53; i++) {
        float x = ha[i] * 2.0f + hb[i % 53];
        bad += !close_f(hout[i], x > 0 ? x : 0, 1e-6, fabs(ha[i] * 2.0) + fabs(hb[i % 53]));
    }
    CHECK(bad == 0, "in place: %d elements differ", bad);

    /* bad submissions */
    t.out = out;
    t.in[0] = a;
    t.in[1] = NULL;
    CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_ERR_NULL_POINTER, "a missing input");
    t.in[1] = b;
    t.in[2] = b;
    CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_ERR_INVALID_ARGUMENT, "an extra input");
    t.in[2] = NULL;
    t.in[1] = a0;
    {
        gpuos_tensor *i32;
        CHECK(gpuos_tensor_new(ctx, GPUOS_I32, 2, s2, &i32) == GPUOS_OK, "i32");
        t.out = i32;
        CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_ERR_DTYPE_MISMATCH, "an i32 output of an f32 operator");
        t.out = out;
        t.in[0] = i32;
        CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_ERR_DTYPE_MISMATCH, "an i32 input of an f32 operator");
        gpuos_tensor_release(i32);
    }
    t.in[0] = b; /* [53] and a 0-d broadcast to [53], not to out's [37, 53] */
    CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_ERR_SHAPE_MISMATCH, "a wrong output shape");
    CHECK(gpuos_wait(ctx, 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));

    CHECK(gpuos_op_remove(ctx, op) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    t.in[0] = a;
    t.in[1] = b;
    CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_ERR_UNKNOWN_OP, "a removed operator");
    CHECK(gpuos_op_remove(ctx, op) == GPUOS_ERR_UNKNOWN_OP, "removed twice");
    { /* a definition that takes the removed one's place gets another handle: the old one stays unknown */
        gpuos_op op2 = op;
        float x = 0;
        d.name = "times_100";
        d.source = "out = a * 100.f + b * 0.f;";
        d.n_scalars = 0;
        CHECK(gpuos_op_define(ctx, &d, &op2) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(op2 != op, "a new definition got the removed operator's handle %ld", (long)op);
        t.out = o0;
        t.in[0] = a0;
        t.in[1] = b0;
        CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_ERR_UNKNOWN_OP, "the removed handle after another definition");
        CHECK(gpuos_op_redefine(ctx, op, &d) == GPUOS_ERR_UNKNOWN_OP, "redefine through the removed handle");
        CHECK(gpuos_op_remove(ctx, op) == GPUOS_ERR_UNKNOWN_OP, "remove through the removed handle");
        t.op = op2;
        CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_download(ctx, o0, &x, 4) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(x == 200.f, "the new definition: %g, expected 200", x);
        CHECK(gpuos_op_remove(ctx, op2) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        if (gpuos_context_backend(ctx) == GPUOS_BACKEND_HOST) { /* (cheap there: no compile) */
            /* many more removals of that slot: the first handle still never comes back (with
               4096 generations a slot's handles repeated every 4096 removals) */
            int k, again = 0, failed = 0;
            for (k = 0; k < 5000 && !failed; k++) {
                gpuos_op o = op;
                failed = gpuos_op_define(ctx, &d, &o) != GPUOS_OK || gpuos_op_remove(ctx, o) != GPUOS_OK;
                again += o == op || o == op2;
            }
            CHECK(!failed, "define and remove %d: %s", k, gpuos_last_error(ctx));
            CHECK(again == 0, "a removed handle came back %d times in 5000 definitions of its slot", again);
        }
    }
    gpuos_tensor_release(a);
    gpuos_tensor_release(b);
    gpuos_tensor_release(out);
    gpuos_tensor_release(at);
    gpuos_tensor_release(atv);
    gpuos_tensor_release(o0);
    gpuos_tensor_release(a0);
    gpuos_tensor_release(b0);
    gpuos_tensor_release(oz);
    gpuos_tensor_release(az);
}

/* ---------------------------------------------------------------- every dtype */
/* out = a * 3 + b with small integers (exact in every dtype; bool: nonzero), through casts
   from and to f64, so the check needs no per-dtype conversion code. */
static void test_dtypes(gpuos_context *ctx) {
    int dt, i;
    const int64_t n = 301;
    for (dt = 0; dt < GPUOS_DTYPE_COUNT; dt++) {
        gpuos_op_def d = GPUOS_OP_DEF_INIT;
        gpuos_op op;
        gpuos_tensor *fa, *fb, *fo, *a, *b, *o;
        double ha[301], hb[301], ho[301];
        int bad = 0, is_bool = dt == GPUOS_BOOL, is_uns = strcmp(dtype_class[dt], "UINT") == 0;
        gpuos_task t = GPUOS_TASK_INIT;
        char name[32];
        snprintf(name, sizeof name, "lin_%s", gpuos_dtype_name((gpuos_dtype)dt));
        d.name = name;
        d.source = "out = a * 3 + b;";
        d.n_inputs = 2;
        d.out_dtype = d.in_dtype[0] = d.in_dtype[1] = (gpuos_dtype)dt;
        if (gpuos_op_define(ctx, &d, &op) != GPUOS_OK) {
            CHECK(0, "define %s: %s", name, gpuos_last_error(ctx));
            continue;
        }
        for (i = 0; i < n; i++) {
            ha[i] = is_bool ? (double)(rnd() & 1) : (double)((int)(rnd() % 21) - (is_uns ? 0 : 10));
            hb[i] = is_bool ? (double)(rnd() & 1) : (double)((int)(rnd() % 21) - (is_uns ? 0 : 10));

        }
        CHECK(gpuos_tensor_new(ctx, GPUOS_F64, 1, &n, &fa) == GPUOS_OK, "f64");
        CHECK(gpuos_tensor_new(ctx, GPUOS_F64, 1, &n, &fb) == GPUOS_OK, "f64");
        CHECK(gpuos_tensor_new(ctx, GPUOS_F64, 1, &n, &fo) == GPUOS_OK, "f64");
        CHECK(gpuos_tensor_new(ctx, (gpuos_dtype)dt, 1, &n, &a) == GPUOS_OK, "a");
        CHECK(gpuos_tensor_new(ctx, (gpuos_dtype)dt, 1, &n, &b) == GPUOS_OK, "b");
        CHECK(gpuos_tensor_new(ctx, (gpuos_dtype)dt, 1, &n, &o) == GPUOS_OK, "o");
        CHECK(gpuos_upload(ctx, fa, ha, sizeof ha) == GPUOS_OK, "upload");
        CHECK(gpuos_upload(ctx, fb, hb, sizeof hb) == GPUOS_OK, "upload");
        CHECK(gpuos_cast(ctx, a, fa) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_cast(ctx, b, fb) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        t.op = op;
        t.out = o;
        t.in[0] = a;
        t.in[1] = b;
        CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s: %s", name, gpuos_last_error(ctx));
        CHECK(gpuos_cast(ctx, fo, o) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_download(ctx, fo, ho, sizeof ho) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        for (i = 0; i < n; i++) {
            double want = ha[i] * 3 + hb[i];
            if (is_bool) want = want != 0;
            bad += ho[i] != want;
        }
        CHECK(bad == 0, "%s: %d of %d elements differ", name, bad, (int)n);
        CHECK(gpuos_op_remove(ctx, op) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        gpuos_tensor_release(fa);
        gpuos_tensor_release(fb);
        gpuos_tensor_release(fo);
        gpuos_tensor_release(a);
        gpuos_tensor_release(b);
        gpuos_tensor_release(o);
    }
}

/* ---------------------------------------------------------------- redefinition, dual slots */
static gpuos_op_def add_def(const char *src) {
    gpuos_op_def d = GPUOS_OP_DEF_INIT;
    d.name = "addk";
    d.source = src;
    d.n_inputs = 1;
    d.out_dtype = d.in_dtype[0] = GPUOS_I32;
    return d;
}

static void test_redefine(gpuos_context *ctx) {
    gpuos_op_def d1 = add_def("out = a + 1;"), d2 = add_def("out = a + 100;"), d3 = add_def("out = a + 10000;");
    gpuos_op op;
    gpuos_tensor *x, *o[40];
    gpuos_task t = GPUOS_TASK_INIT;
    int64_t n = 3000;
    static int32_t hx[3000], ho[3000];
    int i, k, bad = 0;
    gpuos_status st;
    for (i = 0; i < n; i++) hx[i] = (int32_t)(rnd() % 100000);
    CHECK(gpuos_tensor_new(ctx, GPUOS_I32, 1, &n, &x) == GPUOS_OK, "x");
    CHECK(gpuos_upload(ctx, x, hx, sizeof hx) == GPUOS_OK, "upload");
    for (k = 0; k < 40; k++) CHECK(gpuos_tensor_new(ctx, GPUOS_I32, 1, &n, &o[k]) == GPUOS_OK, "o");
    CHECK(gpuos_op_define(ctx, &d1, &op) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    t.op = op;
    t.in[0] = x;

    /* 20 tasks queued with version 1, a redefinition, 20 more: each runs what it was submitted for */
    gpuos_debug_pause(ctx, 1);
    for (k = 0; k < 20; k++) {
        t.out = o[k];
        CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    }
    CHECK(gpuos_op_redefine(ctx, op, &d2) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (k = 20; k < 40; k++) {
        t.out = o[k];
        CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    }
    /* a third version needs version 1's slot, which queued tasks still use: it waits, then
       gives up (wait_timeout_ms is short in this context) */
    st = gpuos_op_redefine(ctx, op, &d3);
    CHECK(st == GPUOS_ERR_TIMEOUT, "a redefinition while the slot before last is queued: %s", gpuos_status_string(st));
    gpuos_debug_pause(ctx, 0);
    CHECK(gpuos_wait(ctx, 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (k = 0; k < 40; k++) {
        CHECK(gpuos_download(ctx, o[k], ho, sizeof ho) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        for (i = 0; i < n; i++) bad += ho[i] != hx[i] + (k < 20 ? 1 : 100);
    }
    CHECK(bad == 0, "tasks around a redefinition: %d elements ran the wrong version", bad);
    /* now the slot is free */
    CHECK(gpuos_op_redefine(ctx, op, &d3) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    t.out = o[0];
    CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_download(ctx, o[0], ho, sizeof ho) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (i = 0, bad = 0; i < n; i++) bad += ho[i] != hx[i] + 10000;
    CHECK(bad == 0, "version 3: %d elements differ", bad);

    /* queued tasks of a removed operator still run */
    gpuos_debug_pause(ctx, 1);
    t.out = o[1];
    CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_op_remove(ctx, op) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    gpuos_debug_pause(ctx, 0);
    CHECK(gpuos_download(ctx, o[1], ho, sizeof ho) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (i = 0, bad = 0; i < n; i++) bad += ho[i] != hx[i] + 10000;
    CHECK(bad == 0, "a task queued before its operator was removed: %d elements differ", bad);
    CHECK(gpuos_op_redefine(ctx, op, &d1) == GPUOS_ERR_UNKNOWN_OP, "redefining a removed operator");
    gpuos_tensor_release(x);
    for (k = 0; k < 40; k++) gpuos_tensor_release(o[k]);
}

/* A graph that records a run-time operator keeps none of its versions' code slots: a graph
   never launched, or launched and finished, does not hold up redefinitions (each one would
   otherwise wait wait_timeout_ms for the slot before last and fail with GPUOS_ERR_TIMEOUT),
   and each launch runs the version current when it is launched. A launch still queued keeps
   its version's slot: its tasks run that version, whatever is defined meanwhile. */
static void test_graph_redefine(gpuos_context *ctx) {
    char src[64];
    gpuos_op_def d = add_def("out = a + 1;");
    gpuos_op op;
    gpuos_tensor *x = NULL, *o[3] = {NULL, NULL, NULL};
    gpuos_graph *g[3] = {NULL, NULL, NULL};
    gpuos_task t = GPUOS_TASK_INIT;
    gpuos_graph_bind bind;
    int64_t n = 2000;
    static int32_t hx[2000], ho[2000];
    int i, k, v, bad;
    for (i = 0; i < n; i++) hx[i] = (int32_t)(rnd() % 100000);
    CHECK(gpuos_tensor_new(ctx, GPUOS_I32, 1, &n, &x) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (k = 0; k < 3; k++) CHECK(gpuos_tensor_new(ctx, GPUOS_I32, 1, &n, &o[k]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_upload(ctx, x, hx, sizeof hx) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_op_define(ctx, &d, &op) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    t.op = op;
    t.in[0] = x;
    /* g[0] launched each round, g[1] never launched, g[2] launched with a binding (o[2] for o[0]) */
    for (k = 0; k < 3; k++) {
        t.out = o[k == 2 ? 0 : k];
        CHECK(gpuos_graph_create(ctx, &g[k]) == GPUOS_OK && gpuos_graph_add(g[k], &t, NULL) == GPUOS_OK, "%s",
              gpuos_last_error(ctx));
    }
    bind.recorded = o[0];
    bind.actual = o[2];
    CHECK(gpuos_graph_launch(g[0], NULL, 0, NULL, 0, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (v = 2; v <= 6; v++) {
        double t0;
        gpuos_status st;
        CHECK(gpuos_wait(ctx, 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        snprintf(src, sizeof src, "out = a + %d;", 1000 * v);
        d.source = src;
        t0 = ctest_now_ms();
        st = gpuos_op_redefine(ctx, op, &d);
        CHECK(st == GPUOS_OK, "redefinition %d beside live graphs: %s", v, gpuos_last_error(ctx));
        CHECK(ctest_now_ms() - t0 < 1000.0, "redefinition %d beside live graphs took %.0f ms (nothing is queued)", v,
              ctest_now_ms() - t0);
        CHECK(gpuos_graph_launch(g[0], NULL, 0, NULL, 0, NULL) == GPUOS_OK &&
                  gpuos_graph_launch(g[2], &bind, 1, NULL, 0, NULL) == GPUOS_OK,
              "%s", gpuos_last_error(ctx));
        for (k = 0; k < 3; k += 2) {
            CHECK(gpuos_download(ctx, o[k], ho, sizeof ho) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            for (i = 0, bad = 0; i < n; i++) bad += ho[i] != hx[i] + 1000 * v;
            CHECK(bad == 0, "graph %d launched after redefinition %d: %d elements ran another version", k, v, bad);
        }
    }
    /* a launch queued behind a pause keeps its version: the definition after next waits for
       it (and gives up: wait_timeout_ms is short here), and the launch runs its version */
    gpuos_debug_pause(ctx, 1);
    CHECK(gpuos_graph_launch(g[0], NULL, 0, NULL, 0, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    d.source = "out = a + 7000;";
    CHECK(gpuos_op_redefine(ctx, op, &d) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    d.source = "out = a + 8000;";
    {
        const gpuos_status st = gpuos_op_redefine(ctx, op, &d);
        CHECK(st == GPUOS_ERR_TIMEOUT || st == GPUOS_OK, "redefinition with a launch of the version before queued: %s",
              gpuos_last_error(ctx));
    }
    gpuos_debug_pause(ctx, 0);
    CHECK(gpuos_download(ctx, o[0], ho, sizeof ho) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (i = 0, bad = 0; i < n; i++) bad += ho[i] != hx[i] + 6000;
    CHECK(bad == 0, "a launch queued before two redefinitions: %d elements ran another version", bad);
    /* the never-launched graph runs the current version on its first launch */
    CHECK(gpuos_graph_launch(g[1], NULL, 0, NULL, 0, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_download(ctx, o[1], ho, sizeof ho) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (i = 0, bad = 0; i < n; i++) bad += ho[i] != hx[i] + 7000 && ho[i] != hx[i] + 8000;
    CHECK(bad == 0, "a graph recorded six versions ago: %d elements ran an old version", bad);
    /* removed while graphs record it; then another operator of the same signature defined,
       which may get its index (its handle): the graphs must not run it */
    CHECK(gpuos_op_remove(ctx, op) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_graph_launch(g[0], NULL, 0, NULL, 0, NULL) == GPUOS_ERR_UNKNOWN_OP,
          "launching a graph of a removed operator: %s", gpuos_last_error(ctx));
    {
        gpuos_op other;
        d.source = "out = 777;";
        CHECK(gpuos_op_define(ctx, &d, &other) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_graph_launch(g[0], NULL, 0, NULL, 0, NULL) == GPUOS_ERR_UNKNOWN_OP &&
                  gpuos_graph_launch(g[2], &bind, 1, NULL, 0, NULL) == GPUOS_ERR_UNKNOWN_OP,
              "launching a graph of a removed operator after another was defined (handle %s): %s",
              other == op ? "reused" : "new", gpuos_last_error(ctx));
        CHECK(gpuos_download(ctx, o[0], ho, sizeof ho) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        for (i = 0, bad = 0; i < n; i++) bad += ho[i] == 777;
        CHECK(bad == 0, "a graph of a removed operator ran the operator defined after it: %d elements", bad);
        gpuos_op_remove(ctx, other);
    }
    for (k = 0; k < 3; k++) gpuos_graph_release(g[k]);
    gpuos_tensor_release(x);
    for (k = 0; k < 3; k++) gpuos_tensor_release(o[k]);
}

/* ---------------------------------------------------------------- errors */
static void test_errors(gpuos_context *ctx, int gpu) {
    gpuos_op_def d = GPUOS_OP_DEF_INIT, e;
    gpuos_op op = (gpuos_op)0, op2;
    gpuos_status st;
    d.name = "broken";
    d.source = "float t = a * ;\nout = t;";
    d.n_inputs = 1;
    st = gpuos_op_define(ctx, &d, &op);
    CHECK(st == GPUOS_ERR_COMPILE, "a syntax error: %s", gpuos_status_string(st));
    CHECK(strstr(gpuos_last_error(ctx), "broken") != NULL, "the message names the operator: %s", gpuos_last_error(ctx));
    e = d;
    e.source = "out = undefined_name + a;";
    CHECK(gpuos_op_define(ctx, &e, &op) == GPUOS_ERR_COMPILE, "an unknown identifier");
    e = d;
    e.source = "a = 1.f; out = a;";
    CHECK(gpuos_op_define(ctx, &e, &op) == GPUOS_ERR_COMPILE, "assigning an input");
    CHECK(gpuos_op_define(ctx, NULL, &op) == GPUOS_ERR_NULL_POINTER, "def NULL");
    e = d;
    e.source = "out = a;";
    CHECK(gpuos_op_define(ctx, &e, NULL) == GPUOS_ERR_NULL_POINTER, "op NULL");
    CHECK(gpuos_op_define(NULL, &e, &op) == GPUOS_ERR_NULL_POINTER, "ctx NULL");
    e.struct_size = 8;
    CHECK(gpuos_op_define(ctx, &e, &op) == GPUOS_ERR_INVALID_ARGUMENT, "struct_size");
    e.struct_size = sizeof e;
    e.name = "not an identifier";
    CHECK(gpuos_op_define(ctx, &e, &op) == GPUOS_ERR_INVALID_ARGUMENT, "name");
    e.name = "ok";
    e.n_inputs = 4;
    CHECK(gpuos_op_define(ctx, &e, &op) == GPUOS_ERR_INVALID_ARGUMENT, "n_inputs");
    e.n_inputs = 1;
    e.n_scalars = 3;
    CHECK(gpuos_op_define(ctx, &e, &op) == GPUOS_ERR_INVALID_ARGUMENT, "n_scalars");
    e.n_scalars = 0;
    e.in_names[0] = "out";
    CHECK(gpuos_op_define(ctx, &e, &op) == GPUOS_ERR_INVALID_ARGUMENT, "two variables named out");
    e.in_names[0] = "x y";
    CHECK(gpuos_op_define(ctx, &e, &op) == GPUOS_ERR_INVALID_ARGUMENT, "a bad input name");
    e.in_names[0] = "M_PI"; /* a constant of both executors: the device's macro made it a number */
    CHECK(gpuos_op_define(ctx, &e, &op) == GPUOS_ERR_INVALID_ARGUMENT, "an input named M_PI");
    {
        /* keywords and type names: GPUOS_ERR_COMPILE on the host naming "vars[1]" before, a
           helper's review (a device compile error on the GPU) */
        static const char *const kw[] = {"float", "if", "return", "int", "double", "while", "and", "xor", "alignas", "not"};
        int q;
        for (q = 0; q < 10; q++) {
            e.in_names[0] = kw[q];
            CHECK(gpuos_op_define(ctx, &e, &op) == GPUOS_ERR_INVALID_ARGUMENT, "an input named %s: %s", kw[q],
                  gpuos_last_error(ctx));
        }
    }
    e.in_names[0] = NULL;
    e.out_name = "INT_MAX";
    CHECK(gpuos_op_define(ctx, &e, &op) == GPUOS_ERR_INVALID_ARGUMENT, "an output named INT_MAX");
    e.out_name = "NULL"; /* a macro of NVRTC's */
    CHECK(gpuos_op_define(ctx, &e, &op) == GPUOS_ERR_INVALID_ARGUMENT, "an output named NULL");
    e.out_name = "__x";
    CHECK(gpuos_op_define(ctx, &e, &op) == GPUOS_ERR_INVALID_ARGUMENT, "an output named __x");
    e.out_name = NULL;
    e.out_dtype = (gpuos_dtype)99;
    CHECK(gpuos_op_define(ctx, &e, &op) == GPUOS_ERR_INVALID_ARGUMENT, "a bad dtype");
    e.out_dtype = GPUOS_F32;
    e.source = NULL;
    CHECK(gpuos_op_define(ctx, &e, &op) == GPUOS_ERR_NULL_POINTER, "source NULL");
    e.source = "__device__ void ok(const gpuos_tile &t) { }";
    {
        const char *nm = e.name;
        e.name = NULL; /* (it was INVALID_ARGUMENT, a user's review: the name is required, as the source is) */
        CHECK(gpuos_op_define(ctx, &e, &op) == GPUOS_ERR_NULL_POINTER && strstr(gpuos_last_error(ctx), "name"),
              "name NULL: %s", gpuos_last_error(ctx));
        e.name = nm;
    }
    e.kind = GPUOS_OPDEF_FUNCTION;
    st = gpuos_op_define(ctx, &e, &op2);
    if (gpu) {
        CHECK(st == GPUOS_OK, "a full device function on the GPU: %s", gpuos_last_error(ctx));
        if (st == GPUOS_OK) CHECK(gpuos_op_remove(ctx, op2) == GPUOS_OK, "remove");
    } else {
        CHECK(st == GPUOS_ERR_UNSUPPORTED, "a full device function on the host executor: %s", gpuos_status_string(st));
    }
    CHECK(gpuos_op_redefine(ctx, (gpuos_op)3, &e) == GPUOS_ERR_UNKNOWN_OP, "redefine a built-in");
    CHECK(gpuos_op_remove(ctx, (gpuos_op)(GPUOS_OP_RUNTIME_BASE + 63)) == GPUOS_ERR_UNKNOWN_OP, "remove an unknown");
    {
        gpuos_task t = GPUOS_TASK_INIT;
        gpuos_tensor *x;
        int64_t n = 4;
        CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &x) == GPUOS_OK, "x");
        t.op = (gpuos_op)(GPUOS_OP_RUNTIME_BASE + 5);
        t.out = x;
        t.in[0] = x;
        CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_ERR_UNKNOWN_OP, "an undefined run-time handle");
        t.op = (gpuos_op)(GPUOS_OP_RUNTIME_BASE + 100000);
        CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_ERR_UNKNOWN_OP, "a handle out of range");
        gpuos_tensor_release(x);
    }
    CHECK(gpuos_context_status(ctx) == GPUOS_OK, "errors leave the context healthy");
}

/* ---------------------------------------------------------------- libdevice math */
static void test_sin_large(gpuos_context *ctx) {
    gpuos_op_def d = GPUOS_OP_DEF_INIT;
    gpuos_op op;
    gpuos_tensor *a, *o;
    int64_t n = 4096;
    static float ha[4096], ho[4096];
    int i, bad = 0;
    gpuos_task t = GPUOS_TASK_INIT;
    d.name = "big_sin";
    d.source = "out = sinf(a) + cosf(a * 0.5f);";
    d.n_inputs = 1;
    CHECK(gpuos_op_define(ctx, &d, &op) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    a = f32_tensor(ctx, 1, &n, ha, 1e3, 1e7); /* large arguments: the slow reduction path */
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &o) == GPUOS_OK, "o");
    t.op = op;
    t.out = o;
    t.in[0] = a;
    CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_download(ctx, o, ho, sizeof ho) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (i = 0; i < n; i++) bad += fabs(ho[i] - (sin((double)ha[i]) + cos((double)(ha[i] * 0.5f)))) > 2e-6;
    CHECK(bad == 0, "sinf + cosf of arguments up to 1e7: %d of %d beyond 2e-6 of libm", bad, (int)n);
    gpuos_op_remove(ctx, op);
    gpuos_tensor_release(a);
    gpuos_tensor_release(o);
}

/* The limits and constants a body may use on either executor (the host interpreter knew
   INT_MAX, FLT_MAX, M_PI ... and NVRTC did not: such a body compiled only on the host; and
   the interpreter did not know <stdint.h>'s, which the device prelude defines). */
static void test_constants(gpuos_context *ctx) {
    gpuos_op_def d = GPUOS_OP_DEF_INIT;
    gpuos_op op;
    double ho[16];
    int i, bad = 0;
    gpuos_task t = GPUOS_TASK_INIT;
    gpuos_tensor *zero = NULL;
    int64_t one = 1;
    d.name = "limits";
    d.n_inputs = 1; /* a = 0 */
    d.in_dtype[0] = GPUOS_F64;
    d.out_dtype = GPUOS_F64;
    d.source = "double v = 0;\n"
               "if (s0 == 0) v = INT_MAX; else if (s0 == 1) v = INT_MIN; else if (s0 == 2) v = UINT_MAX;\n"
               "else if (s0 == 3) v = (double)LLONG_MIN; else if (s0 == 4) v = (double)ULLONG_MAX;\n"
               "else if (s0 == 5) v = FLT_MAX; else if (s0 == 6) v = FLT_MIN; else if (s0 == 7) v = FLT_EPSILON;\n"
               "else if (s0 == 8) v = DBL_MAX; else if (s0 == 9) v = DBL_MIN; else if (s0 == 10) v = DBL_EPSILON;\n"
               "else if (s0 == 11) v = M_PI; else if (s0 == 12) v = INT32_MIN; else if (s0 == 13) v = (double)UINT64_MAX;\n"
               "else if (s0 == 14) v = INT16_MIN + UINT8_MAX; else v = (double)INT64_MAX;\n"
               "out = v + a;";
    d.n_scalars = 1;
    CHECK(gpuos_tensor_new(ctx, GPUOS_F64, 1, &one, &zero) == GPUOS_OK && gpuos_fill(ctx, zero, 0.0) == GPUOS_OK, "zero");
    CHECK(gpuos_op_define(ctx, &d, &op) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    {
        const double want[16] = {2147483647.0, -2147483648.0, 4294967295.0, (double)LLONG_MIN, (double)ULLONG_MAX,
                                 (double)FLT_MAX, (double)FLT_MIN, (double)FLT_EPSILON, DBL_MAX, DBL_MIN, DBL_EPSILON,
                                 3.14159265358979323846, (double)INT32_MIN, (double)UINT64_MAX, -32768.0 + 255.0,
                                 (double)INT64_MAX};
        gpuos_tensor *outs[16];
        for (i = 0; i < 16; i++) {
            CHECK(gpuos_tensor_new(ctx, GPUOS_F64, 1, &one, &outs[i]) == GPUOS_OK, "out");
            t.op = op, t.out = outs[i], t.in[0] = zero, t.scalar[0] = (double)i;
            CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        }
        for (i = 0; i < 16; i++) {
            CHECK(gpuos_download(ctx, outs[i], &ho[i], sizeof ho[i]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            if (ho[i] != want[i]) {
                bad++;
                fprintf(stderr, "constant %d: %.17g, want %.17g\n", i, ho[i], want[i]);
            }
            gpuos_tensor_release(outs[i]);
        }
    }
    CHECK(bad == 0, "a body's constants: %d of 16 differ", bad);
    gpuos_tensor_release(zero);
    gpuos_op_remove(ctx, op);
}

/* An operator defined again with the same source while tasks of the first definition are
   not yet retired: two versions of one code in two slots (on the GPU the link took the
   object twice, its symbols defined twice: GPUOS_ERR_COMPILE), then the pattern of make
   bench's define_warm (define, one task, download, remove, define again). */
static void test_same_source(gpuos_context *ctx) {
    gpuos_op_def d = GPUOS_OP_DEF_INIT;
    gpuos_op op1 = 0, op2 = 0;
    gpuos_task t = GPUOS_TASK_INIT;
    gpuos_tensor *x = NULL;
    int64_t n = 4096;
    static float h[4096];
    int i, r, bad = 0;
    d.name = "twin";
    d.n_inputs = 1;
    d.in_dtype[0] = GPUOS_F32;
    d.out_dtype = GPUOS_F32;
    d.source = "out = a + 1.0f; /* test_same_source */";
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &x) == GPUOS_OK && gpuos_fill(ctx, x, 0.0) == GPUOS_OK, "x");
    CHECK(gpuos_op_define(ctx, &d, &op1) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    t.out = x, t.in[0] = x, t.op = op1;
    for (i = 0; i < 300; i++) CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_op_define(ctx, &d, &op2) == GPUOS_OK, "the same source again, its first tasks queued: %s",
          gpuos_last_error(ctx));
    t.op = op2;
    for (i = 0; i < 300; i++) CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    t.op = op1; /* the first operator again (op2 is a second operator with the same body) */
    for (i = 0; i < 100; i++) CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_download(ctx, x, h, sizeof h) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (i = 0; i < 4096; i++) bad += h[i] != 700.0f;
    CHECK(bad == 0, "700 adds of one across two versions of one source: %d of 4096 wrong (x[0] = %g)", bad, h[0]);
    gpuos_op_remove(ctx, op1);
    gpuos_op_remove(ctx, op2);
    for (r = 0; r < 5; r++) { /* make bench's define_warm */
        gpuos_op op = 0;
        float v = 0;
        gpuos_tensor *x0 = NULL;
        CHECK(gpuos_op_define(ctx, &d, &op) == GPUOS_OK, "define %d: %s", r, gpuos_last_error(ctx));
        t.op = op;
        CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_view_slice(x, 0, 0, 1, 1, &x0) == GPUOS_OK, "view");
        CHECK(gpuos_download(ctx, x0, &v, sizeof v) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(v == 701.0f + (float)r, "define %d: %g, want %g", r, v, 701.0f + (float)r);
        gpuos_tensor_release(x0);
        CHECK(gpuos_op_remove(ctx, op) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    }
    gpuos_tensor_release(x);
}

/* Full device functions whose sources define the same external names (GPU only: the host
   executor runs element-wise bodies only). Every version in a slot is linked into one module:
   a helper `sq` in two operators, and a redefinition that changes a __device__ variable K
   while the first version's tasks are queued (both versions in slots), collided there, and
   nvJitLink kept one definition without failing: g ran f's helper, the new version read the
   old K. Each source now has a namespace of its own. */
/* Checks that each of x's 256 f32 values is want. */
static void expect_all(gpuos_context *ctx, gpuos_tensor *x, float want, const char *what) {
    static float h[256];
    int i, bad = 0;
    const int n = 256;
    CHECK(gpuos_download(ctx, x, h, (size_t)n * sizeof(float)) == GPUOS_OK, "%s: %s", what, gpuos_last_error(ctx));
    for (i = 0; i < n; i++) bad += h[i] != want;
    CHECK(bad == 0, "%s: %d of %d wrong (x[0] = %g, want %g)", what, bad, n, h[0], want);
}

static void test_function_names(gpuos_context *ctx) {
    gpuos_op_def d = GPUOS_OP_DEF_INIT;
    gpuos_op f = 0, g = 0, k = 0;
    gpuos_task t = GPUOS_TASK_INIT;
    gpuos_tensor *y1 = NULL, *y2 = NULL, *z = NULL;
    int64_t n = 256;
    int i;
#define RT_FN(name, expr) \
    "__device__ void " name "(const gpuos_tile &t) {\n" \
    "    for (long long i = t.begin + threadIdx.x; i < t.end; i += blockDim.x)\n" \
    "        *(float *)t.ptr(0, i) = " expr ";\n}\n"
    d.n_inputs = 1;
    d.in_dtype[0] = GPUOS_F32;
    d.out_dtype = GPUOS_F32;
    d.kind = GPUOS_OPDEF_FUNCTION;
    d.name = "fsq";
    d.source = "__device__ __noinline__ float sq(float x) { return x * x; }\n" RT_FN("fsq", "sq(3.0f)");
    CHECK(gpuos_op_define(ctx, &d, &f) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    d.name = "gsq";
    d.source = "__device__ __noinline__ float sq(float x) { return x * x + 1.0f; }\n" RT_FN("gsq", "sq(3.0f)");
    CHECK(gpuos_op_define(ctx, &d, &g) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &y1) == GPUOS_OK && gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &y2) == GPUOS_OK &&
              gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &z) == GPUOS_OK && gpuos_fill(ctx, z, 0.0) == GPUOS_OK,
          "tensors");
    t.in[0] = z;
    t.op = f, t.out = y1;
    CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    t.op = g, t.out = y2;
    CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    expect_all(ctx, y1, 9.0f, "f's helper sq");
    expect_all(ctx, y2, 10.0f, "g's helper sq, same name");
    d.name = "kvar";
    d.source = "__device__ float K = 1.5f;\n" RT_FN("kvar", "K");
    CHECK(gpuos_op_define(ctx, &d, &k) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    t.op = k, t.out = y1;
    for (i = 0; i < 200; i++) CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    d.source = "__device__ float K = 7.5f;\n" RT_FN("kvar", "K");
    CHECK(gpuos_op_redefine(ctx, k, &d) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    t.out = y2;
    CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    expect_all(ctx, y1, 1.5f, "the first version's K");
    expect_all(ctx, y2, 7.5f, "the redefinition's K, same name");
    { /* extern "C" names escape the namespaces: a second definition of one is refused */
        gpuos_op xa = 0, xb = 0;
        d.name = "xa";
        d.source = "extern \"C\" __device__ float gpuos_test_x = 1.5f;\n" RT_FN("xa", "gpuos_test_x");
        CHECK(gpuos_op_define(ctx, &d, &xa) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        d.name = "xb";
        d.source = "extern \"C\" __device__ float gpuos_test_x = 7.5f;\n" RT_FN("xb", "gpuos_test_x");
        CHECK(gpuos_op_define(ctx, &d, &xb) == GPUOS_ERR_COMPILE && strstr(gpuos_last_error(ctx), "gpuos_test_x"),
              "a second extern \"C\" gpuos_test_x: %s", gpuos_last_error(ctx));
        t.op = xa, t.out = y1;
        CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        expect_all(ctx, y1, 1.5f, "xa after xb was refused");
        gpuos_op_remove(ctx, xa);
    }
#undef RT_FN
    gpuos_op_remove(ctx, f), gpuos_op_remove(ctx, g), gpuos_op_remove(ctx, k);
    gpuos_tensor_release(y1), gpuos_tensor_release(y2), gpuos_tensor_release(z);
}

/* ---------------------------------------------------------------- tasks from 4 threads during redefinitions */
typedef struct rt_thread {
    gpuos_context *ctx;
    gpuos_op op;
    gpuos_tensor *x, *one;
    long tasks;
    int failed;
    char msg[256];
} rt_thread;

static void *rt_submitter(void *arg) {
    rt_thread *w = (rt_thread *)arg;
    gpuos_task t = GPUOS_TASK_INIT;
    long i;
    t.op = w->op;
    t.out = w->x;
    t.in[0] = w->x;
    for (i = 0; i < w->tasks; i++) {
        /* every third task a built-in add: the dependent chain crosses between the run-time
           operator's workers and the built-ins' (on the GPU, two kernels) both ways */
        gpuos_status st = i % 3 == 2 ? gpuos_add(w->ctx, w->x, w->x, w->one) : gpuos_submit(w->ctx, &t, NULL);
        if (st != GPUOS_OK) {
            w->failed = 1;
            snprintf(w->msg, sizeof w->msg, "task %ld: %s", i, gpuos_last_error(w->ctx));
            break;
        }
    }
    return NULL;
}

static void test_stream_redefine(gpuos_context *ctx) {
    const char *e = getenv("GPUOS_TEST_RT_TASKS");
    long total = e ? atol(e) : 100000L;
    rt_thread w[4];
    pthread_t th[4];
    gpuos_op op;
    gpuos_op_def d = add_def("out = a + 1; /* version 0 */");
    char src[8][64];
    int64_t n = 64;
    int k, r, swaps = 0;
    CHECK(gpuos_op_define(ctx, &d, &op) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (k = 0; k < 4; k++) {
        memset(&w[k], 0, sizeof w[k]);
        w[k].ctx = ctx;
        w[k].op = op;
        w[k].tasks = total / 4;
        CHECK(gpuos_tensor_new(ctx, GPUOS_I32, 1, &n, &w[k].x) == GPUOS_OK, "x");
        CHECK(gpuos_tensor_scalar(ctx, GPUOS_I32, 1.0, &w[k].one) == GPUOS_OK, "one");
        CHECK(gpuos_fill(ctx, w[k].x, 0) == GPUOS_OK, "fill");
    }
    for (k = 0; k < 4; k++) pthread_create(&th[k], NULL, rt_submitter, &w[k]);
    /* the same arithmetic in new code each time (a new object, link and swap), while the
       threads stream; a redefinition that finds the slot before last busy waits for it */
    for (r = 1; r <= 8; r++) {
        gpuos_status st;
        snprintf(src[r - 1], sizeof src[0], "out = a + 1; /* version %d */", r);
        d.source = src[r - 1];
        st = gpuos_op_redefine(ctx, op, &d);
        CHECK(st == GPUOS_OK, "redefinition %d under load: %s", r, gpuos_last_error(ctx));
        swaps += st == GPUOS_OK;
    }
    for (k = 0; k < 4; k++) pthread_join(th[k], NULL);
    CHECK(gpuos_wait(ctx, 60000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (k = 0; k < 4; k++) {
        int32_t h[64];
        int i, bad = 0;
        CHECK(!w[k].failed, "thread %d: %s", k, w[k].msg);
        CHECK(gpuos_download(ctx, w[k].x, h, sizeof h) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        for (i = 0; i < 64; i++) bad += h[i] != (int32_t)(total / 4);
        CHECK(bad == 0, "thread %d: x = %d after %ld tasks of x = x + 1 across %d redefinitions (lost, repeated or "
                        "reordered tasks)",
              k, h[0], total / 4, swaps);
        gpuos_tensor_release(w[k].x);
        gpuos_tensor_release(w[k].one);
    }
    printf("%ld tasks (one in three a built-in add) from 4 threads across %d redefinitions\n", total / 4 * 4, swaps);
    gpuos_op_remove(ctx, op);
}

/* A definition behind a long queue (GPU): its swap stops the kernel once what is queued has
   run, and meanwhile this context's other threads go on: a gpuos_wait with a 5 ms timeout
   called during the drain returns within its timeout (plus scheduling), where it once waited
   for the whole drain (the stop held the context's lock). */
typedef struct waiter {
    gpuos_context *ctx;
    volatile int stop;
    double max_ms;
    long calls;
} waiter;

static void *wait_loop(void *arg) {
    waiter *w = (waiter *)arg;
    while (!w->stop) {
        const double t0 = ctest_now_ms();
        (void)gpuos_wait(w->ctx, 5); /* GPUOS_ERR_TIMEOUT while the queue drains */
        const double dt = ctest_now_ms() - t0;
        if (dt > w->max_ms) w->max_ms = dt;
        w->calls++;
    }
    return NULL;
}

static void test_define_behind_queue(gpuos_context *ctx) {
    int64_t n = (int64_t)1 << 26;
    gpuos_tensor *x = NULL, *y = NULL, *zero = NULL, *y4 = NULL;
    gpuos_op_def d = add_def("out = a + 2; /* behind a queue */");
    gpuos_op op;
    waiter w;
    pthread_t th;
    const int tasks = 4000;
    double t0, define_ms, drain_ms;
    float h[4];
    int k;
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &x) == GPUOS_OK && gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &y) == GPUOS_OK,
          "%s", gpuos_last_error(ctx));
    CHECK(gpuos_fill(ctx, x, 1.0) == GPUOS_OK && gpuos_fill(ctx, y, 0.0) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_tensor_scalar(ctx, GPUOS_F32, 0.0, &zero) == GPUOS_OK && gpuos_view_slice(y, 0, 0, 4, 1, &y4) == GPUOS_OK,
          "%s", gpuos_last_error(ctx));
    CHECK(gpuos_wait(ctx, 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    t0 = ctest_now_ms();
    /* alternating: identical in-place tasks in a row would run as one pass (the workers' runs) */
    for (k = 0; k < tasks; k++)
        CHECK((k % 2 ? gpuos_sub(ctx, y, y, zero) : gpuos_add(ctx, y, y, x)) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    memset(&w, 0, sizeof w);
    w.ctx = ctx;
    pthread_create(&th, NULL, wait_loop, &w);
    CHECK(gpuos_op_define(ctx, &d, &op) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    define_ms = ctest_now_ms() - t0;
    w.stop = 1;
    pthread_join(th, NULL);
    CHECK(gpuos_wait(ctx, 20000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    drain_ms = ctest_now_ms() - t0;
    CHECK(gpuos_download(ctx, y4, h, sizeof h) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(h[0] == (float)(tasks / 2) && h[3] == (float)(tasks / 2), "y = %g after %d adds of 1", h[0], tasks / 2);
    /* meaningful only if the drain took far longer than the bound */
    if (define_ms > 600.0)
        CHECK(w.max_ms < 250.0, "a 5 ms gpuos_wait took %.0f ms while a definition waited %.0f ms for the queue",
              w.max_ms, define_ms);
    printf("definition behind %d tasks on 64M floats: %.0f ms (drained by %.0f ms); %ld waits of 5 ms meanwhile, the "
           "longest %.1f ms%s\n",
           tasks, define_ms, drain_ms, w.calls, w.max_ms, define_ms > 600.0 ? "" : " (drain too short to check)");
    gpuos_op_remove(ctx, op);
    gpuos_tensor_release(x);
    gpuos_tensor_release(y);
    gpuos_tensor_release(y4);
    gpuos_tensor_release(zero);
}

/* ---------------------------------------------------------------- faults */
/* Host: a body that never ends stops at the interpreter's iteration limit and fails the
   context (no hang). GPU: a full function that writes through a bad pointer is reported as
   GPUOS_ERR_DEVICE_LOST by the next wait (no hang). Each in a context of its own. */
static void test_fault(int device, int gpu) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx;
    gpuos_op_def d = GPUOS_OP_DEF_INIT;
    gpuos_op op;
    gpuos_tensor *x;
    gpuos_task t = GPUOS_TASK_INIT;
    int64_t n = 256;
    gpuos_status st;
    cfg.device = device;
    cfg.wait_timeout_ms = 20000;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        CHECK(0, "gpuos_create: %s", gpuos_last_error(NULL));
        return;
    }
    d.name = "bad";
    d.n_inputs = 1;
    if (gpu) {
        d.kind = GPUOS_OPDEF_FUNCTION;
        d.source = "__device__ void bad(const gpuos_tile &t) { *(volatile float *)(t.ptr(0, t.begin) - (1ll << 40)) = 1.f; }";
    } else {
        d.source = "int i = 0; while (true) { i = i + 1; } out = a;";
    }
    CHECK(gpuos_op_define(ctx, &d, &op) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &x) == GPUOS_OK, "x");
    t.op = op;
    t.out = x;
    t.in[0] = x;
    st = gpuos_submit(ctx, &t, NULL);
    CHECK(st == GPUOS_OK, "%s", gpuos_last_error(ctx));
    st = gpuos_wait(ctx, 20000);
    CHECK(st == GPUOS_ERR_DEVICE_LOST, "a faulting operator: %s (%s)", gpuos_status_string(st), gpuos_last_error(ctx));
    CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_ERR_DEVICE_LOST, "the failure is sticky");
    gpuos_tensor_release(x);
    gpuos_destroy(ctx);
}

int main(void) {
    rng = ctest_rng(ctest_seed("test_rtops"), rng);
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx;
    int gpu;
    cfg.device = ctest_device();
    cfg.wait_timeout_ms = 1500; /* short: a redefinition below must give up waiting */
    cfg.submit_timeout_ms = 60000;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        fprintf(stderr, "gpuos_create: %s\n", gpuos_last_error(NULL));
        return 1;
    }
    gpu = gpuos_context_backend(ctx) == GPUOS_BACKEND_CUDA;
    test_saxpy(ctx);
    test_dtypes(ctx);
    test_redefine(ctx);
    test_graph_redefine(ctx);
    test_errors(ctx, gpu);
    test_sin_large(ctx);
    test_constants(ctx);
    test_same_source(ctx);
    if (gpu) test_function_names(ctx); /* full device functions: GPU only */
    test_stream_redefine(ctx);
    if (gpu && !getenv("GPUOS_TEST_QUICK")) test_define_behind_queue(ctx); /* the host executor drains nothing to define */
    CHECK(gpuos_context_status(ctx) == GPUOS_OK, "healthy at the end: %s", gpuos_last_error(ctx));
    gpuos_destroy(ctx);
    /* GPUOS_TEST_RT_NOFAULT=1: for compute-sanitizer runs, which would report the deliberate fault */
    if (!(getenv("GPUOS_TEST_RT_NOFAULT") && getenv("GPUOS_TEST_RT_NOFAULT")[0] == '1')) test_fault(cfg.device, gpu);
    return ctest_summary("test_rtops");
}
