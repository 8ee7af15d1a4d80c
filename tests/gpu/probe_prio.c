/* probe_prio.c - where a short high-priority job waits behind a long normal one (not a
   test): the bench's priority_latency shape (3000 in-place adds on 1M floats, then five
   high-priority adds on 4096 floats 300 us later), with and without a run-time operator
   defined and removed before (as the bench's swap rows leave the context), printing per
   sample the short job's lane (from the device sequence numbers), whether the run-time
   kernel runs beside, and the latency. Includes gpuos.c to read the CUDA backend's state. */
#include "../../gpuos.c"
#include "probe_prof.h"
#include <stdio.h>
#include <time.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void sample(gpuos_context *ctx, gpuos_tensor *x, gpuos_tensor *y, gpuos_tensor *one, const char *what) {
    struct gpuos__cuda *c = ctx->cuda;
    unsigned long long p0[GPUOS__PROF_N], p1[GPUOS__PROF_N];
    for (int r = 0; r < 8; r++) {
        const double tl = now_us();
        if (r == 1) prof_read(ctx, p0);
        for (int i = 0; i < 3000; i++) gpuos_add(ctx, x, x, one);
        struct timespec ts = {0, 300000};
        nanosleep(&ts, NULL);
        const uint64_t d0 = c->dseq[0], d1 = c->dseq[1];
        uint64_t seq = 0;
        const double t0 = now_us();
        for (int i = 0; i < 5; i++) {
            gpuos_task k = GPUOS_TASK_INIT;
            k.op = GPUOS_OP_ADD, k.out = y, k.in[0] = y, k.in[1] = one, k.priority = GPUOS_PRIORITY_HIGH;
            gpuos_submit(ctx, &k, &seq);
        }
        const double t1 = now_us();
        gpuos_wait_task(ctx, seq, 10000);
        const double t2 = now_us();
        /* GPUOS_CUDA_TIMESTAMPS=1: lane 1's fetcher pushed [6] -> its retirer retired [7] */
        const uint64_t s6 = c->ctl->stamp[6], s7 = c->ctl->stamp[7];
        printf("%s: lane-0 tasks +%llu lane-1 +%llu, n_rt %u, submit %.1f us, latency %.1f us, lane-1 pushed -> retired "
               "%.1f us\n",
               what, (unsigned long long)(c->dseq[0] - d0), (unsigned long long)(c->dseq[1] - d1), c->P.n_rt, t1 - t0,
               t2 - t0, s7 > s6 ? (double)(s7 - s6) / 1e3 : -1.0);
        gpuos_wait(ctx, 20000);
        if (r == 1) { /* the worker counters of one round (long job and short job) */
            prof_read(ctx, p1);
            prof_report(what, p0, p1, now_us() - tl, 3005, "task");
        }
    }
}

int main(void) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx;
    gpuos_tensor *x, *y, *one, *z;
    int64_t nx = 1 << 20, ny = 4096, nz = 64;
    cfg.device = 0;
    setenv("GPUOS_CUDA_TIMESTAMPS", "1", 1); /* the stamps below */
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        printf("probe_prio: %s\n", gpuos_last_error(NULL));
        return 1;
    }
    gpuos_tensor_new(ctx, GPUOS_F32, 1, &nx, &x);
    gpuos_tensor_new(ctx, GPUOS_F32, 1, &ny, &y);
    gpuos_tensor_new(ctx, GPUOS_F32, 1, &nz, &z);
    gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one);
    gpuos_fill(ctx, x, 0.0), gpuos_fill(ctx, y, 0.0), gpuos_fill(ctx, z, 0.0);
    gpuos_wait(ctx, 10000);
    sample(ctx, x, y, one, "plain");
    {
        gpuos_op_def d = GPUOS_OP_DEF_INIT;
        gpuos_op op;
        gpuos_task t = GPUOS_TASK_INIT;
        d.name = "probe_prio_op", d.source = "out = a + 1.0f;", d.n_inputs = 1;
        d.out_dtype = d.in_dtype[0] = GPUOS_F32;
        if (gpuos_op_define(ctx, &d, &op) != GPUOS_OK) printf("define: %s\n", gpuos_last_error(ctx));
        t.op = op, t.out = z, t.in[0] = z;
        gpuos_submit(ctx, &t, NULL);
        gpuos_wait(ctx, 10000);
        sample(ctx, x, y, one, "op defined");
        if (gpuos_op_remove(ctx, op) != GPUOS_OK) printf("remove: %s\n", gpuos_last_error(ctx));
        sample(ctx, x, y, one, "op removed");
    }
    printf("status: %s\n", gpuos_context_status(ctx) == GPUOS_OK ? "ok" : gpuos_last_error(ctx));
    gpuos_destroy(ctx);
    return 0;
}
