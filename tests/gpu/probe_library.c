/* probe_library.c - can a module generation be loaded while the persistent kernel runs, so that
   a swap pauses for less than a whole cuModuleLoadData? (issue 4, swap_pause_us; not a test).
   Defines one run-time operator (so a generation is linked), re-links the same images, then
   with the kernel RUNNING times cuLibraryLoadData, stops the kernel, and times what is left
   (cuLibraryGetKernel, cuKernelGetFunction, a register query, cuLibraryGetGlobal), against
   cuModuleLoadData + cuModuleGetFunction of the same cubin with the kernel stopped. */
#include "../../gpuos.c"
#include <dlfcn.h>
#include <stdio.h>

typedef int (*lib_load_fn)(void **, const void *, void *, void **, unsigned, void *, void **, unsigned);
typedef int (*lib_kernel_fn)(void **, void *, const char *);
typedef int (*kernel_func_fn)(void **, void *);
typedef int (*lib_global_fn)(unsigned long long *, size_t *, void *, const char *);
typedef int (*func_attr_fn)(int *, int, void *);

static double ms(uint64_t a, uint64_t b) { return (double)(b - a) / 1e6; }

int main(void) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx;
    gpuos_op_def d = GPUOS_OP_DEF_INIT;
    gpuos_op op;
    gpuos_tensor *x, *one;
    int64_t n = 4096;
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    lib_load_fn lload = (lib_load_fn)dlsym(h, "cuLibraryLoadData");
    lib_kernel_fn lkern = (lib_kernel_fn)dlsym(h, "cuLibraryGetKernel");
    kernel_func_fn kfunc = (kernel_func_fn)dlsym(h, "cuKernelGetFunction");
    lib_global_fn lglob = (lib_global_fn)dlsym(h, "cuLibraryGetGlobal");
    func_attr_fn fattr = (func_attr_fn)dlsym(h, "cuFuncGetAttribute");
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!lload || !lkern || !kfunc || !lglob || !fattr) { printf("no cuLibrary API\n"); return 1; }
    cfg.device = 0;
    cfg.idle_ms = 60000;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) { printf("%s\n", gpuos_last_error(NULL)); return 1; }
    struct gpuos__cuda *c = ctx->cuda;
    d.name = "probe_op";
    d.source = "out = a * 2.0f + 1.0f;";
    d.n_inputs = 1;
    if (gpuos_op_define(ctx, &d, &op) != GPUOS_OK) { printf("%s\n", gpuos_last_error(ctx)); return 1; }
    /* the same images as that generation */
    gpuos__rt_version *v = ctx->rt_cur[0];
    const void *img[CUDA__MAX_PARTS + 1];
    size_t sz[CUDA__MAX_PARTS + 1];
    int ty[CUDA__MAX_PARTS + 1], k, nimg = 0;
    for (k = 0; k < c->n_parts; k++) { img[nimg] = c->part_img[k]; sz[nimg] = c->part_size[k]; ty[nimg++] = GPUOS__NVJITLINK_INPUT_CUBIN; }
    img[nimg] = v->obj; sz[nimg] = v->obj_size; ty[nimg++] = GPUOS__NVJITLINK_INPUT_CUBIN;
    char larch[32];
    const char *lo[1] = {larch};
    void *cubin = NULL;
    size_t cubin_n = 0;
    char *log = NULL;
    snprintf(larch, sizeof larch, "-arch=sm_%d%d", c->cc_major, c->cc_minor);
    if (gpuos__nvjitlink_link(ctx, lo, 1, img, sz, ty, nimg, &cubin, &cubin_n, &log)) { printf("link failed\n"); return 1; }
    printf("INFO generation cubin %zu bytes\n", cubin_n);
    gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &x);
    gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one);
    for (int rep = 0; rep < 3; rep++) {
        uint64_t t0, t1, t2, t3, t4;
        void *lib = NULL, *kern = NULL, *fn = NULL;
        unsigned long long gp = 0;
        size_t gsz = 0;
        int regs = 0, r1, r2, r3, r4, r5;
        gpuos_add(ctx, x, x, one);
        gpuos_wait(ctx, 10000);
        pthread_mutex_lock(&ctx->mu);
        printf("kernel running: %d; cuLibraryLoadData ...\n", c->running);
        c->cu->cuCtxSetCurrent(c->cuctx);
        t0 = cuda_now_ns();
        r1 = lload(&lib, cubin, NULL, NULL, 0, NULL, NULL, 0);
        t1 = cuda_now_ns();
        cuda_stop_kernel_locked(ctx);
        t2 = cuda_now_ns();
        r2 = lkern(&kern, lib, "gpuos__pk_main");
        r3 = kfunc(&fn, kern);
        r4 = fattr(&regs, 4 /* NUM_REGS */, fn);
        r5 = lglob(&gp, &gsz, lib, "gpuos__rt_table");
        t3 = cuda_now_ns();
        pthread_mutex_unlock(&ctx->mu);
        printf("library: load while running %.3f ms (rc %d); stop %.3f ms; then kernel+function+attr+global %.3f ms (rc %d %d %d %d, regs %d)\n",
               ms(t0, t1), r1, ms(t1, t2), ms(t2, t3), r2, r3, r4, r5, regs);
        /* the module path, kernel stopped */
        {
            gpuos__CUmodule m;
            gpuos__CUfunction f;
            pthread_mutex_lock(&ctx->mu);
            t3 = cuda_now_ns();
            c->cu->cuModuleLoadData(&m, cubin);
            c->cu->cuModuleGetFunction(&f, m, "gpuos__pk_main");
            fattr(&regs, 4, f);
            t4 = cuda_now_ns();
            c->cu->cuModuleUnload(m);
            pthread_mutex_unlock(&ctx->mu);
            printf("module: load + function + attr (kernel stopped) %.3f ms\n", ms(t3, t4));
        }
    }
    printf("status %s\n", gpuos_last_error(ctx));
    gpuos_destroy(ctx);
    _exit(0);
}
