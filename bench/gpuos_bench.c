/* bench/gpuos_bench.c - the gpuos column of `make bench`, through the public API only.

   Prints one line per result, for bench/collect.py (and for people):
       ROW  <row> <unit> <value>        a measured value of the gpuos column
       INFO <key> <value...>            context: backend, threads used, spreads, per-thread rates
       FAIL <row> <reason>              the row could not be measured (the others still run)
   Every row is warmed up, repeated, and reported as the median; times are CLOCK_MONOTONIC,
   from the first submission until the host sees the work done (gpuos_wait_fence / download).

   Rows (table ROWS below; add a row = add a function and a table line, and the same name in
   bench/baselines.cu, bench/torch_baselines.py and bench/collect.py):
     roundtrip           us     gpuos_add on 4096 floats, then gpuos_wait_fence on its seq
     roundtrip_download  us     the same add, then a 4-byte gpuos_download of element 0 that
                                must see the new value
     independent         ops/s  out_k = in_k + one over a pool of 4096-float tensors, submitted
                                from T host threads (best of --threads; INFO has each T); each
                                timing is ~0.25 s of ops (20k..2M), sized from a warm-up
     independent_many    ops/s  the same, each thread's pool as one gpuos_submit_many a round
     chain               us/op  1000 in-place gpuos_add(x, x, one) on 4096 floats, per op
     large_elementwise   GB/s   gpuos_add on 64M floats; bytes = read a + read b + write out
     cold_start          s      child process: gpuos_create + fill + add + download, with a
                                fresh empty cache_dir (and CUDA JIT cache dir)
     warm_start          ms     the same child with the cache_dir the cold run filled
                                (both children start while this process holds the GPU's
                                primary context, as the baselines' children start beside
                                their parent: a fresh process's cuInit takes ~100 ms on an
                                H100 host where no other process holds the GPU, ~10 beside one)

   Usage: gpuos_bench [--host | --device N] [--rows a,b,...] [--threads 1,2,4,8] [--quick]
                      [--queue N] [--chain-n N] [--indep-ops N] [--pool N] [--large-n N]
                      [--large-k N] [--cold-reps N] [--warm-reps N] [--reps-scale F] [--list]
*/
#define _XOPEN_SOURCE 700 /* clock_gettime, mkdtemp, nftw, pthread_barrier under -std=c99 */
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpuos.h"

/* ------------------------------------------------------------------ options */
static struct {
    int host;            /* --host: GPUOS_DEVICE_HOST */
    int device;          /* --device N (default GPUOS_DEVICE_AUTO) */
    int quick;           /* --quick: fewer repetitions, smaller sizes where it does not change the row */
    const char *rows;    /* --rows: comma list, NULL = all */
    const char *threads; /* --threads: comma list of submitter thread counts for `independent` */
    uint32_t queue;      /* --queue: queue_capacity */
    int chain_n;         /* --chain-n: ops per chain */
    long indep_ops;      /* --indep-ops: ops per independent measurement, all threads together */
    int indep_ops_set;   /* given: used as is (else sized from the warm-up's rate) */
    int pool;            /* --pool: tensors per submitter thread in `independent` */
    int64_t large_n;     /* --large-n: elements of large_elementwise */
    int large_k;         /* --large-k: large adds per timed repetition */
    int cold_reps, warm_reps;
    double reps_scale;   /* --reps-scale: multiply every repetition count */
    const char *self;    /* argv[0], for the start rows' child */
} O;

#define SMALL_N 4096
#define WAIT_MS 30000u /* every wait; far above any row's work, short enough for the lease */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int reps(int full, int quick) {
    int r = (int)((O.quick ? quick : full) * O.reps_scale + 0.5);
    return r < 1 ? 1 : r;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v); also prints the spread as INFO <row>.spread min p10 p90 max. */
static double median_info(const char *row, double *v, int n, double scale) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double med = (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    printf("INFO %s.spread n=%d min=%.4g p10=%.4g median=%.4g p90=%.4g max=%.4g\n", row, n, v[0] * scale,
           v[n / 10] * scale, med * scale, v[(n * 9) / 10] * scale, v[n - 1] * scale);
    return med;
}

static void row_out(const char *name, const char *unit, double value) {
    printf("ROW %s %s %.6g\n", name, unit, value);
    fflush(stdout);
}

static const char *cur_row = "?";
static gpuos_context *g_ctx; /* the shared, warm context of the in-process rows */

static gpuos_status last_status; /* of the last failing call, for the main loop */

static int fail(gpuos_context *ctx, const char *what, gpuos_status st) {
    last_status = st;
    printf("FAIL %s %s: %s (%s)\n", cur_row, what, gpuos_status_string(st), gpuos_last_error(ctx));
    fflush(stdout);
    return -1;
}

#define CK(ctx, call)                                   \
    do {                                                \
        gpuos_status st_ = (call);                      \
        if (st_ != GPUOS_OK) return fail(ctx, #call, st_); \
    } while (0)

static int failmsg(const char *msg) {
    printf("FAIL %s %s\n", cur_row, msg);
    fflush(stdout);
    return -1;
}

static gpuos_config make_config(const char *cache_dir) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    cfg.device = O.host ? GPUOS_DEVICE_HOST : O.device;
    cfg.queue_capacity = O.queue;
    cfg.submit_timeout_ms = 10000u; /* submitters wait for room rather than fail */
    cfg.wait_timeout_ms = WAIT_MS;
    cfg.cache_dir = cache_dir;
    return cfg;
}

/* A contiguous 1-D f32 tensor of n elements holding base + (i % 97) * 0.25 (exact in f32). */
static int new_filled(gpuos_context *ctx, int64_t n, float base, gpuos_tensor **out) {
    float *h = (float *)malloc((size_t)n * sizeof(float));
    if (!h) return failmsg("out of host memory");
    for (int64_t i = 0; i < n; i++) h[i] = base + (float)(i % 97) * 0.25f;
    gpuos_status st = gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, out);
    if (st == GPUOS_OK) st = gpuos_upload(ctx, *out, h, (size_t)n * sizeof(float));
    free(h);
    if (st != GPUOS_OK) return fail(ctx, "tensor_new/upload", st);
    return 0;
}

/* Checks that t holds base + (i % 97) * 0.25 + add, on every element. */
static int check_filled(gpuos_context *ctx, gpuos_tensor *t, int64_t n, float base, double add) {
    float *h = (float *)malloc((size_t)n * sizeof(float));
    if (!h) return failmsg("out of host memory");
    gpuos_status st = gpuos_download(ctx, t, h, (size_t)n * sizeof(float));
    if (st != GPUOS_OK) {
        free(h);
        return fail(ctx, "download (check)", st);
    }
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++) {
        float want = (float)((double)base + (double)(i % 97) * 0.25 + add);
        if (h[i] != want) {
            if (first < 0) first = i;
            bad++;
        }
    }
    if (bad) {
        char msg[200];
        float want = (float)((double)base + (double)(first % 97) * 0.25 + add);
        snprintf(msg, sizeof msg, "wrong result: %lld elements differ, first [%lld] = %g, want %g", (long long)bad,
                 (long long)first, h[first], want);
        free(h);
        return failmsg(msg);
    }
    free(h);
    return 0;
}

/* ------------------------------------------------------------------ roundtrip */
/* INFO lines: express tasks (docs/ARCHITECTURE.md) so far in ctx, sent and run by the express worker. */
static void express_info(gpuos_context *ctx, const char *row) {
    uint64_t sent = 0, ran = 0;
    gpuos_debug_express(ctx, &sent, &ran);
    printf("INFO %s.express_sent %llu\nINFO %s.express_by_worker %llu\n", row, (unsigned long long)sent, row,
           (unsigned long long)ran);
}

static int row_roundtrip(void) {
    gpuos_context *ctx = g_ctx;
    gpuos_tensor *x, *one;
    int64_t n = SMALL_N;
    if (new_filled(ctx, n, 1.0f, &x)) return -1;
    CK(ctx, gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one));
    int warm = reps(300, 50), R = reps(3000, 300);
    double *t = (double *)malloc((size_t)R * sizeof(double));
    if (!t) return failmsg("out of host memory");
    for (int i = 0; i < warm + R; i++) {
        double t0 = now_s();
        CK(ctx, gpuos_add(ctx, x, x, one));
        uint64_t seq = gpuos_fence(ctx);
        CK(ctx, gpuos_wait_fence(ctx, seq, WAIT_MS));
        double t1 = now_s();
        if (i >= warm) t[i - warm] = t1 - t0;
    }
    double med = median_info("roundtrip", t, R, 1e6);
    free(t);
    express_info(ctx, "roundtrip");
    if (check_filled(ctx, x, n, 1.0f, warm + R)) return -1;
    row_out("roundtrip", "us", med * 1e6);
    gpuos_tensor_release(x);
    gpuos_tensor_release(one);
    return 0;
}

static int row_roundtrip_download(void) {
    gpuos_context *ctx = g_ctx;
    gpuos_tensor *x, *one, *x0;
    int64_t n = SMALL_N;
    if (new_filled(ctx, n, 1.0f, &x)) return -1;
    CK(ctx, gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one));
    CK(ctx, gpuos_view_slice(x, 0, 0, 1, 1, &x0));
    int warm = reps(300, 50), R = reps(3000, 300);
    double *t = (double *)malloc((size_t)R * sizeof(double));
    if (!t) return failmsg("out of host memory");
    float expect = 1.0f;
    for (int i = 0; i < warm + R; i++) {
        float got = 0.0f;
        double t0 = now_s();
        CK(ctx, gpuos_add(ctx, x, x, one));
        CK(ctx, gpuos_download(ctx, x0, &got, sizeof got));
        double t1 = now_s();
        expect += 1.0f;
        if (got != expect) {
            char msg[120];
            snprintf(msg, sizeof msg, "download saw %g, want %g (iteration %d)", got, expect, i);
            free(t);
            return failmsg(msg);
        }
        if (i >= warm) t[i - warm] = t1 - t0;
    }
    double med = median_info("roundtrip_download", t, R, 1e6);
    express_info(ctx, "roundtrip_download");
    free(t);
    row_out("roundtrip_download", "us", med * 1e6);
    gpuos_tensor_release(x0);
    gpuos_tensor_release(x);
    gpuos_tensor_release(one);
    return 0;
}

/* Times warm + R launches of a graph without bindings, each until its fence is done:
   t[0..R) the last R, divided by per (the graph's ops, or 1). 0, or -1 after failmsg. */
static int time_graph(gpuos_context *ctx, gpuos_graph *g, int warm, int R, double per, double *t) {
    for (int r = 0; r < warm + R; r++) {
        uint64_t seq;
        double t0 = now_s();
        CK(ctx, gpuos_graph_launch(g, NULL, 0, NULL, 0, &seq));
        CK(ctx, gpuos_wait_fence(ctx, seq, WAIT_MS));
        if (r >= warm) t[r - warm] = (now_s() - t0) / per;
    }
    return 0;
}

/* ------------------------------------------------------------------ chain */
static int row_chain(void) {
    gpuos_context *ctx = g_ctx;
    gpuos_tensor *x, *one;
    int64_t n = SMALL_N;
    int len = O.chain_n;
    if (new_filled(ctx, n, 1.0f, &x)) return -1;
    CK(ctx, gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one));
    int warm = reps(5, 2), R = reps(50, 10);
    double *t = (double *)malloc((size_t)R * sizeof(double)), sub = 0;
    if (!t) return failmsg("out of host memory");
    for (int r = 0; r < warm + R; r++) {
        double t0 = now_s();
        for (int i = 0; i < len; i++) CK(ctx, gpuos_add(ctx, x, x, one));
        if (r >= warm) sub += now_s() - t0;
        uint64_t seq = gpuos_fence(ctx);
        CK(ctx, gpuos_wait_fence(ctx, seq, WAIT_MS));
        double t1 = now_s();
        if (r >= warm) t[r - warm] = (t1 - t0) / len;
    }
    double med = median_info("chain", t, R, 1e6);
    printf("INFO chain.submit_us_op %.4f\n", sub / R / len * 1e6); /* the host's share */
    { /* the same chain as one recorded graph (INFO; the row is eager submission) */
        gpuos_graph *g;
        gpuos_task k = GPUOS_TASK_INIT;
        CK(ctx, gpuos_graph_create(ctx, &g));
        k.op = GPUOS_OP_ADD, k.out = x, k.in[0] = x, k.in[1] = one;
        for (int i = 0; i < len; i++) CK(ctx, gpuos_graph_add(g, &k, NULL));
        if (time_graph(ctx, g, warm, R, len, t)) return -1;
        printf("INFO chain.graph_us_op %.4f\n", median_info("chain.graph", t, R, 1e6) * 1e6);
        gpuos_graph_release(g);
    }
    free(t);
    if (check_filled(ctx, x, n, 1.0f, (double)(warm + R) * len * 2)) return -1;
    printf("INFO chain.length %d\n", len);
    row_out("chain", "us/op", med * 1e6);
    gpuos_tensor_release(x);
    gpuos_tensor_release(one);
    return 0;
}

/* ------------------------------------------------------------------ independent */
typedef struct {
    gpuos_context *ctx;
    gpuos_tensor **in, **out, *one;
    int pool;
    long ops;
    pthread_barrier_t *go;
    gpuos_status st;
    double t_end; /* when this thread's last submission returned */
} indep_thread;

static int g_indep_many; /* independent_many: the pool's adds as one gpuos_submit_many a round */
static void *indep_main(void *arg) {
    indep_thread *th = (indep_thread *)arg;
    gpuos_task *tasks = NULL;
    if (g_indep_many) {
        tasks = (gpuos_task *)malloc((size_t)th->pool * sizeof *tasks);
        for (int k = 0; tasks && k < th->pool; k++) {
            gpuos_task e = GPUOS_TASK_INIT;
            e.op = GPUOS_OP_ADD, e.out = th->out[k], e.in[0] = th->in[k], e.in[1] = th->one;
            tasks[k] = e;
        }
    }
    pthread_barrier_wait(th->go);
    gpuos_status st = g_indep_many && !tasks ? GPUOS_ERR_OUT_OF_MEMORY : GPUOS_OK;
    if (g_indep_many) {
        for (long i = 0; i < th->ops && st == GPUOS_OK; i += th->pool) {
            const long m = th->ops - i < th->pool ? th->ops - i : th->pool;
            st = gpuos_submit_many(th->ctx, tasks, (int)m, NULL, NULL);
        }
    } else {
        for (long i = 0; i < th->ops && st == GPUOS_OK; i++) {
            int k = (int)(i % th->pool);
            st = gpuos_add(th->ctx, th->out[k], th->in[k], th->one);
        }
    }
    free(tasks);
    th->t_end = now_s();
    th->st = st;
    return NULL;
}

/* One measurement with T submitter threads: ops/s from the start barrier to gpuos_wait. */
static int indep_once(int T, long ops, indep_thread *th, double *rate, double *submit_rate) {
    gpuos_context *ctx = g_ctx;
    pthread_barrier_t go;
    pthread_t tid[64];
    pthread_barrier_init(&go, NULL, (unsigned)T + 1);
    long total = 0;
    for (int j = 0; j < T; j++) {
        th[j].go = &go;
        th[j].ops = ops / T;
        total += th[j].ops;
        if (pthread_create(&tid[j], NULL, indep_main, &th[j]) != 0) return failmsg("pthread_create failed");
    }
    pthread_barrier_wait(&go);
    double t0 = now_s();
    for (int j = 0; j < T; j++) pthread_join(tid[j], NULL);
    gpuos_status st = gpuos_wait(ctx, WAIT_MS);
    double t1 = now_s();
    pthread_barrier_destroy(&go);
    for (int j = 0; j < T; j++)
        if (th[j].st != GPUOS_OK) return fail(ctx, "gpuos_add (submitter thread)", th[j].st);
    if (st != GPUOS_OK) return fail(ctx, "gpuos_wait", st);
    double t_sub = 0;
    for (int j = 0; j < T; j++)
        if (th[j].t_end > t_sub) t_sub = th[j].t_end;
    *rate = (double)total / (t1 - t0);
    *submit_rate = (double)total / (t_sub - t0);
    return 0;
}

static int indep_row(const char *row) {
    gpuos_context *ctx = g_ctx;
    int counts[16], nc = 0;
    for (const char *p = O.threads; *p && nc < 16;) {
        int v = atoi(p);
        if (v < 1 || v > 64) return failmsg("--threads: each count must be 1..64");
        counts[nc++] = v;
        p = strchr(p, ',');
        if (!p) break;
        p++;
    }
    if (nc == 0) return failmsg("--threads: empty list");
    int maxT = 0;
    for (int i = 0; i < nc; i++)
        if (counts[i] > maxT) maxT = counts[i];
    int P = O.pool;
    indep_thread th[64];
    gpuos_tensor *one;
    CK(ctx, gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one));
    for (int j = 0; j < maxT; j++) {
        memset(&th[j], 0, sizeof th[j]);
        th[j].ctx = ctx;
        th[j].one = one;
        th[j].pool = P;
        th[j].in = (gpuos_tensor **)calloc((size_t)P, sizeof(gpuos_tensor *));
        th[j].out = (gpuos_tensor **)calloc((size_t)P, sizeof(gpuos_tensor *));
        if (!th[j].in || !th[j].out) return failmsg("out of host memory");
        for (int k = 0; k < P; k++) {
            if (new_filled(ctx, SMALL_N, (float)k, &th[j].in[k])) return -1;
            int64_t n = SMALL_N;
            CK(ctx, gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &th[j].out[k]));
        }
    }
    printf("INFO %s.warmup_ops %ld\nINFO %s.pool_per_thread %d\n", row, O.indep_ops, row, P);
    double best = -1;
    int bestT = 0;
    for (int c = 0; c < nc; c++) {
        int T = counts[c];
        int warm = reps(1, 1), R = reps(7, 3);
        double rates[64], subs[64], rate, sub;
        if (R > 64) R = 64;
        long ops = O.indep_ops;
        for (int r = 0; r < warm + R; r++) {
            if (indep_once(T, ops, th, &rate, &sub)) return -1;
            if (r == warm - 1 && !O.indep_ops_set) {
                /* about 0.25 s a measurement whatever the rate: 20000 .. 2M ops */
                double want = rate * 0.25;
                ops = want < 20000 ? 20000 : want > 2e6 ? 2000000 : (long)want;
                printf("INFO %s.t%d.ops_per_measurement %ld\n", row, T, ops);
            }
            if (r >= warm) {
                rates[r - warm] = rate;
                subs[r - warm] = sub;
            }
        }
        char name[64];
        snprintf(name, sizeof name, "%s.t%d", row, T);
        double med = median_info(name, rates, R, 1.0);
        qsort(subs, (size_t)R, sizeof *subs, cmp_double);
        printf("INFO %s.t%d.ops_per_s %.6g\nINFO %s.t%d.submit_ops_per_s %.6g\n", row, T, med, row, T,
               subs[R / 2]);
        if (med > best) {
            best = med;
            bestT = T;
        }
    }
    /* out_k = in_k + 1 for every thread's pool */
    for (int j = 0; j < maxT; j++)
        for (int k = 0; k < P; k += (P > 8 ? P / 8 : 1))
            if (check_filled(ctx, th[j].out[k], SMALL_N, (float)k, 1.0)) return -1;
    printf("INFO %s.threads %d\n", row, bestT);
    row_out(row, "ops/s", best);
    for (int j = 0; j < maxT; j++) {
        for (int k = 0; k < P; k++) {
            gpuos_tensor_release(th[j].in[k]);
            gpuos_tensor_release(th[j].out[k]);
        }
        free(th[j].in);
        free(th[j].out);
    }
    gpuos_tensor_release(one);
    return 0;
}

static int row_independent(void) {
    g_indep_many = 0;
    return indep_row("independent");
}
static int row_independent_many(void) {
    g_indep_many = 1;
    const int r = indep_row("independent_many");
    g_indep_many = 0;
    return r;
}

/* ------------------------------------------------------------------ independent_graph */
/* The same adds submitted in batches: one recorded graph of G = 1000 independent
   out_k = in_k + 1 (distinct tensors, as the CUDA graph baseline's 1000 kernel nodes),
   launched back to back (each launch one call and one ring slot; a launch's node k follows
   the previous launch's node k on the same worker), until the last launch's fence (ops/s). */
static int row_independent_graph(void) {
    enum { G = 1000 };
    gpuos_context *ctx = g_ctx;
    gpuos_tensor *in[G], *out[G], *one;
    gpuos_graph *g;
    int64_t n = SMALL_N;
    CK(ctx, gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one));
    for (int k = 0; k < G; k++) {
        if (new_filled(ctx, SMALL_N, (float)(k % 1000), &in[k])) return -1;
        CK(ctx, gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &out[k]));
    }
    CK(ctx, gpuos_graph_create(ctx, &g));
    for (int k = 0; k < G; k++) {
        gpuos_task t = GPUOS_TASK_INIT;
        t.op = GPUOS_OP_ADD, t.out = out[k], t.in[0] = in[k], t.in[1] = one;
        CK(ctx, gpuos_graph_add(g, &t, NULL));
    }
    int warm = reps(1, 1), R = reps(7, 3);
    long launches = O.indep_ops / G > 0 ? O.indep_ops / G : 1;
    double *rates = (double *)malloc((size_t)R * sizeof(double));
    if (!rates) return failmsg("out of host memory");
    for (int r = 0; r < warm + R; r++) {
        uint64_t seq = 0;
        double t0 = now_s();
        for (long i = 0; i < launches; i++) CK(ctx, gpuos_graph_launch(g, NULL, 0, NULL, 0, &seq));
        double t1 = now_s();
        CK(ctx, gpuos_wait_fence(ctx, seq, WAIT_MS));
        double t2 = now_s();
        if (r == warm - 1 && !O.indep_ops_set) { /* about 0.25 s a measurement */
            double want = (double)launches * G / (t2 - t0) * 0.25 / G;
            launches = want < 2 ? 2 : want > 20000 ? 20000 : (long)want;
            printf("INFO independent_graph.launches_per_measurement %ld\n", launches);
        }
        if (r >= warm) {
            rates[r - warm] = (double)launches * G / (t2 - t0);
            printf("INFO independent_graph.submit_us_per_launch %.3f\n", (t1 - t0) / launches * 1e6);
        }
    }
    for (int k = 0; k < G; k += G / 8)
        if (check_filled(ctx, out[k], SMALL_N, (float)(k % 1000), 1.0)) return -1;
    printf("INFO independent_graph.nodes %d\n", G);
    row_out("independent_graph", "ops/s", median_info("independent_graph", rates, R, 1.0));
    gpuos_graph_release(g);
    for (int k = 0; k < G; k++) {
        gpuos_tensor_release(in[k]);
        gpuos_tensor_release(out[k]);
    }
    gpuos_tensor_release(one);
    free(rates);
    return 0;
}

/* ------------------------------------------------------------------ large_elementwise */
static int row_large(void) {
    gpuos_context *ctx = g_ctx;
    int64_t n = O.large_n;
    gpuos_tensor *a, *b, *out;
    if (new_filled(ctx, n, 1.0f, &a)) return -1;
    if (new_filled(ctx, n, 0.0f, &b)) return -1;
    CK(ctx, gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &out));
    int K = O.large_k;
    int warm = reps(2, 1), R = reps(15, 3);
    double *t = (double *)malloc((size_t)R * sizeof(double));
    if (!t) return failmsg("out of host memory");
    for (int r = 0; r < warm + R; r++) {
        double t0 = now_s();
        for (int k = 0; k < K; k++) CK(ctx, gpuos_add(ctx, out, a, b));
        uint64_t seq = gpuos_fence(ctx);
        CK(ctx, gpuos_wait_fence(ctx, seq, WAIT_MS));
        double t1 = now_s();
        if (r >= warm) t[r - warm] = (t1 - t0) / K;
    }
    double med = median_info("large_elementwise.seconds_per_op", t, R, 1.0);
    free(t);
    /* out = (1 + f(i)) + (0 + f(i)) = 1 + 2 f(i): check_filled's pattern with base 1 holds 1 + f(i) */
    float *h = (float *)malloc((size_t)n * sizeof(float));
    if (!h) return failmsg("out of host memory");
    gpuos_status st = gpuos_download(ctx, out, h, (size_t)n * sizeof(float));
    if (st != GPUOS_OK) {
        free(h);
        return fail(ctx, "download (check)", st);
    }
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (h[i] != 1.0f + 2.0f * ((float)(i % 97) * 0.25f)) bad++;
    free(h);
    if (bad) return failmsg("wrong result in large_elementwise");
    double bytes = 3.0 * (double)n * sizeof(float);
    printf("INFO large_elementwise.elements %lld\nINFO large_elementwise.ops_per_timing %d\n", (long long)n, K);
    row_out("large_elementwise", "GB/s", bytes / med / 1e9);
    gpuos_tensor_release(a);
    gpuos_tensor_release(b);
    gpuos_tensor_release(out);
    return 0;
}

/* ------------------------------------------------------------------ cold_start, warm_start */
/* The child: time gpuos_create + fill + add + download of 4096 floats (first result on the
   host), then the same again in the same process (driver already initialised). Prints
   "CHILD first <s>" and "CHILD second <s>". */
static int child_once(const char *cache_dir, double *secs) {
    double t0 = now_s();
    gpuos_config cfg = make_config(cache_dir);
    gpuos_context *ctx;
    gpuos_status st = gpuos_create(&cfg, &ctx);
    if (st != GPUOS_OK) return fail(NULL, "gpuos_create", st);
    gpuos_tensor *x, *one;
    int64_t n = SMALL_N;
    float h[SMALL_N];
    CK(ctx, gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &x));
    CK(ctx, gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one));
    CK(ctx, gpuos_fill(ctx, x, 1.5));
    CK(ctx, gpuos_add(ctx, x, x, one));
    CK(ctx, gpuos_download(ctx, x, h, sizeof h));
    *secs = now_s() - t0;
    for (int i = 0; i < SMALL_N; i++)
        if (h[i] != 2.5f) return failmsg("child: wrong first result");
    {
        static int nth;
        double dr, cx, cd, rs;
        gpuos_debug_create_times(ctx, &dr, &cx, &cd, &rs);
        int np;
        double cm, sm, lm;
        gpuos_debug_compile_times(ctx, &np, &cm, &sm, &lm);
        if (cm > 0)
            printf("INFO child.compile %d NVRTC programs: %.0f ms until linked, the slowest %.0f ms, link %.0f ms\n", np,
                   cm, sm, lm);
        printf("INFO child.create_ms %s cuInit %.1f, context %.1f, device code %.1f, rest %.1f; first result "
               "%.1f\n", nth++ ? "second" : "first", dr, cx, cd, rs, *secs * 1e3 - (dr + cx + cd + rs));
    }
    static int said;
    if (!said++) printf("INFO child.backend %s\n", gpuos_context_backend(ctx) == GPUOS_BACKEND_CUDA ? "cuda" : "host");
    gpuos_tensor_release(x);
    gpuos_tensor_release(one);
    gpuos_destroy(ctx);
    return 0;
}

static int child_main(const char *cache_dir) {
    alarm(300); /* a hung start must not hang the benchmark */
    cur_row = "start_child";
    double first, second;
    if (child_once(cache_dir, &first)) return 1;
    if (child_once(cache_dir, &second)) return 1;
    printf("CHILD first %.9g\nCHILD second %.9g\n", first, second);
    return 0;
}

static int said_backend; /* print the child's backend once per row */

/* Runs the child on cache_dir (with CUDA's JIT cache inside it too), returns its two times. */
static int run_child(const char *cache_dir, double *first, double *second) {
    int fd[2];
    if (pipe(fd) != 0) return failmsg("pipe failed");
    char jit[4200];
    snprintf(jit, sizeof jit, "%s/cuda-jit-cache", cache_dir);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return failmsg("fork failed");
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        setenv("GPUOS_CACHE_DIR", cache_dir, 1);
        setenv("CUDA_CACHE_PATH", jit, 1);
        char devbuf[32];
        snprintf(devbuf, sizeof devbuf, "%d", O.device);
        char qbuf[32];
        snprintf(qbuf, sizeof qbuf, "%u", O.queue);
        if (O.host)
            execl(O.self, O.self, "--host", "--queue", qbuf, "--child-start", cache_dir, (char *)NULL);
        else
            execl(O.self, O.self, "--device", devbuf, "--queue", qbuf, "--child-start", cache_dir, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    FILE *f = fdopen(fd[0], "r");
    char line[1024];
    int got = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "CHILD first %lf", first) == 1)
            got |= 1;
        else if (sscanf(line, "CHILD second %lf", second) == 1)
            got |= 2;
        else if (strncmp(line, "FAIL ", 5) == 0)
            printf("FAIL %s child: %s", cur_row, line + 5);
        else if (strncmp(line, "INFO child.backend ", 19) == 0 && !said_backend++)
            printf("INFO %s.backend %s", cur_row, line + 19);
        else if (strncmp(line, "INFO child.create_ms ", 21) == 0)
            printf("INFO %s.create_ms.%s", cur_row, line + 21);
        else if (strncmp(line, "INFO child.compile ", 19) == 0)
            printf("INFO %s.compile %s", cur_row, line + 19);
    }
    if (f) fclose(f);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got != 3 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "child failed (exit %d, signal %d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                 WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        return failmsg(msg);
    }
    return 0;
}

static long long dir_bytes_acc;
static int dir_bytes_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)p, (void)ftw;
    if (flag == FTW_F) dir_bytes_acc += (long long)sb->st_size;
    return 0;
}
static long long dir_bytes(const char *dir) {
    dir_bytes_acc = 0;
    nftw(dir, dir_bytes_cb, 16, FTW_PHYS);
    return dir_bytes_acc;
}
static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    remove(p);
    return 0;
}
static void rm_rf(const char *dir) { nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS); }

static char start_dir[4096]; /* the cache dir the cold runs filled, reused by warm_start */

static const char *tmp_base(void) {
    const char *t = getenv("TMPDIR");
    return (t && *t) ? t : "/tmp";
}

static int row_cold_start(void) {
    said_backend = 0;
    int R = O.cold_reps > 0 ? O.cold_reps : reps(3, 1);
    double t_row = now_s();
    double v[16], first, second;
    if (R > 16) R = 16;
    for (int r = 0; r < R; r++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/gpuos-bench-cold-XXXXXX", tmp_base());
        if (!mkdtemp(dir)) return failmsg("mkdtemp failed");
        int rc = run_child(dir, &first, &second);
        if (rc == 0) printf("INFO cold_start.cache_bytes %lld\n", dir_bytes(dir));
        if (start_dir[0]) rm_rf(start_dir);
        snprintf(start_dir, sizeof start_dir, "%s", dir);
        if (rc) return -1;
        v[r] = first;
        printf("INFO cold_start.run%d first=%.4f s, second in-process=%.2f ms\n", r, first, second * 1e3);
        if (r + 1 < R && now_s() - t_row > 60.0) { /* slow cold starts: fewer runs, within the lease */
            printf("INFO cold_start.stopped_after_runs %d\n", r + 1);
            R = r + 1;
        }
    }
    double med = median_info("cold_start", v, R, 1.0);
    row_out("cold_start", "s", med);
    return 0;
}

static int row_warm_start(void) {
    said_backend = 0;
    if (!start_dir[0]) { /* cold_start not run: fill a fresh dir first */
        double first, second;
        snprintf(start_dir, sizeof start_dir, "%s/gpuos-bench-warm-XXXXXX", tmp_base());
        if (!mkdtemp(start_dir)) {
            start_dir[0] = 0;
            return failmsg("mkdtemp failed");
        }
        if (run_child(start_dir, &first, &second)) return -1;
    }
    int R = O.warm_reps > 0 ? O.warm_reps : reps(7, 3);
    double v[32], w[32], first, second;
    if (R > 32) R = 32;
    for (int r = 0; r < R; r++) {
        if (run_child(start_dir, &first, &second)) return -1;
        v[r] = first;
        w[r] = second;
    }
    double med = median_info("warm_start", v, R, 1e3);
    double med2 = median_info("warm_start.inprocess_second_create", w, R, 1e3);
    printf("INFO warm_start.inprocess_second_create_ms %.4g\n", med2 * 1e3);
    row_out("warm_start", "ms", med * 1e3);
    return 0;
}

/* ------------------------------------------------------------------ run-time operators */
static gpuos_op_def rt_def(const char *name, const char *src) {
    gpuos_op_def d = GPUOS_OP_DEF_INIT;
    d.name = name;
    d.source = src;
    d.n_inputs = 1;
    d.out_dtype = d.in_dtype[0] = GPUOS_F32;
    return d;
}

/* Defines src and runs it once on x (x = op(x)) until a 4-byte download sees the result. */
static int rt_define_once(gpuos_context *ctx, const char *src, gpuos_tensor *x, double *secs) {
    gpuos_op_def d = rt_def("bench_op", src);
    gpuos_op op;
    gpuos_task t = GPUOS_TASK_INIT;
    float v;
    double t0 = now_s();
    CK(ctx, gpuos_op_define(ctx, &d, &op));
    t.op = op;
    t.out = x;
    t.in[0] = x;
    CK(ctx, gpuos_submit(ctx, &t, NULL));
    CK(ctx, gpuos_download(ctx, x, &v, sizeof v));
    *secs = now_s() - t0;
    CK(ctx, gpuos_op_remove(ctx, op));
    return 0;
}

/* define_cold_ms: a body never seen before (nothing cached); the NVRTC time of the same
   compile is reported as the baseline column nvrtc_plus_50 (the target: at most that). */
static int row_define_cold(void) {
    gpuos_context *ctx = g_ctx;
    gpuos_tensor *x;
    int R = reps(5, 2);
    double t[16], nv[16], lk[16], sw[16];
    char src[128];
    if (new_filled(ctx, 1, 1.0f, &x)) return -1;
    if (R > 16) R = 16;
    for (int r = 0; r < R; r++) {
        snprintf(src, sizeof src, "out = a * 0.5f + %d.0f; /* %.0f */", r, now_s() * 1e6);
        if (rt_define_once(ctx, src, x, &t[r])) return -1;
        gpuos_debug_rt_times(ctx, &nv[r], &lk[r], &sw[r]);
        printf("INFO define_cold.run%d total_ms %.2f nvrtc_ms %.2f link_ms %.2f swap_ms %.3f\n", r, t[r] * 1e3, nv[r],
               lk[r], sw[r]);
    }
    double med = median_info("define_cold", t, R, 1e3);
    double mnv = median_info("define_cold.nvrtc", nv, R, 1.0);
    row_out("define_cold_ms", "ms", med * 1e3);
    printf("ROW define_cold_ms/nvrtc_plus_50 ms %.6g\n", mnv + 50.0);
    gpuos_tensor_release(x);
    return 0;
}

/* define_warm_ms: the same body again (its object and module generation come from the disk cache). */
static int row_define_warm(void) {
    gpuos_context *ctx = g_ctx;
    gpuos_tensor *x;
    int R = reps(9, 3);
    double t[32], sw[32];
    const char *src = "out = a * 0.5f + 3.0f; /* define_warm */";
    if (new_filled(ctx, 1, 1.0f, &x)) return -1;
    if (R > 32) R = 32;
    if (rt_define_once(ctx, src, x, &t[0])) return -1; /* fills the cache */
    for (int r = 0; r < R; r++) {
        if (rt_define_once(ctx, src, x, &t[r])) return -1;
        gpuos_debug_rt_times(ctx, NULL, NULL, &sw[r]);
    }
    double med = median_info("define_warm", t, R, 1e3);
    median_info("define_warm.swap", sw, R, 1.0);
    row_out("define_warm_ms", "ms", med * 1e3);
    gpuos_tensor_release(x);
    return 0;
}

/* A thread that streams tiny tasks: each is a built-in add waited for, its completion time kept. */
typedef struct {
    gpuos_context *ctx;
    gpuos_tensor *x, *one;
    volatile int stop;
    double *done_at;
    long n, cap;
    gpuos_status st;
} rt_streamer;

static void *rt_stream_main(void *arg) {
    rt_streamer *s = (rt_streamer *)arg;
    while (!s->stop && s->n < s->cap) {
        gpuos_status st = gpuos_add(s->ctx, s->x, s->x, s->one);
        if (st == GPUOS_OK) st = gpuos_wait_fence(s->ctx, gpuos_fence(s->ctx), WAIT_MS);
        if (st != GPUOS_OK) {
            s->st = st;
            break;
        }
        s->done_at[s->n++] = now_s();
    }
    return NULL;
}

/* swap_pause_us: the longest gap between two completions of a stream of tiny tasks (each
   waited for) while a redefinition swaps the module; the median over swaps. */
static int row_swap_pause(void) {
    gpuos_context *ctx = g_ctx;
    rt_streamer s;
    pthread_t th;
    gpuos_op op;
    int R = reps(20, 6);
    double gaps[64], swaps[64], worst = 0;
    const char *src[2] = {"out = a + 1.0f; /* A */", "out = a + 1.0f; /* B */"};
    gpuos_op_def d = rt_def("bench_swap", src[0]);
    memset(&s, 0, sizeof s);
    s.ctx = ctx;
    s.cap = 4000000;
    s.done_at = (double *)malloc((size_t)s.cap * sizeof(double));
    if (!s.done_at) return failmsg("out of host memory");
    if (new_filled(ctx, 64, 0.0f, &s.x)) return -1;
    CK(ctx, gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &s.one));
    CK(ctx, gpuos_op_define(ctx, &d, &op));
    d.source = src[1];
    CK(ctx, gpuos_op_redefine(ctx, op, &d)); /* both versions compiled and cached */
    if (R > 64) R = 64;
    if (pthread_create(&th, NULL, rt_stream_main, &s) != 0) return failmsg("pthread_create failed");
    for (int r = 0; r < R; r++) {
        struct timespec ts = {0, 3000000};
        nanosleep(&ts, NULL); /* the stream runs alone for a while */
        long n0 = s.n;
        d.source = src[r & 1];
        gpuos_status st = gpuos_op_redefine(ctx, op, &d);
        gpuos_debug_rt_times(ctx, NULL, NULL, &swaps[r]); /* the swap's own part: drain, stop, load, table */
        swaps[r] *= 1e-3;
        nanosleep(&ts, NULL);
        long n1 = s.n;
        if (st != GPUOS_OK) {
            s.stop = 1;
            pthread_join(th, NULL);
            return fail(ctx, "gpuos_op_redefine", st);
        }
        double g = 0;
        for (long i = n0 > 0 ? n0 : 1; i < n1; i++)
            if (s.done_at[i] - s.done_at[i - 1] > g) g = s.done_at[i] - s.done_at[i - 1];
        gaps[r] = g;
        if (g > worst) worst = g;
    }
    s.stop = 1;
    pthread_join(th, NULL);
    if (s.st != GPUOS_OK) return fail(ctx, "stream", s.st);
    double med = median_info("swap_pause", gaps, R, 1e6);
    median_info("swap_pause.swap", swaps, R, 1e6);
    printf("INFO swap_pause.worst_us %.1f\nINFO swap_pause.stream_tasks %ld\n", worst * 1e6, s.n);
    row_out("swap_pause_us", "us", med * 1e6);
    CK(ctx, gpuos_op_remove(ctx, op));
    free(s.done_at);
    gpuos_tensor_release(s.x);
    gpuos_tensor_release(s.one);
    return 0;
}

/* swap_lost_tasks: 100 redefinitions while 4 threads stream x = x + 1 (two through the
   redefined operator, two through the built-in add), no waits; lost, repeated or reordered
   tasks show as a wrong final count (the row's value: the sum of the differences). */
typedef struct {
    gpuos_context *ctx;
    gpuos_op op;
    gpuos_tensor *x, *one;
    volatile int *stop;
    long n;
    gpuos_status st;
} rt_loader;

static void *rt_load_main(void *arg) {
    rt_loader *l = (rt_loader *)arg;
    gpuos_task t = GPUOS_TASK_INIT;
    t.op = l->op;
    t.out = l->x;
    t.in[0] = l->x;
    while (!*l->stop) {
        gpuos_status st = l->one ? gpuos_add(l->ctx, l->x, l->x, l->one) : gpuos_submit(l->ctx, &t, NULL);
        if (st != GPUOS_OK) {
            l->st = st;
            break;
        }
        l->n++;
    }
    return NULL;
}

static int row_swap_lost(void) {
    gpuos_context *ctx = g_ctx;
    rt_loader l[4];
    pthread_t th[4];
    volatile int stop = 0;
    gpuos_op op;
    gpuos_tensor *one;
    const int swaps = O.quick ? 20 : 100;
    const char *src[2] = {"out = a + 1.0f; /* A */", "out = a + 1.0f; /* B */"};
    gpuos_op_def d = rt_def("bench_swap", src[0]);
    double lost = 0;
    CK(ctx, gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one));
    CK(ctx, gpuos_op_define(ctx, &d, &op));
    for (int k = 0; k < 4; k++) {
        memset(&l[k], 0, sizeof l[k]);
        l[k].ctx = ctx;
        l[k].op = op;
        l[k].one = k < 2 ? NULL : one;
        l[k].stop = &stop;
        if (new_filled(ctx, 256, 0.0f, &l[k].x)) return -1;
        CK(ctx, gpuos_fill(ctx, l[k].x, 0.0));
    }
    for (int k = 0; k < 4; k++)
        if (pthread_create(&th[k], NULL, rt_load_main, &l[k]) != 0) return failmsg("pthread_create failed");
    gpuos_status st = GPUOS_OK;
    for (int r = 0; r < swaps && st == GPUOS_OK; r++) {
        d.source = src[(r + 1) & 1];
        st = gpuos_op_redefine(ctx, op, &d);
    }
    stop = 1;
    for (int k = 0; k < 4; k++) pthread_join(th[k], NULL);
    if (st != GPUOS_OK) return fail(ctx, "gpuos_op_redefine", st);
    CK(ctx, gpuos_wait(ctx, WAIT_MS));
    long total = 0;
    for (int k = 0; k < 4; k++) {
        float h[256];
        if (l[k].st != GPUOS_OK) return fail(ctx, "streaming thread", l[k].st);
        CK(ctx, gpuos_download(ctx, l[k].x, h, sizeof h));
        for (int i = 0; i < 256; i++) lost += fabs((double)h[i] - (double)l[k].n); /* n < 2^24: exact */
        total += l[k].n;
        gpuos_tensor_release(l[k].x);
    }
    printf("INFO swap_lost_tasks.swaps %d\nINFO swap_lost_tasks.tasks %ld\n", swaps, total);
    row_out("swap_lost_tasks", "tasks", lost);
    CK(ctx, gpuos_op_remove(ctx, op));
    gpuos_tensor_release(one);
    return 0;
}

/* ------------------------------------------------------------------ branchy_dag */
/* 8 independent chains of 50 in-place x_c = x_c + one on 4096 floats, joined by out = x_0 +
   x_1, out = out + x_2, ...: one recorded graph, us per launch until its fence is done (the
   eager submission of the same 407 tasks is reported as INFO). */
static int row_branchy_dag(void) {
    enum { C = 8, L = 50 };
    gpuos_context *ctx = g_ctx;
    gpuos_tensor *x[C], *out, *one;
    gpuos_graph *g;
    gpuos_task t = GPUOS_TASK_INIT;
    int warm = reps(20, 5), R = reps(200, 30);
    double *tm = (double *)malloc((size_t)R * sizeof(double)), *te = (double *)malloc((size_t)R * sizeof(double));
    if (!tm || !te) return failmsg("out of host memory");
    CK(ctx, gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one));
    for (int c = 0; c < C; c++)
        if (new_filled(ctx, SMALL_N, (float)c, &x[c])) return -1;
    if (new_filled(ctx, SMALL_N, 0.0f, &out)) return -1;
    CK(ctx, gpuos_graph_create(ctx, &g));
    for (int c = 0; c < C; c++)
        for (int i = 0; i < L; i++) {
            t.op = GPUOS_OP_ADD, t.out = x[c], t.in[0] = x[c], t.in[1] = one;
            CK(ctx, gpuos_graph_add(g, &t, NULL));
        }
    t.op = GPUOS_OP_ADD, t.out = out, t.in[0] = x[0], t.in[1] = x[1];
    CK(ctx, gpuos_graph_add(g, &t, NULL));
    for (int c = 2; c < C; c++) {
        t.out = out, t.in[0] = out, t.in[1] = x[c];
        CK(ctx, gpuos_graph_add(g, &t, NULL));
    }
    if (time_graph(ctx, g, warm, R, 1, tm)) return -1;
    /* eager: the same tasks through gpuos_submit */
    for (int r = 0; r < warm + R; r++) {
        double t0 = now_s();
        for (int c = 0; c < C; c++)
            for (int i = 0; i < L; i++) CK(ctx, gpuos_add(ctx, x[c], x[c], one));
        CK(ctx, gpuos_add(ctx, out, x[0], x[1]));
        for (int c = 2; c < C; c++) CK(ctx, gpuos_add(ctx, out, out, x[c]));
        CK(ctx, gpuos_wait_fence(ctx, gpuos_fence(ctx), WAIT_MS));
        if (r >= warm) te[r - warm] = now_s() - t0;
    }
    {
        float *h = (float *)malloc(SMALL_N * sizeof(float));
        if (!h) return failmsg("out of host memory");
        CK(ctx, gpuos_download(ctx, out, h, SMALL_N * sizeof(float)));
        for (int i = 0; i < SMALL_N; i++) {
            double want = 0;
            for (int c = 0; c < C; c++) want += (double)c + (double)(i % 97) * 0.25 + (double)L * 2 * (warm + R);
            if (fabs(h[i] - want) > 1e-3 * fabs(want)) {
                free(h);
                return failmsg("branchy_dag: wrong result");
            }
        }
        free(h);
    }
    double med = median_info("branchy_dag", tm, R, 1e6);
    double mede = median_info("branchy_dag.eager", te, R, 1e6);
    printf("INFO branchy_dag.eager_us %.2f\n", mede * 1e6);
    row_out("branchy_dag", "us", med * 1e6);
    gpuos_graph_release(g);
    for (int c = 0; c < C; c++) gpuos_tensor_release(x[c]);
    gpuos_tensor_release(out);
    gpuos_tensor_release(one);
    free(tm);
    free(te);
    return 0;
}

/* ------------------------------------------------------------------ tiny_mlp */
/* 8 layers of [h = x @ W (8x256 by 256x256), h = h + bias, h = gelu(h), h = h + x,
   x = layernorm(h)] as one recorded graph: us per forward until its fence is done; checked
   against a double-precision C forward (eager submission of the same 40 tasks: INFO). */
static uint64_t mlp_rng = 0x853c49e6748fea9bull;
static float mlp_rand(float lo, float hi) {
    mlp_rng = mlp_rng * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (float)((mlp_rng >> 40) / 16777216.0);
}
static int row_tiny_mlp(void) {
    enum { B = 8, H = 256, NL = 8 };
    gpuos_context *ctx = g_ctx;
    gpuos_tensor *x[NL + 1], *h[NL], *w[NL], *bias[NL];
    gpuos_graph *g;
    int64_t sx[2] = {B, H}, sw[2] = {H, H}, sb[1] = {H};
    float *hw = (float *)malloc(sizeof(float) * NL * H * H), *hb = (float *)malloc(sizeof(float) * NL * H);
    float hx[B * H], got[B * H];
    double ref[B * H], tmp[B * H];
    int warm = reps(50, 10), R = reps(500, 50);
    double *tm = (double *)malloc((size_t)R * sizeof(double)), *te = (double *)malloc((size_t)R * sizeof(double));
    if (!hw || !hb || !tm || !te) return failmsg("out of host memory");
    for (int i = 0; i < NL * H * H; i++) hw[i] = mlp_rand(-0.0625f, 0.0625f);
    for (int i = 0; i < NL * H; i++) hb[i] = mlp_rand(-0.1f, 0.1f);
    for (int i = 0; i < B * H; i++) hx[i] = mlp_rand(-1.0f, 1.0f);
    for (int l = 0; l <= NL; l++) CK(ctx, gpuos_tensor_new(ctx, GPUOS_F32, 2, sx, &x[l]));
    for (int l = 0; l < NL; l++) {
        CK(ctx, gpuos_tensor_new(ctx, GPUOS_F32, 2, sx, &h[l]));
        CK(ctx, gpuos_tensor_new(ctx, GPUOS_F32, 2, sw, &w[l]));
        CK(ctx, gpuos_tensor_new(ctx, GPUOS_F32, 1, sb, &bias[l]));
        CK(ctx, gpuos_upload(ctx, w[l], hw + (size_t)l * H * H, sizeof(float) * H * H));
        CK(ctx, gpuos_upload(ctx, bias[l], hb + (size_t)l * H, sizeof(float) * H));
    }
    CK(ctx, gpuos_upload(ctx, x[0], hx, sizeof hx));
    CK(ctx, gpuos_graph_create(ctx, &g));
    for (int l = 0; l < NL; l++) {
        gpuos_task t = GPUOS_TASK_INIT;
        t.op = GPUOS_OP_MATMUL, t.out = h[l], t.in[0] = x[l], t.in[1] = w[l];
        CK(ctx, gpuos_graph_add(g, &t, NULL));
        t.op = GPUOS_OP_ADD, t.out = h[l], t.in[0] = h[l], t.in[1] = bias[l];
        CK(ctx, gpuos_graph_add(g, &t, NULL));
        t.op = GPUOS_OP_GELU, t.in[1] = NULL;
        CK(ctx, gpuos_graph_add(g, &t, NULL));
        t.op = GPUOS_OP_ADD, t.in[1] = x[l];
        CK(ctx, gpuos_graph_add(g, &t, NULL));
        t.op = GPUOS_OP_LAYERNORM, t.out = x[l + 1], t.in[0] = h[l], t.in[1] = NULL, t.scalar[0] = 1e-5;
        CK(ctx, gpuos_graph_add(g, &t, NULL));
    }
    if (time_graph(ctx, g, warm, R, 1, tm)) return -1;
    for (int r = 0; r < warm + R; r++) {
        double t0 = now_s();
        for (int l = 0; l < NL; l++) {
            CK(ctx, gpuos_matmul(ctx, h[l], x[l], w[l]));
            CK(ctx, gpuos_add(ctx, h[l], h[l], bias[l]));
            CK(ctx, gpuos_gelu(ctx, h[l], h[l]));
            CK(ctx, gpuos_add(ctx, h[l], h[l], x[l]));
            CK(ctx, gpuos_layernorm(ctx, x[l + 1], h[l], NULL, NULL, 1e-5));
        }
        CK(ctx, gpuos_wait_fence(ctx, gpuos_fence(ctx), WAIT_MS));
        if (r >= warm) te[r - warm] = now_s() - t0;
    }
    /* the same forward in double precision */
    for (int i = 0; i < B * H; i++) ref[i] = hx[i];
    for (int l = 0; l < NL; l++) {
        for (int b = 0; b < B; b++)
            for (int j = 0; j < H; j++) {
                double a = 0;
                for (int k = 0; k < H; k++) a += ref[b * H + k] * hw[(size_t)l * H * H + (size_t)k * H + j];
                a += hb[l * H + j];
                a = 0.5 * a * (1.0 + erf(a / sqrt(2.0)));
                tmp[b * H + j] = a + ref[b * H + j];
            }
        for (int b = 0; b < B; b++) {
            double m = 0, v = 0;
            for (int j = 0; j < H; j++) m += tmp[b * H + j];
            m /= H;
            for (int j = 0; j < H; j++) v += (tmp[b * H + j] - m) * (tmp[b * H + j] - m);
            v /= H;
            for (int j = 0; j < H; j++) ref[b * H + j] = (tmp[b * H + j] - m) / sqrt(v + 1e-5);
        }
    }
    CK(ctx, gpuos_download(ctx, x[NL], got, sizeof got));
    {
        double worst = 0;
        for (int i = 0; i < B * H; i++)
            if (fabs(got[i] - ref[i]) > worst) worst = fabs(got[i] - ref[i]);
        printf("INFO tiny_mlp.max_abs_diff_vs_double %.3g\n", worst);
        if (!(worst < 2e-3)) return failmsg("tiny_mlp: the forward differs from the double-precision reference");
    }
    double med = median_info("tiny_mlp", tm, R, 1e6);
    double mede = median_info("tiny_mlp.eager", te, R, 1e6);
    printf("INFO tiny_mlp.eager_us %.2f\n", mede * 1e6);
    row_out("tiny_mlp", "us", med * 1e6);
    gpuos_graph_release(g);
    for (int l = 0; l <= NL; l++) gpuos_tensor_release(x[l]);
    for (int l = 0; l < NL; l++) {
        gpuos_tensor_release(h[l]);
        gpuos_tensor_release(w[l]);
        gpuos_tensor_release(bias[l]);
    }
    free(hw);
    free(hb);
    free(tm);
    free(te);
    return 0;
}

/* ------------------------------------------------------------------ the table */
/* ------------------------------------------------------------------ pipeline_jobs */
/* A stream of independent jobs, each: copy-in of 4096 floats from a pinned tensor, 20
   dependent in-place adds, copy-out to a pinned tensor (gpuos_tensor_new_pinned; the
   copies are tasks, no blocking upload or download); one recorded graph per job slot, 8
   slots, a slot reused once its previous job's fence is done: jobs/s. */
static int row_pipeline_jobs(void) {
    enum { S = 8, OPS = 20 };
    gpuos_context *ctx = g_ctx;
    gpuos_tensor *pin_in[S], *pin_out[S], *x[S], *one;
    gpuos_graph *g[S];
    uint64_t fence[S];
    int64_t n = SMALL_N;
    const int jobs = reps(4000, 400), R = reps(5, 2);
    double *t = (double *)malloc((size_t)R * sizeof(double));
    if (!t) return failmsg("out of host memory");
    CK(ctx, gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one));
    for (int s = 0; s < S; s++) {
        gpuos_task k = GPUOS_TASK_INIT;
        CK(ctx, gpuos_tensor_new_pinned(ctx, GPUOS_F32, 1, &n, &pin_in[s]));
        CK(ctx, gpuos_tensor_new_pinned(ctx, GPUOS_F32, 1, &n, &pin_out[s]));
        CK(ctx, gpuos_tensor_new(ctx, GPUOS_F32, 1, &n, &x[s]));
        float *h = (float *)gpuos_tensor_host_data(pin_in[s]);
        for (int i = 0; i < SMALL_N; i++) h[i] = (float)(s + i % 97);
        CK(ctx, gpuos_graph_create(ctx, &g[s]));
        k.op = GPUOS_OP_COPY, k.out = x[s], k.in[0] = pin_in[s];
        CK(ctx, gpuos_graph_add(g[s], &k, NULL));
        k.op = GPUOS_OP_ADD, k.out = x[s], k.in[0] = x[s], k.in[1] = one;
        for (int i = 0; i < OPS; i++) CK(ctx, gpuos_graph_add(g[s], &k, NULL));
        k.op = GPUOS_OP_COPY, k.out = pin_out[s], k.in[0] = x[s], k.in[1] = NULL;
        CK(ctx, gpuos_graph_add(g[s], &k, NULL));
        fence[s] = 0;
    }
    double t_launch = 0, t_wait = 0; /* host time inside the calls, last run */
    for (int r = 0; r < R + 1; r++) { /* the first run warms up */
        double t0 = now_s();
        t_launch = t_wait = 0;
        for (int j = 0; j < jobs; j++) {
            const int s = j % S;
            double a = now_s();
            if (j >= S) CK(ctx, gpuos_wait_fence(ctx, fence[s], WAIT_MS));
            double b = now_s();
            CK(ctx, gpuos_graph_launch(g[s], NULL, 0, NULL, 0, &fence[s]));
            t_wait += b - a;
            t_launch += now_s() - b;
        }
        CK(ctx, gpuos_wait(ctx, WAIT_MS));
        if (r > 0) t[r - 1] = (now_s() - t0) / jobs;
    }
    printf("INFO pipeline_jobs.launch_us %.2f\nINFO pipeline_jobs.wait_us %.2f\n", t_launch / jobs * 1e6,
           t_wait / jobs * 1e6);
    for (int s = 0; s < S; s++) {
        const float *h = (const float *)gpuos_tensor_host_data(pin_out[s]);
        for (int i = 0; i < SMALL_N; i++)
            if (h[i] != (float)(s + i % 97) + OPS) return failmsg("pipeline_jobs: wrong result");
    }
    double med = median_info("pipeline_jobs", t, R, 1e6);
    free(t);
    row_out("pipeline_jobs", "jobs/s", 1.0 / med);
    for (int s = 0; s < S; s++) {
        gpuos_graph_release(g[s]);
        gpuos_tensor_release(pin_in[s]);
        gpuos_tensor_release(pin_out[s]);
        gpuos_tensor_release(x[s]);
    }
    gpuos_tensor_release(one);
    return 0;
}

/* ------------------------------------------------------------------ priority_latency */
/* A short high-priority job (5 dependent adds on 4096 floats, eager tasks at
   GPUOS_PRIORITY_HIGH) submitted while a long normal job runs (LONG dependent adds on 1M
   floats, several ms of work): latency from its first submission until gpuos_wait_task
   sees its last task done; `alone`: the same job on an otherwise idle device. INFO: the
   short job at normal priority behind the long one. */
static uint64_t prio_short(gpuos_context *ctx, gpuos_tensor *y, gpuos_tensor *one, int prio, gpuos_status *st) {
    uint64_t seq = 0;
    for (int i = 0; i < 5 && *st == GPUOS_OK; i++) {
        gpuos_task k = GPUOS_TASK_INIT;
        k.op = GPUOS_OP_ADD, k.out = y, k.in[0] = y, k.in[1] = one, k.priority = prio;
        *st = gpuos_submit(ctx, &k, &seq);
    }
    return seq;
}

/* The long normal job: n dependent adds x = x + 1. */
static int prio_long(gpuos_context *ctx, gpuos_tensor *x, gpuos_tensor *one, int n) {
    for (int i = 0; i < n; i++) {
        gpuos_task k = GPUOS_TASK_INIT;
        k.op = GPUOS_OP_ADD, k.out = x, k.in[0] = x, k.in[1] = one;
        CK(ctx, gpuos_submit(ctx, &k, NULL));
    }
    return 0;
}

static int prio_sleep_us(int us) {
    struct timespec ts = {0, (long)us * 1000L};
    return nanosleep(&ts, NULL);
}

static int row_priority_latency(void) {
    gpuos_context *ctx = g_ctx;
    gpuos_tensor *x, *y, *one;
    const int64_t big = O.host ? (1 << 18) : (1 << 20);
    const int LONG = O.host ? 400 : 3000, R = reps(15, 4);
    double *ta = (double *)malloc((size_t)R * sizeof(double)), *tl = (double *)malloc((size_t)R * sizeof(double));
    double *ts = (double *)malloc((size_t)R * sizeof(double)); /* of tl: the submission alone */
    double long_s = 0, normal_s = 0;
    float yv = 0.f, xv = 0.f;
    gpuos_status st = GPUOS_OK;
    if (!ta || !tl || !ts) return failmsg("out of host memory");
    if (new_filled(ctx, big, 0.f, &x) || new_filled(ctx, SMALL_N, 0.f, &y)) return -1;
    CK(ctx, gpuos_tensor_scalar(ctx, GPUOS_F32, 1.0, &one));
    CK(ctx, gpuos_wait(ctx, WAIT_MS));
    for (int r = 0; r < R + 1; r++) { /* alone, then behind the long job, alternately; the first round warms up */
        double t0 = now_s();
        uint64_t s = prio_short(ctx, y, one, GPUOS_PRIORITY_HIGH, &st);
        if (st != GPUOS_OK) return fail(ctx, "gpuos_submit", st);
        CK(ctx, gpuos_wait_task(ctx, s, WAIT_MS));
        if (r > 0) ta[r - 1] = now_s() - t0;
        yv += 5.f;
        t0 = now_s();
        if (prio_long(ctx, x, one, LONG)) return -1;
        xv += (float)LONG;
        if (r == 0) { /* the long job alone, for the record */
            CK(ctx, gpuos_wait(ctx, WAIT_MS));
            long_s = now_s() - t0;
            continue;
        }
        prio_sleep_us(300); /* the long job is running */
        double t1 = now_s();
        s = prio_short(ctx, y, one, GPUOS_PRIORITY_HIGH, &st);
        if (st != GPUOS_OK) return fail(ctx, "gpuos_submit", st);
        ts[r - 1] = now_s() - t1;
        CK(ctx, gpuos_wait_task(ctx, s, WAIT_MS));
        tl[r - 1] = now_s() - t1;
        yv += 5.f;
        if (gpuos_fence_done(ctx, gpuos_fence(ctx) - 5)) printf("INFO priority_latency.note the long job had finished\n");
        CK(ctx, gpuos_wait(ctx, WAIT_MS));
    }
    { /* the short job at normal priority behind the long one, once */
        if (prio_long(ctx, x, one, LONG)) return -1;
        xv += (float)LONG;
        prio_sleep_us(300);
        double t1 = now_s();
        uint64_t s = prio_short(ctx, y, one, GPUOS_PRIORITY_NORMAL, &st);
        if (st != GPUOS_OK) return fail(ctx, "gpuos_submit", st);
        CK(ctx, gpuos_wait_task(ctx, s, WAIT_MS));
        normal_s = now_s() - t1;
        yv += 5.f;
    }
    CK(ctx, gpuos_wait(ctx, WAIT_MS));
    if (check_filled(ctx, y, SMALL_N, 0.f, yv) || check_filled(ctx, x, big, 0.f, xv)) return -1;
    printf("INFO priority_latency.long_job_us %.1f\n", long_s * 1e6);
    printf("INFO priority_latency.normal_priority_us %.1f\n", normal_s * 1e6);
    (void)median_info("priority_latency.submit", ts, R, 1e6); /* how much of each sample was submission */
    double ma = median_info("priority_latency.alone", ta, R, 1e6), ml = median_info("priority_latency", tl, R, 1e6);
    printf("ROW priority_latency/alone us %.6g\n", ma * 1e6);
    row_out("priority_latency", "us", ml * 1e6);
    free(ta);
    free(tl);
    free(ts);
    gpuos_tensor_release(x);
    gpuos_tensor_release(y);
    gpuos_tensor_release(one);
    return 0;
}

typedef struct {
    const char *name, *unit;
    int needs_ctx; /* runs on the shared warm context */
    int (*fn)(void);
} bench_row;

static const bench_row ROWS[] = {
    {"roundtrip", "us", 1, row_roundtrip},
    {"roundtrip_download", "us", 1, row_roundtrip_download},
    {"independent", "ops/s", 1, row_independent},
    {"independent_many", "ops/s", 1, row_independent_many},
    {"independent_graph", "ops/s", 1, row_independent_graph},
    {"chain", "us/op", 1, row_chain},
    {"large_elementwise", "GB/s", 1, row_large},
    {"cold_start", "s", 0, row_cold_start},
    {"warm_start", "ms", 0, row_warm_start},
    {"define_cold_ms", "ms", 1, row_define_cold},
    {"define_warm_ms", "ms", 1, row_define_warm},
    {"swap_pause_us", "us", 1, row_swap_pause},
    {"swap_lost_tasks", "tasks", 1, row_swap_lost},
    {"branchy_dag", "us", 1, row_branchy_dag},
    {"tiny_mlp", "us", 1, row_tiny_mlp},
    {"pipeline_jobs", "jobs/s", 1, row_pipeline_jobs},
    {"priority_latency", "us", 1, row_priority_latency},
};
#define N_ROWS ((int)(sizeof ROWS / sizeof ROWS[0]))

static int row_selected(const char *name) {
    if (!O.rows || !*O.rows) return 1;
    size_t n = strlen(name);
    for (const char *p = O.rows; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

static void usage(void) {
    fprintf(stderr,
            "usage: gpuos_bench [--host | --device N] [--rows a,b] [--threads 1,2,4,8] [--quick]\n"
            "       [--queue N] [--chain-n N] [--indep-ops N] [--pool N] [--large-n N] [--large-k N]\n"
            "       [--cold-reps N] [--warm-reps N] [--reps-scale F] [--list]\n");
}

int main(int argc, char **argv) {
    O.device = GPUOS_DEVICE_AUTO;
    O.threads = "1,2,4,8";
    O.queue = 1u << 16;
    O.chain_n = 1000;
    O.indep_ops = -1; /* defaults below, after --quick is known */
    O.pool = 256;
    O.large_n = 64ll << 20;
    O.large_k = -1;
    O.reps_scale = 1.0;
    O.cold_reps = O.warm_reps = 0;
    O.self = argv[0];
    const char *child_dir = NULL;
    int list = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = (i + 1 < argc) ? argv[i + 1] : NULL;
#define ARG(flag) (strcmp(a, flag) == 0 && v && (i++, 1))
        if (strcmp(a, "--host") == 0) O.host = 1;
        else if (strcmp(a, "--quick") == 0) O.quick = 1;
        else if (strcmp(a, "--list") == 0) list = 1;
        else if (ARG("--device")) O.device = atoi(v);
        else if (ARG("--rows")) O.rows = v;
        else if (ARG("--threads")) O.threads = v;
        else if (ARG("--queue")) O.queue = (uint32_t)strtoul(v, NULL, 0);
        else if (ARG("--chain-n")) O.chain_n = atoi(v);
        else if (ARG("--indep-ops")) O.indep_ops = atol(v);
        else if (ARG("--pool")) O.pool = atoi(v);
        else if (ARG("--large-n")) O.large_n = atoll(v);
        else if (ARG("--large-k")) O.large_k = atoi(v);
        else if (ARG("--reps-scale")) O.reps_scale = atof(v);
        else if (ARG("--cold-reps")) O.cold_reps = atoi(v);
        else if (ARG("--warm-reps")) O.warm_reps = atoi(v);
        else if (ARG("--child-start")) child_dir = v;
        else {
            usage();
            return 2;
        }
#undef ARG
    }
    O.indep_ops_set = O.indep_ops != -1;
    if (O.indep_ops == -1) O.indep_ops = O.quick ? 40000 : 400000;
    if (O.large_k == -1) O.large_k = O.quick ? 2 : 8;
    if (O.chain_n < 1 || O.indep_ops < 1 || O.pool < 1 || O.large_n < 1 || O.large_k < 1 || O.reps_scale <= 0) {
        usage();
        return 2;
    }
    if (child_dir) return child_main(child_dir);
    if (list) {
        for (int r = 0; r < N_ROWS; r++) printf("%s %s\n", ROWS[r].name, ROWS[r].unit);
        return 0;
    }
    /* The start rows' child is this program: use an absolute path. */
    static char self[4096];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl > 0) {
        self[sl] = 0;
        O.self = self;
    }

    printf("INFO gpuos.version %s\n", GPUOS_VERSION_STRING);
    printf("INFO config queue_capacity=%u submit_timeout_ms=10000 device=%s quick=%d\n", O.queue,
           O.host ? "host" : (O.device == GPUOS_DEVICE_AUTO ? "auto" : "ordinal"), O.quick);
    int failed = 0, ctx_broken = 0, made_ctx = 0;
    for (int r = 0; r < N_ROWS; r++) {
        if (!row_selected(ROWS[r].name)) continue;
        cur_row = ROWS[r].name;
        if (ROWS[r].needs_ctx && ctx_broken) {
            failmsg("not run: the shared context failed in an earlier row");
            failed++;
            continue;
        }
        if (ROWS[r].needs_ctx && !g_ctx) { /* created once, kept warm across the in-process rows */
            gpuos_config cfg = make_config(NULL);
            double t0 = now_s();
            gpuos_status st = gpuos_create(&cfg, &g_ctx);
            made_ctx = 1;
            if (st != GPUOS_OK) {
                printf("FAIL %s gpuos_create: %s (%s)\n", cur_row, gpuos_status_string(st), gpuos_last_error(NULL));
                g_ctx = NULL;
                ctx_broken = 1;
                failed++;
                continue;
            }
            printf("INFO backend %s\n", gpuos_context_backend(g_ctx) == GPUOS_BACKEND_CUDA ? "cuda" : "host");
            printf("INFO context_create_s %.4f\n", now_s() - t0);
        }
        if (!ROWS[r].needs_ctx && !g_ctx && !made_ctx && !O.host) {
            /* the children start beside this process holding the GPU's primary context (which
               gpuos keeps after its last context), as they do after in-process rows and as the
               baselines' children start beside their parent: whether another process holds
               the GPU moves a fresh process's cuInit from ~100 to ~10 ms (H100, persistence
               mode on; tests/gpu/probe_start.c hold). The primary context outlives the
               context only as gpuos keeps it: GPUOS_CUDA_KEEP_CONTEXT=0 defeats this. */
            gpuos_config cfg = make_config(NULL);
            if (gpuos_create(&cfg, &g_ctx) == GPUOS_OK) made_ctx = 1;
            else g_ctx = NULL;
        }
        if (!ROWS[r].needs_ctx && g_ctx) { /* no persistent kernel of ours running beside the child */
            gpuos_destroy(g_ctx);
            g_ctx = NULL;
        }
        double t0 = now_s();
        fprintf(stderr, "gpuos_bench: %s ...\n", cur_row);
        fflush(stdout);
        last_status = GPUOS_OK;
        if (ROWS[r].fn() != 0) failed++;
        printf("INFO %s.bench_seconds %.2f\n", cur_row, now_s() - t0);
        fflush(stdout);
        if (g_ctx && gpuos_context_status(g_ctx) != GPUOS_OK) {
            printf("FAIL %s context has the sticky error %s (%s)\n", cur_row,
                   gpuos_status_string(gpuos_context_status(g_ctx)), gpuos_last_error(g_ctx));
            ctx_broken = 1;
        } else if (g_ctx && last_status == GPUOS_ERR_TIMEOUT) {
            printf("FAIL %s a wait timed out: the queue may still hold this row's work; no more in-process rows\n",
                   cur_row);
            ctx_broken = 1;
        }
    }
    if (start_dir[0]) rm_rf(start_dir);
    if (g_ctx) gpuos_destroy(g_ctx);
    return failed ? 1 : 0;
}
