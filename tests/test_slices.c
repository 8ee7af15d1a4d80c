/* test_slices.c - small tasks on parts of what a large task just wrote ($GPUOS_TEST_DEVICE).

   On the GPU a task of one tile whose access lies within one tile of an earlier contiguous
   element-wise access runs on that tile's worker, right after it in the inbox, and waits for
   nothing (src/cuda_backend.c, cuda_encode: GPUOS_CUDA_SUBALIGN); the large task's other tiles
   run elsewhere meanwhile. So the small task must see exactly its tile's new values, a later
   large task must not overwrite what the small one still reads, and a small write into the
   large tensor must land between the large tasks around it. Each round of a random program:
   x = x + c (i32, 1M elements, ~1000 tiles) on all of x, then small tasks on random slices of
   x (inside one tile, across a tile's edge, the first and last elements): copies out, adds of
   two slices, writes into x, small downloads, and now and then x = x * 3 + y over all of it.
   Everything is checked exactly against the same program on the host, in C. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctest.h"
#include "gpuos.h"

#define N (1 << 20)
#define NOUT 8
static uint64_t rng;
static uint32_t rnd(uint32_t n) { return ctest_below(&rng, n); }

static int32_t hx[N], hy[N], got[N];
static int32_t hout[NOUT][64];

/* a random slice [a, a + len) of x: within a 1024-element tile, across an edge, or at an end */
static void pick(int64_t *a, int64_t *len) {
    const uint32_t kind = rnd(4);
    *len = 1 + rnd(64);
    if (kind == 0) { /* inside one tile (if tiles are 1024 elements) */
        const int64_t t = rnd(N / 1024);
        *a = t * 1024 + rnd((uint32_t)(1024 - *len + 1));
    } else if (kind == 1) { /* across a tile edge */
        *a = (int64_t)(1 + rnd(N / 1024 - 1)) * 1024 - (int64_t)rnd((uint32_t)*len);
    } else if (kind == 2) {
        *a = rnd(2) ? 0 : N - *len;
    } else {
        *a = rnd((uint32_t)(N - *len + 1));
    }
    if (*a < 0) *a = 0;
    if (*a + *len > N) *a = N - *len;
}

static void program(gpuos_context *ctx, int rounds) {
    gpuos_tensor *x = NULL, *y = NULL, *c = NULL, *three = NULL, *out[NOUT] = {NULL};
    int64_t n = N, m = 64;
    int r, i, k, bad = 0, nd = 0, baddl = 0;
    CHECK(gpuos_tensor_new(ctx, GPUOS_I32, 1, &n, &x) == GPUOS_OK && gpuos_tensor_new(ctx, GPUOS_I32, 1, &n, &y) == GPUOS_OK &&
              gpuos_tensor_scalar(ctx, GPUOS_I32, 7.0, &c) == GPUOS_OK && gpuos_tensor_scalar(ctx, GPUOS_I32, 3.0, &three) == GPUOS_OK,
          "%s", gpuos_last_error(ctx));
    for (k = 0; k < NOUT; k++) CHECK(gpuos_tensor_new(ctx, GPUOS_I32, 1, &m, &out[k]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    if (!x || !y || !c || !three) return;
    for (i = 0; i < N; i++) hx[i] = (int32_t)rnd(1000), hy[i] = (int32_t)rnd(1000);
    memset(hout, 0, sizeof hout);
    CHECK(gpuos_upload(ctx, x, hx, sizeof hx) == GPUOS_OK && gpuos_upload(ctx, y, hy, sizeof hy) == GPUOS_OK, "%s",
          gpuos_last_error(ctx));
    for (k = 0; k < NOUT; k++) CHECK(gpuos_upload(ctx, out[k], hout[k], sizeof hout[k]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (r = 0; r < rounds; r++) {
        const int small = 1 + (int)rnd(6);
        CHECK(gpuos_add(ctx, x, x, c) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        for (i = 0; i < N; i++) hx[i] = ctest_wrap_add(hx[i], 7);
        for (k = 0; k < small; k++) {
            int64_t a, len, b, len2;
            gpuos_tensor *s = NULL, *s2 = NULL, *o = NULL;
            const int which = (int)rnd(NOUT), form = (int)rnd(5);
            pick(&a, &len);
            if (gpuos_view_slice(x, 0, a, a + len, 1, &s) != GPUOS_OK) {
                CHECK(0, "slice: %s", gpuos_last_error(ctx));
                continue;
            }
            if (form <= 2) { /* out[which][0:len] = x[a:a+len] (+ x[b:b+len]) */
                CHECK(gpuos_view_slice(out[which], 0, 0, len, 1, &o) == GPUOS_OK, "%s", gpuos_last_error(ctx));
                if (form < 2) {
                    CHECK(gpuos_copy(ctx, o, s) == GPUOS_OK, "%s", gpuos_last_error(ctx));
                    for (i = 0; i < len; i++) hout[which][i] = hx[a + i];
                } else {
                    pick(&b, &len2);
                    if (b + len > N) b = N - len;
                    CHECK(gpuos_view_slice(x, 0, b, b + len, 1, &s2) == GPUOS_OK, "%s", gpuos_last_error(ctx));
                    CHECK(gpuos_add(ctx, o, s, s2) == GPUOS_OK, "%s", gpuos_last_error(ctx));
                    for (i = 0; i < len; i++) hout[which][i] = ctest_wrap_add(hx[a + i], hx[b + i]);
                }
            } else if (form == 3) { /* x[a:a+len] += out[which][0:len] (a small write into x) */
                CHECK(gpuos_view_slice(out[which], 0, 0, len, 1, &o) == GPUOS_OK, "%s", gpuos_last_error(ctx));
                CHECK(gpuos_add(ctx, s, s, o) == GPUOS_OK, "%s", gpuos_last_error(ctx));
                for (i = 0; i < len; i++) hx[a + i] = ctest_wrap_add(hx[a + i], hout[which][i]);
            } else { /* a small download of the slice, checked at once */
                int32_t buf[64];
                CHECK(gpuos_download(ctx, s, buf, (size_t)len * sizeof(int32_t)) == GPUOS_OK, "%s", gpuos_last_error(ctx));
                for (i = 0; i < len; i++) baddl += buf[i] != hx[a + i];
                nd++;
            }
            gpuos_tensor_release(s);
            gpuos_tensor_release(s2);
            gpuos_tensor_release(o);
        }
        if (rnd(8) == 0) { /* x = x * 3 + y over all of it */
            CHECK(gpuos_mul(ctx, x, x, three) == GPUOS_OK && gpuos_add(ctx, x, x, y) == GPUOS_OK, "%s", gpuos_last_error(ctx));
            for (i = 0; i < N; i++) hx[i] = ctest_wrap_add(ctest_wrap_mul(hx[i], 3), hy[i]);
        }
    }
    CHECK(baddl == 0, "%d elements of %d small downloads differ from the reference", baddl, nd);
    CHECK(gpuos_download(ctx, x, got, sizeof got) == GPUOS_OK, "%s", gpuos_last_error(ctx));
    for (i = 0; i < N; i++) bad += got[i] != hx[i];
    CHECK(bad == 0, "x after %d rounds: %d of %d elements differ from the reference", rounds, bad, N);
    for (k = 0; k < NOUT; k++) {
        int b2 = 0;
        CHECK(gpuos_download(ctx, out[k], got, sizeof hout[k]) == GPUOS_OK, "%s", gpuos_last_error(ctx));
        for (i = 0; i < 64; i++) b2 += got[i] != hout[k][i];
        CHECK(b2 == 0, "out[%d] after %d rounds: %d of 64 elements differ from the reference", k, rounds, b2);
    }
    gpuos_tensor_release(x);
    gpuos_tensor_release(y);
    gpuos_tensor_release(c);
    gpuos_tensor_release(three);
    for (k = 0; k < NOUT; k++) gpuos_tensor_release(out[k]);
}

int main(void) {
    const unsigned long long seed = ctest_seed("test_slices");
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx;
    int p;
    const int programs = getenv("GPUOS_TEST_QUICK") ? 1 : 6; /* sanitizers: every tensor made before the kernel runs */
    rng = ctest_rng(seed, 1);
    cfg.device = ctest_device();
    cfg.wait_timeout_ms = 20000;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        fprintf(stderr, "gpuos_create: %s\n", gpuos_last_error(NULL));
        return 1;
    }
    for (p = 0; p < programs; p++) program(ctx, 60);
    CHECK(gpuos_context_status(ctx) == GPUOS_OK, "healthy: %s", gpuos_last_error(ctx));
    printf("%d programs of 60 rounds on %s\n", programs,
           gpuos_context_backend(ctx) == GPUOS_BACKEND_CUDA ? "the device" : "the host executor");
    gpuos_destroy(ctx);
    return ctest_summary("test_slices");
}
