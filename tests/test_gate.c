/* test_gate.c - the CUDA backend's device gate (cuda_gate_enter, cuda_gate_leave,
   cuda_release in src/cuda_backend.c), on the host: no GPU is needed, the functions are the
   library's own (gpuos.c is included) and the driver's calls are fakes that record them.

   cuMemFree, cuMemFreeHost and cuModuleUnload wait for every kernel of the CUDA context, so
   while any gpuos context's persistent kernel runs in it they must not be made (a deadlock on
   the GPU: another thread holding that kernel's context lock waits for the driver's lock).
   Checked: every such call is made while no kernel of its CUDA context is counted running,
   with the gate's lock let go and counted in its loads (so no launch starts meanwhile);
   a release made while none runs happens at once; one made while some run happens when the
   last of them leaves, exactly once; other CUDA contexts are not affected; with threads. */
#include "../gpuos.c"

#include <signal.h> /* the watchdog */
#include <unistd.h>

#include "ctest.h"

#define N_CUCTX 3
#define MAX_H 200000

static __thread gpuos__CUcontext cur; /* the fakes' current context (the driver's is per thread too) */
static unsigned char done_count[MAX_H]; /* handle -> times released */
static int kind_of[MAX_H];
static int violations;

static int running_of(gpuos__CUcontext x) {
    int g;
    for (g = 0; g < CUDA__GATES; g++)
        if (cuda_gates[g].cuctx == x) return cuda_gates[g].running;
    return 0;
}
static int loads_of(gpuos__CUcontext x) {
    int g;
    for (g = 0; g < CUDA__GATES; g++)
        if (cuda_gates[g].cuctx == x) return cuda_gates[g].loads;
    return 0;
}
/* Releases are made with cuda_gate_mu let go (a cuMemFree may wait for the program's own
   kernels) and counted in the gate's loads, so that no launch starts meanwhile: the fake takes
   the lock itself (were the library to hold it, this would hang: the watchdog), checks that no
   kernel runs in the CUDA context and that the release is counted, and records the handle. */
static void released(uint64_t h, int kind) {
    cuda_gate_lock();
    if (running_of(cur) != 0 || loads_of(cur) <= 0) violations++;
    if (h < MAX_H) {
        done_count[h]++;
        if (kind_of[h] != kind) violations++;
    }
    pthread_mutex_unlock(&cuda_gate_mu);
}
static gpuos__CUresult f_set(gpuos__CUcontext x) { cur = x; return CU_SUCCESS; }
static int slow_free_ms; /* > 0: cuMemFree takes this long (as it does while the program's own kernels run) */
static int slow_free_started;
static gpuos__CUresult f_free(gpuos__CUdeviceptr d) {
    if (slow_free_ms > 0) {
        struct timespec ts = {slow_free_ms / 1000, (long)(slow_free_ms % 1000) * 1000000L};
        __atomic_store_n(&slow_free_started, 1, __ATOMIC_RELEASE);
        nanosleep(&ts, NULL);
    }
    released((uint64_t)d, CUDA__REL_MEM);
    return CU_SUCCESS;
}
static gpuos__CUresult f_free_host(void *p) { released((uint64_t)(uintptr_t)p, CUDA__REL_HOST); return CU_SUCCESS; }
static gpuos__CUresult f_unload(gpuos__CUmodule m) { released((uint64_t)(uintptr_t)m, CUDA__REL_MOD); return CU_SUCCESS; }
static int n_loads, n_lookups;
/* loads run outside cuda_gate_mu (counted in `loads`, which launches wait for): the gate is
   read under it here */
static int running_locked_of(gpuos__CUcontext x) {
    int r;
    cuda_gate_lock();
    r = running_of(x);
    pthread_mutex_unlock(&cuda_gate_mu);
    return r;
}
static gpuos__CUresult f_get_function(gpuos__CUfunction *f, gpuos__CUmodule m, const char *name) { /* lazy loading */
    if (running_locked_of(cur) != 0) __atomic_add_fetch(&violations, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&n_lookups, 1, __ATOMIC_RELAXED);
    (void)m, (void)name;
    *f = NULL;
    return CU_SUCCESS;
}
static gpuos__CUresult f_load(gpuos__CUmodule *m, const void *image) { /* counted in loads */
    struct timespec ts = {0, 200000}; /* a load takes a while: a launch that did not wait for it would start meanwhile */
    if (running_locked_of(cur) != 0) __atomic_add_fetch(&violations, 1, __ATOMIC_RELAXED);
    nanosleep(&ts, NULL);
    if (running_locked_of(cur) != 0) __atomic_add_fetch(&violations, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&n_loads, 1, __ATOMIC_RELAXED);
    *m = (gpuos__CUmodule)(uintptr_t)image;
    return CU_SUCCESS;
}

static gpuos__cuda_api api;

/* A kernel counted running without waiting its turn (the release tests' kernels; or one that
   launched before: cuda_gate_enter itself waits for the others, tested in take_turns). */
static void force_enter(struct gpuos__cuda *c) {
    int g;
    cuda_gate_lock();
    g = cuda_gate_find(c->cuctx, 1);
    /* (but not while a load or a release is under way: cuda_gate_enter waits for those too) */
    while (g >= 0 && cuda_gates[g].loads > 0) cuda_gate_wait_1ms();
    if (g >= 0) cuda_gates[g].running++;
    c->in_gate = 1;
    pthread_mutex_unlock(&cuda_gate_mu);
}
static struct gpuos__cuda ctxs[8]; /* gpuos contexts: ctxs[i] in CUDA context i % N_CUCTX */

static gpuos__CUcontext cuctx_n(int i) { return (gpuos__CUcontext)(uintptr_t)(0x1000 * (i + 1)); }

static void setup(void) {
    int i;
    memset(&api, 0, sizeof api);
    api.cuCtxSetCurrent = f_set;
    api.cuMemFree = f_free;
    api.cuMemFreeHost = f_free_host;
    api.cuModuleUnload = f_unload;
    api.cuModuleLoadData = f_load;
    api.cuModuleGetFunction = f_get_function;
    for (i = 0; i < 8; i++) {
        memset(&ctxs[i], 0, sizeof ctxs[i]);
        ctxs[i].cu = &api;
        ctxs[i].cuctx = cuctx_n(i % N_CUCTX);
    }
}

static uint64_t next_h = 1;
static uint64_t new_handle(int kind) {
    uint64_t h;
    cuda_gate_lock();
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
    force_enter(a);
    h2 = new_handle(CUDA__REL_HOST);
    cuda_release(b, CUDA__REL_HOST, h2);
    CHECK(done_count[h2] == 0, "kept while another context's kernel runs in the CUDA context");
    h3 = new_handle(CUDA__REL_MOD);
    cuda_release(other, CUDA__REL_MOD, h3);
    CHECK(done_count[h3] == 1, "another CUDA context's release is not held back");
    /* b's kernel starts too; a's stops: still kept; b's stops: done */
    force_enter(b);
    h4 = new_handle(CUDA__REL_MEM);
    cuda_release(a, CUDA__REL_MEM, h4);
    cuda_gate_leave(a);
    CHECK(done_count[h2] == 0 && done_count[h4] == 0, "kept while one kernel still runs");
    cuda_gate_leave(b);
    CHECK(done_count[h2] == 1 && done_count[h4] == 1, "done when the last kernel leaves");
    CHECK(cuda_n_kept == 0, "nothing kept after (%d)", cuda_n_kept);
    /* a leave with nothing running does not go below 0 */
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
            force_enter(&ctxs[k]);
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
            else force_enter(&ctxs[k]);
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

/* Module loads: each "kernel" thread runs (entered) until a load waits, then leaves and
   launches again (cuda_gate_enter waits for the load); loaders must all get through, with
   no kernel running in their CUDA context during the load. And a kernel that never stops
   (stuck) makes a load time out without loading. */
static int loads_done;
static void *kernel_thread(void *arg) {
    struct gpuos__cuda *c = (struct gpuos__cuda *)arg;
    while (!__atomic_load_n(&loads_done, __ATOMIC_ACQUIRE)) {
        struct timespec ts = {0, 100000};
        if (!cuda_gate_enter(c, 10000, 0)) continue; /* (a launch: waits while a load is counted) */
        while (!cuda_gate_others_waiting(c) && !__atomic_load_n(&loads_done, __ATOMIC_ACQUIRE)) nanosleep(&ts, NULL); /* busy, never idle */
        cuda_gate_leave(c);
    }
    return NULL;
}
static void *loader_thread(void *arg) {
    struct gpuos__cuda *c = (struct gpuos__cuda *)arg;
    int k, bad = 0;
    for (k = 0; k < 50; k++) {
        gpuos__CUmodule m = NULL;
        int timed_out = 0;
        if (cuda_gate_load(c, &m, (const void *)(uintptr_t)0x40, "k", 10000, &timed_out) != CU_SUCCESS || timed_out) bad++;
    }
    return (void *)(uintptr_t)bad;
}
static void loads(void) {
    pthread_t k[4], l[2];
    void *bad[2];
    int i, before = n_loads;
    gpuos__CUmodule m = NULL;
    int timed_out = 0;
    __atomic_store_n(&loads_done, 0, __ATOMIC_RELEASE);
    for (i = 0; i < 4; i++) pthread_create(&k[i], NULL, kernel_thread, &ctxs[3 * i % 8]); /* CUDA contexts 0, 0, 0, 1 */
    for (i = 0; i < 2; i++) pthread_create(&l[i], NULL, loader_thread, &ctxs[3 * (i + 1)]);
    for (i = 0; i < 2; i++) pthread_join(l[i], &bad[i]);
    __atomic_store_n(&loads_done, 1, __ATOMIC_RELEASE);
    for (i = 0; i < 4; i++) pthread_join(k[i], NULL);
    CHECK(bad[0] == NULL && bad[1] == NULL, "loads timed out while the kernels stop when asked (%d, %d)",
          (int)(uintptr_t)bad[0], (int)(uintptr_t)bad[1]);
    CHECK(n_loads - before == 100, "%d of 100 loads made", n_loads - before);
    CHECK(n_lookups >= 100, "each load looks its kernel up in the quiet section (%d lookups)", n_lookups);
    CHECK(violations == 0, "loads: %d calls made while a kernel ran", violations);
    /* a stuck kernel: the load times out, nothing loaded; another CUDA context is not held up */
    before = n_loads;
    force_enter(&ctxs[0]);
    CHECK(cuda_gate_load(&ctxs[3], &m, (const void *)(uintptr_t)0x40, "k", 20, &timed_out) != CU_SUCCESS && timed_out == 1,
          "a load behind a kernel that never stops times out");
    CHECK(n_loads == before, "nothing loaded after a timeout");
    CHECK(cuda_gate_load(&ctxs[1], &m, (const void *)(uintptr_t)0x40, "k", 20, &timed_out) == CU_SUCCESS && timed_out == 0,
          "another CUDA context loads");
    cuda_gate_leave(&ctxs[0]);
    CHECK(!cuda_gate_others_waiting(&ctxs[0]), "no load waits after");
}

/* Turns: kernels of contexts with work in one CUDA context, each launch waiting (with a
   timeout) for the running one to stop, which stops when a launch waits (the reapers' part):
   never two at once, and every one gets its turns. */
static int turns[4], overlap, turns_finished;
static void *turn_thread(void *arg) {
    const int k = (int)(uintptr_t)arg;
    struct gpuos__cuda *c = &ctxs[3 * k]; /* CUDA context 0 */
    while (turns[k] < 200) {
        struct timespec ts = {0, 20000};
        if (!cuda_gate_enter(c, 10000, 0)) {
            __atomic_add_fetch(&overlap, 1000, __ATOMIC_RELAXED); /* timed out: counted as a failure */
            continue;
        }
        cuda_gate_lock();
        if (running_of(c->cuctx) != 1) overlap++;
        pthread_mutex_unlock(&cuda_gate_mu);
        turns[k]++;
        /* busy until asked (or the others are through) */
        while (!cuda_gate_others_waiting(c) && turns[k] < 200 && __atomic_load_n(&turns_finished, __ATOMIC_ACQUIRE) < 2)
            nanosleep(&ts, NULL);
        cuda_gate_leave(c);
    }
    __atomic_add_fetch(&turns_finished, 1, __ATOMIC_RELEASE);
    return NULL;
}
static void take_turns(void) {
    pthread_t t[3];
    int i;
    for (i = 0; i < 3; i++) pthread_create(&t[i], NULL, turn_thread, (void *)(uintptr_t)i);
    for (i = 0; i < 3; i++) pthread_join(t[i], NULL);
    CHECK(overlap == 0, "turns: %d times two kernels ran at once", overlap);
    CHECK(turns[0] == 200 && turns[1] == 200 && turns[2] == 200, "turns: %d %d %d of 200", turns[0], turns[1], turns[2]);
    CHECK(running_of(ctxs[0].cuctx) == 0 && !cuda_gate_others_waiting(&ctxs[0]), "turns: nothing running or waiting after");
    /* a launch behind a kernel that never stops: times out, not counted; waiting while it waits */
    force_enter(&ctxs[0]);
    CHECK(cuda_gate_enter(&ctxs[3], 30, 0) == 0, "a launch behind a kernel that never stops times out");
    CHECK(running_of(ctxs[0].cuctx) == 1, "the timed-out launch is not counted (%d running)", running_of(ctxs[0].cuctx));
    CHECK(!cuda_gate_others_waiting(&ctxs[0]), "nothing waits after the timeout");
    cuda_gate_leave(&ctxs[0]);
    CHECK(cuda_gate_enter(&ctxs[3], 30, 0) == 1 && running_of(ctxs[0].cuctx) == 1, "then it goes");
    cuda_gate_leave(&ctxs[3]);
    /* a stuck kernel: launches beside it fail at once (no wait), and go once it leaves */
    {
        uint64_t t0;
        force_enter(&ctxs[0]);
        cuda_gate_mark_stuck(&ctxs[0]);
        t0 = cuda_now_ns();
        CHECK(cuda_gate_enter(&ctxs[3], 10000, 0) == 0, "a launch beside a stuck kernel fails");
        CHECK(cuda_now_ns() - t0 < 5000000000ull, "at once, not after the 10 s timeout");
        cuda_gate_leave(&ctxs[0]);
        CHECK(cuda_gate_enter(&ctxs[3], 30, 0) == 1, "and goes once the stuck kernel left");
        cuda_gate_leave(&ctxs[3]);
        cuda_gate_leave(&ctxs[3]); /* a second leave is ignored */
        CHECK(running_of(ctxs[0].cuctx) == 0, "the count is 0 after (%d)", running_of(ctxs[0].cuctx));
    }
}

/* First come first served: launches that queue while a kernel runs enter in the order they
   came, one at a time, and one that finds the gate free while others wait queues behind
   them; a waiter that times out leaves the queue without holding up the next. */
#define FIFO_N 5
static struct gpuos__cuda fifo_c[FIFO_N + 1];
static int fifo_order[FIFO_N + 1], fifo_n, fifo_overlap;
static void *fifo_thread(void *arg) {
    const int k = (int)(uintptr_t)arg;
    struct timespec ts = {0, 200000};
    if (!cuda_gate_enter(&fifo_c[k], 10000, 0)) return NULL;
    cuda_gate_lock();
    if (running_of(fifo_c[k].cuctx) != 1) fifo_overlap++;
    fifo_order[fifo_n++] = k;
    pthread_mutex_unlock(&cuda_gate_mu);
    nanosleep(&ts, NULL); /* a short turn: the next waiters wake and must wait for it */
    cuda_gate_leave(&fifo_c[k]);
    return NULL;
}
static int waiting_of(gpuos__CUcontext x) {
    int g, w = 0;
    cuda_gate_lock();
    for (g = 0; g < CUDA__GATES; g++)
        if (cuda_gates[g].cuctx == x) w = cuda_gates[g].waiting;
    pthread_mutex_unlock(&cuda_gate_mu);
    return w;
}
static void wait_waiting(gpuos__CUcontext x, int n) { /* until n launches wait (at most ~5 s) */
    struct timespec ts = {0, 100000};
    int i;
    for (i = 0; i < 50000 && waiting_of(x) != n; i++) nanosleep(&ts, NULL);
}
static void fifo(void) {
    const gpuos__CUcontext x = cuctx_n(0);
    int round, bad_order = 0, k;
    for (k = 0; k <= FIFO_N; k++) {
        memset(&fifo_c[k], 0, sizeof fifo_c[k]);
        fifo_c[k].cu = &api;
        fifo_c[k].cuctx = x;
    }
    for (round = 0; round < 10; round++) {
        pthread_t t[FIFO_N];
        fifo_n = 0;
        force_enter(&fifo_c[FIFO_N]); /* a running kernel */
        for (k = 0; k < FIFO_N; k++) { /* they come one after another */
            pthread_create(&t[k], NULL, fifo_thread, (void *)(uintptr_t)k);
            wait_waiting(x, k + 1);
        }
        cuda_gate_leave(&fifo_c[FIFO_N]);
        for (k = 0; k < FIFO_N; k++) pthread_join(t[k], NULL);
        for (k = 0; k < FIFO_N; k++) bad_order += fifo_n != FIFO_N || fifo_order[k] != k;
    }
    CHECK(fifo_overlap == 0, "fifo: %d times two kernels ran at once", fifo_overlap);
    CHECK(bad_order == 0, "fifo: %d of %d launches out of their order of arrival", bad_order, 10 * FIFO_N);
    /* the gate free but a launch queued: a newcomer does not go first */
    {
        pthread_t t0;
        force_enter(&fifo_c[FIFO_N]);
        fifo_n = 0;
        pthread_create(&t0, NULL, fifo_thread, (void *)(uintptr_t)0);
        wait_waiting(x, 1);
        cuda_gate_lock(); /* the kernel leaves while the waiter cannot look yet */
        {
            int g;
            for (g = 0; g < CUDA__GATES; g++)
                if (cuda_gates[g].cuctx == x) cuda_gates[g].running--;
        }
        fifo_c[FIFO_N].in_gate = 0;
        pthread_mutex_unlock(&cuda_gate_mu);
        k = cuda_gate_enter(&fifo_c[1], 0, 0); /* a newcomer with no patience */
        CHECK(k == 0, "a launch that finds the gate free while another waits does not barge in");
        pthread_join(t0, NULL);
        CHECK(fifo_n == 1 && fifo_order[0] == 0, "the waiting one went (%d)", fifo_n);
    }
    /* a waiter that gives up leaves the queue: the one behind it goes */
    {
        pthread_t t1;
        force_enter(&fifo_c[FIFO_N]);
        fifo_n = 0;
        pthread_create(&t1, NULL, fifo_thread, (void *)(uintptr_t)1); /* waits 10 s at most */
        wait_waiting(x, 1);
        CHECK(cuda_gate_enter(&fifo_c[2], 20, 0) == 0, "a launch queued behind another times out");
        CHECK(waiting_of(x) == 1, "and leaves the queue (%d waiting)", waiting_of(x));
        cuda_gate_leave(&fifo_c[FIFO_N]);
        pthread_join(t1, NULL);
        CHECK(fifo_n == 1 && fifo_order[0] == 1, "the first one goes after it (%d)", fifo_n);
        CHECK(running_of(x) == 0 && waiting_of(x) == 0, "nothing running or waiting after (%d, %d)", running_of(x),
              waiting_of(x));
    }
}

/* A launch that does not wait (a submission's: keep 1) stays queued for its turn: a blocking
   launch that came after it waits while it is queued, even with the gate free; it goes when
   it tries again, or the queue moves on once it is taken out (cuda_gate_unqueue: nothing left
   to launch, failed, destroyed). */
static void *late_thread(void *arg) {
    const int k = (int)(uintptr_t)arg;
    if (!cuda_gate_enter(&fifo_c[k], 10000, 0)) return NULL;
    cuda_gate_lock();
    fifo_order[fifo_n++] = k;
    pthread_mutex_unlock(&cuda_gate_mu);
    cuda_gate_leave(&fifo_c[k]);
    return NULL;
}
static void kept_turns(void) {
    const gpuos__CUcontext x = cuctx_n(0);
    struct timespec ts = {0, 20000000};
    pthread_t t;
    int k;
    for (k = 0; k <= FIFO_N; k++) {
        memset(&fifo_c[k], 0, sizeof fifo_c[k]);
        fifo_c[k].cu = &api;
        fifo_c[k].cuctx = x;
    }
    fifo_n = 0;
    force_enter(&fifo_c[FIFO_N]);
    CHECK(cuda_gate_enter(&fifo_c[0], 0, 1) == 0 && fifo_c[0].gate_queued && waiting_of(x) == 1,
          "a launch that does not wait returns at once, queued (%d waiting)", waiting_of(x));
    CHECK(cuda_gate_enter(&fifo_c[0], 0, 1) == 0 && waiting_of(x) == 1, "a second try is not queued twice");
    pthread_create(&t, NULL, late_thread, (void *)(uintptr_t)1);
    wait_waiting(x, 2);
    cuda_gate_leave(&fifo_c[FIFO_N]);
    nanosleep(&ts, NULL);
    CHECK(fifo_n == 0 && running_of(x) == 0, "the one behind the kept turn does not go before it (%d)", fifo_n);
    CHECK(cuda_gate_enter(&fifo_c[0], 0, 1) == 1 && !fifo_c[0].gate_queued && running_of(x) == 1,
          "the kept turn goes when its context tries again");
    cuda_gate_leave(&fifo_c[0]);
    pthread_join(t, NULL);
    CHECK(fifo_n == 1 && fifo_order[0] == 1, "then the one behind it (%d)", fifo_n);
    /* taken out of the queue: the next goes */
    fifo_n = 0;
    force_enter(&fifo_c[FIFO_N]);
    CHECK(cuda_gate_enter(&fifo_c[2], 0, 1) == 0 && fifo_c[2].gate_queued, "queued again");
    pthread_create(&t, NULL, late_thread, (void *)(uintptr_t)3);
    wait_waiting(x, 2);
    cuda_gate_leave(&fifo_c[FIFO_N]);
    cuda_gate_unqueue(&fifo_c[2]);
    pthread_join(t, NULL);
    CHECK(fifo_n == 1 && fifo_order[0] == 3 && !fifo_c[2].gate_queued, "a kept turn taken out lets the next go (%d)",
          fifo_n);
    /* a blocking launch of a context with a kept turn (a graph launch after a submission) that
       times out keeps the turn's place: the context asked first, it goes first */
    fifo_n = 0;
    force_enter(&fifo_c[FIFO_N]);
    CHECK(cuda_gate_enter(&fifo_c[0], 0, 1) == 0, "kept turn");
    pthread_create(&t, NULL, late_thread, (void *)(uintptr_t)1);
    wait_waiting(x, 2);
    CHECK(cuda_gate_enter(&fifo_c[0], 20, 0) == 0 && fifo_c[0].gate_queued,
          "a blocking launch that times out leaves the kept turn queued");
    cuda_gate_leave(&fifo_c[FIFO_N]);
    nanosleep(&ts, NULL);
    CHECK(fifo_n == 0, "the one behind still waits (%d)", fifo_n);
    CHECK(cuda_gate_enter(&fifo_c[0], 0, 1) == 1, "the kept turn goes first");
    cuda_gate_leave(&fifo_c[0]);
    pthread_join(t, NULL);
    CHECK(fifo_n == 1 && fifo_order[0] == 1, "then the other (%d)", fifo_n);
    /* a stuck kernel: a kept launch fails and is not left queued */
    force_enter(&fifo_c[FIFO_N]);
    cuda_gate_mark_stuck(&fifo_c[FIFO_N]);
    CHECK(cuda_gate_enter(&fifo_c[4], 0, 1) == 0 && !fifo_c[4].gate_queued, "beside a stuck kernel: not queued");
    cuda_gate_leave(&fifo_c[FIFO_N]);
    CHECK(running_of(x) == 0 && waiting_of(x) == 0, "nothing running or waiting after (%d, %d)", running_of(x),
          waiting_of(x));
}

/* A release that takes long (a cuMemFree waiting for the program's own kernels) holds up no
   other CUDA context's gate, and a launch in its own CUDA context waits for it within its
   timeout instead of on the gate's lock. */
typedef struct slow_arg {
    struct gpuos__cuda *c;
    uint64_t h;
} slow_arg;
static void *slow_release_thread(void *p) {
    slow_arg *a = (slow_arg *)p;
    cuda_release(a->c, CUDA__REL_MEM, a->h);
    return NULL;
}
static void slow_release(void) {
    struct gpuos__cuda *a = &ctxs[0], *other = &ctxs[1], *same = &ctxs[3]; /* same: a's CUDA context */
    struct timespec ts = {0, 100000};
    slow_arg arg;
    pthread_t t;
    uint64_t t0;
    int ok;
    arg.c = a, arg.h = new_handle(CUDA__REL_MEM);
    slow_free_ms = 400, slow_free_started = 0;
    pthread_create(&t, NULL, slow_release_thread, &arg);
    while (!__atomic_load_n(&slow_free_started, __ATOMIC_ACQUIRE)) nanosleep(&ts, NULL);
    t0 = cuda_now_ns();
    ok = cuda_gate_enter(other, 5000, 0); /* another CUDA context: at once */
    CHECK(ok == 1 && cuda_now_ns() - t0 < 200000000ull, "another CUDA context launches during a slow release (%d, %.0f ms)",
          ok, (cuda_now_ns() - t0) / 1e6);
    if (ok) cuda_gate_leave(other);
    t0 = cuda_now_ns();
    ok = cuda_gate_enter(same, 20, 0); /* its own: waits for it, within the 20 ms asked for */
    CHECK(ok == 0 && cuda_now_ns() - t0 < 200000000ull, "a launch in the releasing CUDA context times out in 20 ms (%d, %.0f ms)",
          ok, (cuda_now_ns() - t0) / 1e6);
    if (ok) cuda_gate_leave(same);
    cuda_gate_lock(); /* (done_count is written under the gate's lock by the fakes) */
    ok = done_count[arg.h];
    pthread_mutex_unlock(&cuda_gate_mu);
    CHECK(ok == 0, "the slow release is still under way");
    pthread_join(t, NULL);
    slow_free_ms = 0;
    CHECK(done_count[arg.h] == 1, "then done, once");
    ok = cuda_gate_enter(same, 5000, 0);
    CHECK(ok == 1, "and the launch goes after it");
    if (ok) cuda_gate_leave(same);
    CHECK(violations == 0, "slow release: %d violations", violations);
}

/* A context destroyed while its kernel was stuck: the gate keeps the kernel counted stuck
   (launches beside it fail at once) until its streams say it has ended (the fake
   cuStreamQuery), then the next launch goes, and releases kept meanwhile are made when its kernel leaves. */
static int zombie_running = 1;
static gpuos__CUresult f_query(gpuos__CUstream s) {
    (void)s;
    return __atomic_load_n(&zombie_running, __ATOMIC_ACQUIRE) ? CU_ERROR_NOT_READY : CU_SUCCESS;
}
static void zombie(void) {
    struct gpuos__cuda *dead = &ctxs[2], *next = &ctxs[5]; /* one CUDA context */
    uint64_t h;
    api.cuStreamQuery = f_query;
    dead->stream = (gpuos__CUstream)(uintptr_t)0x77;
    force_enter(dead);
    dead->stuck = 1;
    cuda_gate_mark_stuck(dead);
    cuda_gate_adopt_stuck(dead); /* gpuos_destroy's step; then its struct is freed */
    CHECK(!dead->in_gate && cuda_n_zombies == 1, "the stuck kernel is the gate's (%d)", cuda_n_zombies);
    h = new_handle(CUDA__REL_MEM);
    cuda_release(next, CUDA__REL_MEM, h);
    CHECK(done_count[h] == 0, "a release beside it is kept");
    CHECK(cuda_gate_enter(next, 50, 0) == 0, "a launch beside a running stuck kernel fails");
    __atomic_store_n(&zombie_running, 0, __ATOMIC_RELEASE); /* it ends */
    CHECK(cuda_gate_enter(next, 50, 0) == 1, "once it has ended, a launch goes");
    CHECK(cuda_n_zombies == 0 && running_of(next->cuctx) == 1, "it left the gate (%d kept, %d running)", cuda_n_zombies,
          running_of(next->cuctx));
    CHECK(done_count[h] == 0, "the kept release is not made by the launch (its timeout)");
    cuda_gate_leave(next);
    CHECK(done_count[h] == 1, "the kept release was made when the next kernel left");
    CHECK(running_of(next->cuctx) == 0, "nothing running after");
    CHECK(violations == 0, "zombie: %d violations", violations);
}

/* A launch that finds the stuck kernel of a destroyed context ended lets it leave, but within
   its own timeout: the calls kept meanwhile (a cuMemFree that may wait for the program's own
   kernels) are not made by the launching thread (which holds its context's lock, and whose
   submission does not wait); they are made when the next kernel in the CUDA context leaves. */
static void zombie_timeout(void) {
    struct gpuos__cuda *dead = &ctxs[2], *next = &ctxs[5]; /* one CUDA context */
    uint64_t h, t0, dt;
    int ok;
    __atomic_store_n(&zombie_running, 1, __ATOMIC_RELEASE);
    dead->stuck = 1, dead->gate_stuck = 0;
    force_enter(dead);
    cuda_gate_mark_stuck(dead);
    cuda_gate_adopt_stuck(dead);
    h = new_handle(CUDA__REL_MEM);
    cuda_release(next, CUDA__REL_MEM, h); /* kept: the stuck kernel counts running */
    CHECK(done_count[h] == 0, "zombie_timeout: kept");
    __atomic_store_n(&zombie_running, 0, __ATOMIC_RELEASE); /* it ends */
    slow_free_ms = 400;
    t0 = cuda_now_ns();
    ok = cuda_gate_enter(next, 20, 0);
    dt = cuda_now_ns() - t0;
    CHECK(dt < 200000000ull, "a launch (timeout 20 ms) that reaps an ended stuck kernel returns in time (%d, %.0f ms)",
          ok, dt / 1e6);
    if (ok) cuda_gate_leave(next); /* (its stop makes the kept calls) */
    slow_free_ms = 0;
    CHECK(cuda_n_zombies == 0 && running_of(next->cuctx) == 0, "zombie_timeout: it left (%d, %d)", cuda_n_zombies,
          running_of(next->cuctx));
    CHECK(done_count[h] == 1, "zombie_timeout: the kept release made once (%d)", done_count[h]);
    CHECK(violations == 0, "zombie_timeout: %d violations", violations);
}

/* More stuck kernels of destroyed contexts than the gate's first table holds (16): each is
   kept (the table grows), and once they have ended the next launch lets them all leave. */
static void zombie_many(void) {
    struct gpuos__cuda *dead = &ctxs[2], *next = &ctxs[5]; /* one CUDA context */
    const int n = 40;
    int i, kept = 1;
    __atomic_store_n(&zombie_running, 1, __ATOMIC_RELEASE);
    for (i = 0; i < n; i++) {
        dead->stuck = 1, dead->gate_stuck = 0;
        force_enter(dead);
        cuda_gate_mark_stuck(dead);
        cuda_gate_adopt_stuck(dead);
        kept &= !dead->in_gate && cuda_n_zombies == i + 1;
    }
    CHECK(kept && cuda_n_zombies == n, "zombie_many: all %d kept (%d)", n, cuda_n_zombies);
    CHECK(cuda_gate_enter(next, 20, 0) == 0, "zombie_many: a launch beside them fails");
    __atomic_store_n(&zombie_running, 0, __ATOMIC_RELEASE); /* they end */
    i = cuda_gate_enter(next, 5000, 0);
    CHECK(i == 1, "zombie_many: once they have ended, a launch goes");
    CHECK(cuda_n_zombies == 0 && running_of(next->cuctx) == 1, "zombie_many: they left (%d kept, %d running)",
          cuda_n_zombies, running_of(next->cuctx));
    if (i == 1) cuda_gate_leave(next);
    CHECK(running_of(next->cuctx) == 0, "zombie_many: nothing running after");
    CHECK(violations == 0, "zombie_many: %d violations", violations);
}

static void watchdog(int sig) {
    static const char msg[] = "FAIL test_gate: a hang (watchdog)\ntest_gate: 0 passed, 1 failed\n";
    (void)sig;
    if (write(1, msg, sizeof msg - 1) < 0) _exit(2);
    _exit(1);
}

int main(void) {
    const unsigned long long seed = ctest_seed("test_gate");
    signal(SIGALRM, watchdog);
    alarm(120);
    (void)ctest_device;
    setup();
    cases();
    model(seed);
    threads(seed);
    loads();
    take_turns();
    fifo();
    kept_turns();
    slow_release();
    zombie();
    zombie_timeout();
    zombie_many();
    return ctest_summary("test_gate");
}
