/* gpuos_ops.h - what the generated code (src/generated/, from gen/ + templates/) gives
   the runtime: the operator table, host kernels and the device source.

   The runtime never names an operator; it looks everything up here by (op, dtype).
   Private names start with gpuos__ (double underscore). */
#ifndef GPUOS_OPS_H
#define GPUOS_OPS_H

#include "../gpuos.h"
#include "gpuos_plan.h"
/* GPUOS__DTYPES(X): every dtype's size, class and limits, from gen/ops.py */
#include "generated/gpuos_dtypes.h"

#include <string.h> /* memcpy (gpuos__copy_el) */

/* ---------------------------------------------------------------- operator table */
typedef enum gpuos__kind {
    GPUOS__KIND_EW = 0,     /* element-wise: unary, binary, ternary, where, copy, cast, fill, arange */
    GPUOS__KIND_REDUCE = 1, /* reductions over axes */
    GPUOS__KIND_ROWS = 2,   /* softmax, log_softmax, layernorm, rmsnorm */
    GPUOS__KIND_MATMUL = 3
} gpuos__kind;

typedef enum gpuos__out_rule {
    GPUOS__OUT_SAME = 0, /* output dtype = key dtype */
    GPUOS__OUT_BOOL = 1,
    GPUOS__OUT_I64 = 2,
    GPUOS__OUT_ANY = 3   /* cast: any output dtype */
} gpuos__out_rule;

#define GPUOS__KEY_OUT 255 /* key_input value: the output's dtype selects the code (fill, arange) */

typedef struct gpuos__op_info {
    const char *name;
    uint8_t kind;       /* gpuos__kind */
    uint8_t n_in;       /* inputs that must be given */
    uint8_t n_in_max;   /* inputs including optional ones (layernorm: 3, rmsnorm: 2) */
    uint8_t out_rule;   /* gpuos__out_rule */
    uint8_t key_input;  /* index of the input whose dtype selects the code; GPUOS__KEY_OUT */
    uint8_t inplace_ok; /* 1: out may be exactly the same view as an input */
    uint8_t same_dtype_from; /* inputs from this index on must share the key dtype (where: 1) */
    uint8_t bool_input0;     /* 1: input 0 must be bool (where's cond) */
    uint8_t n_scalars;       /* gpuos_task.scalar[0..n_scalars) it reads (gen/ops.py Op.n_scalars) */
    uint32_t dtypes;    /* bit d set: the op is defined for key dtype d (docs/OPERATORS.md) */
} gpuos__op_info;

extern const gpuos__op_info gpuos__ops[GPUOS_OP_COUNT];

/* Dtypes and ranks this build was generated for (make gen DTYPES=... RANKS=...). */
extern const uint32_t gpuos__generated_dtypes; /* bit mask over gpuos_dtype */
extern const uint32_t gpuos__generated_ranks;  /* bit mask over 0..8 */

/* ---------------------------------------------------------------- host kernels */
/* Element-wise inner loop over n items along the innermost plan dimension.
   ptr[k] is the address of operand k's first item, stride[k] its byte stride,
   index0 the flat row-major output index of the first item (arange). */
typedef void (*gpuos__ew_loop_fn)(int64_t n, int64_t index0, char *const *ptr, const int64_t *stride,
                                  const double *scalar);
/* Runs loop over items [begin, end) of an element-wise plan of the given rank. */
typedef void (*gpuos__ew_iter_fn)(const gpuos__ew_plan *plan, gpuos__ew_loop_fn loop, int64_t begin,
                                  int64_t end);
typedef void (*gpuos__reduce_fn)(const gpuos__reduce_plan *plan, int64_t begin, int64_t end);
typedef void (*gpuos__rows_fn)(const gpuos__rows_plan *plan, int64_t begin, int64_t end);
typedef void (*gpuos__matmul_fn)(const gpuos__matmul_plan *plan, int64_t begin, int64_t end);

/* NULL when there is no code for the combination. For cast, key is the input dtype
   and out the output dtype; for every other op out is ignored by the lookup. */
gpuos__ew_loop_fn gpuos__host_ew_loop(gpuos_op op, gpuos_dtype key, gpuos_dtype out);
gpuos__ew_iter_fn gpuos__host_ew_iter(int rank);
gpuos__reduce_fn gpuos__host_reduce(gpuos_op op, gpuos_dtype key);
gpuos__rows_fn gpuos__host_rows(gpuos_op op, gpuos_dtype key);
gpuos__matmul_fn gpuos__host_matmul(gpuos_dtype key);
/* |x| and gcd(a, b) of strides and sizes (plan.c, tensor.c, the host kernels). */
static inline int64_t gpuos__abs64(int64_t x) { return x < 0 ? -x : x; }
static inline int64_t gpuos__gcd64(int64_t a, int64_t b) {
    while (b) {
        const int64_t r = a % b;
        a = b, b = r;
    }
    return a;
}

/* One element of es bytes (1, 2, 4 or 8, else any) from s to d: a load and a store for the
   usual sizes (a memcpy call an element cost the strided copies most of their time). */
static inline void gpuos__copy_el(char *d, const char *s, size_t es) {
    switch (es) {
    case 1: *d = *s; break;
    case 2: memcpy(d, s, 2); break;
    case 4: memcpy(d, s, 4); break;
    case 8: memcpy(d, s, 8); break;
    default: memcpy(d, s, es); break;
    }
}
/* Rows [begin, end) of a row plan through fn (elements of es bytes, in and out alike); rows
   whose elements lie farther apart than the rows themselves (softmax over axis 0) are
   gathered into a contiguous block first (host_ops.c). */
void gpuos__host_rows_run(const gpuos__rows_plan *p, gpuos__rows_fn fn, size_t es, int64_t begin, int64_t end);
/* Can a matmul of dtype take op as an epilogue operator (gen/ops.py EPILOGUE; both executors
   run it: host_ops.c, device_ops.cu)? */
int gpuos__matmul_epi_ok(gpuos_op op, gpuos_dtype dtype);
/* Does epilogue entry e (gpuos__matmul_plan.epi) read a tensor operand (a binary operator)? */
static inline int gpuos__epi_binary(int32_t e) {
    return (e & GPUOS__EPI_OP) < GPUOS_OP_COUNT && gpuos__ops[e & GPUOS__EPI_OP].n_in == 2;
}

/* ---------------------------------------------------------------- f16 / bf16 */
/* f16 and bf16 from and to f32, inline: every host kernel on f16/bf16 data converts each
   element in and out (out of line, with a branch on the rounding that random data
   mispredicts half the time, an f16 add took 19x the f32 one, a review). Widening is exact;
   narrowing rounds once to nearest, ties to even; overflow gives inf; NaN stays NaN (quiet,
   sign and the top payload bits kept: on the host; the device stores the canonical NaN). */
static inline float gpuos__f16_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline float gpuos__f16_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1fu) /* inf or NaN: payload moves to the top of the f32 mantissa */
        return gpuos__f16_bits_f32(sign | 0x7f800000u | (mant << 13));
    if (exp != 0) /* normal */
        return gpuos__f16_bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
    if (mant == 0) return gpuos__f16_bits_f32(sign); /* signed zero */
    exp = 113u; /* subnormal: mant * 2^-24, normalised for f32 (f32 exponent field of 2^-14) */
    while ((mant & 0x400u) == 0) {
        mant <<= 1;
        exp--;
    }
    return gpuos__f16_bits_f32(sign | (exp << 23) | ((mant & 0x3ffu) << 13));
}
static inline uint16_t gpuos__f32_to_f16(float f) {
    uint32_t x, ax;
    uint16_t sign;
    memcpy(&x, &f, sizeof x);
    sign = (uint16_t)((x >> 16) & 0x8000u);
    ax = x & 0x7fffffffu;
    if (ax >= 0x38800000u && ax < 0x477ff000u) { /* normal f16 (below 65520, which rounds to inf) */
        const uint32_t h = ((ax >> 23) - 112u) << 10 | ((ax >> 13) & 0x3ffu);
        /* + 1 when the dropped 13 bits are above half, or at half and h is odd (a carry moves
           into the exponent): branch-free */
        return (uint16_t)(sign | (h + (((ax & 0x1fffu) + (h & 1u) + 0xfffu) >> 13)));
    }
    if (ax >= 0x7f800000u) {
        if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu)); /* quiet NaN */
        return (uint16_t)(sign | 0x7c00u);                                           /* inf */
    }
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
    {
        /* subnormal f16 (or zero): result = M * 2^(e-126) in units of 2^-24 */
        const uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u, s = 126u - e; /* s >= 14 */
        uint32_t q, rem, half;
        if (e == 0 || s >= 25u) return sign; /* below half the smallest subnormal */
        q = m >> s;
        rem = m & ((1u << s) - 1u);
        half = 1u << (s - 1u);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return (uint16_t)(sign | q);
    }
}
static inline float gpuos__bf16_to_f32(uint16_t h) { return gpuos__f16_bits_f32((uint32_t)h << 16); }
static inline uint16_t gpuos__f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1u); /* round to nearest even; overflow carries into inf */
    return (uint16_t)(x >> 16);
}
uint16_t gpuos__f64_to_f16(double d); /* one rounding from f64 (casts; src/half.c) */
uint16_t gpuos__f64_to_bf16(double d);

/* ---------------------------------------------------------------- device code */
/* The generated CUDA source of every device kernel (plans, kernels, dispatch), as
   NULL-terminated pieces to be joined; see src/generated/device_src.c. */
extern const char *const gpuos__device_source[];
/* Kernel id the device dispatcher uses for (op, key dtype, out dtype); -1 if none. */
int gpuos__device_kernel_id(gpuos_op op, gpuos_dtype key, gpuos_dtype out);

#endif /* GPUOS_OPS_H */
