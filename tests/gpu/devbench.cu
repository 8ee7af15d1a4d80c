/* devbench.cu - rough timings of the device kernels (not a test).

   1. chain: one block runs the same task R times in a row (gpuos__d_run then
      __syncthreads), as the persistent kernel will: microseconds per task, to compare
      with GPU-FINDINGS.md's floor (a 4096-float add chain in one block of 256
      threads: 0.57 us/op).
   2. throughput: gpuos__d_test_kernel over a large tensor with many blocks: GB/s.

   3. `devbench lnlean`: the lean layernorm row against the block-wide one, byte for byte, and
      both timed as a one-row chain.
   4. `devbench mm[N]` (and `mmlean`, the lean tile against the general one): the tiny MLP's layer tile (a narrow matmul block, its epilogue and its
      layernorm prologue; then the same as a row tile, and the whole product both ways
      compared byte for byte) only; N picks one case, for ncu.

   nvcc -arch=sm_90 -O2 -std=c++17 -rdc=true -maxrregcount=128 -I. tests/gpu/devbench.cu build/gpuos.o \
        -o build/devbench -ldl -lpthread                      (`make bench-gpu-dev`) */
/* devbench lnlean turns the lean layernorm row (gpuos__d_ln_lean) off and on at run time: the
   device code's switch is this variable here (a global load a row-wise tile; 1 unless lnlean) */
__device__ int devbench_ln_lean = 1;
#define GPUOS__D_LN_LEAN devbench_ln_lean
#include "../../src/generated/gpuos_device.cu"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" int gpuos__device_kernel_id(int op, int key, int out); /* src/generated/device_ids.c */

/* Every tile of a task once, in order, by one block: [t * tile, (t + 1) * tile). */
__global__ void run_tiles(int id, const void *plan, int64_t n_items, int64_t tile) {
    for (int64_t b = 0; b < n_items; b += tile) {
        gpuos__d_run(id, plan, b, b + tile < n_items ? b + tile : n_items);
        __syncthreads();
    }
}

__global__ void bench_chain(int id, const void *plan, int64_t n_items, int reps) {
    /* the plan in shared memory, as the worker holds it (to_device allocates a whole row) */
    __shared__ __align__(16) unsigned long long s_plan[GPUOS__PLAN_SLOTS * GPUOS__SLOT_PAYLOAD / 8];
    for (int k = threadIdx.x; k < (int)(GPUOS__PLAN_SLOTS * GPUOS__SLOT_PAYLOAD / 8); k += blockDim.x)
        s_plan[k] = ((const unsigned long long *)plan)[k];
    __syncthreads();
    plan = s_plan;
    for (int r = 0; r < reps; ++r) {
#ifdef GPUOS__D_LEAN_PROF
        if (threadIdx.x == 0) gpuos__d_lean_t0 = clock64();
#endif
        gpuos__d_run(id, plan, 0, n_items);
        __syncthreads();
    }
}

/* devbench gap: the task after an idle gap, as the express worker runs one (a spin of `gap`
   cycles by thread 0, a barrier, with fence: every thread's fence.acq_rel.gpu, then the task);
   out[0] += the cycles from the barrier to the task's end barrier, the plan in shared memory, as the worker's. */
__global__ void bench_gap(int id, const void *plan, int64_t n_items, int reps, long long gap, int fence,
                          unsigned long long *out) {
    __shared__ __align__(16) unsigned long long s_plan[sizeof(gpuos__ew_plan) / 8 + 1]; /* as the worker's */
    for (int k = threadIdx.x; k < (int)(sizeof(gpuos__ew_plan) / 8); k += blockDim.x) s_plan[k] = ((const unsigned long long *)plan)[k];
    __syncthreads();
    plan = s_plan;
    unsigned long long sum = 0;
    for (int r = 0; r < reps; ++r) {
        if (threadIdx.x == 0) {
            const long long g0 = clock64();
            while (clock64() - g0 < gap) {
            }
        }
        __syncthreads();
        const long long t0 = clock64();
        if (fence) asm volatile("fence.acq_rel.gpu;" ::: "memory");
        gpuos__d_run(id, plan, 0, n_items);
        __syncthreads();
        sum += (unsigned long long)(clock64() - t0);
    }
    if (threadIdx.x == 0) out[0] = sum;
}
__global__ void spin_cycles(long long n) {
    const long long g0 = clock64();
    while (clock64() - g0 < n) {
    }
}

#define CK(x)                                                                                   \
    do {                                                                                        \
        cudaError_t e_ = (x);                                                                   \
        if (e_ != cudaSuccess) {                                                                \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));         \
            exit(2);                                                                            \
        }                                                                                       \
    } while (0)

/* ids of gpuos.h's enums, without including it next to the device source */
enum { OP_ADD = 31, OP_MUL = 33, OP_EXP = 5, OP_GELU = 17, OP_CAST = 59, OP_SUM = 63, OP_SOFTMAX = 76,
       OP_LAYERNORM = 78, OP_MATMUL = 75, DT_F16 = 6, DT_F32 = 8 };

static float time_ms(void (*fn)(void *), void *arg) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    fn(arg); /* warm-up */
    CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(a));
    fn(arg);
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    return ms;
}

struct ChainArg {
    int id;
    const void *plan;
    int64_t n;
    int reps, block;
};
static void run_chain(void *p) {
    ChainArg *c = (ChainArg *)p;
    bench_chain<<<1, c->block>>>(c->id, c->plan, c->n, c->reps);
    CK(cudaGetLastError());
}
struct WideArg {
    int id;
    const void *plan;
    int64_t n, ipb;
    int grid, reps;
};
static void run_wide(void *p) {
    WideArg *w = (WideArg *)p;
    for (int r = 0; r < w->reps; ++r) gpuos__d_test_kernel<<<w->grid, 256>>>(w->id, w->plan, w->n, w->ipb);
    CK(cudaGetLastError());
}

template <class P> static P *to_device(const P &p) { /* (at least a plan row: bench_chain copies one) */
    P *d;
    const size_t row = GPUOS__PLAN_SLOTS * GPUOS__SLOT_PAYLOAD;
    CK(cudaMalloc(&d, sizeof p < row ? row : sizeof p));
    CK(cudaMemset(d, 0, sizeof p < row ? row : sizeof p));
    CK(cudaMemcpy(d, &p, sizeof p, cudaMemcpyHostToDevice));
    return d;
}

static gpuos__ew_plan ew_plan(int nin, int64_t n, size_t es_out, size_t es_in, char **bufs) {
    gpuos__ew_plan p;
    memset(&p, 0, sizeof p);
    p.rank = 1;
    p.n_ptr = 1 + nin;
    p.numel = n;
    p.shape[0] = n;
    for (int k = 0; k <= nin; ++k) {
        p.ptr[k] = bufs[k];
        p.stride[k][0] = (int64_t)(k ? es_in : es_out);
    }
    return p;
}

/* A plan of the f32 product [M, K] @ [K, N], all row-major: a = bufs[1], b = bufs[2], out = bufs[0]. */
static gpuos__matmul_plan mm_plan(int64_t M, int64_t K, int64_t N, char **bufs) {
    gpuos__matmul_plan p;
    memset(&p, 0, sizeof p);
    p.batch_numel = 1;
    p.M = M, p.N = N, p.K = K;
    p.a_m = K * 4, p.a_k = 4, p.b_k = N * 4, p.b_n = 4, p.o_m = N * 4, p.o_n = 4;
    p.a = bufs[1], p.b = bufs[2], p.out = bufs[0];
    return p;
}

/* The fused layer's parts on plan p (K columns of A): v & 1, the epilogue (+ bias broadcast over
   rows, gelu, + X); v & 2, the layernorm prologue into X (eps). X = bufs[3] + 1 MB, bias = bufs[3]. */
static char *mm_fuse(gpuos__matmul_plan *p, int v, int64_t K, char **bufs, double eps) {
    char *X = bufs[3] + (1 << 20), *bias = bufs[3];
    if (v & 1) {
        p->n_epi = 3;
        p->epi[0] = OP_ADD | (0 << GPUOS__EPI_IN_SHIFT);
        p->epi[1] = OP_GELU;
        p->epi[2] = OP_ADD | (1 << GPUOS__EPI_IN_SHIFT);
        p->epi_ptr[0] = bias, p->epi_sm[0] = 0, p->epi_sn[0] = 4;
        p->epi_ptr[1] = X, p->epi_sm[1] = K * 4, p->epi_sn[1] = 4;
    }
    if (v & 2) p->pro = 1, p->pro_out = X, p->pro_om = K * 4, p->pro_ok = 4, p->pro_eps = eps;
    return X;
}

/* The tiny MLP's layer tile: one 8-column block of [8,256] @ [256,256] f32, plain, with the
   epilogue (+ bias, gelu, + residual), and with the layernorm prologue too (the fused task
   of a recorded graph, src/graph.c). which < 0: all four, timed; else case `which` only,
   launched twice (for ncu: --launch-skip 1 --launch-count 1). */
static void mm_layer(char **bufs, int which) {
    static const char *names[] = {"plain", "epilogue (+b, gelu, +x)", "prologue (layernorm)", "prologue + epilogue",
                                  "plain", "epilogue (+b, gelu, +x)", "prologue (layernorm)", "prologue + epilogue",
                                  "plain", "epilogue (+b, gelu, +x)", "prologue (layernorm)", "prologue + epilogue"};
    const int64_t M = 8, K = 256, N = 256;
    { /* inputs: small values, not zeros (the layernorm's and gelu's paths) */
        float *h = (float *)malloc(1 << 22);
        for (int i = 0; i < (1 << 20); ++i) h[i] = (float)((int)(((int64_t)i * 7919) % 2001) - 1000) / 1000.0f;
        for (int k = 1; k < 4; ++k) CK(cudaMemcpy(bufs[k], h, 1 << 22, cudaMemcpyHostToDevice));
        free(h);
    }
    const int id = gpuos__device_kernel_id(OP_MATMUL, DT_F32, DT_F32);
    for (int v = 0; v < 12; ++v) {
        if (which >= 0 && v != which) continue;
        gpuos__matmul_plan p = mm_plan(M, K, N, bufs);
        /* 4..7: a row tile (all 256 columns of one row); 8..11: a slice of 64 columns of it */
        p.n_cb = v < 4 ? 32 : v < 8 ? GPUOS__MM_ROWS : -4;
        char *X = mm_fuse(&p, v, K, bufs, 1e-5);
        ChainArg c = {id, to_device(p), v < 4 ? M : 1, 1000, 256};
#ifdef GPUOS__D_LEAN_PROF
        unsigned long long lp[8] = {0};
        if (v < 4) CK(cudaMemcpyToSymbol(gpuos__d_lean_prof, lp, sizeof lp));
#endif
        const float ms = time_ms(run_chain, &c);
        printf("  matmul f32 8x256x256 %s, %-26s %7.3f us/task\n",
               v < 4 ? "8-column tile" : v < 8 ? "row tile     " : "row slice/4  ", names[v], ms * 1000.0f / c.reps);
#ifdef GPUOS__D_LEAN_PROF /* the lean tile's phases, thread 0's cycles a task (time_ms runs the chain twice) */
        if (v < 4) {
            CK(cudaMemcpyFromSymbol(lp, gpuos__d_lean_prof, sizeof lp));
            static const char *ph[8] = {"dispatch", "loads", "prologue", "barrier", "product", "barrier", "sums", "epilogue"};
            printf("    lean phases (cycles):");
            for (int k = 0; k < 8; ++k) printf(" %s %.0f", ph[k], (double)lp[k] / (2.0 * c.reps));
            printf("\n");
        }
#endif
        if (v < 4 || which >= 0) continue;
        /* the whole product both ways (32 narrow blocks, 8 row tiles): the same bytes */
        const size_t ob = (size_t)M * N * 4, xb = (size_t)M * K * 4;
        char *hn = (char *)malloc(2 * (ob + xb)), *hr = hn + ob + xb;
        gpuos__matmul_plan q = p;
        q.n_cb = 32;
        for (int w = 0; w < 2; ++w) {
            CK(cudaMemset(bufs[0], 0, ob));
            if (v & 2) CK(cudaMemset(X, 0, xb));
            if (w == 0) run_tiles<<<1, 256>>>(id, to_device(q), 32 * M, M);
            else run_tiles<<<1, 256>>>(id, to_device(p), v >= 8 ? 4 * M : M, 1);
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(w ? hr : hn, bufs[0], ob, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy((w ? hr : hn) + ob, X, xb, cudaMemcpyDeviceToHost));
        }
        if (v & 2) { /* X is also an input of the epilogue; without a prologue it stays 0 */
        }
        printf("    %s against narrow blocks, whole product%s: %s\n", v >= 8 ? "row slices" : "row tiles", v & 2 ? " and prologue output" : "",
               memcmp(hn, hr, (v & 2) ? ob + xb : ob) ? "DIFFERENT" : "bit for bit");
        free(hn);
    }
}

/* devbench lnlean: one-row layernorm tiles of 256 f32 (the persistent kernel's tiles of a
   layernorm of up to one row a worker) with the lean row on and off (devbench_ln_lean), byte
   for byte: 8 rows each, input and output contiguous (16-byte aligned or not), strided or in
   place; values around 3 (1e-3 apart), of +-1, ~1e-19 (squared deviations near the least
   normal float) and ~1e4, a constant row; eps 1e-5, 0 and 1e-44. Then both timed as a chain of
   one row. */
__global__ void ln_tiles(int id, const void *plan, int64_t rows) {
    for (int64_t r = 0; r < rows; ++r) {
        gpuos__d_run(id, plan, r, r + 1);
        __syncthreads();
    }
}
static void ln_lean_vs_block(char **bufs) {
    const int id = gpuos__device_kernel_id(OP_LAYERNORM, DT_F32, DT_F32);
    const int64_t R = 8, W = 2048; /* rows, the floats a row's buffers span */
    float *h = (float *)malloc(R * W * 4 * 2), *o = (float *)malloc(R * W * 4 * 2);
    int bad = 0, cases = 0;
    static const double epss[3] = {1e-5, 0.0, 1e-44};
    for (int data = 0; data < 5; ++data)
        for (int lay = 0; lay < 5; ++lay)
            for (int e = 0; e < 3; ++e) {
                for (int64_t i = 0; i < R * W; ++i) {
                    const float v = (float)((int)(((i + 17 * data) * 7919) % 2001) - 1000) / 1000.0f;
                    h[i] = data == 0 ? 3.0f + v * 1e-3f : data == 1 ? v : data == 2 ? v * 1e-19f : data == 3 ? 1e4f + v * 7.0f
                                                                                                       : 1.25f;
                }
                CK(cudaMemcpy(bufs[1], h, R * W * 4, cudaMemcpyHostToDevice));
                gpuos__rows_plan p;
                memset(&p, 0, sizeof p);
                p.outer_rank = 1, p.outer_numel = R, p.outer_shape[0] = R;
                p.n = 256, p.eps = epss[e];
                /* lay 0: contiguous; 1: both 4 bytes off 16-byte alignment; 2: in strided by 3
                   floats, out by 5; 3: in place; 4: in a transposed [256, R] (stride R floats) */
                p.in = bufs[1] + (lay == 1 ? 4 : 0), p.out = lay == 3 ? (char *)p.in : bufs[0] + (lay == 1 ? 4 : 0);
                p.in_stride = lay == 2 ? 12 : lay == 4 ? R * 4 : 4, p.out_stride = lay == 2 ? 20 : 4;
                p.outer_in_stride[0] = lay == 4 ? 4 : W * 4, p.outer_out_stride[0] = lay == 3 ? W * 4 : lay == 2 ? 5 * 256 * 4 : W * 4;
                const void *dp = to_device(p);
                for (int lean = 0; lean < 2; ++lean) {
                    CK(cudaMemcpyToSymbol(devbench_ln_lean, &lean, sizeof lean));
                    if (lay == 3) CK(cudaMemcpy(bufs[1], h, R * W * 4, cudaMemcpyHostToDevice));
                    else CK(cudaMemset(bufs[0], 0, R * W * 4));
                    ln_tiles<<<1, 256>>>(id, dp, R);
                    CK(cudaDeviceSynchronize());
                    CK(cudaMemcpy(o + lean * R * W, lay == 3 ? bufs[1] : bufs[0], R * W * 4, cudaMemcpyDeviceToHost));
                }
                const int diff = memcmp(o, o + R * W, R * W * 4) != 0;
                bad += diff, cases++;
                if (diff) printf("  lean against block-wide: data %d, layout %d, eps %g: DIFFERENT\n", data, lay, epss[e]);
            }
    printf("lean layernorm row against the block-wide row: %d of %d cases bit for bit\n", cases - bad, cases);
    {
        gpuos__rows_plan p;
        memset(&p, 0, sizeof p);
        p.outer_rank = 1, p.outer_numel = 1, p.outer_shape[0] = 1;
        p.outer_in_stride[0] = p.outer_out_stride[0] = 256 * 4;
        p.n = 256, p.in_stride = p.out_stride = 4, p.eps = 1e-5;
        p.in = bufs[1], p.out = bufs[0];
        ChainArg c = {id, to_device(p), 1, 1000, 256};
        for (int lean = 1; lean >= 0; --lean) {
            CK(cudaMemcpyToSymbol(devbench_ln_lean, &lean, sizeof lean));
            printf("  layernorm f32 1 row 256, %s %7.3f us/task\n", lean ? "lean row  " : "block-wide", time_ms(run_chain, &c));
        }
        const int on = 1;
        CK(cudaMemcpyToSymbol(devbench_ln_lean, &on, sizeof on));
    }
    free(h), free(o);
}

/* Every narrow tile of plan p (tiles of M items, n_items in all) by one block, through the
   general narrow entry or the lean one (gpuos__d_matmul_narrow_g1 / _lean_g1: the f32 group). */
__global__ void run_mm_direct(int id, const gpuos__matmul_plan *p, int64_t n_items, int64_t tile, int lean) {
    const int cs = gpuos__d_kernels[id][1];
    for (int64_t b = 0; b < n_items; b += tile) {
        const int64_t e = b + tile < n_items ? b + tile : n_items;
        if (lean) gpuos__d_matmul_lean_g1(p, b, e, cs);
        else gpuos__d_matmul_narrow_g1(p, b, e, cs);
        __syncthreads();
    }
}
/* devbench mmlean: the lean narrow tile against the general one on the same plans, byte for
   byte (outputs and the prologue's output): M = 8, 3, 1; B row-major or transposed (b_n = K
   elements); plain, epilogue (+ bias, gelu, + X), layernorm prologue (eps 1e-5; and rows of
   ~1e-19 with eps 1e-44, where the variance's s / 256 is inexact and a fused s / 256 + eps
   would round once), both. H100 (session 35): 48 of 48 cases bit for bit. */
static void mm_lean_vs_narrow(char **bufs) {
    const int64_t K = 256, N = 256;
    const int id = gpuos__device_kernel_id(OP_MATMUL, DT_F32, DT_F32);
    int bad = 0, cases = 0;
    float *h = (float *)malloc(1 << 22);
    for (int tiny = 0; tiny < 2; ++tiny) {
        for (int i = 0; i < (1 << 20); ++i) {
            const float v = (float)((int)(((int64_t)i * 7919) % 2001) - 1000) / 1000.0f;
            h[i] = tiny ? v * 1e-19f : v; /* tiny: squared deviations near the least normal float */
        }
        CK(cudaMemcpy(bufs[1], h, 1 << 22, cudaMemcpyHostToDevice));
        for (int k = 2; k < 4; ++k)
            for (int i = 0; i < (1 << 20); ++i) h[i] = (float)((int)(((int64_t)i * 104729 + k) % 2001) - 1000) / 1000.0f;
        CK(cudaMemcpy(bufs[2], h, 1 << 22, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(bufs[3], h, 1 << 22, cudaMemcpyHostToDevice));
        static const int64_t Ms[3] = {8, 3, 1};
        for (int mi = 0; mi < 3; ++mi)
            for (int bt = 0; bt < 2; ++bt)
                for (int v = 0; v < 4; ++v) {
                    const int64_t M = Ms[mi];
                    gpuos__matmul_plan p = mm_plan(M, K, N, bufs);
                    if (bt) p.b_k = 4, p.b_n = K * 4; /* B^T's layout */
                    p.n_cb = 32;
                    char *X = mm_fuse(&p, v, K, bufs, tiny ? 1e-44 : 1e-5);
                    const size_t ob = (size_t)M * N * 4, xb = (size_t)M * K * 4;
                    char *hb = (char *)malloc(2 * (ob + xb));
                    const gpuos__matmul_plan *dp = to_device(p);
                    for (int lean = 0; lean < 2; ++lean) {
                        CK(cudaMemset(bufs[0], 0, ob));
                        if (v & 2) CK(cudaMemset(X, 0, xb));
                        run_mm_direct<<<1, 256>>>(id, dp, 32 * M, M, lean);
                        CK(cudaDeviceSynchronize());
                        CK(cudaMemcpy(hb + lean * (ob + xb), bufs[0], ob, cudaMemcpyDeviceToHost));
                        CK(cudaMemcpy(hb + lean * (ob + xb) + ob, X, xb, cudaMemcpyDeviceToHost));
                    }
                    const int diff = memcmp(hb, hb + ob + xb, (v & 2) ? ob + xb : ob) != 0;
                    bad += diff, cases++;
                    if (diff)
                        printf("  lean against narrow: M %lld, %s B, %s%s%s: DIFFERENT\n", (long long)M, bt ? "transposed" : "row-major",
                               v & 2 ? "prologue " : "", v & 1 ? "epilogue " : "", tiny ? "(tiny rows)" : "");
                    free(hb);
                }
    }
    printf("lean narrow tile against the general narrow tile: %d of %d cases bit for bit\n", cases - bad, cases);
    free(h);
}

int main(int argc, char **argv) {
    const int64_t big = 1 << 24;
    char *bufs[4];
    for (int k = 0; k < 4; ++k) {
        CK(cudaMalloc(&bufs[k], big * 8));
        CK(cudaMemset(bufs[k], 0, big * 8));
    }
    if (argc > 1 && !strcmp(argv[1], "gap")) { /* devbench gap: a task after idle gaps */
        cudaEvent_t a, b;
        CK(cudaEventCreate(&a));
        CK(cudaEventCreate(&b));
        spin_cycles<<<1, 1>>>(1000000);
        CK(cudaEventRecord(a));
        spin_cycles<<<1, 1>>>(100000000);
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        const double ghz = 1e8 / (ms * 1e6);
        printf("gap: clock %.3f GHz; one block of 256 threads, each task after a gap (thread 0 spins)\n", ghz);
        unsigned long long *d_out, h_out[1];
        CK(cudaMalloc(&d_out, 8));
        struct { const char *name; int op, nin; int64_t n; } t[] = {
            {"add f32 4096", OP_ADD, 2, 4096}, {"add f32 1024", OP_ADD, 2, 1024}, {"mul f32 4096", OP_MUL, 2, 4096}};
        for (auto &e : t) {
            gpuos__ew_plan p = ew_plan(e.nin, e.n, 4, 4, bufs);
            const int id = gpuos__device_kernel_id(e.op, DT_F32, DT_F32);
            const void *dp = to_device(p);
            const long long gaps[] = {0, 2000, 10000, 100000};
            for (long long gp : gaps)
                for (int f = 0; f < 2; ++f) {
                    const int reps = 400;
                    bench_gap<<<1, 256>>>(id, dp, e.n, 20, gp, f, d_out); /* warm-up */
                    bench_gap<<<1, 256>>>(id, dp, e.n, reps, gp, f, d_out);
                    CK(cudaMemcpy(h_out, d_out, 8, cudaMemcpyDeviceToHost));
                    printf("  %-14s gap %6lld cycles, fence %d: %7.0f cycles = %6.3f us a task\n", e.name, gp, f,
                           (double)h_out[0] / reps, (double)h_out[0] / reps / ghz / 1e3);
                }
        }
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "lnlean")) { /* devbench lnlean: lean against block-wide layernorm rows */
        ln_lean_vs_block(bufs);
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "mmlean")) { /* devbench mmlean: lean against general narrow tiles */
        mm_lean_vs_narrow(bufs);
        return 0;
    }
    if (argc > 1 && !strncmp(argv[1], "mm", 2)) { /* devbench mm[N]: the layer tile only */
        printf("chain: one block of 256 threads runs the task 1000 times in a row\n");
        mm_layer(bufs, argv[1][2] ? atoi(argv[1] + 2) : -1);
        return 0;
    }
    printf("chain: one block of 256 threads runs the task 1000 times in a row\n");
    struct {
        const char *name;
        int op, key, out, nin;
        int64_t n;
    } ew[] = {
        {"add f32 4096", OP_ADD, DT_F32, DT_F32, 2, 4096},   {"add f32 65536", OP_ADD, DT_F32, DT_F32, 2, 65536},
        {"add f16 4096", OP_ADD, DT_F16, DT_F16, 2, 4096},   {"exp f32 4096", OP_EXP, DT_F32, DT_F32, 1, 4096},
        {"gelu f32 4096", OP_GELU, DT_F32, DT_F32, 1, 4096}, {"cast f32->f16 4096", OP_CAST, DT_F32, DT_F16, 1, 4096},
    };
    for (auto &e : ew) {
        const size_t so = e.out == DT_F16 ? 2 : 4, si = e.key == DT_F16 ? 2 : 4;
        gpuos__ew_plan p = ew_plan(e.nin, e.n, so, si, bufs);
        ChainArg c = {gpuos__device_kernel_id(e.op, e.key, e.out), to_device(p), e.n, 1000, 256};
        const float ms = time_ms(run_chain, &c);
        printf("  %-22s %7.3f us/task\n", e.name, ms * 1000.0f / 1000);
    }
    { /* sum over rows of [64, 256] f32 */
        gpuos__reduce_plan p;
        memset(&p, 0, sizeof p);
        p.outer_rank = 1;
        p.inner_rank = 1;
        p.outer_numel = 64;
        p.inner_numel = 256;
        p.outer_shape[0] = 64;
        p.outer_in_stride[0] = 256 * 4;
        p.outer_out_stride[0] = 4;
        p.inner_shape[0] = 256;
        p.inner_in_stride[0] = 4;
        p.in = bufs[1];
        p.out = bufs[0];
        ChainArg c = {gpuos__device_kernel_id(OP_SUM, DT_F32, DT_F32), to_device(p), 64, 1000, 256};
        printf("  %-22s %7.3f us/task\n", "sum f32 [64,256] ax 1", time_ms(run_chain, &c));
    }
    { /* softmax and layernorm over rows of [8, 256] f32 */
        gpuos__rows_plan p;
        memset(&p, 0, sizeof p);
        p.outer_rank = 1;
        p.outer_numel = 8;
        p.outer_shape[0] = 8;
        p.outer_in_stride[0] = p.outer_out_stride[0] = 256 * 4;
        p.n = 256;
        p.in_stride = p.out_stride = 4;
        p.in = bufs[1];
        p.out = bufs[0];
        p.eps = 1e-5;
        ChainArg c = {gpuos__device_kernel_id(OP_SOFTMAX, DT_F32, DT_F32), to_device(p), 8, 1000, 256};
        printf("  %-22s %7.3f us/task\n", "softmax f32 [8,256]", time_ms(run_chain, &c));
        c.id = gpuos__device_kernel_id(OP_LAYERNORM, DT_F32, DT_F32);
        printf("  %-22s %7.3f us/task\n", "layernorm f32 [8,256]", time_ms(run_chain, &c));
        c.n = 1; /* one row: the persistent kernel's tile of this task */
        printf("  %-22s %7.3f us/task\n", "layernorm f32 1 row 256", time_ms(run_chain, &c));
    }
    for (int sz = 0; sz < 2; ++sz) { /* matmul [8,256]@[256,256] and [256,256]@[256,256] f32 */
        const int64_t M = sz ? 256 : 8, K = 256, N = 256;
        gpuos__matmul_plan p = mm_plan(M, K, N, bufs);
        const void *dp = to_device(p);
        ChainArg c = {gpuos__device_kernel_id(OP_MATMUL, DT_F32, DT_F32), dp, M, sz ? 10 : 1000, 256};
        const float ms = time_ms(run_chain, &c) / c.reps;
        printf("  matmul f32 %lldx%lldx%lld one block %8.3f us/task (%.1f GFLOP/s)\n", (long long)M, (long long)K,
               (long long)N, ms * 1000.0f, 2.0 * M * N * K / (ms * 1e6));
        if (!sz) { /* one column block of 32: the persistent kernel's tile of this task (n_cb = 8) */
            p.n_cb = 8;
            ChainArg c1 = {c.id, to_device(p), M, 1000, 256};
            printf("  matmul f32 8x256x256 one 32-column tile %8.3f us/task\n", time_ms(run_chain, &c1));
            p.n_cb = 32; /* 8-column blocks: gpuos__d_mm_narrow (cuda_matmul_cb's choice for M <= 8) */
            ChainArg c2 = {c.id, to_device(p), M, 1000, 256};
            printf("  matmul f32 8x256x256 one 8-column tile %8.3f us/task\n", time_ms(run_chain, &c2));
        }
        if (sz) {
            WideArg w = {c.id, dp, M, 32, 8, 10};
            const float ms2 = time_ms(run_wide, &w) / w.reps;
            printf("  matmul f32 256x256x256 8 blocks   %8.3f us (%.1f GFLOP/s)\n", ms2 * 1000.0f,
                   2.0 * M * N * K / (ms2 * 1e6));
        }
    }
    printf("throughput: gpuos__d_test_kernel, %lld elements, 1056 blocks of 256 threads\n", (long long)big);
    struct {
        const char *name;
        int op, key, out, nin;
    } wide[] = {{"add f32", OP_ADD, DT_F32, DT_F32, 2},
                {"add f16", OP_ADD, DT_F16, DT_F16, 2},
                {"mul f32", OP_MUL, DT_F32, DT_F32, 2},
                {"cast f32->f16", OP_CAST, DT_F32, DT_F16, 1}};
    for (auto &e : wide) {
        const size_t so = e.out == DT_F16 ? 2 : 4, si = e.key == DT_F16 ? 2 : 4;
        gpuos__ew_plan p = ew_plan(e.nin, big, so, si, bufs);
        WideArg w = {gpuos__device_kernel_id(e.op, e.key, e.out), to_device(p), big, (big + 1055) / 1056, 1056, 20};
        const float ms = time_ms(run_wide, &w) / w.reps;
        const double bytes = (double)big * (so + e.nin * si);
        printf("  %-22s %8.1f us  %7.1f GB/s\n", e.name, ms * 1000.0f, bytes / (ms * 1e6));
    }
    return 0;
}
