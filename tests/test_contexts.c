/* test_contexts.c - several contexts on one device at once, each driven by its own thread:
   chains of in-place adds checked exactly, tensors made and released while the other contexts'
   kernels run, contexts destroyed and made again meanwhile. On a GPU every context has its own
   persistent kernel in the device's one CUDA context, so a free, a module load or unload, a
   destroy in one context happens while another's kernel runs (the device gate in
   src/cuda_backend.c: such calls once hung, session 20). Context 0 is kept busy without a pause
   until the others are done: their gpuos_create must still get through (loading device code
   waits until no kernel runs, so the busy kernel is stopped for it and relaunched). The others
   pause a little longer than idle_ms between rounds, so every kernel gets the GPU in turn (one
   context's kernel fills it). A watchdog fails the test instead of a hang. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctest.h"
#include "gpuos.h"

#define NCTX 3
#define N 4096

typedef struct worker {
    int id, rounds, busy;
    unsigned long long rng;
    int passed, failed;
    char first_error[300];
} worker;

static int others_done; /* workers other than the busy one that finished (atomic) */
static int busy_cap_s = 60;
static int quick, nctx = NCTX, idle_ms = 5, recreate = 1, busy0 = 1; /* GPUOS_TEST_NCTX, _IDLE_MS, _RECREATE, _BUSY */

static unsigned long long next(worker *w) {
    w->rng ^= w->rng << 13, w->rng ^= w->rng >> 7, w->rng ^= w->rng << 17;
    return w->rng;
}

static void fail(worker *w, gpuos_context *ctx, const char *what, gpuos_status st) {
    w->failed++;
    if (!w->first_error[0])
        snprintf(w->first_error, sizeof w->first_error, "context %d: %s: %s: %s", w->id, what, gpuos_status_string(st),
                 ctx ? gpuos_last_error(ctx) : gpuos_last_error(NULL));
}
#define CALL(what, expr)                             \
    do {                                             \
        gpuos_status st_ = (expr);                   \
        if (st_ != GPUOS_OK) {                       \
            fail(w, ctx, what, st_);                 \
            goto out;                                \
        }                                            \
        if (!w->busy) w->passed++; /* busy: per round */ \
    } while (0)

static gpuos_context *make_ctx(worker *w) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx = NULL;
    gpuos_status st;
    cfg.device = ctest_device();
    cfg.idle_ms = (uint32_t)idle_ms;
    cfg.wait_timeout_ms = 30000;
    st = gpuos_create(&cfg, &ctx);
    if (st != GPUOS_OK) {
        fail(w, NULL, "gpuos_create", st);
        return NULL;
    }
    return ctx;
}

static void *run(void *arg) {
    worker *w = (worker *)arg;
    gpuos_context *ctx = make_ctx(w);
    gpuos_tensor *x = NULL, *one = NULL, *scratch = NULL;
    static float h[NCTX][N];
    int r;
    if (!ctx) return NULL;
    const time_t t_start = time(NULL);
    for (r = 0; w->busy ? __atomic_load_n(&others_done, __ATOMIC_ACQUIRE) < nctx - 1 : r < w->rounds; r++) {
        const int64_t n = N;
        const int k = 1 + (int)(next(w) % 300);
        int i, bad = 0;
        struct timespec pause = {0, 0};
        if (w->busy && time(NULL) - t_start > busy_cap_s) {
            fail(w, ctx, "the other contexts did not finish while this one stayed busy (GPUOS_TEST_BUSY_CAP_S)", GPUOS_OK);
            break;
        }
        if (recreate && !w->busy && r > 0 && next(w) % 4 == 0) { /* destroyed and made again while the others run */
            gpuos_destroy(ctx);
            ctx = make_ctx(w);
            if (!ctx) return NULL;
        }
        CALL("tensor_new", gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &x));
        CALL("tensor_scalar", gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one));
        CALL("fill", gpuos_fill(ctx, x, (double)w->id));
        for (i = 0; i < k; i++) {
            CALL("add", gpuos_add(ctx, x, x, one));
            if (i % 50 == 25) { /* a tensor made, used and released while this and other kernels run */
                CALL("tensor_new", gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &scratch));
                CALL("copy", gpuos_copy(ctx, scratch, x));
                gpuos_tensor_release(scratch);
                scratch = NULL;
            }
        }
        CALL("download", gpuos_download(ctx, x, h[w->id], sizeof h[w->id]));
        for (i = 0; i < N; i++) bad += h[w->id][i] != (float)(w->id + k);
        if (bad) {
            char msg[120];
            snprintf(msg, sizeof msg, "round %d: %d of %d elements differ from %d", r, bad, N, w->id + k);
            fail(w, ctx, msg, GPUOS_OK);
        } else {
            w->passed++;
        }
        gpuos_tensor_release(x);
        gpuos_tensor_release(one);
        x = one = NULL;
        pause.tv_nsec = (long)(6 + next(w) % 10) * 1000000L; /* > idle_ms: the kernel leaves the GPU */
        if (!w->busy) nanosleep(&pause, NULL);
    }
out:
    if (!w->busy) __atomic_add_fetch(&others_done, 1, __ATOMIC_RELEASE);
    gpuos_tensor_release(scratch);
    gpuos_tensor_release(x);
    gpuos_tensor_release(one);
    if (ctx && gpuos_context_status(ctx) != GPUOS_OK) fail(w, ctx, "context status", gpuos_context_status(ctx));
    gpuos_destroy(ctx);
    return NULL;
}

static void watchdog(int sig) {
    static const char msg[] = "FAIL test_contexts: no progress within the watchdog's limit (a hang)\n"
                              "test_contexts: 0 passed, 1 failed\n";
    (void)sig;
    if (write(1, msg, sizeof msg - 1) < 0) _exit(2);
    _exit(1);
}

int main(void) {
    const unsigned long long seed = ctest_seed("test_contexts");
    pthread_t t[NCTX];
    worker w[NCTX];
    int i;
    quick = getenv("GPUOS_TEST_QUICK") != NULL;
    if (getenv("GPUOS_TEST_NCTX")) nctx = atoi(getenv("GPUOS_TEST_NCTX"));
    if (nctx < 1 || nctx > NCTX) nctx = NCTX;
    if (getenv("GPUOS_TEST_IDLE_MS")) idle_ms = atoi(getenv("GPUOS_TEST_IDLE_MS"));
    if (getenv("GPUOS_TEST_RECREATE")) recreate = atoi(getenv("GPUOS_TEST_RECREATE"));
    if (getenv("GPUOS_TEST_BUSY")) busy0 = atoi(getenv("GPUOS_TEST_BUSY"));
    if (getenv("GPUOS_TEST_BUSY_CAP_S")) busy_cap_s = atoi(getenv("GPUOS_TEST_BUSY_CAP_S"));
    signal(SIGALRM, watchdog);
    alarm(240);
    memset(w, 0, sizeof w);
    for (i = 0; i < nctx; i++) {
        w[i].id = i;
        w[i].rounds = quick ? 8 : 40;
        w[i].busy = i == 0 && nctx > 1 && busy0;
        w[i].rng = ctest_rng(seed, 11 + i);
        pthread_create(&t[i], NULL, run, &w[i]);
    }
    for (i = 0; i < nctx; i++) {
        pthread_join(t[i], NULL);
        ctest_passed += w[i].passed;
        ctest_failed += w[i].failed;
        if (w[i].first_error[0]) fprintf(stderr, "FAIL %s\n", w[i].first_error);
    }
    alarm(0);
    printf("%d contexts, %d rounds each%s, on %s\n", nctx, w[nctx - 1].rounds, w[0].busy ? " (context 0 busy until the others finish)" : "",
           ctest_device() == GPUOS_DEVICE_HOST ? "the host executor" : "the device");
    return ctest_summary("test_contexts");
}
