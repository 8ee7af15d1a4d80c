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

/* GPU: a graph's first launch (which also makes its device table) on context A while context
   B's kernel holds the GPU with ~1 s of queued work waits for its turn (B stops once its queue
   ran), and meanwhile A's other threads go on:
   a gpuos_wait on A (nothing queued there) returns at once, where it once waited for the whole
   turn (the launch held A's lock). */
typedef struct launcher {
    gpuos_graph *g;
    gpuos_status st;
    volatile int done;
    double ms;
} launcher;

static void *launch_one(void *arg) {
    launcher *l = (launcher *)arg;
    const double t0 = ctest_now_ms();
    l->st = gpuos_graph_launch(l->g, NULL, 0, NULL, 0, NULL);
    l->ms = ctest_now_ms() - t0;
    l->done = 1;
    return NULL;
}

static void graph_beside_busy(void) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *a = NULL, *b = NULL;
    gpuos_tensor *ax = NULL, *one = NULL, *bx = NULL, *by = NULL, *zero = NULL, *by4 = NULL;
    gpuos_graph *g = NULL;
    gpuos_task t = GPUOS_TASK_INIT;
    launcher l;
    pthread_t th;
    int64_t n = 1024, big = (int64_t)1 << 26;
    double max_ms = 0;
    long calls = 0;
    float h[1024], hb[4];
    int k, bad = 0;
    cfg.device = ctest_device();
    cfg.idle_ms = 5;
    cfg.wait_timeout_ms = 30000;
    if (gpuos_create(&cfg, &a) != GPUOS_OK || gpuos_create(&cfg, &b) != GPUOS_OK) {
        CHECK(0, "gpuos_create: %s", gpuos_last_error(NULL));
        gpuos_destroy(a);
        return;
    }
    CHECK(gpuos_tensor_new(a, GPUOS_F32, 1, &n, &ax) == GPUOS_OK && gpuos_fill(a, ax, 0.0) == GPUOS_OK &&
              gpuos_tensor_scalar(a, GPUOS_F32, 1.0, &one) == GPUOS_OK,
          "%s", gpuos_last_error(a));
    CHECK(gpuos_graph_create(a, &g) == GPUOS_OK, "%s", gpuos_last_error(a));
    t.op = GPUOS_OP_ADD;
    t.out = ax;
    t.in[0] = ax;
    t.in[1] = one;
    CHECK(gpuos_graph_add(g, &t, NULL) == GPUOS_OK, "%s", gpuos_last_error(a));
    CHECK(gpuos_wait(a, 30000) == GPUOS_OK, "%s", gpuos_last_error(a)); /* its first launch below makes its device table too */
    CHECK(gpuos_tensor_new(b, GPUOS_F32, 1, &big, &bx) == GPUOS_OK && gpuos_tensor_new(b, GPUOS_F32, 1, &big, &by) == GPUOS_OK &&
              gpuos_tensor_scalar(b, GPUOS_F32, 0.0, &zero) == GPUOS_OK && gpuos_view_slice(by, 0, 0, 4, 1, &by4) == GPUOS_OK,
          "%s", gpuos_last_error(b));
    CHECK(gpuos_fill(b, bx, 1.0) == GPUOS_OK && gpuos_fill(b, by, 0.0) == GPUOS_OK, "%s", gpuos_last_error(b));
    { /* a's kernel idles out */
        const struct timespec pause = {0, 100000000L};
        nanosleep(&pause, NULL);
    }
    for (k = 0; k < 4000; k++) /* alternating: identical in-place tasks in a row would run as one pass */
        CHECK((k % 2 ? gpuos_sub(b, by, by, zero) : gpuos_add(b, by, by, bx)) == GPUOS_OK, "%s", gpuos_last_error(b));
    memset(&l, 0, sizeof l);
    l.g = g;
    pthread_create(&th, NULL, launch_one, &l);
    while (!l.done) {
        const double t0 = ctest_now_ms();
        (void)gpuos_wait(a, 5);
        const double dt = ctest_now_ms() - t0;
        if (dt > max_ms) max_ms = dt;
        calls++;
    }
    pthread_join(th, NULL);
    CHECK(l.st == GPUOS_OK, "the graph launch beside a busy context: %s", gpuos_last_error(a));
    CHECK(gpuos_wait(a, 30000) == GPUOS_OK && gpuos_download(a, ax, h, sizeof h) == GPUOS_OK, "%s", gpuos_last_error(a));
    for (k = 0; k < 1024; k++) bad += h[k] != 1.0f;
    CHECK(bad == 0, "the graph's add: %d values wrong", bad);
    CHECK(gpuos_wait(b, 30000) == GPUOS_OK && gpuos_download(b, by4, hb, sizeof hb) == GPUOS_OK, "%s", gpuos_last_error(b));
    CHECK(hb[0] == 2000.0f && hb[3] == 2000.0f, "b's queue: y = %g after 2000 adds of 1", hb[0]);
    if (l.ms > 600.0)
        CHECK(max_ms < 250.0, "a gpuos_wait on the launching context took %.0f ms while its graph launch waited %.0f ms", max_ms,
              l.ms);
    printf("graph launch beside a busy context: %.0f ms; %ld waits on its context meanwhile, the longest %.1f ms%s\n", l.ms,
           calls, max_ms, l.ms > 600.0 ? "" : " (the launch waited too little to check)");
    gpuos_graph_release(g);
    gpuos_tensor_release(ax);
    gpuos_tensor_release(one);
    gpuos_tensor_release(bx);
    gpuos_tensor_release(by);
    gpuos_tensor_release(by4);
    gpuos_tensor_release(zero);
    gpuos_destroy(a);
    gpuos_destroy(b);
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
    if (ctest_device() != GPUOS_DEVICE_HOST && !quick) graph_beside_busy(); /* the host executor has no device turns */
    alarm(0);
    printf("%d contexts, %d rounds each%s, on %s\n", nctx, w[nctx - 1].rounds, w[0].busy ? " (context 0 busy until the others finish)" : "",
           ctest_device() == GPUOS_DEVICE_HOST ? "the host executor" : "the device");
    return ctest_summary("test_contexts");
}
