// probe_poll.cu - what one poll of N 64-byte ring slots of mapped pinned host memory costs a
// GPU block, by width and load (not a test; nvcc). Each poll reads lines no earlier poll read
// (a 256 MB buffer), so nothing is served from a cache; the polls are dependent, as the
// fetcher's are. Measured on the H100: 1.24-1.35 us a poll from 1 to 64 slots (bench/NOTES.md,
// session 19). The last rows read write-combined memory (the write-combined ring
// experiment of session 20: polls cost the same, and the rings stayed cached).
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
__device__ __forceinline__ uint64_t gt() { uint64_t t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
// W: bytes per lane load (8 or 16); NT: threads loading (a poll of NT * W / 64 slots); V: 0
// ld.volatile, 1 ld.relaxed.sys
template <int W, int NT, int V>
__global__ void poll(const uint64_t *buf, size_t words, uint64_t *out, int reps) {
    const int t = threadIdx.x;
    constexpr int NB = NT < 32 ? 32 : NT;
    uint64_t acc = 0;
    const int per = W / 8; // words per lane
    const size_t span = (size_t)NT * per; // words a poll
    size_t off = 0;
    __syncthreads();
    uint64_t t0 = gt();
    for (int r = 0; r < reps; r++) {
        const uint64_t *q = buf + off + (size_t)t * per;
        uint64_t a = 0, b = 0;
        if (t >= NT) {
        } else if (W == 8) {
            if (V == 0) asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(a) : "l"(q) : "memory");
            else asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(a) : "l"(q) : "memory");
        } else {
            if (V == 0) asm volatile("ld.volatile.global.v2.u64 {%0,%1}, [%2];" : "=l"(a), "=l"(b) : "l"(q) : "memory");
            else asm volatile("ld.relaxed.sys.global.v2.u64 {%0,%1}, [%2];" : "=l"(a), "=l"(b) : "l"(q) : "memory");
        }
        acc += a ^ b;
        asm volatile("bar.sync 1, %0;" ::"n"(NB) : "memory");
        off += span + (acc == 0x123456789ull);
        if (off + span > words) off = 0;
    }
    uint64_t t1 = gt();
    if (t == 0) { out[0] = t1 - t0; out[1] = acc; }
}
int main() {
    const size_t bytes = 256u << 20, words = bytes / 8;
    uint64_t *h, *d, *out, *hout;
    if (cudaHostAlloc((void **)&h, bytes, cudaHostAllocMapped) != cudaSuccess) { printf("alloc failed\n"); return 1; }
    for (size_t i = 0; i < words; i++) h[i] = i;
    cudaHostGetDevicePointer((void **)&d, h, 0);
    uint64_t *hw = NULL, *dw = NULL;
    if (cudaHostAlloc((void **)&hw, bytes, cudaHostAllocMapped | cudaHostAllocWriteCombined) == cudaSuccess) {
        for (size_t i = 0; i < words; i++) hw[i] = i;
        cudaHostGetDevicePointer((void **)&dw, hw, 0);
    }
    cudaHostAlloc((void **)&hout, 64, cudaHostAllocMapped);
    cudaHostGetDevicePointer((void **)&out, hout, 0);
    const int reps = 4000;
#define RUN(W, NT, V, name) RUNB(d, W, NT, V, name)
#define RUNB(D, W, NT, V, name) { for (int k = 0; k < 2; k++) { poll<W, NT, V><<<1, NT < 32 ? 32 : NT>>>(D, words, out, reps); cudaDeviceSynchronize(); } \
    double ns = (double)hout[0] / reps; int slots = NT * W / 64; \
    printf("%-44s slots %3d: %7.0f ns a poll, %6.1f ns a slot\n", name, slots, ns, ns / slots); }
    RUN(8, 8, 0, "8 B x 8 lanes (1 slot, idle poll)");
    RUN(8, 96, 0, "8 B volatile, 96 threads (now: 12 slots)");
    RUN(8, 128, 0, "8 B volatile, 128 threads");
    RUN(8, 256, 0, "8 B volatile, 256 threads");
    RUN(8, 96, 1, "8 B relaxed.sys, 96 threads");
    RUN(16, 4, 0, "16 B x 4 lanes (1 slot)");
    RUN(16, 96, 0, "16 B volatile, 96 threads");
    RUN(16, 128, 0, "16 B volatile, 128 threads");
    RUN(16, 256, 0, "16 B volatile, 256 threads");
    RUN(16, 96, 1, "16 B relaxed.sys, 96 threads");
    if (dw) {
        RUNB(dw, 8, 8, 0, "write-combined: 8 B x 8 lanes (1 slot)");
        RUNB(dw, 8, 96, 0, "write-combined: 8 B volatile, 96 threads");
    }
    printf("%s\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
}
