/* ctest.h - the few checking macros of the C tests. Each test binary ends with the line
   "NAME: N passed, N failed" (tests/run_tests.py totals them) and exits 1 on a failure. */
#ifndef GPUOS_CTEST_H
#define GPUOS_CTEST_H

#include <stdio.h>  /* printf, fprintf */
#include <stdlib.h> /* getenv, atoi */
#include <string.h> /* strcmp */
#include <time.h>   /* time, clock: fresh seeds */

#include "gpuos.h"

static int ctest_passed, ctest_failed;

/* CHECK(condition, "printf format", args...): counts one check; says what failed and where. */
#define CHECK(cond, ...)                                                         \
    do {                                                                         \
        if (cond) {                                                              \
            ctest_passed++;                                                      \
        } else {                                                                 \
            ctest_failed++;                                                      \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);      \
            fprintf(stderr, __VA_ARGS__);                                        \
            fputc('\n', stderr);                                                 \
        }                                                                        \
    } while (0)

/* The device of the tests' contexts: $GPUOS_TEST_DEVICE (host, auto, gpu or a CUDA ordinal), default host. */
static int ctest_device(void) {
    const char *v = getenv("GPUOS_TEST_DEVICE");
    if (!v || !*v || strcmp(v, "host") == 0) return GPUOS_DEVICE_HOST;
    if (strcmp(v, "auto") == 0) return GPUOS_DEVICE_AUTO;
    if (strcmp(v, "gpu") == 0 || strcmp(v, "cuda") == 0) return 0;
    return atoi(v);
}

/* The run's random seed: $GPUOS_TEST_SEED, else a fresh one; printed, so that a failing run can be
   repeated. ctest_rng(seed, salt): a nonzero xorshift state from it. */
static inline unsigned long long ctest_seed(const char *name) {
    const char *v = getenv("GPUOS_TEST_SEED");
    unsigned long long s;
    int local;
    if (v && *v) {
        s = strtoull(v, NULL, 10);
    } else {
        s = ((unsigned long long)time(NULL) * 0x9e3779b97f4a7c15ull) ^ (unsigned long long)clock() ^
            ((unsigned long long)(size_t)&local >> 4);
        s %= 1000000007ull;
    }
    printf("%s: seed %llu (GPUOS_TEST_SEED=%llu repeats this run)\n", name, s, s);
    fflush(stdout);
    return s;
}
static inline uint64_t ctest_rng(unsigned long long seed, uint64_t salt) {
    uint64_t x = ((uint64_t)seed + 1u) * 0x9e3779b97f4a7c15ull ^ salt;
    return x ? x : (salt | 1u);
}
/* The next number below n from xorshift state *s (made by ctest_rng). */
static inline uint32_t ctest_below(uint64_t *s, uint32_t n) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (uint32_t)((*s >> 16) % n);
}

/* int32 arithmetic that wraps, as gpuos's integer operators do (the references' own sums must
   not overflow: that is undefined in C) */
static inline int32_t ctest_wrap_add(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }
static inline int32_t ctest_wrap_sub(int32_t a, int32_t b) { return (int32_t)((uint32_t)a - (uint32_t)b); }
static inline int32_t ctest_wrap_mul(int32_t a, int32_t b) { return (int32_t)((uint32_t)a * (uint32_t)b); }

#if defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 199309L
/* Milliseconds of CLOCK_MONOTONIC (tests that time a wait define _POSIX_C_SOURCE first). */
static inline double ctest_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
#endif

static int ctest_summary(const char *name) {
    fflush(stderr);
    printf("%s: %d passed, %d failed\n", name, ctest_passed, ctest_failed);
    return ctest_failed ? 1 : 0;
}

#endif
