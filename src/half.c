/* half.c - f16 (IEEE binary16) and bf16 (bfloat16) conversions to and from f32 / f64.

   Widening is exact. Narrowing rounds once to nearest, ties to even; overflow gives
   inf, values below half the smallest subnormal give a signed zero, NaN stays NaN
   (quiet, sign and the top payload bits kept: on the host; the device's conversions give
   the canonical NaN, README "Semantics"). The f32 versions, the hot path of host kernels on
   f16/bf16 data, are inline in gpuos_ops.h; here the f64 versions (casts, fill), which round
   once from double, never through f32. */
#include "gpuos_runtime.h"

#include <string.h> /* memcpy for bit casts */

/* The f32 conversions (the host kernels' hot path) are inline in gpuos_ops.h. */

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
