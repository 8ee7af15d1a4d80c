/* probe_l2stream.cu - how fast one block streams an L2-resident buffer (not a test): the row
   tile of a few-row matmul (gpuos__d_mm_row) reads all of B, 256 KB for 256x256 f32, on one
   block. Each thread keeps INF 16-byte ld.global.cg loads in flight (issued together, then
   summed), blocks of NT threads, NB blocks at once reading the same bytes (the tiny MLP's 8
   rows), cycles from the block's first barrier to its last (clock64, block 0).
   make build/probe_l2stream */
#include <cstdio>
#include <cuda_runtime.h>

template <int INF>
__global__ void stream(const float4 *__restrict__ b, long long n4, float *sink, long long *cyc) {
    __syncthreads();
    const long long t0 = clock64();
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    const long long step = (long long)blockDim.x * INF;
    for (long long i0 = threadIdx.x; i0 < n4; i0 += step) {
        float4 v[INF];
#pragma unroll
        for (int j = 0; j < INF; ++j) {
            const long long i = i0 + (long long)j * blockDim.x;
            v[j] = i < n4 ? __ldcg(b + i) : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
        for (int j = 0; j < INF; ++j) acc.x += v[j].x, acc.y += v[j].y, acc.z += v[j].z, acc.w += v[j].w;
    }
    __syncthreads();
    const long long t1 = clock64();
    if (acc.x + acc.y + acc.z + acc.w == 12345.f) sink[threadIdx.x] = acc.x;
    if (threadIdx.x == 0 && blockIdx.x == 0) *cyc = t1 - t0;
}

/* double-buffered, as gpuos__d_mm_row: INF loads in flight while the other INF are summed */
template <int INF>
__global__ void stream2(const float4 *__restrict__ b, long long n4, float *sink, long long *cyc) {
    __syncthreads();
    const long long t0 = clock64();
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    const long long step = (long long)blockDim.x * INF;
    float4 v0[INF], v1[INF];
#pragma unroll
    for (int j = 0; j < INF; ++j) v0[j] = __ldcg(b + threadIdx.x + (long long)j * blockDim.x);
    for (long long i0 = threadIdx.x; i0 < n4; i0 += 2 * step) {
#pragma unroll
        for (int j = 0; j < INF; ++j) {
            const long long i = i0 + step + (long long)j * blockDim.x;
            v1[j] = i < n4 ? __ldcg(b + i) : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
        for (int j = 0; j < INF; ++j) acc.x += v0[j].x, acc.y += v0[j].y, acc.z += v0[j].z, acc.w += v0[j].w;
#pragma unroll
        for (int j = 0; j < INF; ++j) {
            const long long i = i0 + 2 * step + (long long)j * blockDim.x;
            v0[j] = i < n4 ? __ldcg(b + i) : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
        for (int j = 0; j < INF; ++j) acc.x += v1[j].x, acc.y += v1[j].y, acc.z += v1[j].z, acc.w += v1[j].w;
    }
    __syncthreads();
    const long long t1 = clock64();
    if (acc.x + acc.y + acc.z + acc.w == 12345.f) sink[threadIdx.x] = acc.x;
    if (threadIdx.x == 0 && blockIdx.x == 0) *cyc = t1 - t0;
}

/* one thread's cp.async.bulk (TMA, 1-D) of CH bytes at a time into a ring of S stages in
   shared memory, completion through an mbarrier per stage; every thread then reads its
   16 bytes of each stage from shared memory */
template <int CH, int S>
__global__ void stream_bulk(const float4 *__restrict__ b, long long n4, float *sink, long long *cyc) {
    extern __shared__ __align__(128) unsigned char sm[];
    __shared__ __align__(8) unsigned long long bar[S];
    const long long nbytes = n4 * 16, nch = nbytes / CH;
    if (threadIdx.x == 0)
        for (int s = 0; s < S; ++s) {
            unsigned a = (unsigned)__cvta_generic_to_shared(&bar[s]);
            asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(a));
        }
    asm volatile("fence.proxy.async.shared::cta;");
    __syncthreads();
    const long long t0 = clock64();
    auto issue = [&](long long c) {
        const int s = (int)(c % S);
        unsigned ba = (unsigned)__cvta_generic_to_shared(&bar[s]);
        unsigned da = (unsigned)__cvta_generic_to_shared(sm + (size_t)s * CH);
        asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(ba), "r"(CH));
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     ::"r"(da), "l"((const char *)b + c * CH), "r"(CH), "r"(ba) : "memory");
    };
    if (threadIdx.x == 0)
        for (long long c = 0; c < S && c < nch; ++c) issue(c);
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    for (long long c = 0; c < nch; ++c) {
        const int s = (int)(c % S);
        const unsigned ph = (unsigned)((c / S) & 1);
        unsigned ba = (unsigned)__cvta_generic_to_shared(&bar[s]);
        unsigned done = 0;
        while (!done)
            asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                         : "=r"(done) : "r"(ba), "r"(ph) : "memory");
        const float4 *q = (const float4 *)(sm + (size_t)s * CH);
        for (int i = threadIdx.x; i < CH / 16; i += blockDim.x) {
            const float4 v = q[i];
            acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;
        }
        __syncthreads(); /* the stage is read by all before it is refilled */
        if (threadIdx.x == 0 && c + S < nch) issue(c + S);
    }
    __syncthreads();
    const long long t1 = clock64();
    if (acc.x + acc.y + acc.z + acc.w == 12345.f) sink[threadIdx.x] = acc.x;
    if (threadIdx.x == 0 && blockIdx.x == 0) *cyc = t1 - t0;
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); return 1; } } while (0)

int main() {
    const long long bytes = 256 * 1024, n4 = bytes / 16;
    float4 *b; float *sink; long long *cyc, h;
    CK(cudaMalloc(&b, bytes)); CK(cudaMemset(b, 0, bytes));
    CK(cudaMalloc(&sink, 4096 * 4)); CK(cudaMalloc(&cyc, 8));
    printf("one block streams 256 KB from L2 (cycles of block 0; bytes/cycle)\n");
#define RUN(K, NB, NT, SMEM, label)                                                          \
    do {                                                                                     \
        long long best = 1LL << 60;                                                          \
        for (int r = 0; r < 8; ++r) {                                                        \
            K<<<NB, NT, SMEM>>>(b, n4, sink, cyc);                                           \
            CK(cudaGetLastError()); CK(cudaMemcpy(&h, cyc, 8, cudaMemcpyDeviceToHost));      \
            if (r && h < best) best = h;                                                     \
        }                                                                                    \
        printf("  %-34s blocks %2d threads %4d: %6lld cycles  %5.1f B/cycle\n", label, NB, NT, best, \
               (double)bytes / best);                                                        \
    } while (0)
    for (int nb = 1; nb <= 8; nb *= 8) {
        RUN(stream<4>, nb, 256, 0, "ldcg, 4 in flight");
        RUN(stream<8>, nb, 256, 0, "ldcg, 8 in flight");
        RUN(stream<16>, nb, 256, 0, "ldcg, 16 in flight");
        RUN(stream<32>, nb, 256, 0, "ldcg, 32 in flight");
        RUN(stream<16>, nb, 512, 0, "ldcg, 16 in flight");
        RUN(stream<16>, nb, 1024, 0, "ldcg, 16 in flight");
        RUN(stream2<8>, nb, 256, 0, "ldcg, 2 x 8 (as mm_row)");
        RUN(stream2<16>, nb, 256, 0, "ldcg, 2 x 16");
        CK(cudaFuncSetAttribute(stream_bulk<16384, 4>, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536));
        CK(cudaFuncSetAttribute(stream_bulk<8192, 8>, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536));
        RUN((stream_bulk<4096, 4>), nb, 256, 16384, "bulk 4 KB x 4 stages");
        RUN((stream_bulk<8192, 2>), nb, 256, 16384, "bulk 8 KB x 2 stages");
        RUN((stream_bulk<4096, 8>), nb, 256, 32768, "bulk 4 KB x 8 stages");
        RUN((stream_bulk<8192, 8>), nb, 256, 65536, "bulk 8 KB x 8 stages");
        RUN((stream_bulk<16384, 4>), nb, 256, 65536, "bulk 16 KB x 4 stages");
    }
    return 0;
}
