/* probe_prof.h - the worker cycle counters of GPUOS_CUDA_TIMESTAMPS=1 builds
   (gpuos__pk_params.prof), for probes that include gpuos.c: read them, print the
   difference of two readings per worker entry. */
#ifndef GPUOS_PROBE_PROF_H
#define GPUOS_PROBE_PROF_H
#include <stdio.h>

/* CLOCK_REALTIME in ns (which %globaltimer tracks on Linux to about a microsecond). */
static inline uint64_t rt_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}
/* qsort order of doubles (medians). */
static inline int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void prof_read(gpuos_context *ctx, unsigned long long *v) {
    /* on the copy stream: the persistent kernel keeps running */
    if (gpuos__cuda_memcpy(ctx, v, ctx->cuda->P.prof, GPUOS__PROF_N * 8, 0) != GPUOS_OK)
        printf("reading the worker counters: %s\n", gpuos_last_error(ctx));
}

/* us: host time of n units (ops, launches) named unit. */
static void prof_report(const char *name, const unsigned long long *a, const unsigned long long *b, double us, int n,
                        const char *unit) {
    static const char *ph[] = {"wait", "start", "deps", "plan", "run", "sync", "flush"};
    unsigned long long d[GPUOS__PROF_N];
    int k;
    for (k = 0; k < GPUOS__PROF_N; k++) d[k] = b[k] - a[k];
    printf("%s: %.3f us/%s (host clock); worker entries %llu, batches %llu (%.1f entries/batch), tiles %llu, plan "
           "copies %llu\n",
           name, us / n, unit, d[GPUOS__PROF_TASKS], d[GPUOS__PROF_BATCHES],
           d[GPUOS__PROF_BATCHES] ? (double)d[GPUOS__PROF_TASKS] / d[GPUOS__PROF_BATCHES] : 0.0, d[GPUOS__PROF_TILES],
           d[GPUOS__PROF_PLANS]);
    if (d[GPUOS__PROF_RUNS]) printf("  runs of identical tasks: %llu\n", d[GPUOS__PROF_RUNS]);
    printf("  cycles per worker entry (thread 0, summed over workers):");
    for (k = 0; k <= GPUOS__PROF_FLUSH; k++)
        printf(" %s %.0f", ph[k], d[GPUOS__PROF_TASKS] ? (double)d[k] / d[GPUOS__PROF_TASKS] : 0.0);
    printf("\n");
    printf("  fetcher: %llu polls with slots (%.1f slots each, %.0f cycles each), %llu empty polls (%.0f cycles each)\n",
           d[GPUOS__PROF_F_FULL], d[GPUOS__PROF_F_FULL] ? (double)d[GPUOS__PROF_F_SLOTS] / d[GPUOS__PROF_F_FULL] : 0.0,
           d[GPUOS__PROF_F_FULL] ? (double)d[GPUOS__PROF_F_BATCH] / d[GPUOS__PROF_F_FULL] : 0.0, d[GPUOS__PROF_F_EMPTY],
           d[GPUOS__PROF_F_EMPTY] ? (double)d[GPUOS__PROF_F_POLL] / d[GPUOS__PROF_F_EMPTY] : 0.0);
    if (d[GPUOS__PROF_F_FULL]) {
        static const char *fp[] = {"ring", "layout", "push", "fence", "seq"};
        printf("  fetcher's processor, cycles per batch:");
        for (k = GPUOS__PROF_F_RING; k <= GPUOS__PROF_F_STAMP; k++)
            printf(" %s %.0f", fp[k - GPUOS__PROF_F_RING], (double)d[k] / d[GPUOS__PROF_F_FULL]);
        printf(", waiting for a batch %.0f; %.1f inbox entries per batch\n",
               (double)d[GPUOS__PROF_F_HANDOVER] / d[GPUOS__PROF_F_FULL], (double)d[GPUOS__PROF_F_PAIRS] / d[GPUOS__PROF_F_FULL]);
    }
}
#endif
