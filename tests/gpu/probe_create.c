/* probe_create.c - where gpuos_create's time goes with a filled disk cache (warm_start; not a
   test): the phases the CUDA backend records (open_ns), then the first task until its result,
   for a first and a second context in one process. */
#include "../../gpuos.c"
#include <stdio.h>

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(void) {
    static const char *ph[8] = {"start", "cuInit", "context", "module", "function+occupancy", "streams", "queue", "reaper"};
    int round, k;
    setvbuf(stdout, NULL, _IONBF, 0);
    for (round = 0; round < 3; round++) {
        gpuos_config cfg = GPUOS_CONFIG_INIT;
        gpuos_context *ctx;
        gpuos_tensor *x;
        int64_t n = 1;
        float v = 0;
        double t0 = now_ms(), t1, t2;
        cfg.device = 0;
        if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
            printf("%s\n", gpuos_last_error(NULL));
            return 1;
        }
        t1 = now_ms();
        gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &x);
        gpuos_fill(ctx, x, 2.0);
        gpuos_download(ctx, x, &v, 4);
        t2 = now_ms();
        printf("round %d: create %.2f ms, first result %.2f ms (v=%g); phases:", round, t1 - t0, t2 - t1, v);
        for (k = 1; k < 8; k++)
            printf(" %s %.2f", ph[k], (double)(ctx->cuda->open_ns[k] - (k > 1 ? ctx->cuda->open_ns[k - 1] : 0)) / 1e6);
        printf(" (ms each)\n");
        gpuos_tensor_release(x);
        gpuos_destroy(ctx);
    }
    return 0;
}
