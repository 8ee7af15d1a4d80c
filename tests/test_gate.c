/* test_gate.c - the CUDA backend's device gate (cuda_gate_enter, cuda_gate_leave,
   cuda_release in src/cuda_backend.c), on the host: no GPU is needed, the functions are the
   library's own (gpuos.c is included) and the driver's calls are fakes that record them.

   cuMemFree, cuMemFreeHost and cuModuleUnload wait for every kernel of the CUDA context, so
   while any gpuos context's persistent kernel runs in it they must not be made (a deadlock on
   the GPU: another thread holding that kernel's context lock waits for the driver's lock).
   Checked: every such call is made while no kernel of its CUDA context is counted running;
   a release made while none runs happens at once; one made while some run happens when the
   last of them leaves, exactly once; other CUDA contexts are not affected; with threads. */
#include "../gpuos.c"

#include "ctest.h"

#define N_CUCTX 3
#define MAX_H 200000

static gpuos__CUcontext cur; /* the fakes' current context (one thread at a time: cuda_gate_mu) */
static unsigned char done_count[MAX_H]; /* handle -> times released */
static int kind_of[MAX_H];
static int violations;

static int running_of(gpuos__CUcontext x) {
    int g;
    for (g = 0; g < CUDA__GATES; g++)
        if (cuda_gates[g].cuctx == x) return cuda_gates[g].running;
    return 0;
}
/* every fake runs with cuda_gate_mu held (the gate's contract), so reading the gate is safe */
static void released(uint64_t h, int kind) {
    if (running_of(cur) != 0) violations++;
    if (h < MAX_H) {
        done_count[h]++;
        if (kind_of[h] != kind) violations++;
    }
}
static gpuos__CUresult f_set(gpuos__CUcontext x) { cur = x; return CU_SUCCESS; }
static gpuos__CUresult f_free(gpuos__CUdeviceptr d) { released((uint64_t)d, CUDA__REL_MEM); return CU_SUCCESS; }
static gpuos__CUresult f_free_host(void *p) { released((uint64_t)(uintptr_t)p, CUDA__REL_HOST); return CU_SUCCESS; }
static gpuos__CUresult f_unload(gpuos__CUmodule m) { released((uint64_t)(uintptr_t)m, CUDA__REL_MOD); return CU_SUCCESS; }

static gpuos__cuda_api api;
static struct gpuos__cuda ctxs[8]; /* gpuos contexts: ctxs[i] in CUDA context i % N_CUCTX */

static gpuos__CUcontext cuctx_n(int i) { return (gpuos__CUcontext)(uintptr_t)(0x1000 * (i + 1)); }

static void setup(void) {
    int i;
    memset(&api, 0, sizeof api);
    api.cuCtxSetCurrent = f_set;
    api.cuMemFree = f_free;
    api.cuMemFreeHost = f_free_host;
    api.cuModuleUnload = f_unload;
    for (i = 0; i < 8; i++) {
        memset(&ctxs[i], 0, sizeof ctxs[i]);
        ctxs[i].cu = &api;
        ctxs[i].cuctx = cuctx_n(i % N_CUCTX);
    }
}

static uint64_t next_h = 1;
static uint64_t new_handle(int kind) {
    uint64_t h;
    pthread_mutex_lock(&cuda_gate_mu);
    h = next_h++;
    kind_of[h] = kind;
    pthread_mutex_unlock(&cuda_gate_mu);
    return h;
}

/* The fixed cases. */
static void cases(void) {
    struct gpuos__cuda *a = &ctxs[0], *b = &ctxs[3], *other = &ctxs[1]; /* a, b: one CUDA context */
    uint64_t h1, h2, h3, h4;
    /* no kernel ever launched: at once */
    h1 = new_handle(CUDA__REL_MEM);
    cuda_release(a, CUDA__REL_MEM, h1);
    CHECK(done_count[h1] == 1, "a release with no kernel running happens at once");
    /* a's kernel runs: b's release waits for it, another CUDA context's does not */
    cuda_gate_enter(a);
    h2 = new_handle(CUDA__REL_HOST);
    cuda_release(b, CUDA__REL_HOST, h2);
    CHECK(done_count[h2] == 0, "kept while another context's kernel runs in the CUDA context");
    h3 = new_handle(CUDA__REL_MOD);
    cuda_release(other, CUDA__REL_MOD, h3);
    CHECK(done_count[h3] == 1, "another CUDA context's release is not held back");
    /* b's kernel starts too; a's stops: still kept; b's stops: done */
    cuda_gate_enter(b);
    h4 = new_handle(CUDA__REL_MEM);
    cuda_release(a, CUDA__REL_MEM, h4);
    cuda_gate_leave(a);
    CHECK(done_count[h2] == 0 && done_count[h4] == 0, "kept while one kernel still runs");
    cuda_gate_leave(b);
    CHECK(done_count[h2] == 1 && done_count[h4] == 1, "done when the last kernel leaves");
    CHECK(cuda_n_kept == 0, "nothing kept after (%d)", cuda_n_kept);
    /* a leave with nothing running (a launch that failed after its enter) does not go below 0 */
    cuda_gate_leave(a);
    CHECK(running_of(a->cuctx) == 0, "the count stays at 0");
    h1 = new_handle(CUDA__REL_MEM);
    cuda_release(a, CUDA__REL_MEM, h1);
    CHECK(done_count[h1] == 1, "at once again");
    /* NULL handles are no calls */
    cuda_release(a, CUDA__REL_MEM, 0);
    CHECK(violations == 0, "%d calls made while a kernel ran (or of the wrong kind)", violations);
}

/* Random sequences against a model, one thread. */
static void model(unsigned long long seed) {
    unsigned long long r = ctest_rng(seed, 7);
    int running[8] = {0}, step, i;
    uint64_t pend[4096];
    int pend_ctx[4096], n_pend = 0;
    for (step = 0; step < 20000; step++) {
        int op, k;
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        op = (int)(r % 3), k = (int)((r >> 8) % 8);
        if (op == 0 && !running[k]) {
            cuda_gate_enter(&ctxs[k]);
            running[k] = 1;
        } else if (op == 1 && running[k]) {
            cuda_gate_leave(&ctxs[k]);
            running[k] = 0;
        } else if (n_pend < 4096) {
            const int kind = (int)((r >> 16) % 3);
            const uint64_t h = new_handle(kind);
            int any = 0, j;
            for (j = 0; j < 8; j++) any |= running[j] && j % N_CUCTX == k % N_CUCTX;
            cuda_release(&ctxs[k], kind, h);
            if (!any && done_count[h] != 1) violations++;
            if (any) pend[n_pend] = h, pend_ctx[n_pend++] = k;
        }
        /* every kept release of a CUDA context with no kernel running is done */
        for (i = 0; i < n_pend; i++) {
            int any = 0, j;
            for (j = 0; j < 8; j++) any |= running[j] && j % N_CUCTX == pend_ctx[i] % N_CUCTX;
            if (!any) {
                if (done_count[pend[i]] != 1) violations++;
                n_pend--;
                pend[i] = pend[n_pend];
                pend_ctx[i] = pend_ctx[n_pend];
                i--;
            } else if (done_count[pend[i]] != 0) {
                violations++;
            }
        }
    }
    for (i = 0; i < 8; i++)
        if (running[i]) cuda_gate_leave(&ctxs[i]);
    for (i = 0; i < n_pend; i++)
        if (done_count[pend[i]] != 1) violations++;
    CHECK(violations == 0, "model: %d violations in 20000 steps", violations);
    CHECK(cuda_n_kept == 0, "model: %d kept at the end", cuda_n_kept);
}

/* Threads, each a gpuos context launching, stopping and freeing at random. */
static unsigned long long g_seed;
static void *worker(void *arg) {
    const int k = (int)(uintptr_t)arg;
    unsigned long long r = ctest_rng(g_seed, 100 + k);
    int running = 0, step;
    for (step = 0; step < 20000; step++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        if (r % 4 == 0) {
            if (running) cuda_gate_leave(&ctxs[k]);
            else cuda_gate_enter(&ctxs[k]);
            running = !running;
        } else {
            const int kind = (int)((r >> 8) % 3);
            cuda_release(&ctxs[k], kind, new_handle(kind));
        }
    }
    if (running) cuda_gate_leave(&ctxs[k]);
    return NULL;
}
static void threads(unsigned long long seed) {
    pthread_t t[8];
    int i, bad = 0;
    g_seed = seed;
    for (i = 0; i < 8; i++) pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
    for (i = 0; i < 8; i++) pthread_join(t[i], NULL);
    for (i = 1; i < (int)next_h; i++) bad += done_count[i] != 1;
    CHECK(violations == 0, "threads: %d calls made while a kernel ran", violations);
    CHECK(bad == 0, "threads: %d of %d releases not done exactly once", bad, (int)next_h - 1);
    CHECK(cuda_n_kept == 0, "threads: %d kept at the end", cuda_n_kept);
}

int main(void) {
    const unsigned long long seed = ctest_seed("test_gate");
    (void)ctest_device;
    setup();
    cases();
    model(seed);
    threads(seed);
    return ctest_summary("test_gate");
}
