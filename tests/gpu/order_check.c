/* order_check.c - program order on the GPU: the particle example's operator sequence
   (dependent element-wise ops over several tensors, in place and not), run without any
   wait, then compared bit for bit with the host executor running the same sequence.
   Prints the number of differing elements per tensor; exit status 1 on any. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpuos.h"

#define N 4096
#define T 7 /* x y u v below bounced e2 */

static int run(int device, int steps, float out[T][N]) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx;
    gpuos_tensor *t[T], *dt, *g, *z, *damp, *vmin, *vmax;
    int64_t n = N;
    static float init[4][N];
    unsigned s = 1;
    int i, k;
    cfg.device = device;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) { printf("create: %s\n", gpuos_last_error(NULL)); return 1; }
    for (k = 0; k < 4; k++)
        for (i = 0; i < N; i++) { s = s * 1664525u + 1013904223u; init[k][i] = (float)(s >> 8) / 16777216.0f * 10.0f - 2.0f; }
    for (k = 0; k < T; k++) gpuos_tensor_new(ctx, k == 4 ? GPUOS_BOOL : GPUOS_F32, 1, &n, &t[k]);
    for (k = 0; k < 4; k++) gpuos_upload(ctx, t[k], init[k], sizeof init[k]);
    gpuos_tensor_scalar(ctx, GPUOS_F32, 0.01, &dt);
    gpuos_tensor_scalar(ctx, GPUOS_F32, -0.0981, &g);
    gpuos_tensor_scalar(ctx, GPUOS_F32, 0.0, &z);
    gpuos_tensor_scalar(ctx, GPUOS_F32, -0.8, &damp);
    gpuos_tensor_scalar(ctx, GPUOS_F32, -20.0, &vmin);
    gpuos_tensor_scalar(ctx, GPUOS_F32, 20.0, &vmax);
    for (i = 0; i < steps; i++) {
        gpuos_add(ctx, t[3], t[3], g);
        gpuos_fma(ctx, t[0], t[2], dt, t[0]);
        gpuos_fma(ctx, t[1], t[3], dt, t[1]);
        gpuos_lt(ctx, t[4], t[1], z);
        gpuos_mul(ctx, t[5], t[3], damp);
        gpuos_where(ctx, t[3], t[4], t[5], t[3]);
        gpuos_neg(ctx, t[5], t[1]);
        gpuos_where(ctx, t[1], t[4], t[5], t[1]);
        gpuos_clamp(ctx, t[3], t[3], vmin, vmax);
        gpuos_mul(ctx, t[6], t[2], t[2]);
        gpuos_fma(ctx, t[6], t[3], t[3], t[6]);
    }
    for (k = 0; k < T; k++) {
        if (k == 4) { unsigned char b[N]; gpuos_download(ctx, t[k], b, N); for (i = 0; i < N; i++) out[k][i] = b[i]; }
        else if (gpuos_download(ctx, t[k], out[k], sizeof out[k]) != GPUOS_OK) { printf("download: %s\n", gpuos_last_error(ctx)); return 1; }
    }
    for (k = 0; k < T; k++) gpuos_tensor_release(t[k]);
    gpuos_tensor_release(dt); gpuos_tensor_release(g); gpuos_tensor_release(z);
    gpuos_tensor_release(damp); gpuos_tensor_release(vmin); gpuos_tensor_release(vmax);
    gpuos_destroy(ctx);
    return 0;
}

int main(int argc, char **argv) {
    static float host[T][N], gpu[T][N];
    int steps = argc > 1 ? atoi(argv[1]) : 1000, k, i, total = 0;
    if (run(GPUOS_DEVICE_HOST, steps, host) || run(0, steps, gpu)) return 2;
    for (k = 0; k < T; k++) {
        int d = 0;
        for (i = 0; i < N; i++) d += memcmp(&host[k][i], &gpu[k][i], sizeof(float)) != 0;
        printf("%s%d", k ? " " : "differing elements per tensor: ", d);
        total += d;
    }
    printf("  (%d steps) %s\n", steps, total ? "MISMATCH" : "identical");
    return total != 0;
}
