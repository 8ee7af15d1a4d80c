/* probe_pool.c - submission cost against the number of distinct repeated tasks (not a test):
   y_k = x_k + one over P pairs of 4096-float tensors in turn, P = 256 .. 8192, one thread; the
   repeat table (GPUOS__TCACHE entries, or GPUOS_REPEAT_TABLE) holds some P and not others.
   Device $PROBE_DEVICE (default 0; -1: the host executor). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "gpuos.h"
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
int main(void) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx;
    gpuos_tensor **x, **y, *one;
    const char *dv = getenv("PROBE_DEVICE");
    int64_t n = 4096;
    int P, i, r;
    cfg.device = dv ? atoi(dv) : 0;
    cfg.queue_capacity = 1u << 17;
    cfg.submit_timeout_ms = 60000;
    cfg.wait_timeout_ms = 60000;
    if (gpuos_create(&cfg, &ctx)) { printf("%s\n", gpuos_last_error(NULL)); return 1; }
    printf("backend %d (0 host, 1 GPU)\n", (int)gpuos_context_backend(ctx));
    gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one);
    x = (gpuos_tensor **)calloc(8192, sizeof *x);
    y = (gpuos_tensor **)calloc(8192, sizeof *y);
    for (i = 0; i < 8192; i++)
        if (gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &x[i]) || gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &y[i])) {
            printf("%s\n", gpuos_last_error(ctx));
            return 1;
        }
    for (P = 256; P <= 8192; P *= 2) {
        int N = P * 8 < 200000 ? 200000 / P * P : P * 8;
        double best = 1e30, t0, t1;
        for (i = 0; i < 2 * P; i++) gpuos_add(ctx, y[i % P], x[i % P], one);
        gpuos_wait(ctx, 60000);
        for (r = 0; r < 3; r++) {
            t0 = now();
            for (i = 0; i < N; i++)
                if (gpuos_add(ctx, y[i % P], x[i % P], one)) { printf("%s\n", gpuos_last_error(ctx)); return 1; }
            gpuos_wait(ctx, 60000);
            t1 = now();
            if ((t1 - t0) / N < best) best = (t1 - t0) / N;
        }
        {   /* submission alone: the executor paused, up to 100000 tasks queued */
            int M = 100000 / P * P, q;
            double sb = 1e30;
            for (r = 0; r < 3; r++) {
                gpuos_debug_pause(ctx, 1);
                t0 = now();
                for (i = 0; i < M; i++)
                    if (gpuos_add(ctx, y[i % P], x[i % P], one)) { printf("%s\n", gpuos_last_error(ctx)); return 1; }
                t1 = now();
                gpuos_debug_pause(ctx, 0);
                gpuos_wait(ctx, 60000);
                if ((t1 - t0) / M < sb) sb = (t1 - t0) / M;
            }
            q = M;
            printf("P %5d distinct tasks: %.3f us/op (%.2f M ops/s) submitted and run; %.3f us/op submitted "
                   "with the executor paused (%d tasks); best of 3\n", P, best, 1.0 / best, sb, q);
        }
    }
    gpuos_destroy(ctx);
    return 0;
}
