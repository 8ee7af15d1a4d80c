/* probe_graph.c - where a branchy graph launch spends its time in the worker blocks (not a
   test): the bench's branchy_dag (8 chains of 50 adds, 7 joins) launched as a recorded graph
   and submitted eagerly, with GPUOS_CUDA_TIMESTAMPS=1 worker cycle counters per phase. */
#include "../../gpuos.c"
#include <stdio.h>

#include "probe_prof.h"

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(void) {
    enum { C = 8, L = 50, R = 20 };
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx;
    gpuos_tensor *x[C], *out, *one;
    gpuos_graph *g;
    gpuos_task t = GPUOS_TASK_INIT;
    unsigned long long p0[GPUOS__PROF_N], p1[GPUOS__PROF_N];
    int64_t n = 4096;
    int c, i, r;
    double t0;
    setvbuf(stdout, NULL, _IONBF, 0);
    setenv("GPUOS_CUDA_TIMESTAMPS", "1", 1);
    cfg.device = 0;
    cfg.idle_ms = 10000;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) { printf("%s\n", gpuos_last_error(NULL)); return 1; }
    gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one);
    for (c = 0; c < C; c++) { gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &x[c]); gpuos_fill(ctx, x[c], c); }
    gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &out);
    gpuos_graph_create(ctx, &g);
    for (c = 0; c < C; c++)
        for (i = 0; i < L; i++) { t.op = GPUOS_OP_ADD; t.out = x[c]; t.in[0] = x[c]; t.in[1] = one; gpuos_graph_add(g, &t, NULL); }
    t.out = out; t.in[0] = x[0]; t.in[1] = x[1]; gpuos_graph_add(g, &t, NULL);
    for (c = 2; c < C; c++) { t.out = out; t.in[0] = out; t.in[1] = x[c]; gpuos_graph_add(g, &t, NULL); }
    for (int pass = 0; pass < 2; pass++) {
        uint64_t seq;
        gpuos_graph_launch(g, NULL, 0, NULL, 0, &seq);
        gpuos_wait(ctx, 10000);
        prof_read(ctx, p0);
        t0 = now_us();
        for (r = 0; r < R; r++) {
            gpuos_graph_launch(g, NULL, 0, NULL, 0, &seq);
            gpuos_wait_fence(ctx, seq, 10000);
        }
        t0 = now_us() - t0;
        prof_read(ctx, p1);
        prof_report("graph", p0, p1, t0, R, "launch");
        {
            struct gpuos__cuda_graph *cg = g->cg;
            int deps = 0, all = 0, ext = 0;
            for (i = 0; cg && i < cg->n; i++) {
                if (cg->desc[i].n_deps == GPUOS__DEPS_ALL) all++; else deps += cg->desc[i].n_deps;
                ext += cg->desc[i].stamp != 0;
            }
            printf("  pre-encoded: %s; %d explicit deps, %d wait-for-all, %d external, %u bases\n", cg ? "yes" : "no", deps, all, ext, cg ? cg->n_rel : 0);
        }
        prof_read(ctx, p0);
        t0 = now_us();
        for (r = 0; r < R; r++) {
            for (c = 0; c < C; c++) for (i = 0; i < L; i++) gpuos_add(ctx, x[c], x[c], one);
            gpuos_add(ctx, out, x[0], x[1]);
            for (c = 2; c < C; c++) gpuos_add(ctx, out, out, x[c]);
            gpuos_wait(ctx, 10000);
        }
        t0 = now_us() - t0;
        prof_read(ctx, p1);
        prof_report("eager", p0, p1, t0, R, "launch");
    }
    printf("status: %s\n", gpuos_last_error(ctx));
    gpuos_graph_release(g);
    gpuos_destroy(ctx);
    return 0;
}
