/* nvrtc_compile.c - compile a CUDA source with NVRTC (loaded with dlopen), as the
   runtime does, and report the time it took. No GPU is needed.

   cc -std=c99 -O2 tests/gpu/nvrtc_compile.c -o build/nvrtc_compile -ldl
   build/nvrtc_compile [-o out.cubin] [-ptx out.ptx] file.cu [nvrtc options...]
   Without options it uses the runtime's: --gpu-architecture=sm_90 -default-device
   --std=c++17 -rdc=true --maxrregcount=128 (without the cap ptxas refuses the persistent
   kernel's calls of uncapped functions). Exit status 0 when the source compiles. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>  /* dlopen, dlsym */
#include <stdio.h>  /* fopen, printf */
#include <stdlib.h> /* malloc */
#include <string.h> /* strcmp */
#include <time.h>   /* clock_gettime */

typedef struct nvrtc_program_ *nvrtc_program;
typedef int (*create_fn)(nvrtc_program *, const char *, const char *, int, const char *const *,
                         const char *const *);
typedef int (*compile_fn)(nvrtc_program, int, const char *const *);
typedef int (*size_fn)(nvrtc_program, size_t *);
typedef int (*get_fn)(nvrtc_program, char *);
typedef int (*destroy_fn)(nvrtc_program *);

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); buf = NULL; }
    if (buf) buf[n] = 0;
    fclose(f);
    return buf;
}

static int write_file(const char *path, const char *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(data, 1, n, f);
    fclose(f);
    return w == n ? 0 : -1;
}

int main(int argc, char **argv) {
    const char *cubin_path = NULL, *ptx_path = NULL, *src_path = NULL;
    const char *opts[64];
    int n_opts = 0, i = 1;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc) cubin_path = argv[++i];
        else if (!strcmp(argv[i], "-ptx") && i + 1 < argc) ptx_path = argv[++i];
        else { src_path = argv[i++]; break; }
    }
    for (; i < argc && n_opts < 64; i++) opts[n_opts++] = argv[i];
    if (!src_path) { fprintf(stderr, "usage: %s [-o out.cubin] [-ptx out.ptx] file.cu [options]\n", argv[0]); return 2; }
    if (n_opts == 0) {
        opts[n_opts++] = "--gpu-architecture=sm_90";
        opts[n_opts++] = "-default-device";
        opts[n_opts++] = "--std=c++17";
        opts[n_opts++] = "-rdc=true";
        opts[n_opts++] = "--maxrregcount=128";
    }
    const char *libs[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so"};
    void *lib = NULL;
    for (size_t k = 0; k < sizeof libs / sizeof libs[0] && !lib; k++) lib = dlopen(libs[k], RTLD_NOW);
    if (!lib) { fprintf(stderr, "cannot load NVRTC: %s\n", dlerror()); return 2; }
    create_fn create = (create_fn)dlsym(lib, "nvrtcCreateProgram");
    compile_fn compile = (compile_fn)dlsym(lib, "nvrtcCompileProgram");
    size_fn log_size = (size_fn)dlsym(lib, "nvrtcGetProgramLogSize");
    get_fn get_log = (get_fn)dlsym(lib, "nvrtcGetProgramLog");
    size_fn cubin_size = (size_fn)dlsym(lib, "nvrtcGetCUBINSize");
    get_fn get_cubin = (get_fn)dlsym(lib, "nvrtcGetCUBIN");
    size_fn ptx_size = (size_fn)dlsym(lib, "nvrtcGetPTXSize");
    get_fn get_ptx = (get_fn)dlsym(lib, "nvrtcGetPTX");
    destroy_fn destroy = (destroy_fn)dlsym(lib, "nvrtcDestroyProgram");
    if (!create || !compile || !log_size || !get_log || !cubin_size || !get_cubin || !destroy) {
        fprintf(stderr, "NVRTC symbols missing\n");
        return 2;
    }
    char *src = read_file(src_path);
    if (!src) { fprintf(stderr, "cannot read %s\n", src_path); return 2; }
    nvrtc_program prog;
    double t0 = now_s();
    if (create(&prog, src, src_path, 0, NULL, NULL) != 0) { fprintf(stderr, "nvrtcCreateProgram failed\n"); return 2; }
    int rc = compile(prog, n_opts, opts);
    double t1 = now_s();
    size_t n = 0;
    log_size(prog, &n);
    if (n > 1) {
        char *log = malloc(n);
        get_log(prog, log);
        fprintf(stderr, "%s\n", log);
        free(log);
    }
    printf("nvrtc: %s in %.2f s (%zu bytes of source)\n", rc == 0 ? "compiled" : "FAILED", t1 - t0, strlen(src));
    if (rc == 0 && cubin_path) {
        cubin_size(prog, &n);
        char *bin = malloc(n);
        get_cubin(prog, bin);
        if (write_file(cubin_path, bin, n)) fprintf(stderr, "cannot write %s\n", cubin_path);
        free(bin);
    }
    if (rc == 0 && ptx_path && ptx_size && get_ptx) {
        ptx_size(prog, &n);
        char *ptx = malloc(n);
        get_ptx(prog, ptx);
        if (write_file(ptx_path, ptx, n - 1)) fprintf(stderr, "cannot write %s\n", ptx_path);
        free(ptx);
    }
    destroy(&prog);
    return rc == 0 ? 0 : 1;
}
