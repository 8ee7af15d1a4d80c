/* rtops.c - run-time operators (gpuos_op_define): definitions and their versions, the host
   executor's interpretation of element-wise bodies, and the device code of an operator.

   An operator has a handle (GPUOS_OP_RUNTIME_BASE + index) and a current version. A
   version owns a physical slot, 2 * index or 2 * index + 1: a redefinition takes the
   other slot, so tasks queued before it keep the code they were submitted for. A job
   holds a reference on its version (taken in plan.c, dropped when the job retires); a
   slot is free once its version has no references. On a GPU the slot is the index into
   the module's gpuos__rt_table (src/cuda_backend.c links every live version into a new
   module generation and swaps it in at a task boundary). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "gpuos_runtime.h"

/* ---------------------------------------------------------------- dtypes */
/* Every map below has one case per dtype of GPUOS__DTYPES (src/generated/gpuos_dtypes.h,
   from gen/ops.py), chosen by the dtype's class. gpuos_op_define refuses a dtype outside
   that list, so the defaults are never taken; they name no type ("void", EX_TYPE_COUNT)
   rather than pass for a float. */
static gpuos__ex_type rt_ex_type(gpuos_dtype d) {
    switch (d) {
#define RT_EX(E, N, CLS, T, C, SIZE, LO, HI, VT) case E: return GPUOS__EX_##VT; /* f16, bf16: float in the body */
    GPUOS__DTYPES(RT_EX)
#undef RT_EX
    default: return GPUOS__EX_TYPE_COUNT;
    }
}

/* The body's C type of a dtype's values on the device, and how raw storage bits x (an
   unsigned integer of the dtype's size) become a value and back. */
static const char *rt_var_ctype(gpuos_dtype d) {
    switch (d) {
#define RT_VAR_BOOL(C) "bool"
#define RT_VAR_SINT(C) #C
#define RT_VAR_UINT(C) #C
#define RT_VAR_FLOAT(C) #C
#define RT_VAR_HALF(C) #C /* float */
#define RT_VAR(E, N, CLS, T, C, SIZE, LO, HI, VT) case E: return RT_VAR_##CLS(C);
    GPUOS__DTYPES(RT_VAR)
#undef RT_VAR
#undef RT_VAR_BOOL
#undef RT_VAR_SINT
#undef RT_VAR_UINT
#undef RT_VAR_FLOAT
#undef RT_VAR_HALF
    default: return "void";
    }
}
static const char *rt_raw_ctype(gpuos_dtype d) {
    switch (gpuos__elsize(d)) {
    case 1: return "uint8_t";
    case 2: return "uint16_t";
    case 4: return "uint32_t";
    case 8: return "uint64_t";
    default: return "void";
    }
}
/* A float stored as bits (f16, bf16): its name, for gpuos__<name>_to_f32 and back; else NULL. */
static const char *rt_half_name(gpuos_dtype d) {
    switch (d) {
#define RT_HALF_BOOL(N) NULL
#define RT_HALF_SINT(N) NULL
#define RT_HALF_UINT(N) NULL
#define RT_HALF_FLOAT(N) NULL
#define RT_HALF_HALF(N) #N
#define RT_HALF(E, N, CLS, T, C, SIZE, LO, HI, VT) case E: return RT_HALF_##CLS(N);
    GPUOS__DTYPES(RT_HALF)
#undef RT_HALF
#undef RT_HALF_BOOL
#undef RT_HALF_SINT
#undef RT_HALF_UINT
#undef RT_HALF_FLOAT
#undef RT_HALF_HALF
    default: return NULL;
    }
}
static void rt_load_expr(gpuos_dtype d, const char *x, char *out, size_t n) {
    const char *var = rt_var_ctype(d), *half = rt_half_name(d);
    if (d == GPUOS_BOOL) snprintf(out, n, "(%s != 0)", x);
    else if (half) snprintf(out, n, "gpuos__%s_to_f32(%s)", half, x);
    else if (strcmp(var, rt_raw_ctype(d)) == 0) snprintf(out, n, "(%s)", x); /* u8: the bits are the value */
    else snprintf(out, n, "gpuos__d_as<%s>(%s)", var, x);
}
static void rt_store_expr(gpuos_dtype d, const char *v, char *out, size_t n) {
    const char *var = rt_var_ctype(d), *raw = rt_raw_ctype(d), *half = rt_half_name(d);
    if (d == GPUOS_BOOL) snprintf(out, n, "(uint8_t)((%s) ? 1 : 0)", v);
    else if (half) snprintf(out, n, "gpuos__f32_to_%s((float)(%s))", half, v);
    else if (strcmp(var, raw) == 0) snprintf(out, n, "(%s)(%s)", raw, v);
    else snprintf(out, n, "gpuos__d_as<%s>((%s)(%s))", raw, var, v);
}

/* ---------------------------------------------------------------- versions */
void gpuos__rt_retain_locked(gpuos__rt_version *v) { v->refs++; }

/* job (a graph node's template, whose reference to its version came from planning) keeps
   the version's memory but not its code slot (ctx->mu held): a graph that is not launched
   must not hold up a redefinition, and its next launch plans that node again anyway
   (graph.c, graph_rt_stale). */
void gpuos__rt_template_locked(gpuos__job *job) {
    if (!job->rt || job->rt_tmpl) return;
    job->rt->tmpl_refs++;
    job->rt_tmpl = 1;
    if (job->rt->refs == job->rt->tmpl_refs) pthread_cond_broadcast(&job->rt->ctx->cv_done); /* (as above) */
}

/* Whether code slot k is free, or held by a version that only graph templates refer to
   (ctx->mu held): such a version is never run again (a launch plans its node again once it
   is not the operator's current version, which it no longer is), so its slot may go. */
static int rt_slot_free_locked(const gpuos_context *ctx, int k) {
    const gpuos__rt_version *w = ctx->rt_slot[k];
    return !w || (w->refs == w->tmpl_refs && ctx->rt_cur[w->index] != w);
}
/* ... and takes it back from such a version */
static void rt_slot_take_locked(gpuos_context *ctx, int k) {
    if (ctx->rt_slot[k] && rt_slot_free_locked(ctx, k)) ctx->rt_slot[k] = NULL;
}

void gpuos__rt_release_locked(gpuos__rt_version *v) {
    gpuos_context *ctx;
    if (!v) return;
    if (--v->refs > 0) {
        /* only graph templates left: a redefinition waiting for its slot may take it */
        if (v->refs == v->tmpl_refs) pthread_cond_broadcast(&v->ctx->cv_done);
        return;
    }
    ctx = v->ctx;
    if (ctx->rt_slot[v->slot] == v) ctx->rt_slot[v->slot] = NULL;
    pthread_cond_broadcast(&ctx->cv_done); /* a redefinition may wait for this slot */
    gpuos__ex_free(v->prog);
    free(v->source);
    free(v->obj);
    free(v);
}

/* A version that never got a slot. */
static void rt_free(gpuos__rt_version *v) {
    gpuos__ex_free(v->prog);
    free(v->source);
    free(v->obj);
    free(v);
}

void gpuos__rt_fini(gpuos_context *ctx) {
    int i;
    pthread_mutex_lock(&ctx->mu);
    for (i = 0; i < GPUOS_MAX_RUNTIME_OPS; i++) {
        gpuos__rt_version *v = ctx->rt_cur[i];
        ctx->rt_cur[i] = NULL;
        gpuos__rt_release_locked(v);
    }
    pthread_mutex_unlock(&ctx->mu);
}

/* Handles: GPUOS_OP_RUNTIME_BASE + index + GPUOS_MAX_RUNTIME_OPS * (the index's removals so
   far, modulo RT_GENS), so that a removed operator's handle stays unknown when a later
   definition takes its index (it would repeat only after RT_GENS removals of that index: with
   4096, a define-and-remove loop met its first handle again every ~0.4 s, a soak test's find;
   2^24 keeps every handle below 2^31). */
#define RT_GENS (1L << 24)
static gpuos_op rt_handle(const gpuos_context *ctx, long index) {
    return (gpuos_op)(GPUOS_OP_RUNTIME_BASE + index + (long)GPUOS_MAX_RUNTIME_OPS * (ctx->rt_gen[index] % RT_GENS));
}
/* op's index, or -1 when op is not a handle of the current definition of its index (ctx->mu
   held, or no definition running: they change rt_gen under it) */
static long rt_index_locked(const gpuos_context *ctx, gpuos_op op) {
    const long k = (long)op - GPUOS_OP_RUNTIME_BASE, i = k % GPUOS_MAX_RUNTIME_OPS;
    if (k < 0 || k >= (long)GPUOS_MAX_RUNTIME_OPS * RT_GENS) return -1;
    return rt_handle(ctx, i) == op ? i : -1;
}

/* The version a new task of op uses, retained (ctx->mu not held). */
gpuos_status gpuos__rt_lookup(gpuos_context *ctx, gpuos_op op, gpuos__rt_version **out) {
    long k;
    gpuos__rt_version *v = NULL;
    *out = NULL;
    pthread_mutex_lock(&ctx->mu);
    k = rt_index_locked(ctx, op);
    if (k >= 0) v = ctx->rt_cur[k];
    if (v) gpuos__rt_retain_locked(v);
    pthread_mutex_unlock(&ctx->mu);
    if (!v)
        return gpuos__set_error(ctx, GPUOS_ERR_UNKNOWN_OP,
                                "gpuos_submit: op %ld is not a defined run-time operator (removed, or never defined)",
                                (long)(int)op);
    *out = v;
    return GPUOS_OK;
}

void gpuos__rt_release(gpuos_context *ctx, gpuos__rt_version *v) {
    if (!v) return;
    pthread_mutex_lock(&ctx->mu);
    gpuos__rt_release_locked(v);
    pthread_mutex_unlock(&ctx->mu);
}

/* ---------------------------------------------------------------- the host executor */
/* Storage <-> the interpreter's value (src/expr.h: .i for BOOL and signed, .u for unsigned,
   .f for F32, .d for F64), one case per dtype of GPUOS__DTYPES. */
#define RT_LOAD_BOOL(N, VT) v->i = x_ != 0
#define RT_LOAD_SINT(N, VT) v->i = x_
#define RT_LOAD_UINT(N, VT) v->u = x_
#define RT_LOAD_HALF(N, VT) v->f = gpuos__##N##_to_f32(x_)
#define RT_LOAD_FLOAT(N, VT) RT_LOAD_FLOAT_##VT
#define RT_LOAD_FLOAT_F32 v->f = x_
#define RT_LOAD_FLOAT_F64 v->d = x_
#define RT_STORE_BOOL(T, N, VT) x_ = (T)(v->i != 0)
#define RT_STORE_SINT(T, N, VT) x_ = (T)v->i
#define RT_STORE_UINT(T, N, VT) x_ = (T)v->u
#define RT_STORE_HALF(T, N, VT) x_ = gpuos__f32_to_##N(v->f)
#define RT_STORE_FLOAT(T, N, VT) RT_STORE_FLOAT_##VT
#define RT_STORE_FLOAT_F32 x_ = v->f
#define RT_STORE_FLOAT_F64 x_ = v->d
static void rt_load(gpuos_dtype d, const char *p, gpuos__ex_value *v) {
    switch (d) {
#define RT_LOAD(E, N, CLS, T, C, SIZE, LO, HI, VT) \
    case E: { T x_; memcpy(&x_, p, sizeof x_); RT_LOAD_##CLS(N, VT); break; }
    GPUOS__DTYPES(RT_LOAD)
#undef RT_LOAD
    default: v->u = 0; break;
    }
}

static void rt_store(gpuos_dtype d, char *p, const gpuos__ex_value *v) {
    switch (d) {
#define RT_STORE(E, N, CLS, T, C, SIZE, LO, HI, VT) \
    case E: { T x_; RT_STORE_##CLS(T, N, VT); memcpy(p, &x_, sizeof x_); break; }
    GPUOS__DTYPES(RT_STORE)
#undef RT_STORE
    default: break;
    }
}
#undef RT_LOAD_BOOL
#undef RT_LOAD_SINT
#undef RT_LOAD_UINT
#undef RT_LOAD_HALF
#undef RT_LOAD_FLOAT
#undef RT_LOAD_FLOAT_F32
#undef RT_LOAD_FLOAT_F64
#undef RT_STORE_BOOL
#undef RT_STORE_SINT
#undef RT_STORE_UINT
#undef RT_STORE_HALF
#undef RT_STORE_FLOAT
#undef RT_STORE_FLOAT_F32
#undef RT_STORE_FLOAT_F64

/* Items [begin, end) of a job of a run-time element-wise operator: variables in the
   order the body was compiled with (out, inputs, scalars). */
void gpuos__rt_host_run(const gpuos__job *job, int64_t begin, int64_t end) {
    const gpuos__rt_version *v = job->rt;
    const gpuos__ew_plan *p = &job->plan.ew;
    gpuos__ex_value vars[1 + GPUOS_RUNTIME_MAX_INPUTS + 2];
    int64_t idx[GPUOS__MAX_RANK], off[1 + GPUOS_RUNTIME_MAX_INPUTS], i;
    int d, q, n_ptr = 1 + v->n_in;
    char err[256];
    if (begin >= end || !v->prog) return;
    /* the item's multi-index and byte offsets, then stepped along row-major order */
    {
        int64_t r = begin;
        for (d = p->rank - 1; d >= 0; d--) {
            idx[d] = p->shape[d] ? r % p->shape[d] : 0;
            r = p->shape[d] ? r / p->shape[d] : 0;
        }
        for (q = 0; q < n_ptr; q++) {
            off[q] = 0;
            for (d = 0; d < p->rank; d++) off[q] += idx[d] * p->stride[q][d];
        }
    }
    for (i = begin; i < end; i++) {
        if (GPUOS__ALOAD(INT, &v->ctx->cancel, GPUOS__RELAXED)) return; /* gpuos_destroy gave up waiting */
        memset(vars, 0, sizeof vars);
        for (q = 0; q < v->n_in; q++) rt_load(v->in_dtype[q], p->ptr[1 + q] + off[1 + q], &vars[1 + q]);
        for (q = 0; q < v->n_scalars; q++) vars[1 + v->n_in + q].d = p->scalar[q];
        if (gpuos__ex_run(v->prog, vars, err, sizeof err) != 0) {
            pthread_mutex_lock(&v->ctx->mu);
            gpuos__fail_locked(v->ctx, "run-time operator '%s' failed on the host executor: %s", v->name, err);
            pthread_mutex_unlock(&v->ctx->mu);
            return;
        }
        rt_store(v->out_dtype, p->ptr[0] + off[0], &vars[0]);
        for (d = p->rank - 1; d >= 0; d--) { /* next item */
            for (q = 0; q < n_ptr; q++) off[q] += p->stride[q][d];
            if (++idx[d] < p->shape[d]) break;
            for (q = 0; q < n_ptr; q++) off[q] -= idx[d] * p->stride[q][d];
            idx[d] = 0;
        }
    }
}

/* ---------------------------------------------------------------- definitions */
static int rt_ident(const char *s) {
    size_t i;
    if (!s || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return 0;
    for (i = 1; s[i]; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_')) return 0;
    return i < 64;
}

/* Names a body's variables may not take: the constants both executors know (the device
   prelude's macros, the interpreter's built-in names): the host accepted a variable named
   M_PI, which the device's macro turned into a number (a compile error only there). */
static const char *const rt_reserved[] = {
    "INT8_MIN", "INT16_MIN", "INT32_MIN", "INT64_MIN", "INT8_MAX", "INT16_MAX", "INT32_MAX", "INT64_MAX",
    "UINT8_MAX", "UINT16_MAX", "UINT32_MAX", "UINT64_MAX", "INT_MAX", "INT_MIN", "UINT_MAX", "LLONG_MAX",
    "LLONG_MIN", "ULLONG_MAX", "FLT_MAX", "FLT_MIN", "FLT_EPSILON", "DBL_MAX", "DBL_MIN", "DBL_EPSILON",
    "M_PI", "NAN", "INFINITY", "HUGE_VALF", "HUGE_VAL", "NULL",
    /* C++ words the body language does not know as keywords but NVRTC does (`and` passed the
       host and failed the device's compile: a review) */
    "and", "and_eq", "bitand", "bitor", "compl", "not", "not_eq", "or", "or_eq", "xor", "xor_eq", "alignas",
    "alignof", "asm", "auto", "bool", "catch", "char16_t", "char32_t", "char8_t", "class", "concept", "const_cast",
    "consteval", "constexpr", "constinit", "co_await", "co_return", "co_yield", "decltype", "delete",
    "dynamic_cast", "explicit", "export", "extern", "false", "friend", "goto", "inline", "mutable", "namespace",
    "new", "noexcept", "nullptr", "operator", "private", "protected", "public", "register", "reinterpret_cast",
    "requires", "sizeof", "static_assert", "static_cast", "template", "this", "thread_local", "throw", "true",
    "try", "typedef", "typeid", "typename", "union", "using", "virtual", "volatile", "wchar_t"};
static int rt_is_reserved(const char *s) {
    size_t i;
    if (s[0] == '_' && s[1] == '_') return 1; /* the implementation's (CUDA's __half, __ldg ...) */
    for (i = 0; i < sizeof rt_reserved / sizeof rt_reserved[0]; i++)
        if (!strcmp(s, rt_reserved[i])) return 1;
    return 0;
}

static const char *rt_default_in[GPUOS_RUNTIME_MAX_INPUTS] = {"a", "b", "c"};
static const char *rt_default_sc[2] = {"s0", "s1"};

/* Checks def and makes a version of it (not yet in a slot); host programs are compiled
   here, device objects by the CUDA backend. */
static gpuos_status rt_make(gpuos_context *ctx, const char *fn, const gpuos_op_def *def, gpuos__rt_version **out) {
    gpuos__rt_version *v;
    int k, j;
    *out = NULL;
    if (!def) return gpuos__set_error(ctx, GPUOS_ERR_NULL_POINTER, "%s: def is NULL", fn);
    if (def->struct_size != sizeof(gpuos_op_def))
        return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT,
                                "%s: def->struct_size is %zu but this library's gpuos_op_def is %zu bytes; start from "
                                "GPUOS_OP_DEF_INIT",
                                fn, def->struct_size, sizeof(gpuos_op_def));
    if (!def->source) return gpuos__set_error(ctx, GPUOS_ERR_NULL_POINTER, "%s: def->source is NULL", fn);
    if (!def->name) return gpuos__set_error(ctx, GPUOS_ERR_NULL_POINTER, "%s: def->name is NULL", fn);
    if (!rt_ident(def->name))
        return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT,
                                "%s: def->name must be an identifier of at most 63 characters ([A-Za-z_][A-Za-z0-9_]*)",
                                fn);
    if (def->kind != GPUOS_OPDEF_ELEMENTWISE && def->kind != GPUOS_OPDEF_FUNCTION)
        return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT, "%s: def->kind %d is not a gpuos_opdef_kind", fn,
                                (int)def->kind);
    if (def->n_inputs < 0 || def->n_inputs > GPUOS_RUNTIME_MAX_INPUTS)
        return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT, "%s: def->n_inputs is %d (0..%d)", fn, def->n_inputs,
                                GPUOS_RUNTIME_MAX_INPUTS);
    if (def->n_scalars < 0 || def->n_scalars > 2)
        return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT, "%s: def->n_scalars is %d (0..2)", fn, def->n_scalars);
    if ((unsigned)def->out_dtype >= (unsigned)GPUOS_DTYPE_COUNT)
        return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT, "%s: def->out_dtype %d is not a dtype", fn,
                                (int)def->out_dtype);
    for (k = 0; k < def->n_inputs; k++)
        if ((unsigned)def->in_dtype[k] >= (unsigned)GPUOS_DTYPE_COUNT)
            return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT, "%s: def->in_dtype[%d] = %d is not a dtype", fn, k,
                                    (int)def->in_dtype[k]);
    for (k = -1; k < def->n_inputs; k++) /* the type maps above know every dtype of GPUOS__DTYPES */
        if (gpuos__elsize(k < 0 ? def->out_dtype : def->in_dtype[k]) == 0)
            return gpuos__set_error(ctx, GPUOS_ERR_UNSUPPORTED_DTYPE,
                                    "%s: dtype %d is not in src/generated/gpuos_dtypes.h (run `make gen`)", fn,
                                    (int)(k < 0 ? def->out_dtype : def->in_dtype[k]));
    if (def->kind == GPUOS_OPDEF_FUNCTION && !ctx->cuda)
        return gpuos__set_error(ctx, GPUOS_ERR_UNSUPPORTED,
                                "%s: '%s' is a full device function (GPUOS_OPDEF_FUNCTION): the host executor runs "
                                "only element-wise bodies (GPUOS_OPDEF_ELEMENTWISE)",
                                fn, def->name);
    v = (gpuos__rt_version *)calloc(1, sizeof *v);
    if (!v || !(v->source = (char *)malloc(strlen(def->source) + 1))) {
        free(v);
        return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "%s: no memory", fn);
    }
    strcpy(v->source, def->source);
    snprintf(v->name, sizeof v->name, "%s", def->name);
    v->ctx = ctx;
    v->kind = def->kind;
    v->n_in = def->n_inputs;
    v->n_scalars = def->n_scalars;
    v->out_dtype = def->out_dtype;
    for (k = 0; k < v->n_in; k++) v->in_dtype[k] = def->in_dtype[k];
    snprintf(v->var[0], sizeof v->var[0], "%s", def->out_name ? def->out_name : "out");
    for (k = 0; k < v->n_in; k++)
        snprintf(v->var[1 + k], sizeof v->var[0], "%s", def->in_names[k] ? def->in_names[k] : rt_default_in[k]);
    for (k = 0; k < v->n_scalars; k++)
        snprintf(v->var[1 + v->n_in + k], sizeof v->var[0], "%s",
                 def->scalar_names[k] ? def->scalar_names[k] : rt_default_sc[k]);
    if (v->kind == GPUOS_OPDEF_ELEMENTWISE) {
        int n = 1 + v->n_in + v->n_scalars;
        for (k = 0; k < n; k++) {
            const char *given = k == 0 ? def->out_name : k <= v->n_in ? def->in_names[k - 1] : def->scalar_names[k - 1 - v->n_in];
            if ((given && (!rt_ident(given) || !gpuos__ex_name_ok(given))) || !strncmp(v->var[k], "gpuos", 5) ||
                rt_is_reserved(v->var[k])) {
                gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT,
                                 "%s: '%s' is not a usable variable name (an identifier, not a keyword or type name "
                                 "such as float or if, not starting with gpuos, not one of the constants a body "
                                 "knows such as INT_MAX or M_PI)",
                                 fn, given ? given : v->var[k]);
                free(v->source);
                free(v);
                return GPUOS_ERR_INVALID_ARGUMENT;
            }
            for (j = 0; j < k; j++)
                if (!strcmp(v->var[j], v->var[k])) {
                    gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT, "%s: two variables are named '%s'", fn, v->var[k]);
                    free(v->source);
                    free(v);
                    return GPUOS_ERR_INVALID_ARGUMENT;
                }
        }
        if (!ctx->cuda) { /* the host executor interprets the body */
            gpuos__ex_var ev[1 + GPUOS_RUNTIME_MAX_INPUTS + 2];
            char err[512];
            for (k = 0; k < n; k++) {
                ev[k].name = v->var[k];
                ev[k].type = k == 0 ? rt_ex_type(v->out_dtype) : k <= v->n_in ? rt_ex_type(v->in_dtype[k - 1]) : GPUOS__EX_F64;
                ev[k].writable = k == 0;
            }
            v->prog = gpuos__ex_compile(v->source, ev, n, err, sizeof err);
            if (!v->prog) {
                gpuos_status st = gpuos__set_error(ctx, strstr(err, "out of memory") ? GPUOS_ERR_OUT_OF_MEMORY : GPUOS_ERR_COMPILE,
                                                   "%s: the body of '%s' does not compile: %s", fn, v->name, err);
                free(v->source);
                free(v);
                return st;
            }
        }
    }
    *out = v;
    return GPUOS_OK;
}

/* The device code of a version, appended to the device source (malloc'd; NULL: no memory):
   a gpuos__d_ew group for an element-wise body (the vector mode and the general loop of
   the built-in operators), or a gpuos_tile wrapper around a full function; both behind
   extern "C" gpuos__rt_<hash>, whose address gpuos__rt_ptr_<hash> holds. */
/* Grows the buffer *s of *cap bytes to hold need bytes (with room to spare); on failure
   frees it and returns 0. */
static int rt_reserve(char **s, size_t *cap, size_t need) {
    char *t;
    if (need <= *cap) return 1;
    t = (char *)realloc(*s, *cap = need + 4096);
    if (!t) free(*s);
    *s = t;
    return t != NULL;
}

char *gpuos__rt_device_code(const gpuos__rt_version *v, uint64_t hash) {
    size_t cap = strlen(v->source) + 8192, n = 0;
    char *s = (char *)malloc(cap), ld[160], st[160], x[64];
    int k;
    const char *raw[3];
    if (!s) return NULL;
#define RT_PUT(...) (n += (size_t)snprintf(s + n, n < cap ? cap - n : 0, __VA_ARGS__))
    RT_PUT("\n/* ---------------- run-time operator %s (gpuos_op_define) */\n", v->name);
    if (v->kind == GPUOS_OPDEF_ELEMENTWISE) {
        for (k = 0; k < 3; k++) raw[k] = k < v->n_in ? rt_raw_ctype(v->in_dtype[k]) : "uint8_t";
        RT_PUT("struct gpuos__rtg_%016llx {\n    typedef %s O;\n    typedef %s A;\n    typedef %s B;\n    typedef %s C;\n"
               "    enum { NIN = %d, U = GPUOS__D_EW_U };\n"
               "    static __device__ __forceinline__ void batch(int, const A *gpuos_a, const B *gpuos_b, const C *gpuos_c,\n"
               "            int64_t, int64_t, double gpuos_s0, double gpuos_s1, O *gpuos_r) {\n"
               "        (void)gpuos_a, (void)gpuos_b, (void)gpuos_c, (void)gpuos_s0, (void)gpuos_s1;\n"
               "#pragma unroll 1\n        for (int gpuos_e = 0; gpuos_e < U; ++gpuos_e) {\n",
               (unsigned long long)hash, rt_raw_ctype(v->out_dtype), raw[0], raw[1], raw[2], v->n_in);
        for (k = 0; k < v->n_in; k++) {
            snprintf(x, sizeof x, "gpuos_%c[gpuos_e]", "abc"[k]);
            rt_load_expr(v->in_dtype[k], x, ld, sizeof ld);
            RT_PUT("            const %s %s = %s;\n", rt_var_ctype(v->in_dtype[k]), v->var[1 + k], ld);
        }
        for (k = 0; k < v->n_scalars; k++) RT_PUT("            const double %s = gpuos_s%d;\n", v->var[1 + v->n_in + k], k);
        RT_PUT("            %s %s = %s();\n", rt_var_ctype(v->out_dtype), v->var[0], rt_var_ctype(v->out_dtype));
        RT_PUT("            auto gpuos_body = [&]() {\n#line 1 \"%s\"\n", v->name);
        if (!rt_reserve(&s, &cap, n + strlen(v->source) + 4096)) return NULL;
        RT_PUT("%s\n", v->source);
        rt_store_expr(v->out_dtype, v->var[0], st, sizeof st);
        RT_PUT("            };\n            gpuos_body();\n            gpuos_r[gpuos_e] = %s;\n        }\n    }\n};\n", st);
        RT_PUT("extern \"C\" __device__ void gpuos__rt_%016llx(const void *gpuos_plan, long long gpuos_b, long long gpuos_end) {\n"
               "    typedef gpuos__rtg_%016llx G;\n"
               "    const gpuos__ew_plan *p = (const gpuos__ew_plan *)gpuos_plan;\n"
               "    int64_t b = gpuos_b, e = gpuos_end;\n"
               "    if (b < e && gpuos__d_ew_vec_ok<G>(p, b)) b = gpuos__d_ew_vec<G>(p, b, e, 0);\n"
               "    if (b < e) gpuos__d_ew<G, false>(p, b, e, 0);\n}\n",
               (unsigned long long)hash, (unsigned long long)hash);
    } else {
        RT_PUT("struct gpuos_tile {\n"
               "    long long begin, end; /* items of this tile: row-major indices of the output */\n"
               "    int rank;\n    const long long *shape;\n    char *p[%d];\n    const long long *stride[%d];\n"
               "    double s0, s1;\n"
               "    /* operand q's address at item i (q = 0: out, 1..: inputs) */\n"
               "    __device__ char *ptr(int q, long long i) const {\n"
               "        long long off = 0;\n"
               "        for (int d = rank - 1; d > 0; --d) { const long long sh = shape[d], x = i %% sh; i /= sh; off += x * stride[q][d]; }\n"
               "        if (rank > 0) off += i * stride[q][0];\n        return p[q] + off;\n    }\n};\n",
               1 + GPUOS_RUNTIME_MAX_INPUTS, 1 + GPUOS_RUNTIME_MAX_INPUTS);
        if (!rt_reserve(&s, &cap, n + strlen(v->source) + 4096)) return NULL;
        /* in a namespace of its own: every version in a slot is linked into one module, and
           two sources defining one external name (the function when an operator is redefined,
           a helper, a __device__ variable) collided there; nvJitLink kept one definition
           silently (a redefined operator could read its predecessor's variable) */
        RT_PUT("namespace gpuos__rtns_%016llx {\n#line 1 \"%s\"\n%s\n}\n", (unsigned long long)hash, v->name, v->source);
        RT_PUT("extern \"C\" __device__ void gpuos__rt_%016llx(const void *gpuos_plan, long long gpuos_b, long long gpuos_end) {\n"
               "    const gpuos__ew_plan *p = (const gpuos__ew_plan *)gpuos_plan;\n"
               "    gpuos_tile t;\n    t.begin = gpuos_b;\n    t.end = gpuos_end;\n    t.rank = p->rank;\n"
               "    t.shape = (const long long *)p->shape;\n"
               "    for (int q = 0; q < %d; ++q) { t.p[q] = (char *)p->ptr[q]; t.stride[q] = (const long long *)p->stride[q]; }\n"
               "    t.s0 = p->scalar[0];\n    t.s1 = p->scalar[1];\n    gpuos__rtns_%016llx::%s(t);\n}\n",
               (unsigned long long)hash, 1 + v->n_in, (unsigned long long)hash, v->name);
    }
    RT_PUT("extern \"C\" __device__ void (*gpuos__rt_ptr_%016llx)(const void *, long long, long long) = gpuos__rt_%016llx;\n",
           (unsigned long long)hash, (unsigned long long)hash);
#undef RT_PUT
    if (n >= cap) { /* cannot happen: cap has room for the source and 8 KB of frame */
        free(s);
        return NULL;
    }
    return s;
}

/* ---------------------------------------------------------------- the API */
static gpuos_status rt_install(gpuos_context *ctx, const char *fn, long index, const gpuos_op_def *def, int redefine) {
    gpuos__rt_version *v, *old;
    gpuos_status st;
    int slot;
    if (redefine) { /* an unknown handle is refused before its body is compiled */
        pthread_mutex_lock(&ctx->mu);
        old = ctx->rt_cur[index];
        pthread_mutex_unlock(&ctx->mu);
        if (!old)
            return gpuos__set_error(ctx, GPUOS_ERR_UNKNOWN_OP, "%s: op %ld is not a defined run-time operator", fn,
                                    (long)rt_handle(ctx, index));
    }
    if ((st = rt_make(ctx, fn, def, &v)) != GPUOS_OK) return st;
    pthread_mutex_lock(&ctx->mu);
    if (ctx->destroyed) { /* gpuos__rt_fini ran: a version installed now would never be freed */
        pthread_mutex_unlock(&ctx->mu);
        rt_free(v);
        return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT, "%s: the context was destroyed", fn);
    }
    old = ctx->rt_cur[index];
    if (redefine && !old) {
        pthread_mutex_unlock(&ctx->mu);
        rt_free(v);
        return gpuos__set_error(ctx, GPUOS_ERR_UNKNOWN_OP, "%s: op %ld is not a defined run-time operator", fn,
                                (long)rt_handle(ctx, index));
    }
    /* the other slot of the pair; its version, two definitions back, may still be queued */
    slot = old ? old->slot ^ 1 : 2 * (int)index;
    rt_slot_take_locked(ctx, slot);
    if (ctx->rt_slot[slot]) {
        struct timespec deadline;
        gpuos__deadline(ctx->cfg.wait_timeout_ms, &deadline);
        while (ctx->rt_slot[slot] && ctx->sticky == GPUOS_OK) {
            if (gpuos__cond_wait_until(&ctx->cv_done, &ctx->mu, &deadline) == ETIMEDOUT) break;
            rt_slot_take_locked(ctx, slot); /* (the last queued task gone: templates only) */
        }
        rt_slot_take_locked(ctx, slot);
        if (ctx->rt_slot[slot]) {
            pthread_mutex_unlock(&ctx->mu);
            rt_free(v);
            return gpuos__set_error(ctx, GPUOS_ERR_TIMEOUT,
                                    "%s: tasks of the version before last of '%s' are still queued after wait_timeout_ms "
                                    "= %u ms; its code slot cannot be reused yet",
                                    fn, old ? old->name : "?", (unsigned)ctx->cfg.wait_timeout_ms);
        }
    }
    v->index = (int)index;
    v->def_id = old ? old->def_id : ++ctx->rt_defs;
    v->slot = slot;
    v->refs = 1; /* the operator's */
    ctx->rt_slot[slot] = v;
    pthread_mutex_unlock(&ctx->mu);
    if (ctx->cuda) { /* compile, link every live version into a new module, swap it in */
        st = gpuos__cuda_rt_install(ctx, v);
        if (st != GPUOS_OK) {
            gpuos__rt_release(ctx, v);
            return st;
        }
    }
    pthread_mutex_lock(&ctx->mu);
    ctx->rt_cur[index] = v; /* from here on, new tasks run v */
    if (old) gpuos__rt_release_locked(old);
    pthread_mutex_unlock(&ctx->mu);
    return GPUOS_OK;
}

gpuos_status gpuos_op_define(gpuos_context *ctx, const gpuos_op_def *def, gpuos_op *op) {
    long i;
    gpuos_status st;
    if (!ctx) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "gpuos_op_define: ctx is NULL");
    if (!op) return gpuos__set_error(ctx, GPUOS_ERR_NULL_POINTER, "gpuos_op_define: op is NULL");
    if ((st = gpuos__check_alive(ctx, "gpuos_op_define")) != GPUOS_OK) return st;
    pthread_mutex_lock(&ctx->rt_mu); /* one definition at a time: each swaps the module */
    pthread_mutex_lock(&ctx->mu);
    for (i = 0; i < GPUOS_MAX_RUNTIME_OPS; i++)
        if (!ctx->rt_cur[i] && !ctx->rt_reserved[i] && rt_slot_free_locked(ctx, 2 * (int)i) &&
            rt_slot_free_locked(ctx, 2 * (int)i + 1))
            break;
    if (i < GPUOS_MAX_RUNTIME_OPS) {
        ctx->rt_reserved[i] = 1;
        rt_slot_take_locked(ctx, 2 * (int)i);
        rt_slot_take_locked(ctx, 2 * (int)i + 1);
    }
    pthread_mutex_unlock(&ctx->mu);
    if (i == GPUOS_MAX_RUNTIME_OPS) {
        pthread_mutex_unlock(&ctx->rt_mu);
        return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY,
                                "gpuos_op_define: %d run-time operators are defined (or still queued); remove one first",
                                GPUOS_MAX_RUNTIME_OPS);
    }
    st = rt_install(ctx, "gpuos_op_define", i, def, 0);
    pthread_mutex_lock(&ctx->mu);
    ctx->rt_reserved[i] = 0;
    if (st == GPUOS_OK) *op = rt_handle(ctx, i);
    pthread_mutex_unlock(&ctx->mu);
    pthread_mutex_unlock(&ctx->rt_mu);
    return st;
}

gpuos_status gpuos_op_redefine(gpuos_context *ctx, gpuos_op op, const gpuos_op_def *def) {
    long i;
    gpuos_status st;
    if (!ctx) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "gpuos_op_redefine: ctx is NULL");
    if ((st = gpuos__check_alive(ctx, "gpuos_op_redefine")) != GPUOS_OK) return st;
    pthread_mutex_lock(&ctx->rt_mu); /* (definitions and removals change rt_gen under it too) */
    pthread_mutex_lock(&ctx->mu);
    i = rt_index_locked(ctx, op);
    pthread_mutex_unlock(&ctx->mu);
    if (i < 0) {
        pthread_mutex_unlock(&ctx->rt_mu);
        return gpuos__set_error(ctx, GPUOS_ERR_UNKNOWN_OP,
                                "gpuos_op_redefine: op %ld is not a defined run-time operator (removed, or never defined)",
                                (long)(int)op);
    }
    st = rt_install(ctx, "gpuos_op_redefine", i, def, 1);
    pthread_mutex_unlock(&ctx->rt_mu);
    return st;
}

gpuos_status gpuos_op_remove(gpuos_context *ctx, gpuos_op op) {
    long i;
    gpuos__rt_version *v = NULL;
    if (!ctx) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "gpuos_op_remove: ctx is NULL");
    if (gpuos__check_alive(ctx, "gpuos_op_remove") != GPUOS_OK) return GPUOS_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&ctx->rt_mu);
    pthread_mutex_lock(&ctx->mu);
    i = rt_index_locked(ctx, op);
    if (i >= 0) {
        v = ctx->rt_cur[i];
        ctx->rt_cur[i] = NULL;
        if (v) ctx->rt_gen[i]++; /* this handle stays unknown whatever takes the index next */
    }
    if (v) gpuos__rt_release_locked(v); /* queued tasks keep it alive, and its slot */
    pthread_mutex_unlock(&ctx->mu);
    pthread_mutex_unlock(&ctx->rt_mu);
    if (!v)
        return gpuos__set_error(ctx, GPUOS_ERR_UNKNOWN_OP, "gpuos_op_remove: op %ld is not a defined run-time operator",
                                (long)(int)op);
    return GPUOS_OK;
}
