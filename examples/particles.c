/* particles.c - the main gpuos example: a particle system stepped with small tensor ops.

   Each step: gravity pulls the velocity down, particles move, those below the floor
   bounce back with some energy lost, velocities are clamped, and every 100 steps the
   kinetic energy is reduced to one number and read back. That is a dozen small
   operators per step, the kind of work gpuos is for. The same simulation runs in
   plain C beside it, and the example checks that the two agree.

   Build and run:  make run      (GPU if there is one, else the host executor)
   Force the host: GPUOS_EXAMPLE_HOST=1 make run */
#include <math.h>   /* fabsf */
#include <stdio.h>  /* printf */
#include <stdlib.h> /* getenv, malloc */

#include "gpuos.h"

#define N 4096
#define STEPS 1000

/* Stops the example with a message when a gpuos call fails. */
#define CHECK(call)                                                                              \
    do {                                                                                         \
        gpuos_status st_ = (call);                                                               \
        if (st_ != GPUOS_OK) {                                                                   \
            fprintf(stderr, "%s:%d: %s\n  %s\n", __FILE__, __LINE__, gpuos_status_string(st_),   \
                    gpuos_last_error(ctx));                                                      \
            return 1;                                                                            \
        }                                                                                        \
    } while (0)

static float frand(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / 16777216.0f;
}

int main(void) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx = NULL;
    if (getenv("GPUOS_EXAMPLE_HOST")) cfg.device = GPUOS_DEVICE_HOST;
    CHECK(gpuos_create(&cfg, &ctx));
    printf("gpuos %s on the %s executor: %d particles, %d steps\n", GPUOS_VERSION_STRING,
           gpuos_context_backend(ctx) == GPUOS_BACKEND_CUDA ? "GPU" : "host", N, STEPS);

    /* Host copies: the initial state, and a plain C reference run beside gpuos. */
    static float px[N], py[N], vx[N], vy[N];
    static float rx[N], ry[N], rvx[N], rvy[N];
    unsigned seed = 12345u;
    for (int i = 0; i < N; i++) {
        rx[i] = px[i] = frand(&seed) * 10.0f;
        ry[i] = py[i] = frand(&seed) * 10.0f;
        rvx[i] = vx[i] = frand(&seed) * 2.0f - 1.0f;
        rvy[i] = vy[i] = frand(&seed) * 2.0f - 1.0f;
    }

    /* State tensors [N], and the constants as 0-d tensors that broadcast. */
    int64_t shape[1] = {N};
    gpuos_tensor *x, *y, *u, *v, *below, *bounced, *e2, *energy;
    gpuos_tensor *dt, *g, *floor0, *damp, *vmin, *vmax;
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 1, shape, &x));
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 1, shape, &y));
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 1, shape, &u));
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 1, shape, &v));
    CHECK(gpuos_tensor_new(ctx, GPUOS_BOOL, 1, shape, &below));
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 1, shape, &bounced));
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 1, shape, &e2));
    CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 0, NULL, &energy));
    CHECK(gpuos_tensor_scalar(ctx, GPUOS_F32, 0.01, &dt));
    CHECK(gpuos_tensor_scalar(ctx, GPUOS_F32, -9.81 * 0.01, &g));
    CHECK(gpuos_tensor_scalar(ctx, GPUOS_F32, 0.0, &floor0));
    CHECK(gpuos_tensor_scalar(ctx, GPUOS_F32, -0.8, &damp));
    CHECK(gpuos_tensor_scalar(ctx, GPUOS_F32, -20.0, &vmin));
    CHECK(gpuos_tensor_scalar(ctx, GPUOS_F32, 20.0, &vmax));
    CHECK(gpuos_upload(ctx, x, px, sizeof px));
    CHECK(gpuos_upload(ctx, y, py, sizeof py));
    CHECK(gpuos_upload(ctx, u, vx, sizeof vx));
    CHECK(gpuos_upload(ctx, v, vy, sizeof vy));

    for (int step = 1; step <= STEPS; step++) {
        CHECK(gpuos_add(ctx, v, v, g));              /* v += g*dt          */
        CHECK(gpuos_fma(ctx, x, u, dt, x));          /* x += u*dt          */
        CHECK(gpuos_fma(ctx, y, v, dt, y));          /* y += v*dt          */
        CHECK(gpuos_lt(ctx, below, y, floor0));      /* below = y < 0      */
        CHECK(gpuos_mul(ctx, bounced, v, damp));     /* bounced = -0.8 v   */
        CHECK(gpuos_where(ctx, v, below, bounced, v));
        CHECK(gpuos_neg(ctx, bounced, y));           /* reflect y at floor */
        CHECK(gpuos_where(ctx, y, below, bounced, y));
        CHECK(gpuos_clamp(ctx, v, v, vmin, vmax));
        if (step % 100 == 0) {                       /* energy = sum(u^2 + v^2) / 2 */
            float ke = 0.0f;
            CHECK(gpuos_mul(ctx, e2, u, u));
            CHECK(gpuos_fma(ctx, e2, v, v, e2));
            CHECK(gpuos_sum(ctx, energy, e2, NULL, 0, 0));
            CHECK(gpuos_download(ctx, energy, &ke, sizeof ke));
            printf("step %4d  kinetic energy %.3f\n", step, 0.5 * ke);
        }
        /* The same step in plain C, for the check at the end. */
        for (int i = 0; i < N; i++) {
            rvy[i] += (float)(-9.81 * 0.01); /* as gpuos_tensor_scalar rounds it */
            rx[i] = fmaf(rvx[i], 0.01f, rx[i]);
            ry[i] = fmaf(rvy[i], 0.01f, ry[i]);
            if (ry[i] < 0.0f) { rvy[i] = rvy[i] * -0.8f; ry[i] = -ry[i]; }
            rvy[i] = rvy[i] < -20.0f ? -20.0f : rvy[i] > 20.0f ? 20.0f : rvy[i];
        }
    }

    CHECK(gpuos_download(ctx, x, px, sizeof px));
    CHECK(gpuos_download(ctx, y, py, sizeof py));
    float worst = 0.0f;
    for (int i = 0; i < N; i++) {
        float d = fabsf(px[i] - rx[i]) + fabsf(py[i] - ry[i]);
        if (d > worst) worst = d;
    }
    printf("largest difference from the plain C run: %g (%s)\n", worst, worst < 1e-3f ? "ok" : "MISMATCH");

    gpuos_tensor *all[] = {x, y, u, v, below, bounced, e2, energy, dt, g, floor0, damp, vmin, vmax};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) gpuos_tensor_release(all[i]);
    gpuos_destroy(ctx);
    return worst < 1e-3f ? 0 : 1;
}
