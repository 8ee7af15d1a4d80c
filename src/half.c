/* half.c - f16 (IEEE binary16) and bf16 (bfloat16) conversions to and from f32 / f64.

   Widening is exact. Narrowing rounds once to nearest, ties to even; overflow gives
   inf, values below half the smallest subnormal give a signed zero, NaN stays NaN
   (quiet, sign and the top payload bits kept: on the host; the device's conversions give
   the canonical NaN, README "Semantics"). The f32 versions are the hot path of
   host kernels on f16/bf16 data; the f64 versions (casts, fill) round once from double,
   never through f32. */
#include "gpuos_runtime.h"

#include <string.h> /* memcpy for bit casts */

static uint32_t half_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float half_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---------------------------------------------------------------- widening */
float gpuos__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1fu) /* inf or NaN: payload moves to the top of the f32 mantissa */
        return half_bits_f32(sign | 0x7f800000u | (mant << 13));
    if (exp != 0) /* normal */
        return half_bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
    if (mant == 0) return half_bits_f32(sign); /* signed zero */
    /* subnormal: mant * 2^-24, normalised for f32 */
    exp = 113u; /* f32 exponent field of 2^-14 */
    while ((mant & 0x400u) == 0) {
        mant <<= 1;
        exp--;
    }
    mant &= 0x3ffu;
    return half_bits_f32(sign | (exp << 23) | (mant << 13));
}

float gpuos__bf16_to_f32(uint16_t h) { return half_bits_f32((uint32_t)h << 16); }

/* ---------------------------------------------------------------- narrowing from f32 */
uint16_t gpuos__f32_to_f16(float f) {
    uint32_t x = half_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) {
        if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu)); /* quiet NaN */
        return (uint16_t)(sign | 0x7c00u);                                           /* inf */
    }
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to inf */
    if (ax >= 0x38800000u) {                                  /* >= 2^-14: normal f16 */
        uint32_t h = ((ax >> 23) - 112u) << 10 | ((ax >> 13) & 0x3ffu);
        uint32_t rem = ax & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* a carry moves into the exponent */
        return (uint16_t)(sign | h);
    }
    {
        /* subnormal f16 (or zero): result = M * 2^(e-126) in units of 2^-24 */
        uint32_t e = ax >> 23;
        uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        uint32_t s = 126u - e; /* >= 14 */
        uint32_t q, rem, half;
        if (e == 0 || s >= 25u) return sign; /* below half the smallest subnormal */
        q = m >> s;
        rem = m & ((1u << s) - 1u);
        half = 1u << (s - 1u);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return (uint16_t)(sign | q);
    }
}

uint16_t gpuos__f32_to_bf16(float f) {
    uint32_t x = half_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1u); /* round to nearest even; overflow carries into inf */
    return (uint16_t)(x >> 16);
}

/* ---------------------------------------------------------------- narrowing from f64 */
/* Rounds d once to a binary format with ebits exponent bits and mbits mantissa bits
   (f16: 5, 10; bf16: 8, 7) and returns its bits. */
static uint32_t half_from_f64(double d, int ebits, int mbits) {
    uint64_t x;
    uint32_t sign, r;
    int64_t e, bias = ((int64_t)1 << (ebits - 1)) - 1, emin = 1 - bias;
    int64_t emax_field = ((int64_t)1 << ebits) - 1;
    uint64_t mant, m;
    int s;
    memcpy(&x, &d, sizeof x);
    sign = (uint32_t)(x >> 63) << (ebits + mbits);
    e = (int64_t)((x >> 52) & 0x7ffu);
    mant = x & (((uint64_t)1 << 52) - 1u);
    if (e == 0x7ff) {
        uint32_t inf = (uint32_t)emax_field << mbits;
        if (mant == 0) return sign | inf;
        return sign | inf | (1u << (mbits - 1)) | (uint32_t)(mant >> (52 - mbits)); /* quiet NaN */
    }
    if (e == 0) return sign; /* zero or f64 subnormal: far below either target's range */
    e -= 1023;               /* unbiased: d = m * 2^(e-52) */
    m = mant | ((uint64_t)1 << 52);
    if (e >= emin) { /* normal target */
        uint64_t rem, half;
        int64_t te = e + bias;
        if (te >= emax_field) return sign | ((uint32_t)emax_field << mbits);
        s = 52 - mbits;
        r = (uint32_t)((uint64_t)te << mbits | ((m >> s) & (((uint64_t)1 << mbits) - 1u)));
        rem = m & (((uint64_t)1 << s) - 1u);
        half = (uint64_t)1 << (s - 1);
        if (rem > half || (rem == half && (r & 1u))) r++; /* may carry into the exponent, up to inf */
        return sign | r;
    }
    {
        /* subnormal target: units of 2^(emin - mbits) */
        uint64_t q, rem, half;
        int64_t shift = (52 - mbits) + (emin - e);
        if (shift >= 54) return sign; /* m < 2^53, so m / 2^shift < 1/2 */
        s = (int)shift;
        q = m >> s;
        rem = m & (((uint64_t)1 << s) - 1u);
        half = (uint64_t)1 << (s - 1);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return sign | (uint32_t)q;
    }
}

uint16_t gpuos__f64_to_f16(double d) { return (uint16_t)half_from_f64(d, 5, 10); }
uint16_t gpuos__f64_to_bf16(double d) { return (uint16_t)half_from_f64(d, 8, 7); }
