/* expr.h - the interpreter of element-wise bodies (CUDA C statements), for the host executor.

   Not part of the public API. A body such as "float t = x > 0.f ? x : 0.01f * x; y = t * t;"
   is compiled once against a list of named, typed variables (the inputs and outputs of one
   element) and then run once per element. src/expr.c says which language it accepts and what
   it does where C leaves the result undefined.

       gpuos__ex_var vars[] = {{"x", GPUOS__EX_F32, 0}, {"y", GPUOS__EX_F32, 1}};
       char err[256];
       gpuos__ex_program *p = gpuos__ex_compile(body, vars, 2, err, sizeof err);
       gpuos__ex_value v[2];
       v[0].f = 3.0f;
       if (p && gpuos__ex_run(p, v, err, sizeof err) == 0) ... v[1].f is y ...
       gpuos__ex_free(p);

   A compiled program is immutable: any number of threads may run it at once. */
#ifndef GPUOS_EXPR_H
#define GPUOS_EXPR_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* int64_t, uint64_t */

/* The type of a variable. The 8- and 16-bit types (after F64, so the first seven keep their
   numbers) are what a declared local such as "int8_t k" stores; a variable may have them too. */
typedef enum gpuos__ex_type {
    GPUOS__EX_BOOL,
    GPUOS__EX_I32,
    GPUOS__EX_U32,
    GPUOS__EX_I64,
    GPUOS__EX_U64,
    GPUOS__EX_F32,
    GPUOS__EX_F64,
    GPUOS__EX_I8,
    GPUOS__EX_U8,
    GPUOS__EX_I16,
    GPUOS__EX_U16,
    GPUOS__EX_TYPE_COUNT
} gpuos__ex_type;

/* One value; the variable's type says which member holds it: BOOL (0 or 1), I8, I16, I32, I64
   in .i; U8, U16, U32, U64 in .u; F32 in .f; F64 in .d. On input only the low bits of the
   type's width count (an I32 may be stored as (int64_t)x or as (uint32_t)x; a BOOL is true
   when its low 8 bits are not all zero); outputs are written sign- or zero-extended to 64
   bits, a BOOL as 0 or 1. */
typedef union gpuos__ex_value {
    int64_t i;
    uint64_t u;
    float f;
    double d;
} gpuos__ex_value;

/* A variable of the body: an input (writable 0: assigning to it is a compile error) or an
   output (writable 1: the body may assign it; it starts with the value passed in). */
typedef struct gpuos__ex_var {
    const char *name; /* an identifier */
    gpuos__ex_type type;
    int writable;
} gpuos__ex_var;

typedef struct gpuos__ex_program gpuos__ex_program;

#define GPUOS__EX_MAX_VARS 64          /* variables per body */
#define GPUOS__EX_MAX_ITERS (1L << 20) /* loop iterations per run, all loops together */

/* Parses and checks body against vars[0..n_vars). NULL on error, with a message such as
   "body:2:14: unknown identifier 'z'" or "out of memory" in err (always NUL-terminated when
   n_err > 0; err may be NULL). Never prints, aborts or exits, whatever the string. */
gpuos__ex_program *gpuos__ex_compile(const char *body, const gpuos__ex_var *vars, int n_vars, char *err,
                                     size_t n_err);

/* Runs the body once: reads every variable of vars (in the order given to compile), writes the
   writable ones. 0, or -1 with a message in err (loops that ran more than GPUOS__EX_MAX_ITERS
   iterations, or 2^28 instructions of their bodies); on -1 vars is unchanged. Uses about 4 KB of stack, nothing else. */
int gpuos__ex_run(const gpuos__ex_program *p, gpuos__ex_value *vars, char *err, size_t n_err);

/* NULL is allowed. */
void gpuos__ex_free(gpuos__ex_program *p);

/* 1 when s can name a variable of a body: an identifier that is no keyword or type name of the
   body language (float, if, return ...). */
int gpuos__ex_name_ok(const char *s);

#endif
