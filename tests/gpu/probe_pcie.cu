// probe_pcie.cu - latency of reading one 64-byte ring slot of mapped pinned host memory
// from a GPU thread, several ways (not a test; nvcc). Prints the mean ns per read.
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>

__device__ __forceinline__ uint64_t gt() { uint64_t t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }

template <int MODE> __global__ void probe(const uint64_t *slot, uint64_t *out, int reps) {
    uint64_t acc = 0;
    int lane = threadIdx.x;
    __syncwarp();
    uint64_t t0 = gt();
    for (int r = 0; r < reps; r++) {
        const uint64_t *q = slot + 8 * (r & 15);
        uint64_t a, b, c, d, e, f, g, h;
        if (MODE == 0) { // one volatile 8-byte load
            if (lane == 0) { asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(a) : "l"(q) : "memory"); acc += a; }
        } else if (MODE == 1) { // four volatile 16-byte loads in one thread
            if (lane == 0) {
                asm volatile("ld.volatile.global.v2.u64 {%0,%1}, [%2];" : "=l"(a), "=l"(b) : "l"(q) : "memory");
                asm volatile("ld.volatile.global.v2.u64 {%0,%1}, [%2];" : "=l"(c), "=l"(d) : "l"(q + 2) : "memory");
                asm volatile("ld.volatile.global.v2.u64 {%0,%1}, [%2];" : "=l"(e), "=l"(f) : "l"(q + 4) : "memory");
                asm volatile("ld.volatile.global.v2.u64 {%0,%1}, [%2];" : "=l"(g), "=l"(h) : "l"(q + 6) : "memory");
                acc += a ^ b ^ c ^ d ^ e ^ f ^ g ^ h;
            }
        } else if (MODE == 2) { // old scheme: acquire tag, then the body
            if (lane == 0) {
                asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(a) : "l"(q + 7) : "memory");
                const volatile uint64_t *v = q;
                acc += a ^ v[0] ^ v[1] ^ v[2] ^ v[3] ^ v[4] ^ v[5] ^ v[6];
            }
        } else if (MODE == 3) { // four relaxed.sys 16-byte loads in one thread
            if (lane == 0) {
                asm volatile("ld.relaxed.sys.global.v2.u64 {%0,%1}, [%2];" : "=l"(a), "=l"(b) : "l"(q) : "memory");
                asm volatile("ld.relaxed.sys.global.v2.u64 {%0,%1}, [%2];" : "=l"(c), "=l"(d) : "l"(q + 2) : "memory");
                asm volatile("ld.relaxed.sys.global.v2.u64 {%0,%1}, [%2];" : "=l"(e), "=l"(f) : "l"(q + 4) : "memory");
                asm volatile("ld.relaxed.sys.global.v2.u64 {%0,%1}, [%2];" : "=l"(g), "=l"(h) : "l"(q + 6) : "memory");
                acc += a ^ b ^ c ^ d ^ e ^ f ^ g ^ h;
            }
        } else if (MODE == 4) { // four lanes, one volatile 16-byte load each, then shuffles
            a = b = 0;
            if (lane < 4) asm volatile("ld.volatile.global.v2.u64 {%0,%1}, [%2];" : "=l"(a), "=l"(b) : "l"(q + 2 * lane) : "memory");
            a ^= __shfl_xor_sync(0xffffffffu, a, 1); a ^= __shfl_xor_sync(0xffffffffu, a, 2);
            acc += a ^ b;
        } else if (MODE == 5) { // 128 slots, one thread each, four volatile 16-byte loads (busy poll)
            const uint64_t *qq = slot + 8 * (lane + 32 * (r & 3));
            asm volatile("ld.volatile.global.v2.u64 {%0,%1}, [%2];" : "=l"(a), "=l"(b) : "l"(qq) : "memory");
            asm volatile("ld.volatile.global.v2.u64 {%0,%1}, [%2];" : "=l"(c), "=l"(d) : "l"(qq + 2) : "memory");
            asm volatile("ld.volatile.global.v2.u64 {%0,%1}, [%2];" : "=l"(e), "=l"(f) : "l"(qq + 4) : "memory");
            asm volatile("ld.volatile.global.v2.u64 {%0,%1}, [%2];" : "=l"(g), "=l"(h) : "l"(qq + 6) : "memory");
            acc += a ^ b ^ c ^ d ^ e ^ f ^ g ^ h;
        }
        __syncwarp();
        acc = __shfl_sync(0xffffffffu, acc, 0); // the next read depends on this one
        if (acc == 0x123456789ull) q = slot; // keep acc live
    }
    uint64_t t1 = gt();
    if (lane == 0) { out[0] = (t1 - t0); out[1] = acc; }
}

int main() {
    uint64_t *h, *d, *out, *hout;
    cudaHostAlloc((void **)&h, 1 << 16, cudaHostAllocMapped);
    for (int i = 0; i < (1 << 13); i++) h[i] = i;
    cudaHostGetDevicePointer((void **)&d, h, 0);
    cudaHostAlloc((void **)&hout, 64, cudaHostAllocMapped);
    cudaHostGetDevicePointer((void **)&out, hout, 0);
    const int reps = 2000;
    const char *names[] = {"1 x ld.volatile.u64 (8 B)", "4 x ld.volatile.v2.u64, one thread (64 B)",
                           "ld.acquire.sys tag then 7 volatile words (old)", "4 x ld.relaxed.sys.v2.u64, one thread",
                           "4 lanes x ld.volatile.v2.u64 + shuffles", "32 lanes x 4 x ld.volatile.v2.u64 (busy poll)"};
    for (int m = 0; m < 6; m++) {
        for (int k = 0; k < 2; k++) {
            switch (m) {
            case 0: probe<0><<<1, 32>>>(d, out, reps); break;
            case 1: probe<1><<<1, 32>>>(d, out, reps); break;
            case 2: probe<2><<<1, 32>>>(d, out, reps); break;
            case 3: probe<3><<<1, 32>>>(d, out, reps); break;
            case 4: probe<4><<<1, 32>>>(d, out, reps); break;
            case 5: probe<5><<<1, 32>>>(d, out, reps); break;
            }
            cudaDeviceSynchronize();
        }
        printf("INFO pcie.%d %-50s %.0f ns per read\n", m, names[m], (double)hout[0] / reps);
    }
    printf("%s\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
}
