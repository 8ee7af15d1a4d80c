/* smoke.c - the smallest GPU run: one add, one download, the error detail if any.
   Built by `make build/smoke`; run on a GPU machine (also under compute-sanitizer). */
#include <stdio.h>
#include "gpuos.h"

int main(void) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx;
    gpuos_tensor *a, *b, *c;
    int64_t n = 4096;
    static float ha[4096], hb[4096], hc[4096];
    int i, bad = 0;
    gpuos_status st;
    cfg.device = 0;
    cfg.wait_timeout_ms = 5000;
    if ((st = gpuos_create(&cfg, &ctx)) != GPUOS_OK) {
        printf("create: %s\n", gpuos_last_error(NULL));
        return 1;
    }
    for (i = 0; i < n; i++) {
        ha[i] = (float)i;
        hb[i] = 0.5f;
    }
    gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &a);
    gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &b);
    gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &c);
    gpuos_upload(ctx, a, ha, sizeof ha);
    gpuos_upload(ctx, b, hb, sizeof hb);
    for (i = 0; i < 3; i++) {
        st = gpuos_add(ctx, c, a, b);
        if (st == GPUOS_OK) st = gpuos_download(ctx, c, hc, sizeof hc);
        printf("round %d: %s %s\n", i, gpuos_status_string(st), st ? gpuos_last_error(ctx) : "");
    }
    for (i = 0; i < n; i++) bad += hc[i] != ha[i] + 0.5f;
    printf("wrong elements: %d of %lld\n", bad, (long long)n);
    gpuos_tensor_release(a);
    gpuos_tensor_release(b);
    gpuos_tensor_release(c);
    gpuos_destroy(ctx);
    return bad || st;
}
