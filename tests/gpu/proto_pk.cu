// proto_pk.cu - measures the persistent-kernel design (src/device/persistent.cuh,
// src/gpuos_queue.h) with one built-in operator (x + 1 on floats), before the full
// runtime is wired to it. Build on the GPU machine:
//   nvcc -O2 -arch=sm_90 -std=c++17 -I. tests/gpu/proto_pk.cu -o build/proto_pk
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <algorithm>
#include <vector>

#include "src/gpuos_plan.h"
#include "src/gpuos_queue.h"

#define CK(x)                                                                                    \
    do {                                                                                         \
        cudaError_t e_ = (x);                                                                    \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));   \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

// The one operator: out = in + 1 (contiguous f32), kernel id 0.
__device__ void gpuos__d_run(int kernel_id, const void *planv, int64_t begin, int64_t end) {
    const gpuos__ew_plan *p = (const gpuos__ew_plan *)planv;
    if (kernel_id != 0) return;
    float *o = (float *)p->ptr[0];
    const float *a = (const float *)p->ptr[1];
    // all loads of a thread's items first, then the stores: in place (o == a) the
    // compiler may not overlap a load with an earlier store to the same array
    for (int64_t i0 = begin; i0 < end; i0 += 8 * blockDim.x) {
        float v[8];
#pragma unroll
        for (int k = 0; k < 8; k++) {
            int64_t i = i0 + threadIdx.x + k * blockDim.x;
            if (i < end) v[k] = a[i];
        }
#pragma unroll
        for (int k = 0; k < 8; k++) {
            int64_t i = i0 + threadIdx.x + k * blockDim.x;
            if (i < end) o[i] = v[k] + 1.0f;
        }
    }
}
#include "src/device/persistent.cuh"

// Latency of polling one word of mapped host memory: acquire vs relaxed loads.
__global__ void pcie_latency(const uint64_t *h, uint64_t *out) {
    uint64_t t0, t1, v = 0, acc = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (int i = 0; i < 200; i++) {
        asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(h + (v & 0)) : "memory");
        acc += v;
    }
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    out[0] = (t1 - t0) / 200;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (int i = 0; i < 200; i++) {
        asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(h + (v & 0)) : "memory");
        acc += v;
    }
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    out[1] = (t1 - t0) / 200;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (int i = 0; i < 200; i++) {
        asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(out + 4), "l"(acc) : "memory");
        asm volatile("fence.sc.sys;" ::: "memory");
    }
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    out[2] = (t1 - t0) / 200;
    out[3] = acc;
}

__global__ void add1(float *o, const float *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) o[i] = a[i] + 1.0f;
}

static double now_us() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

struct PK {
    gpuos__qslot *ring;
    gpuos__pk_ctl *ctl;
    gpuos__pk_params P;
    uint64_t pos = 0, seq = 1;
    int nblocks;
    cudaStream_t st;
    std::vector<uint64_t> desc_pos;
    uint64_t fetched_seen = 0; // cached: re-read the line the GPU writes only when the ring looks full
    void wait_room(uint64_t need) {
        double t0 = 0;
        if (pos + need - fetched_seen <= P.ring_slots) return;
        // positions consumed: everything up to the descriptor of the last retired task
        for (;;) {
            uint64_t r = __atomic_load_n(&ctl->retired, __ATOMIC_ACQUIRE);
            uint64_t consumed = __atomic_load_n(&ctl->fetched, __ATOMIC_ACQUIRE);
            fetched_seen = consumed;
            if (pos + need - consumed <= P.ring_slots) return;
            if (t0 == 0) t0 = now_us();
            if (now_us() - t0 > 5e6) { printf("TIMEOUT in wait_room r=%llu pos=%llu\n", (unsigned long long)r, (unsigned long long)pos); exit(3); }
        }
    }
    void put(const void *body56, uint64_t p) {
        gpuos__qslot *s = &ring[p & (P.ring_slots - 1)];
        memcpy(s, body56, 56);
        __atomic_store_n(&s->tag, p + 1, __ATOMIC_RELEASE);
    }
    void plan(uint32_t id, const void *plan, size_t bytes) {
        wait_room(GPUOS__PLAN_SLOTS);
        for (uint32_t c = 0; c < GPUOS__PLAN_SLOTS; c++) {
            gpuos__qplan q = {};
            q.kind = GPUOS__SLOT_PLAN;
            q.plan_id = id;
            q.chunk = c;
            size_t off = c * GPUOS__SLOT_PAYLOAD;
            if (off < bytes) memcpy(q.payload, (const char *)plan + off, std::min<size_t>(GPUOS__SLOT_PAYLOAD, bytes - off));
            put(&q, pos++);
        }
    }
    uint64_t task(uint32_t plan_id, int64_t n, uint32_t tile, uint32_t base, uint32_t ndeps = 0,
                  const uint64_t *deps = nullptr, uint32_t kind = GPUOS__SLOT_TASK) {
        wait_room(1);
        gpuos__qdesc d = {};
        d.kind = kind;
        d.kernel_id = 0;
        d.plan_id = plan_id;
        d.n_items = n;
        d.tile_items = tile;
        d.n_tiles = kind == GPUOS__SLOT_TASK ? (uint32_t)((n + tile - 1) / tile) : 0;
        d.base = base;
        d.n_deps = ndeps;
        for (uint32_t k = 0; k < ndeps; k++) d.dep_delta[k] = (uint32_t)(seq - deps[k]);
        desc_pos[seq & (P.task_cap - 1)] = pos;
        put(&d, pos++);
        return seq++;
    }
    void wait(uint64_t s) {
        double t = now_us();
        while (__atomic_load_n(&ctl->retired, __ATOMIC_ACQUIRE) < s) {
            if (now_us() - t > 5e6) {
                printf("TIMEOUT waiting for seq %llu: retired %llu alive %llu sched pos %llu seq %llu; host pos %llu seq %llu\n",
                       (unsigned long long)s, (unsigned long long)ctl->retired, (unsigned long long)ctl->alive,
                       (unsigned long long)ctl->pad_[0], (unsigned long long)ctl->pad_[1], (unsigned long long)pos,
                       (unsigned long long)this->seq);
                exit(3);
            }
        }
    }
};

int main() {
    setvbuf(stdout, NULL, _IONBF, 0);
    printf("start\n");
    CK(cudaSetDeviceFlags(cudaDeviceMapHost));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    const int N = 4096;
    float *x, *y, *bufs;
    CK(cudaMalloc(&x, N * 4));
    CK(cudaMalloc(&y, N * 4));
    CK(cudaMemset(x, 0, N * 4));
    const int NT = 64;
    CK(cudaMalloc(&bufs, (size_t)NT * N * 4));
    CK(cudaMemset(bufs, 0, (size_t)NT * N * 4));
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));

    // ---------------- baselines: plain launches and a CUDA graph of the chain
    const int CH = 1000;
    for (int i = 0; i < 100; i++) add1<<<N / 256, 256, 0, st>>>(x, x, N);
    CK(cudaStreamSynchronize(st));
    double t0 = now_us();
    for (int i = 0; i < CH; i++) add1<<<N / 256, 256, 0, st>>>(x, x, N);
    CK(cudaStreamSynchronize(st));
    double launches = (now_us() - t0) / CH;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < CH; i++) add1<<<N / 256, 256, 0, st>>>(x, x, N);
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, st));
    CK(cudaStreamSynchronize(st));
    std::vector<double> gt;
    for (int r = 0; r < 5; r++) {
        t0 = now_us();
        CK(cudaGraphLaunch(ge, st));
        CK(cudaStreamSynchronize(st));
        gt.push_back((now_us() - t0) / CH);
    }
    std::sort(gt.begin(), gt.end());
    std::vector<double> rt;
    for (int i = 0; i < 2000; i++) {
        t0 = now_us();
        add1<<<N / 256, 256, 0, st>>>(y, y, N);
        CK(cudaStreamSynchronize(st));
        rt.push_back(now_us() - t0);
    }
    std::sort(rt.begin(), rt.end());
    double launch_sync = rt[rt.size() / 2];

    {
        uint64_t *h, *dh, *o;
        CK(cudaHostAlloc(&h, 64, cudaHostAllocMapped));
        CK(cudaHostGetDevicePointer(&dh, h, 0));
        CK(cudaMalloc(&o, 64));
        pcie_latency<<<1, 1, 0, st>>>(dh, o);
        pcie_latency<<<1, 1, 0, st>>>(dh, o);
        uint64_t r[3];
        CK(cudaMemcpy(r, o, 24, cudaMemcpyDeviceToHost));
        printf("mapped host memory: ld.acquire.sys %llu ns, ld.relaxed.sys %llu ns, st.sys+fence.sc.sys %llu ns\n",
               (unsigned long long)r[0], (unsigned long long)r[1], (unsigned long long)r[2]);
    }
    // ---------------- persistent kernel
    PK pk;
    pk.P.ring_slots = 1 << 16;
    pk.P.task_cap = 1 << 16;
    CK(cudaHostAlloc(&pk.ring, pk.P.ring_slots * sizeof(gpuos__qslot), cudaHostAllocMapped));
    memset(pk.ring, 0, pk.P.ring_slots * sizeof(gpuos__qslot));
    CK(cudaHostAlloc(&pk.ctl, sizeof(gpuos__pk_ctl), cudaHostAllocMapped));
    memset(pk.ctl, 0, sizeof(gpuos__pk_ctl));
    CK(cudaHostGetDevicePointer(&pk.P.ring, pk.ring, 0));
    CK(cudaHostGetDevicePointer(&pk.P.ctl, pk.ctl, 0));
    CK(cudaMalloc(&pk.P.tasks, pk.P.task_cap * sizeof(gpuos__dtask)));
    CK(cudaMemset(pk.P.tasks, 0xff, pk.P.task_cap * sizeof(gpuos__dtask)));
    CK(cudaMalloc(&pk.P.done, pk.P.task_cap * 4));
    CK(cudaMalloc(&pk.P.retired, 8));
    CK(cudaMemset(pk.P.retired, 0, 8));
    CK(cudaMalloc(&pk.P.plans, 1024 * GPUOS__PLAN_BYTES));
    pk.P.inbox_cap = 256;
    CK(cudaMalloc(&pk.P.inbox, (size_t)GPUOS__MAX_WORKERS * pk.P.inbox_cap * sizeof(gpuos__dtask)));
    CK(cudaMemset(pk.P.inbox, 0, (size_t)GPUOS__MAX_WORKERS * pk.P.inbox_cap * sizeof(gpuos__dtask)));
    CK(cudaMalloc(&pk.P.wpos, 4 * GPUOS__MAX_WORKERS));
    CK(cudaMemset(pk.P.wpos, 0, 4 * GPUOS__MAX_WORKERS));
    pk.desc_pos.assign(pk.P.task_cap, 0);
    pk.P.start_pos = 0;
    pk.P.start_seq = 1;
    int occ = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, gpuos__pk_main, GPUOS__PK_THREADS, 0));
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, gpuos__pk_main));
    pk.nblocks = prop.multiProcessorCount * occ;
    if (pk.nblocks - 1 > GPUOS__MAX_WORKERS) pk.nblocks = GPUOS__MAX_WORKERS + 1;
    printf("device %s, %d SMs, occupancy %d blocks/SM of %d threads, %d regs -> %d blocks\n", prop.name,
           prop.multiProcessorCount, occ, GPUOS__PK_THREADS, fa.numRegs, pk.nblocks);
    gpuos__pk_main<<<pk.nblocks, GPUOS__PK_THREADS, 0, st>>>(pk.P);
    CK(cudaGetLastError());

    // plans: 0 = x += 1 ; 1 = y = x + 1 ; 2 = x = y + 1 ; 10+k = bufs[k] += 1
    auto mkplan = [&](uint32_t id, float *o, float *a) {
        gpuos__ew_plan p = {};
        p.rank = 1;
        p.n_ptr = 2;
        p.numel = N;
        p.shape[0] = N;
        p.stride[0][0] = 4;
        p.stride[1][0] = 4;
        p.ptr[0] = (char *)o;
        p.ptr[1] = (char *)a;
        pk.plan(id, &p, sizeof p);
    };
    mkplan(0, x, x);
    mkplan(1, y, x);
    mkplan(2, x, y);
    for (int k = 0; k < NT; k++) mkplan(10 + k, bufs + (size_t)k * N, bufs + (size_t)k * N);
    printf("baselines done; first task\n");
    pk.wait(pk.task(0, N, N, 0));
    printf("first task ok\n");

    // roundtrip: one tiny task until the host sees it retired
    std::vector<double> prt, d1, d2;
    for (int i = 0; i < 3000; i++) {
        t0 = now_us();
        pk.wait(pk.task(0, N, N, 0));
        prt.push_back(now_us() - t0);
        d1.push_back((int64_t)(pk.ctl->pad_[1] - pk.ctl->pad_[0]) / 1e3);
        d2.push_back((int64_t)(pk.ctl->pad_[2] - pk.ctl->pad_[1]) / 1e3);
    }
    std::vector<double> prt4;
    for (int i = 0; i < 3000; i++) {
        t0 = now_us();
        pk.wait(pk.task(0, N, 1024, 0));
        prt4.push_back(now_us() - t0);
    }
    std::sort(prt4.begin(), prt4.end());
    printf("roundtrip, 4 tiles of 1024 (us, median)         %10.2f\n", prt4[prt4.size() / 2]);
    std::sort(d1.begin(), d1.end());
    std::sort(d2.begin(), d2.end());
    printf("device: fetched->work done %.2f us, work done->retired %.2f us (medians)\n", d1[d1.size() / 2], d2[d2.size() / 2]);
    std::sort(prt.begin(), prt.end());
    printf("roundtrip (us, median/p10/p90)                  %10.2f %6.2f %6.2f\n", prt[prt.size() / 2],
           prt[prt.size() / 10], prt[prt.size() * 9 / 10]);

    // chain: in place, tile-local (same base): no dependency waits
    printf("\n%-44s %10s\n", "case", "value");
    for (uint32_t tile : {4096u, 1024u, 512u}) {
        std::vector<double> v;
        for (int r = 0; r < 5; r++) {
            t0 = now_us();
            uint64_t last = 0;
            for (int i = 0; i < CH; i++) last = pk.task(0, N, tile, 0);
            pk.wait(last);
            v.push_back((now_us() - t0) / CH);
        }
        std::sort(v.begin(), v.end());
        printf("chain in place, tile %4u (us/op)             %10.3f\n", tile, v[2]);
    }
    // chain across two tensors with explicit cross-block dependencies (worst case)
    {
        std::vector<double> v;
        for (int r = 0; r < 5; r++) {
            t0 = now_us();
            uint64_t prev = pk.task(1, N, 1024, 0);
            for (int i = 1; i < CH; i++) prev = pk.task(i & 1 ? 2 : 1, N, 1024, (i * 7) % 100, 1, &prev);
            pk.wait(prev);
            v.push_back((now_us() - t0) / CH);
        }
        std::sort(v.begin(), v.end());
        printf("chain x<->y, cross-block deps, tile 1024 (us/op) %7.3f\n", v[2]);
    }
    // independent: 64 tensors, round-robin base, single host thread submitting
    {
        const int M = 400000;
        std::vector<double> v;
        for (int r = 0; r < 3; r++) {
            t0 = now_us();
            uint64_t last = 0;
            for (int i = 0; i < M; i++) last = pk.task(10 + (i % NT), N, N, (uint32_t)i);
            pk.wait(last);
            v.push_back(M / ((now_us() - t0) * 1e-6));
        }
        std::sort(v.begin(), v.end());
        printf("independent 4096-float adds (Mops/s)            %10.2f\n", v[1] / 1e6);
    }
    pk.wait(pk.task(0, 0, 1, 0, 0, nullptr, GPUOS__SLOT_EXIT) - 0);
    CK(cudaStreamSynchronize(st));
    printf("roundtrip (us, median/p10/p90)                  %10.2f %6.2f %6.2f\n", prt[prt.size() / 2],
           prt[prt.size() / 10], prt[prt.size() * 9 / 10]);
    printf("baseline launch+sync roundtrip (us)             %10.2f\n", launch_sync);
    printf("baseline chain plain launches (us/op)           %10.3f\n", launches);
    printf("baseline chain CUDA graph replay (us/op)        %10.3f\n", gt[2]);
    // check x: 100 warm + CH launches + CH*5 graph... only check the persistent part roughly
    std::vector<float> hx(N);
    CK(cudaMemcpy(hx.data(), x, N * 4, cudaMemcpyDeviceToHost));
    printf("x[0] = %.0f x[N-1] = %.0f (must be equal)\n", hx[0], hx[N - 1]);
    printf("exit_pos %llu exit_seq %llu retired %llu\n", (unsigned long long)pk.ctl->exit_pos,
           (unsigned long long)pk.ctl->exit_seq, (unsigned long long)pk.ctl->retired);
    return 0;
}
