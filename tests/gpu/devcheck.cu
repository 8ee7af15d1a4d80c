/* devcheck.cu - checks every device kernel against the host kernels (the reference).

   For every generated (op, dtype) - and every (src, dst) cast - and a set of shapes per
   kind (rank 1, 0-d, empty, broadcast, strided and negative-stride views, rank 5, in
   place), it builds the plan twice: on host memory for the host kernel, and with the
   pointers rebased onto cudaMalloc copies of the same bytes for gpuos__d_test_kernel.
   Both run on the same random inputs; the whole output buffer is compared (so stray
   writes outside the view show too): integers and bool exactly, floats with
   |d - h| <= tol (1 + |h|), NaN equal to NaN: f64 1e-12 (transcendental 1e-10),
   f32 1e-5, f16 2e-3, bf16 1.6e-2; casts, copies, fill, arange and where exactly;
   reductions, row-wise ops and matmul scaled by sqrt(elements combined).

   Build (tests/gpu/gpu.mk, `make test-gpu-dev`):
     nvcc -arch=sm_90 -std=c++17 -O2 -I. tests/gpu/devcheck.cu tests/gpu/devcheck_kernels.cu
          build/gpuos.o -o build/devcheck -lnvrtc -lnvJitLink -ldl -lpthread
   Run:  build/devcheck [--nvrtc [--maxrreg N]] [--op NAME] [--verbose]
     --nvrtc  the kernels come from the library's embedded source (gpuos__device_source),
              compiled with NVRTC (-rdc=true, as the runtime does), linked with nvJitLink
              and loaded with the driver API, instead of the nvcc-compiled copy.
     --maxrreg N  adds --maxrregcount=N to the NVRTC options.
   Launches use blocks of 32 to 1024 threads, clamped to what the kernel's registers
   allow (printed at the start).
   Prints `N passed, N failed`; exit status 1 when anything failed. */
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvJitLink.h>
#include <nvrtc.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

extern "C" {
#include "src/gpuos_ops.h"
int devcheck_launch(int kernel_id, const void *dplan, int64_t n_items, int64_t items_per_block, int grid,
                    int block);
int devcheck_max_threads(int *regs);
}

/* ================================================================ options, results */
static int g_nvrtc = 0, g_verbose = 0, g_maxrreg = 0;
static const char *g_only_op = NULL;
static long g_passed = 0, g_failed = 0;
static CUfunction g_nvrtc_fn = NULL;
static int g_max_block = 1024; /* the kernel's limit (registers); larger launches are clamped */

#define CUDA_OK(x)                                                                           \
    do {                                                                                     \
        cudaError_t e_ = (x);                                                                \
        if (e_ != cudaSuccess) {                                                             \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(2);                                                                         \
        }                                                                                    \
    } while (0)

/* ================================================================ random values */
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}
static double urand(void) { return (double)(rnd() >> 11) * (1.0 / 9007199254740992.0); }

/* V_ANY: floats include NaN, inf, -0, huge and tiny values; V_FINITE: floats in [-4, 4]
   (a tenth small integers, for ties); the others for particular operands. */
enum { V_ANY, V_FINITE, V_SHIFT, V_EXPONENT, V_NEAR1, V_SMALLINT };

static int is_float(int dt) { return dt == GPUOS_F16 || dt == GPUOS_BF16 || dt == GPUOS_F32 || dt == GPUOS_F64; }
static int dt_bits(int dt) { return (int)gpuos_dtype_size((gpuos_dtype)dt) * 8; }

static void store_double(int dt, void *p, double v) {
    switch (dt) {
    case GPUOS_F16: *(uint16_t *)p = gpuos__f64_to_f16(v); break;
    case GPUOS_BF16: *(uint16_t *)p = gpuos__f64_to_bf16(v); break;
    case GPUOS_F32: *(float *)p = (float)v; break;
    case GPUOS_F64: *(double *)p = v; break;
    default: break;
    }
}

static void store_int(int dt, void *p, int64_t v) {
    switch (dt) {
    case GPUOS_BOOL: *(uint8_t *)p = (uint8_t)(v != 0); break;
    case GPUOS_I8: *(int8_t *)p = (int8_t)v; break;
    case GPUOS_U8: *(uint8_t *)p = (uint8_t)v; break;
    case GPUOS_I16: *(int16_t *)p = (int16_t)v; break;
    case GPUOS_I32: *(int32_t *)p = (int32_t)v; break;
    case GPUOS_I64: *(int64_t *)p = v; break;
    default: break;
    }
}

/* One random element of dtype dt at p. */
static void random_value(int dt, void *p, int mode) {
    if (dt == GPUOS_BOOL) {
        store_int(dt, p, (int64_t)(rnd() & 1));
        return;
    }
    if (is_float(dt)) {
        double v;
        const uint64_t r = rnd() % 100;
        if (mode == V_NEAR1) v = 0.5 + urand();
        else if (mode == V_SMALLINT) v = (double)((int64_t)(rnd() % 7) - 3);
        else if (mode == V_FINITE) v = r < 10 ? (double)((int64_t)(rnd() % 9) - 4) : (urand() - 0.5) * 8.0;
        else if (r < 2) v = NAN;
        else if (r < 4) v = (r & 1) ? INFINITY : -INFINITY;
        else if (r < 6) v = (r & 1) ? 0.0 : -0.0;
        else if (r < 8) v = (urand() - 0.5) * (dt == GPUOS_F16 ? 1e5 : dt == GPUOS_F64 ? 1e300 : 1e36);
        else if (r < 10) v = (double)((int64_t)(rnd() % 9) - 4); /* ties for argmin, exact ints */
        else if (r < 12) v = (urand() - 0.5) * 1e-6;
        else v = (urand() - 0.5) * 8.0;
        store_double(dt, p, v);
        return;
    }
    const int bits = dt_bits(dt);
    int64_t v;
    if (mode == V_SHIFT) v = (int64_t)(rnd() % (uint64_t)(bits + 6)) - 3;
    else if (mode == V_EXPONENT) v = (int64_t)(rnd() % 16) - 3;
    else if (mode == V_NEAR1 || mode == V_SMALLINT) v = (int64_t)(rnd() % 7) - 3;
    else if (rnd() % 3 == 0) v = (int64_t)(rnd() % 21) - 10;
    else v = (int64_t)rnd();
    if (dt == GPUOS_U8 && (mode == V_NEAR1 || mode == V_SMALLINT || mode == V_EXPONENT)) v &= 7;
    store_int(dt, p, v);
}

/* ================================================================ element values and comparison */
static double load_double(int dt, const void *p) {
    switch (dt) {
    case GPUOS_F16: return gpuos__f16_to_f32(*(const uint16_t *)p);
    case GPUOS_BF16: return gpuos__bf16_to_f32(*(const uint16_t *)p);
    case GPUOS_F32: return *(const float *)p;
    case GPUOS_F64: return *(const double *)p;
    default: return 0;
    }
}

static int64_t load_int(int dt, const void *p) {
    switch (dt) {
    case GPUOS_BOOL: return *(const uint8_t *)p;
    case GPUOS_I8: return *(const int8_t *)p;
    case GPUOS_U8: return *(const uint8_t *)p;
    case GPUOS_I16: return *(const int16_t *)p;
    case GPUOS_I32: return *(const int32_t *)p;
    case GPUOS_I64: return *(const int64_t *)p;
    default: return 0;
    }
}

static double base_tol(int dt, int transcendental) {
    switch (dt) {
    case GPUOS_F16: return 2e-3;
    case GPUOS_BF16: return 1.6e-2;
    case GPUOS_F32: return 1e-5;
    case GPUOS_F64: return transcendental ? 1e-10 : 1e-12;
    default: return 0;
    }
}

static int close_enough(double d, double h, double tol) {
    if (d != d || h != h) return d != d && h != h;
    if (d == h) return 1;
    if (isinf(d) || isinf(h)) return 0;
    return fabs(d - h) <= tol * (1.0 + fabs(h));
}

/* ================================================================ buffers and views */
struct Buf {
    std::vector<unsigned char> h; /* host copy (the host kernel works on it) */
    std::vector<unsigned char> init; /* content before the run */
    void *d = NULL;
};

struct View {
    int dt = 0;
    int rank = 0;
    int64_t shape[GPUOS_MAX_RANK] = {0};
    int64_t st[GPUOS_MAX_RANK] = {0}; /* elements */
    int64_t off = 0;                  /* elements */
    int buf = -1;
    int64_t numel() const {
        int64_t n = 1;
        for (int d = 0; d < rank; ++d) n *= shape[d];
        return n;
    }
};

enum { L_C, L_T, L_NEG };

struct Case {
    std::vector<Buf> bufs;
    std::string what;

    /* A view of a fresh buffer: L_C row-major, L_T column-major, L_NEG row-major with
       every other element of the last axis and axis 0 walked backwards. */
    View view(int dt, int rank, const int64_t *shape, int layout, int mode) {
        View v;
        v.dt = dt;
        v.rank = rank;
        int64_t numel = 1;
        for (int d = 0; d < rank; ++d) {
            v.shape[d] = shape[d];
            numel *= shape[d];
        }
        int64_t s = layout == L_NEG ? 2 : 1;
        if (layout == L_T) {
            for (int d = 0; d < rank; ++d) {
                v.st[d] = s;
                s *= shape[d] > 0 ? shape[d] : 1;
            }
        } else {
            for (int d = rank - 1; d >= 0; --d) {
                v.st[d] = s;
                s *= shape[d] > 0 ? shape[d] : 1;
            }
        }
        if (layout == L_NEG && rank > 0 && shape[0] > 0) {
            v.off = (shape[0] - 1) * v.st[0];
            v.st[0] = -v.st[0];
        }
        int64_t span = 1;
        if (numel > 0)
            for (int d = 0; d < rank; ++d) span += (shape[d] - 1) * (v.st[d] < 0 ? -v.st[d] : v.st[d]);
        if (layout == L_NEG) span += 1; /* a gap at the end too */
        const size_t es = gpuos_dtype_size((gpuos_dtype)dt);
        Buf b;
        b.h.resize((size_t)span * es + 16);
        for (size_t i = 0; i + es <= b.h.size(); i += es) random_value(dt, &b.h[i], mode);
        bufs.push_back(b);
        v.buf = (int)bufs.size() - 1;
        return v;
    }

    char *ptr(const View &v) { return (char *)&bufs[v.buf].h[0] + v.off * (int64_t)gpuos_dtype_size((gpuos_dtype)v.dt); }

    /* Byte strides of v aligned to the right of a plan of rank r and shape shape (0 where
       v broadcasts). */
    void bstrides(const View &v, int r, const int64_t *shape, int64_t *out) {
        const int64_t es = (int64_t)gpuos_dtype_size((gpuos_dtype)v.dt);
        for (int d = 0; d < r; ++d) {
            const int vd = d - (r - v.rank);
            out[d] = (vd < 0 || (v.shape[vd] == 1 && shape[d] != 1)) ? 0 : v.st[vd] * es;
        }
    }

    /* Device copies of every buffer; returns the device address of host address p. */
    void upload() {
        for (auto &b : bufs) {
            b.init = b.h;
            CUDA_OK(cudaMalloc(&b.d, b.h.size()));
            CUDA_OK(cudaMemcpy(b.d, &b.h[0], b.h.size(), cudaMemcpyHostToDevice));
        }
    }
    template <class P> P *rebase(P *p) {
        if (!p) return NULL;
        for (auto &b : bufs) {
            const char *lo = (const char *)&b.h[0];
            if ((const char *)p >= lo && (const char *)p < lo + b.h.size())
                return (P *)((char *)b.d + ((const char *)p - lo));
        }
        fprintf(stderr, "devcheck: a plan pointer outside every buffer (%s)\n", what.c_str());
        exit(2);
    }
    ~Case() {
        for (auto &b : bufs)
            if (b.d) cudaFree(b.d);
    }
};

/* ================================================================ running the device kernel */
static void nvrtc_setup(void) {
    std::string src;
    for (const char *const *p = gpuos__device_source; *p; ++p) src += *p;
    nvrtcProgram prog;
    if (nvrtcCreateProgram(&prog, src.c_str(), "gpuos_device.cu", 0, NULL, NULL) != NVRTC_SUCCESS) exit(2);
    char cap[32];
    snprintf(cap, sizeof cap, "--maxrregcount=%d", g_maxrreg);
    const char *opts[] = {"--gpu-architecture=sm_90", "-default-device", "--std=c++17", "-rdc=true", cap};
    const nvrtcResult rc = nvrtcCompileProgram(prog, g_maxrreg > 0 ? 5 : 4, opts);
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    nvrtcGetProgramLog(prog, &log[0]);
    if (rc != NVRTC_SUCCESS) {
        fprintf(stderr, "devcheck: NVRTC failed:\n%s\n", log.c_str());
        exit(2);
    }
    nvrtcGetCUBINSize(prog, &n);
    std::vector<char> cubin(n);
    nvrtcGetCUBIN(prog, &cubin[0]);
    nvrtcDestroyProgram(&prog);
    nvJitLinkHandle lk;
    const char *lopts[] = {"-arch=sm_90"};
    if (nvJitLinkCreate(&lk, 1, lopts) != NVJITLINK_SUCCESS ||
        nvJitLinkAddData(lk, NVJITLINK_INPUT_CUBIN, &cubin[0], n, "gpuos_device") != NVJITLINK_SUCCESS ||
        nvJitLinkComplete(lk) != NVJITLINK_SUCCESS) {
        fprintf(stderr, "devcheck: nvJitLink failed\n");
        exit(2);
    }
    nvJitLinkGetLinkedCubinSize(lk, &n);
    std::vector<char> linked(n);
    nvJitLinkGetLinkedCubin(lk, &linked[0]);
    nvJitLinkDestroy(&lk);
    /* the driver API through the runtime's entry points: no -lcuda */
    typedef CUresult (*load_t)(CUmodule *, const void *);
    typedef CUresult (*getf_t)(CUfunction *, CUmodule, const char *);
    load_t load = NULL;
    getf_t getf = NULL;
    cudaDriverEntryPointQueryResult q;
    CUDA_OK(cudaFree(0));
    CUDA_OK(cudaGetDriverEntryPointByVersion("cuModuleLoadData", (void **)&load, 12000, cudaEnableDefault, &q));
    CUDA_OK(cudaGetDriverEntryPointByVersion("cuModuleGetFunction", (void **)&getf, 12000, cudaEnableDefault, &q));
    CUmodule mod;
    if (!load || !getf || load(&mod, &linked[0]) != CUDA_SUCCESS ||
        getf(&g_nvrtc_fn, mod, "gpuos__d_test_kernel") != CUDA_SUCCESS) {
        fprintf(stderr, "devcheck: cannot load the NVRTC module\n");
        exit(2);
    }
}

static void launch(int id, const void *dplan, int64_t n_items, int64_t ipb, int block) {
    if (block > g_max_block) block = g_max_block;
    int64_t blocks = ipb > 0 ? (n_items + ipb - 1) / ipb : 1;
    if (blocks < 1) blocks = 1;
    if (blocks > 264) blocks = 264;
    if (g_nvrtc) {
        typedef CUresult (*launch_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                     unsigned, CUstream, void **, void **);
        static launch_t fn = NULL;
        if (!fn) {
            cudaDriverEntryPointQueryResult q;
            CUDA_OK(cudaGetDriverEntryPointByVersion("cuLaunchKernel", (void **)&fn, 12000, cudaEnableDefault, &q));
        }
        void *args[] = {&id, &dplan, &n_items, &ipb};
        if (fn(g_nvrtc_fn, (unsigned)blocks, 1, 1, (unsigned)block, 1, 1, 0, 0, args, NULL) != CUDA_SUCCESS) {
            fprintf(stderr, "devcheck: cuLaunchKernel failed\n");
            exit(2);
        }
    } else {
        CUDA_OK((cudaError_t)devcheck_launch(id, dplan, n_items, ipb, (int)blocks, block));
    }
    CUDA_OK(cudaDeviceSynchronize());
}

/* Runs the device kernel on a copy of the plan whose pointers were rebased (dplan_host),
   for each launch shape, comparing after each against the host result in c.bufs[].h.
   Returns the number of mismatching elements of the first failing launch. */
struct Launch {
    int block;
    int64_t ipb; /* 0: all items in one block */
};

static void report(bool ok, const Case &c, const char *detail) {
    if (ok) {
        ++g_passed;
        if (g_verbose) printf("ok   %s\n", c.what.c_str());
    } else {
        ++g_failed;
        printf("FAIL %s: %s\n", c.what.c_str(), detail);
    }
}

/* Compares output view buffer out_buf (element dtype dt) device vs host. */
static bool compare_buf(Case &c, int out_buf, int dt, double tol, bool exact, std::string &detail) {
    Buf &b = c.bufs[out_buf];
    std::vector<unsigned char> dev(b.h.size());
    CUDA_OK(cudaMemcpy(&dev[0], b.d, dev.size(), cudaMemcpyDeviceToHost));
    const size_t es = gpuos_dtype_size((gpuos_dtype)dt);
    long bad = 0;
    char msg[256] = "";
    for (size_t i = 0; i + es <= dev.size(); i += es) {
        bool ok;
        double dv = 0, hv = 0;
        if (!is_float(dt)) {
            ok = load_int(dt, &dev[i]) == load_int(dt, &b.h[i]);
            dv = (double)load_int(dt, &dev[i]);
            hv = (double)load_int(dt, &b.h[i]);
        } else {
            dv = load_double(dt, &dev[i]);
            hv = load_double(dt, &b.h[i]);
            ok = close_enough(dv, hv, exact ? 0.0 : tol);
        }
        if (!ok) {
            if (bad == 0)
                snprintf(msg, sizeof msg, "element %zu: device %.17g host %.17g (was %.17g)", i / es, dv, hv,
                         is_float(dt) ? load_double(dt, &b.init[i]) : (double)load_int(dt, &b.init[i]));
            ++bad;
        }
    }
    if (bad) {
        char tmp[320];
        snprintf(tmp, sizeof tmp, "%ld of %zu differ; first %s", bad, dev.size() / es, msg);
        detail = tmp;
    }
    return bad == 0;
}

/* Restores every device buffer to its content before the run (between launch shapes). */
static void reset_device(Case &c) {
    for (auto &b : c.bufs) CUDA_OK(cudaMemcpy(b.d, &b.init[0], b.init.size(), cudaMemcpyHostToDevice));
}

template <class Plan>
static void run_device_and_compare(Case &c, const Plan &dplan_host, int id, int64_t n_items, int out_buf, int dt,
                                   double tol, bool exact, const std::vector<Launch> &launches) {
    Plan *dplan;
    CUDA_OK(cudaMalloc(&dplan, sizeof(Plan)));
    CUDA_OK(cudaMemcpy(dplan, &dplan_host, sizeof(Plan), cudaMemcpyHostToDevice));
    bool ok = true;
    std::string detail;
    for (size_t l = 0; l < launches.size() && ok; ++l) {
        if (l) reset_device(c);
        launch(id, dplan, n_items, launches[l].ipb > 0 ? launches[l].ipb : (n_items > 0 ? n_items : 1),
               launches[l].block);
        ok = compare_buf(c, out_buf, dt, tol, exact, detail);
        if (!ok) {
            char tmp[64];
            snprintf(tmp, sizeof tmp, " [block %d, items/block %lld]", launches[l].block, (long long)launches[l].ipb);
            detail += tmp;
        }
    }
    CUDA_OK(cudaFree(dplan));
    report(ok, c, detail.c_str());
}

/* ================================================================ element-wise */
static const char *const k_transcendental[] = {"exp", "exp2", "log", "log2", "log1p", "expm1", "sin", "cos",
                                               "tan", "tanh", "sigmoid", "gelu", "gelu_tanh", "silu", "pow",
                                               "atan2", "softmax", "log_softmax", "norm2", "std", NULL};
static int is_transcendental(const char *name) {
    for (int i = 0; k_transcendental[i]; ++i)
        if (!strcmp(name, k_transcendental[i])) return 1;
    return 0;
}
static int is_exact_op(const char *name) {
    return !strcmp(name, "cast") || !strcmp(name, "copy") || !strcmp(name, "fill") || !strcmp(name, "arange") ||
           !strcmp(name, "where");
}

static int input_mode(const char *op, int k) {
    if ((!strcmp(op, "shift_left") || !strcmp(op, "shift_right")) && k == 1) return V_SHIFT;
    if (!strcmp(op, "pow") && k == 1) return V_EXPONENT;
    return V_ANY;
}

enum { EW_R1, EW_R1_SMALL, EW_R0, EW_EMPTY, EW_EMPTY2, EW_BCAST, EW_STRIDED, EW_RANK5, EW_SCALAR_B, EW_INPLACE,
       EW_INPLACE_T, EW_N };
static const char *const k_ew_names[EW_N] = {"rank1",   "rank1-small", "0-d",     "empty",   "empty-2d", "broadcast",
                                             "strided", "rank5",       "scalar-b", "inplace", "inplace-t"};

static void ew_case(int op, int key, int out_dt, int shape_kind) {
    const gpuos__op_info *info = &gpuos__ops[op];
    const char *name = gpuos_op_name((gpuos_op)op);
    const int nin = info->n_in;
    Case c;
    char what[160];
    snprintf(what, sizeof what, "%s %s->%s %s", name, gpuos_dtype_name((gpuos_dtype)key),
             gpuos_dtype_name((gpuos_dtype)out_dt), k_ew_names[shape_kind]);
    c.what = what;
    int in_dt[GPUOS_MAX_INPUTS];
    for (int k = 0; k < nin; ++k) in_dt[k] = (info->bool_input0 && k == 0) ? GPUOS_BOOL : key;

    /* the output shape and each input's shape and layout */
    int r = 1;
    int64_t shape[GPUOS_MAX_RANK] = {0};
    int in_rank[GPUOS_MAX_INPUTS];
    int64_t in_shape[GPUOS_MAX_INPUTS][GPUOS_MAX_RANK];
    int in_layout[GPUOS_MAX_INPUTS];
    int out_layout = L_C;
    int inplace = -1; /* input whose view is the output */
    for (int k = 0; k < nin; ++k) in_layout[k] = L_C;
    switch (shape_kind) {
    case EW_R1: r = 1; shape[0] = 1031; break;
    case EW_R1_SMALL: r = 1; shape[0] = 37; break;
    case EW_R0: r = 0; break;
    case EW_EMPTY: r = 1; shape[0] = 0; break;
    case EW_EMPTY2: r = 2; shape[0] = 3; shape[1] = 0; break;
    case EW_BCAST: r = 3; shape[0] = 4; shape[1] = 5; shape[2] = 6; break;
    case EW_STRIDED: r = 2; shape[0] = 7; shape[1] = 9; out_layout = L_T; break;
    case EW_RANK5: r = 5; shape[0] = 2; shape[1] = 3; shape[2] = 1; shape[3] = 4; shape[4] = 5; break;
    case EW_SCALAR_B: r = 1; shape[0] = 257; break;
    case EW_INPLACE: r = 1; shape[0] = 257; break;
    case EW_INPLACE_T: r = 2; shape[0] = 13; shape[1] = 11; out_layout = L_T; break;
    }
    for (int k = 0; k < nin; ++k) {
        in_rank[k] = r;
        for (int d = 0; d < r; ++d) in_shape[k][d] = shape[d];
        if (shape_kind == EW_BCAST) {
            if (k % 3 == 0) in_shape[k][1] = 1;
            else if (k % 3 == 1) { in_rank[k] = 1; in_shape[k][0] = 6; }
            else in_rank[k] = 0;
        } else if (shape_kind == EW_STRIDED) {
            in_layout[k] = k % 3 == 0 ? L_NEG : (k % 3 == 1 ? L_T : L_C);
        } else if (shape_kind == EW_RANK5) {
            if (k == 0) in_layout[k] = L_T;
            else in_shape[k][3] = 1;
        } else if (shape_kind == EW_SCALAR_B && k == nin - 1 && nin > 1) {
            in_rank[k] = 0;
        } else if (shape_kind == EW_INPLACE_T) {
            in_layout[k] = L_T;
        }
    }
    if (shape_kind == EW_INPLACE || shape_kind == EW_INPLACE_T) {
        for (int k = 0; k < nin && inplace < 0; ++k)
            if (in_dt[k] == out_dt) inplace = k;
        if (inplace < 0) return; /* no input of the output's dtype */
    }

    View in[GPUOS_MAX_INPUTS];
    for (int k = 0; k < nin; ++k) in[k] = c.view(in_dt[k], in_rank[k], in_shape[k], in_layout[k], input_mode(name, k));
    View out = inplace >= 0 ? in[inplace] : c.view(out_dt, r, shape, out_layout, V_ANY);

    gpuos__ew_plan p;
    memset(&p, 0, sizeof p);
    p.rank = r;
    p.n_ptr = 1 + nin;
    p.numel = out.numel();
    for (int d = 0; d < r; ++d) p.shape[d] = shape[d];
    p.ptr[0] = c.ptr(out);
    c.bstrides(out, r, shape, p.stride[0]);
    for (int k = 0; k < nin; ++k) {
        p.ptr[1 + k] = c.ptr(in[k]);
        c.bstrides(in[k], r, shape, p.stride[1 + k]);
    }
    if (!strcmp(name, "fill")) p.scalar[0] = is_float(out_dt) ? -2.75 : 300.7;
    if (!strcmp(name, "arange")) {
        p.scalar[0] = is_float(out_dt) ? 0.1 : -5.0;
        p.scalar[1] = is_float(out_dt) ? 0.3 : 1.5;
    }

    c.upload();
    gpuos__ew_plan dp = p;
    for (int k = 0; k < GPUOS__MAX_PTR; ++k) dp.ptr[k] = c.rebase(p.ptr[k]);

    /* host reference */
    gpuos__ew_loop_fn loop = gpuos__host_ew_loop((gpuos_op)op, (gpuos_dtype)key, (gpuos_dtype)out_dt);
    gpuos__ew_iter_fn iter = gpuos__host_ew_iter(r);
    const int id = gpuos__device_kernel_id((gpuos_op)op, (gpuos_dtype)key, (gpuos_dtype)out_dt);
    if (!loop || !iter || id < 0) {
        report(false, c, !loop || !iter ? "no host kernel" : "no device kernel id");
        return;
    }
    iter(&p, loop, 0, p.numel);

    const double tol = base_tol(out_dt, is_transcendental(name));
    std::vector<Launch> launches = {{256, 0}, {32, 0}, {1024, 100}, {96, 7}};
    run_device_and_compare(c, dp, id, p.numel, out.buf, out_dt, tol, is_exact_op(name), launches);
}

/* ================================================================ reductions */
struct RedShape {
    const char *name;
    int rank;
    int64_t shape[4];
    uint32_t axes;
    int layout;
};
static const RedShape k_red_shapes[] = {
    {"[37,129] axis 1", 2, {37, 129}, 2u, L_C},
    {"[37,129] axis 0", 2, {37, 129}, 1u, L_C},
    {"[37,129] all", 2, {37, 129}, 3u, L_C},
    {"[3,4,5] axes 0,2 neg", 3, {3, 4, 5}, 5u, L_NEG},
    {"[6000] all", 1, {6000}, 1u, L_C},
    {"[1000,3] axis 1", 2, {1000, 3}, 2u, L_C},
    {"[2,3,4,5] axes 1,3 t", 4, {2, 3, 4, 5}, 10u, L_T},
    {"[5,0] axis 1", 2, {5, 0}, 2u, L_C},
    {"[0,5] axis 1", 2, {0, 5}, 2u, L_C},
    {"0-d", 0, {0}, 0u, L_C},
};

static void reduce_case(int op, int key, const RedShape &rs, int correction) {
    const char *name = gpuos_op_name((gpuos_op)op);
    const gpuos__op_info *info = &gpuos__ops[op];
    const int out_dt = info->out_rule == GPUOS__OUT_BOOL ? GPUOS_BOOL : info->out_rule == GPUOS__OUT_I64 ? GPUOS_I64 : key;
    Case c;
    char what[160];
    snprintf(what, sizeof what, "%s %s %s corr %d", name, gpuos_dtype_name((gpuos_dtype)key), rs.name, correction);
    c.what = what;
    /* specials only where the result is defined whatever the order of combination */
    const int specials = !strcmp(name, "min") || !strcmp(name, "max") || !strcmp(name, "argmin") ||
                         !strcmp(name, "argmax") || !strcmp(name, "any") || !strcmp(name, "all");
    const int mode = !strcmp(name, "prod") ? V_NEAR1 : specials ? V_ANY : V_FINITE;
    View in = c.view(key, rs.rank, rs.shape, rs.layout, mode);
    int64_t oshape[4], inner_n = 1, outer_n = 1;
    int orank = 0;
    for (int d = 0; d < rs.rank; ++d)
        if (!(rs.axes >> d & 1)) oshape[orank++] = rs.shape[d];
        else inner_n *= rs.shape[d];
    for (int d = 0; d < orank; ++d) outer_n *= oshape[d];
    if (inner_n == 0 && (!strcmp(name, "min") || !strcmp(name, "max") || !strcmp(name, "argmin") ||
                         !strcmp(name, "argmax")))
        return; /* refused at submission */
    View out = c.view(out_dt, orank, oshape, L_C, V_ANY);
    gpuos__reduce_plan p;
    memset(&p, 0, sizeof p);
    const int64_t es = (int64_t)gpuos_dtype_size((gpuos_dtype)key), eo = (int64_t)gpuos_dtype_size((gpuos_dtype)out_dt);
    p.outer_numel = outer_n;
    p.inner_numel = inner_n;
    for (int d = 0, o = 0; d < rs.rank; ++d) {
        if (rs.axes >> d & 1) {
            p.inner_shape[p.inner_rank] = rs.shape[d];
            p.inner_in_stride[p.inner_rank++] = in.st[d] * es;
        } else {
            p.outer_shape[p.outer_rank] = rs.shape[d];
            p.outer_in_stride[p.outer_rank] = in.st[d] * es;
            p.outer_out_stride[p.outer_rank++] = out.st[o++] * eo;
        }
    }
    p.in = c.ptr(in);
    p.out = c.ptr(out);
    p.correction = correction;
    c.upload();
    gpuos__reduce_plan dp = p;
    dp.in = c.rebase(p.in);
    dp.out = c.rebase(p.out);
    gpuos__reduce_fn host = gpuos__host_reduce((gpuos_op)op, (gpuos_dtype)key);
    const int id = gpuos__device_kernel_id((gpuos_op)op, (gpuos_dtype)key, (gpuos_dtype)out_dt);
    if (!host || id < 0) {
        report(false, c, !host ? "no host kernel" : "no device kernel id");
        return;
    }
    host(&p, 0, outer_n);
    const double tol = base_tol(out_dt, is_transcendental(name)) * sqrt((double)(inner_n > 1 ? inner_n : 1));
    std::vector<Launch> launches = {{256, 0}, {256, 1}, {32, 7}, {1024, 5}, {128, 64}};
    run_device_and_compare(c, dp, id, outer_n, out.buf, out_dt, tol, false, launches);
}

/* ================================================================ row-wise */
struct RowsShape {
    const char *name;
    int rank;
    int64_t shape[3];
    int axis;
    int in_layout, out_layout;
    int inplace;
};
static const RowsShape k_rows_shapes[] = {
    {"[8,33] axis 1", 2, {8, 33}, 1, L_C, L_C, 0},
    {"[8,33] axis 0", 2, {8, 33}, 0, L_C, L_T, 0},
    {"[3,1500] axis 1", 2, {3, 1500}, 1, L_NEG, L_C, 0},
    {"[1,5000] axis 1", 2, {1, 5000}, 1, L_C, L_C, 0},
    {"[300,4] axis 1", 2, {300, 4}, 1, L_C, L_C, 0},
    {"[2,3,5] axis 1 t", 3, {2, 3, 5}, 1, L_T, L_C, 0},
    {"[2,3,5] axis 2 t->c", 3, {2, 3, 5}, 2, L_T, L_C, 0},
    {"[8,33] in place", 2, {8, 33}, 1, L_C, L_C, 1},
    {"[3,100] in place t", 2, {3, 100}, 1, L_T, L_T, 1},
    {"[4,0] axis 1", 2, {4, 0}, 1, L_C, L_C, 0},
    {"[7] axis 0", 1, {7}, 0, L_C, L_C, 0},
};

static void rows_case(int op, int key, const RowsShape &rs, int with_weight, int with_bias) {
    const char *name = gpuos_op_name((gpuos_op)op);
    const int last_only = !strcmp(name, "layernorm") || !strcmp(name, "rmsnorm");
    if (last_only && rs.axis != rs.rank - 1) return;
    Case c;
    char what[160];
    snprintf(what, sizeof what, "%s %s %s%s%s", name, gpuos_dtype_name((gpuos_dtype)key), rs.name,
             with_weight ? " +weight" : "", with_bias ? " +bias" : "");
    c.what = what;
    View in = c.view(key, rs.rank, rs.shape, rs.in_layout, V_FINITE);
    View out = rs.inplace ? in : c.view(key, rs.rank, rs.shape, rs.out_layout, V_ANY);
    const int64_t n = rs.shape[rs.axis];
    View w, b;
    const int64_t es = (int64_t)gpuos_dtype_size((gpuos_dtype)key);
    gpuos__rows_plan p;
    memset(&p, 0, sizeof p);
    p.outer_numel = 1;
    for (int d = 0; d < rs.rank; ++d) {
        if (d == rs.axis) continue;
        p.outer_shape[p.outer_rank] = rs.shape[d];
        p.outer_in_stride[p.outer_rank] = in.st[d] * es;
        p.outer_out_stride[p.outer_rank++] = out.st[d] * es;
        p.outer_numel *= rs.shape[d];
    }
    p.n = n;
    p.in_stride = in.st[rs.axis] * es;
    p.out_stride = out.st[rs.axis] * es;
    p.in = c.ptr(in);
    p.out = c.ptr(out);
    p.eps = 1e-5;
    if (with_weight) {
        w = c.view(key, 1, &n, L_NEG, V_FINITE);
        p.weight = c.ptr(w);
        p.weight_stride = w.st[0] * es;
    }
    if (with_bias) {
        b = c.view(key, 1, &n, L_C, V_FINITE);
        p.bias = c.ptr(b);
        p.bias_stride = b.st[0] * es;
    }
    c.upload();
    gpuos__rows_plan dp = p;
    dp.in = c.rebase(p.in);
    dp.out = c.rebase(p.out);
    dp.weight = c.rebase(p.weight);
    dp.bias = c.rebase(p.bias);
    gpuos__rows_fn host = gpuos__host_rows((gpuos_op)op, (gpuos_dtype)key);
    const int id = gpuos__device_kernel_id((gpuos_op)op, (gpuos_dtype)key, (gpuos_dtype)key);
    if (!host || id < 0) {
        report(false, c, !host ? "no host kernel" : "no device kernel id");
        return;
    }
    host(&p, 0, p.outer_numel);
    const double tol = base_tol(key, is_transcendental(name)) * sqrt((double)(n > 1 ? n : 1));
    std::vector<Launch> launches = {{256, 0}, {256, 1}, {32, 3}, {1024, 0}, {64, 2}};
    run_device_and_compare(c, dp, id, p.outer_numel, out.buf, key, tol, false, launches);
}

/* ================================================================ matmul */
struct MmShape {
    const char *name;
    int a_rank, b_rank;
    int64_t a_shape[4], b_shape[4];
    int a_layout, b_layout;
};
static const MmShape k_mm_shapes[] = {
    {"1x1@1x1", 2, 2, {1, 1}, {1, 1}, L_C, L_C},
    {"5x17@17x33", 2, 2, {5, 17}, {17, 33}, L_C, L_C},
    {"70x100@100x65", 2, 2, {70, 100}, {100, 65}, L_C, L_T},
    {"3x0@0x4", 2, 2, {3, 0}, {0, 4}, L_C, L_C},
    {"33x5t@5x1", 2, 2, {33, 5}, {5, 1}, L_T, L_C},
    {"[2,1,9,20]@[3,20,7]", 4, 3, {2, 1, 9, 20}, {3, 20, 7}, L_C, L_T},
    {"[4,40,3]neg@[3,50]", 3, 2, {4, 40, 3}, {3, 50}, L_NEG, L_C},
};

static void matmul_case(int key, const MmShape &ms) {
    Case c;
    char what[160];
    snprintf(what, sizeof what, "matmul %s %s", gpuos_dtype_name((gpuos_dtype)key), ms.name);
    c.what = what;
    const int mode = is_float(key) ? V_ANY : V_SMALLINT;
    View a = c.view(key, ms.a_rank, ms.a_shape, ms.a_layout, is_float(key) ? V_NEAR1 : mode);
    View b = c.view(key, ms.b_rank, ms.b_shape, ms.b_layout, is_float(key) ? V_NEAR1 : mode);
    if (!is_float(key)) { /* full-range integers too, to check wrapping */
        for (size_t i = 0; i < c.bufs[b.buf].h.size() / 2; ++i) c.bufs[b.buf].h[i] ^= (unsigned char)rnd();
    }
    const int64_t M = ms.a_shape[ms.a_rank - 2], K = ms.a_shape[ms.a_rank - 1], N = ms.b_shape[ms.b_rank - 1];
    const int br = (ms.a_rank > ms.b_rank ? ms.a_rank : ms.b_rank) - 2;
    int64_t bshape[GPUOS_MAX_RANK], oshape[GPUOS_MAX_RANK];
    for (int d = 0; d < br; ++d) {
        const int da = d - (br - (ms.a_rank - 2)), db = d - (br - (ms.b_rank - 2));
        const int64_t sa = da >= 0 ? ms.a_shape[da] : 1, sb = db >= 0 ? ms.b_shape[db] : 1;
        bshape[d] = sa > sb ? sa : sb;
        oshape[d] = bshape[d];
    }
    oshape[br] = M;
    oshape[br + 1] = N;
    View o = c.view(key, br + 2, oshape, L_C, V_ANY);
    const int64_t es = (int64_t)gpuos_dtype_size((gpuos_dtype)key);
    gpuos__matmul_plan p;
    memset(&p, 0, sizeof p);
    p.batch_rank = br;
    p.batch_numel = 1;
    for (int d = 0; d < br; ++d) {
        const int da = d - (br - (ms.a_rank - 2)), db = d - (br - (ms.b_rank - 2));
        p.batch_shape[d] = bshape[d];
        p.batch_numel *= bshape[d];
        p.batch_a_stride[d] = (da < 0 || ms.a_shape[da] == 1) ? 0 : a.st[da] * es;
        p.batch_b_stride[d] = (db < 0 || ms.b_shape[db] == 1) ? 0 : b.st[db] * es;
        p.batch_out_stride[d] = o.st[d] * es;
    }
    p.M = M;
    p.N = N;
    p.K = K;
    p.a_m = a.st[ms.a_rank - 2] * es;
    p.a_k = a.st[ms.a_rank - 1] * es;
    p.b_k = b.st[ms.b_rank - 2] * es;
    p.b_n = b.st[ms.b_rank - 1] * es;
    p.o_m = o.st[br] * es;
    p.o_n = o.st[br + 1] * es;
    p.a = c.ptr(a);
    p.b = c.ptr(b);
    p.out = c.ptr(o);
    c.upload();
    gpuos__matmul_plan dp = p;
    dp.a = c.rebase(p.a);
    dp.b = c.rebase(p.b);
    dp.out = c.rebase(p.out);
    gpuos__matmul_fn host = gpuos__host_matmul((gpuos_dtype)key);
    const int id = gpuos__device_kernel_id(GPUOS_OP_MATMUL, (gpuos_dtype)key, (gpuos_dtype)key);
    if (!host || id < 0) {
        report(false, c, !host ? "no host kernel" : "no device kernel id");
        return;
    }
    const int64_t items = p.batch_numel * M;
    host(&p, 0, items);
    const double tol = base_tol(key, 0) * sqrt((double)(K > 1 ? K : 1));
    std::vector<Launch> launches = {{256, 0}, {256, 7}, {128, 32}, {64, 5}, {1024, 40}, {160, 0}};
    run_device_and_compare(c, dp, id, items, o.buf, key, tol, false, launches);
}

/* ================================================================ main */
int main(int argc, char **argv) {
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--nvrtc")) g_nvrtc = 1;
        else if (!strcmp(argv[i], "--verbose")) g_verbose = 1;
        else if (!strcmp(argv[i], "--op") && i + 1 < argc) g_only_op = argv[++i];
        else if (!strcmp(argv[i], "--maxrreg") && i + 1 < argc) g_maxrreg = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--nvrtc [--maxrreg N]] [--op NAME] [--verbose]\n", argv[0]);
            return 2;
        }
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        fprintf(stderr, "devcheck: no CUDA device\n");
        return 2;
    }
    int regs = 0;
    if (g_nvrtc) {
        nvrtc_setup();
        typedef CUresult (*attr_t)(int *, CUfunction_attribute, CUfunction);
        attr_t attr = NULL;
        cudaDriverEntryPointQueryResult q;
        CUDA_OK(cudaGetDriverEntryPointByVersion("cuFuncGetAttribute", (void **)&attr, 12000, cudaEnableDefault, &q));
        if (!attr || attr(&g_max_block, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, g_nvrtc_fn) != CUDA_SUCCESS ||
            attr(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, g_nvrtc_fn) != CUDA_SUCCESS)
            exit(2);
    } else {
        g_max_block = devcheck_max_threads(&regs);
    }
    g_max_block -= g_max_block % 32;
    printf("devcheck: gpuos__d_test_kernel: %d registers, blocks of up to %d threads (%s", regs, g_max_block,
           g_nvrtc ? "NVRTC -rdc + nvJitLink" : "nvcc");
    if (g_nvrtc && g_maxrreg > 0) printf(", --maxrregcount=%d", g_maxrreg);
    printf(")\n");
    const uint32_t gen = gpuos__generated_dtypes;
    for (int op = 0; op < GPUOS_OP_COUNT; ++op) {
        const gpuos__op_info *info = &gpuos__ops[op];
        const char *name = gpuos_op_name((gpuos_op)op);
        if (g_only_op && strcmp(g_only_op, name)) continue;
        for (int key = 0; key < GPUOS_DTYPE_COUNT; ++key) {
            if (!(info->dtypes >> key & 1) || !(gen >> key & 1)) continue;
            switch (info->kind) {
            case GPUOS__KIND_EW:
                for (int out = 0; out < GPUOS_DTYPE_COUNT; ++out) {
                    if (info->out_rule == GPUOS__OUT_ANY ? !(gen >> out & 1)
                                                         : out != (info->out_rule == GPUOS__OUT_BOOL ? GPUOS_BOOL : key))
                        continue;
                    for (int s = 0; s < EW_N; ++s) ew_case(op, key, out, s);
                }
                break;
            case GPUOS__KIND_REDUCE:
                for (const RedShape &rs : k_red_shapes) reduce_case(op, key, rs, 1);
                if (!strcmp(name, "var") || !strcmp(name, "std")) {
                    reduce_case(op, key, k_red_shapes[0], 0);
                    reduce_case(op, key, k_red_shapes[5], 3);
                    reduce_case(op, key, k_red_shapes[5], 7);
                }
                break;
            case GPUOS__KIND_ROWS:
                for (const RowsShape &rs : k_rows_shapes) {
                    rows_case(op, key, rs, 0, 0);
                    if (info->n_in_max >= 2) rows_case(op, key, rs, 1, 0);
                    if (info->n_in_max >= 3) rows_case(op, key, rs, 1, 1), rows_case(op, key, rs, 0, 1);
                }
                break;
            case GPUOS__KIND_MATMUL:
                for (const MmShape &ms : k_mm_shapes) matmul_case(key, ms);
                break;
            }
        }
    }
    printf("%ld passed, %ld failed%s\n", g_passed, g_failed, g_nvrtc ? " (NVRTC kernels)" : "");
    return g_failed ? 1 : 0;
}
