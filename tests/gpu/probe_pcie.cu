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
        } else if (MODE >= 6 && MODE <= 8) { // 32 / 16 / 8 lanes, one 8-byte volatile load each (the mailbox's look: 32)
            const int nl = MODE == 6 ? 32 : MODE == 7 ? 16 : 8;
            a = 0;
            if (lane < nl) asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(a) : "l"(slot + 32 * (r & 7) + lane) : "memory");
            for (int o = 16; o; o >>= 1) a ^= __shfl_xor_sync(0xffffffffu, a, o);
            acc += a;
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

/* ping-pong: the device waits for the host's word to reach k (one lane's 8-byte volatile
   poll, or 32 lanes' when WIDE), answers k on its own word (st.relaxed.sys); the host waits
   for the answer, then writes k + 1. The host's mean per exchange is the floor of any
   host -> device -> host notification on this machine. */
template <bool WIDE> __global__ void pingpong(const volatile uint64_t *hw, uint64_t *dw, int reps) {
    const int lane = threadIdx.x;
    for (int k = 1; k <= reps; k++) {
        for (;;) {
            uint64_t v = 0;
            if (WIDE || lane == 0) asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(hw + (WIDE ? lane : 0)) : "memory");
            v = __shfl_sync(0xffffffffu, v, 0);
            if (v >= (uint64_t)k) break;
        }
        if (lane == 0) asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(dw), "l"((uint64_t)k) : "memory");
    }
}
#include <time.h>
static double now_ns() { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
template <bool WIDE> static void run_pingpong(uint64_t *hw_h, uint64_t *hw_d, uint64_t *dw_h, uint64_t *dw_d) {
    const int reps = 20000;
    for (int t = 0; t < 2; t++) {
        *(volatile uint64_t *)hw_h = 0; *(volatile uint64_t *)dw_h = 0;
        cudaDeviceSynchronize();
        pingpong<WIDE><<<1, 32>>>(hw_d, dw_d, reps);
        double t0 = 0;
        for (int k = 1; k <= reps; k++) {
            if (k == 1001) t0 = now_ns();
            __atomic_store_n((volatile uint64_t *)hw_h, (uint64_t)k, __ATOMIC_RELEASE);
            while (__atomic_load_n((volatile uint64_t *)dw_h, __ATOMIC_ACQUIRE) < (uint64_t)k) {}
        }
        const double t1 = now_ns();
        cudaDeviceSynchronize();
        printf("INFO pcie.pingpong%s host->device->host exchange %.0f ns (mean of %d)\n", WIDE ? " (32-lane poll)" : "",
               (t1 - t0) / (reps - 1000), reps - 1000);
    }
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
                           "4 lanes x ld.volatile.v2.u64 + shuffles", "32 lanes x 4 x ld.volatile.v2.u64 (busy poll)",
                           "32 lanes x ld.volatile.u64 (256 B, the mailbox look)", "16 lanes x ld.volatile.u64 (128 B)",
                           "8 lanes x ld.volatile.u64 (64 B)"};
    for (int m = 0; m < 9; m++) {
        for (int k = 0; k < 2; k++) {
            switch (m) {
            case 0: probe<0><<<1, 32>>>(d, out, reps); break;
            case 1: probe<1><<<1, 32>>>(d, out, reps); break;
            case 2: probe<2><<<1, 32>>>(d, out, reps); break;
            case 3: probe<3><<<1, 32>>>(d, out, reps); break;
            case 4: probe<4><<<1, 32>>>(d, out, reps); break;
            case 5: probe<5><<<1, 32>>>(d, out, reps); break;
            case 6: probe<6><<<1, 32>>>(d, out, reps); break;
            case 7: probe<7><<<1, 32>>>(d, out, reps); break;
            case 8: probe<8><<<1, 32>>>(d, out, reps); break;
            }
            cudaDeviceSynchronize();
        }
        printf("INFO pcie.%d %-50s %.0f ns per read\n", m, names[m], (double)hout[0] / reps);
    }
    run_pingpong<false>(h + 4096, d + 4096, h + 4104, d + 4104);
    run_pingpong<true>(h + 4096, d + 4096, h + 4104, d + 4104);
    printf("%s\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
}
