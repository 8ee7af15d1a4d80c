// bench/baselines.cu - the CUDA baselines of `make bench`: the same work as bench/gpuos_bench.c,
// done with plain <<<>>> launches, a CUDA graph replay, a device-to-device copy, and
// launch + cudaStreamSynchronize. Build: nvcc -O3 -arch=sm_90 bench/baselines.cu -o build/bench/baselines
//
// Prints, for bench/collect.py:
//     ROW  <row>/<key> <unit> <value>     key: launches, cuda_graph, launch_sync, copy
//                                         (warm_start/launches: a fresh process's start, below)
//     INFO <key> <value...>
//     FAIL <row>/<key> <reason>
// Every time is host CLOCK_MONOTONIC from the first launch until the stream is synchronized
// (the same span gpuos_bench measures: submission until the host sees the result), after
// warm-ups, the median of repetitions. Row sizes and repetition counts follow gpuos_bench.
//
// Usage: baselines [--rows a,b] [--quick] [--device N] [--chain-n N] [--indep-ops N]
//                  [--pool N] [--graph-nodes N] [--large-n N] [--large-k N] [--reps-scale F]
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <vector>

#define CK(x)                                                                                       \
    do {                                                                                            \
        cudaError_t e_ = (x);                                                                       \
        if (e_ != cudaSuccess) {                                                                    \
            printf("FAIL %s %s:%d %s: %s\n", cur_row, __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            fflush(stdout);                                                                         \
            return -1;                                                                              \
        }                                                                                           \
    } while (0)
#define CK_LAUNCH() CK(cudaGetLastError())

static const char *cur_row = "?";

static struct {
    int quick = 0;
    int device = 0;
    const char *rows = nullptr;
    int chain_n = 1000;
    long indep_ops = -1;
    int pool = 1024;
    int graph_nodes = 1000;
    int64_t large_n = 64ll << 20;
    int large_k = -1;
    double reps_scale = 1.0;
} O;

static const int SMALL_N = 4096;
static const int TPB = 256;

static double now_s() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static int reps(int full, int quick) {
    int r = (int)((O.quick ? quick : full) * O.reps_scale + 0.5);
    return r < 1 ? 1 : r;
}
static double median_info(const char *name, std::vector<double> v, double scale) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    double med = (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    printf("INFO %s.spread n=%zu min=%.4g p10=%.4g median=%.4g p90=%.4g max=%.4g\n", name, n, v[0] * scale,
           v[n / 10] * scale, med * scale, v[(n * 9) / 10] * scale, v[n - 1] * scale);
    return med;
}
static void row_out(const char *row, const char *key, const char *unit, double value) {
    printf("ROW %s/%s %s %.6g\n", row, key, unit, value);
    fflush(stdout);
}
static int failmsg(const char *msg) {
    printf("FAIL %s %s\n", cur_row, msg);
    fflush(stdout);
    return -1;
}

// ------------------------------------------------------------------ kernels
// out = a + *one (the 0-d tensor gpuos reads), 4096 floats: in place when out == a.
__global__ void add_scalar(float *out, const float *a, const float *one, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + *one;
}
// out = a + b over n floats (n % 4 == 0, 16-byte aligned), float4, grid-stride.
__global__ void add_large(float4 *out, const float4 *a, const float4 *b, int64_t n4) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
        float4 x = a[i], y = b[i];
        out[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
}
__global__ void fill_pattern(float *x, int64_t n, float base) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        x[i] = base + (float)(i % 97) * 0.25f;
}

static cudaStream_t S;
static float *d_one;
static const int SMALL_GRID = (SMALL_N + TPB - 1) / TPB;

static int fill(float *x, int64_t n, float base) {
    fill_pattern<<<1024, 256, 0, S>>>(x, n, base);
    CK_LAUNCH();
    return 0;
}
// Checks x[i] == base + (i % 97) * 0.25 + add on every element.
static int check(const float *dx, int64_t n, float base, double add) {
    std::vector<float> h(n);
    CK(cudaStreamSynchronize(S));
    CK(cudaMemcpy(h.data(), dx, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int64_t i = 0; i < n; i++) {
        float want = (float)((double)base + (double)(i % 97) * 0.25 + add);
        if (h[i] != want) {
            char msg[160];
            snprintf(msg, sizeof msg, "wrong result at [%lld]: %g, want %g", (long long)i, h[i], want);
            return failmsg(msg);
        }
    }
    return 0;
}

// ------------------------------------------------------------------ roundtrip
static int row_roundtrip() {
    float *x;
    CK(cudaMalloc(&x, SMALL_N * sizeof(float)));
    if (fill(x, SMALL_N, 1.0f)) return -1;
    int warm = reps(300, 50), R = reps(3000, 300);
    std::vector<double> t;
    // launch_sync: one launch, then cudaStreamSynchronize
    cur_row = "roundtrip/launch_sync";
    for (int i = 0; i < warm + R; i++) {
        double t0 = now_s();
        add_scalar<<<SMALL_GRID, TPB, 0, S>>>(x, x, d_one, SMALL_N);
        CK(cudaStreamSynchronize(S));
        double t1 = now_s();
        if (i >= warm) t.push_back(t1 - t0);
    }
    CK_LAUNCH();
    if (check(x, SMALL_N, 1.0f, warm + R)) return -1;
    row_out("roundtrip", "launch_sync", "us", 1e6 * median_info("roundtrip.launch_sync", t, 1e6));
    // cuda_graph: a one-node graph, replayed, then cudaStreamSynchronize
    cur_row = "roundtrip/cuda_graph";
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(S, cudaStreamCaptureModeGlobal));
    add_scalar<<<SMALL_GRID, TPB, 0, S>>>(x, x, d_one, SMALL_N);
    CK(cudaStreamEndCapture(S, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphUpload(ge, S));
    t.clear();
    for (int i = 0; i < warm + R; i++) {
        double t0 = now_s();
        CK(cudaGraphLaunch(ge, S));
        CK(cudaStreamSynchronize(S));
        double t1 = now_s();
        if (i >= warm) t.push_back(t1 - t0);
    }
    if (check(x, SMALL_N, 1.0f, 2.0 * (warm + R))) return -1;
    row_out("roundtrip", "cuda_graph", "us", 1e6 * median_info("roundtrip.cuda_graph", t, 1e6));
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    CK(cudaFree(x));
    return 0;
}

// roundtrip_download: launch, then a 4-byte copy of element 0 to pinned host memory, then sync.
static int row_roundtrip_download() {
    float *x, *h;
    CK(cudaMalloc(&x, SMALL_N * sizeof(float)));
    CK(cudaMallocHost(&h, sizeof(float)));
    if (fill(x, SMALL_N, 1.0f)) return -1;
    int warm = reps(300, 50), R = reps(3000, 300);
    std::vector<double> t;
    cur_row = "roundtrip_download/launch_sync";
    float expect = 1.0f;
    for (int i = 0; i < warm + R; i++) {
        double t0 = now_s();
        add_scalar<<<SMALL_GRID, TPB, 0, S>>>(x, x, d_one, SMALL_N);
        CK(cudaMemcpyAsync(h, x, sizeof(float), cudaMemcpyDeviceToHost, S));
        CK(cudaStreamSynchronize(S));
        double t1 = now_s();
        expect += 1.0f;
        if (*h != expect) return failmsg("the download did not see the add");
        if (i >= warm) t.push_back(t1 - t0);
    }
    CK_LAUNCH();
    row_out("roundtrip_download", "launch_sync", "us", 1e6 * median_info("roundtrip_download.launch_sync", t, 1e6));
    CK(cudaFreeHost(h));
    CK(cudaFree(x));
    return 0;
}

// ------------------------------------------------------------------ chain
static int row_chain() {
    float *x;
    int len = O.chain_n;
    CK(cudaMalloc(&x, SMALL_N * sizeof(float)));
    if (fill(x, SMALL_N, 1.0f)) return -1;
    int warm = reps(5, 2), R = reps(50, 10);
    std::vector<double> t;
    cur_row = "chain/launches";
    for (int r = 0; r < warm + R; r++) {
        double t0 = now_s();
        for (int i = 0; i < len; i++) add_scalar<<<SMALL_GRID, TPB, 0, S>>>(x, x, d_one, SMALL_N);
        CK(cudaStreamSynchronize(S));
        double t1 = now_s();
        if (r >= warm) t.push_back((t1 - t0) / len);
    }
    CK_LAUNCH();
    if (check(x, SMALL_N, 1.0f, (double)(warm + R) * len)) return -1;
    row_out("chain", "launches", "us/op", 1e6 * median_info("chain.launches", t, 1e6));

    cur_row = "chain/cuda_graph";
    if (fill(x, SMALL_N, 1.0f)) return -1;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(S, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < len; i++) add_scalar<<<SMALL_GRID, TPB, 0, S>>>(x, x, d_one, SMALL_N);
    CK(cudaStreamEndCapture(S, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphUpload(ge, S));
    t.clear();
    for (int r = 0; r < warm + R; r++) {
        double t0 = now_s();
        CK(cudaGraphLaunch(ge, S));
        CK(cudaStreamSynchronize(S));
        double t1 = now_s();
        if (r >= warm) t.push_back((t1 - t0) / len);
    }
    if (check(x, SMALL_N, 1.0f, (double)(warm + R) * len)) return -1;
    row_out("chain", "cuda_graph", "us/op", 1e6 * median_info("chain.cuda_graph", t, 1e6));
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    CK(cudaFree(x));
    return 0;
}

// ------------------------------------------------------------------ independent
// out_k = in_k + one over a pool of 4096-float tensors. launches: one host thread, one stream.
// cuda_graph: a graph of graph_nodes kernel nodes with no edges between them, replayed.
static int row_independent() {
    int P = O.pool;
    float *in, *out;
    CK(cudaMalloc(&in, (size_t)P * SMALL_N * sizeof(float)));
    CK(cudaMalloc(&out, (size_t)P * SMALL_N * sizeof(float)));
    for (int k = 0; k < P; k++)
        if (fill(in + (size_t)k * SMALL_N, SMALL_N, (float)(k % 1000))) return -1;
    int warm = reps(1, 1), R = reps(7, 3);
    long N = O.indep_ops;
    std::vector<double> t;
    cur_row = "independent/launches";
    printf("INFO independent.launches.threads 1\nINFO independent.launches.pool %d\n", P);
    for (int r = 0; r < warm + R; r++) {
        double t0 = now_s();
        for (long i = 0; i < N; i++) {
            size_t k = (size_t)(i % P) * SMALL_N;
            add_scalar<<<SMALL_GRID, TPB, 0, S>>>(out + k, in + k, d_one, SMALL_N);
        }
        CK(cudaStreamSynchronize(S));
        double t1 = now_s();
        if (r >= warm) t.push_back(N / (t1 - t0));
    }
    CK_LAUNCH();
    for (int k = 0; k < P; k += (P > 8 ? P / 8 : 1))
        if (check(out + (size_t)k * SMALL_N, SMALL_N, (float)(k % 1000), 1.0)) return -1;
    const double launch_rate = median_info("independent.launches", t, 1.0);
    row_out("independent", "launches", "ops/s", launch_rate);
    row_out("independent_many", "launches", "ops/s", launch_rate); /* gpuos's batches of calls: the same work */

    cur_row = "independent/cuda_graph";
    CK(cudaMemset(out, 0, (size_t)P * SMALL_N * sizeof(float)));
    int G = std::min(O.graph_nodes, P); // distinct outputs: the nodes are truly independent
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaGraphCreate(&g, 0));
    for (int i = 0; i < G; i++) {
        size_t k = (size_t)(i % P) * SMALL_N;
        float *o = out + k, *a = in + k;
        int n = SMALL_N;
        void *args[] = {&o, &a, &d_one, &n};
        cudaKernelNodeParams kp = {};
        kp.func = (void *)add_scalar;
        kp.gridDim = dim3(SMALL_GRID);
        kp.blockDim = dim3(TPB);
        kp.kernelParams = args;
        cudaGraphNode_t node;
        CK(cudaGraphAddKernelNode(&node, g, nullptr, 0, &kp));
    }
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphUpload(ge, S));
    long replays = N / G > 0 ? N / G : 1;
    printf("INFO independent.cuda_graph.nodes %d\nINFO independent.cuda_graph.replays %ld\n", G, replays);
    t.clear();
    for (int r = 0; r < warm + R; r++) {
        double t0 = now_s();
        for (long i = 0; i < replays; i++) CK(cudaGraphLaunch(ge, S));
        CK(cudaStreamSynchronize(S));
        double t1 = now_s();
        if (r >= warm) t.push_back((double)replays * G / (t1 - t0));
    }
    for (int k = 0; k < std::min(P, G); k += (P > 8 ? P / 8 : 1))
        if (check(out + (size_t)k * SMALL_N, SMALL_N, (float)(k % 1000), 1.0)) return -1;
    const double graph_rate = median_info("independent.cuda_graph", t, 1.0);
    row_out("independent", "cuda_graph", "ops/s", graph_rate);
    /* gpuos's batched form (a recorded graph of the same 1000 adds) is compared with this replay */
    row_out("independent_graph", "cuda_graph", "ops/s", graph_rate);
    row_out("independent_many", "cuda_graph", "ops/s", graph_rate);
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    CK(cudaFree(in));
    CK(cudaFree(out));
    return 0;
}

// ------------------------------------------------------------------ large_elementwise
// launches: a float4 add kernel (GB/s = 3 * n * 4 bytes / time); copy: cudaMemcpyAsync
// device-to-device of n floats (GB/s = 2 * n * 4 bytes / time, read + write). K ops per timing.
static int row_large() {
    int64_t n = O.large_n;
    if (n % 4) return failmsg("--large-n must be a multiple of 4");
    float *a, *b, *out;
    CK(cudaMalloc(&a, n * sizeof(float)));
    CK(cudaMalloc(&b, n * sizeof(float)));
    CK(cudaMalloc(&out, n * sizeof(float)));
    if (fill(a, n, 1.0f) || fill(b, n, 0.0f)) return -1;
    int K = O.large_k, warm = reps(2, 1), R = reps(15, 3);
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, O.device));
    int64_t n4 = n / 4;
    int grid = (int)std::min<int64_t>((n4 + TPB - 1) / TPB, (int64_t)sms * 32);
    std::vector<double> t;
    cur_row = "large_elementwise/launches";
    for (int r = 0; r < warm + R; r++) {
        double t0 = now_s();
        for (int k = 0; k < K; k++) add_large<<<grid, TPB, 0, S>>>((float4 *)out, (const float4 *)a, (const float4 *)b, n4);
        CK(cudaStreamSynchronize(S));
        double t1 = now_s();
        if (r >= warm) t.push_back((t1 - t0) / K);
    }
    CK_LAUNCH();
    {
        std::vector<float> h(n);
        CK(cudaMemcpy(h.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
        for (int64_t i = 0; i < n; i++)
            if (h[i] != 1.0f + 2.0f * ((float)(i % 97) * 0.25f)) return failmsg("wrong large add result");
    }
    double bytes = 3.0 * n * sizeof(float);
    row_out("large_elementwise", "launches", "GB/s", bytes / median_info("large_elementwise.launches.s", t, 1.0) / 1e9);

    cur_row = "large_elementwise/cuda_graph";
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(S, cudaStreamCaptureModeGlobal));
    for (int k = 0; k < K; k++) add_large<<<grid, TPB, 0, S>>>((float4 *)out, (const float4 *)a, (const float4 *)b, n4);
    CK(cudaStreamEndCapture(S, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphUpload(ge, S));
    t.clear();
    for (int r = 0; r < warm + R; r++) {
        double t0 = now_s();
        CK(cudaGraphLaunch(ge, S));
        CK(cudaStreamSynchronize(S));
        double t1 = now_s();
        if (r >= warm) t.push_back((t1 - t0) / K);
    }
    row_out("large_elementwise", "cuda_graph", "GB/s", bytes / median_info("large_elementwise.cuda_graph.s", t, 1.0) / 1e9);
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));

    cur_row = "large_elementwise/copy";
    t.clear();
    for (int r = 0; r < warm + R; r++) {
        double t0 = now_s();
        for (int k = 0; k < K; k++) CK(cudaMemcpyAsync(out, a, n * sizeof(float), cudaMemcpyDeviceToDevice, S));
        CK(cudaStreamSynchronize(S));
        double t1 = now_s();
        if (r >= warm) t.push_back((t1 - t0) / K);
    }
    if (check(out, n, 1.0f, 0.0)) return -1;
    row_out("large_elementwise", "copy", "GB/s", 2.0 * n * sizeof(float) / median_info("large_elementwise.copy.s", t, 1.0) / 1e9);
    printf("INFO large_elementwise.baseline_grid %d x %d\n", grid, TPB);
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFree(out));
    return 0;
}

// ------------------------------------------------------------------ branchy_dag
// 8 independent chains of 50 in-place x_c = x_c + one (4096 floats), then out = x_0 + x_1,
// out = out + x_2, ... (7 joins): us per launch of the whole DAG, as a CUDA graph captured on
// one stream (cuda_graph_seq) and on 8 forked streams joined by events (cuda_graph_8streams).
__global__ void add2(float *out, const float *a, const float *b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}
enum { DAG_CHAINS = 8, DAG_LEN = 50 };
static void dag_issue(cudaStream_t *st, int n_st, float **x, float *out, cudaEvent_t fork, cudaEvent_t *done) {
    if (n_st > 1) cudaEventRecord(fork, S);
    for (int c = 0; c < DAG_CHAINS; c++) {
        cudaStream_t s = n_st > 1 ? st[c] : S;
        if (n_st > 1) cudaStreamWaitEvent(s, fork, 0);
        for (int i = 0; i < DAG_LEN; i++) add_scalar<<<SMALL_GRID, TPB, 0, s>>>(x[c], x[c], d_one, SMALL_N);
        if (n_st > 1) {
            cudaEventRecord(done[c], s);
            cudaStreamWaitEvent(S, done[c], 0);
        }
    }
    add2<<<SMALL_GRID, TPB, 0, S>>>(out, x[0], x[1], SMALL_N);
    for (int c = 2; c < DAG_CHAINS; c++) add2<<<SMALL_GRID, TPB, 0, S>>>(out, out, x[c], SMALL_N);
}
static int row_branchy_dag() {
    float *x[DAG_CHAINS], *out;
    cudaStream_t st[DAG_CHAINS];
    cudaEvent_t fork, done[DAG_CHAINS];
    int warm = reps(20, 5), R = reps(200, 30);
    for (int c = 0; c < DAG_CHAINS; c++) {
        CK(cudaMalloc(&x[c], SMALL_N * sizeof(float)));
        CK(cudaStreamCreateWithFlags(&st[c], cudaStreamNonBlocking));
        CK(cudaEventCreateWithFlags(&done[c], cudaEventDisableTiming));
    }
    CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CK(cudaMalloc(&out, SMALL_N * sizeof(float)));
    for (int variant = 0; variant < 2; variant++) {
        const char *key = variant ? "cuda_graph_8streams" : "cuda_graph_seq";
        char rowkey[64];
        snprintf(rowkey, sizeof rowkey, "branchy_dag/%s", key);
        cur_row = rowkey;
        for (int c = 0; c < DAG_CHAINS; c++)
            if (fill(x[c], SMALL_N, (float)c)) return -1;
        CK(cudaStreamSynchronize(S));
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(S, cudaStreamCaptureModeGlobal));
        dag_issue(st, variant ? DAG_CHAINS : 1, x, out, fork, done);
        CK(cudaStreamEndCapture(S, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        CK(cudaGraphUpload(ge, S));
        std::vector<double> t;
        for (int r = 0; r < warm + R; r++) {
            double t0 = now_s();
            CK(cudaGraphLaunch(ge, S));
            CK(cudaStreamSynchronize(S));
            double t1 = now_s();
            if (r >= warm) t.push_back(t1 - t0);
        }
        // x_c = c + (i % 97) / 4 + 50 * launches; out = sum over c
        std::vector<float> h(SMALL_N);
        CK(cudaMemcpy(h.data(), out, SMALL_N * sizeof(float), cudaMemcpyDeviceToHost));
        for (int i = 0; i < SMALL_N; i++) {
            double want = 0;
            for (int c = 0; c < DAG_CHAINS; c++) want += (double)c + (double)(i % 97) * 0.25 + (double)DAG_LEN * (warm + R);
            if (fabs(h[i] - want) > 1e-3 * fabs(want)) return failmsg("branchy_dag: wrong result");
        }
        char name[64];
        snprintf(name, sizeof name, "branchy_dag.%s", key);
        row_out("branchy_dag", key, "us", 1e6 * median_info(name, t, 1e6));
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(g));
    }
    for (int c = 0; c < DAG_CHAINS; c++) {
        cudaFree(x[c]);
        cudaStreamDestroy(st[c]);
        cudaEventDestroy(done[c]);
    }
    cudaEventDestroy(fork);
    cudaFree(out);
    return 0;
}

// ------------------------------------------------------------------ tiny_mlp
// 8 layers of [h = x @ W, h += b, h = gelu(h), h += x, x = layernorm(h)] on x [8, 256], W
// [256, 256]: the same five kernels per layer as gpuos runs, captured into one CUDA graph
// (cuda_graph), us per forward. Checked: every output row has mean 0 and variance 1.
enum { MLP_B = 8, MLP_H = 256, MLP_L = 8 };
__global__ void mlp_matmul(float *out, const float *x, const float *w) {
    int b = blockIdx.x, j = threadIdx.x;
    float a = 0.f;
    for (int k = 0; k < MLP_H; k++) a += x[b * MLP_H + k] * w[k * MLP_H + j];
    out[b * MLP_H + j] = a;
}
__global__ void mlp_bias(float *h, const float *bias) { h[blockIdx.x * MLP_H + threadIdx.x] += bias[threadIdx.x]; }
__global__ void mlp_gelu(float *h) {
    int i = blockIdx.x * MLP_H + threadIdx.x;
    float a = h[i];
    h[i] = 0.5f * a * (1.f + erff(a * 0.70710678118654752f));
}
__global__ void mlp_residual(float *h, const float *x) {
    int i = blockIdx.x * MLP_H + threadIdx.x;
    h[i] += x[i];
}
__global__ void mlp_layernorm(float *out, const float *h) {
    __shared__ float s[MLP_H];
    int b = blockIdx.x, j = threadIdx.x;
    float v = h[b * MLP_H + j];
    s[j] = v;
    __syncthreads();
    for (int o = MLP_H / 2; o > 0; o >>= 1) {
        if (j < o) s[j] += s[j + o];
        __syncthreads();
    }
    float mean = s[0] / MLP_H;
    __syncthreads();
    s[j] = (v - mean) * (v - mean);
    __syncthreads();
    for (int o = MLP_H / 2; o > 0; o >>= 1) {
        if (j < o) s[j] += s[j + o];
        __syncthreads();
    }
    out[b * MLP_H + j] = (v - mean) * rsqrtf(s[0] / MLP_H + 1e-5f);
}
static int row_tiny_mlp() {
    float *x[MLP_L + 1], *h, *w, *bias;
    std::vector<float> hw((size_t)MLP_L * MLP_H * MLP_H), hb(MLP_L * MLP_H), hx(MLP_B * MLP_H);
    uint64_t r = 0x853c49e6748fea9bull;
    auto rnd = [&](float lo, float hi) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        return lo + (hi - lo) * (float)((r >> 40) / 16777216.0);
    };
    for (auto &v : hw) v = rnd(-0.0625f, 0.0625f);
    for (auto &v : hb) v = rnd(-0.1f, 0.1f);
    for (auto &v : hx) v = rnd(-1.f, 1.f);
    for (int l = 0; l <= MLP_L; l++) CK(cudaMalloc(&x[l], MLP_B * MLP_H * sizeof(float)));
    CK(cudaMalloc(&h, MLP_B * MLP_H * sizeof(float)));
    CK(cudaMalloc(&w, hw.size() * sizeof(float)));
    CK(cudaMalloc(&bias, hb.size() * sizeof(float)));
    CK(cudaMemcpy(w, hw.data(), hw.size() * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(bias, hb.data(), hb.size() * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(x[0], hx.data(), hx.size() * sizeof(float), cudaMemcpyHostToDevice));
    cur_row = "tiny_mlp/cuda_graph";
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(S, cudaStreamCaptureModeGlobal));
    for (int l = 0; l < MLP_L; l++) {
        mlp_matmul<<<MLP_B, MLP_H, 0, S>>>(h, x[l], w + (size_t)l * MLP_H * MLP_H);
        mlp_bias<<<MLP_B, MLP_H, 0, S>>>(h, bias + l * MLP_H);
        mlp_gelu<<<MLP_B, MLP_H, 0, S>>>(h);
        mlp_residual<<<MLP_B, MLP_H, 0, S>>>(h, x[l]);
        mlp_layernorm<<<MLP_B, MLP_H, 0, S>>>(x[l + 1], h);
    }
    CK(cudaStreamEndCapture(S, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphUpload(ge, S));
    int warm = reps(50, 10), R = reps(500, 50);
    std::vector<double> t;
    for (int i = 0; i < warm + R; i++) {
        double t0 = now_s();
        CK(cudaGraphLaunch(ge, S));
        CK(cudaStreamSynchronize(S));
        if (i >= warm) t.push_back(now_s() - t0);
    }
    std::vector<float> out(MLP_B * MLP_H);
    CK(cudaMemcpy(out.data(), x[MLP_L], out.size() * sizeof(float), cudaMemcpyDeviceToHost));
    for (int b = 0; b < MLP_B; b++) {
        double m = 0, v = 0;
        for (int j = 0; j < MLP_H; j++) m += out[b * MLP_H + j];
        m /= MLP_H;
        for (int j = 0; j < MLP_H; j++) v += (out[b * MLP_H + j] - m) * (out[b * MLP_H + j] - m);
        v /= MLP_H;
        if (fabs(m) > 1e-3 || fabs(v - 1.0) > 1e-2) return failmsg("tiny_mlp: an output row is not layer-normalised");
    }
    row_out("tiny_mlp", "cuda_graph", "us", 1e6 * median_info("tiny_mlp.cuda_graph", t, 1e6));
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    for (int l = 0; l <= MLP_L; l++) cudaFree(x[l]);
    cudaFree(h);
    cudaFree(w);
    cudaFree(bias);
    return 0;
}

// ------------------------------------------------------------------ the table
struct bench_row {
    const char *name;
    int (*fn)();
};
// ------------------------------------------------------------------ pipeline_jobs
// A stream of independent jobs, each: copy-in of 4096 floats from pinned host memory, 20
// dependent in-place adds, copy-out to pinned host memory; a CUDA graph per job slot (8
// slots, each on its own stream, so up to 8 jobs in flight): jobs/s over PIPE_JOBS jobs.
enum { PIPE_SLOTS = 8, PIPE_OPS = 20 };
static int row_pipeline_jobs() {
    cur_row = "pipeline_jobs/cuda_graph_per_job";
    float *hin[PIPE_SLOTS], *hout[PIPE_SLOTS], *dx[PIPE_SLOTS];
    cudaStream_t st[PIPE_SLOTS];
    cudaGraphExec_t ge[PIPE_SLOTS];
    const int jobs = reps(4000, 400), R = reps(5, 2);
    const size_t bytes = SMALL_N * sizeof(float);
    for (int s = 0; s < PIPE_SLOTS; s++) {
        CK(cudaHostAlloc(&hin[s], bytes, cudaHostAllocDefault));
        CK(cudaHostAlloc(&hout[s], bytes, cudaHostAllocDefault));
        CK(cudaMalloc(&dx[s], bytes));
        CK(cudaStreamCreateWithFlags(&st[s], cudaStreamNonBlocking));
        for (int i = 0; i < SMALL_N; i++) hin[s][i] = (float)(s + i % 97);
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(st[s], cudaStreamCaptureModeGlobal));
        cudaMemcpyAsync(dx[s], hin[s], bytes, cudaMemcpyHostToDevice, st[s]);
        for (int k = 0; k < PIPE_OPS; k++) add_scalar<<<SMALL_GRID, TPB, 0, st[s]>>>(dx[s], dx[s], d_one, SMALL_N);
        cudaMemcpyAsync(hout[s], dx[s], bytes, cudaMemcpyDeviceToHost, st[s]);
        CK(cudaStreamEndCapture(st[s], &g));
        CK(cudaGraphInstantiate(&ge[s], g, 0));
        CK(cudaGraphUpload(ge[s], st[s]));
        CK(cudaGraphDestroy(g));
    }
    std::vector<double> t;
    for (int r = 0; r < R + 1; r++) { // the first run warms up
        double t0 = now_s();
        for (int j = 0; j < jobs; j++) CK(cudaGraphLaunch(ge[j % PIPE_SLOTS], st[j % PIPE_SLOTS]));
        for (int s = 0; s < PIPE_SLOTS; s++) CK(cudaStreamSynchronize(st[s]));
        double t1 = now_s();
        if (r > 0) t.push_back((t1 - t0) / jobs);
    }
    for (int s = 0; s < PIPE_SLOTS; s++)
        for (int i = 0; i < SMALL_N; i++)
            if (hout[s][i] != (float)(s + i % 97) + PIPE_OPS) return failmsg("pipeline_jobs: wrong result");
    row_out("pipeline_jobs", "cuda_graph_per_job", "jobs/s", 1.0 / median_info("pipeline_jobs.cuda_graph_per_job", t, 1e6));
    for (int s = 0; s < PIPE_SLOTS; s++) {
        cudaGraphExecDestroy(ge[s]);
        cudaStreamDestroy(st[s]);
        cudaFreeHost(hin[s]);
        cudaFreeHost(hout[s]);
        cudaFree(dx[s]);
    }
    return 0;
}

// ------------------------------------------------------------------ warm_start
// A plain CUDA program's start in a fresh process, as gpuos_bench's warm_start child times its
// own: from before the first CUDA call (driver init, primary context, the kernels' module
// loaded lazily on first launch: native sm code, nothing to JIT) until 4096 floats filled and
// added are back on the host (the same span, fork and exec not counted). The child is this
// program with --child-start.
static int child_start() {
    cur_row = "warm_start/launches child";
    double t0 = now_s();
    float *x, *one, h[SMALL_N];
    const float v = 1.0f;
    if (cudaSetDevice(O.device) != cudaSuccess || cudaMalloc(&x, SMALL_N * sizeof(float)) != cudaSuccess ||
        cudaMalloc(&one, sizeof(float)) != cudaSuccess ||
        cudaMemcpy(one, &v, sizeof v, cudaMemcpyHostToDevice) != cudaSuccess)
        return failmsg("child: CUDA setup failed");
    fill_pattern<<<SMALL_GRID, TPB>>>(x, SMALL_N, 1.5f);
    add_scalar<<<SMALL_GRID, TPB>>>(x, x, one, SMALL_N);
    if (cudaMemcpy(h, x, sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess) return failmsg("child: copy failed");
    const double t1 = now_s();
    for (int i = 0; i < SMALL_N; i++)
        if (h[i] != 1.5f + (float)(i % 97) * 0.25f + 1.0f) return failmsg("child: wrong first result");
    printf("CHILD first %.9g\n", t1 - t0);
    return 0;
}
static const char *g_self;
static int row_warm_start() {
    int warm = 1, R = reps(7, 3);
    std::vector<double> t;
    char dev[32]; /* formatted before the fork: the child only execs */
    snprintf(dev, sizeof dev, "%d", O.device);
    for (int r = 0; r < warm + R; r++) {
        int fd[2];
        if (pipe(fd) != 0) return failmsg("pipe failed");
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) {
            close(fd[0]);
            close(fd[1]);
            return failmsg("fork failed");
        }
        if (pid == 0) {
            dup2(fd[1], 1);
            close(fd[0]);
            close(fd[1]);
            execl("/proc/self/exe", g_self, "--device", dev, "--child-start", (char *)nullptr);
            _exit(127);
        }
        close(fd[1]);
        FILE *f = fdopen(fd[0], "r");
        char line[512];
        double s = -1;
        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "CHILD first %lf", &s) != 1 && strncmp(line, "FAIL ", 5) == 0)
                printf("FAIL warm_start child: %s", line + 5);
        if (f) fclose(f);
        else close(fd[0]);
        int status = 0;
        waitpid(pid, &status, 0);
        if (s < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return failmsg("warm_start: the child failed");
        if (r >= warm) t.push_back(s);
    }
    row_out("warm_start", "launches", "ms", 1e3 * median_info("warm_start.launches", t, 1e3));
    return 0;
}

static const bench_row ROWS[] = {
    {"roundtrip", row_roundtrip}, {"roundtrip_download", row_roundtrip_download}, {"independent", row_independent},
    {"chain", row_chain},         {"large_elementwise", row_large},
    {"branchy_dag", row_branchy_dag}, {"tiny_mlp", row_tiny_mlp}, {"pipeline_jobs", row_pipeline_jobs},
    {"warm_start", row_warm_start},
};

static bool row_selected(const char *name) {
    if (!O.rows || !*O.rows) return true;
    size_t n = strlen(name);
    for (const char *p = O.rows; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return true;
        /* independent measures independent_graph's baseline too */
        if (strcmp(name, "independent") == 0 && len == 17 && strncmp(p, "independent_graph", 17) == 0) return true;
        if (strcmp(name, "independent") == 0 && len == 16 && strncmp(p, "independent_many", 16) == 0) return true;
        p = e ? e + 1 : nullptr;
    }
    return false;
}

static int setup() {
    cur_row = "setup";
    CK(cudaSetDevice(O.device));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, O.device));
    int drv = 0, rt = 0;
    CK(cudaDriverGetVersion(&drv));
    CK(cudaRuntimeGetVersion(&rt));
    printf("INFO device %s\nINFO device.sms %d\nINFO cuda.driver %d\nINFO cuda.runtime %d\n", prop.name,
           prop.multiProcessorCount, drv, rt);
    CK(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking));
    CK(cudaMalloc(&d_one, sizeof(float)));
    float one = 1.0f;
    CK(cudaMemcpy(d_one, &one, sizeof one, cudaMemcpyHostToDevice));
    // load every kernel now (lazy loading would charge the first launch of each to a row)
    add_scalar<<<1, 32, 0, S>>>(d_one + 0, d_one, d_one, 0);
    add_large<<<1, 32, 0, S>>>(nullptr, nullptr, nullptr, 0);
    fill_pattern<<<1, 32, 0, S>>>(nullptr, 0, 0.0f);
    add2<<<1, 32, 0, S>>>(nullptr, nullptr, nullptr, 0);
    CK_LAUNCH();
    CK(cudaStreamSynchronize(S));
    return 0;
}

int main(int argc, char **argv) {
    g_self = argv[0];
    int child = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = (i + 1 < argc) ? argv[i + 1] : nullptr;
#define ARG(flag) (strcmp(a, flag) == 0 && v && (i++, 1))
        if (strcmp(a, "--quick") == 0) O.quick = 1;
        else if (strcmp(a, "--child-start") == 0) child = 1;
        else if (ARG("--device")) O.device = atoi(v);
        else if (ARG("--rows")) O.rows = v;
        else if (ARG("--chain-n")) O.chain_n = atoi(v);
        else if (ARG("--indep-ops")) O.indep_ops = atol(v);
        else if (ARG("--pool")) O.pool = atoi(v);
        else if (ARG("--graph-nodes")) O.graph_nodes = atoi(v);
        else if (ARG("--large-n")) O.large_n = atoll(v);
        else if (ARG("--large-k")) O.large_k = atoi(v);
        else if (ARG("--reps-scale")) O.reps_scale = atof(v);
        else {
            fprintf(stderr,
                    "usage: baselines [--rows a,b] [--quick] [--device N] [--chain-n N] [--indep-ops N] [--pool N]\n"
                    "                 [--graph-nodes N] [--large-n N] [--large-k N] [--reps-scale F]\n");
            return 2;
        }
#undef ARG
    }
    if (O.indep_ops == -1) O.indep_ops = O.quick ? 40000 : 400000;
    if (O.large_k == -1) O.large_k = O.quick ? 2 : 8;
    if (child) return child_start() ? 1 : 0;
    if (setup()) return 1;
    int failed = 0;
    for (const bench_row &r : ROWS) {
        if (!row_selected(r.name)) continue;
        cur_row = r.name;
        fprintf(stderr, "baselines: %s ...\n", r.name);
        if (r.fn()) {
            failed++;
            cudaGetLastError();
            cudaStreamSynchronize(S);
        }
    }
    return failed ? 1 : 0;
}
