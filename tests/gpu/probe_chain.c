/* probe_chain.c - where a chain of dependent element-wise tasks spends its time in the
   worker blocks (not a test). Runs with GPUOS_CUDA_TIMESTAMPS=1, whose kernel sums clock64
   cycles per phase over every worker (gpuos__pk_params.prof), and prints them per task:
   the bench's `chain` (1000 in-place x = x + 1 on 4096 floats), then `independent`
   (out_k = in_k + 1 over 256 tensors), each submitted from one thread, then the bench's
   `pipeline_jobs` (graphs of copy-in from pinned memory, 20 adds, copy-out; 8 in flight). */
#include "../../gpuos.c"
#include <stdio.h>

#include "probe_prof.h"

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(void) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx;
    gpuos_tensor *x, *one, *in[256], *out[256];
    int64_t n = 4096;
    unsigned long long p0[GPUOS__PROF_N], p1[GPUOS__PROF_N];
    int i, r;
    setenv("GPUOS_CUDA_TIMESTAMPS", "1", 1);
    cfg.device = 0;
    cfg.idle_ms = 10000;
    cfg.queue_capacity = 1 << 16;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        printf("probe_chain: %s\n", gpuos_last_error(NULL));
        return 1;
    }
    gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &x);
    gpuos_fill(ctx, x, 0.0);
    gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one);
    for (i = 0; i < 256; i++) {
        gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &in[i]);
        gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &out[i]);
        gpuos_fill(ctx, in[i], i);
    }
    gpuos_wait(ctx, 10000);
    for (r = 0; r < 3; r++) {
        double t0;
        prof_read(ctx, p0);
        t0 = now_us();
        for (i = 0; i < 1000; i++) gpuos_add(ctx, x, x, one);
        printf("chain: submitting took %.3f us/op\n", (now_us() - t0) / 1000);
        gpuos_wait(ctx, 10000);
        t0 = now_us() - t0;
        prof_read(ctx, p1);
        prof_report("chain", p0, p1, t0, 1000, "op");
    }
    for (r = 0; r < 3; r++) { /* the same chain queued while paused, then encoded at once:
                                 what the device alone sustains */
        double t0;
        gpuos_debug_pause(ctx, 1);
        for (i = 0; i < 1000; i++) gpuos_add(ctx, x, x, one);
        prof_read(ctx, p0);
        t0 = now_us();
        gpuos_debug_pause(ctx, 0);
        gpuos_wait(ctx, 10000);
        t0 = now_us() - t0;
        prof_read(ctx, p1);
        prof_report("chain pre-queued", p0, p1, t0, 1000, "op");
    }
    { /* the same chain as one recorded graph: no host encoding per task */
        gpuos_graph *g;
        gpuos_task t = GPUOS_TASK_INIT;
        uint64_t seq;
        if (gpuos_graph_create(ctx, &g) != GPUOS_OK) return 1;
        t.op = GPUOS_OP_ADD, t.out = x, t.in[0] = x, t.in[1] = one;
        for (i = 0; i < 1000; i++) gpuos_graph_add(g, &t, NULL);
        for (r = 0; r < 4; r++) {
            double t0;
            prof_read(ctx, p0);
            t0 = now_us();
            gpuos_graph_launch(g, NULL, 0, NULL, 0, &seq);
            gpuos_wait_fence(ctx, seq, 10000);
            t0 = now_us() - t0;
            prof_read(ctx, p1);
            prof_report("chain graph", p0, p1, t0, 1000, "op");
        }
        gpuos_graph_release(g);
    }
    for (r = 0; r < 3; r++) {
        double t0;
        prof_read(ctx, p0);
        t0 = now_us();
        for (i = 0; i < 20000; i++) gpuos_add(ctx, out[i & 255], in[i & 255], one);
        gpuos_wait(ctx, 10000);
        t0 = now_us() - t0;
        prof_read(ctx, p1);
        prof_report("independent", p0, p1, t0, 20000, "op");
    }
    { /* independent as one recorded graph of 256 adds (bench independent_graph's form),
         launched back to back: what the fetcher's expansion costs per node */
        gpuos_graph *g;
        uint64_t seq = 0;
        if (gpuos_graph_create(ctx, &g) != GPUOS_OK) return 1;
        for (i = 0; i < 256; i++) {
            gpuos_task t = GPUOS_TASK_INIT;
            t.op = GPUOS_OP_ADD, t.out = out[i], t.in[0] = in[i], t.in[1] = one;
            gpuos_graph_add(g, &t, NULL);
        }
        for (r = 0; r < 3; r++) {
            double t0;
            prof_read(ctx, p0);
            t0 = now_us();
            for (i = 0; i < 200; i++) gpuos_graph_launch(g, NULL, 0, NULL, 0, &seq);
            gpuos_wait_fence(ctx, seq, 10000);
            t0 = now_us() - t0;
            prof_read(ctx, p1);
            prof_report("independent graph (per launch of 256)", p0, p1, t0, 200, "launch");
        }
        gpuos_graph_release(g);
    }
    { /* pipeline_jobs: 8 slots, each a graph of copy-in, 20 in-place adds, copy-out */
        enum { S = 8, OPS = 20, JOBS = 2000 };
        gpuos_tensor *pin_in[S], *pin_out[S], *xs[S];
        gpuos_graph *g[S];
        uint64_t fence[S];
        double tl = 0, tw = 0;
        for (i = 0; i < S; i++) {
            gpuos_task k = GPUOS_TASK_INIT;
            int j;
            gpuos_tensor_new_pinned(ctx, GPUOS_F32, 1, &n, &pin_in[i]);
            gpuos_tensor_new_pinned(ctx, GPUOS_F32, 1, &n, &pin_out[i]);
            gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &xs[i]);
            gpuos_graph_create(ctx, &g[i]);
            k.op = GPUOS_OP_COPY, k.out = xs[i], k.in[0] = pin_in[i];
            gpuos_graph_add(g[i], &k, NULL);
            k.op = GPUOS_OP_ADD, k.out = xs[i], k.in[0] = xs[i], k.in[1] = one;
            for (j = 0; j < OPS; j++) gpuos_graph_add(g[i], &k, NULL);
            k.op = GPUOS_OP_COPY, k.out = pin_out[i], k.in[0] = xs[i], k.in[1] = NULL;
            gpuos_graph_add(g[i], &k, NULL);
        }
        for (r = 0; r < 3; r++) {
            double t0, a, b;
            prof_read(ctx, p0);
            t0 = now_us();
            tl = tw = 0;
            for (i = 0; i < JOBS; i++) {
                a = now_us();
                if (i >= S) gpuos_wait_fence(ctx, fence[i % S], 10000);
                b = now_us();
                gpuos_graph_launch(g[i % S], NULL, 0, NULL, 0, &fence[i % S]);
                tw += b - a;
                tl += now_us() - b;
            }
            gpuos_wait(ctx, 10000);
            t0 = now_us() - t0;
            prof_read(ctx, p1);
            printf("pipeline: host per job: launch %.2f us, wait %.2f us\n", tl / JOBS, tw / JOBS);
            prof_report("pipeline", p0, p1, t0, JOBS, "job");
        }
        { /* one job alone: its latency */
            double t0 = now_us();
            for (r = 0; r < 200; r++) {
                gpuos_graph_launch(g[0], NULL, 0, NULL, 0, &fence[0]);
                gpuos_wait_fence(ctx, fence[0], 10000);
            }
            printf("pipeline: one job at a time: %.2f us per job\n", (now_us() - t0) / 200);
        }
        for (i = 0; i < S; i++) {
            gpuos_graph_release(g[i]);
            gpuos_tensor_release(pin_in[i]);
            gpuos_tensor_release(pin_out[i]);
            gpuos_tensor_release(xs[i]);
        }
    }
    printf("status: %s\n", gpuos_last_error(ctx));
    gpuos_destroy(ctx);
    return 0;
}
