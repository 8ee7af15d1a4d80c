/* cuda_loader.c - the CUDA driver, NVRTC and nvJitLink, loaded at run time.

   No CUDA header and no link-time dependency: each library is dlopen'ed once per
   process (on first use, under a mutex) and its entry points go into a table of
   function pointers (gpuos_runtime.h). A program built with gpuos.c therefore starts
   on machines without any of them; what is missing is reported as a status with the
   reason. The tables stay loaded for the life of the process.

   Also here: the NVRTC compile and nvJitLink link helpers the CUDA backend uses, and
   gpuos_compile_device_code, which checks that the generated device source compiles. */
#include "gpuos_runtime.h"

#include <dlfcn.h>  /* dlopen, dlsym, dlerror */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* getenv, malloc, free */
#include <string.h> /* memcpy, strlen */

static pthread_mutex_t loader_mu = PTHREAD_MUTEX_INITIALIZER;

/* One library: its table, whether it was tried, and why it failed. */
typedef struct loader_lib {
    int tried;
    int ok;
    void *handle;
    char why[512];
} loader_lib;

/* A table entry: a symbol and where its pointer goes. alt is a second name to try
   (versioned symbols); required entries make the load fail when missing. */
typedef struct loader_sym {
    const char *name;
    const char *alt;
    size_t offset;
    int required;
} loader_sym;

static void loader_copy(char *dst, size_t size, const char *src) {
    size_t n;
    if (!dst || size == 0) return;
    n = strlen(src);
    if (n >= size) n = size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* dlopen the first of names (NULL-terminated) that loads through the loader's search
   path, else the first that loads from one of dirs (NULL-terminated, "" skipped). */
static void *loader_open(const char *const *names, const char *const *dirs, char *why, size_t why_size) {
    const char *const *n;
    const char *const *d;
    char path[1024];
    void *h;
    for (n = names; *n; n++) {
        const char *err;
        h = dlopen(*n, RTLD_NOW | RTLD_LOCAL);
        if (h) return h;
        err = dlerror();
        snprintf(why, why_size, "%s", err ? err : "dlopen failed");
    }
    for (d = dirs; d && *d; d++) {
        if (!**d) continue;
        for (n = names; *n; n++) {
            snprintf(path, sizeof path, "%s/%s", *d, *n);
            h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (h) return h;
        }
    }
    return NULL;
}

/* Fills table from handle; 0 (with why) when a required symbol is missing. */
static int loader_bind(void *handle, void *table, const loader_sym *syms, size_t n, char *why, size_t why_size) {
    size_t i;
    for (i = 0; i < n; i++) {
        void *p = dlsym(handle, syms[i].name);
        if (!p && syms[i].alt) p = dlsym(handle, syms[i].alt);
        if (!p && syms[i].required) {
            snprintf(why, why_size, "symbol %s not found", syms[i].name);
            return 0;
        }
        memcpy((char *)table + syms[i].offset, &p, sizeof p); /* data -> function pointer, as POSIX allows */
    }
    return 1;
}

/* Library directories beyond the loader's search path: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda. */
static void loader_dirs(char bufs[3][512], const char *dirs[4]) {
    const char *home = getenv("CUDA_HOME"), *path = getenv("CUDA_PATH");
    snprintf(bufs[0], 512, "%s/lib64", home ? home : "");
    snprintf(bufs[1], 512, "%s/lib64", path ? path : "");
    snprintf(bufs[2], 512, "/usr/local/cuda/lib64");
    dirs[0] = home ? bufs[0] : "";
    dirs[1] = path ? bufs[1] : "";
    dirs[2] = bufs[2];
    dirs[3] = NULL;
}

/* Loads lib once: names, then the directories; binds syms into table. */
static int loader_load(loader_lib *lib, const char *what, const char *const *names, int search_dirs, void *table,
                       const loader_sym *syms, size_t n_syms, char *why, size_t why_size) {
    int ok;
    pthread_mutex_lock(&loader_mu);
    if (!lib->tried) {
        char bufs[3][512];
        const char *dirs[4];
        char reason[400] = "not found";
        lib->tried = 1;
        if (search_dirs) loader_dirs(bufs, dirs);
        lib->handle = loader_open(names, search_dirs ? dirs : NULL, reason, sizeof reason);
        if (!lib->handle) {
            snprintf(lib->why, sizeof lib->why, "%s cannot be loaded: %s", what, reason);
        } else if (!loader_bind(lib->handle, table, syms, n_syms, reason, sizeof reason)) {
            snprintf(lib->why, sizeof lib->why, "%s is unusable: %s", what, reason);
            dlclose(lib->handle);
            lib->handle = NULL;
        } else {
            lib->ok = 1;
        }
    }
    ok = lib->ok;
    if (!ok) loader_copy(why, why_size, lib->why);
    pthread_mutex_unlock(&loader_mu);
    return ok;
}

#define LOADER_SYM(T, field, name, alt, req) {name, alt, offsetof(T, field), req}

/* ---------------------------------------------------------------- CUDA driver */
static loader_lib loader_cuda;
static gpuos__cuda_api loader_cuda_api;

static const loader_sym loader_cuda_syms[] = {
    LOADER_SYM(gpuos__cuda_api, cuInit, "cuInit", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuDriverGetVersion, "cuDriverGetVersion", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuGetErrorName, "cuGetErrorName", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuGetErrorString, "cuGetErrorString", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuDeviceGetCount, "cuDeviceGetCount", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuDeviceGet, "cuDeviceGet", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuDeviceGetName, "cuDeviceGetName", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuDeviceGetAttribute, "cuDeviceGetAttribute", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease", 1),
    LOADER_SYM(gpuos__cuda_api, cuCtxSetCurrent, "cuCtxSetCurrent", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuCtxSynchronize, "cuCtxSynchronize", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuModuleLoadData, "cuModuleLoadData", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuModuleUnload, "cuModuleUnload", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuModuleGetFunction, "cuModuleGetFunction", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuModuleGetGlobal, "cuModuleGetGlobal_v2", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuFuncSetAttribute, "cuFuncSetAttribute", NULL, 0),
    LOADER_SYM(gpuos__cuda_api, cuFuncGetAttribute, "cuFuncGetAttribute", NULL, 0),
    LOADER_SYM(gpuos__cuda_api, cuLaunchKernel, "cuLaunchKernel", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuStreamCreate, "cuStreamCreate", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuStreamDestroy, "cuStreamDestroy_v2", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuStreamSynchronize, "cuStreamSynchronize", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuStreamQuery, "cuStreamQuery", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuMemAlloc, "cuMemAlloc_v2", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuMemFree, "cuMemFree_v2", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuMemHostAlloc, "cuMemHostAlloc", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuMemFreeHost, "cuMemFreeHost", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuMemcpyDtoH, "cuMemcpyDtoH_v2", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuMemsetD8Async, "cuMemsetD8Async", NULL, 1),
    LOADER_SYM(gpuos__cuda_api, cuOccupancyMaxActiveBlocksPerMultiprocessor,
               "cuOccupancyMaxActiveBlocksPerMultiprocessor", NULL, 1),
};

const gpuos__cuda_api *gpuos__cuda_load(char *why, size_t why_size) {
    static const char *const names[] = {"libcuda.so.1", "libcuda.so", NULL};
    /* The driver comes with the kernel module; never search toolkit directories for it. */
    if (!loader_load(&loader_cuda, "the CUDA driver (libcuda.so.1)", names, 0, &loader_cuda_api, loader_cuda_syms,
                     sizeof loader_cuda_syms / sizeof loader_cuda_syms[0], why, why_size))
        return NULL;
    return &loader_cuda_api;
}

/* ---------------------------------------------------------------- NVRTC */
static loader_lib loader_nvrtc;
static gpuos__nvrtc_api loader_nvrtc_api;

static const loader_sym loader_nvrtc_syms[] = {
    LOADER_SYM(gpuos__nvrtc_api, nvrtcGetErrorString, "nvrtcGetErrorString", NULL, 1),
    LOADER_SYM(gpuos__nvrtc_api, nvrtcVersion, "nvrtcVersion", NULL, 1),
    LOADER_SYM(gpuos__nvrtc_api, nvrtcCreateProgram, "nvrtcCreateProgram", NULL, 1),
    LOADER_SYM(gpuos__nvrtc_api, nvrtcDestroyProgram, "nvrtcDestroyProgram", NULL, 1),
    LOADER_SYM(gpuos__nvrtc_api, nvrtcCompileProgram, "nvrtcCompileProgram", NULL, 1),
    LOADER_SYM(gpuos__nvrtc_api, nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", NULL, 1),
    LOADER_SYM(gpuos__nvrtc_api, nvrtcGetProgramLog, "nvrtcGetProgramLog", NULL, 1),
    LOADER_SYM(gpuos__nvrtc_api, nvrtcGetPTXSize, "nvrtcGetPTXSize", NULL, 1),
    LOADER_SYM(gpuos__nvrtc_api, nvrtcGetPTX, "nvrtcGetPTX", NULL, 1),
    LOADER_SYM(gpuos__nvrtc_api, nvrtcGetCUBINSize, "nvrtcGetCUBINSize", NULL, 0),
    LOADER_SYM(gpuos__nvrtc_api, nvrtcGetCUBIN, "nvrtcGetCUBIN", NULL, 0),
};

const gpuos__nvrtc_api *gpuos__nvrtc_load(char *why, size_t why_size) {
    static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", NULL};
    if (!loader_load(&loader_nvrtc, "NVRTC (libnvrtc.so)", names, 1, &loader_nvrtc_api, loader_nvrtc_syms,
                     sizeof loader_nvrtc_syms / sizeof loader_nvrtc_syms[0], why, why_size))
        return NULL;
    pthread_mutex_lock(&loader_mu);
    if (loader_nvrtc_api.version_major == 0 &&
        loader_nvrtc_api.nvrtcVersion(&loader_nvrtc_api.version_major, &loader_nvrtc_api.version_minor) != 0)
        loader_nvrtc_api.version_major = loader_nvrtc_api.version_minor = 0;
    pthread_mutex_unlock(&loader_mu);
    return &loader_nvrtc_api;
}

/* ---------------------------------------------------------------- nvJitLink */
static loader_lib loader_nvjitlink;
static gpuos__nvjitlink_api loader_nvjitlink_api;

/* The library exports versioned names (__nvJitLinkCreate_13_0); CUDA 13 also plain ones. */
#define LOADER_JL(field, major)                                                                                 \
    LOADER_SYM(gpuos__nvjitlink_api, field, #field, "__" #field "_" #major "_0", 1)
static const loader_sym loader_nvjitlink_syms13[] = {
    LOADER_JL(nvJitLinkCreate, 13), LOADER_JL(nvJitLinkDestroy, 13),
    LOADER_JL(nvJitLinkAddData, 13), LOADER_JL(nvJitLinkComplete, 13),
    LOADER_JL(nvJitLinkGetLinkedCubinSize, 13), LOADER_JL(nvJitLinkGetLinkedCubin, 13),
    LOADER_JL(nvJitLinkGetErrorLogSize, 13), LOADER_JL(nvJitLinkGetErrorLog, 13),
    LOADER_JL(nvJitLinkGetInfoLogSize, 13), LOADER_JL(nvJitLinkGetInfoLog, 13),
};
static const loader_sym loader_nvjitlink_syms12[] = {
    LOADER_JL(nvJitLinkCreate, 12), LOADER_JL(nvJitLinkDestroy, 12),
    LOADER_JL(nvJitLinkAddData, 12), LOADER_JL(nvJitLinkComplete, 12),
    LOADER_JL(nvJitLinkGetLinkedCubinSize, 12), LOADER_JL(nvJitLinkGetLinkedCubin, 12),
    LOADER_JL(nvJitLinkGetErrorLogSize, 12), LOADER_JL(nvJitLinkGetErrorLog, 12),
    LOADER_JL(nvJitLinkGetInfoLogSize, 12), LOADER_JL(nvJitLinkGetInfoLog, 12),
};

const gpuos__nvjitlink_api *gpuos__nvjitlink_load(char *why, size_t why_size) {
    static const char *const names13[] = {"libnvJitLink.so.13", NULL};
    static const char *const names12[] = {"libnvJitLink.so.12", "libnvJitLink.so", NULL};
    static loader_lib lib12;
    char why13[512];
    if (loader_load(&loader_nvjitlink, "nvJitLink (libnvJitLink.so.13)", names13, 1, &loader_nvjitlink_api,
                    loader_nvjitlink_syms13, sizeof loader_nvjitlink_syms13 / sizeof loader_nvjitlink_syms13[0],
                    why13, sizeof why13))
        return &loader_nvjitlink_api;
    if (loader_load(&lib12, "nvJitLink (libnvJitLink.so.12)", names12, 1, &loader_nvjitlink_api,
                    loader_nvjitlink_syms12, sizeof loader_nvjitlink_syms12 / sizeof loader_nvjitlink_syms12[0], why,
                    why_size))
        return &loader_nvjitlink_api;
    if (why && why_size) {
        char both[1100];
        snprintf(both, sizeof both, "%s; %s", why13, why);
        loader_copy(why, why_size, both);
    }
    return NULL;
}

/* ---------------------------------------------------------------- NVRTC compile */
/* A malloc'd copy of s ("" when s is NULL); NULL when out of memory. */
static char *loader_strdup(const char *s) {
    size_t n = s ? strlen(s) : 0;
    char *p = (char *)malloc(n + 1);
    if (p) {
        if (n) memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

gpuos_status gpuos__nvrtc_compile(const gpuos_context *ctx, const char *source, const char *name,
                                  const char *const *options, int n_options, int want_cubin, void **code,
                                  size_t *code_size, char **log) {
    const gpuos__nvrtc_api *api;
    gpuos__nvrtcProgram prog = NULL;
    gpuos__nvrtcResult rc;
    size_t log_size = 0, size = 0;
    char why[512];
    char *buf = NULL;
    *code = NULL;
    *code_size = 0;
    *log = NULL;
    if (!(api = gpuos__nvrtc_load(why, sizeof why))) {
        *log = loader_strdup(why);
        return gpuos__set_error(ctx, GPUOS_ERR_UNSUPPORTED, "cannot compile device code: %s", why);
    }
    if (want_cubin && (!api->nvrtcGetCUBINSize || !api->nvrtcGetCUBIN)) {
        *log = loader_strdup("this NVRTC cannot produce CUBIN");
        return gpuos__set_error(ctx, GPUOS_ERR_UNSUPPORTED, "cannot compile device code: this NVRTC (%d.%d) cannot "
                                "produce CUBIN", api->version_major, api->version_minor);
    }
    rc = api->nvrtcCreateProgram(&prog, source, name ? name : "gpuos.cu", 0, NULL, NULL);
    if (rc != 0) {
        *log = loader_strdup(api->nvrtcGetErrorString(rc));
        return gpuos__set_error(ctx, rc == 1 ? GPUOS_ERR_OUT_OF_MEMORY : GPUOS_ERR_COMPILE,
                                "nvrtcCreateProgram failed: %s", api->nvrtcGetErrorString(rc));
    }
    rc = api->nvrtcCompileProgram(prog, n_options, options);
    if (api->nvrtcGetProgramLogSize(prog, &log_size) == 0 && log_size > 0 && (*log = (char *)malloc(log_size + 1))) {
        if (api->nvrtcGetProgramLog(prog, *log) != 0) (*log)[0] = '\0';
        (*log)[log_size] = '\0';
    }
    if (!*log) *log = loader_strdup("");
    if (rc != 0) {
        gpuos__set_error(ctx, GPUOS_ERR_COMPILE, "NVRTC %d.%d failed (%s):\n%s", api->version_major,
                         api->version_minor, api->nvrtcGetErrorString(rc), *log ? *log : "(no log)");
        api->nvrtcDestroyProgram(&prog);
        return GPUOS_ERR_COMPILE;
    }
    rc = want_cubin ? api->nvrtcGetCUBINSize(prog, &size) : api->nvrtcGetPTXSize(prog, &size);
    if (rc == 0 && size > 0 && (buf = (char *)malloc(size)) != NULL)
        rc = want_cubin ? api->nvrtcGetCUBIN(prog, buf) : api->nvrtcGetPTX(prog, buf);
    api->nvrtcDestroyProgram(&prog);
    if (rc != 0 || !buf) {
        free(buf);
        return gpuos__set_error(ctx, rc != 0 ? GPUOS_ERR_COMPILE : GPUOS_ERR_OUT_OF_MEMORY,
                                "NVRTC compiled but the %s could not be retrieved (%s)", want_cubin ? "CUBIN" : "PTX",
                                rc != 0 ? api->nvrtcGetErrorString(rc) : "no memory");
    }
    *code = buf;
    *code_size = size;
    return GPUOS_OK;
}

/* ---------------------------------------------------------------- nvJitLink link */
static char *loader_jitlink_log(const gpuos__nvjitlink_api *api, gpuos__nvJitLinkHandle h, int error_log) {
    size_t n = 0;
    char *s;
    if ((error_log ? api->nvJitLinkGetErrorLogSize(h, &n) : api->nvJitLinkGetInfoLogSize(h, &n)) != 0) n = 0;
    s = (char *)malloc(n + 1);
    if (!s) return NULL;
    s[0] = '\0';
    if (n > 0 && (error_log ? api->nvJitLinkGetErrorLog(h, s) : api->nvJitLinkGetInfoLog(h, s)) != 0) s[0] = '\0';
    s[n] = '\0';
    return s;
}

gpuos_status gpuos__nvjitlink_link(const gpuos_context *ctx, const char *const *options, int n_options,
                                   const void *const *images, const size_t *sizes, const int *input_types,
                                   int n_images, void **cubin, size_t *cubin_size, char **log) {
    const gpuos__nvjitlink_api *api;
    gpuos__nvJitLinkHandle h = NULL;
    gpuos__nvJitLinkResult rc;
    char why[512];
    size_t size = 0;
    char *buf = NULL;
    int i;
    *cubin = NULL;
    *cubin_size = 0;
    *log = NULL;
    if (!(api = gpuos__nvjitlink_load(why, sizeof why))) {
        *log = loader_strdup(why);
        return gpuos__set_error(ctx, GPUOS_ERR_UNSUPPORTED, "cannot link device code: %s", why);
    }
    rc = api->nvJitLinkCreate(&h, (uint32_t)n_options, (const char **)options);
    if (rc != 0) {
        *log = loader_strdup("");
        return gpuos__set_error(ctx, GPUOS_ERR_COMPILE, "nvJitLinkCreate failed (error %d); check the options", rc);
    }
    for (i = 0; i < n_images && rc == 0; i++) {
        char name[32];
        snprintf(name, sizeof name, "gpuos_part%d", i);
        rc = api->nvJitLinkAddData(h, input_types[i], images[i], sizes[i], name);
    }
    if (rc == 0) rc = api->nvJitLinkComplete(h);
    if (rc != 0) {
        *log = loader_jitlink_log(api, h, 1);
        gpuos__set_error(ctx, GPUOS_ERR_COMPILE, "nvJitLink failed (error %d):\n%s", rc, *log ? *log : "(no log)");
        api->nvJitLinkDestroy(&h);
        return GPUOS_ERR_COMPILE;
    }
    *log = loader_jitlink_log(api, h, 0);
    rc = api->nvJitLinkGetLinkedCubinSize(h, &size);
    if (rc == 0 && size > 0 && (buf = (char *)malloc(size)) != NULL) rc = api->nvJitLinkGetLinkedCubin(h, buf);
    api->nvJitLinkDestroy(&h);
    if (rc != 0 || !buf) {
        free(buf);
        return gpuos__set_error(ctx, rc != 0 ? GPUOS_ERR_COMPILE : GPUOS_ERR_OUT_OF_MEMORY,
                                "nvJitLink linked but the CUBIN could not be retrieved (error %d)", rc);
    }
    *cubin = buf;
    *cubin_size = size;
    return GPUOS_OK;
}

/* ---------------------------------------------------------------- device source */
char *gpuos__device_source_joined(size_t *length) {
    size_t n = 0, i;
    char *s, *p;
    for (i = 0; gpuos__device_source[i]; i++) n += strlen(gpuos__device_source[i]);
    s = (char *)malloc(n + 1);
    if (!s) return NULL;
    for (i = 0, p = s; gpuos__device_source[i]; i++) {
        size_t k = strlen(gpuos__device_source[i]);
        memcpy(p, gpuos__device_source[i], k);
        p += k;
    }
    *p = '\0';
    if (length) *length = n;
    return s;
}

gpuos_status gpuos_compile_device_code(int arch_major, int arch_minor, char *log, size_t log_size) {
    char arch[64];
    const char *options[5];
    char *src, *nlog = NULL;
    void *code = NULL;
    size_t code_size = 0;
    gpuos_status st;
    if (log && log_size) log[0] = '\0';
    if (arch_major < 1 || arch_major > 99 || arch_minor < 0 || arch_minor > 9) {
        st = gpuos__set_error(NULL, GPUOS_ERR_INVALID_ARGUMENT,
                              "gpuos_compile_device_code: compute capability %d.%d is not valid (for example 9.0)",
                              arch_major, arch_minor);
        loader_copy(log, log_size, gpuos_last_error(NULL));
        return st;
    }
    snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", arch_major, arch_minor);
    options[0] = arch;
    options[1] = "-default-device";
    options[2] = "--std=c++17";
    options[3] = "-rdc=true";
    options[4] = "--maxrregcount=" GPUOS__STR(GPUOS__MAXRREG); /* as the runtime: the kernel's launch bounds */
    src = gpuos__device_source_joined(NULL);
    if (!src) {
        st = gpuos__set_error(NULL, GPUOS_ERR_OUT_OF_MEMORY, "gpuos_compile_device_code: no memory for the source");
        loader_copy(log, log_size, gpuos_last_error(NULL));
        return st;
    }
    st = gpuos__nvrtc_compile(NULL, src, "gpuos_device.cu", options, 5, 1, &code, &code_size, &nlog);
    if (st != GPUOS_OK) loader_copy(log, log_size, nlog && nlog[0] ? nlog : gpuos_last_error(NULL));
    free(code);
    free(nlog);
    free(src);
    return st;
}
