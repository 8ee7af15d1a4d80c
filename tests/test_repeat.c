/* test_repeat.c - repeated submissions (gpuos_submit copies the job of an identical recent
   task instead of planning it again, src/queue.c): on the device the tests run on, every
   kind of change between two otherwise identical submissions must be seen - another
   tensor at a reused handle address (new shape, dtype, view), other scalars and
   parameters, another priority - an invalid task stays an error however often it is
   submitted, a long random program of repeats over many tensors equals the same program
   computed in C, exactly (once on the default table, once on a table of 16 entries, where
   entries are taken over all the time: GPUOS_REPEAT_TABLE), and so do repeats back to back
   broken by every event that must end the GPU encoder's repeat of a descriptor. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctest.h"
#include "gpuos.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint32_t urand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}

static gpuos_tensor *tensor1(gpuos_context *ctx, gpuos_dtype dt, int64_t n) {
    gpuos_tensor *t = NULL;
    CHECK(gpuos_tensor_new(ctx, dt, 1, &n, &t) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    return t;
}

static void upload_i32(gpuos_context *ctx, gpuos_tensor *t, const int32_t *v, int64_t n) {
    CHECK(gpuos_upload(ctx, t, v, (size_t)n * sizeof *v) == GPUOS_OK, "%s", gpuos_last_error(ctx));
}

static void download_i32(gpuos_context *ctx, gpuos_tensor *t, int32_t *v, int64_t n) {
    CHECK(gpuos_download(ctx, t, v, (size_t)n * sizeof *v) == GPUOS_OK, "%s", gpuos_last_error(ctx));
}

/* A handle released and its address reused by a tensor of another shape and dtype: the
   repeat must not run the old job (the uid differs). */
static void test_reused_handle(gpuos_context *ctx) {
    int round, i;
    for (round = 0; round < 20; round++) {
        const int64_t n = 1 + (int64_t)(urand() % 3000);
        gpuos_tensor *a = tensor1(ctx, GPUOS_I32, n), *b = tensor1(ctx, GPUOS_I32, n);
        int32_t *va = (int32_t *)malloc((size_t)n * 4), *vb = (int32_t *)malloc((size_t)n * 4);
        int32_t *r = (int32_t *)malloc((size_t)n * 4);
        for (i = 0; i < n; i++) va[i] = (int32_t)(urand() % 1000) - 500, vb[i] = (int32_t)(urand() % 1000) - 500;
        upload_i32(ctx, a, va, n);
        upload_i32(ctx, b, vb, n);
        CHECK(gpuos_add(ctx, b, a, b) == GPUOS_OK, "%s", gpuos_last_error(ctx)); /* b = a + b, twice */
        CHECK(gpuos_add(ctx, b, a, b) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        download_i32(ctx, b, r, n);
        for (i = 0; i < n && r[i] == vb[i] + 2 * va[i]; i++) {
        }
        CHECK(i == n, "round %d: b = a + b twice at %d: %d, not %d", round, i, r[i % n], vb[i % n] + 2 * va[i % n]);
        gpuos_tensor_release(a); /* the next round's tensors may get these addresses */
        gpuos_tensor_release(b);
        free(va);
        free(vb);
        free(r);
    }
}

/* The same handles with other scalars and parameters, and another dtype's view. */
static void test_parameters(gpuos_context *ctx) {
    const int64_t n = 64;
    gpuos_tensor *x = tensor1(ctx, GPUOS_F32, n), *s = NULL, *m = NULL, *v = NULL;
    int64_t two[2] = {8, 8};
    float h[64], out[8];
    int i, k;
    for (i = 0; i < n; i++) h[i] = (float)i;
    CHECK(gpuos_upload(ctx, x, h, sizeof h) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    /* fill with changing values through the same task: scalar[0] is part of the key */
    for (k = 0; k < 5; k++) {
        gpuos_task t = GPUOS_TASK_INIT;
        t.op = GPUOS_OP_FILL;
        t.out = x;
        t.scalar[0] = (double)(k * 3 + 1);
        CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_download(ctx, x, h, sizeof h) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        for (i = 0; i < n && h[i] == (float)(k * 3 + 1); i++) {
        }
        CHECK(i == n, "fill %d: x[%d] = %g", k * 3 + 1, i, (double)h[i % n]);
    }
    /* a sum over axis 0, then over axis 1, of one 8x8 view: axes is part of the key */
    for (i = 0; i < n; i++) h[i] = (float)i;
    CHECK(gpuos_upload(ctx, x, h, sizeof h) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_view_reshape(x, 2, two, &m) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    s = tensor1(ctx, GPUOS_F32, 8);
    for (k = 0; k < 4; k++) {
        const int axis = k & 1;
        gpuos_task t = GPUOS_TASK_INIT;
        t.op = GPUOS_OP_SUM;
        t.out = s;
        t.in[0] = m;
        t.axes = 1u << axis;
        CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        CHECK(gpuos_download(ctx, s, out, sizeof out) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        for (i = 0; i < 8; i++) {
            float want = 0.f;
            int j;
            for (j = 0; j < 8; j++) want += axis == 0 ? (float)(j * 8 + i) : (float)(i * 8 + j);
            if (out[i] != want) break;
        }
        CHECK(i == 8, "sum over axis %d: element %d is %g", axis, i, (double)out[i % 8]);
    }
    /* a transposed view at the same address as the plain one, made after it was released */
    gpuos_tensor_release(m);
    CHECK(gpuos_view_reshape(x, 2, two, &m) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    CHECK(gpuos_view_transpose(m, 0, 1, &v) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    {
        gpuos_tensor *o = NULL;
        float ho[64];
        CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 2, two, &o) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        for (k = 0; k < 2; k++) { /* o = m + m, then o = v + v (a new view each time) */
            gpuos_tensor *src = k == 0 ? m : v;
            CHECK(gpuos_add(ctx, o, src, src) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            CHECK(gpuos_download(ctx, o, ho, sizeof ho) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            for (i = 0; i < 64; i++) {
                const int r = i / 8, c = i % 8;
                if (ho[i] != 2.f * (float)(k == 0 ? r * 8 + c : c * 8 + r)) break;
            }
            CHECK(i == 64, "view %d: o[%d] = %g", k, i, (double)ho[i % 64]);
        }
        gpuos_tensor_release(o);
    }
    gpuos_tensor_release(v);
    gpuos_tensor_release(m);
    gpuos_tensor_release(s);
    gpuos_tensor_release(x);
}

/* An invalid task stays an error every time; a valid one with a bad priority too. */
static void test_errors(gpuos_context *ctx) {
    gpuos_tensor *a = tensor1(ctx, GPUOS_F32, 16), *b = tensor1(ctx, GPUOS_F32, 17), *c = tensor1(ctx, GPUOS_I32, 16);
    int k;
    for (k = 0; k < 3; k++) {
        CHECK(gpuos_add(ctx, a, a, b) == GPUOS_ERR_SHAPE_MISMATCH, "shapes 16 and 17: %s", gpuos_last_error(ctx));
        CHECK(gpuos_add(ctx, a, a, c) == GPUOS_ERR_DTYPE_MISMATCH, "f32 + i32: %s", gpuos_last_error(ctx));
        CHECK(gpuos_add(ctx, a, a, a) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        {
            gpuos_task t = GPUOS_TASK_INIT;
            t.op = GPUOS_OP_ADD;
            t.out = a;
            t.in[0] = a;
            t.in[1] = a;
            t.priority = 7;
            CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_ERR_INVALID_ARGUMENT, "priority 7: %s", gpuos_last_error(ctx));
            t.priority = GPUOS_PRIORITY_HIGH;
            CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        }
    }
    CHECK(gpuos_wait(ctx, 60000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    gpuos_tensor_release(a);
    gpuos_tensor_release(b);
    gpuos_tensor_release(c);
}

/* A random program of in-place and out-of-place integer ops over more tensors than the
   table holds, every task a repeat of an earlier one with good odds, against C. */
static void test_random_program(gpuos_context *ctx) {
    enum { NT = 700, N = 96, STEPS = 20000 };
    static int32_t ref[NT][N], got[N];
    gpuos_tensor *t[NT];
    int body[64][4];
    int i, k, bad = 0;
    for (k = 0; k < NT; k++) {
        t[k] = tensor1(ctx, GPUOS_I32, N);
        for (i = 0; i < N; i++) ref[k][i] = (int32_t)(urand() % 100);
        upload_i32(ctx, t[k], ref[k], N);
    }
    for (k = 0; k < 64; k++) /* a loop body: 64 instructions over 24 tensors */
        body[k][0] = (int)(urand() % 3), body[k][1] = (int)(urand() % 24), body[k][2] = (int)(urand() % 24),
        body[k][3] = (int)(urand() % 24);
    for (i = 0; i < STEPS; i++) {
        /* mostly an instruction of the body (a repeat), sometimes any op on any tensors
           (they push the body's jobs out of the table) */
        const int pick = (urand() % 8) ? (int)(urand() % 64) : -1;
        const int op = pick >= 0 ? body[pick][0] : (int)(urand() % 3);
        const int o = pick >= 0 ? body[pick][1] : (int)(urand() % NT);
        const int a = pick >= 0 ? body[pick][2] : (int)(urand() % NT);
        const int b = pick >= 0 ? body[pick][3] : (int)(urand() % NT);
        gpuos_status st = op == 0 ? gpuos_add(ctx, t[o], t[a], t[b])
                        : op == 1 ? gpuos_sub(ctx, t[o], t[a], t[b])
                                  : gpuos_maximum(ctx, t[o], t[a], t[b]);
        int j;
        CHECK(st == GPUOS_OK, "step %d: %s", i, gpuos_last_error(ctx));
        for (j = 0; j < N; j++) {
            const int32_t x = ref[a][j], y = ref[b][j];
            /* wrapping, as the device does; the values stay small enough anyway */
            ref[o][j] = op == 0 ? ctest_wrap_add(x, y)
                      : op == 1 ? ctest_wrap_sub(x, y)
                                : (x > y ? x : y);
        }
    }
    for (k = 0; k < NT; k++) {
        download_i32(ctx, t[k], got, N);
        if (memcmp(got, ref[k], sizeof got) != 0) bad++;
        gpuos_tensor_release(t[k]);
    }
    CHECK(bad == 0, "%d of %d tensors differ from C after %d random steps", bad, NT, STEPS);
}

/* Repeats (on a GPU the encoder repeats a task's last descriptor when nothing that decided it
   changed: cuda_encode_repeat), back to back and round robin over a few tensors that share
   the read operand, broken by every event that must end such a repeat: a write of the read
   operand, a reader, a high-priority task (lane 1), a graph launch of the same task, the
   kernel leaving after idle_ms (every wait below lets it), and another task on the same
   tensor; int32, exact against C. */
static void test_back_to_back(void) {
    enum { N = 5000, NX = 6, STEPS = 6000 };
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx = NULL;
    gpuos_tensor *x[NX], *y, *s, *one, *two;
    gpuos_graph *g;
    static int32_t hx[NX][N], hy[N], got[N];
    int32_t vone = 1;
    int i, j, step, checks = 0, cur = 0;
    cfg.device = ctest_device();
    cfg.idle_ms = 2;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        CHECK(0, "gpuos_create: %s", gpuos_last_error(NULL));
        return;
    }
    for (j = 0; j < NX; j++) x[j] = tensor1(ctx, GPUOS_I32, N);
    y = tensor1(ctx, GPUOS_I32, N);
    one = tensor1(ctx, GPUOS_I32, 1), two = tensor1(ctx, GPUOS_I32, 1), s = tensor1(ctx, GPUOS_I32, 1);
    for (j = 0; j < NX; j++) {
        for (i = 0; i < N; i++) hx[j][i] = (int32_t)(urand() % 1000);
        upload_i32(ctx, x[j], hx[j], N);
    }
    for (i = 0; i < N; i++) hy[i] = (int32_t)(urand() % 1000);
    upload_i32(ctx, y, hy, N);
    upload_i32(ctx, one, &vone, 1);
    {
        int32_t v = 2;
        upload_i32(ctx, two, &v, 1);
    }
    CHECK(gpuos_graph_create(ctx, &g) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    {
        gpuos_task t = GPUOS_TASK_INIT;
        t.op = GPUOS_OP_ADD, t.out = x[0], t.in[0] = x[0], t.in[1] = one;
        CHECK(gpuos_graph_add(g, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    }
    for (step = 0; step < STEPS; step++) {
        const uint32_t r = urand() % 100;
        if (step % 1500 == 0) cur = 0;
        if (r < 80) { /* the repeat: x[cur] += one; cur stays (back to back) or moves on (round robin) */
            if (step >= 3000 || urand() % 4 == 0) cur = (cur + 1) % NX;
            CHECK(gpuos_add(ctx, x[cur], x[cur], one) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            for (i = 0; i < N; i++) hx[cur][i] += vone;
        } else if (r < 84) { /* the read operand changes: one += two */
            CHECK(gpuos_add(ctx, one, one, two) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            vone += 2;
        } else if (r < 88) { /* a reader of x[cur] */
            int64_t ax = 0;
            CHECK(gpuos_sum(ctx, s, x[cur], NULL, 0, 1) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            for (i = 0; i < N; i++) ax += hx[cur][i];
            download_i32(ctx, s, got, 1);
            CHECK(got[0] == (int32_t)ax, "step %d: sum %d, expected %d", step, got[0], (int32_t)ax);
        } else if (r < 92) { /* high priority: y += one (lane 1 when nothing it touches is pending) */
            gpuos_task t = GPUOS_TASK_INIT;
            t.op = GPUOS_OP_ADD, t.out = y, t.in[0] = y, t.in[1] = one, t.priority = GPUOS_PRIORITY_HIGH;
            CHECK(gpuos_submit(ctx, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            for (i = 0; i < N; i++) hy[i] += vone;
        } else if (r < 95) { /* the same task as x[0]'s, as a graph launch */
            CHECK(gpuos_graph_launch(g, NULL, 0, NULL, 0, NULL) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            for (i = 0; i < N; i++) hx[0][i] += vone;
        } else if (r < 97) { /* the kernel leaves after idle_ms */
            struct timespec ts = {0, 5000000};
            CHECK(gpuos_wait(ctx, 60000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            nanosleep(&ts, NULL);
        } else { /* x[cur] += one through another view of one: another task on the same tensors */
            gpuos_tensor *v = NULL;
            CHECK(gpuos_view_slice(one, 0, 0, 1, 1, &v) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            CHECK(gpuos_add(ctx, x[cur], x[cur], v) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            for (i = 0; i < N; i++) hx[cur][i] += vone;
            gpuos_tensor_release(v);
        }
        if (step % 500 == 499) {
            download_i32(ctx, x[cur], got, N);
            for (i = 0; i < N && got[i] == hx[cur][i]; i++) continue;
            CHECK(i == N, "step %d: x[%d][%d] = %d, expected %d", step, cur, i, i < N ? got[i] : 0, i < N ? hx[cur][i] : 0);
            checks++;
        }
    }
    for (j = 0; j < NX; j++) {
        download_i32(ctx, x[j], got, N);
        for (i = 0; i < N && got[i] == hx[j][i]; i++) continue;
        CHECK(i == N, "end: x[%d][%d] = %d, expected %d", j, i, i < N ? got[i] : 0, i < N ? hx[j][i] : 0);
    }
    download_i32(ctx, y, got, N);
    for (i = 0; i < N && got[i] == hy[i]; i++) continue;
    CHECK(i == N, "end: y[%d] = %d, expected %d", i, i < N ? got[i] : 0, i < N ? hy[i] : 0);
    CHECK(checks == STEPS / 500, "checks");
    gpuos_graph_release(g);
    for (j = 0; j < NX; j++) gpuos_tensor_release(x[j]);
    gpuos_tensor_release(y), gpuos_tensor_release(s);
    gpuos_tensor_release(one), gpuos_tensor_release(two);
    gpuos_destroy(ctx);
}

int main(void) {
    rng = ctest_rng(ctest_seed("test_repeat"), rng);
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx = NULL;
    cfg.device = ctest_device();
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        fprintf(stderr, "test_repeat: %s\n", gpuos_last_error(NULL));
        return 1;
    }
    test_reused_handle(ctx);
    test_parameters(ctx);
    test_errors(ctx);
    test_random_program(ctx);
    CHECK(gpuos_wait(ctx, 60000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    gpuos_destroy(ctx);
    /* again with a repeat table of 16 entries (GPUOS_REPEAT_TABLE): the body's 64 tasks no
       longer fit, so entries are taken over all the time while their jobs are queued */
    setenv("GPUOS_REPEAT_TABLE", "16", 1);
    ctx = NULL;
    CHECK(gpuos_create(&cfg, &ctx) == GPUOS_OK, "a context with a 16-entry repeat table: %s", gpuos_last_error(NULL));
    unsetenv("GPUOS_REPEAT_TABLE");
    if (ctx) {
        test_reused_handle(ctx);
        test_parameters(ctx);
        test_random_program(ctx);
        CHECK(gpuos_wait(ctx, 60000) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        gpuos_destroy(ctx);
    }
    test_back_to_back();
    return ctest_summary("test_repeat");
}
