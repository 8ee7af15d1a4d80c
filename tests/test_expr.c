/* test_expr.c - the interpreter of element-wise bodies (src/expr.c) against the C compiler.

   CASE(body) hands the body's text to the interpreter and pastes the same body as C code into
   the test; both run on the same inputs (specials first: 0, -0, inf, NaN, INT_MIN, large
   values, then random ones from a fixed seed) and every output must match: integers exactly,
   floats and doubles bit for bit (any NaN matches any NaN). Where C and CUDA C++ differ
   (overloaded math, C++ syntax, or C's undefined behaviour where the interpreter defines a
   result) CASE2("body", C code) gives the C code that means what the body means in C++.
   Then malformed bodies (each must fail with a message, never crash), the loop budget, deep
   nesting, a 1 MB garbage string, 10000 random mutations of the valid bodies, and the time
   of one run (printed, not checked). */
#define _POSIX_C_SOURCE 200809L
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctest.h"
#include "expr.h"

/* ---------------------------------------------------------------- the variables */
/* X(name, C type, interpreter type, writable) */
#define VARS(X)                                                                                    \
    X(a, float, F32, 0) X(b, float, F32, 0) X(p0, float, F32, 0) X(x, double, F64, 0)              \
    X(y, double, F64, 0) X(i, int32_t, I32, 0) X(j, int32_t, I32, 0) X(u, uint32_t, U32, 0)        \
    X(w, uint32_t, U32, 0) X(l, int64_t, I64, 0) X(m, int64_t, I64, 0) X(q, uint64_t, U64, 0)      \
    X(f, bool, BOOL, 0) X(c8, int8_t, I8, 0) X(b8, uint8_t, U8, 0) X(s16, int16_t, I16, 0)         \
    X(w16, uint16_t, U16, 0) X(out, float, F32, 1) X(out2, float, F32, 1) X(od, double, F64, 1)    \
    X(oi, int32_t, I32, 1) X(ou, uint32_t, U32, 1) X(ol, int64_t, I64, 1) X(oq, uint64_t, U64, 1)  \
    X(ob, bool, BOOL, 1) X(o8, int8_t, I8, 1) X(o16, uint16_t, U16, 1)

#define FIELD(n, ct, et, wr) ct n;
typedef struct env {
    VARS(FIELD)
} env;

#define COUNT(n, ct, et, wr) +1
enum { N_VARS = 0 VARS(COUNT) };

#define VARDEF(n, ct, et, wr) {#n, GPUOS__EX_##et, wr},
static const gpuos__ex_var ex_vars[N_VARS] = {VARS(VARDEF)};

/* env <-> interpreter values, by interpreter type */
#define TOV_F32(v, e) (v).f = (e)
#define TOV_F64(v, e) (v).d = (e)
#define TOV_BOOL(v, e) (v).i = (e)
#define TOV_I8(v, e) (v).i = (e)
#define TOV_I16(v, e) (v).i = (e)
#define TOV_I32(v, e) (v).i = (e)
#define TOV_I64(v, e) (v).i = (e)
#define TOV_U8(v, e) (v).u = (e)
#define TOV_U16(v, e) (v).u = (e)
#define TOV_U32(v, e) (v).u = (e)
#define TOV_U64(v, e) (v).u = (e)
#define FROMV_F32(v) (v).f
#define FROMV_F64(v) (v).d
#define FROMV_BOOL(v) ((v).i != 0)
#define FROMV_I8(v) (int8_t)(v).i
#define FROMV_I16(v) (int16_t)(v).i
#define FROMV_I32(v) (int32_t)(v).i
#define FROMV_I64(v) (v).i
#define FROMV_U8(v) (uint8_t)(v).u
#define FROMV_U16(v) (uint16_t)(v).u
#define FROMV_U32(v) (uint32_t)(v).u
#define FROMV_U64(v) (v).u

static void env_to_values(const env *e, gpuos__ex_value *v) {
    int k = 0;
    memset(v, 0, N_VARS * sizeof *v);
#define TOV(n, ct, et, wr) TOV_##et(v[k], e->n), k++;
    VARS(TOV)
#undef TOV
}

/* 1 when every integer output is held as the interface says (sign- or zero-extended) */
static int values_canonical(const gpuos__ex_value *v, const char **bad) {
    int k = 0;
#define CANON(n, ct, et, wr)                                                                       \
    if (wr && !strchr("FB", #et[0]) && (#et[0] == 'I' ? (int64_t)(ct)v[k].i != v[k].i              \
                                                      : (uint64_t)(ct)v[k].u != v[k].u)) {         \
        *bad = #n;                                                                                 \
        return 0;                                                                                  \
    }                                                                                              \
    if (wr && #et[0] == 'B' && v[k].u > 1) {                                                       \
        *bad = #n;                                                                                 \
        return 0;                                                                                  \
    }                                                                                              \
    k++;
    VARS(CANON)
#undef CANON
    return 1;
}

static void values_to_env(const gpuos__ex_value *v, env *e) {
    int k = 0;
#define FROMV(n, ct, et, wr) e->n = (ct)FROMV_##et(v[k]), k++;
    VARS(FROMV)
#undef FROMV
}

static int same_f(float a, float b) {
    uint32_t x, y;
    if (a != a && b != b) return 1;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    return x == y;
}

static int same_d(double a, double b) {
    uint64_t x, y;
    if (a != a && b != b) return 1;
    memcpy(&x, &a, 8);
    memcpy(&y, &b, 8);
    return x == y;
}

#define SAME_F32(p, q) same_f(p, q)
#define SAME_F64(p, q) same_d(p, q)
#define SAME_INT(p, q) ((p) == (q))
#define SAME_BOOL SAME_INT
#define SAME_I8 SAME_INT
#define SAME_I16 SAME_INT
#define SAME_I32 SAME_INT
#define SAME_I64 SAME_INT
#define SAME_U8 SAME_INT
#define SAME_U16 SAME_INT
#define SAME_U32 SAME_INT
#define SAME_U64 SAME_INT

/* the first variable where got and want differ, or NULL */
static const char *env_diff(const env *got, const env *want) {
#define DIFF(n, ct, et, wr) \
    if (!SAME_##et(got->n, want->n)) return #n;
    VARS(DIFF)
#undef DIFF
    return NULL;
}

static void env_print(const char *what, const env *e) {
    fprintf(stderr, "    %s:", what);
#define PRINT_F32(n, v) fprintf(stderr, " %s=%.9g", n, (double)(v))
#define PRINT_F64(n, v) fprintf(stderr, " %s=%.17g", n, v)
#define PRINT_I(n, v) fprintf(stderr, " %s=%lld", n, (long long)(v))
#define PRINT_U(n, v) fprintf(stderr, " %s=%llu", n, (unsigned long long)(v))
#define PRINT_BOOL PRINT_I
#define PRINT_I8 PRINT_I
#define PRINT_I16 PRINT_I
#define PRINT_I32 PRINT_I
#define PRINT_I64 PRINT_I
#define PRINT_U8 PRINT_U
#define PRINT_U16 PRINT_U
#define PRINT_U32 PRINT_U
#define PRINT_U64 PRINT_U
#define PR(n, ct, et, wr) PRINT_##et(#n, e->n);
    VARS(PR)
#undef PR
    fputc('\n', stderr);
}

/* ---------------------------------------------------------------- inputs */
#define N_ROWS 320
static env inputs[N_ROWS];
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static unsigned long long test_seed; /* ctest_seed, set by main */

static uint64_t rnd(void) { /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

static float rnd_float(int row, int salt) {
    static const float sp[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -2.5f, 3.0f, 1e-40f, FLT_MIN, FLT_MAX, -FLT_MAX,
                               INFINITY, -INFINITY, NAN, 1e10f, -1e10f, 2147483648.0f, -2147483904.0f,
                               127.5f, 255.9f, 65535.5f, -128.7f, 1e20f, 0.1f, 3e9f, 9.3e18f, 2e19f, -0.7f};
    const int n = (int)(sizeof sp / sizeof sp[0]);
    uint64_t r = rnd();
    float v;
    uint32_t bits;
    if (row < 3 * n) return sp[(row + salt * 7) % n];
    switch (r % 4) {
    case 0: bits = (uint32_t)(r >> 32); memcpy(&v, &bits, 4); return v; /* any bits */
    case 1: return (float)((int64_t)(r >> 40) % 200 - 100);            /* small integers */
    default: return (float)((double)(r >> 11) / 9007199254740992.0 * 200.0 - 100.0);
    }
}

static double rnd_double(int row, int salt) {
    static const double sp[] = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-310, DBL_MIN, DBL_MAX, -DBL_MAX,
                                INFINITY, -INFINITY, NAN, 1e10, -1e10, 2147483648.0, -2147483649.0,
                                9223372036854775808.0, -9223372036854775808.0, 18446744073709551616.0,
                                4294967295.5, 1e300, 0.1, -0.9999, 65536.25};
    const int n = (int)(sizeof sp / sizeof sp[0]);
    uint64_t r = rnd();
    double v;
    if (row < 3 * n) return sp[(row + salt * 5) % n];
    switch (r % 4) {
    case 0: memcpy(&v, &r, 8); return v;
    case 1: return (double)((int64_t)(r >> 40) % 200 - 100);
    default: return (double)(r >> 11) / 9007199254740992.0 * 2000.0 - 1000.0;
    }
}

static int64_t rnd_int(int row, int salt) {
    static const int64_t sp[] = {0, 1, -1, 2, -2, 3, 7, INT32_MIN, INT32_MAX, 31, 32, 33, 63, 64, -32,
                                 127, 128, -129, 255, 256, 65535, 65536, -65536, INT32_MIN + 1,
                                 INT64_MIN, INT64_MAX, 4294967295ll, 4294967296ll, 1000000007};
    const int n = (int)(sizeof sp / sizeof sp[0]);
    uint64_t r = rnd();
    if (row < 3 * n) return sp[(row + salt * 3) % n];
    switch (r % 4) {
    case 0: return (int64_t)(r >> 1) * ((r & 1) ? -1 : 1);
    case 1: return (int64_t)(r >> 60) - 8;
    case 2: return (int32_t)(uint32_t)(r >> 32);
    default: return (int64_t)(r >> 48) - 32768;
    }
}

static void make_inputs(void) {
    int r, s;
    for (r = 0; r < N_ROWS; r++) {
        env *e = &inputs[r];
        s = 0;
        e->a = rnd_float(r, s++);
        e->b = rnd_float(r, s++);
        e->p0 = rnd_float(r, s++);
        e->x = rnd_double(r, s++);
        e->y = rnd_double(r, s++);
        e->i = (int32_t)(uint32_t)(uint64_t)rnd_int(r, s++);
        e->j = (int32_t)(uint32_t)(uint64_t)rnd_int(r, s++);
        e->u = (uint32_t)(uint64_t)rnd_int(r, s++);
        e->w = (uint32_t)(uint64_t)rnd_int(r, s++);
        e->l = rnd_int(r, s++);
        e->m = rnd_int(r, s++);
        e->q = (uint64_t)rnd_int(r, s++);
        e->f = (rnd() >> 7) & 1;
        e->c8 = (int8_t)(uint8_t)(uint64_t)rnd_int(r, s++);
        e->b8 = (uint8_t)(uint64_t)rnd_int(r, s++);
        e->s16 = (int16_t)(uint16_t)(uint64_t)rnd_int(r, s++);
        e->w16 = (uint16_t)(uint64_t)rnd_int(r, s++);
        /* outputs start moderate, so that "oi += 1" has no overflow in the C reference */
        e->out = (float)((int)(rnd() % 2001) - 1000) / 8.0f;
        e->out2 = rnd_float(r, s++);
        e->od = (double)((int)(rnd() % 2001) - 1000) / 16.0;
        e->oi = (int32_t)(rnd() % 2001) - 1000;
        e->ou = (uint32_t)(rnd() % 2001);
        e->ol = (int64_t)(rnd() % 2001) - 1000;
        e->oq = rnd() % 2001;
        e->ob = (rnd() >> 9) & 1;
        e->o8 = (int8_t)((int)(rnd() % 201) - 100);
        e->o16 = (uint16_t)(rnd() % 60000);
    }
}

/* ---------------------------------------------------------------- reference helpers */
/* what C leaves undefined, as src/expr.c defines it */
static int32_t w32(uint32_t v) { return (int32_t)v; } /* two's complement (GCC's conversion) */
static int64_t w64(uint64_t v) { return (int64_t)v; }
static int32_t add32(int32_t p, int32_t q) { return w32((uint32_t)p + (uint32_t)q); }
static int32_t sub32(int32_t p, int32_t q) { return w32((uint32_t)p - (uint32_t)q); }
static int32_t mul32(int32_t p, int32_t q) { return w32((uint32_t)p * (uint32_t)q); }
static int64_t add64(int64_t p, int64_t q) { return w64((uint64_t)p + (uint64_t)q); }
static int64_t mul64(int64_t p, int64_t q) { return w64((uint64_t)p * (uint64_t)q); }
static int32_t div32(int32_t p, int32_t q) { return q == 0 ? 0 : (p == INT32_MIN && q == -1) ? INT32_MIN : p / q; }
static int32_t rem32(int32_t p, int32_t q) { return (q == 0 || q == -1) ? 0 : p % q; }
static int64_t div64(int64_t p, int64_t q) { return q == 0 ? 0 : (p == INT64_MIN && q == -1) ? INT64_MIN : p / q; }
static int64_t rem64(int64_t p, int64_t q) { return (q == 0 || q == -1) ? 0 : p % q; }
static uint32_t divu32(uint32_t p, uint32_t q) { return q ? p / q : 0; }
static uint32_t remu32(uint32_t p, uint32_t q) { return q ? p % q : 0; }
static uint64_t divu64(uint64_t p, uint64_t q) { return q ? p / q : 0; }
static uint64_t remu64(uint64_t p, uint64_t q) { return q ? p % q : 0; }
static int32_t shl32(int32_t p, int64_t n) { return w32((uint32_t)p << (n & 31)); }
static int32_t shr32(int32_t p, int64_t n) { return p < 0 ? ~(~p >> (n & 31)) : p >> (n & 31); }
static int64_t shl64(int64_t p, int64_t n) { return w64((uint64_t)p << (n & 63)); }
static int64_t shr64(int64_t p, int64_t n) { return p < 0 ? ~(~p >> (n & 63)) : p >> (n & 63); }
static int64_t sat(double v, double lo, double hi) {
    if (v != v) return 0;
    if (v < lo) return (int64_t)lo;
    if (v > hi) return (int64_t)hi;
    return (int64_t)v;
}
static int32_t f2i32(double v) { return (int32_t)sat(v, -2147483648.0, 2147483647.0); }
static uint32_t f2u32(double v) { return (uint32_t)sat(v, 0.0, 4294967295.0); }
static int8_t f2i8(double v) { return (int8_t)sat(v, -128.0, 127.0); }
static uint8_t f2u8(double v) { return (uint8_t)sat(v, 0.0, 255.0); }
static int16_t f2i16(double v) { return (int16_t)sat(v, -32768.0, 32767.0); }
static uint16_t f2u16(double v) { return (uint16_t)sat(v, 0.0, 65535.0); }
static int64_t f2i64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775808.0) return INT64_MAX;
    if (v < -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}
static uint64_t f2u64(double v) {
    if (v != v || v <= -1.0) return 0;
    if (v >= 18446744073709551616.0) return UINT64_MAX;
    return (uint64_t)v;
}
static float sat01(float v) { return v >= 1.0f ? 1.0f : v > 0.0f ? v : 0.0f; }
static int32_t imin(int32_t p, int32_t q) { return q < p ? q : p; }
static int32_t imax(int32_t p, int32_t q) { return p < q ? q : p; }
static uint32_t umax(uint32_t p, uint32_t q) { return p < q ? q : p; }
static int64_t lmin(int64_t p, int64_t q) { return q < p ? q : p; }
static uint64_t qmax(uint64_t p, uint64_t q) { return p < q ? q : p; }
static int32_t iabs(int32_t p) { return w32(p < 0 ? 0u - (uint32_t)p : (uint32_t)p); }
static int64_t labs64(int64_t p) { return w64(p < 0 ? 0u - (uint64_t)p : (uint64_t)p); }

/* ---------------------------------------------------------------- cases */
#define MAX_BODIES 512
static const char *bodies[MAX_BODIES]; /* the valid bodies, for the mutations */
static int n_bodies;

typedef struct case_t {
    const char *body;
    int line, bad;
    gpuos__ex_program *p;
} case_t;

static int case_begin(case_t *c, const char *body, int line) {
    char err[256];
    c->body = body;
    c->line = line;
    c->bad = 0;
    if (n_bodies < MAX_BODIES) bodies[n_bodies++] = body;
    c->p = gpuos__ex_compile(body, ex_vars, N_VARS, err, sizeof err);
    CHECK(c->p != NULL, "line %d: \"%s\": %s", line, body, err);
    return c->p != NULL;
}

static void case_check(case_t *c, int row, const env *want) {
    gpuos__ex_value v[N_VARS];
    char err[256];
    const char *field, *bad = "";
    env got;
    env_to_values(&inputs[row], v);
    if (gpuos__ex_run(c->p, v, err, sizeof err) != 0) {
        if (!c->bad++) fprintf(stderr, "line %d: \"%s\": row %d: run failed: %s\n", c->line, c->body, row, err);
        return;
    }
    if (!values_canonical(v, &bad)) {
        if (!c->bad++) fprintf(stderr, "line %d: \"%s\": row %d: %s not sign/zero-extended\n", c->line, c->body, row, bad);
        return;
    }
    values_to_env(v, &got);
    field = env_diff(&got, want);
    if (field) {
        if (!c->bad++) {
            fprintf(stderr, "line %d: \"%s\": row %d: %s differs\n", c->line, c->body, row, field);
            env_print("inputs", &inputs[row]);
            env_print("interpreter", &got);
            env_print("C", want);
        }
    }
}

static void case_end(case_t *c) {
    CHECK(c->bad == 0, "line %d: \"%s\": %d of %d rows differ (first one above)", c->line, c->body, c->bad, N_ROWS);
    gpuos__ex_free(c->p);
}

#define DECL_LOCAL(n, ct, et, wr) DECL_##wr(n, ct)
#define DECL_0(n, ct) const ct n = e_.n; (void)n;
#define DECL_1(n, ct) ct n = e_.n;
#define STORE_LOCAL(n, ct, et, wr) STORE_##wr(n)
#define STORE_0(n)
#define STORE_1(n) e_.n = n;

/* CASE2("body for the interpreter", the same in C); CASE(body) when C reads it the same */
#define CASE2(str, ...)                                                                            \
    do {                                                                                           \
        case_t c_;                                                                                 \
        int k_;                                                                                    \
        if (case_begin(&c_, str, __LINE__)) {                                                      \
            for (k_ = 0; k_ < N_ROWS; k_++) {                                                      \
                env e_ = inputs[k_];                                                               \
                {                                                                                  \
                    VARS(DECL_LOCAL)                                                               \
                    __VA_ARGS__                                                                    \
                    VARS(STORE_LOCAL)                                                              \
                }                                                                                  \
                case_check(&c_, k_, &e_);                                                          \
            }                                                                                      \
            case_end(&c_);                                                                         \
        }                                                                                          \
    } while (0)
#define CASE(...) CASE2(#__VA_ARGS__, __VA_ARGS__)

static void test_arithmetic(void) {
    /* float and double, rounding in each type */
    CASE(out = a * 2.0f + b;);
    CASE(out = a * p0 + b * 0.5f;);
    CASE(out = a * p0 + sinf(b););
    CASE(float t = a > 0.f ? a : 0.01f * a; out = t * t;);
    CASE(if (a < b) out = a; else { out = b + 1; });
    CASE(out = a / b; out2 = a - b * p0; od = x * y - x / y;);
    CASE(od = a * 2.0; out = a * 2.0; out2 = a * 2;);
    CASE(od = x / y + a; out = x + a;);
    CASE(out = -a; out2 = +b; od = -x;);
    CASE(ob = a < b; oi = a <= b; ou = a > b; ol = a >= b; o8 = a == b; oq = a != b;);
    CASE(ob = x < a; oi = y == x; ou = a != a; o16 = x >= y;);
    CASE(out = a; out += b; out -= p0; out *= 2; out /= 3; od += x; od *= a;);
    CASE(od = 1.0 / 3; out = 1.0f / 3; out2 = 1 / 3; oi = 7 / 2 + 7 % 3;);
    CASE(od = 1e-3 + .5 + 1.5e+2 + 0x1p-2 + 2E3; out = .5f + 1e3f + 2.f + 0x1.8p1f;);
    CASE2("od = 1e400; out2 = 1e-50f; out = 3.4028235e38f * 2.0f + 1e39f;", od = INFINITY; out2 = 0.0f;
          out = INFINITY;);
    /* integer literal types */
    CASE(ol = 2147483648; oq = 0xFFFFFFFF; oi = 0x7FFFFFFF; ou = 037 + 0XaBu;);
    CASE(ol = 10000000000LL + 5l; oq = 18446744073709551615ULL; ou = 4294967295u;);
    CASE(ol = -2147483648 / 2; oq = 0xFFFFFFFF + 1; od = 4294967295 + 1;);
    CASE(ol = 1u - 2; oq = 1ull - 2; ou = 0x80000000 >> 4; oi = -0x80000000 > 0;);
    CASE(oq = 0xFFFFFFFFFFFFFFFF / 3; ol = 0x7FFFFFFFFFFFFFFF / 2; ob = 9223372036854775807 > 0;);
    CASE2("ol = 0b1011 + 0B1u; oq = 1lu + 2LU + 3uLL + 4llu;", ol = 11 + 1u; oq = 1lu + 2LU + 3uLL + 4llu;);
    /* promotions and the usual arithmetic conversions */
    CASE(oi = c8 + b8 * s16 - w16; ol = b8 * w16;);
    CASE(ou = u + i; oq = q + l; od = u + 0.5; out = l + 0.5f;);
    CASE2("ol = l + i; ou = u * w - i;", ol = add64(l, i); ou = u * w - (uint32_t)i;);
    CASE2("ob = i < u; oi = c8 < u; ol = (l < q) + (i < 0u);",
          ob = (uint32_t)i < u; oi = (uint32_t)(int32_t)c8 < u; ol = ((uint64_t)l < q) + 0;);
    CASE2("ol = i < l; oq = u + l; ob = -1 < 0u;", ol = i < l; oq = (uint64_t)add64(u, l); ob = 0;);
    CASE(out = i; od = l; out2 = q; oi = u > 7;);
    CASE(od = q; out = q; od = od + u;);
    CASE(out = b8; od = c8; out2 = s16 + w16 + f;);
    CASE2("oi = f + f; ol = -f; ou = ~f; ob = !f;", oi = f + f; ol = -f; ou = ~(int)f; ob = !f;);
    /* wrapping */
    CASE2("oi = i * j + i - j;", oi = sub32(add32(mul32(i, j), i), j););
    CASE2("oi = -i; ol = -l; ou = -u; oq = -q;", oi = w32(0u - (uint32_t)i); ol = w64(0u - (uint64_t)l);
          ou = 0u - u; oq = 0u - q;);
    CASE2("ol = l * m + l; oi = i + 1;", ol = add64(mul64(l, m), l); oi = add32(i, 1););
    CASE2("oi = INT_MAX; oi++; ol = LLONG_MAX; ol += 1; ou = 0; ou--;", oi = INT32_MIN; ol = INT64_MIN;
          ou = UINT32_MAX;);
    /* division and remainder: x / 0 and x % 0 are 0, INT_MIN / -1 is INT_MIN */
    CASE2("oi = i / j; ou = u / w; ol = l / m; oq = q / w;",
          oi = div32(i, j); ou = divu32(u, w); ol = div64(l, m); oq = divu64(q, w););
    CASE2("oi = i % j; ou = u % w; ol = l % m; oq = q % w;",
          oi = rem32(i, j); ou = remu32(u, w); ol = rem64(l, m); oq = remu64(q, w););
    CASE2("oi = i / 0 + i % 0; ol = INT_MIN / -1; oq = l % 0; ou = INT_MIN % -1;",
          oi = 0; ol = INT32_MIN; oq = 0; ou = 0;);
    CASE2("oi = c8 / s16; ol = (l / i) % (j + 1);", oi = div32(c8, s16); ol = rem64(div64(l, i), add32(j, 1)););
    /* shifts: the count is masked to the width */
    CASE2("oi = i << (j & 31); ou = u >> (w & 31); ol = l >> 3; oq = q << 60;",
          oi = shl32(i, j & 31); ou = u >> (w & 31); ol = shr64(l, 3); oq = q << 60;);
    CASE2("oi = i << j; ol = l >> j; ou = u << 40; oq = q >> m;",
          oi = shl32(i, j); ol = shr64(l, j); ou = u << (40 & 31); oq = q >> (m & 63););
    CASE2("oi = i >> j; ol = l << i; ou = u >> -1; oi += c8 << 4;",
          oi = shr32(i, j); ol = shl64(l, i); ou = u >> 31; oi = add32(oi, shl32(c8, 4)););
    CASE2("ol = i << 40; oq = u << 33;", ol = shl32(i, 40); oq = (uint32_t)(u << 1););
    /* bitwise and precedence */
    CASE(ou = (u & w) | (u ^ ~w); oq = (q & ~q) | 5; ol = l ^ m; oi = i & -8;);
    CASE2("oi = i & j | i ^ 7 & j; ob = a < b == b < a; ol = 1 + 2 * 3 - 4 / 2 % 3;",
          oi = (i & j) | (i ^ (7 & j)); ob = (a < b) == (b < a); ol = 1 + 2 * 3 - ((4 / 2) % 3););
    CASE(oi = ~i; ou = ~u; ol = ~l; oq = ~q; o8 = ~c8; o16 = ~w16;);
    CASE(ob = !i; oi = !a; ol = !x + !!l;);
}

static void test_conversions(void) {
    /* float -> integer: truncate, saturate, NaN -> 0 */
    CASE2("oi = a; ou = b; ol = x; oq = y; o8 = p0; o16 = a;",
          oi = f2i32(a); ou = f2u32(b); ol = f2i64(x); oq = f2u64(y); o8 = f2i8(p0); o16 = f2u16(a););
    CASE2("oi = x; ou = y; ol = a; oq = b; o8 = x; o16 = y;",
          oi = f2i32(x); ou = f2u32(y); ol = f2i64(a); oq = f2u64(b); o8 = f2i8(x); o16 = f2u16(y););
    CASE2("oi = (int)a + (int)(x * 2); ou = (unsigned)p0; ol = (long long)(a * 1e10f);",
          oi = add32(f2i32(a), f2i32(x * 2)); ou = f2u32(p0); ol = f2i64(a * 1e10f););
    CASE2("oi = (int8_t)a + (uint8_t)b + (int16_t)x + (uint16_t)y;",
          oi = f2i8(a) + f2u8(b) + f2i16(x) + f2u16(y););
    CASE2("uint8_t k = a; int16_t h = x; oi = k + h; ob = a; o8 = (bool)x;",
          uint8_t k = f2u8(a); int16_t h = f2i16(x); oi = k + h; ob = a; o8 = (bool)x;);
    CASE2("oi = i; oi *= 0.5; ol = l; ol += 0.25f; ou = u; ou /= 2.5;",
          oi = f2i32(i * 0.5); ol = f2i64((float)l + 0.25f); ou = f2u32(u / 2.5););
    /* integer casts */
    CASE(o8 = (int8_t)i; o16 = (uint16_t)i; ou = (unsigned)c8; ol = (long long)u; oq = (unsigned long long)i;);
    CASE(oi = (short)u + (unsigned char)i + (signed char)j + (char)w; ol = (unsigned short)c8;);
    CASE(ob = (bool)i + (bool)a; oi = (int)ob * 2 + (int)f;);
    CASE(out = (float)x; od = (double)a; out2 = (float)(double)a; od = (float)y;);
    CASE(ol = (int64_t)(int32_t)l + (uint32_t)l; oq = (uint64_t)(int8_t)q;);
    CASE2("out = float(i) + static_cast<float>(j); ol = int64_t(c8) + long(u);",
          out = (float)i + (float)j; ol = (int64_t)c8 + (int64_t)u;); /* the body's long is 64-bit */
    /* a parenthesised expression that starts with a functional cast is no C-style cast (a
       fuzzer's find: "expected ')' before '('") */
    CASE2("oi = (int(c8) + 1); ol = (int64_t(i) * 2); oq = (uint64_t(u) % 7u) + (unsigned(w16));",
          oi = ((int)c8 + 1); ol = ((int64_t)i * 2); oq = ((uint64_t)u % 7u) + ((unsigned)w16););
    CASE2("oi = int(); od = double(a) * unsigned(2); ou = static_cast<unsigned int>(j);",
          oi = 0; od = (double)a * 2u; ou = (unsigned int)j;);
    CASE2("auto t = a * 2; auto k = i + 1u; auto z = x; auto c = c8; out = t; ou = k; od = z; oi = c;",
          float t = a * 2; unsigned k = (uint32_t)i + 1u; double z = x; int8_t c = c8; out = t; ou = k; od = z;
          oi = c;);
    /* 8- and 16-bit locals truncate when stored */
    CASE(int8_t k = (int8_t)i; k += 100; o8 = k; uint8_t v8 = 250; v8 += 10; oi = v8; int16_t h = 32767; h++;
         ol = h; uint16_t g = 0; g--; oq = g;);
    CASE(int8_t k = i; int16_t h = j; uint8_t z = l; uint16_t g = q; ol = k * h + z * g;);
    CASE(int8_t k = c8; k = k * k; o8 = k; k = -128; k--; oi = k; k = 127; ++k; ol = k;);
    CASE(int8_t k = 100; int8_t k2 = 100; oi = k + k2; o8 = k + k2; o16 = k * k2 * 10;);
    CASE(bool t = a; bool t2 = i; ob = t && t2; oi = t + t2; bool t3 = false; t3 += 2; ol = t3;);
    CASE(uint32_t z = 0; z -= 1; ou = z; int32_t v = INT_MIN; oi = v; uint64_t g = 0; g--; oq = g;);
}

static void test_control(void) {
    CASE2("ob = a < b && i > 0 || !f;", ob = (a < b && i > 0) || !f;);
    CASE(oi = 0; if (i > 0 && (oi = 5) > 0) oi += 1; if (j > 0 || (oi = 9) != 0) oi += 2;);
    CASE(oi = 0; ob = (oi++ > 0) && (oi++ > 0); ol = oi; ou = 0; ob = (ou++ == 0) || (ou++ == 0); oq = ou;);
    CASE(ob = a && x; oi = a || 0.0; ol = (i && j) + (l || m) + (a && !b););
    CASE(out = f ? a : b; od = i > 0 ? a : x; ol = i < 0 ? l : u; oi = f ? c8 : s16;);
    CASE(oi = i > 0 ? 1 : i < 0 ? -1 : 0; out = f ? 1 : 2.5f; od = f ? 1 : 2.5; ou = f ? u : (uint32_t)i;);
    CASE(oi = f ? (int8_t)1 : (int8_t)-1; o8 = f ? c8 : c8; ob = f ? true : false; oq = f ? q : 1;);
    CASE2("f ? oi = 1 : oi = 2;", if (f) oi = 1; else oi = 2;);
    CASE2("oi = (i, j); ol = (oi = 3, oi + 1);", oi = j; oi = 3; ol = oi + 1;);
    CASE2("out = a; out2 = (out += 1, out * 2);", out = a; out += 1; out2 = out * 2;);
    CASE(oi = 0; for (int k = 0; k < 10; k++) { if (k == 3) continue; if (k == 8) break; oi += k; });
    CASE(oi = 0; int k = 0; while (k < (j & 15)) { oi += k * k; k++; });
    CASE(oi = 0; do { oi++; } while (oi < (i & 7)););
    CASE(ol = 0; for (int r = 0; r < 5; r++) for (int s = 0; s < 5; s++) { if (s > r) break; if ((r + s) % 2) continue;
         ol += r * 10 + s; });
    CASE(oi = 0; for (int k = 0, k2 = 10; k < k2; k++, k2--) oi += k * k2;);
    CASE(out = 0; for (int k = 0; k < 4; k++) { float t = a * k; out += t; });
    CASE(oi = 0; for (;;) { if (++oi >= 5) break; });
    CASE(oi = 0; int k = 0; while (k < 10) { k++; if (k & 1) continue; oi += k; });
    CASE(oi = 0; int k = 0; do { k++; if (k == 2) continue; oi += k; } while (k < 5););
    CASE(ol = 1; for (unsigned k = u & 15; k > 0; k--) ol *= 3; while (false) ol = 0;);
    CASE(od = 0; for (double t = 0; t < 1; t += 0.125) od += t * x;);
    CASE(oi = 0; for (int k = 0; k < 3; k++) { int z = k; { int z2 = z * 2; oi += z2; } });
    CASE(out = 0; int n = 0; while (out < 100 && n < 50) { out += a > 0 ? a : 1; n++; });
    CASE2("oi = 1; if (f) return; oi = 2;", oi = 1; if (!f) oi = 2;);
    CASE2("oi = 0; for (int k = 0; k < 10; k++) { oi += k; if (k == (j & 7)) return; } oi = -1;",
          int done = 0; oi = 0; for (int k = 0; k < 10; k++) { oi += k; if (k == (j & 7)) { done = 1; break; } }
          if (!done) oi = -1;);
    CASE(if (i > 0) if (j > 0) oi = 1; else oi = 2; else oi = 3;);
    CASE(if (a > 0) { out = 1; } else if (a < 0) { out = -1; } else { out = 0; });
    CASE(oi = 1; { int oi2 = 5; oi += oi2; } { int oi2 = 7; oi += oi2; } float t = 1;
         { float t2 = t + 1; { float t = 3; out = t + t2; } } out2 = t;);
    CASE(if (f) { int k = 3; oi = k; } else { float k = 2.5f; out = k; });
    CASE(;;; { } {;} out = a;);
    CASE(oi += 1; out *= 2; od -= 1; ol += l & 1; ob = !ob;);
    CASE2("out = a; // a comment\n/* a block\n comment */ out += b; /**/", out = a; out += b;);
    CASE2("oi = i & 0xffff; ol = oi++; oq = ++oi; out = a; out2 = out--; od = --out; ou = oi--;",
          oi = i & 0xffff; ol = oi++; oq = ++oi; out = a; out2 = out--; od = --out; ou = oi--;);
    CASE2("int k = 0; ol = k++ + k++; oi = k;", int k = 2; ol = 1; oi = k;);
    CASE2("oi = 5; (oi) = 6; ol = (oi = 7) + 1; (oi += 2) += 3; ++oi = 20; ou = oi;",
          oi = 7; ol = 8; oi = 12; oi = 20; ou = oi;);
    CASE(oi = 1; ol = 2; oi = ol = 5; ou = oi = ol = 7;);
}

static void test_math(void) {
    CASE(out = sinf(a); out2 = cosf(a); od = tanf(b););
    CASE(out = asinf(a); out2 = acosf(b); od = atanf(p0););
    CASE(out = sinhf(a); out2 = coshf(b); od = tanhf(p0););
    CASE(out = asinhf(a); out2 = acoshf(b); od = atanhf(p0););
    CASE(out = expf(a); out2 = exp2f(b); od = expm1f(p0););
    CASE(out = logf(a); out2 = log2f(b); od = log10f(p0); ol = log1pf(a) > 0;);
    CASE(out = sqrtf(a); out2 = cbrtf(b); od = fabsf(p0););
    CASE(out = floorf(a); out2 = ceilf(b); od = truncf(p0) + roundf(a) + rintf(b););
    CASE(out = erff(a); out2 = erfcf(b););
    CASE(out = atan2f(a, b); out2 = powf(a, b); od = fmodf(a, p0););
    CASE(out = fminf(a, b); out2 = fmaxf(a, p0); od = hypotf(a, b) + copysignf(a, b););
    CASE(out = fmaf(a, b, p0); od = fma(x, y, a););
    CASE2("out = exp10f(a); od = exp10(x); out2 = exp10(b);",
          out = (float)pow(10.0, (double)a); od = pow(10.0, x); out2 = (float)pow(10.0, (double)b););
    CASE2("out = rsqrtf(a); od = rsqrt(x); out2 = rsqrt(b);",
          out = 1.0f / sqrtf(a); od = 1.0 / sqrt(x); out2 = 1.0f / sqrtf(b););
    /* double versions, and integer arguments (double) */
    CASE(od = sin(x) + cos(y) + tan(x) + asin(y) + acos(x) + atan(y););
    CASE(od = sinh(x) + cosh(y) + tanh(x) + asinh(y) + acosh(x) + atanh(y););
    CASE(od = exp(x) + exp2(y) + expm1(x) + log(y) + log2(x) + log10(y) + log1p(x););
    CASE(od = sqrt(x) + cbrt(y) + fabs(x) + floor(y) + ceil(x) + trunc(y) + round(x) + rint(y););
    CASE(od = erf(x) + erfc(y) + atan2(x, y) + pow(x, y) + fmod(x, y) + fmin(x, y) + fmax(x, y););
    CASE(od = hypot(x, y) + copysign(x, y) + fma(x, y, x););
    CASE(od = sqrt(i) + exp(j) + log(u) + pow(i, 2.5) + fmin(i, j) + floor(l););
    /* overloads: float arguments give the float function */
    CASE2("out = sin(a) + cos(b); out2 = tan(a) * asin(b) - acos(p0) / atan(a);",
          out = sinf(a) + cosf(b); out2 = tanf(a) * asinf(b) - acosf(p0) / atanf(a););
    CASE2("out = sinh(a) + cosh(b) + tanh(p0) + asinh(a) + acosh(b) + atanh(p0);",
          out = sinhf(a) + coshf(b) + tanhf(p0) + asinhf(a) + acoshf(b) + atanhf(p0););
    CASE2("out = exp(a) + exp2(b) + expm1(p0) + log(a) + log2(b) + log10(p0) + log1p(a);",
          out = expf(a) + exp2f(b) + expm1f(p0) + logf(a) + log2f(b) + log10f(p0) + log1pf(a););
    CASE2("out = sqrt(a) + cbrt(b) + fabs(p0) + floor(a) + ceil(b) + trunc(p0) + round(a) + rint(b);",
          out = sqrtf(a) + cbrtf(b) + fabsf(p0) + floorf(a) + ceilf(b) + truncf(p0) + roundf(a) + rintf(b););
    CASE2("out = erf(a) + erfc(b); out2 = atan2(a, b) + pow(a, b) + fmod(a, p0);",
          out = erff(a) + erfcf(b); out2 = atan2f(a, b) + powf(a, b) + fmodf(a, p0););
    CASE2("out = fmin(a, b) + fmax(a, p0) + hypot(a, b) + copysign(a, b) + fma(a, b, p0);",
          out = fminf(a, b) + fmaxf(a, p0) + hypotf(a, b) + copysignf(a, b) + fmaf(a, b, p0););
    /* mixed: double; pow(float, integer): float */
    CASE2("od = pow(a, x) + atan2(a, 1.0) + fmin(a, i); out = pow(a, 3); out2 = pow(a, i);",
          od = pow(a, x) + atan2(a, 1.0) + fmin(a, i); out = powf(a, 3.0f); out2 = powf(a, (float)i););
    CASE2("out = sinf(x) + powf(x, 2) + fmaf(x, y, 1); od = sinf(i);",
          out = sinf((float)x) + powf((float)x, 2.0f) + fmaf((float)x, (float)y, 1.0f); od = sinf((float)i););
    /* intrinsics: the accurate functions */
    CASE2("out = __expf(a) + __logf(b) + __sinf(p0) + __cosf(a) + __tanf(b);",
          out = expf(a) + logf(b) + sinf(p0) + cosf(a) + tanf(b););
    CASE2("out = __powf(a, b) + __log2f(p0) + __log10f(a) + __exp10f(b); out2 = __fdividef(a, b);",
          out = powf(a, b) + log2f(p0) + log10f(a) + (float)pow(10.0, (double)b); out2 = a / b;);
    CASE2("out = __saturatef(a); out2 = __saturatef(b * 0.01f); od = __saturatef(x);",
          out = sat01(a); out2 = sat01(b * 0.01f); od = sat01((float)x););
    /* classification */
    CASE2("ob = isnan(a); oi = isinf(x) + isfinite(a) * 2 + signbit(b) * 4 + isnan(y) * 8 + signbit(x) * 16;",
          ob = isnan(a) != 0; oi = (isinf(x) != 0) + (isfinite(a) != 0) * 2 + (signbit(b) != 0) * 4 +
                                   (isnan(y) != 0) * 8 + (signbit(x) != 0) * 16;);
    CASE2("ob = isinf(a) || isfinite(x) && signbit(p0); oi = isnan(i) + isinf(l) * 2;",
          ob = (isinf(a) != 0) || ((isfinite(x) != 0) && (signbit(p0) != 0)); oi = 0;);
    /* min, max, abs */
    CASE2("oi = min(i, j) + max(i, 3); ou = max(u, i); out = min(a, b); od = max(x, a); ol = min(l, i);",
          oi = add32(imin(i, j), imax(i, 3)); ou = umax(u, (uint32_t)i); out = fminf(a, b); od = fmax(x, a);
          ol = lmin(l, i););
    CASE2("oq = max(q, l); oi = min(c8, b8); out2 = max(a, i); od = min(y, 2);",
          oq = qmax(q, (uint64_t)l); oi = imin(c8, b8); out2 = fmaxf(a, (float)i); od = fmin(y, 2.0););
    CASE2("oi = abs(i); ol = abs(l); out = abs(a); od = abs(x); ou = abs(c8) + abs(s16);",
          oi = iabs(i); ol = labs64(l); out = fabsf(a); od = fabs(x); ou = (uint32_t)(iabs(c8) + iabs(s16)););
    /* built-in constants */
    CASE(out = INFINITY * a; out2 = NAN; od = FLT_MAX + DBL_EPSILON + DBL_MIN + FLT_MIN + FLT_EPSILON;);
    CASE(oi = INT_MAX + INT_MIN; ou = UINT_MAX; ol = LLONG_MAX; oq = ULLONG_MAX + LLONG_MIN; od = DBL_MAX;);
    CASE2("od = M_PI * x + HUGE_VAL; out = HUGE_VALF; ol = LLONG_MIN; ob = isinf(-INFINITY);",
          od = 3.14159265358979323846 * x + HUGE_VAL; out = HUGE_VALF; ol = INT64_MIN; ob = 1;);
    CASE(oi = true + true; ob = false; ol = true ? 5 : 6;);
}

/* ---------------------------------------------------------------- errors */
static void expect_error(const char *body, const char *part, int line) {
    char err[256];
    gpuos__ex_program *p;
    strcpy(err, "untouched");
    p = gpuos__ex_compile(body, ex_vars, N_VARS, err, sizeof err);
    CHECK(p == NULL && strstr(err, part) != NULL, "line %d: \"%s\": expected an error with \"%s\", got %s: \"%s\"",
          line, body, part, p ? "a program" : "an error", p ? "" : err);
    gpuos__ex_free(p);
}
#define ERR(body, part) expect_error(body, part, __LINE__)

static void expect_ok(const char *body, int line) {
    char err[256];
    gpuos__ex_program *p = gpuos__ex_compile(body, ex_vars, N_VARS, err, sizeof err);
    gpuos__ex_value v[N_VARS], v0[N_VARS];
    int ok = p != NULL;
    if (p) {
        env_to_values(&inputs[5], v);
        memcpy(v0, v, sizeof v);
        ok = gpuos__ex_run(p, v, err, sizeof err) == 0 && memcmp(v, v0, sizeof v) == 0;
    }
    CHECK(ok, "line %d: \"%s\" should compile and change nothing: %s", line, body, p ? "it did" : err);
    gpuos__ex_free(p);
}

static char *repeat(const char *head, const char *s, int n, const char *mid, const char *t, int n2,
                    const char *tail) {
    size_t len = strlen(head) + strlen(s) * (size_t)n + strlen(mid) + strlen(t) * (size_t)n2 + strlen(tail) + 1;
    char *buf = (char *)malloc(len), *p;
    int k;
    if (!buf) return NULL;
    p = buf;
    p += sprintf(p, "%s", head);
    for (k = 0; k < n; k++) p += sprintf(p, "%s", s);
    p += sprintf(p, "%s", mid);
    for (k = 0; k < n2; k++) p += sprintf(p, "%s", t);
    sprintf(p, "%s", tail);
    return buf;
}

static void test_errors(void) {
    char err[256], small[8];
    gpuos__ex_program *p;
    gpuos__ex_var bad[2];
    int k;
    char *s;

    CHECK((p = gpuos__ex_compile("out = z;", ex_vars, N_VARS, err, sizeof err)) == NULL &&
              strcmp(err, "body:1:7: unknown identifier 'z'") == 0, "got \"%s\"", err);
    CHECK((p = gpuos__ex_compile("out = a;\n  out2 = b + z;", ex_vars, N_VARS, err, sizeof err)) == NULL &&
              strcmp(err, "body:2:14: unknown identifier 'z'") == 0, "got \"%s\"", err);
    ERR("out = ;", "expected an expression before ';'");
    ERR("out = a +", "expected an expression before end of input");
    ERR("out = (a;", "expected ')'");
    ERR("out a;", "expected ';'");
    ERR("out = a", "expected ';' before end of input");
    ERR("out = a b;", "expected ';' before 'b'");
    ERR("a = 1;", "cannot assign to input 'a'");
    ERR("a++;", "cannot assign to input 'a'");
    ERR("out = --i;", "cannot assign to input 'i'");
    ERR("x += 1;", "cannot assign to input 'x'");
    ERR("{ out = a;", "is not closed");
    ERR("if (a) { out = a; ", "is not closed");
    ERR("out = a; }", "unbalanced braces");
    ERR("out = foo(a);", "unknown function 'foo'");
    ERR("out = sinf(a, b);", "'sinf' takes 1 argument, not 2");
    ERR("out = fmaf(a, b);", "takes 3 arguments");
    ERR("out = pow(a);", "takes 2 arguments");
    ERR("out = a % b;", "invalid operands to '%' (float and float)");
    ERR("out = a << 1;", "invalid operands to '<<'");
    ERR("oi = i & x;", "invalid operands to '&'");
    ERR("out = ~a;", "invalid operand to '~'");
    ERR("int k = 1; int k = 2;", "redefinition of 'k'");
    ERR("float a = 1;", "redefinition of 'a'");
    ERR("const int k = 1; k = 2;", "cannot assign to const variable 'k'");
    ERR("const int k;", "needs an initializer");
    ERR("auto t;", "needs an initializer");
    ERR("break;", "'break' outside a loop");
    ERR("if (a) continue;", "'continue' outside a loop");
    ERR("return 1;", "'return' with a value is not supported");
    ERR("switch (i) { }", "'switch' is not supported");
    ERR("goto x;", "'goto' is not supported");
    ERR("oi = sizeof(i);", "'sizeof' is not supported");
    ERR("out = \"x\";", "string literals are not supported");
    ERR("oi = 'x';", "character literals are not supported");
    ERR("#include <math.h>\nout = a;", "preprocessor directives are not supported");
    ERR("out = a[0];", "subscripts");
    ERR("out = a.x;", "member access");
    ERR("out = b->x;", "member access");
    ERR("out = std::sin(a);", "'::'");
    ERR("out = *a;", "dereference");
    ERR("out = &a;", "address-of");
    ERR("out = 1.0L;", "long double");
    ERR("long double t = 1;", "'long double' is not supported");
    ERR("void g();", "'void' is not supported");
    ERR("unsigned float t = 1;", "invalid type");
    ERR("short long t = 1;", "invalid type");
    ERR("ol = 99999999999999999999;", "too large");
    ERR("ol = 9223372036854775808;", "too large");
    ERR("ol = 0x1FFFFFFFFFFFFFFFF;", "too large");
    ERR("oi = 08;", "invalid numeric literal '08'");
    ERR("out = 1.0.0;", "invalid numeric literal");
    ERR("oi = 0x;", "invalid numeric literal");
    ERR("oi = 1z;", "invalid numeric literal");
    ERR("oi = 1f;", "invalid numeric literal");
    ERR("oi = 1uu;", "invalid numeric literal");
    ERR("oi = 1lL;", "invalid numeric literal");
    ERR("out = 0x1.8;", "invalid numeric literal");
    ERR("out = 1e;", "invalid numeric literal");
    ERR("/* unterminated", "body:1:1: unterminated comment");
    ERR("out = a @ b;", "unexpected character '@'");
    ERR("out = a \x80;", "unexpected byte 0x80");
    ERR("out = a \\\n;", "unexpected character '\\'");
    ERR("ou = abs(u);", "'abs' of unsigned int is ambiguous");
    ERR("ob++;", "on a bool");
    ERR("else out = a;", "'else' without a matching 'if'");
    ERR("out = (a > b) = 1;", "assignment needs a variable");
    ERR("out = a + 1 = 2;", "assignment needs a variable");
    ERR("(f ? out : out2) = 3;", "assignment needs a variable");
    ERR("3++;", "needs a variable");
    ERR("float t = 1; t(2);", "'t' is a variable, not a function");
    ERR("out = (a)(b);", "called object is not a function");
    ERR("out = a ? b;", "expected ':'");
    ERR("int;", "expected a variable name before ';'");
    ERR("int if = 3;", "expected a variable name before 'if'");
    ERR("float t(3);", "only '=' initialization");
    ERR("float t{3};", "only '=' initialization");
    ERR("out = {1};", "braced initializers");
    ERR("out = (auto)a;", "'auto' is not allowed");
    ERR("out = static_cast<float(a);", "expected '>'");
    ERR("out = static_cast<>(a);", "expected a type");
    ERR("for (int k = 0; k < 3; k++ { }", "expected ')'");
    ERR("for (int k = 0; k < 3) { }", "expected ';'");
    ERR("while (a) out = a", "expected ';'");
    ERR("do out = a; while (a)", "expected ';'");
    ERR("do out = a;", "expected 'while'");
    ERR("if a out = b;", "expected '('");
    ERR("out = (int a);", "expected ')' before 'a'");
    ERR("out = int a;", "unexpected type name");
    ERR("int k = 1; out = k; }", "unbalanced");
    ERR("for (int k = 0; k < 3; k++) { } out = k;", "unknown identifier 'k'");
    ERR("{ int k = 1; } out = k;", "unknown identifier 'k'");
    ERR("out = a; a:", "expected ';'");
    ERR("out = a +\n\n   $;", "body:3:4: unexpected character '$'");
    ERR("out = i ++ ++;", "cannot assign to input 'i'");

    /* bodies that are fine and do nothing */
    expect_ok("", __LINE__);
    expect_ok("   // only a comment\n", __LINE__);
    expect_ok("/* a */ /* b */", __LINE__);
    expect_ok(";;;", __LINE__);
    expect_ok("{}", __LINE__);
    expect_ok("{ { } { ; } }", __LINE__);
    expect_ok("if (a) { } else { }", __LINE__);
    expect_ok("a + b; x * y; i;", __LINE__);
    expect_ok("float t = a; t = t * t;", __LINE__);
    expect_ok("for (int k = 0; k < 100; k++) { }", __LINE__);
    expect_ok("return;", __LINE__);
    expect_ok("return; out = 1;", __LINE__);

    /* the arguments */
    CHECK(gpuos__ex_compile(NULL, ex_vars, N_VARS, err, sizeof err) == NULL && strstr(err, "NULL"), "%s", err);
    CHECK(gpuos__ex_compile("", NULL, 3, err, sizeof err) == NULL && err[0], "%s", err);
    CHECK(gpuos__ex_compile("", ex_vars, -1, err, sizeof err) == NULL && err[0], "%s", err);
    CHECK(gpuos__ex_compile("", ex_vars, GPUOS__EX_MAX_VARS + 1, err, sizeof err) == NULL && err[0], "%s", err);
    CHECK(gpuos__ex_compile("out = z;", ex_vars, N_VARS, NULL, 0) == NULL, "no err buffer");
    CHECK(gpuos__ex_compile("out = z;", ex_vars, N_VARS, small, sizeof small) == NULL &&
              strlen(small) == sizeof small - 1 && memcmp(small, "body:1:", 7) == 0, "\"%s\"", small);
    bad[0].name = "v";
    bad[0].type = GPUOS__EX_F32;
    bad[0].writable = 0;
    bad[1] = bad[0];
    CHECK(gpuos__ex_compile("", bad, 2, err, sizeof err) == NULL && strstr(err, "'v' appears twice"), "%s", err);
    bad[1].name = "1v";
    CHECK(gpuos__ex_compile("", bad, 2, err, sizeof err) == NULL && strstr(err, "vars[1]"), "%s", err);
    bad[1].name = "float";
    CHECK(gpuos__ex_compile("", bad, 2, err, sizeof err) == NULL && strstr(err, "vars[1]"), "%s", err);
    bad[1].name = NULL;
    CHECK(gpuos__ex_compile("", bad, 2, err, sizeof err) == NULL && strstr(err, "vars[1]"), "%s", err);
    bad[1].name = "w";
    bad[1].type = (gpuos__ex_type)99;
    CHECK(gpuos__ex_compile("", bad, 2, err, sizeof err) == NULL && strstr(err, "invalid type"), "%s", err);
    CHECK(gpuos__ex_run(NULL, NULL, err, sizeof err) == -1 && err[0], "run(NULL)");

    /* deep nesting: an error, not a crash */
    s = repeat("out = ", "(", 100000, "a", ")", 100000, ";");
    ERR(s, "nesting too deep");
    free(s);
    s = repeat("out = ", "-", 100000, "a", "", 0, ";");
    ERR(s, "nesting too deep");
    free(s);
    s = repeat("", "{", 100000, "", "}", 100000, "");
    ERR(s, "nesting too deep");
    free(s);
    s = repeat("", "if (a) ", 20000, "out = a;", "", 0, "");
    ERR(s, "nesting too deep");
    free(s);
    s = repeat("out = ", "a ? ", 20000, "b", " : p0", 20000, ";");
    ERR(s, "nesting too deep");
    free(s);
    s = repeat("out = ", "sinf(", 20000, "a", ")", 20000, ";");
    ERR(s, "nesting too deep");
    free(s);
    s = repeat("", "while (a) ", 20000, ";", "", 0, "");
    ERR(s, "nesting too deep");
    free(s);
    s = repeat("out = ", "(", 50, "a", ")", 50, ";"); /* moderate nesting is fine */
    p = gpuos__ex_compile(s, ex_vars, N_VARS, err, sizeof err);
    CHECK(p != NULL, "50 parentheses: %s", err);
    gpuos__ex_free(p);
    free(s);
    /* long flat bodies: no recursion, temporaries reused */
    s = repeat("out = a", " + a", 100000, ";", "", 0, "");
    p = gpuos__ex_compile(s, ex_vars, N_VARS, err, sizeof err);
    CHECK(p != NULL, "a long sum: %s", err);
    if (p) {
        gpuos__ex_value v[N_VARS];
        float want = inputs[300].a;
        env_to_values(&inputs[300], v);
        for (k = 0; k < 100000; k++) want = want + inputs[300].a;
        CHECK(gpuos__ex_run(p, v, err, sizeof err) == 0 && same_f(v[17].f, want), "%g vs %g", (double)v[17].f,
              (double)want);
    }
    gpuos__ex_free(p);
    free(s);
    s = repeat("", "oi = oi + 1; ", 50000, "", "", 0, "");
    p = gpuos__ex_compile(s, ex_vars, N_VARS, err, sizeof err);
    CHECK(p != NULL, "50000 statements: %s", err);
    if (p) {
        gpuos__ex_value v[N_VARS];
        env_to_values(&inputs[0], v);
        CHECK(gpuos__ex_run(p, v, err, sizeof err) == 0 && v[20].i == inputs[0].oi + 50000, "%lld", (long long)v[20].i);
    }
    gpuos__ex_free(p);
    free(s);
    s = repeat("", "{ float t = a; ", 1000, "", "}", 1000, "");
    ERR(s, "nesting too deep");
    free(s);
    s = malloc(1000 * 24 + 1);
    if (s) {
        char *e = s;
        for (k = 0; k < 1000; k++) e += sprintf(e, "float v%d = %d.5f; ", k, k);
        ERR(s, "too many");
        free(s);
    }
}

/* ---------------------------------------------------------------- the loop budget */
/* C++17 sequences a shift's left operand before its right one: "k << (k = 3)" shifts the old
   k (a fuzzer's find: the interpreter read k after the assignment) */
/* <stdint.h>'s limits, as the device prelude defines them (a user's find: INT32_MIN was an
   unknown identifier on the host) */
static void test_stdint_limits(void) {
    CASE(oi = INT8_MIN + INT8_MAX + UINT8_MAX + INT16_MIN + INT16_MAX + UINT16_MAX; ou = UINT32_MAX - u;);
    CASE(oi = INT32_MIN + (i & 7); ol = INT64_MIN / 2 + INT32_MAX; oq = UINT64_MAX - q; od = (double)INT64_MAX;);
}

static void test_shift_order(void) {
    CASE2("int k = 1; oi = k << (k = 3); int mm = 40; ol = mm >> (mm = 2); ou = u; ou = ou << (ou = 1);",
          int k = 1; int k0 = k; k = 3; oi = k0 << k; int mm = 40; int m0 = mm; mm = 2; ol = m0 >> mm;
          ou = u; unsigned u0 = ou; ou = 1; ou = u0 << ou;);
}

static void test_loop_budget(void) {
    static const char *const endless[] = {"oi = 1; for (;;) { }", "oi = 1; while (true) oi++;",
                                          "oi = 1; do { } while (1);", "oi = 1; for (int k = 0; k >= 0; k += 0) { }",
                                          "oi = 1; for (;;) { continue; }",
                                          "oi = 1; for (int r = 0; r < 1024; r++) for (int s = 0; s < 1024; s++) { }"};
    char err[256];
    gpuos__ex_value v[N_VARS], v0[N_VARS];
    gpuos__ex_program *p;
    size_t k;
    for (k = 0; k < sizeof endless / sizeof endless[0]; k++) {
        p = gpuos__ex_compile(endless[k], ex_vars, N_VARS, err, sizeof err);
        CHECK(p != NULL, "\"%s\": %s", endless[k], err);
        if (!p) continue;
        env_to_values(&inputs[1], v);
        memcpy(v0, v, sizeof v);
        CHECK(gpuos__ex_run(p, v, err, sizeof err) == -1 && strstr(err, "loop ran more than 1048576 iterations") &&
                  memcmp(v, v0, sizeof v) == 0,
              "\"%s\": %s", endless[k], err);
        gpuos__ex_free(p);
    }
    CHECK(strcmp(err, "body:1: loop ran more than 1048576 iterations") == 0, "\"%s\"", err);
    /* exactly the budget is fine, one more is not */
    p = gpuos__ex_compile("ol = 0; for (int k = 0; k < 1048576; k++) ol++;", ex_vars, N_VARS, err, sizeof err);
    env_to_values(&inputs[1], v);
    CHECK(p && gpuos__ex_run(p, v, err, sizeof err) == 0 && v[22].i == 1048576, "%s", err);
    gpuos__ex_free(p);
    p = gpuos__ex_compile("ol = 0;\nwhile (ol < 1048577) ol++;", ex_vars, N_VARS, err, sizeof err);
    CHECK(p && gpuos__ex_run(p, v, err, sizeof err) == -1 && strstr(err, "body:2: loop ran"), "%s", err);
    /* the budget is per run: the same program runs again */
    CHECK(p && gpuos__ex_run(p, v, err, sizeof err) == -1, "%s", err);
    gpuos__ex_free(p);
    p = gpuos__ex_compile("ol = 0; for (int k = 0; k < 1000; k++) ol++;", ex_vars, N_VARS, err, sizeof err);
    for (k = 0; p && k < 2000; k++) /* 2000 * 1000 iterations in all, each run within its budget */
        if (gpuos__ex_run(p, v, err, sizeof err) != 0) break;
    CHECK(k == 2000 && v[22].i == 1000, "run %d: %s", (int)k, err);
    gpuos__ex_free(p);
    { /* a long body in an endless loop stops at the instruction budget, well before 2^20 of
         its iterations (which took a minute a run for 10000 statements: a fuzzer's find) */
        static const char stmt[] = "od = od * 1.0000001 + x; ";
        const int n = 2000;
        char *body = (char *)malloc(16 + n * (sizeof stmt - 1) + 4);
        if (body) {
            char *q = body + sprintf(body, "for (;;) { ");
            for (k = 0; k < (size_t)n; k++) q += sprintf(q, "%s", stmt);
            strcpy(q, "}");
            p = gpuos__ex_compile(body, ex_vars, N_VARS, err, sizeof err);
            CHECK(p != NULL, "long loop: %s", err);
            env_to_values(&inputs[1], v);
            memcpy(v0, v, sizeof v);
            CHECK(p && gpuos__ex_run(p, v, err, sizeof err) == -1 && strstr(err, "body:1: loops ran more than") &&
                      strstr(err, "instructions") && memcmp(v, v0, sizeof v) == 0,
                  "long loop: %s", err);
            gpuos__ex_free(p);
            free(body);
        }
    }
}

/* ---------------------------------------------------------------- the interface's value rules */
static void test_values(void) {
    static const gpuos__ex_var vs[] = {{"i", GPUOS__EX_I32, 0}, {"t", GPUOS__EX_BOOL, 0}, {"c", GPUOS__EX_I8, 0},
                                       {"u", GPUOS__EX_U16, 0}, {"o", GPUOS__EX_I64, 1},  {"r", GPUOS__EX_I32, 1},
                                       {"s", GPUOS__EX_U32, 1}, {"z", GPUOS__EX_BOOL, 1}, {"g", GPUOS__EX_I8, 1}};
    char err[256];
    gpuos__ex_value v[9];
    gpuos__ex_program *p = gpuos__ex_compile("o = i * 10 + t + c + u; r = i; s = i; z = t; g = c;", vs, 9, err,
                                             sizeof err);
    CHECK(p != NULL, "%s", err);
    if (!p) return;
    memset(v, 0, sizeof v);
    v[0].u = 0xFFFFFFFFu;          /* an I32 given as (uint32_t)-1 */
    v[1].u = 0xF00;                /* the low 8 bits of a BOOL count: false */
    v[2].u = 0x1234FFu;            /* I8 -1 */
    v[3].u = 0xABCD0002u;          /* U16 2 */
    v[5].u = 0x123456789ull;       /* outputs are overwritten */
    CHECK(gpuos__ex_run(p, v, err, sizeof err) == 0, "%s", err);
    CHECK(v[4].i == -10 + 0 - 1 + 2, "o = %lld", (long long)v[4].i);
    CHECK(v[5].i == -1 && v[6].u == 0xFFFFFFFFu && v[7].u == 0 && v[8].i == -1, "%llx %llx %llx %llx",
          (unsigned long long)v[5].u, (unsigned long long)v[6].u, (unsigned long long)v[7].u,
          (unsigned long long)v[8].u);
    CHECK(v[0].u == 0xFFFFFFFFu && v[1].u == 0xF00 && v[2].u == 0x1234FFu, "inputs must not change");
    v[1].u = 0x102; /* true */
    CHECK(gpuos__ex_run(p, v, err, sizeof err) == 0 && v[7].u == 1 && v[4].i == -10 + 1 - 1 + 2, "%lld",
          (long long)v[4].i);
    gpuos__ex_free(p);
}

/* ---------------------------------------------------------------- garbage and mutations */
static const char *const vocab[] = {
    "(", ")", "{", "}", ";", "=", "+", "-", "*", "/", "%", "<<", ">>", "<", ">", "==", "!=", "&&", "||", "!", "~",
    "?", ":", ",", "++", "--", "+=", "&=", "a", "b", "i", "u", "l", "x", "out", "oi", "ol", "ob", "o8", "0", "1",
    "-1", "0x7fffffff", "1e999", "1e-999f", ".5f", "3.0", "99999999999999999999", "08", "0x", "int ", "float ",
    "int8_t ", "unsigned ", "const ", "auto ", "bool ", "if (a) ", "else ", "for (;;) ", "while (i) ", "do ",
    "break;", "continue;", "return;", "sinf(", "pow(", "min(", "fmaf(", "__saturatef(", "abs(", "(int)",
    "(float)", "static_cast<int>(", "INFINITY", "NAN", "/*", "*/", "//", "\n", " ", "k", "int k = 0; ", "k++",
    "for (int k = 0; k < 3; k++) ", "\"", "'", "#", "[", ".", "@", "\\", "\x01", "\xff"};

static char *mutate(const char *src, uint64_t *len_out) {
    size_t n = strlen(src), cap = n + 256;
    char *s = (char *)malloc(cap + 1);
    int k, times = 1 + (rnd() % 4 == 0 ? (int)(rnd() % 3) : 0);
    if (!s) return NULL;
    memcpy(s, src, n + 1);
    for (k = 0; k < times; k++) {
        size_t at = n ? (size_t)(rnd() % (n + 1)) : 0, cnt;
        const char *ins;
        switch (rnd() % 6) {
        case 0: /* delete a few characters */
            cnt = (size_t)(rnd() % 4) + 1;
            if (at + cnt > n) cnt = n - at;
            memmove(s + at, s + at + cnt, n - at - cnt + 1);
            n -= cnt;
            break;
        case 1: /* replace one character */
            if (at < n) s[at] = (char)(1 + rnd() % 255);
            break;
        case 2: /* swap two */
            if (n > 1) {
                size_t b2 = (size_t)(rnd() % n);
                char t;
                if (at >= n) at = n - 1;
                t = s[at];
                s[at] = s[b2];
                s[b2] = t;
            }
            break;
        default: /* insert a token, or a piece of the body itself */
            if (rnd() % 3 == 0 && n > 0) {
                size_t from = (size_t)(rnd() % n);
                cnt = (size_t)(rnd() % 12) + 1;
                if (from + cnt > n) cnt = n - from;
                if (n + cnt > cap) break;
                memmove(s + at + cnt, s + at, n - at + 1);
                memmove(s + at, s + (from >= at ? from + cnt : from), cnt);
                n += cnt;
            } else {
                ins = vocab[rnd() % (sizeof vocab / sizeof vocab[0])];
                cnt = strlen(ins);
                if (n + cnt > cap) break;
                memmove(s + at + cnt, s + at, n - at + 1);
                memcpy(s + at, ins, cnt);
                n += cnt;
            }
            break;
        }
    }
    *len_out = n;
    return s;
}

static void test_garbage(void) {
    const size_t n = 1 << 20;
    char *g = (char *)malloc(n + 1), err[256];
    int k, compiled = 0, failed = 0, runs = 0, run_errors = 0, odd = 0;
    gpuos__ex_program *p;
    size_t t;
    if (!g) return;
    /* 1 MB of random bytes (never NUL) */
    for (t = 0; t < n; t++) g[t] = (char)(1 + rnd() % 255);
    g[n] = 0;
    p = gpuos__ex_compile(g, ex_vars, N_VARS, err, sizeof err);
    CHECK(p == NULL && strncmp(err, "body:", 5) == 0, "1 MB of random bytes: %s", p ? "compiled" : err);
    gpuos__ex_free(p);
    /* 1 MB of random tokens */
    for (t = 0; t < n - 32;) {
        const char *w = vocab[rnd() % 80]; /* the first 80: no bytes the lexer refuses */
        size_t len = strlen(w);
        memcpy(g + t, w, len);
        t += len;
        g[t++] = ' ';
    }
    g[t] = 0;
    p = gpuos__ex_compile(g, ex_vars, N_VARS, err, sizeof err);
    CHECK(p == NULL && strncmp(err, "body:", 5) == 0, "1 MB of random tokens: %s", p ? "compiled" : err);
    gpuos__ex_free(p);
    /* 1 MB of one valid statement, then one of spaces, then an identifier of 1 MB */
    for (t = 0; t + 9 < n; t += 9) memcpy(g + t, "oi += 1; ", 9);
    g[t] = 0;
    p = gpuos__ex_compile(g, ex_vars, N_VARS, err, sizeof err);
    CHECK(p != NULL, "1 MB of statements: %s", err);
    gpuos__ex_free(p);
    memset(g, ' ', n);
    g[n] = 0;
    p = gpuos__ex_compile(g, ex_vars, N_VARS, err, sizeof err);
    CHECK(p != NULL, "1 MB of spaces: %s", err);
    gpuos__ex_free(p);
    memset(g, 'z', n);
    p = gpuos__ex_compile(g, ex_vars, N_VARS, err, sizeof err);
    CHECK(p == NULL && strstr(err, "unknown identifier 'zzzz"), "1 MB identifier: %s", err);
    gpuos__ex_free(p);
    memset(g, '9', n);
    p = gpuos__ex_compile(g, ex_vars, N_VARS, err, sizeof err);
    CHECK(p == NULL && strstr(err, "too large"), "1 MB number: %s", err);
    gpuos__ex_free(p);
    memcpy(g, "od = 0.", 7);
    memcpy(g + n - 1, ";", 2);
    p = gpuos__ex_compile(g, ex_vars, N_VARS, err, sizeof err); /* od = 0.999...9; (1 MB) */
    CHECK(p != NULL, "1 MB float literal: %s", err);
    gpuos__ex_free(p);
    free(g);

    /* 10000 mutations of the valid bodies: each compiles or fails with a message; what
       compiles runs (to the end or to the loop budget) */
    rng_state = ctest_rng(test_seed, 12345);
    for (k = 0; k < 10000 && n_bodies > 0; k++) {
        uint64_t len;
        char *s = mutate(bodies[rnd() % (uint64_t)n_bodies], &len);
        if (!s) break;
        err[0] = 0;
        p = gpuos__ex_compile(s, ex_vars, N_VARS, err, sizeof err);
        if (!p) {
            failed++;
            if (strncmp(err, "body:", 5) != 0 && strncmp(err, "body needs", 10) != 0) {
                if (!odd++) fprintf(stderr, "mutation %d: odd message \"%s\" for \"%s\"\n", k, err, s);
            }
        } else {
            int r;
            compiled++;
            for (r = 0; r < 3; r++) {
                gpuos__ex_value v[N_VARS];
                env_to_values(&inputs[(k + r * 97) % N_ROWS], v);
                runs++;
                if (gpuos__ex_run(p, v, err, sizeof err) != 0) {
                    run_errors++;
                    if (!strstr(err, "loop ran more than") && !odd++)
                        fprintf(stderr, "mutation %d: odd run error \"%s\"\n", k, err);
                }
            }
            gpuos__ex_free(p);
        }
        free(s);
    }
    CHECK(k == 10000 && odd == 0, "%d mutations, %d odd results", k, odd);
    printf("test_expr: 10000 mutations: %d compiled (%d runs, %d stopped by the loop budget), %d refused\n",
           compiled, runs, run_errors, failed);
}

/* ---------------------------------------------------------------- time of a run */
static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void bench(void) {
    static const gpuos__ex_var vs[] = {{"a", GPUOS__EX_F32, 0}, {"b", GPUOS__EX_F32, 0}, {"p0", GPUOS__EX_F32, 0},
                                       {"out", GPUOS__EX_F32, 1}};
    const char *body = "out = a * p0 + b * 0.5f;";
    char err[256];
    gpuos__ex_program *p = gpuos__ex_compile(body, vs, 4, err, sizeof err);
    gpuos__ex_value v[4];
    const int n = 2000000;
    double t0, best = 1e30, sum = 0;
    int k, rep;
    CHECK(p != NULL, "%s", err);
    if (!p) return;
    v[0].f = 1.5f;
    v[1].f = 2.0f;
    v[2].f = 0.25f;
    v[3].f = 0;
    for (rep = 0; rep < 3; rep++) {
        t0 = now_ns();
        for (k = 0; k < n; k++) {
            v[0].f = (float)k;
            gpuos__ex_run(p, v, err, sizeof err);
            sum += v[3].f;
        }
        t0 = (now_ns() - t0) / n;
        if (t0 < best) best = t0;
    }
    CHECK(v[3].f == (float)(n - 1) * 0.25f + 1.0f, "%g", (double)v[3].f);
    printf("test_expr: \"%s\" (3 float operations, 4 variables): %.1f ns/run (information, not checked)%s\n", body,
           best, sum == 0 ? " " : "");
    gpuos__ex_free(p);
}

/* pow and powf of a constant 2 or -1 are x * x and 1 / x, as the C and CUDA compilers fold
   them (the C reference of the random rows is compiled so): glibc's powf(-153.434525f, 2) is
   an ulp above x * x, which a random row once met. */
static void test_pow_folds(void) {
    static const gpuos__ex_var vs[] = {{"x", GPUOS__EX_F32, 0}, {"d", GPUOS__EX_F64, 0}, {"i", GPUOS__EX_I32, 0},
                                       {"o1", GPUOS__EX_F32, 1}, {"o2", GPUOS__EX_F64, 1}, {"o3", GPUOS__EX_F32, 1},
                                       {"o4", GPUOS__EX_F64, 1}, {"o5", GPUOS__EX_F32, 1}};
    const char *body = "o1 = powf(x, 2); o2 = pow(d, 2); o3 = powf(x, -1); o4 = pow(d, -1.0); o5 = powf(d, i);";
    char err[256];
    gpuos__ex_program *p = gpuos__ex_compile(body, vs, 8, err, sizeof err);
    gpuos__ex_value v[8];
    volatile float x = -153.434525f, xi = 1.5f;
    volatile double d = -153.43452796777376;
    CHECK(p != NULL, "%s", err);
    if (!p) return;
    memset(v, 0, sizeof v);
    v[0].f = x, v[1].d = d, v[2].i = 3;
    CHECK(gpuos__ex_run(p, v, err, sizeof err) == 0, "%s", err);
    CHECK(v[3].f == x * x && v[4].d == d * d && v[5].f == 1.0f / x && v[6].d == 1.0 / d,
          "pow folds: %.9g %.17g %.9g %.17g", (double)v[3].f, v[4].d, (double)v[5].f, v[6].d);
    CHECK(v[7].f == powf((float)d, 3.0f), "powf(d, i) with a variable i is the library's: %.9g", (double)v[7].f);
    v[0].f = xi;
    CHECK(gpuos__ex_run(p, v, err, sizeof err) == 0 && v[3].f == 2.25f, "powf(1.5, 2) = %.9g", (double)v[3].f);
    gpuos__ex_free(p);
}

int main(void) {
    test_seed = ctest_seed("test_expr");
    rng_state = ctest_rng(test_seed, rng_state);
    (void)ctest_device;
    make_inputs();
    test_arithmetic();
    test_conversions();
    test_control();
    test_math();
    test_pow_folds();
    test_errors();
    test_stdint_limits();
    test_shift_order();
    test_loop_budget();
    test_values();
    test_garbage();
    bench();
    return ctest_summary("test_expr");
}
