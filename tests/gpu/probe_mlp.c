/* probe_mlp.c - what each kind of task of the bench's tiny_mlp costs on the GPU (not a
   test): 200-task recorded graphs of one operator on the layer's shapes (8x256 activations,
   256x256 weights), dependent (each task reads the previous one's output) or independent,
   timed launch to fence; then the full 8-layer forward for reference. */
#include "../../gpuos.c"
#include "probe_prof.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static double time_graph(gpuos_context *ctx, gpuos_graph *g, int n) {
    uint64_t seq;
    double best = 1e30;
    int r;
    for (r = 0; r < 6; r++) {
        double t0 = now_us();
        gpuos_graph_launch(g, NULL, 0, NULL, 0, &seq);
        gpuos_wait_fence(ctx, seq, 10000);
        t0 = now_us() - t0;
        if (r > 0 && t0 < best) best = t0;
    }
    return best / n;
}

/* One forward graph timed (us a launch) and, with prof, its worker counters. */
static void time_forward(gpuos_context *ctx, gpuos_graph *g, const char *name, int prof) {
    unsigned long long p0[GPUOS__PROF_N], p1[GPUOS__PROF_N];
    double us;
    if (prof) prof_read(ctx, p0);
    us = time_graph(ctx, g, 1);
    printf("%-22s %-11s %8.2f us/forward (%d tasks)\n", name, "graph", us, gpuos_debug_graph_tasks(g));
    if (prof) {
        prof_read(ctx, p1);
        prof_report(name, p0, p1, us * 6, 6 * gpuos_debug_graph_tasks(g), "task (6 launches)");
    }
}

int main(void) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx;
    gpuos_tensor *a, *b, *w, *bias, *c;
    int64_t sx[2] = {8, 256}, sw[2] = {256, 256}, sb[1] = {256};
    const int N = 200;
    int i, kind;
    static const char *names[] = {"matmul 8x256x256", "add bias (broadcast)", "gelu", "add (residual)", "layernorm"};
    const int prof = getenv("PROBE_PROF") && atoi(getenv("PROBE_PROF")) > 0; /* worker cycle counters */
    if (prof) setenv("GPUOS_CUDA_TIMESTAMPS", "1", 1);
    cfg.device = 0;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        printf("probe_mlp: %s\n", gpuos_last_error(NULL));
        return 1;
    }
    gpuos_tensor_new(ctx, GPUOS_F32, 2, sx, &a);
    gpuos_tensor_new(ctx, GPUOS_F32, 2, sx, &b);
    gpuos_tensor_new(ctx, GPUOS_F32, 2, sx, &c);
    gpuos_tensor_new(ctx, GPUOS_F32, 2, sw, &w);
    gpuos_tensor_new(ctx, GPUOS_F32, 1, sb, &bias);
    gpuos_fill(ctx, a, 0.01), gpuos_fill(ctx, b, 0.01), gpuos_fill(ctx, c, 0.01);
    gpuos_fill(ctx, w, 0.001), gpuos_fill(ctx, bias, 0.0);
    gpuos_wait(ctx, 10000);
    for (kind = getenv("PROBE_FORWARD_ONLY") ? 5 : 0; kind < 5; kind++) {
        int dep;
        for (dep = 0; dep < 2; dep++) {
            gpuos_graph *g;
            gpuos_graph_create(ctx, &g);
            for (i = 0; i < N; i++) {
                gpuos_task t = GPUOS_TASK_INIT;
                /* dependent: a -> b -> a ...; independent: always a -> c (WAW on c: the
                   output alternates between b and c so writes do not chain) */
                gpuos_tensor *src = dep ? ((i & 1) ? b : a) : a;
                gpuos_tensor *dst = dep ? ((i & 1) ? a : b) : ((i & 1) ? b : c);
                t.out = dst;
                switch (kind) {
                case 0: t.op = GPUOS_OP_MATMUL, t.in[0] = src, t.in[1] = w; break;
                case 1: t.op = GPUOS_OP_ADD, t.in[0] = src, t.in[1] = bias; break;
                case 2: t.op = GPUOS_OP_GELU, t.in[0] = src; break;
                case 3: t.op = GPUOS_OP_ADD, t.in[0] = src, t.in[1] = src; break;
                default: t.op = GPUOS_OP_LAYERNORM, t.in[0] = src, t.scalar[0] = 1e-5; break;
                }
                if (gpuos_graph_add(g, &t, NULL) != GPUOS_OK) printf("add: %s\n", gpuos_last_error(ctx));
            }
            {
                unsigned long long p0[GPUOS__PROF_N], p1[GPUOS__PROF_N];
                double us;
                if (prof) prof_read(ctx, p0);
                us = time_graph(ctx, g, N);
                printf("%-22s %-11s %8.2f us/task\n", names[kind], dep ? "dependent" : "independent", us);
                if (prof) {
                    prof_read(ctx, p1);
                    prof_report(names[kind], p0, p1, us * N * 6, N * 6, "task (6 launches)");
                }
            }
            gpuos_graph_release(g);
        }
    }
    { /* the bench's forward: 8 layers of [matmul, + bias, gelu, + x, layernorm] as one graph
         (fused: each layernorm but the last is the next matmul's prologue) */
        enum { NL = 8 };
        gpuos_tensor *x[NL + 1], *h[NL];
        gpuos_graph *g;
        int l;
        for (l = 0; l <= NL; l++) gpuos_tensor_new(ctx, GPUOS_F32, 2, sx, &x[l]), gpuos_fill(ctx, x[l], 0.01);
        for (l = 0; l < NL; l++) gpuos_tensor_new(ctx, GPUOS_F32, 2, sx, &h[l]);
        gpuos_graph_create(ctx, &g);
        for (l = 0; l < NL; l++) {
            gpuos_task t = GPUOS_TASK_INIT;
            t.op = GPUOS_OP_MATMUL, t.out = h[l], t.in[0] = x[l], t.in[1] = w;
            gpuos_graph_add(g, &t, NULL);
            t.op = GPUOS_OP_ADD, t.in[0] = h[l], t.in[1] = bias;
            gpuos_graph_add(g, &t, NULL);
            t.op = GPUOS_OP_GELU, t.in[1] = NULL;
            gpuos_graph_add(g, &t, NULL);
            t.op = GPUOS_OP_ADD, t.in[1] = x[l];
            gpuos_graph_add(g, &t, NULL);
            t.op = GPUOS_OP_LAYERNORM, t.out = x[l + 1], t.in[0] = h[l], t.in[1] = NULL, t.scalar[0] = 1e-5;
            gpuos_graph_add(g, &t, NULL);
        }
        time_forward(ctx, g, "tiny_mlp forward", prof);
        gpuos_graph_release(g);
        /* the same forward with every layer cut into its 8 rows (1 x 256 views), each row's
           layernorm recorded right before the next layer's product of that row: each row's
           chain depends only on its own row (PROBE_ROWS=1) */
        if (getenv("PROBE_ROWS") && atoi(getenv("PROBE_ROWS")) > 0) {
            float want[8 * 256], got[8 * 256];
            gpuos_tensor *xr[NL + 1][8], *hr[NL][8];
            int r, same;
            gpuos_download(ctx, x[NL], want, sizeof want);
            for (l = 0; l <= NL; l++)
                for (r = 0; r < 8; r++) gpuos_view_slice(x[l], 0, r, r + 1, 1, &xr[l][r]);
            for (l = 0; l < NL; l++)
                for (r = 0; r < 8; r++) gpuos_view_slice(h[l], 0, r, r + 1, 1, &hr[l][r]);
            for (l = 1; l <= NL; l++) gpuos_fill(ctx, x[l], 0.0);
            gpuos_graph_create(ctx, &g);
            for (l = 0; l <= NL; l++)
                for (r = 0; r < 8; r++) {
                    gpuos_task t = GPUOS_TASK_INIT;
                    if (l > 0) {
                        t.op = GPUOS_OP_LAYERNORM, t.out = xr[l][r], t.in[0] = hr[l - 1][r], t.scalar[0] = 1e-5;
                        if (gpuos_graph_add(g, &t, NULL) != GPUOS_OK) printf("add: %s\n", gpuos_last_error(ctx));
                    }
                    if (l == NL) continue;
                    t = (gpuos_task)GPUOS_TASK_INIT;
                    t.op = GPUOS_OP_MATMUL, t.out = hr[l][r], t.in[0] = xr[l][r], t.in[1] = w;
                    gpuos_graph_add(g, &t, NULL);
                    t.op = GPUOS_OP_ADD, t.in[0] = hr[l][r], t.in[1] = bias;
                    gpuos_graph_add(g, &t, NULL);
                    t.op = GPUOS_OP_GELU, t.in[1] = NULL;
                    gpuos_graph_add(g, &t, NULL);
                    t.op = GPUOS_OP_ADD, t.in[1] = xr[l][r];
                    gpuos_graph_add(g, &t, NULL);
                }
            time_forward(ctx, g, "tiny_mlp by rows", prof);
            gpuos_download(ctx, x[NL], got, sizeof got);
            same = memcmp(want, got, sizeof want) == 0;
            printf("tiny_mlp by rows: output %s the whole-layer forward's bit for bit\n", same ? "equals" : "DIFFERS from");
            gpuos_graph_release(g);
            for (l = 0; l <= NL; l++)
                for (r = 0; r < 8; r++) gpuos_tensor_release(xr[l][r]);
            for (l = 0; l < NL; l++)
                for (r = 0; r < 8; r++) gpuos_tensor_release(hr[l][r]);
        }
    }
    printf("status: %s\n", gpuos_context_status(ctx) == GPUOS_OK ? "ok" : gpuos_last_error(ctx));
    gpuos_destroy(ctx);
    return 0;
}
