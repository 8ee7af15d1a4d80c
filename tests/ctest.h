/* ctest.h - the few checking macros of the C tests. Each test binary ends with the line
   "NAME: N passed, N failed" (tests/run_tests.py totals them) and exits 1 on a failure. */
#ifndef GPUOS_CTEST_H
#define GPUOS_CTEST_H

#include <stdio.h>  /* printf, fprintf */

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

static int ctest_summary(const char *name) {
    fflush(stderr);
    printf("%s: %d passed, %d failed\n", name, ctest_passed, ctest_failed);
    return ctest_failed ? 1 : 0;
}

#endif
