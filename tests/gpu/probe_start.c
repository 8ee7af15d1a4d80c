/* probe_start.c - a fresh process's CUDA start, phase by phase (not a test): dlopen of
   libcuda, cuInit, cuDevicePrimaryCtxRetain + cuCtxSetCurrent, one cuMemAlloc, with or without
   a second thread loading NVRTC and nvJitLink meanwhile (as gpuos_create's preload does).
   Usage: probe_start [preload | hold S]   (device 0; one line of ms per run; hold: keep the
   context S seconds, so that other processes start beside a process that holds the GPU) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
static double pre_ms;
static void *preload(void *a) {
    double t0 = now();
    (void)a;
    (void)(dlopen("libnvrtc.so", RTLD_NOW | RTLD_LOCAL) || dlopen("libnvrtc.so.13", RTLD_NOW | RTLD_LOCAL) ||
           dlopen("libnvrtc.so.12", RTLD_NOW | RTLD_LOCAL));
    (void)(dlopen("libnvJitLink.so", RTLD_NOW | RTLD_LOCAL) || dlopen("libnvJitLink.so.13", RTLD_NOW | RTLD_LOCAL) ||
           dlopen("libnvJitLink.so.12", RTLD_NOW | RTLD_LOCAL));
    pre_ms = now() - t0;
    return NULL;
}
int main(int argc, char **argv) {
    typedef int (*init_t)(unsigned);
    typedef int (*get_t)(int *, int);
    typedef int (*retain_t)(void **, int);
    typedef int (*cur_t)(void *);
    typedef int (*alloc_t)(unsigned long long *, size_t);
    const int pre = argc > 1 && strcmp(argv[1], "preload") == 0;
    pthread_t th;
    double t0 = now(), t1, t2, t3, t4;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), *ctx = NULL;
    int dev = 0, r;
    unsigned long long p = 0;
    if (!h) { printf("no libcuda\n"); return 1; }
    t1 = now();
    if (pre) pthread_create(&th, NULL, preload, NULL);
    r = ((init_t)dlsym(h, "cuInit"))(0);
    t2 = now();
    r |= ((get_t)dlsym(h, "cuDeviceGet"))(&dev, 0);
    r |= ((retain_t)dlsym(h, "cuDevicePrimaryCtxRetain"))(&ctx, dev);
    r |= ((cur_t)dlsym(h, "cuCtxSetCurrent"))(ctx);
    t3 = now();
    r |= ((alloc_t)dlsym(h, "cuMemAlloc_v2"))(&p, 1 << 20);
    t4 = now();
    if (pre) pthread_join(th, NULL);
    printf("%s: dlopen libcuda %.1f, cuInit %.1f, primary context %.1f, cuMemAlloc %.1f ms; all %.1f%s (r %d)\n",
           pre ? "with preload" : "plain       ", t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0, "", r);
    if (pre) printf("    (the preload thread: %.1f ms)\n", pre_ms);
    if (argc > 2 && strcmp(argv[1], "hold") == 0) {
        fflush(stdout);
        sleep((unsigned)atoi(argv[2]));
    }
    return 0;
}
