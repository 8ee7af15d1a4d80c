/* expr.c - the interpreter of element-wise bodies: a few CUDA C statements, run on the host.

   A user operator is defined at run time by a body that computes one output element from
   input elements and scalar parameters; on the GPU it is pasted into a CUDA __device__
   function, so CUDA C++ is the reference. Without a GPU the host executor compiles the same
   body once here (gpuos__ex_compile) and runs it per element (gpuos__ex_run).

   The language, a subset of CUDA C++ (anything else is a compile error that names it):
     statements   expression statements; declarations "[const] T a = e, b;" (T: bool, char,
                  short, int, long, long long with signed/unsigned, int8_t..int64_t,
                  uint8_t..uint64_t, float, double, auto); blocks with scoping; if/else; for,
                  while, do-while; break, continue; "return;"; ";"; line and block comments
     expressions  integer literals (decimal, hex, octal, 0b binary; suffixes u, l, ll and
                  their mixes, typed as C++ with 64-bit long), floating literals (1.0 double,
                  1.0f float, 1e-3, .5f, hex floats), true, false, INFINITY, NAN (float),
                  HUGE_VALF, HUGE_VAL, FLT_/DBL_ MAX MIN EPSILON, INT_MAX INT_MIN UINT_MAX,
                  LLONG_MAX LLONG_MIN ULLONG_MAX, INT8_MIN .. UINT64_MAX (<stdint.h>'s), M_PI; variables; unary - + ! ~, prefix and
                  postfix ++ --; * / % + - << >> < <= > >= == != & ^ | && || (short-circuit);
                  ?:; = and every compound assignment; the comma operator; casts (T)x, T(x)
                  and static_cast<T>(x); parentheses; calls of the functions below
     functions    f-suffixed float functions (sinf ... copysignf, exp10f, rsqrtf) take and
                  return float. The unsuffixed names are overloaded as in CUDA: float
                  arguments give the float version, double the double one, integer or mixed
                  arguments double, except pow(float, integer) which is float. isnan isinf
                  isfinite signbit give bool; min and max take the usual arithmetic conversions
                  of their arguments (integer min/max, or fminf/fmin); abs is int or long long
                  abs (wrapping: abs(INT_MIN) == INT_MIN), fabs on float and double, an error
                  on unsigned (ambiguous in C++). The intrinsics __expf __exp10f __logf __log2f
                  __log10f __sinf __cosf __tanf __powf __fdividef are the accurate functions;
                  __saturatef clamps to [0, 1] (NaN gives 0). rsqrt(x) is 1 / sqrt(x) and
                  exp10(x) is pow(10, x), each rounded in its own type; pow and powf of x
                  and a constant 2 or -1 are x * x and 1 / x (as compilers fold them).
   Typing is C++'s: bool, 8- and 16-bit values promote to int; the usual arithmetic
   conversions (int + unsigned is unsigned, int + long long is long long, anything with float
   is float, with double double: x * 2.0 on a float x is double, x * 2.0f is float). Float
   operations round to float after each operation, double ones to double (the GPU may contract
   a * b + c into one fma: the host never does). Assignment converts to the target's type;
   8- and 16-bit locals truncate when stored; a bool stores x != 0; char is signed and long
   is 64 bits, as in CUDA on 64-bit Linux. Within the subset two things differ from C++: a
   conditional expression is never an lvalue, and in "int x = x + 1;" the initialiser sees
   the x of the enclosing scope (C++: the new, uninitialised x).

   Where C and C++ leave the result undefined, it is defined here (the GPU's own result for
   such cases is not guaranteed to match):
     - signed overflow wraps (computed in unsigned, two's complement);
     - x / 0 and x % 0 are 0 for every integer type; INT_MIN / -1 is INT_MIN and
       INT_MIN % -1 is 0 (likewise for long long); nothing ever raises SIGFPE;
     - a shift count is masked to the width of the promoted left operand (count & 31 or
       count & 63, so x << 32 on an int is x and a negative count is taken modulo the width);
       >> of a negative value shifts in sign bits, << shifts bits out;
     - float or double to an integer type truncates toward zero and saturates to the type's
       range (8- and 16-bit types too), NaN gives 0: what cvt.rzi does on the GPU;
     - an uninitialised local starts at 0;
     - every loop iteration of a run counts against one budget, GPUOS__EX_MAX_ITERS (2^20)
       for all loops together (an iteration: a loop going back to its test, or for do-while
       to its body): past it the run stops and returns -1 ("body:LINE: loop ran more than
       1048576 iterations", LINE the loop's), leaving the variables unchanged; so does one
       whose loops ran more than EX_MAX_WORK (2^28) instructions in all, each iteration
       charged its loop's whole length (inner loops pay for their own iterations): a few MB
       of body in a loop once took hours a run under the iteration budget alone (a fuzzer's
       find). A run therefore stops within about a second.

   Design. The compiler is one recursive-descent pass (precedence climbing for binary
   operators) that type-checks and emits register bytecode at once: each instruction is
   typed (ADD_F, DIV_I32, F2I8 ...) and names value slots, 8 bytes each: the variables, then
   the constants, then locals and temporaries (a stack: a block's locals and an expression's
   temporaries are freed when they end). Integers live in their slot sign- or zero-extended
   to 64 bits, so widening is free and bitwise operations need no type. Conversions are one
   instruction; an instruction whose inputs are all constants is run at compile time (the
   same code as at run time) and becomes a constant; a result that is stored is written by
   its instruction straight into the target. Nesting deeper than EX_MAX_DEPTH (128: about
   64 levels of parentheses, 128 of blocks, which keeps the compiler under 64 KB of stack),
   more than EX_MAX_SLOTS values or EX_MAX_CODE instructions are compile errors; errors
   unwind by longjmp with everything the compiler allocated owned by its state. A run copies the
   variables (canonicalised) and the constants into a slot array on its stack and dispatches
   with one switch; the program is read-only, so runs on any number of threads are safe. */
#include "expr.h"

#include <float.h>  /* FLT_MAX ... for the built-in constants */
#include <limits.h> /* INT_MAX ... */
#include <locale.h> /* localeconv: the decimal point strtod expects */
#include <math.h>
#include <setjmp.h> /* compile errors unwind by longjmp */
#include <stdarg.h>
#include <stdio.h>  /* vsnprintf, snprintf: messages only */
#include <stdlib.h> /* malloc, strtod */
#include <string.h>

#define EX_MAX_SLOTS 480      /* values of one run: 3840 bytes of stack */
#define EX_MAX_DEPTH 128      /* nesting of statements and expressions */
#define EX_MAX_CODE (1 << 20) /* instructions of one body */
#define EX_MAX_WORK (1L << 28) /* instructions of loop bodies one run may execute (about 1 s) */
#define EX_KREF (1 << 24)     /* while compiling, slot references: variable i is i, */
#define EX_SREF (1 << 25)     /* constant k is EX_KREF + k, stack slot n is EX_SREF + n */

/* types, short; EX_AUTO only while parsing a declaration */
#define EX_BOOL GPUOS__EX_BOOL
#define EX_I32 GPUOS__EX_I32
#define EX_U32 GPUOS__EX_U32
#define EX_I64 GPUOS__EX_I64
#define EX_U64 GPUOS__EX_U64
#define EX_F32 GPUOS__EX_F32
#define EX_F64 GPUOS__EX_F64
#define EX_I8 GPUOS__EX_I8
#define EX_U8 GPUOS__EX_U8
#define EX_I16 GPUOS__EX_I16
#define EX_U16 GPUOS__EX_U16
#define EX_AUTO GPUOS__EX_TYPE_COUNT

/* ---------------------------------------------------------------- instructions */
/* Operand flags: which fields name slots (D written, A B C read), C a jump target, P pure
   (foldable when every slot read is a constant). */
#define EX_FD 1
#define EX_FA 2
#define EX_FB 4
#define EX_FC 8
#define EX_FJ 16
#define EX_FP 32
#define EX_UN (EX_FD | EX_FA | EX_FP)
#define EX_BIN (EX_FD | EX_FA | EX_FB | EX_FP)

#define EX_OPS(X)                                                                                  \
    X(HALT, 0) X(JMP, EX_FJ) X(JZ_I, EX_FA | EX_FJ) X(JNZ_I, EX_FA | EX_FJ) X(JZ_F, EX_FA | EX_FJ)  \
    X(JNZ_F, EX_FA | EX_FJ) X(JZ_D, EX_FA | EX_FJ) X(JNZ_D, EX_FA | EX_FJ) X(LOOP, EX_FJ)          \
    X(MOV, EX_UN) X(TR_I8, EX_UN) X(TR_U8, EX_UN) X(TR_I16, EX_UN) X(TR_U16, EX_UN)                \
    X(TR_I32, EX_UN) X(TR_U32, EX_UN) X(NZ_I, EX_UN) X(NZ_F, EX_UN) X(NZ_D, EX_UN)                 \
    X(LNOT_I, EX_UN) X(LNOT_F, EX_UN) X(LNOT_D, EX_UN) X(I2F, EX_UN) X(U2F, EX_UN) X(I2D, EX_UN)   \
    X(U2D, EX_UN) X(F2D, EX_UN) X(D2F, EX_UN) X(F2I8, EX_UN) X(F2U8, EX_UN) X(F2I16, EX_UN)        \
    X(F2U16, EX_UN) X(F2I32, EX_UN) X(F2U32, EX_UN) X(F2I64, EX_UN) X(F2U64, EX_UN)                \
    X(D2I8, EX_UN) X(D2U8, EX_UN) X(D2I16, EX_UN) X(D2U16, EX_UN) X(D2I32, EX_UN)                  \
    X(D2U32, EX_UN) X(D2I64, EX_UN) X(D2U64, EX_UN)                                                \
    X(ADD_I32, EX_BIN) X(ADD_U32, EX_BIN) X(ADD_64, EX_BIN) X(SUB_I32, EX_BIN) X(SUB_U32, EX_BIN)  \
    X(SUB_64, EX_BIN) X(MUL_I32, EX_BIN) X(MUL_U32, EX_BIN) X(MUL_64, EX_BIN) X(DIV_I32, EX_BIN)   \
    X(DIV_U32, EX_BIN) X(DIV_I64, EX_BIN) X(DIV_U64, EX_BIN) X(REM_I32, EX_BIN)                    \
    X(REM_U32, EX_BIN) X(REM_I64, EX_BIN) X(REM_U64, EX_BIN) X(SHL_I32, EX_BIN)                    \
    X(SHL_U32, EX_BIN) X(SHL_64, EX_BIN) X(SHR_I32, EX_BIN) X(SHR_U32, EX_BIN)                     \
    X(SHR_I64, EX_BIN) X(SHR_U64, EX_BIN) X(AND, EX_BIN) X(OR, EX_BIN) X(XOR, EX_BIN)              \
    X(NOT, EX_UN) X(NOT_U32, EX_UN) X(NEG_I32, EX_UN) X(NEG_U32, EX_UN) X(NEG_64, EX_UN)           \
    X(EQ_I, EX_BIN) X(NE_I, EX_BIN) X(LT_S, EX_BIN) X(LE_S, EX_BIN) X(LT_U, EX_BIN)                \
    X(LE_U, EX_BIN) X(MIN_S, EX_BIN) X(MAX_S, EX_BIN) X(MIN_U, EX_BIN) X(MAX_U, EX_BIN)            \
    X(ABS_I32, EX_UN) X(ABS_I64, EX_UN)                                                            \
    X(ADD_F, EX_BIN) X(SUB_F, EX_BIN) X(MUL_F, EX_BIN) X(DIV_F, EX_BIN) X(NEG_F, EX_UN)            \
    X(EQ_F, EX_BIN) X(NE_F, EX_BIN) X(LT_F, EX_BIN) X(LE_F, EX_BIN)                                \
    X(ADD_D, EX_BIN) X(SUB_D, EX_BIN) X(MUL_D, EX_BIN) X(DIV_D, EX_BIN) X(NEG_D, EX_UN)            \
    X(EQ_D, EX_BIN) X(NE_D, EX_BIN) X(LT_D, EX_BIN) X(LE_D, EX_BIN)                                \
    X(CALL_F1, EX_UN) X(CALL_F2, EX_BIN) X(CALL_D1, EX_UN) X(CALL_D2, EX_BIN)                      \
    X(FMA_F, EX_BIN | EX_FC) X(FMA_D, EX_BIN | EX_FC) X(ISNAN_F, EX_UN) X(ISINF_F, EX_UN)          \
    X(ISFIN_F, EX_UN) X(SIGNBIT_F, EX_UN) X(ISNAN_D, EX_UN) X(ISINF_D, EX_UN) X(ISFIN_D, EX_UN)    \
    X(SIGNBIT_D, EX_UN)

#define EX_OP_ENUM(name, flags) EX_OP_##name,
enum ex_op { EX_OPS(EX_OP_ENUM) EX_OP_COUNT };
#define EX_OP_FLAGS(name, flags) flags,
static const unsigned char ex_op_flags[EX_OP_COUNT] = {EX_OPS(EX_OP_FLAGS)};

/* One instruction of a program: slots d, a, b (c: a slot, a jump target or a function). */
typedef struct ex_ins {
    uint16_t op, d, a, b;
    uint32_t c;
} ex_ins;

/* ---------------------------------------------------------------- math functions */
/* X(ID, overloaded name, float name, float expression, double expression) in x (and y) */
#define EX_FN1(X)                                                                                  \
    X(SIN, "sin", "sinf", sinf(x), sin(x)) X(COS, "cos", "cosf", cosf(x), cos(x))                  \
    X(TAN, "tan", "tanf", tanf(x), tan(x)) X(ASIN, "asin", "asinf", asinf(x), asin(x))             \
    X(ACOS, "acos", "acosf", acosf(x), acos(x)) X(ATAN, "atan", "atanf", atanf(x), atan(x))        \
    X(SINH, "sinh", "sinhf", sinhf(x), sinh(x)) X(COSH, "cosh", "coshf", coshf(x), cosh(x))        \
    X(TANH, "tanh", "tanhf", tanhf(x), tanh(x)) X(ASINH, "asinh", "asinhf", asinhf(x), asinh(x))   \
    X(ACOSH, "acosh", "acoshf", acoshf(x), acosh(x))                                               \
    X(ATANH, "atanh", "atanhf", atanhf(x), atanh(x)) X(EXP, "exp", "expf", expf(x), exp(x))        \
    X(EXP2, "exp2", "exp2f", exp2f(x), exp2(x))                                                    \
    X(EXP10, "exp10", "exp10f", (float)pow(10.0, (double)x), pow(10.0, x))                         \
    X(EXPM1, "expm1", "expm1f", expm1f(x), expm1(x)) X(LOG, "log", "logf", logf(x), log(x))        \
    X(LOG2, "log2", "log2f", log2f(x), log2(x)) X(LOG10, "log10", "log10f", log10f(x), log10(x))   \
    X(LOG1P, "log1p", "log1pf", log1pf(x), log1p(x)) X(SQRT, "sqrt", "sqrtf", sqrtf(x), sqrt(x))   \
    X(RSQRT, "rsqrt", "rsqrtf", 1.0f / sqrtf(x), 1.0 / sqrt(x))                                    \
    X(CBRT, "cbrt", "cbrtf", cbrtf(x), cbrt(x)) X(FABS, "fabs", "fabsf", fabsf(x), fabs(x))        \
    X(FLOOR, "floor", "floorf", floorf(x), floor(x)) X(CEIL, "ceil", "ceilf", ceilf(x), ceil(x))   \
    X(TRUNC, "trunc", "truncf", truncf(x), trunc(x)) X(ROUND, "round", "roundf", roundf(x), round(x)) \
    X(RINT, "rint", "rintf", rintf(x), rint(x)) X(ERF, "erf", "erff", erff(x), erf(x))             \
    X(ERFC, "erfc", "erfcf", erfcf(x), erfc(x))                                                    \
    X(SAT, "", "__saturatef", x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f), x >= 1.0 ? 1.0 : (x > 0.0 ? x : 0.0))
#define EX_FN2(X)                                                                                  \
    X(ATAN2, "atan2", "atan2f", atan2f(x, y), atan2(x, y)) X(POW, "pow", "powf", powf(x, y), pow(x, y)) \
    X(FMOD, "fmod", "fmodf", fmodf(x, y), fmod(x, y)) X(FMIN, "fmin", "fminf", fminf(x, y), fmin(x, y)) \
    X(FMAX, "fmax", "fmaxf", fmaxf(x, y), fmax(x, y))                                              \
    X(HYPOT, "hypot", "hypotf", hypotf(x, y), hypot(x, y))                                         \
    X(COPYSIGN, "copysign", "copysignf", copysignf(x, y), copysign(x, y))                          \
    X(FDIV, "", "__fdividef", x / y, x / y)

#define EX_FN_ENUM(id, oname, fname, fe, de) EX_FN_##id,
enum ex_fn1 { EX_FN1(EX_FN_ENUM) EX_FN1_COUNT };
enum ex_fn2 { EX_FN2(EX_FN_ENUM) EX_FN2_COUNT };
#define EX_FN1_DEF(id, oname, fname, fe, de)                    \
    static float ex_f1_##id(float x) { return fe; }             \
    static double ex_d1_##id(double x) { return de; }
#define EX_FN2_DEF(id, oname, fname, fe, de)                    \
    static float ex_f2_##id(float x, float y) { return fe; }    \
    static double ex_d2_##id(double x, double y) { return de; }
EX_FN1(EX_FN1_DEF)
EX_FN2(EX_FN2_DEF)
#define EX_FN1_F(id, oname, fname, fe, de) ex_f1_##id,
#define EX_FN1_D(id, oname, fname, fe, de) ex_d1_##id,
#define EX_FN2_F(id, oname, fname, fe, de) ex_f2_##id,
#define EX_FN2_D(id, oname, fname, fe, de) ex_d2_##id,
static float (*const ex_f1[EX_FN1_COUNT])(float) = {EX_FN1(EX_FN1_F)};
static double (*const ex_d1[EX_FN1_COUNT])(double) = {EX_FN1(EX_FN1_D)};
static float (*const ex_f2[EX_FN2_COUNT])(float, float) = {EX_FN2(EX_FN2_F)};
static double (*const ex_d2[EX_FN2_COUNT])(double, double) = {EX_FN2(EX_FN2_D)};

/* the names a call may use: kind 1 and 2 are the tables above, 3 the special functions */
typedef struct ex_fname {
    const char *name;
    unsigned char nargs, fixed_float, fn; /* fixed_float: the f-suffixed, float-only version */
} ex_fname;
#define EX_FN1_NAMES(id, oname, fname, fe, de) {oname, 1, 0, EX_FN_##id}, {fname, 1, 1, EX_FN_##id},
#define EX_FN2_NAMES(id, oname, fname, fe, de) {oname, 2, 0, EX_FN_##id}, {fname, 2, 1, EX_FN_##id},
static const ex_fname ex_fnames[] = {
    EX_FN1(EX_FN1_NAMES) EX_FN2(EX_FN2_NAMES)
    {"__expf", 1, 1, EX_FN_EXP}, {"__exp10f", 1, 1, EX_FN_EXP10}, {"__logf", 1, 1, EX_FN_LOG},
    {"__log2f", 1, 1, EX_FN_LOG2}, {"__log10f", 1, 1, EX_FN_LOG10}, {"__sinf", 1, 1, EX_FN_SIN},
    {"__cosf", 1, 1, EX_FN_COS}, {"__tanf", 1, 1, EX_FN_TAN}, {"__powf", 2, 1, EX_FN_POW},
};

enum ex_special { EX_SP_FMA, EX_SP_FMAF, EX_SP_MIN, EX_SP_MAX, EX_SP_ABS, EX_SP_ISNAN, EX_SP_ISINF,
                  EX_SP_ISFINITE, EX_SP_SIGNBIT, EX_SP_COUNT };
static const char *const ex_special_names[EX_SP_COUNT] = {"fma", "fmaf", "min", "max", "abs",
                                                          "isnan", "isinf", "isfinite", "signbit"};
static const unsigned char ex_special_nargs[EX_SP_COUNT] = {3, 3, 2, 2, 1, 1, 1, 1, 1};

/* ---------------------------------------------------------------- running */
static int64_t ex_sx8(uint64_t u) { return (int64_t)((u & 0xffu) ^ 0x80u) - 0x80; }
static int64_t ex_sx16(uint64_t u) { return (int64_t)((u & 0xffffu) ^ 0x8000u) - 0x8000; }
static int64_t ex_sx32(uint64_t u) { return (int64_t)((u & 0xffffffffu) ^ 0x80000000u) - 0x80000000; }
static int64_t ex_sar(int64_t x, unsigned s) { return x < 0 ? ~(~x >> s) : x >> s; }

/* float -> integer: truncate, saturate to [lo, hi] (exact doubles, |.| <= 2^32), NaN -> 0 */
static int64_t ex_d2s(double x, double lo, double hi) {
    if (x != x) return 0;
    if (x <= lo - 1.0) return (int64_t)lo;
    if (x >= hi + 1.0) return (int64_t)hi;
    return (int64_t)x;
}
static int64_t ex_d2i64(double x) {
    if (x != x) return 0;
    if (x >= 9223372036854775808.0) return INT64_MAX;
    if (x < -9223372036854775808.0) return INT64_MIN;
    return (int64_t)x;
}
static uint64_t ex_d2u64(double x) {
    if (x != x || x <= -1.0) return 0;
    if (x >= 18446744073709551616.0) return UINT64_MAX;
    return (uint64_t)x;
}

#define EXD s[in->d]
#define EXA s[in->a]
#define EXB s[in->b]

/* Runs code on the slots s from instruction 0: 0 at HALT, -1 past the loop iterations'
   budget, -2 past the loops' instructions' (*line: the line of the loop). */
static int ex_exec(const ex_ins *code, gpuos__ex_value *s, int *line) {
    long steps = 0, work = 0;
    uint32_t pc = 0;
    for (;;) {
        const ex_ins *in = &code[pc++];
        switch ((enum ex_op)in->op) {
        case EX_OP_HALT: return 0;
        case EX_OP_JMP: pc = in->c; break;
        case EX_OP_JZ_I: if (EXA.u == 0) pc = in->c; break;
        case EX_OP_JNZ_I: if (EXA.u != 0) pc = in->c; break;
        case EX_OP_JZ_F: if (EXA.f == 0.0f) pc = in->c; break;
        case EX_OP_JNZ_F: if (EXA.f != 0.0f) pc = in->c; break;
        case EX_OP_JZ_D: if (EXA.d == 0.0) pc = in->c; break;
        case EX_OP_JNZ_D: if (EXA.d != 0.0) pc = in->c; break;
        case EX_OP_LOOP:
            /* pc - in->c: the loop's instructions, an upper bound of one iteration's (inner
               loops pay for their own iterations) */
            if (++steps > GPUOS__EX_MAX_ITERS || (work += (long)(pc - in->c)) > EX_MAX_WORK) {
                *line = in->b;
                return steps > GPUOS__EX_MAX_ITERS ? -1 : -2;
            }
            pc = in->c;
            break;
        case EX_OP_MOV: EXD = EXA; break;
        case EX_OP_TR_I8: EXD.i = ex_sx8(EXA.u); break;
        case EX_OP_TR_U8: EXD.u = EXA.u & 0xffu; break;
        case EX_OP_TR_I16: EXD.i = ex_sx16(EXA.u); break;
        case EX_OP_TR_U16: EXD.u = EXA.u & 0xffffu; break;
        case EX_OP_TR_I32: EXD.i = ex_sx32(EXA.u); break;
        case EX_OP_TR_U32: EXD.u = EXA.u & 0xffffffffu; break;
        case EX_OP_NZ_I: EXD.u = EXA.u != 0; break;
        case EX_OP_NZ_F: EXD.u = EXA.f != 0.0f; break;
        case EX_OP_NZ_D: EXD.u = EXA.d != 0.0; break;
        case EX_OP_LNOT_I: EXD.u = EXA.u == 0; break;
        case EX_OP_LNOT_F: EXD.u = EXA.f == 0.0f; break;
        case EX_OP_LNOT_D: EXD.u = EXA.d == 0.0; break;
        case EX_OP_I2F: EXD.f = (float)EXA.i; break;
        case EX_OP_U2F: EXD.f = (float)EXA.u; break;
        case EX_OP_I2D: EXD.d = (double)EXA.i; break;
        case EX_OP_U2D: EXD.d = (double)EXA.u; break;
        case EX_OP_F2D: EXD.d = (double)EXA.f; break;
        case EX_OP_D2F: EXD.f = (float)EXA.d; break;
        case EX_OP_F2I8: EXD.i = ex_d2s(EXA.f, -128.0, 127.0); break;
        case EX_OP_F2U8: EXD.i = ex_d2s(EXA.f, 0.0, 255.0); break;
        case EX_OP_F2I16: EXD.i = ex_d2s(EXA.f, -32768.0, 32767.0); break;
        case EX_OP_F2U16: EXD.i = ex_d2s(EXA.f, 0.0, 65535.0); break;
        case EX_OP_F2I32: EXD.i = ex_d2s(EXA.f, -2147483648.0, 2147483647.0); break;
        case EX_OP_F2U32: EXD.i = ex_d2s(EXA.f, 0.0, 4294967295.0); break;
        case EX_OP_F2I64: EXD.i = ex_d2i64(EXA.f); break;
        case EX_OP_F2U64: EXD.u = ex_d2u64(EXA.f); break;
        case EX_OP_D2I8: EXD.i = ex_d2s(EXA.d, -128.0, 127.0); break;
        case EX_OP_D2U8: EXD.i = ex_d2s(EXA.d, 0.0, 255.0); break;
        case EX_OP_D2I16: EXD.i = ex_d2s(EXA.d, -32768.0, 32767.0); break;
        case EX_OP_D2U16: EXD.i = ex_d2s(EXA.d, 0.0, 65535.0); break;
        case EX_OP_D2I32: EXD.i = ex_d2s(EXA.d, -2147483648.0, 2147483647.0); break;
        case EX_OP_D2U32: EXD.i = ex_d2s(EXA.d, 0.0, 4294967295.0); break;
        case EX_OP_D2I64: EXD.i = ex_d2i64(EXA.d); break;
        case EX_OP_D2U64: EXD.u = ex_d2u64(EXA.d); break;
        case EX_OP_ADD_I32: EXD.i = ex_sx32(EXA.u + EXB.u); break;
        case EX_OP_ADD_U32: EXD.u = (EXA.u + EXB.u) & 0xffffffffu; break;
        case EX_OP_ADD_64: EXD.u = EXA.u + EXB.u; break;
        case EX_OP_SUB_I32: EXD.i = ex_sx32(EXA.u - EXB.u); break;
        case EX_OP_SUB_U32: EXD.u = (EXA.u - EXB.u) & 0xffffffffu; break;
        case EX_OP_SUB_64: EXD.u = EXA.u - EXB.u; break;
        case EX_OP_MUL_I32: EXD.i = ex_sx32(EXA.u * EXB.u); break;
        case EX_OP_MUL_U32: EXD.u = (EXA.u * EXB.u) & 0xffffffffu; break;
        case EX_OP_MUL_64: EXD.u = EXA.u * EXB.u; break;
        case EX_OP_DIV_I32: { /* both in int32 range: INT_MIN / -1 is 2^31 in 64 bits, wraps */
            int64_t x = EXA.i, y = EXB.i;
            EXD.i = y ? ex_sx32((uint64_t)(x / y)) : 0;
            break;
        }
        case EX_OP_DIV_U32:
        case EX_OP_DIV_U64: {
            uint64_t x = EXA.u, y = EXB.u;
            EXD.u = y ? x / y : 0;
            break;
        }
        case EX_OP_DIV_I64: {
            int64_t x = EXA.i, y = EXB.i;
            if (y == -1)
                EXD.u = 0u - (uint64_t)x;
            else
                EXD.i = y ? x / y : 0;
            break;
        }
        case EX_OP_REM_I32: {
            int64_t x = EXA.i, y = EXB.i;
            EXD.i = y ? x % y : 0;
            break;
        }
        case EX_OP_REM_U32:
        case EX_OP_REM_U64: {
            uint64_t x = EXA.u, y = EXB.u;
            EXD.u = y ? x % y : 0;
            break;
        }
        case EX_OP_REM_I64: {
            int64_t x = EXA.i, y = EXB.i;
            EXD.i = (y == 0 || y == -1) ? 0 : x % y;
            break;
        }
        case EX_OP_SHL_I32: EXD.i = ex_sx32(EXA.u << (EXB.u & 31u)); break;
        case EX_OP_SHL_U32: EXD.u = (EXA.u << (EXB.u & 31u)) & 0xffffffffu; break;
        case EX_OP_SHL_64: EXD.u = EXA.u << (EXB.u & 63u); break;
        case EX_OP_SHR_I32: EXD.i = ex_sar(EXA.i, (unsigned)(EXB.u & 31u)); break;
        case EX_OP_SHR_U32: EXD.u = EXA.u >> (EXB.u & 31u); break;
        case EX_OP_SHR_I64: EXD.i = ex_sar(EXA.i, (unsigned)(EXB.u & 63u)); break;
        case EX_OP_SHR_U64: EXD.u = EXA.u >> (EXB.u & 63u); break;
        case EX_OP_AND: EXD.u = EXA.u & EXB.u; break;
        case EX_OP_OR: EXD.u = EXA.u | EXB.u; break;
        case EX_OP_XOR: EXD.u = EXA.u ^ EXB.u; break;
        case EX_OP_NOT: EXD.u = ~EXA.u; break;
        case EX_OP_NOT_U32: EXD.u = ~EXA.u & 0xffffffffu; break;
        case EX_OP_NEG_I32: EXD.i = ex_sx32(0u - EXA.u); break;
        case EX_OP_NEG_U32: EXD.u = (0u - EXA.u) & 0xffffffffu; break;
        case EX_OP_NEG_64: EXD.u = 0u - EXA.u; break;
        case EX_OP_EQ_I: EXD.u = EXA.u == EXB.u; break;
        case EX_OP_NE_I: EXD.u = EXA.u != EXB.u; break;
        case EX_OP_LT_S: EXD.u = EXA.i < EXB.i; break;
        case EX_OP_LE_S: EXD.u = EXA.i <= EXB.i; break;
        case EX_OP_LT_U: EXD.u = EXA.u < EXB.u; break;
        case EX_OP_LE_U: EXD.u = EXA.u <= EXB.u; break;
        case EX_OP_MIN_S: EXD = EXB.i < EXA.i ? EXB : EXA; break;
        case EX_OP_MAX_S: EXD = EXA.i < EXB.i ? EXB : EXA; break;
        case EX_OP_MIN_U: EXD = EXB.u < EXA.u ? EXB : EXA; break;
        case EX_OP_MAX_U: EXD = EXA.u < EXB.u ? EXB : EXA; break;
        case EX_OP_ABS_I32: EXD.i = ex_sx32(EXA.i < 0 ? 0u - EXA.u : EXA.u); break;
        case EX_OP_ABS_I64: EXD.u = EXA.i < 0 ? 0u - EXA.u : EXA.u; break;
        case EX_OP_ADD_F: EXD.f = EXA.f + EXB.f; break;
        case EX_OP_SUB_F: EXD.f = EXA.f - EXB.f; break;
        case EX_OP_MUL_F: EXD.f = EXA.f * EXB.f; break;
        case EX_OP_DIV_F: EXD.f = EXA.f / EXB.f; break;
        case EX_OP_NEG_F: EXD.f = -EXA.f; break;
        case EX_OP_EQ_F: EXD.u = EXA.f == EXB.f; break;
        case EX_OP_NE_F: EXD.u = EXA.f != EXB.f; break;
        case EX_OP_LT_F: EXD.u = EXA.f < EXB.f; break;
        case EX_OP_LE_F: EXD.u = EXA.f <= EXB.f; break;
        case EX_OP_ADD_D: EXD.d = EXA.d + EXB.d; break;
        case EX_OP_SUB_D: EXD.d = EXA.d - EXB.d; break;
        case EX_OP_MUL_D: EXD.d = EXA.d * EXB.d; break;
        case EX_OP_DIV_D: EXD.d = EXA.d / EXB.d; break;
        case EX_OP_NEG_D: EXD.d = -EXA.d; break;
        case EX_OP_EQ_D: EXD.u = EXA.d == EXB.d; break;
        case EX_OP_NE_D: EXD.u = EXA.d != EXB.d; break;
        case EX_OP_LT_D: EXD.u = EXA.d < EXB.d; break;
        case EX_OP_LE_D: EXD.u = EXA.d <= EXB.d; break;
        case EX_OP_CALL_F1: EXD.f = ex_f1[in->c](EXA.f); break;
        case EX_OP_CALL_F2: EXD.f = ex_f2[in->c](EXA.f, EXB.f); break;
        case EX_OP_CALL_D1: EXD.d = ex_d1[in->c](EXA.d); break;
        case EX_OP_CALL_D2: EXD.d = ex_d2[in->c](EXA.d, EXB.d); break;
        case EX_OP_FMA_F: EXD.f = fmaf(EXA.f, EXB.f, s[in->c].f); break;
        case EX_OP_FMA_D: EXD.d = fma(EXA.d, EXB.d, s[in->c].d); break;
        case EX_OP_ISNAN_F: EXD.u = isnan(EXA.f) != 0; break;
        case EX_OP_ISINF_F: EXD.u = isinf(EXA.f) != 0; break;
        case EX_OP_ISFIN_F: EXD.u = isfinite(EXA.f) != 0; break;
        case EX_OP_SIGNBIT_F: EXD.u = signbit(EXA.f) != 0; break;
        case EX_OP_ISNAN_D: EXD.u = isnan(EXA.d) != 0; break;
        case EX_OP_ISINF_D: EXD.u = isinf(EXA.d) != 0; break;
        case EX_OP_ISFIN_D: EXD.u = isfinite(EXA.d) != 0; break;
        case EX_OP_SIGNBIT_D: EXD.u = signbit(EXA.d) != 0; break;
        default: return 0; /* never: the compiler emits only the ops above */
        }
    }
}

#undef EXD
#undef EXA
#undef EXB

/* ---------------------------------------------------------------- programs */
struct gpuos__ex_program {
    int n_vars, n_consts, n_out;
    unsigned char var_type[GPUOS__EX_MAX_VARS];
    unsigned char out[GPUOS__EX_MAX_VARS]; /* the writable variables */
    const gpuos__ex_value *consts;
    const ex_ins *code;
};

static void ex_msg(char *err, size_t n_err, const char *fmt, ...) {
    va_list ap;
    if (!err || n_err == 0) return;
    va_start(ap, fmt);
    vsnprintf(err, n_err, fmt, ap);
    va_end(ap);
}

/* a value as the slot keeps it: integers sign- or zero-extended from the type's width */
static gpuos__ex_value ex_canon(gpuos__ex_value v, int type) {
    switch (type) {
    case EX_BOOL: v.u = (v.u & 0xffu) != 0; break;
    case EX_I8: v.i = ex_sx8(v.u); break;
    case EX_U8: v.u &= 0xffu; break;
    case EX_I16: v.i = ex_sx16(v.u); break;
    case EX_U16: v.u &= 0xffffu; break;
    case EX_I32: v.i = ex_sx32(v.u); break;
    case EX_U32: v.u &= 0xffffffffu; break;
    default: break;
    }
    return v;
}

int gpuos__ex_run(const gpuos__ex_program *p, gpuos__ex_value *vars, char *err, size_t n_err) {
    gpuos__ex_value s[EX_MAX_SLOTS];
    int i, line = 0;
    if (!p || (!vars && p->n_vars > 0)) {
        ex_msg(err, n_err, "%s", p ? "vars is NULL" : "no program");
        return -1;
    }
    for (i = 0; i < p->n_vars; i++) s[i] = ex_canon(vars[i], p->var_type[i]);
    if (p->n_consts) memcpy(s + p->n_vars, p->consts, (size_t)p->n_consts * sizeof *s);
    if ((i = ex_exec(p->code, s, &line)) != 0) {
        if (i == -1)
            ex_msg(err, n_err, "body:%d: loop ran more than %ld iterations", line, (long)GPUOS__EX_MAX_ITERS);
        else
            ex_msg(err, n_err, "body:%d: loops ran more than %ld instructions of their bodies", line, (long)EX_MAX_WORK);
        return -1;
    }
    for (i = 0; i < p->n_out; i++) vars[p->out[i]] = s[p->out[i]];
    return 0;
}

void gpuos__ex_free(gpuos__ex_program *p) { free(p); }

/* ---------------------------------------------------------------- compiler state */
enum ex_tk {
    EX_TK_EOF = 256, EX_TK_ID, EX_TK_NUM, EX_TK_INC, EX_TK_DEC, EX_TK_SHL, EX_TK_SHR, EX_TK_LE,
    EX_TK_GE, EX_TK_EQ, EX_TK_NE, EX_TK_LAND, EX_TK_LOR, EX_TK_ADDA, EX_TK_SUBA, EX_TK_MULA,
    EX_TK_DIVA, EX_TK_MODA, EX_TK_ANDA, EX_TK_ORA, EX_TK_XORA, EX_TK_SHLA, EX_TK_SHRA
};

typedef struct ex_tok {
    int kind;
    const char *p; /* its text in the body */
    int len, line, col;
} ex_tok;

typedef struct ex_lex {
    const char *p, *line_start;
    int line;
    ex_tok tok; /* the current token */
} ex_lex;

/* while compiling, an instruction with slot references not yet final */
typedef struct ex_cins {
    int op, d, a, b;
    uint32_t c;
} ex_cins;

/* a name in scope: a variable of the body or a local */
typedef struct ex_sym {
    const char *name;
    int len, slot, type, depth;
    int readonly; /* 1: an input, 2: a const local */
} ex_sym;

/* the value of an expression: where it is, its type, the symbol when it is an lvalue, and
   the instruction that computed it when that was the last one emitted into a temporary */
typedef struct ex_opnd {
    int slot, type, sym, def;
} ex_opnd;

typedef struct ex_loop {
    int first_jump; /* its break and continue jumps: jumps[first_jump..] */
} ex_loop;

typedef struct ex_comp {
    jmp_buf fail;
    char *err;
    size_t n_err;
    ex_lex lx;
    const gpuos__ex_var *vars;
    int n_vars;
    ex_cins *code;
    int n_code, cap_code;
    gpuos__ex_value *kv; /* constants */
    unsigned char *kt;
    int n_k, cap_k, cap_kt;
    ex_sym *syms;
    int n_syms, cap_syms;
    int scope;        /* block depth: the body's top level (and the variables) are 1 */
    int top, max_top; /* stack slots in use, the most ever */
    int depth;        /* nesting, against EX_MAX_DEPTH */
    int *jumps;       /* pending break (even value 2i) and continue (2i + 1) jumps */
    int n_jumps, cap_jumps, loops;
    char name[64]; /* a token's text, for a message */
} ex_comp;

static void ex_fail(ex_comp *c, int line, int col, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0)
        ex_msg(c->err, c->n_err, "body:%d:%d: %s", line, col, msg);
    else
        ex_msg(c->err, c->n_err, "%s", msg);
    longjmp(c->fail, 1);
}

#define EX_TOKFAIL(c, ...) ex_fail((c), (c)->lx.tok.line, (c)->lx.tok.col, __VA_ARGS__)

static void *ex_grow(ex_comp *c, void *p, int *cap, int need, size_t elem) {
    int n = *cap ? *cap : 16;
    void *q;
    if (need <= *cap) return p;
    while (n < need) n *= 2;
    q = realloc(p, (size_t)n * elem);
    if (!q) ex_fail(c, 0, 0, "out of memory");
    *cap = n;
    return q;
}

/* ---------------------------------------------------------------- lexer */
static int ex_isalpha(int ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_'; }
static int ex_isdigit(int ch) { return ch >= '0' && ch <= '9'; }
static int ex_isalnum(int ch) { return ex_isalpha(ch) || ex_isdigit(ch); }

static void ex_next(ex_comp *c) {
    ex_lex *l = &c->lx;
    const char *p = l->p;
    int k;
    for (;;) {
        if (*p == '\n') {
            l->line++;
            l->line_start = ++p;
        } else if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\v' || *p == '\f') {
            p++;
        } else if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n') p++;
        } else if (p[0] == '/' && p[1] == '*') {
            int line = l->line, col = (int)(p - l->line_start) + 1;
            p += 2;
            while (*p && !(p[0] == '*' && p[1] == '/')) {
                if (*p == '\n') {
                    l->line++;
                    l->line_start = p + 1;
                }
                p++;
            }
            if (!*p) ex_fail(c, line, col, "unterminated comment");
            p += 2;
        } else {
            break;
        }
    }
    l->tok.p = p;
    l->tok.line = l->line;
    l->tok.col = (int)(p - l->line_start) + 1;
    if (!*p) {
        l->tok.kind = EX_TK_EOF;
        l->tok.len = 0;
        l->p = p;
        return;
    }
    if (ex_isalpha((unsigned char)*p)) {
        const char *s = p;
        while (ex_isalnum((unsigned char)*p)) p++;
        l->tok.kind = EX_TK_ID;
        l->tok.len = (int)(p - s);
        l->p = p;
        return;
    }
    if (ex_isdigit((unsigned char)*p) || (p[0] == '.' && ex_isdigit((unsigned char)p[1]))) {
        const char *s = p;
        while (ex_isalnum((unsigned char)*p) || *p == '.' ||
               ((*p == '+' || *p == '-') && (p[-1] == 'e' || p[-1] == 'E' || p[-1] == 'p' || p[-1] == 'P')))
            p++;
        l->tok.kind = EX_TK_NUM;
        l->tok.len = (int)(p - s);
        l->p = p;
        return;
    }
    k = 0;
#define EX_P2(a, b, kind) else if (p[0] == (a) && p[1] == (b)) k = (kind), l->tok.len = 2
    if (p[0] == '<' && p[1] == '<' && p[2] == '=') k = EX_TK_SHLA, l->tok.len = 3;
    else if (p[0] == '>' && p[1] == '>' && p[2] == '=') k = EX_TK_SHRA, l->tok.len = 3;
    EX_P2('+', '+', EX_TK_INC); EX_P2('-', '-', EX_TK_DEC); EX_P2('<', '<', EX_TK_SHL);
    EX_P2('>', '>', EX_TK_SHR); EX_P2('<', '=', EX_TK_LE); EX_P2('>', '=', EX_TK_GE);
    EX_P2('=', '=', EX_TK_EQ); EX_P2('!', '=', EX_TK_NE); EX_P2('&', '&', EX_TK_LAND);
    EX_P2('|', '|', EX_TK_LOR); EX_P2('+', '=', EX_TK_ADDA); EX_P2('-', '=', EX_TK_SUBA);
    EX_P2('*', '=', EX_TK_MULA); EX_P2('/', '=', EX_TK_DIVA); EX_P2('%', '=', EX_TK_MODA);
    EX_P2('&', '=', EX_TK_ANDA); EX_P2('|', '=', EX_TK_ORA); EX_P2('^', '=', EX_TK_XORA);
    else if (p[0] == '-' && p[1] == '>') EX_TOKFAIL(c, "member access '->' is not supported");
    else if (p[0] == ':' && p[1] == ':') EX_TOKFAIL(c, "qualified names ('::') are not supported");
    else if (strchr("+-*/%<>=!&|^~?:;,(){}", *p)) k = (unsigned char)*p, l->tok.len = 1;
    else if (*p == '[' || *p == ']') EX_TOKFAIL(c, "arrays and subscripts ('%c') are not supported", *p);
    else if (*p == '.') EX_TOKFAIL(c, "member access '.' is not supported");
    else if (*p == '"') EX_TOKFAIL(c, "string literals are not supported");
    else if (*p == '\'') EX_TOKFAIL(c, "character literals are not supported");
    else if (*p == '#') EX_TOKFAIL(c, "preprocessor directives are not supported");
    else if (*p > ' ' && *p < 127) EX_TOKFAIL(c, "unexpected character '%c'", *p);
    else EX_TOKFAIL(c, "unexpected byte 0x%02x", (unsigned)(unsigned char)*p);
#undef EX_P2
    l->tok.kind = k;
    l->p = p + l->tok.len;
}

static ex_tok ex_peek(ex_comp *c) {
    ex_lex save = c->lx;
    ex_tok t;
    ex_next(c);
    t = c->lx.tok;
    c->lx = save;
    return t;
}

static int ex_is(const ex_tok *t, const char *word) {
    return t->kind == EX_TK_ID && (size_t)t->len == strlen(word) && memcmp(t->p, word, (size_t)t->len) == 0;
}

static int ex_in(const ex_tok *t, const char *const *words) {
    for (; *words; words++)
        if (ex_is(t, *words)) return 1;
    return 0;
}

/* "'text'" (at most 40 characters of it) or "end of input", for messages */
static const char *ex_tokname(ex_comp *c, const ex_tok *t) {
    if (t->kind == EX_TK_EOF) return "end of input";
    snprintf(c->name, sizeof c->name, "'%.*s%s'", t->len > 40 ? 40 : t->len, t->p, t->len > 40 ? "..." : "");
    return c->name;
}

static void ex_expect(ex_comp *c, int kind, const char *what) {
    if (c->lx.tok.kind != kind) EX_TOKFAIL(c, "expected %s before %s", what, ex_tokname(c, &c->lx.tok));
    ex_next(c);
}

static const char *const ex_type_words[] = {"const", "bool", "char", "short", "int", "long", "signed",
                                            "unsigned", "float", "double", "auto", "void", "volatile",
                                            "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t",
                                            "uint16_t", "uint32_t", "uint64_t", NULL};
static const char *const ex_keywords[] = {"if", "else", "for", "while", "do", "break", "continue",
                                          "return", "true", "false", "static_cast", NULL};
static const char *const ex_unsupported[] = {
    "switch", "case", "default", "goto", "sizeof", "alignof", "typedef", "struct", "class", "union",
    "enum", "static", "extern", "register", "inline", "template", "typename", "namespace", "using",
    "new", "delete", "this", "nullptr", "operator", "throw", "try", "catch", "asm", "constexpr",
    "decltype", "static_assert", "thread_local", "mutable", "virtual", "friend", "public", "private",
    "protected", "explicit", "export", "noexcept", "reinterpret_cast", "const_cast", "dynamic_cast",
    "typeid", "wchar_t", "char16_t", "char32_t", "__shared__", "__device__", "__global__",
    "__host__", "__restrict__", "restrict", NULL};

/* ---------------------------------------------------------------- types */
static int ex_is_float(int t) { return t == EX_F32 || t == EX_F64; }
static int ex_is_unsigned(int t) { return t == EX_U8 || t == EX_U16 || t == EX_U32 || t == EX_U64 || t == EX_BOOL; }
static int ex_bits(int t) {
    switch (t) {
    case EX_BOOL: return 1;
    case EX_I8: case EX_U8: return 8;
    case EX_I16: case EX_U16: return 16;
    case EX_I32: case EX_U32: case EX_F32: return 32;
    default: return 64;
    }
}
static int ex_promote(int t) { return (t == EX_BOOL || ex_bits(t) < 32) ? EX_I32 : t; }

/* the usual arithmetic conversions */
static int ex_common(int a, int b) {
    if (a == EX_F64 || b == EX_F64) return EX_F64;
    if (a == EX_F32 || b == EX_F32) return EX_F32;
    a = ex_promote(a);
    b = ex_promote(b);
    if (a == b) return a;
    if (ex_is_unsigned(a) == ex_is_unsigned(b)) return ex_bits(a) >= ex_bits(b) ? a : b;
    if (ex_is_unsigned(b)) { int t = a; a = b; b = t; } /* a unsigned, b signed */
    if (ex_bits(a) >= ex_bits(b)) return a;
    return b; /* long long can hold every unsigned int */
}

static const char *ex_type_name(int t) {
    static const char *const names[] = {"bool", "int", "unsigned int", "long long", "unsigned long long",
                                        "float", "double", "int8_t", "uint8_t", "int16_t", "uint16_t"};
    return t >= 0 && t < GPUOS__EX_TYPE_COUNT ? names[t] : "auto";
}

/* the conversion from type f to type t: an op, or -1 when the slot already holds it */
static int ex_conv_op(int f, int t) {
    static const int f2i[] = {0, EX_OP_F2I32, EX_OP_F2U32, EX_OP_F2I64, EX_OP_F2U64, 0, 0,
                              EX_OP_F2I8, EX_OP_F2U8, EX_OP_F2I16, EX_OP_F2U16};
    static const int d2i[] = {0, EX_OP_D2I32, EX_OP_D2U32, EX_OP_D2I64, EX_OP_D2U64, 0, 0,
                              EX_OP_D2I8, EX_OP_D2U8, EX_OP_D2I16, EX_OP_D2U16};
    static const int tr[] = {0, EX_OP_TR_I32, EX_OP_TR_U32, -1, -1, 0, 0,
                             EX_OP_TR_I8, EX_OP_TR_U8, EX_OP_TR_I16, EX_OP_TR_U16};
    if (f == t) return -1;
    if (t == EX_BOOL) return f == EX_F32 ? EX_OP_NZ_F : f == EX_F64 ? EX_OP_NZ_D : EX_OP_NZ_I;
    if (t == EX_F32) return f == EX_F64 ? EX_OP_D2F : f == EX_U64 ? EX_OP_U2F : EX_OP_I2F;
    if (t == EX_F64) return f == EX_F32 ? EX_OP_F2D : f == EX_U64 ? EX_OP_U2D : EX_OP_I2D;
    if (f == EX_F32) return f2i[t];
    if (f == EX_F64) return d2i[t];
    /* integer to integer: free when every value of f is one of t */
    if (ex_bits(t) == 64) return -1;
    if (ex_is_unsigned(f) ? (ex_is_unsigned(t) ? ex_bits(t) >= ex_bits(f) : ex_bits(t) > ex_bits(f))
                          : (!ex_is_unsigned(t) && ex_bits(t) >= ex_bits(f)))
        return -1;
    return tr[t];
}

/* ---------------------------------------------------------------- emitting */
static int ex_emit(ex_comp *c, int op, int d, int a, int b, uint32_t cc) {
    ex_cins *in;
    if (c->n_code >= EX_MAX_CODE) EX_TOKFAIL(c, "body too long (more than %d instructions)", EX_MAX_CODE);
    c->code = (ex_cins *)ex_grow(c, c->code, &c->cap_code, c->n_code + 1, sizeof *c->code);
    in = &c->code[c->n_code];
    in->op = op;
    in->d = d;
    in->a = a;
    in->b = b;
    in->c = cc;
    return c->n_code++;
}

static void ex_patch(ex_comp *c, int at, int target) {
    if (at >= 0) c->code[at].c = (uint32_t)target;
}

static int ex_is_const(int slot) { return slot >= EX_KREF && slot < EX_SREF; }
static int ex_is_temp(int slot) { return slot >= EX_SREF; }

static ex_opnd ex_mk(int slot, int type) {
    ex_opnd o;
    o.slot = slot;
    o.type = type;
    o.sym = -1;
    o.def = -1;
    return o;
}

static ex_opnd ex_const(ex_comp *c, int type, gpuos__ex_value v) {
    gpuos__ex_value k;
    int i;
    memset(&k, 0, sizeof k);
    if (type == EX_F32)
        k.f = v.f;
    else if (type == EX_F64)
        k.d = v.d;
    else
        k.u = ex_canon(v, type).u;
    for (i = 0; i < c->n_k; i++)
        if (c->kt[i] == type && memcmp(&c->kv[i], &k, sizeof k) == 0) return ex_mk(EX_KREF + i, type);
    if (c->n_k >= EX_MAX_SLOTS) EX_TOKFAIL(c, "too many constants (more than %d)", EX_MAX_SLOTS);
    c->kv = (gpuos__ex_value *)ex_grow(c, c->kv, &c->cap_k, c->n_k + 1, sizeof *c->kv);
    c->kt = (unsigned char *)ex_grow(c, c->kt, &c->cap_kt, c->n_k + 1, 1);
    c->kv[c->n_k] = k;
    c->kt[c->n_k] = (unsigned char)type;
    return ex_mk(EX_KREF + c->n_k++, type);
}

static ex_opnd ex_const_i(ex_comp *c, int type, int64_t i) {
    gpuos__ex_value v;
    memset(&v, 0, sizeof v);
    if (type == EX_F32)
        v.f = (float)i;
    else if (type == EX_F64)
        v.d = (double)i;
    else
        v.i = i;
    return ex_const(c, type, v);
}

static int ex_alloc(ex_comp *c) {
    if (c->top >= EX_MAX_SLOTS) EX_TOKFAIL(c, "body needs too many values (more than %d)", EX_MAX_SLOTS);
    if (++c->top > c->max_top) c->max_top = c->top;
    return EX_SREF + c->top - 1;
}

/* Emits op with result type rt on operands a, b (slots or -1) and cc (a slot for FMA, else a
   constant field); runs it now when every slot it reads is a constant. */
static ex_opnd ex_op(ex_comp *c, int op, int rt, int a, int b, uint32_t cc) {
    int fl = ex_op_flags[op], d;
    ex_opnd r;
    if ((fl & EX_FP) && (!(fl & EX_FA) || ex_is_const(a)) && (!(fl & EX_FB) || ex_is_const(b)) &&
        (!(fl & EX_FC) || ex_is_const((int)cc))) {
        gpuos__ex_value s[4];
        ex_ins prog[2];
        int line = 0;
        memset(s, 0, sizeof s);
        memset(prog, 0, sizeof prog);
        prog[0].op = (uint16_t)op;
        prog[0].d = 3;
        prog[0].a = 0;
        prog[0].b = 1;
        prog[0].c = (fl & EX_FC) ? 2u : cc;
        prog[1].op = EX_OP_HALT;
        if (fl & EX_FA) s[0] = c->kv[a - EX_KREF];
        if (fl & EX_FB) s[1] = c->kv[b - EX_KREF];
        if (fl & EX_FC) s[2] = c->kv[(int)cc - EX_KREF];
        ex_exec(prog, s, &line);
        return ex_const(c, rt, s[3]);
    }
    d = ex_alloc(c);
    r = ex_mk(d, rt);
    r.def = ex_emit(c, op, d, a, b, cc);
    return r;
}

/* o converted to type t, in a new temporary unless no instruction is needed */
static ex_opnd ex_convert(ex_comp *c, ex_opnd o, int t) {
    int op = ex_conv_op(o.type, t);
    ex_opnd r;
    if (op < 0) {
        r = o;
        r.type = t;
        r.sym = -1;
        return r;
    }
    return ex_op(c, op, t, o.slot, -1, 0);
}

/* o converted to type t and stored into slot dst. retarget: the instruction that computed
   o may write dst itself instead of a temporary. */
static void ex_convert_to(ex_comp *c, ex_opnd o, int t, int dst, int retarget) {
    int op = ex_conv_op(o.type, t);
    if (op >= 0 && ex_is_const(o.slot)) {
        o = ex_convert(c, o, t); /* folds */
        op = -1;
    }
    if (op >= 0) {
        ex_emit(c, op, dst, o.slot, -1, 0);
    } else if (o.slot != dst) {
        if (retarget && ex_is_temp(o.slot) && o.def >= 0 && o.def == c->n_code - 1 && c->code[o.def].d == o.slot)
            c->code[o.def].d = dst;
        else
            ex_emit(c, EX_OP_MOV, dst, o.slot, -1, 0);
    }
}

/* a jump taken when o is true (when == 1) or false (0); -1 when it never is */
static int ex_branch(ex_comp *c, ex_opnd o, int when) {
    static const int jz[3] = {EX_OP_JZ_I, EX_OP_JZ_F, EX_OP_JZ_D};
    static const int jnz[3] = {EX_OP_JNZ_I, EX_OP_JNZ_F, EX_OP_JNZ_D};
    int k = o.type == EX_F32 ? 1 : o.type == EX_F64 ? 2 : 0;
    if (ex_is_const(o.slot)) {
        gpuos__ex_value v = c->kv[o.slot - EX_KREF];
        int truth = k == 1 ? v.f != 0.0f : k == 2 ? v.d != 0.0 : v.u != 0;
        return truth == when ? ex_emit(c, EX_OP_JMP, 0, 0, 0, 0) : -1;
    }
    return ex_emit(c, when ? jnz[k] : jz[k], 0, o.slot, 0, 0);
}

/* ---------------------------------------------------------------- scopes */
static int ex_lookup(ex_comp *c, const ex_tok *t) {
    int i;
    for (i = c->n_syms - 1; i >= 0; i--)
        if (c->syms[i].len == t->len && memcmp(c->syms[i].name, t->p, (size_t)t->len) == 0) return i;
    return -1;
}

static void ex_declare(ex_comp *c, const ex_tok *name, int slot, int type, int readonly) {
    int i = ex_lookup(c, name);
    ex_sym *s;
    if (i >= 0 && c->syms[i].depth == c->scope)
        ex_fail(c, name->line, name->col, "redefinition of '%.*s'", name->len > 64 ? 64 : name->len, name->p);
    c->syms = (ex_sym *)ex_grow(c, c->syms, &c->cap_syms, c->n_syms + 1, sizeof *c->syms);
    s = &c->syms[c->n_syms++];
    s->name = name->p;
    s->len = name->len;
    s->slot = slot;
    s->type = type;
    s->depth = c->scope;
    s->readonly = readonly;
}

typedef struct ex_scope {
    int n_syms, top;
} ex_scope;

static ex_scope ex_scope_push(ex_comp *c) {
    ex_scope s;
    s.n_syms = c->n_syms;
    s.top = c->top;
    c->scope++;
    return s;
}

static void ex_scope_pop(ex_comp *c, ex_scope s) {
    c->n_syms = s.n_syms;
    c->top = s.top;
    c->scope--;
}

static void ex_enter(ex_comp *c) {
    if (++c->depth > EX_MAX_DEPTH) EX_TOKFAIL(c, "nesting too deep (more than %d levels)", EX_MAX_DEPTH);
}

/* ---------------------------------------------------------------- literals */
static ex_opnd ex_number(ex_comp *c) {
    const ex_tok t = c->lx.tok;
    const char *s = t.p, *e = t.p + t.len, *q;
    int base = 10, is_float = 0, n_u = 0, n_l = 0, digits = 0, overflow = 0;
    uint64_t v = 0;
    gpuos__ex_value val;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        base = 16;
    else if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B'))
        base = 2;
    for (q = s; q < e; q++)
        if (*q == '.' || (base == 10 && (*q == 'e' || *q == 'E')) || (base == 16 && (*q == 'p' || *q == 'P')))
            is_float = 1;
    memset(&val, 0, sizeof val);
    if (is_float) {
        int single = 0;
        char *tmp, *end;
        const char *dp = localeconv()->decimal_point;
        size_t n;
        if (base == 2 || (base == 16 && !memchr(s, 'p', (size_t)(e - s)) && !memchr(s, 'P', (size_t)(e - s))))
            EX_TOKFAIL(c, "invalid numeric literal %s", ex_tokname(c, &t));
        if (e[-1] == 'f' || e[-1] == 'F') {
            single = 1;
            e--;
        } else if (e[-1] == 'l' || e[-1] == 'L') {
            EX_TOKFAIL(c, "long double literals are not supported");
        }
        n = (size_t)(e - s);
        tmp = (char *)malloc(n + 1);
        if (!tmp) ex_fail(c, 0, 0, "out of memory");
        memcpy(tmp, s, n);
        tmp[n] = 0;
        if (dp && dp[0] && !dp[1]) /* strtod reads the locale's decimal point */
            for (q = tmp; *q; q++)
                if (*q == '.') tmp[q - tmp] = dp[0];
        if (single)
            val.f = strtof(tmp, &end);
        else
            val.d = strtod(tmp, &end);
        if ((size_t)(end - tmp) != n) {
            free(tmp);
            EX_TOKFAIL(c, "invalid numeric literal %s", ex_tokname(c, &t));
        }
        free(tmp);
        ex_next(c);
        return ex_const(c, single ? EX_F32 : EX_F64, val);
    }
    q = s;
    if (base != 10)
        q += 2;
    else if (s[0] == '0')
        base = 8;
    for (; q < e; q++) {
        int d = ex_isdigit((unsigned char)*q) ? *q - '0'
                : (*q >= 'a' && *q <= 'f') ? *q - 'a' + 10
                : (*q >= 'A' && *q <= 'F') ? *q - 'A' + 10
                                           : 99;
        if (d >= base) break;
        if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) overflow = 1;
        v = v * (uint64_t)base + (uint64_t)d;
        digits++;
    }
    if (base == 8) digits++; /* the leading 0 */
    while (q < e) { /* suffix: u and l / ll, in either order, once each */
        if ((*q == 'u' || *q == 'U') && !n_u) {
            n_u = 1;
            q++;
        } else if ((*q == 'l' || *q == 'L') && !n_l) {
            n_l = 1;
            if (q + 1 < e && q[1] == q[0]) {
                n_l = 2;
                q++;
            }
            q++;
        } else {
            break;
        }
    }
    if (q != e || !digits) EX_TOKFAIL(c, "invalid numeric literal %s", ex_tokname(c, &t));
    if (overflow) EX_TOKFAIL(c, "integer literal %s is too large", ex_tokname(c, &t));
    val.u = v;
    ex_next(c);
    if (n_u) return ex_const(c, (!n_l && v <= UINT32_MAX) ? EX_U32 : EX_U64, val);
    if (base == 10) {
        if (!n_l && v <= INT32_MAX) return ex_const(c, EX_I32, val);
        if (v <= INT64_MAX) return ex_const(c, EX_I64, val);
        ex_fail(c, t.line, t.col, "integer literal %s is too large", ex_tokname(c, &t));
    }
    if (!n_l && v <= INT32_MAX) return ex_const(c, EX_I32, val);
    if (!n_l && v <= UINT32_MAX) return ex_const(c, EX_U32, val);
    return ex_const(c, v <= INT64_MAX ? EX_I64 : EX_U64, val);
}

/* the built-in constants (macros in CUDA) */
static int ex_builtin_const(ex_comp *c, const ex_tok *t, ex_opnd *r) {
    gpuos__ex_value v;
    int type;
    memset(&v, 0, sizeof v);
    if (ex_is(t, "INFINITY") || ex_is(t, "HUGE_VALF")) type = EX_F32, v.f = INFINITY;
    else if (ex_is(t, "NAN")) type = EX_F32, v.f = NAN;
    else if (ex_is(t, "HUGE_VAL")) type = EX_F64, v.d = HUGE_VAL;
    else if (ex_is(t, "FLT_MAX")) type = EX_F32, v.f = FLT_MAX;
    else if (ex_is(t, "FLT_MIN")) type = EX_F32, v.f = FLT_MIN;
    else if (ex_is(t, "FLT_EPSILON")) type = EX_F32, v.f = FLT_EPSILON;
    else if (ex_is(t, "DBL_MAX")) type = EX_F64, v.d = DBL_MAX;
    else if (ex_is(t, "DBL_MIN")) type = EX_F64, v.d = DBL_MIN;
    else if (ex_is(t, "DBL_EPSILON")) type = EX_F64, v.d = DBL_EPSILON;
    else if (ex_is(t, "M_PI")) type = EX_F64, v.d = 3.14159265358979323846;
    else if (ex_is(t, "INT_MAX")) type = EX_I32, v.i = INT32_MAX;
    else if (ex_is(t, "INT_MIN")) type = EX_I32, v.i = INT32_MIN;
    else if (ex_is(t, "UINT_MAX")) type = EX_U32, v.u = UINT32_MAX;
    else if (ex_is(t, "LLONG_MAX")) type = EX_I64, v.i = INT64_MAX;
    else if (ex_is(t, "LLONG_MIN")) type = EX_I64, v.i = INT64_MIN;
    else if (ex_is(t, "ULLONG_MAX")) type = EX_U64, v.u = UINT64_MAX;
    /* <stdint.h>'s, as the device prelude defines them (int below 32 bits, as C promotes) */
    else if (ex_is(t, "INT8_MIN")) type = EX_I32, v.i = INT8_MIN;
    else if (ex_is(t, "INT8_MAX")) type = EX_I32, v.i = INT8_MAX;
    else if (ex_is(t, "UINT8_MAX")) type = EX_I32, v.i = UINT8_MAX;
    else if (ex_is(t, "INT16_MIN")) type = EX_I32, v.i = INT16_MIN;
    else if (ex_is(t, "INT16_MAX")) type = EX_I32, v.i = INT16_MAX;
    else if (ex_is(t, "UINT16_MAX")) type = EX_I32, v.i = UINT16_MAX;
    else if (ex_is(t, "INT32_MIN")) type = EX_I32, v.i = INT32_MIN;
    else if (ex_is(t, "INT32_MAX")) type = EX_I32, v.i = INT32_MAX;
    else if (ex_is(t, "UINT32_MAX")) type = EX_U32, v.u = UINT32_MAX;
    else if (ex_is(t, "INT64_MIN")) type = EX_I64, v.i = INT64_MIN;
    else if (ex_is(t, "INT64_MAX")) type = EX_I64, v.i = INT64_MAX;
    else if (ex_is(t, "UINT64_MAX")) type = EX_U64, v.u = UINT64_MAX;
    else return 0;
    *r = ex_const(c, type, v);
    return 1;
}

/* ---------------------------------------------------------------- type names */
static int ex_is_type_start(const ex_tok *t) { return ex_in(t, ex_type_words); }

/* "[const] int", "unsigned long long", "uint8_t", "auto" ...: the type (EX_AUTO for auto);
   *is_const set when const appears */
static int ex_parse_type(ex_comp *c, int *is_const) {
    int n_uns = 0, n_sig = 0, n_short = 0, n_long = 0, n_int = 0, n_char = 0, n_other = 0, other = -1;
    const ex_tok first = c->lx.tok;
    *is_const = 0;
    for (;;) {
        const ex_tok *t = &c->lx.tok;
        if (ex_is(t, "const")) *is_const = 1;
        else if (ex_is(t, "unsigned")) n_uns++;
        else if (ex_is(t, "signed")) n_sig++;
        else if (ex_is(t, "short")) n_short++;
        else if (ex_is(t, "long")) n_long++;
        else if (ex_is(t, "int")) n_int++;
        else if (ex_is(t, "char")) n_char++;
        else if (ex_is(t, "void") || ex_is(t, "volatile"))
            EX_TOKFAIL(c, "%s is not supported", ex_tokname(c, t));
        else if (ex_is(t, "bool")) n_other++, other = EX_BOOL;
        else if (ex_is(t, "float")) n_other++, other = EX_F32;
        else if (ex_is(t, "double")) n_other++, other = EX_F64;
        else if (ex_is(t, "auto")) n_other++, other = EX_AUTO;
        else if (ex_is(t, "int8_t")) n_other++, other = EX_I8;
        else if (ex_is(t, "int16_t")) n_other++, other = EX_I16;
        else if (ex_is(t, "int32_t")) n_other++, other = EX_I32;
        else if (ex_is(t, "int64_t")) n_other++, other = EX_I64;
        else if (ex_is(t, "uint8_t")) n_other++, other = EX_U8;
        else if (ex_is(t, "uint16_t")) n_other++, other = EX_U16;
        else if (ex_is(t, "uint32_t")) n_other++, other = EX_U32;
        else if (ex_is(t, "uint64_t")) n_other++, other = EX_U64;
        else break;
        ex_next(c);
    }
    if (n_other == 1 && other == EX_F64 && n_long == 1 && !n_uns + !n_sig + !n_short + !n_int + !n_char == 5)
        ex_fail(c, first.line, first.col, "'long double' is not supported");
    if (n_other > 1 || (n_other && (n_uns || n_sig || n_short || n_long || n_int || n_char)) ||
        (n_uns && n_sig) || n_uns > 1 || n_sig > 1 || n_int > 1 || n_char > 1 || n_short > 1 || n_long > 2 ||
        (n_short && n_long) || (n_char && (n_short || n_long || n_int)))
        ex_fail(c, first.line, first.col, "invalid type");
    if (n_other) return other;
    if (n_char) return n_uns ? EX_U8 : EX_I8; /* char is signed, as on the GPU's hosts */
    if (n_short) return n_uns ? EX_U16 : EX_I16;
    if (n_long) return n_uns ? EX_U64 : EX_I64; /* long is 64 bits, as in CUDA on 64-bit Linux */
    if (n_uns || n_sig || n_int) return n_uns ? EX_U32 : EX_I32;
    ex_fail(c, first.line, first.col, "expected a type after 'const'");
    return EX_I32;
}

/* ---------------------------------------------------------------- expressions */
static ex_opnd ex_expr(ex_comp *c);
static ex_opnd ex_assign(ex_comp *c);
static ex_opnd ex_unary(ex_comp *c);

static void ex_need_lvalue(ex_comp *c, ex_opnd o, int line, int col, const char *what) {
    const ex_sym *s;
    if (o.sym < 0) ex_fail(c, line, col, "%s needs a variable (an lvalue)", what);
    s = &c->syms[o.sym];
    if (s->readonly == 1)
        ex_fail(c, line, col, "cannot assign to input '%.*s' (it is read-only)", s->len > 64 ? 64 : s->len, s->name);
    if (s->readonly == 2)
        ex_fail(c, line, col, "cannot assign to const variable '%.*s'", s->len > 64 ? 64 : s->len, s->name);
}

static const char *ex_op_text(int op) {
    switch (op) {
    case EX_TK_SHL: return "<<";
    case EX_TK_SHR: return ">>";
    case '%': return "%";
    case '&': return "&";
    case '|': return "|";
    case '^': return "^";
    default: return "?";
    }
}

/* L op R for a binary operator token op (not && ||): the usual conversions, the typed
   instruction; the result replaces the temporaries from mark up */
static ex_opnd ex_arith(ex_comp *c, int op, ex_opnd L, ex_opnd R, int mark, int line, int col) {
    int t, a, b, code = -1, rt, swap = 0;
    if (op == '%' || op == '&' || op == '|' || op == '^' || op == EX_TK_SHL || op == EX_TK_SHR) {
        if (ex_is_float(L.type) || ex_is_float(R.type))
            ex_fail(c, line, col, "invalid operands to '%s' (%s and %s)", ex_op_text(op), ex_type_name(L.type),
                    ex_type_name(R.type));
    }
    if (op == EX_TK_SHL || op == EX_TK_SHR) {
        t = ex_promote(L.type);
        L = ex_convert(c, L, t);
        R = ex_convert(c, R, ex_promote(R.type));
    } else {
        t = ex_common(L.type, R.type);
        L = ex_convert(c, L, t);
        R = ex_convert(c, R, t);
    }
    rt = t;
    switch (op) {
    case '+': code = t == EX_I32 ? EX_OP_ADD_I32 : t == EX_U32 ? EX_OP_ADD_U32 : t == EX_F32 ? EX_OP_ADD_F
                   : t == EX_F64 ? EX_OP_ADD_D : EX_OP_ADD_64; break;
    case '-': code = t == EX_I32 ? EX_OP_SUB_I32 : t == EX_U32 ? EX_OP_SUB_U32 : t == EX_F32 ? EX_OP_SUB_F
                   : t == EX_F64 ? EX_OP_SUB_D : EX_OP_SUB_64; break;
    case '*': code = t == EX_I32 ? EX_OP_MUL_I32 : t == EX_U32 ? EX_OP_MUL_U32 : t == EX_F32 ? EX_OP_MUL_F
                   : t == EX_F64 ? EX_OP_MUL_D : EX_OP_MUL_64; break;
    case '/': code = t == EX_I32 ? EX_OP_DIV_I32 : t == EX_U32 ? EX_OP_DIV_U32 : t == EX_I64 ? EX_OP_DIV_I64
                   : t == EX_U64 ? EX_OP_DIV_U64 : t == EX_F32 ? EX_OP_DIV_F : EX_OP_DIV_D; break;
    case '%': code = t == EX_I32 ? EX_OP_REM_I32 : t == EX_U32 ? EX_OP_REM_U32 : t == EX_I64 ? EX_OP_REM_I64
                   : EX_OP_REM_U64; break;
    case EX_TK_SHL: code = t == EX_I32 ? EX_OP_SHL_I32 : t == EX_U32 ? EX_OP_SHL_U32 : EX_OP_SHL_64; break;
    case EX_TK_SHR: code = t == EX_I32 ? EX_OP_SHR_I32 : t == EX_U32 ? EX_OP_SHR_U32 : t == EX_I64 ? EX_OP_SHR_I64
                         : EX_OP_SHR_U64; break;
    case '&': code = EX_OP_AND; break;
    case '|': code = EX_OP_OR; break;
    case '^': code = EX_OP_XOR; break;
    case EX_TK_EQ: case EX_TK_NE:
        rt = EX_BOOL;
        code = t == EX_F32 ? EX_OP_EQ_F : t == EX_F64 ? EX_OP_EQ_D : EX_OP_EQ_I;
        if (op == EX_TK_NE) code = t == EX_F32 ? EX_OP_NE_F : t == EX_F64 ? EX_OP_NE_D : EX_OP_NE_I;
        break;
    case '>': case EX_TK_GE: swap = 1; /* a > b is b < a: exact, NaN included */
        /* fall through */
    case '<': case EX_TK_LE:
        rt = EX_BOOL;
        if (op == '<' || op == '>')
            code = t == EX_F32 ? EX_OP_LT_F : t == EX_F64 ? EX_OP_LT_D : ex_is_unsigned(t) ? EX_OP_LT_U : EX_OP_LT_S;
        else
            code = t == EX_F32 ? EX_OP_LE_F : t == EX_F64 ? EX_OP_LE_D : ex_is_unsigned(t) ? EX_OP_LE_U : EX_OP_LE_S;
        break;
    default: ex_fail(c, line, col, "unsupported operator");
    }
    a = swap ? R.slot : L.slot;
    b = swap ? L.slot : R.slot;
    c->top = mark;
    return ex_op(c, code, rt, a, b, 0);
}

static int ex_prec(int k) {
    switch (k) {
    case EX_TK_LOR: return 1;
    case EX_TK_LAND: return 2;
    case '|': return 3;
    case '^': return 4;
    case '&': return 5;
    case EX_TK_EQ: case EX_TK_NE: return 6;
    case '<': case '>': case EX_TK_LE: case EX_TK_GE: return 7;
    case EX_TK_SHL: case EX_TK_SHR: return 8;
    case '+': case '-': return 9;
    case '*': case '/': case '%': return 10;
    default: return 0;
    }
}

static ex_opnd ex_binary(ex_comp *c, int min_prec) {
    int mark = c->top;
    ex_opnd L = ex_unary(c);
    for (;;) {
        int op = c->lx.tok.kind, prec = ex_prec(op), line = c->lx.tok.line, col = c->lx.tok.col;
        if (prec == 0 || prec < min_prec) return L;
        ex_next(c);
        if (op == EX_TK_LAND || op == EX_TK_LOR) { /* r = bool(L); if (r == (op is ||)) skip; r = bool(R) */
            int r, j;
            ex_opnd R;
            c->top = mark;
            r = ex_alloc(c);
            ex_convert_to(c, L, EX_BOOL, r, 0);
            j = ex_emit(c, op == EX_TK_LOR ? EX_OP_JNZ_I : EX_OP_JZ_I, 0, r, 0, 0);
            R = ex_binary(c, prec + 1);
            ex_convert_to(c, R, EX_BOOL, r, 1);
            ex_patch(c, j, c->n_code);
            c->top = mark + 1;
            L = ex_mk(r, EX_BOOL);
        } else {
            ex_opnd R;
            if ((op == EX_TK_SHL || op == EX_TK_SHR) && L.sym >= 0 && c->syms[L.sym].readonly != 1) {
                /* C++17 sequences E1 before E2 in E1 << E2: "k << (k = 3)" shifts the old k */
                ex_opnd t = ex_mk(ex_alloc(c), L.type);
                ex_emit(c, EX_OP_MOV, t.slot, L.slot, -1, 0);
                L = t;
            }
            R = ex_binary(c, prec + 1);
            L = ex_arith(c, op, L, R, mark, line, col);
        }
    }
}

static ex_opnd ex_cond(ex_comp *c) {
    int mark = c->top, jz, ph, jend, r, t, n;
    ex_opnd C = ex_binary(c, 1), X, Y;
    if (c->lx.tok.kind != '?') return C;
    ex_next(c);
    jz = ex_branch(c, C, 0);
    c->top = mark;
    r = ex_alloc(c);
    X = ex_expr(c);
    ex_expect(c, ':', "':'");
    ph = ex_emit(c, EX_OP_JMP, 0, 0, 0, 0); /* becomes "r = X" once Y's type is known */
    jend = ex_emit(c, EX_OP_JMP, 0, 0, 0, 0);
    ex_patch(c, jz, c->n_code);
    Y = ex_assign(c);
    t = X.type == Y.type ? X.type : ex_common(X.type, Y.type);
    ex_convert_to(c, Y, t, r, 1);
    n = c->n_code;
    ex_convert_to(c, X, t, r, 0);
    if (c->n_code > n) {
        c->code[ph] = c->code[n];
        c->n_code = n;
    } else {
        c->code[ph].c = (uint32_t)(ph + 1);
    }
    ex_patch(c, jend, c->n_code);
    c->top = mark + 1;
    return ex_mk(r, t);
}

/* lhs op= rhs, or lhs = rhs (op 0): the value is the variable */
static ex_opnd ex_store_op(ex_comp *c, ex_opnd L, int op, ex_opnd R, int mark, int line, int col) {
    ex_opnd v = L;
    const ex_sym *s = &c->syms[L.sym];
    if (op) R = ex_arith(c, op, L, R, c->top, line, col);
    ex_convert_to(c, R, s->type, s->slot, 1);
    c->top = mark;
    v.slot = s->slot;
    v.type = s->type;
    v.def = -1;
    return v;
}

static ex_opnd ex_assign(ex_comp *c) {
    int mark = c->top, op, line, col;
    ex_opnd L, R;
    ex_enter(c);
    L = ex_cond(c);
    op = c->lx.tok.kind;
    line = c->lx.tok.line;
    col = c->lx.tok.col;
    switch (op) {
    case '=': op = 0; break;
    case EX_TK_ADDA: op = '+'; break;
    case EX_TK_SUBA: op = '-'; break;
    case EX_TK_MULA: op = '*'; break;
    case EX_TK_DIVA: op = '/'; break;
    case EX_TK_MODA: op = '%'; break;
    case EX_TK_ANDA: op = '&'; break;
    case EX_TK_ORA: op = '|'; break;
    case EX_TK_XORA: op = '^'; break;
    case EX_TK_SHLA: op = EX_TK_SHL; break;
    case EX_TK_SHRA: op = EX_TK_SHR; break;
    default: c->depth--; return L;
    }
    ex_need_lvalue(c, L, line, col, "assignment");
    ex_next(c);
    R = ex_assign(c);
    L = ex_store_op(c, L, op, R, mark, line, col);
    c->depth--;
    return L;
}

static ex_opnd ex_expr(ex_comp *c) {
    int mark = c->top;
    ex_opnd o = ex_assign(c);
    while (c->lx.tok.kind == ',') {
        ex_next(c);
        c->top = mark;
        o = ex_assign(c);
    }
    return o;
}

/* ++x, --x, x++, x-- on the lvalue o */
static ex_opnd ex_incdec(ex_comp *c, ex_opnd o, int inc, int post, int line, int col) {
    const ex_sym *s;
    ex_opnd one, old = o;
    int mark = c->top;
    ex_need_lvalue(c, o, line, col, inc ? "'++'" : "'--'");
    s = &c->syms[o.sym];
    if (s->type == EX_BOOL) ex_fail(c, line, col, "%s on a bool is not allowed in C++17", inc ? "'++'" : "'--'");
    if (post) {
        old = ex_mk(ex_alloc(c), s->type);
        ex_emit(c, EX_OP_MOV, old.slot, s->slot, -1, 0);
        mark = c->top;
    }
    one = ex_const_i(c, EX_I32, 1);
    ex_store_op(c, o, inc ? '+' : '-', one, mark, line, col);
    return old;
}

static ex_opnd ex_cast(ex_comp *c, ex_opnd o, int t, int line, int col) {
    if (t == EX_AUTO) ex_fail(c, line, col, "'auto' is not allowed here");
    return ex_convert(c, o, t);
}

static ex_opnd ex_call(ex_comp *c, const ex_tok name) {
    ex_opnd arg[3];
    int n = 0, mark = c->top, i, kind = -1, sp = -1, nargs = 0, t, allf = 1;
    const ex_fname *fn = NULL;
    memset(arg, 0, sizeof arg);
    for (i = 0; i < (int)(sizeof ex_fnames / sizeof ex_fnames[0]); i++)
        if (ex_fnames[i].name[0] && ex_is(&name, ex_fnames[i].name)) {
            fn = &ex_fnames[i];
            kind = fn->nargs;
            nargs = fn->nargs;
        }
    for (i = 0; i < EX_SP_COUNT && !fn; i++)
        if (ex_is(&name, ex_special_names[i])) {
            sp = i;
            kind = 3;
            nargs = ex_special_nargs[i];
        }
    if (kind < 0) ex_fail(c, name.line, name.col, "unknown function %s", ex_tokname(c, &name));
    ex_next(c); /* ( */
    if (c->lx.tok.kind != ')') {
        for (;;) {
            ex_opnd a = ex_assign(c);
            if (n < 3) arg[n] = a;
            n++;
            if (c->lx.tok.kind != ',') break;
            ex_next(c);
        }
    }
    ex_expect(c, ')', "')'");
    if (n != nargs)
        ex_fail(c, name.line, name.col, "%s takes %d argument%s, not %d", ex_tokname(c, &name), nargs,
                nargs == 1 ? "" : "s", n);
    for (i = 0; i < n; i++) {
        if (arg[i].type != EX_F32) allf = 0;
    }
    if (kind == 1 || kind == 2) {
        /* f-suffixed: float; overloaded: all float -> float, pow(float, integer) -> float,
           otherwise double */
        int f = fn->fixed_float || allf ||
                (kind == 2 && fn->fn == EX_FN_POW && arg[0].type == EX_F32 && !ex_is_float(arg[1].type));
        t = f ? EX_F32 : EX_F64;
        for (i = 0; i < n; i++) arg[i] = ex_convert(c, arg[i], t);
        c->top = mark;
        /* pow(x, 2) and pow(x, -1) with a constant exponent are x * x and 1 / x, as the C and
           CUDA compilers fold them: exact, where the library's pow may be an ulp off (glibc's
           powf of -153.434525f, 2) */
        if (kind == 2 && fn->fn == EX_FN_POW && ex_is_const(arg[1].slot)) {
            const double e = f ? (double)c->kv[arg[1].slot - EX_KREF].f : c->kv[arg[1].slot - EX_KREF].d;
            if (e == 2.0) return ex_op(c, f ? EX_OP_MUL_F : EX_OP_MUL_D, t, arg[0].slot, arg[0].slot, 0);
            if (e == -1.0) {
                gpuos__ex_value one;
                ex_opnd k;
                if (f) one.f = 1.0f;
                else one.d = 1.0;
                k = ex_const(c, t, one);
                return ex_op(c, f ? EX_OP_DIV_F : EX_OP_DIV_D, t, k.slot, arg[0].slot, 0);
            }
        }
        if (kind == 1) return ex_op(c, f ? EX_OP_CALL_F1 : EX_OP_CALL_D1, t, arg[0].slot, -1, fn->fn);
        return ex_op(c, f ? EX_OP_CALL_F2 : EX_OP_CALL_D2, t, arg[0].slot, arg[1].slot, fn->fn);
    }
    switch (sp) {
    case EX_SP_FMA: case EX_SP_FMAF:
        t = (sp == EX_SP_FMAF || allf) ? EX_F32 : EX_F64;
        for (i = 0; i < 3; i++) arg[i] = ex_convert(c, arg[i], t);
        c->top = mark;
        return ex_op(c, t == EX_F32 ? EX_OP_FMA_F : EX_OP_FMA_D, t, arg[0].slot, arg[1].slot, (uint32_t)arg[2].slot);
    case EX_SP_MIN: case EX_SP_MAX:
        t = ex_common(arg[0].type, arg[1].type);
        arg[0] = ex_convert(c, arg[0], t);
        arg[1] = ex_convert(c, arg[1], t);
        c->top = mark;
        if (ex_is_float(t))
            return ex_op(c, t == EX_F32 ? EX_OP_CALL_F2 : EX_OP_CALL_D2, t, arg[0].slot, arg[1].slot,
                         sp == EX_SP_MIN ? EX_FN_FMIN : EX_FN_FMAX);
        return ex_op(c, ex_is_unsigned(t) ? (sp == EX_SP_MIN ? EX_OP_MIN_U : EX_OP_MAX_U)
                                          : (sp == EX_SP_MIN ? EX_OP_MIN_S : EX_OP_MAX_S),
                     t, arg[0].slot, arg[1].slot, 0);
    case EX_SP_ABS:
        t = ex_promote(arg[0].type);
        if (ex_is_unsigned(t))
            ex_fail(c, name.line, name.col, "'abs' of %s is ambiguous", ex_type_name(arg[0].type));
        arg[0] = ex_convert(c, arg[0], t);
        c->top = mark;
        if (ex_is_float(t))
            return ex_op(c, t == EX_F32 ? EX_OP_CALL_F1 : EX_OP_CALL_D1, t, arg[0].slot, -1, EX_FN_FABS);
        return ex_op(c, t == EX_I32 ? EX_OP_ABS_I32 : EX_OP_ABS_I64, t, arg[0].slot, -1, 0);
    default: { /* isnan isinf isfinite signbit: integers as double */
        static const int fop[4] = {EX_OP_ISNAN_F, EX_OP_ISINF_F, EX_OP_ISFIN_F, EX_OP_SIGNBIT_F};
        static const int dop[4] = {EX_OP_ISNAN_D, EX_OP_ISINF_D, EX_OP_ISFIN_D, EX_OP_SIGNBIT_D};
        int k = sp - EX_SP_ISNAN;
        t = arg[0].type == EX_F32 ? EX_F32 : EX_F64;
        arg[0] = ex_convert(c, arg[0], t);
        c->top = mark;
        return ex_op(c, t == EX_F32 ? fop[k] : dop[k], EX_BOOL, arg[0].slot, -1, 0);
    }
    }
}

static ex_opnd ex_primary(ex_comp *c) {
    ex_tok t = c->lx.tok;
    ex_opnd o;
    int i;
    if (t.kind == EX_TK_NUM) return ex_number(c);
    if (t.kind == '(') {
        ex_next(c);
        o = ex_expr(c);
        ex_expect(c, ')', "')'");
        return o;
    }
    if (t.kind != EX_TK_ID) {
        if (t.kind == '{') EX_TOKFAIL(c, "braced initializers are not supported");
        EX_TOKFAIL(c, "expected an expression before %s", ex_tokname(c, &t));
    }
    if (ex_is(&t, "true") || ex_is(&t, "false")) {
        ex_next(c);
        return ex_const_i(c, EX_BOOL, ex_is(&t, "true"));
    }
    if (ex_is(&t, "static_cast")) {
        int is_const, type;
        ex_next(c);
        ex_expect(c, '<', "'<'");
        if (!ex_is_type_start(&c->lx.tok)) EX_TOKFAIL(c, "expected a type");
        type = ex_parse_type(c, &is_const);
        ex_expect(c, '>', "'>'");
        ex_expect(c, '(', "'('");
        o = ex_expr(c);
        ex_expect(c, ')', "')'");
        return ex_cast(c, o, type, t.line, t.col);
    }
    if (ex_is_type_start(&t)) { /* a functional cast: float(x), int(), uint8_t(x) */
        int is_const, type;
        if (ex_peek(c).kind != '(' || ex_is(&t, "const"))
            EX_TOKFAIL(c, "unexpected type name %s (declarations are statements of their own)",
                       ex_tokname(c, &t));
        type = ex_parse_type(c, &is_const);
        ex_next(c); /* ( */
        if (c->lx.tok.kind == ')') {
            ex_next(c);
            if (type == EX_AUTO) ex_fail(c, t.line, t.col, "'auto' is not allowed here");
            return ex_const_i(c, type, 0);
        }
        o = ex_assign(c);
        ex_expect(c, ')', "')'");
        return ex_cast(c, o, type, t.line, t.col);
    }
    if (ex_in(&t, ex_unsupported)) EX_TOKFAIL(c, "%s is not supported", ex_tokname(c, &t));
    if (ex_in(&t, ex_keywords)) EX_TOKFAIL(c, "unexpected %s", ex_tokname(c, &t));
    i = ex_lookup(c, &t);
    ex_next(c);
    if (c->lx.tok.kind == '(') {
        if (i >= 0) ex_fail(c, t.line, t.col, "%s is a variable, not a function", ex_tokname(c, &t));
        return ex_call(c, t);
    }
    if (i >= 0) {
        o = ex_mk(c->syms[i].slot, c->syms[i].type);
        o.sym = i;
        return o;
    }
    if (ex_builtin_const(c, &t, &o)) return o;
    ex_fail(c, t.line, t.col, "unknown identifier %s", ex_tokname(c, &t));
    return o;
}

static ex_opnd ex_postfix(ex_comp *c) {
    ex_opnd o = ex_primary(c);
    while (c->lx.tok.kind == EX_TK_INC || c->lx.tok.kind == EX_TK_DEC) {
        int inc = c->lx.tok.kind == EX_TK_INC, line = c->lx.tok.line, col = c->lx.tok.col;
        ex_next(c);
        o = ex_incdec(c, o, inc, 1, line, col);
    }
    if (c->lx.tok.kind == '(') EX_TOKFAIL(c, "called object is not a function");
    return o;
}

/* at '(' before a type word: a parenthesised expression when the type's words are followed
   by '(' (a functional cast: "(int(x) + 1)"), else a cast ("(unsigned long)x") */
static int ex_paren_is_cast(ex_comp *c) {
    ex_lex save = c->lx;
    int is_cast;
    ex_next(c); /* ( */
    while (ex_is_type_start(&c->lx.tok)) ex_next(c);
    is_cast = c->lx.tok.kind != '(';
    c->lx = save;
    return is_cast;
}

static ex_opnd ex_unary(ex_comp *c) {
    ex_tok t = c->lx.tok;
    ex_opnd o;
    int mark = c->top, ty;
    ex_enter(c);
    switch (t.kind) {
    case '+': case '-': case '!': case '~':
        ex_next(c);
        o = ex_unary(c);
        if (t.kind == '!') {
            c->top = mark;
            o = ex_op(c, o.type == EX_F32 ? EX_OP_LNOT_F : o.type == EX_F64 ? EX_OP_LNOT_D : EX_OP_LNOT_I, EX_BOOL,
                      o.slot, -1, 0);
            break;
        }
        if (t.kind == '~' && ex_is_float(o.type))
            ex_fail(c, t.line, t.col, "invalid operand to '~' (%s)", ex_type_name(o.type));
        ty = ex_promote(o.type);
        o = ex_convert(c, o, ty);
        o.sym = -1;
        if (t.kind == '+') break;
        c->top = mark;
        if (t.kind == '-')
            o = ex_op(c, ty == EX_I32 ? EX_OP_NEG_I32 : ty == EX_U32 ? EX_OP_NEG_U32 : ty == EX_F32 ? EX_OP_NEG_F
                         : ty == EX_F64 ? EX_OP_NEG_D : EX_OP_NEG_64, ty, o.slot, -1, 0);
        else
            o = ex_op(c, ty == EX_U32 ? EX_OP_NOT_U32 : EX_OP_NOT, ty, o.slot, -1, 0);
        break;
    case EX_TK_INC: case EX_TK_DEC:
        ex_next(c);
        o = ex_unary(c);
        o = ex_incdec(c, o, t.kind == EX_TK_INC, 0, t.line, t.col);
        break;
    case '*': EX_TOKFAIL(c, "pointer dereference '*' is not supported"); return ex_mk(0, 0);
    case '&': EX_TOKFAIL(c, "address-of '&' is not supported"); return ex_mk(0, 0);
    case '(': {
        ex_tok n = ex_peek(c);
        if (ex_is_type_start(&n) && ex_paren_is_cast(c)) { /* (T)x; (T(x) + 1) is an expression */
            int is_const;
            ex_next(c);
            ty = ex_parse_type(c, &is_const);
            ex_expect(c, ')', "')'");
            o = ex_unary(c);
            o = ex_cast(c, o, ty, t.line, t.col);
            break;
        }
        o = ex_postfix(c);
        break;
    }
    default: o = ex_postfix(c); break;
    }
    c->depth--;
    return o;
}

/* ---------------------------------------------------------------- statements */
static void ex_stmt(ex_comp *c);

/* a sub-statement (of if, else, a loop) is a scope of its own */
static void ex_substmt(ex_comp *c) {
    ex_scope s = ex_scope_push(c);
    ex_stmt(c);
    ex_scope_pop(c, s);
}

static void ex_declaration(ex_comp *c) {
    int is_const, type = ex_parse_type(c, &is_const);
    for (;;) {
        ex_tok name = c->lx.tok;
        int slot, t = type;
        if (name.kind != EX_TK_ID || ex_in(&name, ex_type_words) || ex_in(&name, ex_keywords) ||
            ex_in(&name, ex_unsupported))
            EX_TOKFAIL(c, "expected a variable name before %s", ex_tokname(c, &name));
        ex_next(c);
        slot = ex_alloc(c);
        if (c->lx.tok.kind == '=') {
            ex_opnd v;
            ex_next(c);
            v = ex_assign(c);
            if (t == EX_AUTO) t = v.type;
            ex_convert_to(c, v, t, slot, 1);
        } else {
            if (c->lx.tok.kind == '(' || c->lx.tok.kind == '{')
                EX_TOKFAIL(c, "only '=' initialization is supported");
            if (t == EX_AUTO) ex_fail(c, name.line, name.col, "'auto' variable needs an initializer");
            if (is_const) ex_fail(c, name.line, name.col, "const variable needs an initializer");
            ex_convert_to(c, ex_const_i(c, t, 0), t, slot, 0);
        }
        c->top = slot - EX_SREF + 1;
        ex_declare(c, &name, slot, t, is_const ? 2 : 0);
        if (c->lx.tok.kind != ',') break;
        ex_next(c);
    }
}

/* the jumps of break and continue in the loop being compiled */
static void ex_loop_jump(ex_comp *c, int is_continue) {
    int j;
    if (!c->loops) EX_TOKFAIL(c, "%s outside a loop", ex_tokname(c, &c->lx.tok));
    ex_next(c);
    j = ex_emit(c, EX_OP_JMP, 0, 0, 0, 0);
    c->jumps = (int *)ex_grow(c, c->jumps, &c->cap_jumps, c->n_jumps + 1, sizeof *c->jumps);
    c->jumps[c->n_jumps++] = 2 * j + is_continue;
    ex_expect(c, ';', "';'");
}

static ex_loop ex_loop_begin(ex_comp *c) {
    ex_loop l;
    l.first_jump = c->n_jumps;
    c->loops++;
    return l;
}

static void ex_loop_end(ex_comp *c, ex_loop l, int cont, int end) {
    int i;
    for (i = l.first_jump; i < c->n_jumps; i++) ex_patch(c, c->jumps[i] / 2, (c->jumps[i] & 1) ? cont : end);
    c->n_jumps = l.first_jump;
    c->loops--;
}

static int ex_loop_ins(ex_comp *c, int target, int line) {
    return ex_emit(c, EX_OP_LOOP, 0, 0, line > 65535 ? 65535 : line, (uint32_t)target);
}

/* an expression whose value is only tested: if (e), while (e) ... */
static int ex_test(ex_comp *c, int when) {
    int mark = c->top, j;
    ex_opnd o = ex_expr(c);
    j = ex_branch(c, o, when);
    c->top = mark;
    return j;
}

static void ex_expr_stmt(ex_comp *c) {
    int mark = c->top;
    ex_expr(c);
    c->top = mark;
}

static void ex_stmt(ex_comp *c) {
    ex_tok t = c->lx.tok;
    ex_enter(c);
    if (t.kind == '{') {
        ex_scope s = ex_scope_push(c);
        ex_next(c);
        while (c->lx.tok.kind != '}') {
            if (c->lx.tok.kind == EX_TK_EOF)
                EX_TOKFAIL(c, "expected '}' at end of input (the '{' at %d:%d is not closed)", t.line, t.col);
            ex_stmt(c);
        }
        ex_next(c);
        ex_scope_pop(c, s);
    } else if (t.kind == ';') {
        ex_next(c);
    } else if (ex_is(&t, "if")) {
        int jz, jend;
        ex_next(c);
        ex_expect(c, '(', "'('");
        jz = ex_test(c, 0);
        ex_expect(c, ')', "')'");
        ex_substmt(c);
        if (ex_is(&c->lx.tok, "else")) {
            ex_next(c);
            jend = ex_emit(c, EX_OP_JMP, 0, 0, 0, 0);
            ex_patch(c, jz, c->n_code);
            ex_substmt(c);
            ex_patch(c, jend, c->n_code);
        } else {
            ex_patch(c, jz, c->n_code);
        }
    } else if (ex_is(&t, "while")) {
        int top, jz, cont;
        ex_loop l;
        ex_next(c);
        ex_expect(c, '(', "'('");
        top = c->n_code;
        jz = ex_test(c, 0);
        ex_expect(c, ')', "')'");
        l = ex_loop_begin(c);
        ex_substmt(c);
        cont = ex_loop_ins(c, top, t.line);
        ex_patch(c, jz, c->n_code);
        ex_loop_end(c, l, cont, c->n_code);
    } else if (ex_is(&t, "do")) {
        int body = c->n_code, cont, jz;
        ex_loop l;
        ex_next(c);
        l = ex_loop_begin(c);
        ex_substmt(c);
        if (!ex_is(&c->lx.tok, "while"))
            EX_TOKFAIL(c, "expected 'while' before %s", ex_tokname(c, &c->lx.tok));
        ex_next(c);
        ex_expect(c, '(', "'('");
        cont = c->n_code;
        jz = ex_test(c, 0);
        ex_expect(c, ')', "')'");
        ex_expect(c, ';', "';'");
        ex_loop_ins(c, body, t.line);
        ex_patch(c, jz, c->n_code);
        ex_loop_end(c, l, cont, c->n_code);
    } else if (ex_is(&t, "for")) {
        /* init; top: if (!cond) goto end; body; cont: step; LOOP top; end. The step is
           compiled after the body: its tokens are skipped, then read again. */
        ex_scope s = ex_scope_push(c);
        int top, jz = -1, cont, parens = 0;
        ex_lex step, after;
        ex_loop l;
        ex_next(c);
        ex_expect(c, '(', "'('");
        if (c->lx.tok.kind != ';') {
            if (ex_is_type_start(&c->lx.tok))
                ex_declaration(c);
            else
                ex_expr_stmt(c);
        }
        ex_expect(c, ';', "';'");
        top = c->n_code;
        if (c->lx.tok.kind != ';') jz = ex_test(c, 0);
        ex_expect(c, ';', "';'");
        step = c->lx;
        while (parens > 0 || c->lx.tok.kind != ')') {
            if (c->lx.tok.kind == EX_TK_EOF) EX_TOKFAIL(c, "expected ')' at end of input");
            if (c->lx.tok.kind == '(') parens++;
            if (c->lx.tok.kind == ')') parens--;
            ex_next(c);
        }
        ex_next(c);
        l = ex_loop_begin(c);
        ex_substmt(c);
        after = c->lx;
        cont = c->n_code;
        c->lx = step;
        if (c->lx.tok.kind != ')') ex_expr_stmt(c);
        ex_expect(c, ')', "')'");
        c->lx = after;
        ex_loop_ins(c, top, t.line);
        ex_patch(c, jz, c->n_code);
        ex_loop_end(c, l, cont, c->n_code);
        ex_scope_pop(c, s);
    } else if (ex_is(&t, "break") || ex_is(&t, "continue")) {
        ex_loop_jump(c, ex_is(&t, "continue"));
    } else if (ex_is(&t, "return")) {
        ex_next(c);
        if (c->lx.tok.kind != ';') EX_TOKFAIL(c, "'return' with a value is not supported (assign the outputs)");
        ex_next(c);
        ex_emit(c, EX_OP_HALT, 0, 0, 0, 0);
    } else if (ex_is(&t, "else")) {
        EX_TOKFAIL(c, "'else' without a matching 'if'");
    } else if (ex_is_type_start(&t) && !(ex_peek(c).kind == '(' && !ex_is(&t, "const"))) {
        ex_declaration(c);
        ex_expect(c, ';', "';'");
    } else if (t.kind == '}') {
        EX_TOKFAIL(c, "unexpected '}' (unbalanced braces)");
    } else {
        ex_expr_stmt(c);
        ex_expect(c, ';', "';'");
    }
    c->depth--;
}

/* ---------------------------------------------------------------- compiling */
static int ex_valid_name(const char *s) {
    const char *p = s;
    ex_tok t;
    if (!s || !ex_isalpha((unsigned char)*s)) return 0;
    while (*p) {
        if (!ex_isalnum((unsigned char)*p)) return 0;
        p++;
    }
    t.kind = EX_TK_ID;
    t.p = s;
    t.len = (int)(p - s);
    return !ex_in(&t, ex_type_words) && !ex_in(&t, ex_keywords) && !ex_in(&t, ex_unsupported);
}

int gpuos__ex_name_ok(const char *s) { return ex_valid_name(s); }

static int ex_final_slot(const ex_comp *c, int ref) {
    if (ref < EX_KREF) return ref;
    if (ref < EX_SREF) return c->n_vars + (ref - EX_KREF);
    return c->n_vars + c->n_k + (ref - EX_SREF);
}

/* the program from the compiler's state (the body is compiled) */
static gpuos__ex_program *ex_link(ex_comp *c) {
    size_t size = sizeof(gpuos__ex_program) + (size_t)c->n_k * sizeof(gpuos__ex_value) +
                  (size_t)c->n_code * sizeof(ex_ins);
    gpuos__ex_program *p;
    gpuos__ex_value *k;
    ex_ins *code;
    int i;
    if (c->n_vars + c->n_k + c->max_top > EX_MAX_SLOTS)
        ex_fail(c, 0, 0, "body needs too many values (%d; at most %d)", c->n_vars + c->n_k + c->max_top,
                EX_MAX_SLOTS);
    p = (gpuos__ex_program *)malloc(size);
    if (!p) ex_fail(c, 0, 0, "out of memory");
    memset(p, 0, sizeof *p);
    k = (gpuos__ex_value *)(p + 1); /* the struct's size is a multiple of 8: p holds pointers */
    code = (ex_ins *)(k + c->n_k);
    if (c->n_k) memcpy(k, c->kv, (size_t)c->n_k * sizeof *k);
    for (i = 0; i < c->n_code; i++) {
        const ex_cins *in = &c->code[i];
        int fl = ex_op_flags[in->op];
        code[i].op = (uint16_t)in->op;
        code[i].d = (uint16_t)((fl & EX_FD) ? ex_final_slot(c, in->d) : 0);
        code[i].a = (uint16_t)((fl & EX_FA) ? ex_final_slot(c, in->a) : 0);
        code[i].b = (uint16_t)((fl & EX_FB) ? ex_final_slot(c, in->b) : in->op == EX_OP_LOOP ? in->b : 0);
        code[i].c = (fl & EX_FC) ? (uint32_t)ex_final_slot(c, (int)in->c) : in->c;
    }
    p->n_vars = c->n_vars;
    p->n_consts = c->n_k;
    for (i = 0; i < c->n_vars; i++) {
        p->var_type[i] = (unsigned char)c->vars[i].type;
        if (c->vars[i].writable) p->out[p->n_out++] = (unsigned char)i;
    }
    p->consts = k;
    p->code = code;
    return p;
}

static gpuos__ex_program *ex_compile_body(ex_comp *c, const char *body) {
    int i;
    for (i = 0; i < c->n_vars; i++) {
        const gpuos__ex_var *v = &c->vars[i];
        ex_tok name;
        if (!ex_valid_name(v->name))
            ex_fail(c, 0, 0, "vars[%d]: %s%.64s%s is not a valid variable name", i, v->name ? "'" : "",
                    v->name ? v->name : "NULL", v->name ? "'" : "");
        if ((int)v->type < 0 || (int)v->type >= GPUOS__EX_TYPE_COUNT)
            ex_fail(c, 0, 0, "vars[%d]: invalid type %d", i, (int)v->type);
        name.kind = EX_TK_ID;
        name.p = v->name;
        name.len = (int)strlen(v->name);
        name.line = name.col = 0;
        if (ex_lookup(c, &name) >= 0) ex_fail(c, 0, 0, "vars[%d]: '%.64s' appears twice", i, v->name);
        ex_declare(c, &name, i, (int)v->type, v->writable ? 0 : 1);
    }
    c->lx.p = c->lx.line_start = body;
    c->lx.line = 1;
    ex_next(c);
    while (c->lx.tok.kind != EX_TK_EOF) ex_stmt(c);
    ex_emit(c, EX_OP_HALT, 0, 0, 0, 0);
    return ex_link(c);
}

gpuos__ex_program *gpuos__ex_compile(const char *body, const gpuos__ex_var *vars, int n_vars, char *err,
                                     size_t n_err) {
    ex_comp *c;
    gpuos__ex_program *p = NULL;
    if (err && n_err) err[0] = 0;
    if (!body) {
        ex_msg(err, n_err, "body is NULL");
        return NULL;
    }
    if (n_vars < 0 || n_vars > GPUOS__EX_MAX_VARS || (n_vars > 0 && !vars)) {
        ex_msg(err, n_err, "invalid variables (%d; at most %d)", n_vars, GPUOS__EX_MAX_VARS);
        return NULL;
    }
    c = (ex_comp *)calloc(1, sizeof *c);
    if (!c) {
        ex_msg(err, n_err, "out of memory");
        return NULL;
    }
    c->err = err;
    c->n_err = n_err;
    c->vars = vars;
    c->n_vars = n_vars;
    c->scope = 1;
    if (setjmp(c->fail) == 0) p = ex_compile_body(c, body);
    free(c->code);
    free(c->kv);
    free(c->kt);
    free(c->syms);
    free(c->jumps);
    free(c);
    return p;
}

#undef EX_MAX_SLOTS
#undef EX_MAX_DEPTH
#undef EX_MAX_CODE
#undef EX_MAX_WORK
#undef EX_KREF
#undef EX_SREF
#undef EX_BOOL
#undef EX_I32
#undef EX_U32
#undef EX_I64
#undef EX_U64
#undef EX_F32
#undef EX_F64
#undef EX_I8
#undef EX_U8
#undef EX_I16
#undef EX_U16
#undef EX_AUTO
#undef EX_FD
#undef EX_FA
#undef EX_FB
#undef EX_FC
#undef EX_FJ
#undef EX_FP
#undef EX_UN
#undef EX_BIN
#undef EX_OPS
#undef EX_OP_ENUM
#undef EX_OP_FLAGS
#undef EX_FN1
#undef EX_FN2
#undef EX_FN_ENUM
#undef EX_FN1_DEF
#undef EX_FN2_DEF
#undef EX_FN1_F
#undef EX_FN1_D
#undef EX_FN2_F
#undef EX_FN2_D
#undef EX_FN1_NAMES
#undef EX_FN2_NAMES
#undef EX_TOKFAIL
