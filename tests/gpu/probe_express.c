/* probe_express.c - where a task and a small download of its result go, with express tasks
   on (GPUOS_CUDA_EXPRESS=4) and off, in one process (not a test). With GPUOS_CUDA_TIMESTAMPS=1
   the kernel stamps %globaltimer (which tracks CLOCK_REALTIME to about a microsecond) when
   the fetcher saw and pushed a batch, a worker saw an entry, ran and flushed it, and the
   retirer retired; an express task run from the mailbox: when the express worker claimed
   it (as "worker saw"), ran it and wrote its finish word (as "flushed"). Prints medians over R
   rounds of x = x + 1 then a 4-byte download of x[0] (or a gpuos_wait: the round trip alone),
   as times from the round's start (us). */
#include "../../gpuos.c"
#include "probe_prof.h"
#include <stdio.h>

#define R 400
static double med(double *v) {
    qsort(v, R, sizeof *v, cmp_d);
    return v[R / 2];
}
static void run(const char *express, int dl) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx;
    gpuos_tensor *x, *one, *x0;
    int64_t n = 4096;
    static double a[10][R];
    setenv("GPUOS_CUDA_EXPRESS", express, 1);
    cfg.device = 0;
    cfg.idle_ms = 10000;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        printf("probe_express: %s\n", gpuos_last_error(NULL));
        return;
    }
    gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &x);
    gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one);
    gpuos_view_slice(x, 0, 0, 1, 1, &x0);
    volatile uint64_t *st = ctx->cuda->ctl->stamp;
    for (int i = 0; i < R + 50; i++) {
        float got;
        const uint64_t t0 = rt_ns();
        gpuos_add(ctx, x, x, one);
        const uint64_t t1 = rt_ns();
        if (dl) gpuos_download(ctx, x0, &got, sizeof got);
        else gpuos_wait(ctx, 10000);
        const uint64_t t2 = rt_ns();
        if (i >= 50) {
            const int j = i - 50;
            a[0][j] = (double)(t1 - t0) / 1e3;
            a[1][j] = (double)(t2 - t0) / 1e3;
            for (int k = 0; k < 6; k++) a[2 + k][j] = (double)(int64_t)(st[k] - t0) / 1e3;
        }
    }
    uint64_t sent = 0, ran = 0;
    gpuos_debug_express(ctx, &sent, &ran);
    printf("express=%s (sent %llu, run from the mailbox %llu): add submitted %.2f, %s %.2f; "
           "last batch: fetcher saw %.2f pushed %.2f, worker saw %.2f ran %.2f flushed %.2f, retired %.2f us\n",
           express, (unsigned long long)sent, (unsigned long long)ran, med(a[0]), dl ? "download back" : "waited",
           med(a[1]), med(a[2]), med(a[3]),
           med(a[4]), med(a[5]), med(a[6]), med(a[7]));
    gpuos_destroy(ctx);
}
int main(void) {
    setenv("GPUOS_CUDA_TIMESTAMPS", "1", 1);
    for (int dl = 0; dl < 2; dl++) {
        run("0", dl);
        run("4", dl);
        run("0", dl);
        run("4", dl);
    }
    return 0;
}
