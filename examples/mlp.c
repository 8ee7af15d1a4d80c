/* mlp.c - small-model inference with gpuos: a 4-layer MLP recorded once as a graph and
   launched for many requests, each bound to its own input and output tensors.

   A layer is h = x @ W + b; h = gelu(h); h = h + x; x' = layernorm(h). Recorded as a graph,
   each layer's matmul takes its bias, activation and residual as an epilogue, and the layer
   before's layernorm as a prologue (5 tasks for 20 nodes: gpuos.h, "Fusion"), with the same
   results bit for bit. Requests are
   launched back to back, up to 8 in flight, each with gpuos_graph_bind naming its input and
   output; the results are checked against a plain C forward.

   Build and run:  make build/mlp && ./build/mlp   (GPU if there is one, else the host executor)
   Force the host: GPUOS_EXAMPLE_HOST=1 ./build/mlp */
#include <math.h>   /* erf, sqrt, fabs */
#include <stdio.h>  /* printf */
#include <stdlib.h> /* getenv, malloc */
#include <time.h>   /* clock */

#include "gpuos.h"

enum { B = 8, H = 256, LAYERS = 4, REQUESTS = 64, IN_FLIGHT = 8 };

#define CHECK(call)                                                                              \
    do {                                                                                         \
        gpuos_status st_ = (call);                                                               \
        if (st_ != GPUOS_OK) {                                                                   \
            fprintf(stderr, "%s:%d: %s\n  %s\n", __FILE__, __LINE__, gpuos_status_string(st_),   \
                    gpuos_last_error(ctx));                                                      \
            return 1;                                                                            \
        }                                                                                        \
    } while (0)

static unsigned long long seed = 88172645463325252ull;
static float frand(float lo, float hi) { /* xorshift64 */
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return lo + (hi - lo) * (float)((seed >> 40) / 16777216.0);
}

/* The same forward in plain C (double precision), for request input x (B x H) into out. */
static void forward_c(const float *w, const float *bias, const float *x, double *out) {
    static double cur[B * H], tmp[B * H];
    int l, b, j, k;
    for (j = 0; j < B * H; j++) cur[j] = x[j];
    for (l = 0; l < LAYERS; l++) {
        for (b = 0; b < B; b++)
            for (j = 0; j < H; j++) {
                double a = bias[l * H + j];
                for (k = 0; k < H; k++) a += cur[b * H + k] * w[(size_t)l * H * H + (size_t)k * H + j];
                tmp[b * H + j] = 0.5 * a * (1.0 + erf(a / sqrt(2.0))) + cur[b * H + j];
            }
        for (b = 0; b < B; b++) {
            double m = 0, v = 0;
            for (j = 0; j < H; j++) m += tmp[b * H + j];
            m /= H;
            for (j = 0; j < H; j++) v += (tmp[b * H + j] - m) * (tmp[b * H + j] - m);
            v /= H;
            for (j = 0; j < H; j++) cur[b * H + j] = (tmp[b * H + j] - m) / sqrt(v + 1e-5);
        }
    }
    for (j = 0; j < B * H; j++) out[j] = cur[j];
}

int main(void) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx = NULL;
    gpuos_tensor *w[LAYERS], *bias[LAYERS], *act[LAYERS + 1], *h[LAYERS], *in[IN_FLIGHT], *out[IN_FLIGHT];
    gpuos_graph *g;
    const int64_t sx[2] = {B, H}, sw[2] = {H, H}, sb[1] = {H};
    float *hw = (float *)malloc(sizeof(float) * LAYERS * H * H), *hb = (float *)malloc(sizeof(float) * LAYERS * H);
    static float hin[IN_FLIGHT][B * H], got[B * H];
    static double ref[B * H];
    double worst = 0;
    uint64_t seq[IN_FLIGHT] = {0};
    int l, r, i;
    clock_t t0;

    if (!hw || !hb) return 1;
    if (getenv("GPUOS_EXAMPLE_HOST")) cfg.device = GPUOS_DEVICE_HOST;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        fprintf(stderr, "gpuos_create: %s\n", gpuos_last_error(NULL));
        return 1;
    }
    printf("backend: %s\n", gpuos_context_backend(ctx) == GPUOS_BACKEND_CUDA ? "GPU" : "host executor");

    /* weights, and the graph over placeholder activations act[0..LAYERS] */
    for (i = 0; i < LAYERS * H * H; i++) hw[i] = frand(-0.0625f, 0.0625f);
    for (i = 0; i < LAYERS * H; i++) hb[i] = frand(-0.1f, 0.1f);
    for (l = 0; l < LAYERS; l++) {
        CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 2, sw, &w[l]));
        CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 1, sb, &bias[l]));
        CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 2, sx, &h[l]));
        CHECK(gpuos_upload(ctx, w[l], hw + (size_t)l * H * H, sizeof(float) * H * H));
        CHECK(gpuos_upload(ctx, bias[l], hb + (size_t)l * H, sizeof(float) * H));
    }
    for (l = 0; l <= LAYERS; l++) CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 2, sx, &act[l]));
    CHECK(gpuos_graph_create(ctx, &g));
    for (l = 0; l < LAYERS; l++) {
        gpuos_task t = GPUOS_TASK_INIT;
        t.op = GPUOS_OP_MATMUL, t.out = h[l], t.in[0] = act[l], t.in[1] = w[l];
        CHECK(gpuos_graph_add(g, &t, NULL));
        t.op = GPUOS_OP_ADD, t.out = h[l], t.in[0] = h[l], t.in[1] = bias[l];
        CHECK(gpuos_graph_add(g, &t, NULL));
        t.op = GPUOS_OP_GELU, t.in[1] = NULL;
        CHECK(gpuos_graph_add(g, &t, NULL));
        t.op = GPUOS_OP_ADD, t.in[1] = act[l];
        CHECK(gpuos_graph_add(g, &t, NULL));
        t.op = GPUOS_OP_LAYERNORM, t.out = act[l + 1], t.in[0] = h[l], t.in[1] = NULL, t.scalar[0] = 1e-5;
        CHECK(gpuos_graph_add(g, &t, NULL));
    }

    /* requests: each slot has its own input and output; a launch binds them. The hidden
       activations are shared, so launches in flight are ordered by the memory they touch. */
    for (i = 0; i < IN_FLIGHT; i++) {
        CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 2, sx, &in[i]));
        CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 2, sx, &out[i]));
    }
    t0 = clock();
    for (r = 0; r < REQUESTS; r++) {
        const int s = r % IN_FLIGHT;
        gpuos_graph_bind bind[2];
        if (seq[s]) CHECK(gpuos_wait_fence(ctx, seq[s], 10000)); /* the slot's last request is done */
        for (i = 0; i < B * H; i++) hin[s][i] = frand(-1.0f, 1.0f);
        CHECK(gpuos_upload(ctx, in[s], hin[s], sizeof hin[s]));
        bind[0].recorded = act[0], bind[0].actual = in[s];
        bind[1].recorded = act[LAYERS], bind[1].actual = out[s];
        CHECK(gpuos_graph_launch(g, bind, 2, NULL, 0, &seq[s]));
        if (r >= REQUESTS - IN_FLIGHT) { /* check the last few against plain C */
            CHECK(gpuos_wait_fence(ctx, seq[s], 10000));
            CHECK(gpuos_download(ctx, out[s], got, sizeof got));
            forward_c(hw, hb, hin[s], ref);
            for (i = 0; i < B * H; i++)
                if (fabs(got[i] - ref[i]) > worst) worst = fabs(got[i] - ref[i]);
        }
    }
    CHECK(gpuos_wait(ctx, 10000));
    printf("%d requests of a %d-layer MLP (batch %d, hidden %d): %d tasks a launch for %d recorded nodes, "
           "%.1f ms of CPU time\n",
           REQUESTS, LAYERS, B, H, gpuos_debug_graph_tasks(g), gpuos_graph_size(g),
           1e3 * (double)(clock() - t0) / CLOCKS_PER_SEC);
    printf("largest difference from the plain C forward: %.3g (%s)\n", worst, worst < 1e-3 ? "ok" : "WRONG");

    gpuos_graph_release(g);
    for (l = 0; l < LAYERS; l++) {
        gpuos_tensor_release(w[l]);
        gpuos_tensor_release(bias[l]);
        gpuos_tensor_release(h[l]);
    }
    for (l = 0; l <= LAYERS; l++) gpuos_tensor_release(act[l]);
    for (i = 0; i < IN_FLIGHT; i++) {
        gpuos_tensor_release(in[i]);
        gpuos_tensor_release(out[i]);
    }
    gpuos_destroy(ctx);
    free(hw);
    free(hb);
    return worst < 1e-3 ? 0 : 1;
}
