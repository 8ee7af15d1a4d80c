/* prelude.cuh - what the device source needs before anything else: fixed-width
   integer types, limits, float constants, f16/bf16 conversions and block-level
   reduction helpers.

   gen/gen.py concatenates [this file, src/gpuos_plan.h, src/generated/gpuos_elem.h,
   src/generated/device_ops.cu] into src/generated/gpuos_device.cu, which NVRTC
   compiles at run time (--gpu-architecture=sm_90 -default-device --std=c++17
   -rdc=true). NVRTC has no system headers, so this file includes nothing; every
   name it defines is guarded or compatible with the system's, so the same source
   also compiles with nvcc after <stdint.h> and <math.h> (tests/gpu/devcheck.cu).

   What the element functions of gpuos_elem.h may use on the device:
     int8_t .. uint64_t, uintptr_t, INT8_MIN .. UINT64_MAX, INT_MIN .. ULLONG_MAX, FLT_ and
     DBL_ MAX MIN EPSILON, M_PI, NAN, INFINITY, HUGE_VAL(F),
     every C99 <math.h> function for float and double (CUDA builtins: sqrtf, expf,
     erff, rintf, fmod, ...), isnan / isinf / isfinite / signbit (CUDA overloads for
     float and double), and the conversions of src/gpuos_ops.h under the same names:
     gpuos__f16_to_f32, gpuos__f32_to_f16, gpuos__bf16_to_f32, gpuos__f32_to_bf16,
     gpuos__f64_to_f16, gpuos__f64_to_bf16.

   Block-size assumption of all device kernels: blockDim.x is a multiple of 32,
   from 32 to 1024, and blockDim.y == blockDim.z == 1. Every thread of the block
   calls a kernel function with the same arguments (they use __syncthreads). */
#ifndef GPUOS_DEVICE_PRELUDE_CUH
#define GPUOS_DEVICE_PRELUDE_CUH

/* ---------------------------------------------------------------- fixed-width types (as glibc, LP64) */
/* A typedef may be repeated with the same type in C++, so these coexist with <stdint.h>. */
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long int64_t;
typedef unsigned long uint64_t;
typedef unsigned long uintptr_t;
typedef long intptr_t;

#ifndef INT8_MIN
#define INT8_MIN (-128)
#define INT16_MIN (-32767 - 1)
#define INT32_MIN (-2147483647 - 1)
#define INT64_MIN (-9223372036854775807L - 1)
#define INT8_MAX (127)
#define INT16_MAX (32767)
#define INT32_MAX (2147483647)
#define INT64_MAX (9223372036854775807L)
#define UINT8_MAX (255)
#define UINT16_MAX (65535)
#define UINT32_MAX (4294967295U)
#define UINT64_MAX (18446744073709551615UL)
#endif

/* <limits.h>, <float.h> and M_PI, as the host executor's interpreter of run-time operator
   bodies knows them (src/expr.c; NVRTC has no system headers: a body using INT_MAX or FLT_MAX
   compiled on the host and failed on the GPU) */
#ifndef INT_MAX
#define INT_MAX (2147483647)
#define INT_MIN (-2147483647 - 1)
#define UINT_MAX (4294967295U)
#define LLONG_MAX (9223372036854775807LL)
#define LLONG_MIN (-9223372036854775807LL - 1)
#define ULLONG_MAX (18446744073709551615ULL)
#endif
#ifndef FLT_MAX
#define FLT_MAX (0x1.fffffep+127F)
#define FLT_MIN (0x1p-126F)
#define FLT_EPSILON (0x1p-23F)
#define DBL_MAX (0x1.fffffffffffffp+1023)
#define DBL_MIN (0x1p-1022)
#define DBL_EPSILON (0x1p-52)
#endif
#ifndef M_PI
#define M_PI (3.14159265358979323846)
#endif

/* ---------------------------------------------------------------- float constants */
#ifndef NAN
#define NAN (__int_as_float(0x7fc00000))
#endif
#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef HUGE_VALF
#define HUGE_VALF (__int_as_float(0x7f800000))
#endif
#ifndef HUGE_VAL
#define HUGE_VAL (__longlong_as_double(0x7ff0000000000000LL))
#endif

/* ---------------------------------------------------------------- function attributes */
/* Element functions and helpers: inlined into the kernels that use them. */
#ifndef GPUOS__FN
#define GPUOS__FN static __device__ __forceinline__
#endif
/* Kernel bodies the dispatcher calls: one copy each (keeps NVRTC time and the
   dispatcher's size down; a direct call costs a few instructions per task). */
#define GPUOS__KERNEL static __device__ __noinline__

/* ---------------------------------------------------------------- f16 / bf16 (bit patterns in uint16_t) */
/* Same names and semantics as src/half.c: round to nearest even, overflow to inf,
   NaN stays NaN (the device returns the canonical NaN 0x7fff). */
GPUOS__FN float gpuos__f16_to_f32(uint16_t h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
GPUOS__FN uint16_t gpuos__f32_to_f16(float f) {
    uint16_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
GPUOS__FN uint16_t gpuos__f64_to_f16(double d) { /* one rounding from f64 */
    uint16_t h;
    asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h) : "d"(d));
    return h;
}
GPUOS__FN float gpuos__bf16_to_f32(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
GPUOS__FN uint16_t gpuos__f32_to_bf16(float f) {
#if __CUDA_ARCH__ >= 800 && !defined(GPUOS__BF16_SOFT)
    uint16_t h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#else /* (sm_75: no bf16 cvt) round to nearest even, as src/half.c */
    uint32_t x = __float_as_uint(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
#endif
}
/* One rounding from f64: cvt.rn.bf16.f64 needs sm_90 (PTX 7.8); before it (or with
   GPUOS__BF16_SOFT, to test this path on sm_90) the integer steps of src/half.c's
   half_from_f64(d, 8, 7), so every architecture gives the host's bits. */
GPUOS__FN uint16_t gpuos__f64_to_bf16(double d) {
#if __CUDA_ARCH__ >= 900 && !defined(GPUOS__BF16_SOFT)
    uint16_t h;
    asm("cvt.rn.bf16.f64 %0, %1;" : "=h"(h) : "d"(d));
    return h;
#else
    const uint64_t x = (uint64_t)__double_as_longlong(d);
    const uint32_t sign = (uint32_t)(x >> 63) << 15;
    int e = (int)((x >> 52) & 0x7ffu);
    const uint64_t mant = x & ((1ull << 52) - 1u), m = mant | (1ull << 52);
    if (e == 0x7ff) return (uint16_t)(mant ? sign | 0x7fc0u | (uint32_t)(mant >> 45) : sign | 0x7f80u);
    if (e == 0) return (uint16_t)sign; /* zero or f64 subnormal: far below bf16's range */
    e -= 1023;
    if (e >= -126) { /* normal bf16 */
        const int te = e + 127;
        if (te >= 255) return (uint16_t)(sign | 0x7f80u);
        uint32_t r = (uint32_t)te << 7 | (uint32_t)((m >> 45) & 0x7fu);
        const uint64_t rem = m & ((1ull << 45) - 1u), half = 1ull << 44;
        if (rem > half || (rem == half && (r & 1u))) r++; /* may carry up to inf */
        return (uint16_t)(sign | r);
    }
    const int s = 45 + (-126 - e); /* subnormal bf16: units of 2^-133 */
    if (s >= 54) return (uint16_t)sign;
    uint64_t q = m >> s;
    const uint64_t rem = m & ((1ull << s) - 1u), half = 1ull << (s - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return (uint16_t)(sign | (uint32_t)q);
#endif
}

/* ---------------------------------------------------------------- static shared memory */
/* How the device code's shared buffers are declared. The parts of a split compile
   (-DGPUOS__D_NPARTS=n -DGPUOS__D_PART=k, k < n: see "parts" in device_ops.cu) share ONE
   copy, defined by part 0 and external in the others (relocatable code: nvJitLink
   resolves them, and the kernel's static shared memory, limited to 48 KB, holds each
   buffer once whichever parts use it). A whole program, the run-time module's code and
   run-time operators (parts >= n, linked into their own module) keep a static copy. */
#if defined(GPUOS__D_NPARTS) && defined(GPUOS__D_PART) && GPUOS__D_NPARTS > 1 && GPUOS__D_PART > 0 && \
    GPUOS__D_PART < GPUOS__D_NPARTS
#define GPUOS__D_SHARED extern __shared__
#elif defined(GPUOS__D_NPARTS) && defined(GPUOS__D_PART) && GPUOS__D_NPARTS > 1 && GPUOS__D_PART == 0
#define GPUOS__D_SHARED __shared__
#else
#define GPUOS__D_SHARED static __shared__
#endif

/* ---------------------------------------------------------------- block-level reductions */
/* One buffer for every cross-warp reduction: 32 warps x 32 bytes (the largest
   accumulator, Welford's {n, mean, m2} in f64, is 24). Static shared memory of the
   device code: this (1 KB) and gpuos__d_mm_smem (matmul tiles). */
GPUOS__D_SHARED __align__(16) unsigned char gpuos__d_red_smem[32 * 32];

GPUOS__FN int gpuos__d_tid(void) { return (int)threadIdx.x; }
GPUOS__FN int gpuos__d_nthreads(void) { return (int)blockDim.x; }

/* Any trivially copyable value through __shfl_xor_sync, 32 bits at a time. */
template <class T> GPUOS__FN T gpuos__d_shfl_xor(T v, int m) {
    enum { W = (sizeof(T) + 3) / 4 };
    union {
        T v;
        uint32_t w[W];
    } u;
    u.v = v;
#pragma unroll
    for (int i = 0; i < W; ++i) u.w[i] = __shfl_xor_sync(0xffffffffu, u.w[i], m);
    return u.v;
}

/* Butterfly over the warp with m.merge(a, b), a always from the lower lanes, so
   every lane ends with the same value (even for merges that are not commutative in
   rounding, such as Welford's) and lower lanes count as earlier. Not unrolled: one
   copy of merge's code. */
template <class M, class Acc> GPUOS__FN Acc gpuos__d_warp_reduce(const M &m, Acc v) {
    const int lane = gpuos__d_tid() & 31;
#pragma unroll 1
    for (int k = 1; k < 32; k <<= 1) {
        const Acc o = gpuos__d_shfl_xor(v, k);
        v = (lane & k) ? m.merge(o, v) : m.merge(v, o);
    }
    return v;
}

/* Combination of v over each group of g threads, g = 1, 32 or blockDim.x, in thread
   order, the same value in every thread of the group. When g is the block, every
   thread of the block must call it (two __syncthreads; the buffer is free again when
   it returns). id: an identity of m.merge, for the missing warps. */
template <class M, class Acc> GPUOS__FN Acc gpuos__d_group_reduce(const M &m, Acc v, int g, Acc id) {
    static_assert(sizeof(Acc) <= 32, "gpuos__d_red_smem holds 32 bytes per warp");
    if (g == 1) return v;
    Acc *buf = (Acc *)gpuos__d_red_smem;
    const int lane = gpuos__d_tid() & 31, warp = gpuos__d_tid() >> 5, nw = gpuos__d_nthreads() >> 5;
    for (int stage = 0;; ++stage) { /* a loop, so that warp_reduce is inlined once */
        v = gpuos__d_warp_reduce(m, v);
        if (stage == 1 || g == 32) break;
        if (lane == 0) buf[warp] = v;
        __syncthreads();
        v = lane < nw ? buf[lane] : id;
    }
    if (g != 32) __syncthreads();
    return v;
}

#endif /* GPUOS_DEVICE_PRELUDE_CUH */
