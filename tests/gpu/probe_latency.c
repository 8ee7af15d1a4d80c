/* probe_latency.c - where one small task's round trip goes on this GPU (not a test).
   Runs with GPUOS_CUDA_TIMESTAMPS=1 (the kernel stamps %globaltimer when the fetcher
   has pushed a batch, when a worker flushed its done counts, and when the retirer
   retired), and compares with the host's CLOCK_REALTIME, which %globaltimer tracks
   on Linux to within about a microsecond. Prints medians of 200 round trips:
   submit->fetched, fetched->done, done->retired, retired->host saw it. */
#include "../../gpuos.c"
#include "probe_prof.h"
#include <stdio.h>

#define R 200
int main(void) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx;
    gpuos_tensor *x, *one;
    int64_t n = 4096;
    double a[8][R];
    setenv("GPUOS_CUDA_TIMESTAMPS", "1", 1);
    cfg.device = 0;
    cfg.idle_ms = 10000;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        printf("probe_latency: %s\n", gpuos_last_error(NULL));
        return 1;
    }
    gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &x);
    gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one);
    volatile uint64_t *st = ctx->cuda->ctl->stamp;
    /* %globaltimer and CLOCK_REALTIME differ by an offset: the host-side intervals are
       reported as their sum (submit->seen + retired->host), the device ones exactly */
    unsigned long long pa[GPUOS__PROF_N], pb[GPUOS__PROF_N];
    uint64_t tp0 = 0;
    for (int i = 0; i < R + 20; i++) {
        if (i == 20) prof_read(ctx, pa), tp0 = rt_ns();
        uint64_t t0 = rt_ns();
        gpuos_add(ctx, x, x, one);
        gpuos_wait(ctx, 1000);
        uint64_t t3 = rt_ns();
        if (i >= 20) {
            const int j = i - 20;
            a[0][j] = (double)((int64_t)(st[0] - t0) + (int64_t)(t3 - st[5])) / 1e3;
            a[1][j] = (double)(int64_t)(st[1] - st[0]) / 1e3;
            a[2][j] = (double)(int64_t)(st[2] - st[1]) / 1e3;
            a[3][j] = (double)(int64_t)(st[3] - st[2]) / 1e3;
            a[4][j] = (double)(int64_t)(st[4] - st[3]) / 1e3;
            a[5][j] = (double)(int64_t)(st[5] - st[4]) / 1e3;
            a[6][j] = (double)(t3 - t0) / 1e3;
        }
    }
    prof_read(ctx, pb);
    /* the cycle counters (worker entries, fetcher batches) over the R timed round trips */
    prof_report("round trips", pa, pb, (double)(rt_ns() - tp0) / 1e3, R, "trip");
    const char *names[7] = {"host: submit->slot seen + retired->host saw", "fetch: seen->pushed",
                            "worker: pushed->entry seen", "worker: entry seen->tiles run", "worker: run->done flushed",
                            "retire: done->retired", "total round trip"};
    for (int k = 0; k < 7; k++) {
        qsort(a[k], R, sizeof(double), cmp_d);
        printf("INFO latency %-45s us: median %6.2f  p10 %6.2f  p90 %6.2f\n", names[k], a[k][R / 2], a[k][R / 10],
               a[k][R * 9 / 10]);
    }
    gpuos_tensor_release(x);
    gpuos_tensor_release(one);
    gpuos_destroy(ctx);
    return 0;
}
