/* probe_mlp_ideal.cu - what a hand-written persistent kernel reaches on bench's tiny_mlp (not a
   test; a floor for issue 5's 25 us target). The same forward as bench/gpuos_bench.c's row: 8
   layers of h = x @ W (8x256 by 256x256 f32) + bias, gelu (erf), + x, x = layernorm(h) (no
   affine, eps 1e-5). NB blocks each own C = 256 / NB columns of every layer: a layer's block
   stages its slice of W (C x 256 floats) and bias into shared memory while it waits for the
   previous layer (one counter per layer, incremented by each block after a fence), then
   normalises the 8 input rows itself (every block: the rows are 8 KB), computes its 8 x C
   outputs (P = 256 / (8 C) threads per output split k, shuffled together), applies the
   epilogue and writes them. Block 0 computes the final layernorm. Forwards run back to back in
   one launch, each starting after the previous one's last result (so a forward's time is its
   latency, not a pipeline's throughput); per forward = (globaltimer end - start) / F.
   Checked against a double-precision forward on the host (max abs difference printed).
   mlp: the plain version (one FMA chain an output, W staged after the previous layer's
   release); mlp2: tuned (see its comment). Block 0's cycles a layer by phase are printed.
   make build/probe_mlp_ideal (tests/gpu/gpu.mk) */
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define B 8
#define H 256
#define NL 8
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA error %s at %d\n", cudaGetErrorString(e_), __LINE__); exit(1); } } while (0)

__device__ __forceinline__ unsigned long long gtime() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ unsigned ld_acq(const unsigned *p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

#define XP 9 /* mlp2's Xt row pitch (padded: fewer bank conflicts) */
/* rows [8][256] of src -> layernorm into dst (shared), warp w = row w; 256 threads; row-major
   ([8][256]), or TR: transposed ([256][XP], mlp2's Xt) */
template <bool TR = false>
__device__ __forceinline__ void ln_rows(const float *src, float *dst, bool norm) {
    const int w = threadIdx.x / 32, l = threadIdx.x % 32;
    float v[8];
    const float4 *s4 = (const float4 *)(src + w * H);
    float4 a = __ldcg(s4 + l), b = __ldcg(s4 + 32 + l);
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
    if (norm) {
        float s = 0.f;
        for (int j = 0; j < 8; ++j) s += v[j];
        for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        const float mean = s / H;
        float q = 0.f;
        for (int j = 0; j < 8; ++j) q += (v[j] - mean) * (v[j] - mean);
        for (int o = 16; o; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o);
        const float r = rsqrtf(q / H + 1e-5f);
        for (int j = 0; j < 8; ++j) v[j] = (v[j] - mean) * r;
    }
    if (TR) {
        for (int j = 0; j < 4; ++j) dst[(4 * l + j) * XP + w] = v[j], dst[(128 + 4 * l + j) * XP + w] = v[4 + j];
    } else {
        float4 *d4 = (float4 *)(dst + w * H);
        d4[l] = make_float4(v[0], v[1], v[2], v[3]);
        d4[32 + l] = make_float4(v[4], v[5], v[6], v[7]);
    }
}

/* (thread 0) until *p reaches want */
__device__ __forceinline__ void wait_for(const unsigned *p, unsigned want) {
    while (ld_acq(p) < want) {
    }
}
/* Block 0, after layer NL - 1 of forward f (nb blocks): the final layernorm into out (through
   the shared buffer X), then the forward counts as done (cnt[NL]). */
__device__ __forceinline__ void final_ln(const float *Hbuf, float *X, float *out, unsigned *cnt, int f, int nb) {
    if (threadIdx.x == 0) wait_for(&cnt[NL - 1], (unsigned)(nb * (f + 1)));
    __syncthreads();
    ln_rows(Hbuf + (size_t)((f & 1) * NL + NL - 1) * B * H, X, true);
    __syncthreads();
    for (int i = threadIdx.x; i < B * H; i += 256) out[i] = X[i];
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(&cnt[NL], 1u);
    }
}
/* Block 0's thread 0, at the end: the F forwards' time from t0 and its phases' cycles */
__device__ __forceinline__ void report(const unsigned *cnt, int F, unsigned long long t0, const long long *ph,
                                       unsigned long long *tm) {
    wait_for(&cnt[NL], (unsigned)F);
    tm[0] = gtime() - t0;
    for (int i = 0; i < 5; ++i) tm[1 + i] = (unsigned long long)ph[i];
}

template <int C>
__global__ void __launch_bounds__(256) mlp(const float *__restrict__ x0, const float *__restrict__ W,
                                           const float *__restrict__ bias, float *Hbuf, float *out, unsigned *cnt,
                                           int F, unsigned long long *tm, int ILP) {
    constexpr int P = 8 * C >= 256 ? 1 : 256 / (8 * C); /* threads per output */
    constexpr int Q = 8 * C >= 256 ? 8 * C / 256 : 1;   /* outputs per thread */
    extern __shared__ float4 smem4[];
    float *Ws = (float *)smem4;      /* [256][C] */
    float *X = Ws + H * C;           /* [8][256] normalised input rows */
    float *bs = X + B * H;           /* [C] */
    const int nb = gridDim.x, c0 = blockIdx.x * C, t = threadIdx.x;
    const int part = t % P; /* k part */
    unsigned long long t0 = 0;
    long long ph[5] = {0, 0, 0, 0, 0}, pa = 0, pb; /* block 0's phases (cycles): stage, wait, norm, product, release */
#define PH(i) (pb = clock64(), ph[i] += f > 0 ? pb - pa : 0, pa = pb)
    for (int f = 0; f < F; ++f) {
        if (f == 1 && blockIdx.x == 0 && t == 0) t0 = gtime(); /* forward 0 warms up */
        for (int l = 0; l < NL; ++l) {
            pa = clock64();
            /* stage W[l][:, c0:c0+C] and bias (independent of the previous layer) */
            const float *Wl = W + (size_t)l * H * H;
            for (int i = t; i < H * C / 4; i += 256) {
                const int k = i / (C / 4), q = i % (C / 4);
                ((float4 *)Ws)[i] = __ldcg((const float4 *)(Wl + (size_t)k * H + c0) + q);
            }
            if (t < C) bs[t] = bias[l * H + c0 + t];
            PH(0);
            /* the previous layer (or, at l = 0, the previous forward's final layernorm) */
            if (t == 0) {
                wait_for(l > 0 ? &cnt[l - 1] : &cnt[NL], l > 0 ? (unsigned)(nb * (f + 1)) : (unsigned)f);
            }
            __syncthreads();
            PH(1);
            const float *src = l == 0 ? x0 : Hbuf + (size_t)((f & 1) * NL + l - 1) * B * H;
            ln_rows(src, X, l > 0);
            __syncthreads();
            PH(2);
            for (int j = 0; j < Q; ++j) {
                const int o = t / P + j * 256, r = o / C, c = o % C; /* output (row r, column c) */
                float acc = 0.f;
                const int kb = part * (H / P), ke = kb + H / P;
                if (ILP) { /* four independent chains */
                    float a4[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll 4
                    for (int k = kb; k < ke; k += 4) {
                        const float4 xv = *(const float4 *)&X[r * H + k];
                        a4[0] += xv.x * Ws[k * C + c];
                        a4[1] += xv.y * Ws[(k + 1) * C + c];
                        a4[2] += xv.z * Ws[(k + 2) * C + c];
                        a4[3] += xv.w * Ws[(k + 3) * C + c];
                    }
                    acc = (a4[0] + a4[1]) + (a4[2] + a4[3]);
                } else {
#pragma unroll 8
                    for (int k = kb; k < ke; ++k) acc += X[r * H + k] * Ws[k * C + c];
                }
                for (int s = P / 2; s; s >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, s, P);
                if (part == 0) {
                    float h = acc + bs[c];
                    h = 0.5f * h * (1.f + erff(h * 0.70710678118654752f));
                    h += X[r * H + c0 + c];
                    Hbuf[(size_t)((f & 1) * NL + l) * B * H + r * H + c0 + c] = h;
                }
            }
            __syncthreads();
            PH(3);
            if (t == 0) {
                __threadfence();
                atomicAdd(&cnt[l], 1u);
            }
            PH(4);
        }
        if (blockIdx.x == 0) final_ln(Hbuf, X, out, cnt, f, nb); /* the final layernorm, then the forward is done */
    }
    if (blockIdx.x == 0 && t == 0) report(cnt, F, t0, ph, tm);
}


/* The same forward, tuned: the next layer's slice of W copied into a second shared buffer
   (cp.async) while this layer runs, the input rows kept transposed (Xt[k][8]), and the product
   register-blocked: thread t takes 4 columns (a float4 of W) of one row over a k part, the
   parts summed through shared memory. */
__device__ __forceinline__ void stage_async(float *dst, const float *Wl, int c0, int C) {
    for (int i = threadIdx.x; i < H * C / 4; i += 256) {
        const int k = i / (C / 4), q = i % (C / 4);
        const unsigned sa = (unsigned)__cvta_generic_to_shared(dst + 4 * i);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sa), "l"(Wl + (size_t)k * H + c0 + 4 * q) : "memory");
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int C>
__global__ void __launch_bounds__(256) mlp2(const float *__restrict__ x0, const float *__restrict__ W,
                                            const float *__restrict__ bias, float *Hbuf, float *out, unsigned *cnt,
                                            int F, unsigned long long *tm) {
    constexpr int QN = C / 4, PAIRS = 8 * QN, KP = 256 / PAIRS, KL = H / KP;
    extern __shared__ float4 smem4[];
    float *Wb = (float *)smem4;   /* [2][256][C] */
    float *Xt = Wb + 2 * H * C;   /* [256][XP] */
    float4 *red = (float4 *)(Xt + H * XP); /* [KP][PAIRS] */
    const int nb = gridDim.x, c0 = blockIdx.x * C, t = threadIdx.x;
    const int pair = t % PAIRS, part = t / PAIRS, r = pair / QN, q = pair % QN;
    unsigned long long t0 = 0;
    long long ph[5] = {0, 0, 0, 0, 0}, pa = 0, pb;
    stage_async(Wb, W, c0, C); /* layer 0's slice */
    int buf = 0;
    for (int f = 0; f < F; ++f) {
        if (f == 1 && blockIdx.x == 0 && t == 0) t0 = gtime();
        for (int l = 0; l < NL; ++l) {
            pa = clock64();
            float bv[4 * C / 256 + 1];
            for (int j = 0; j * 256 < 8 * C; ++j) { /* this thread's epilogue outputs' bias, early */
                const int o = t + j * 256;
                bv[j] = o < 8 * C ? __ldg(bias + l * H + c0 + o % C) : 0.f;
            }
            PH(0);
            if (t == 0) {
                wait_for(l > 0 ? &cnt[l - 1] : &cnt[NL], l > 0 ? (unsigned)(nb * (f + 1)) : (unsigned)f);
            }
            asm volatile("cp.async.wait_group 0;" ::: "memory");
            __syncthreads();
            PH(1);
            const float *Ws = Wb + buf * H * C;
            stage_async(Wb + (buf ^ 1) * H * C, W + (size_t)((l + 1) % NL) * H * H, c0, C); /* the next layer's */
            const float *src = l == 0 ? x0 : Hbuf + (size_t)((f & 1) * NL + l - 1) * B * H;
            ln_rows<true>(src, Xt, l > 0);
            __syncthreads();
            PH(2);
            {
                float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
                const float4 *W4 = (const float4 *)Ws;
#pragma unroll 8
                for (int k = part * KL; k < part * KL + KL; ++k) {
                    const float4 w = W4[k * QN + q];
                    const float x = Xt[k * XP + r];
                    acc.x += x * w.x, acc.y += x * w.y, acc.z += x * w.z, acc.w += x * w.w;
                }
                red[part * PAIRS + pair] = acc;
            }
            __syncthreads();
            for (int j = 0; j * 256 < 8 * C; ++j) {
                const int o = t + j * 256;
                if (o < 8 * C) {
                    const int pr = o / 4, cm = o % 4, rr = pr / QN, cc = (pr % QN) * 4 + cm;
                    float h = 0.f;
                    for (int pp = 0; pp < KP; ++pp) h += ((const float *)&red[pp * PAIRS + pr])[cm];
                    h += bv[j];
                    h = 0.5f * h * (1.f + erff(h * 0.70710678118654752f));
                    h += Xt[(c0 + cc) * XP + rr];
                    Hbuf[(size_t)((f & 1) * NL + l) * B * H + rr * H + c0 + cc] = h;
                }
            }
            __syncthreads();
            PH(3);
            if (t == 0) {
                __threadfence();
                atomicAdd(&cnt[l], 1u);
            }
            buf ^= 1;
            PH(4);
        }
        if (blockIdx.x == 0) final_ln(Hbuf, Xt, out, cnt, f, nb);
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    if (blockIdx.x == 0 && t == 0) report(cnt, F, t0, ph, tm);
}

static uint64_t rng = 0x853c49e6748fea9bull;
static float rnd(float lo, float hi) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (float)((rng >> 40) / 16777216.0);
}

/* One kernel's figures: its device time over F forwards in one launch (go(F, variant)), checked
   against ref, with block 0's phases (names ph[5]), for each variant; then one forward a launch. */
template <class Go>
static void measure(Go go, const char *what, int C, int nb, int variants, const char *const *vname, const char *const *ph,
                    unsigned *dcnt, unsigned long long *dtm, const float *dout, const std::vector<double> &ref) {
    const int F = 2001;
    for (int rep = 0; rep < 2 * variants; ++rep) {
        const int var = rep % variants;
        CK(cudaMemset(dcnt, 0, (NL + 1) * sizeof(unsigned)));
        go(F, var);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        unsigned long long tms[6];
        std::vector<float> got(B * H);
        CK(cudaMemcpy(tms, dtm, sizeof tms, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(got.data(), dout, B * H * 4, cudaMemcpyDeviceToHost));
        double worst = 0;
        for (int i = 0; i < B * H; ++i) worst = fmax(worst, fabs(got[i] - ref[i]));
        const double per = (double)(F - 1) * NL;
        printf("%sC %3d (%2d blocks%s%s): %.2f us a forward (device time, %d forwards), max |diff| vs double %.2g; "
               "block 0 a layer (cycles): %s %.0f %s %.0f %s %.0f %s %.0f %s %.0f\n",
               what, C, nb, vname ? ", " : "", vname ? vname[var] : "", tms[0] / 1e3 / (F - 1), F - 1, worst, ph[0],
               tms[1] / per, ph[1], tms[2] / per, ph[2], tms[3] / per, ph[3], tms[4] / per, ph[4], tms[5] / per);
    }
    /* one forward a launch: launch + sync, as a program would see it */
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<float> ts;
    for (int i = 0; i < 300; ++i) {
        CK(cudaMemset(dcnt, 0, (NL + 1) * sizeof(unsigned)));
        CK(cudaEventRecord(e0));
        go(1, variants - 1);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (i >= 50) ts.push_back(ms * 1e3f);
    }
    std::sort(ts.begin(), ts.end());
    printf("%sC %3d: one forward a launch, event to event: median %.2f us\n", what, C, ts[ts.size() / 2]);
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
}

template <int C>
static void run(const float *dx, const float *dW, const float *db, float *dH, float *dout, unsigned *dcnt,
                unsigned long long *dtm, const std::vector<double> &ref) {
    static const char *const vname[2] = {"1-chain product", "4-chain product"};
    static const char *const ph[5] = {"stage", "wait", "norm", "product", "release"};
    const int nb = H / C;
    const size_t sm = (size_t)(H * C + B * H + C) * 4;
    CK(cudaFuncSetAttribute(mlp<C>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm));
    measure([&](int F, int ilp) { mlp<C><<<nb, 256, sm>>>(dx, dW, db, dH, dout, dcnt, F, dtm, ilp); }, "", C, nb, 2,
            vname, ph, dcnt, dtm, dout, ref);
}

template <int C>
static void run2(const float *dx, const float *dW, const float *db, float *dH, float *dout, unsigned *dcnt,
                 unsigned long long *dtm, const std::vector<double> &ref) {
    static const char *const ph[5] = {"bias", "wait", "norm", "product", "release"};
    const int nb = H / C;
    const size_t sm = (size_t)(2 * H * C + XP * H + 4 * 256) * 4;
    CK(cudaFuncSetAttribute(mlp2<C>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm));
    measure([&](int F, int) { mlp2<C><<<nb, 256, sm>>>(dx, dW, db, dH, dout, dcnt, F, dtm); }, "tuned ", C, nb, 1,
            nullptr, ph, dcnt, dtm, dout, ref);
}

int main() {
    std::vector<float> hx(B * H), hW((size_t)NL * H * H), hb(NL * H);
    /* bench's order of draws: W, bias, x */
    for (auto &v : hW) v = rnd(-0.0625f, 0.0625f);
    for (auto &v : hb) v = rnd(-0.1f, 0.1f);
    for (auto &v : hx) v = rnd(-1.f, 1.f);
    std::vector<double> ref(hx.begin(), hx.end()), tmp(B * H);
    for (int l = 0; l < NL; ++l) {
        for (int b = 0; b < B; ++b)
            for (int j = 0; j < H; ++j) {
                double a = 0;
                for (int k = 0; k < H; ++k) a += ref[b * H + k] * hW[(size_t)l * H * H + (size_t)k * H + j];
                a += hb[l * H + j];
                a = 0.5 * a * (1.0 + erf(a / sqrt(2.0)));
                tmp[b * H + j] = a + ref[b * H + j];
            }
        for (int b = 0; b < B; ++b) {
            double m = 0, v = 0;
            for (int j = 0; j < H; ++j) m += tmp[b * H + j];
            m /= H;
            for (int j = 0; j < H; ++j) v += (tmp[b * H + j] - m) * (tmp[b * H + j] - m);
            v /= H;
            for (int j = 0; j < H; ++j) ref[b * H + j] = (tmp[b * H + j] - m) / sqrt(v + 1e-5);
        }
    }
    float *dx, *dW, *db, *dH, *dout;
    unsigned *dcnt;
    unsigned long long *dtm;
    CK(cudaMalloc(&dx, B * H * 4));
    CK(cudaMalloc(&dW, hW.size() * 4));
    CK(cudaMalloc(&db, hb.size() * 4));
    CK(cudaMalloc(&dH, 2 * NL * B * H * 4));
    CK(cudaMalloc(&dout, B * H * 4));
    CK(cudaMalloc(&dcnt, (NL + 1) * sizeof(unsigned)));
    CK(cudaMalloc(&dtm, 6 * sizeof(unsigned long long)));
    CK(cudaMemcpy(dx, hx.data(), B * H * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dW, hW.data(), hW.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, hb.data(), hb.size() * 4, cudaMemcpyHostToDevice));
    cudaDeviceProp pr;
    CK(cudaGetDeviceProperties(&pr, 0));
    printf("%s\n", pr.name);
    run<64>(dx, dW, db, dH, dout, dcnt, dtm, ref);
    run<32>(dx, dW, db, dH, dout, dcnt, dtm, ref);
    run<16>(dx, dW, db, dH, dout, dcnt, dtm, ref);
    run<8>(dx, dW, db, dH, dout, dcnt, dtm, ref);
    run2<64>(dx, dW, db, dH, dout, dcnt, dtm, ref);
    run2<32>(dx, dW, db, dH, dout, dcnt, dtm, ref);
    run2<16>(dx, dW, db, dH, dout, dcnt, dtm, ref);
    run2<8>(dx, dW, db, dH, dout, dcnt, dtm, ref);
    return 0;
}
