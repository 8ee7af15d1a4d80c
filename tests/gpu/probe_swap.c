/* probe_swap.c - measures what a kernel-generation swap (issue 4) costs on this GPU:
   NVRTC -rdc of the built-in device code, nvJitLink of it alone and with one tiny
   run-time operator, cuModuleLoadData of each result, and the context's own times.
   A measurement tool (make -s build/probe_swap), not a test. It includes gpuos.c to
   reach the internal loaders. */
#include "../../gpuos.c"
#include <stdio.h>

static double ms(uint64_t a, uint64_t b) { return (double)(b - a) / 1e6; }

int main(void) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx;
    uint64_t t0 = cuda_now_ns(), t1;
    cfg.device = 0;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        printf("probe_swap: no GPU context: %s\n", gpuos_last_error(NULL));
        return 1;
    }
    t1 = cuda_now_ns();
    struct gpuos__cuda *c = ctx->cuda;
    printf("INFO probe.create_ms %.2f (compile_ms %.1f, from_cache %d)\n", ms(t0, t1), c->compile_ms, c->from_cache);
    char arch[64], larch[32];
    snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", c->cc_major, c->cc_minor);
    snprintf(larch, sizeof larch, "-arch=sm_%d%d", c->cc_major, c->cc_minor);
    const char *opts[] = {arch, "-default-device", "--std=c++17", "-rdc=true", "--maxrregcount=128"};
    size_t n;
    char *src = gpuos__device_source_joined(&n);
    void *base = NULL, *op = NULL, *l1 = NULL, *l2 = NULL;
    size_t base_n = 0, op_n = 0, l1_n = 0, l2_n = 0;
    char *log = NULL;
    t0 = cuda_now_ns();
    if (gpuos__nvrtc_compile(ctx, src, "gpuos_device.cu", opts, 5, 1, &base, &base_n, &log)) { printf("compile failed\n%s\n", log); return 1; }
    printf("INFO probe.nvrtc_base_ms %.1f (%zu bytes relocatable)\n", ms(t0, cuda_now_ns()), base_n);
    const char *opsrc = "extern \"C\" __device__ float gpuos_rt_probe(float x) { return sinf(x) * 2.0f + 1.0f; }\n";
    t0 = cuda_now_ns();
    if (gpuos__nvrtc_compile(ctx, opsrc, "op.cu", opts, 5, 1, &op, &op_n, &log)) { printf("op compile failed\n%s\n", log); return 1; }
    printf("INFO probe.nvrtc_tiny_op_ms %.1f (%zu bytes)\n", ms(t0, cuda_now_ns()), op_n);
    {
        const char *lo[] = {larch};
        const void *im[2] = {base, op};
        size_t sz[2] = {base_n, op_n};
        int ty[2] = {GPUOS__NVJITLINK_INPUT_CUBIN, GPUOS__NVJITLINK_INPUT_CUBIN};
        t0 = cuda_now_ns();
        if (gpuos__nvjitlink_link(ctx, lo, 1, im, sz, ty, 1, &l1, &l1_n, &log)) { printf("link failed %s\n", log); return 1; }
        printf("INFO probe.link_base_ms %.1f (%zu bytes)\n", ms(t0, cuda_now_ns()), l1_n);
        t0 = cuda_now_ns();
        if (gpuos__nvjitlink_link(ctx, lo, 1, im, sz, ty, 2, &l2, &l2_n, &log)) { printf("link2 failed %s\n", log); return 1; }
        printf("INFO probe.link_base_plus_op_ms %.1f (%zu bytes)\n", ms(t0, cuda_now_ns()), l2_n);
    }
    pthread_mutex_lock(&ctx->mu);
    cuda_stop_kernel_locked(ctx);
    pthread_mutex_unlock(&ctx->mu);
    for (int rep = 0; rep < 3; rep++) {
        gpuos__CUmodule m;
        t0 = cuda_now_ns();
        gpuos__CUresult r = c->cu->cuModuleLoadData(&m, l2);
        t1 = cuda_now_ns();
        gpuos__CUfunction f;
        gpuos__CUresult r2 = c->cu->cuModuleGetFunction(&f, m, "gpuos__pk_main");
        uint64_t t2 = cuda_now_ns();
        printf("INFO probe.module_load_ms %.2f getfunction_ms %.2f (r=%d,%d)\n", ms(t0, t1), ms(t1, t2), (int)r, (int)r2);
        t0 = cuda_now_ns();
        c->cu->cuModuleUnload(m);
        printf("INFO probe.module_unload_ms %.2f\n", ms(t0, cuda_now_ns()));
    }
    gpuos_destroy(ctx);
    t0 = cuda_now_ns();
    if (gpuos_create(&cfg, &ctx) == GPUOS_OK) {
        printf("INFO probe.create_warm_ms %.2f (from_cache %d)\n", ms(t0, cuda_now_ns()), ctx->cuda->from_cache);
        gpuos_destroy(ctx);
    }
    return 0;
}
