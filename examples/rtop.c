/* rtop.c - an operator defined at run time, and redefined while tasks using it are queued.

   A program defines "swish" (x * sigmoid(beta * x), beta a scalar) from CUDA source while it
   runs: on a GPU NVRTC compiles it and it joins the running kernel; on the host executor the
   body is interpreted. It then queues 64 updates y = swish(y + x) with a different beta each,
   redefines the operator as a leaky ReLU behind them (those 64 still run the old code, every
   later task the new), queues 64 more, and checks every element against the same program in
   plain C: tasks queued before the redefinition ran swish, tasks after it the new code.

   Build and run:  make build/rtop && ./build/rtop   (GPU if there is one, else the host executor)
   Force the host: GPUOS_EXAMPLE_HOST=1 ./build/rtop */
#include <math.h>   /* expf, fabs */
#include <stdio.h>  /* printf */
#include <stdlib.h> /* getenv */

#include "gpuos.h"

enum { N = 4096, STEPS = 64 };

#define CHECK(call)                                                                              \
    do {                                                                                         \
        gpuos_status st_ = (call);                                                               \
        if (st_ != GPUOS_OK) {                                                                   \
            fprintf(stderr, "%s:%d: %s\n  %s\n", __FILE__, __LINE__, gpuos_status_string(st_),   \
                    gpuos_last_error(ctx));                                                      \
            return 1;                                                                            \
        }                                                                                        \
    } while (0)

static const char *const SWISH = "float t = a + b; out = t / (1.0f + expf(-beta * t));";
static const char *const LEAKY = "float t = a + b; out = t > 0.0f ? t : beta * t;";

int main(void) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx = NULL;
    gpuos_op_def def = GPUOS_OP_DEF_INIT;
    gpuos_op op;
    gpuos_tensor *x, *y;
    gpuos_task t = GPUOS_TASK_INIT;
    static float hx[N], hy[N], ref[N];
    const int64_t n = N;
    double worst = 0;
    int i, k;

    if (getenv("GPUOS_EXAMPLE_HOST")) cfg.device = GPUOS_DEVICE_HOST;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        fprintf(stderr, "gpuos_create: %s\n", gpuos_last_error(NULL));
        return 1;
    }
    printf("rtop on %s\n", gpuos_context_backend(ctx) == GPUOS_BACKEND_CUDA ? "the GPU" : "the host executor");
    for (i = 0; i < N; i++) hx[i] = (float)((i * 37) % 200 - 100) / 100.0f, ref[i] = hy[i] = 0.0f;
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &x));
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &y));
    CHECK(gpuos_upload(ctx, x, hx, sizeof hx));
    CHECK(gpuos_upload(ctx, y, hy, sizeof hy));

    /* out = swish(a + b); a, b the inputs (default names), beta the one scalar */
    def.name = "swish";
    def.source = SWISH;
    def.n_inputs = 2;
    def.n_scalars = 1;
    def.scalar_names[0] = "beta";
    CHECK(gpuos_op_define(ctx, &def, &op));

    t.op = op, t.out = y, t.in[0] = y, t.in[1] = x; /* in place on y */
    for (k = 0; k < 2 * STEPS; k++) {
        if (k == STEPS) { /* same handle, new code: the 64 tasks queued above still run swish */
            def.source = LEAKY;
            CHECK(gpuos_op_redefine(ctx, op, &def));
        }
        t.scalar[0] = 0.5 + 0.01 * k;
        CHECK(gpuos_submit(ctx, &t, NULL));
        for (i = 0; i < N; i++) { /* the same step in plain C */
            const float tt = ref[i] + hx[i], beta = (float)t.scalar[0];
            ref[i] = k < STEPS ? tt / (1.0f + expf(-beta * tt)) : (tt > 0.0f ? tt : beta * tt);
        }
    }
    CHECK(gpuos_download(ctx, y, hy, sizeof hy));
    for (i = 0; i < N; i++) {
        const double d = fabs((double)hy[i] - ref[i]) / (1.0 + fabs(ref[i]));
        if (d > worst) worst = d;
    }
    /* expf on the device and in the C library may differ by a few ulp a step; 128 steps */
    printf("%d elements, %d steps of swish then %d of the redefined operator: largest relative difference "
           "from the plain C run %.1e (%s)\n",
           N, STEPS, STEPS, worst, worst < 1e-4 ? "ok" : "WRONG");
    gpuos_tensor_release(x);
    gpuos_tensor_release(y);
    gpuos_destroy(ctx);
    return worst < 1e-4 ? 0 : 1;
}
