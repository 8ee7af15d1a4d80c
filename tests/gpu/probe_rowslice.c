/* probe_rowslice.c - a fused few-row layer of the GPU's row tiles (not a test): a recorded
   graph of [8, 256] @ [256, N] + bias, gelu (one fused task), launched back to back, us a
   launch (median of 300) for N = 256 .. 2048. Run it with GPUOS_CUDA_MM_SLICES=0 (whole row
   tiles: each row streams all of B) and =2 (64-column slices: B streamed by N / 64 blocks) to
   compare; the default cuts rows where N >= 512. Device 0. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "gpuos.h"

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static int cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(void) {
    static const int64_t Ns[] = {256, 512, 1024, 2048};
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx;
    int i, r;
    cfg.device = 0;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        printf("probe_rowslice: %s\n", gpuos_last_error(NULL));
        return 1;
    }
    for (i = 0; i < 4; i++) {
        const int64_t N = Ns[i];
        int64_t sx[2] = {8, 256}, sw[2] = {256, N}, sh[2] = {8, N}, sb[1] = {N};
        gpuos_tensor *x, *w, *h, *bias;
        gpuos_graph *g;
        gpuos_task t = GPUOS_TASK_INIT;
        double us[300];
        uint64_t seq;
        gpuos_tensor_new(ctx, GPUOS_F32, 2, sx, &x), gpuos_tensor_new(ctx, GPUOS_F32, 2, sw, &w);
        gpuos_tensor_new(ctx, GPUOS_F32, 2, sh, &h), gpuos_tensor_new(ctx, GPUOS_F32, 1, sb, &bias);
        gpuos_fill(ctx, x, 0.5), gpuos_fill(ctx, w, 0.01), gpuos_fill(ctx, bias, 0.1);
        gpuos_graph_create(ctx, &g);
        t.op = GPUOS_OP_MATMUL, t.out = h, t.in[0] = x, t.in[1] = w;
        gpuos_graph_add(g, &t, NULL);
        t.op = GPUOS_OP_ADD, t.in[0] = h, t.in[1] = bias;
        gpuos_graph_add(g, &t, NULL);
        t.op = GPUOS_OP_GELU, t.in[1] = NULL;
        gpuos_graph_add(g, &t, NULL);
        for (r = -20; r < 300; r++) {
            const double t0 = now_us();
            if (gpuos_graph_launch(g, NULL, 0, NULL, 0, &seq) != GPUOS_OK || gpuos_wait_fence(ctx, seq, 10000) != GPUOS_OK) {
                printf("launch: %s\n", gpuos_last_error(ctx));
                return 1;
            }
            if (r >= 0) us[r] = now_us() - t0;
        }
        qsort(us, 300, sizeof *us, cmp);
        {
            static float hh[8 * 2048];
            const float v = gpuos_download(ctx, h, hh, sizeof(float) * 8 * (size_t)N) == GPUOS_OK ? hh[0] : -1.0f;
            printf("[8,256] @ [256,%4lld] + bias, gelu (%d task%s): %7.2f us a launch (p10 %.2f, p90 %.2f); h[0] %.6f (gelu(1.38) = 1.2638)\n",
                   (long long)N, gpuos_debug_graph_tasks(g), gpuos_debug_graph_tasks(g) == 1 ? "" : "s", us[150], us[30],
                   us[270], v);
        }
        gpuos_graph_release(g);
        gpuos_tensor_release(x), gpuos_tensor_release(w), gpuos_tensor_release(h), gpuos_tensor_release(bias);
    }
    printf("status: %s\n", gpuos_context_status(ctx) == GPUOS_OK ? "ok" : gpuos_last_error(ctx));
    gpuos_destroy(ctx);
    return 0;
}
