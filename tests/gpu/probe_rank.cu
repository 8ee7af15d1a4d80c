// probe_rank.cu - cycles of the steps of one fetcher push round (gpuos__fetch_process), each in
// a dependent loop of one warp (not a test; nvcc -arch=sm_90 -O3 tests/gpu/probe_rank.cu).
// "inbox store" is the loop's own cost (a modulo by a constant and one relaxed store a lane):
// subtract it from the others. H100, session 15: match_any 556, 31 shuffles 529, binary
// search over 32 offsets 584, inbox store 203, modulo by a variable 327 cycles an iteration.
#include <cstdio>
#include <cstdint>
__global__ void k(unsigned *out, unsigned long long *cyc, int mode, int iters, unsigned *inbox) {
    const int lane = threadIdx.x & 31;
    unsigned w = (lane * 37u + 5u) % 264u, acc = 0;
    __shared__ unsigned s_off[33];
    if (lane <= 32) s_off[lane] = lane * 4;
    __syncwarp();
    long long t0 = clock64();
    for (int it = 0; it < iters; it++) {
        w = (w + 33u + (acc & 1)) % 264u;
        if (mode == 0) {
            unsigned peers = __match_any_sync(0xffffffffu, w);
            acc += __popc(peers & ((1u << lane) - 1));
        } else if (mode == 1) {
            unsigned lower = 0;
            for (int d = 1; d < 32; d++) {
                unsigned o = __shfl_sync(0xffffffffu, w, (lane + d) & 31);
                lower += (o == w) & (((lane + d) & 31) < lane);
            }
            acc += lower;
        } else if (mode == 2) {
            unsigned p = (w + lane) & 127, lo = 0, hi = 32;
            while (hi - lo > 1) { unsigned mid = (lo + hi) >> 1; if (s_off[mid] <= p) lo = mid; else hi = mid; }
            acc += lo;
        } else if (mode == 3) {
            asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"((unsigned long long *)inbox + (size_t)w * 256 + (it & 255)), "l"((unsigned long long)it) : "memory");
            acc += w;
        } else if (mode == 4) {
            acc += (w + acc) % (264u + (acc & 1));
        }
        __syncwarp();
    }
    long long t1 = clock64();
    if (lane == 0) cyc[0] = t1 - t0;
    out[lane] = acc;
}
int main() {
    unsigned *out, *inbox; unsigned long long *cyc, h;
    cudaMalloc(&out, 128); cudaMalloc(&cyc, 8); cudaMalloc(&inbox, 264 * 256 * 8);
    const char *names[] = {"match_any", "31 shuffles", "binary search", "inbox store", "modulo"};
    for (int m = 0; m < 5; m++) {
        k<<<1, 32>>>(out, cyc, m, 1000, inbox);
        k<<<1, 32>>>(out, cyc, m, 10000, inbox);
        cudaMemcpy(&h, cyc, 8, cudaMemcpyDeviceToHost);
        printf("%-14s %.1f cycles/iter\n", names[m], h / 10000.0);
    }
    return 0;
}
