/* gpuos.h - many small tensor operations on an NVIDIA GPU, from C.        v0.1.0

   WHAT IT IS
   gpuos runs streams of small tensor operations without paying a kernel launch
   for each one. A program creates a context, makes tensors (any shape, strides,
   dtype, rank 0..8), and submits operations into the context's queue; they run
   asynchronously, in program order, on a long-lived persistent GPU kernel, or on
   host threads when there is no GPU (the host executor, which is also the
   reference the GPU is checked against).

   The drop-in unit is this header plus gpuos.c: compile gpuos.c with any C99
   compiler, link with -lpthread -ldl (-lm). No nvcc is needed: the CUDA driver,
   NVRTC and nvJitLink are loaded at run time with dlopen, so a program built
   with gpuos.c also starts on a machine that has none of them.

   EXAMPLE
       #include <stdio.h>
       #include "gpuos.h"
       int main(void) {
           float host_x[1024] = {0}, host_v[1024] = {0};
           gpuos_config cfg = GPUOS_CONFIG_INIT;        // defaults: GPU if any, else host
           gpuos_context *ctx;
           if (gpuos_create(&cfg, &ctx) != GPUOS_OK) { puts(gpuos_last_error(NULL)); return 1; }
           int64_t shape[1] = {1024};
           gpuos_tensor *x, *v, *dt;
           gpuos_tensor_new(ctx, GPUOS_F32, 1, shape, &x);
           gpuos_tensor_new(ctx, GPUOS_F32, 1, shape, &v);
           gpuos_tensor_scalar(ctx, GPUOS_F32, 0.01, &dt);      // 0-d tensor, broadcasts
           gpuos_upload(ctx, x, host_x, sizeof host_x);
           gpuos_upload(ctx, v, host_v, sizeof host_v);
           gpuos_fma(ctx, x, v, dt, x);                         // x = v*dt + x, queued
           gpuos_status st = gpuos_download(ctx, x, host_x, sizeof host_x);  // waits
           if (st != GPUOS_OK) printf("%s: %s\n", gpuos_status_string(st), gpuos_last_error(ctx));
           gpuos_tensor_release(x); gpuos_tensor_release(v); gpuos_tensor_release(dt);
           gpuos_destroy(ctx);
           return st != GPUOS_OK;
       }

   CONFIGURATION (gpuos_config; start from GPUOS_CONFIG_INIT, then change fields)
       device          GPUOS_DEVICE_AUTO (a GPU if one works, else the host executor),
                       GPUOS_DEVICE_HOST (force the host executor), or a CUDA ordinal.
       queue_capacity  tasks the queue holds before a submission waits (power of two).
       submit_timeout_ms  how long a submission waits for room in a full queue before
                       it returns GPUOS_ERR_QUEUE_FULL (0: do not wait).
       wait_timeout_ms the timeout of the waits that calls such as gpuos_download make
                       (0: do not wait: a download behind unfinished work returns
                       GPUOS_ERR_TIMEOUT, and gpuos_destroy drops what is queued).
       cache_dir       where compiled device code is cached (NULL: $GPUOS_CACHE_DIR,
                       else $XDG_CACHE_HOME/gpuos, else ~/.cache/gpuos).
       idle_ms         the persistent kernel exits after this long with an empty queue
                       and comes back on the next submission. Several contexts on one
                       GPU work, but one context's kernel fills the GPU: contexts with
                       work take turns (a kernel stops, its queued tasks done, when
                       another context needs the GPU; waiting contexts go in the
                       order they asked; a submission does not wait for its turn,
                       its work stays queued until then: a wait waits for it, and a
                       full queue for submit_timeout_ms as always), so keep one
                       context per GPU where speed matters.
       host_threads    threads of the host executor (0: one per core; never more than 16).
   Compile-time macros: none are needed. GPUOS_API may be defined to add an export
   attribute to every public function (default: nothing). gpuos.c is one file, so its
   internal functions (gpuos__*) are global symbols too: a shared library or plugin that
   contains it should be built with -fvisibility=hidden and
   -DGPUOS_API='__attribute__((visibility("default")))', which exports exactly the public
   functions (and keeps two copies in one process, each in its own library, apart).

   ERROR MODEL
   Every function that can fail returns a gpuos_status. GPUOS_OK is 0; the other
   codes have fixed, never-renumbered values. gpuos_status_string(code) names a
   code; gpuos_last_error(ctx) gives the detail of the context's last error (which
   argument, which shape, the compiler log). Bad input (wrong shape, dtype
   mismatch, NULL, bad strides, unknown op, axis out of range) is refused when it
   is submitted, nothing is queued, and the context stays usable. A failure while
   queued work runs (a device fault; on the host executor, a run-time operator's body
   that ran past the interpreter's limit) is sticky: every later submission that
   passes validation (bad input still gets its own code), wait, upload and download
   returns it (GPUOS_ERR_DEVICE_LOST), and gpuos_context_status reports it. gpuos never calls exit or abort and never prints.

   THREAD SAFETY
   A context may be used from many threads at once (except gpuos_destroy, which must
   not overlap any other call on it): submissions from different threads are each
   atomic and keep each thread's program order. The detail string of
   gpuos_last_error belongs to the context, so with several threads it may describe
   another thread's error; the returned status is always your own. A call with no
   context to report to (a NULL ctx, or a NULL tensor or graph that is the call's only
   handle, as in gpuos_tensor_get_info(NULL, ...)) writes its detail to one process-wide
   string, gpuos_last_error(NULL); a NULL tensor passed with a valid ctx is that
   context's error. A function that makes an object (*out) sets *out to NULL when it
   fails.
   Tensors are reference counted: a tensor (or view) may be released right after
   a submission that uses it; its memory lives until the queued work is done.

   SEMANTICS (full table in docs/OPERATORS.md)
   - Program order: a task sees every earlier task's writes to memory it reads.
   - Binary and ternary operators broadcast like NumPy; operands must share a dtype
     (casts are explicit, gpuos_cast), except the documented ones (where's
     condition is bool). The output must have exactly the broadcast shape.
   - Integer arithmetic wraps (two's complement). Integer division or modulo by
     zero gives 0. Casts from float to integer truncate toward zero and saturate;
     NaN becomes 0. min/max/minimum/maximum propagate NaN. f16 and bf16 compute and
     accumulate in f32; f32 reductions accumulate in f32 on the GPU.
   - An output may be the very same view as an input of an element-wise, softmax,
     log_softmax, layernorm or rmsnorm task (in place); any other overlap between
     an output and an input (a byte both reach) is refused (GPUOS_ERR_ALIASING).
     Views of one allocation that interleave without sharing an element (x[:, 0::2]
     and x[:, 1::2]) are fine: seen at once when their elements' bytes fall apart modulo
     the greatest common divisor of both views' strides, else checked element by element up
     to 2^20 output and 2^22 input elements, refused as possibly overlapping beyond.

   LIMITS
   rank 0..GPUOS_MAX_RANK (8); at most GPUOS_MAX_INPUTS (4) inputs per task.

   CHANGES
   0.1.0  first version: API, 80 generated operators, host executor, and the GPU runtime
          (persistent kernel, NVRTC-built and disk-cached device code, recorded graphs,
          priorities, run-time operators); against plain launches, CUDA graphs and PyTorch
          on the same work see README.md and bench/results/.
*/
#ifndef GPUOS_H
#define GPUOS_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* int64_t, uint32_t, uint64_t */

#ifdef __cplusplus
extern "C" {
#endif

#ifndef GPUOS_API
#define GPUOS_API
#endif

/* ---------------------------------------------------------------- version */
#define GPUOS_VERSION_MAJOR 0
#define GPUOS_VERSION_MINOR 1
#define GPUOS_VERSION_PATCH 0
#define GPUOS_VERSION_NUMBER (GPUOS_VERSION_MAJOR * 10000 + GPUOS_VERSION_MINOR * 100 + GPUOS_VERSION_PATCH)
#define GPUOS_VERSION_STRING "0.1.0"

/* GPUOS_VERSION_NUMBER of the compiled library: compare with the header's. */
GPUOS_API int gpuos_version(void);

/* ---------------------------------------------------------------- limits */
#define GPUOS_MAX_RANK 8
#define GPUOS_MAX_INPUTS 4

/* ---------------------------------------------------------------- status codes */
typedef enum gpuos_status {
    GPUOS_OK = 0,                    /* success */
    GPUOS_ERR_INVALID_ARGUMENT = 1,  /* a value out of its documented range */
    GPUOS_ERR_NULL_POINTER = 2,      /* a required pointer was NULL */
    GPUOS_ERR_SHAPE_MISMATCH = 3,    /* shapes do not broadcast, or the output has the wrong shape */
    GPUOS_ERR_DTYPE_MISMATCH = 4,    /* operands of different dtypes, or an output of the wrong dtype */
    GPUOS_ERR_UNSUPPORTED_DTYPE = 5, /* the operator is not defined (or not generated) for this dtype */
    GPUOS_ERR_RANK = 6,              /* rank above GPUOS_MAX_RANK, or not allowed for this operator */
    GPUOS_ERR_BAD_STRIDES = 7,       /* strides leave the memory, or an output overlaps itself */
    GPUOS_ERR_UNKNOWN_OP = 8,        /* no such operator */
    GPUOS_ERR_AXIS = 9,              /* an axis out of range */
    GPUOS_ERR_QUEUE_FULL = 10,       /* the queue stayed full for submit_timeout_ms */
    GPUOS_ERR_TIMEOUT = 11,          /* a wait ran out of time; the work is still queued */
    GPUOS_ERR_OUT_OF_MEMORY = 12,    /* host or device allocation failed */
    GPUOS_ERR_NO_DEVICE = 13,        /* no usable GPU (no driver, no device, bad ordinal) */
    GPUOS_ERR_DEVICE_LOST = 14,      /* the GPU faulted or vanished (host executor: a run-time
                                        operator's body failed); sticky for the context */
    GPUOS_ERR_COMPILE = 15,          /* an operator's source did not compile (NVRTC or nvJitLink;
                                        on the host, the expression compiler); the log is in
                                        gpuos_last_error */
    GPUOS_ERR_UNSUPPORTED = 16,      /* valid request this build or backend cannot do */
    GPUOS_ERR_NOT_VIEWABLE = 17,     /* reshape needs a copy: the strides do not allow a view */
    GPUOS_ERR_OUT_OF_BOUNDS = 18,    /* a size or index beyond a tensor or buffer */
    GPUOS_ERR_ALIASING = 19,         /* an output overlaps an input in a way the operator forbids */
    GPUOS_ERR_BAD_CONFIG = 20,       /* gpuos_config of an unknown size or version, or bad field */
    GPUOS_ERR_CONTEXT_MISMATCH = 21, /* a tensor of another context */
    GPUOS_ERR_INTERNAL = 22          /* a bug in gpuos; please report it with gpuos_last_error */
} gpuos_status;

/* A status code's name and a sentence on what it means and what to do
   ("GPUOS_ERR_SHAPE_MISMATCH: shapes ..."); gpuos_last_error has the case's detail. Never NULL. */
GPUOS_API const char *gpuos_status_string(gpuos_status status);

/* ---------------------------------------------------------------- generated: dtypes, operators */
/* BEGIN GENERATED gpuos.h (gen/gen.py from gen/ops.py; do not edit by hand, run `make gen`) */
/* generated by gen/gen.py from gen/ops.py and templates/gpuos_h_types.j2; do not edit; run `make gen` */

/* Element types; values are ABI (docs/OPERATORS.md), never renumbered. */
typedef enum gpuos_dtype {
    GPUOS_BOOL = 0,     /* uint8_t 0 or 1 */
    GPUOS_I8 = 1,       /* int8_t */
    GPUOS_U8 = 2,       /* uint8_t */
    GPUOS_I16 = 3,      /* int16_t */
    GPUOS_I32 = 4,      /* int32_t */
    GPUOS_I64 = 5,      /* int64_t */
    GPUOS_F16 = 6,      /* uint16_t (IEEE binary16 bits) */
    GPUOS_BF16 = 7,     /* uint16_t (bfloat16 bits) */
    GPUOS_F32 = 8,      /* float */
    GPUOS_F64 = 9,      /* double */
    GPUOS_DTYPE_COUNT = 10
} gpuos_dtype;

/* Operators; values are ABI (docs/OPERATORS.md), never renumbered. */
typedef enum gpuos_op {
    GPUOS_OP_NEG = 0,             /* unary: -a (unsigned wraps) */
    GPUOS_OP_ABS = 1,             /* unary: |a| (INT_MIN stays INT_MIN) */
    GPUOS_OP_SIGN = 2,            /* unary: -1, 0 or 1 (NaN gives NaN) */
    GPUOS_OP_SQRT = 3,            /* unary: square root */
    GPUOS_OP_RSQRT = 4,           /* unary: 1/sqrt(a) */
    GPUOS_OP_EXP = 5,             /* unary: e^a */
    GPUOS_OP_EXP2 = 6,            /* unary: 2^a */
    GPUOS_OP_LOG = 7,             /* unary: natural logarithm */
    GPUOS_OP_LOG2 = 8,            /* unary: base-2 logarithm */
    GPUOS_OP_LOG1P = 9,           /* unary: log(1 + a) */
    GPUOS_OP_EXPM1 = 10,          /* unary: exp(a) - 1 */
    GPUOS_OP_SIN = 11,            /* unary: sine */
    GPUOS_OP_COS = 12,            /* unary: cosine */
    GPUOS_OP_TAN = 13,            /* unary: tangent */
    GPUOS_OP_TANH = 14,           /* unary: hyperbolic tangent */
    GPUOS_OP_SIGMOID = 15,        /* unary: 1/(1+exp(-a)) */
    GPUOS_OP_RELU = 16,           /* unary: a > 0 ? a : 0 (NaN gives NaN) */
    GPUOS_OP_GELU = 17,           /* unary: 0.5 a (1 + erf(a/sqrt 2)) */
    GPUOS_OP_GELU_TANH = 18,      /* unary: 0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3))) */
    GPUOS_OP_SILU = 19,           /* unary: a * sigmoid(a) */
    GPUOS_OP_FLOOR = 20,          /* unary: round down */
    GPUOS_OP_CEIL = 21,           /* unary: round up */
    GPUOS_OP_ROUND = 22,          /* unary: round to nearest, ties to even */
    GPUOS_OP_TRUNC = 23,          /* unary: round toward zero */
    GPUOS_OP_RECIPROCAL = 24,     /* unary: 1/a */
    GPUOS_OP_SQUARE = 25,         /* unary: a*a (integers wrap) */
    GPUOS_OP_LOGICAL_NOT = 26,    /* unary: a == 0 */
    GPUOS_OP_BITWISE_NOT = 27,    /* unary: ~a (bool: !a) */
    GPUOS_OP_ISNAN = 28,          /* unary: a is NaN */
    GPUOS_OP_ISINF = 29,          /* unary: a is +inf or -inf */
    GPUOS_OP_ISFINITE = 30,       /* unary: a is neither inf nor NaN */
    GPUOS_OP_ADD = 31,            /* binary: a+b */
    GPUOS_OP_SUB = 32,            /* binary: a-b */
    GPUOS_OP_MUL = 33,            /* binary: a*b */
    GPUOS_OP_DIV = 34,            /* binary: a/b (integers: toward zero, b == 0 gives 0) */
    GPUOS_OP_FLOORDIV = 35,       /* binary: floor(a/b) (integers: b == 0 gives 0) */
    GPUOS_OP_MOD = 36,            /* binary: remainder with the sign of b (integers: b == 0 gives 0) */
    GPUOS_OP_POW = 37,            /* binary: a^b (integers: exact, wrapping; b < 0 gives 0 unless |a| == 1) */
    GPUOS_OP_ATAN2 = 38,          /* binary: atan2(a, b) */
    GPUOS_OP_MINIMUM = 39,        /* binary: element-wise minimum (NaN if either is NaN) */
    GPUOS_OP_MAXIMUM = 40,        /* binary: element-wise maximum (NaN if either is NaN) */
    GPUOS_OP_EQ = 41,             /* binary: a == b */
    GPUOS_OP_NE = 42,             /* binary: a != b */
    GPUOS_OP_LT = 43,             /* binary: a < b */
    GPUOS_OP_LE = 44,             /* binary: a <= b */
    GPUOS_OP_GT = 45,             /* binary: a > b */
    GPUOS_OP_GE = 46,             /* binary: a >= b */
    GPUOS_OP_LOGICAL_AND = 47,    /* binary: (a != 0) && (b != 0) */
    GPUOS_OP_LOGICAL_OR = 48,     /* binary: (a != 0) || (b != 0) */
    GPUOS_OP_LOGICAL_XOR = 49,    /* binary: (a != 0) != (b != 0) */
    GPUOS_OP_BITWISE_AND = 50,    /* binary: a & b */
    GPUOS_OP_BITWISE_OR = 51,     /* binary: a | b */
    GPUOS_OP_BITWISE_XOR = 52,    /* binary: a ^ b */
    GPUOS_OP_SHIFT_LEFT = 53,     /* binary: a << b (b < 0 or b >= bits gives 0) */
    GPUOS_OP_SHIFT_RIGHT = 54,    /* binary: a >> b, arithmetic for signed (b out of range: 0 or -1) */
    GPUOS_OP_WHERE = 55,          /* ternary: cond ? a : b (cond is bool) */
    GPUOS_OP_CLAMP = 56,          /* ternary: min(max(x, lo), hi), NaN propagating */
    GPUOS_OP_LERP = 57,           /* ternary: a + w*(b-a), fused: fma(w, b-a, a) */
    GPUOS_OP_FMA = 58,            /* ternary: a*b + c (floats: fused; integers wrap) */
    GPUOS_OP_CAST = 59,           /* cast: a converted to out's dtype */
    GPUOS_OP_COPY = 60,           /* copy: a broadcast to out's shape */
    GPUOS_OP_FILL = 61,           /* fill: every element = value (converted as a cast from f64) */
    GPUOS_OP_ARANGE = 62,         /* arange: element i (row-major) = start + i*step, in f64, then cast */
    GPUOS_OP_SUM = 63,            /* reduce: sum (integers wrap) */
    GPUOS_OP_PROD = 64,           /* reduce: product (integers wrap) */
    GPUOS_OP_MEAN = 65,           /* reduce: sum / N (NaN over zero elements) */
    GPUOS_OP_MIN = 66,            /* reduce: minimum (NaN propagates) */
    GPUOS_OP_MAX = 67,            /* reduce: maximum (NaN propagates) */
    GPUOS_OP_ARGMIN = 68,         /* reduce: flat index of the first minimum (first NaN) */
    GPUOS_OP_ARGMAX = 69,         /* reduce: flat index of the first maximum (first NaN) */
    GPUOS_OP_ANY = 70,            /* reduce: any element != 0 */
    GPUOS_OP_ALL = 71,            /* reduce: every element != 0 */
    GPUOS_OP_NORM2 = 72,          /* reduce: sqrt(sum a^2) */
    GPUOS_OP_VAR = 73,            /* reduce: sum (a - mean)^2 / (N - correction) */
    GPUOS_OP_STD = 74,            /* reduce: sqrt(var) */
    GPUOS_OP_MATMUL = 75,         /* matmul: NumPy matmul (batch axes broadcast) */
    GPUOS_OP_SOFTMAX = 76,        /* rows: exp(a - max) / sum along axis */
    GPUOS_OP_LOG_SOFTMAX = 77,    /* rows: a - max - log(sum exp(a - max)) along axis */
    GPUOS_OP_LAYERNORM = 78,      /* rows: (x - mean) / sqrt(var + eps) * weight + bias over the last axis */
    GPUOS_OP_RMSNORM = 79,        /* rows: x / sqrt(mean(x^2) + eps) * weight over the last axis */
    GPUOS_OP_COUNT = 80
} gpuos_op;
/* END GENERATED gpuos.h */

/* Size in bytes of one element; 0 for an unknown dtype. */
GPUOS_API size_t gpuos_dtype_size(gpuos_dtype dtype);
/* "f32", "bf16", ...; NULL for an unknown dtype. */
GPUOS_API const char *gpuos_dtype_name(gpuos_dtype dtype);
/* "add", "softmax", ...; NULL for an unknown op. */
GPUOS_API const char *gpuos_op_name(gpuos_op op);
/* The op of that name, or GPUOS_OP_COUNT when there is none. */
GPUOS_API gpuos_op gpuos_op_from_name(const char *name);
/* 1 if this build has code for op on inputs of this dtype and operands of this rank. */
GPUOS_API int gpuos_op_supported(gpuos_op op, gpuos_dtype dtype, int rank);

/* ---------------------------------------------------------------- context */
typedef struct gpuos_context gpuos_context;

#define GPUOS_DEVICE_AUTO (-2)
#define GPUOS_DEVICE_HOST (-1)

typedef struct gpuos_config {
    size_t struct_size;          /* sizeof(gpuos_config), set by GPUOS_CONFIG_INIT */
    int api_version;             /* GPUOS_VERSION_NUMBER, set by GPUOS_CONFIG_INIT */
    int device;                  /* GPUOS_DEVICE_AUTO, GPUOS_DEVICE_HOST or a CUDA ordinal */
    uint32_t queue_capacity;     /* tasks; a power of two, 16 .. 1<<24 */
    uint32_t submit_timeout_ms;  /* wait for room in a full queue; 0 = fail at once */
    uint32_t wait_timeout_ms;    /* timeout of implicit waits (download, upload, destroy); the GPU
                                    executor's own stops of its kernel wait at least 1 s for it */
    const char *cache_dir;       /* NULL = default (see CONFIGURATION) */
    uint32_t idle_ms;            /* persistent kernel idle exit */
    int host_threads;            /* 0 = automatic */
} gpuos_config;

#define GPUOS_CONFIG_INIT \
    { sizeof(gpuos_config), GPUOS_VERSION_NUMBER, GPUOS_DEVICE_AUTO, 4096u, 1000u, 10000u, NULL, 50u, 0 }

typedef enum gpuos_backend {
    GPUOS_BACKEND_HOST = 0, /* host executor */
    GPUOS_BACKEND_CUDA = 1  /* persistent kernel on a GPU */
} gpuos_backend;

/* Creates a context. On failure *out is NULL and gpuos_last_error(NULL) says why. */
GPUOS_API gpuos_status gpuos_create(const gpuos_config *config, gpuos_context **out);
/* Waits up to wait_timeout_ms for queued work, drops what has not finished, stops the
   executor and frees the context's resources. A task running then is stopped between its
   steps (host executor; a step is about 32k element operations, or one output row of a
   product, or one element of a run-time operator's body: its output is left part written), or on the GPU each worker
   finishes the tile it is running (and at most one more) and skips the rest of what was
   already sent to the device. Its tensors and
   graphs must still be released (before or after); while one is alive it keeps the
   context's memory, and later calls on ctx or its graphs return GPUOS_ERR_INVALID_ARGUMENT
   (views of its tensors still work: they need nothing of ctx but that memory). Once the last
   is released (or if none was alive) ctx is freed: using it then is undefined, as for any
   freed pointer. Must not overlap any other call on ctx. NULL is allowed. */
GPUOS_API void gpuos_destroy(gpuos_context *ctx);
/* Which executor the context runs on. */
GPUOS_API gpuos_backend gpuos_context_backend(const gpuos_context *ctx);
/* Detail of the context's last error ("" if none; after gpuos_create fell back from
   GPUOS_DEVICE_AUTO to the host executor, why no GPU was used); with ctx NULL, of the last
   error that had no context in this process (a failed gpuos_create, a NULL ctx, tensor or
   graph argument). Read it after a failing call. The string is the calling thread's own copy:
   no other thread's failure changes it, and it stays valid until this thread's fourth later
   call of gpuos_last_error. */
GPUOS_API const char *gpuos_last_error(const gpuos_context *ctx);
/* The sticky error of the context (GPUOS_OK while healthy). */
GPUOS_API gpuos_status gpuos_context_status(const gpuos_context *ctx);

/* ---------------------------------------------------------------- tensors */
typedef struct gpuos_tensor gpuos_tensor;

/* What a tensor handle describes. Strides are in elements, may be 0 (broadcast)
   or negative; offset is in elements from the start of the underlying memory. */
typedef struct gpuos_tensor_info {
    gpuos_dtype dtype;
    int rank;
    int64_t shape[GPUOS_MAX_RANK];
    int64_t strides[GPUOS_MAX_RANK];
    int64_t offset;
    int64_t numel;
    int contiguous;  /* 1 if row-major contiguous */
    int owned;       /* 1 if gpuos allocated the memory, 0 if wrapped */
} gpuos_tensor_info;

/* A new row-major contiguous tensor, memory owned by gpuos (contents undefined). */
GPUOS_API gpuos_status gpuos_tensor_new(gpuos_context *ctx, gpuos_dtype dtype, int rank,
                                        const int64_t *shape, gpuos_tensor **out);
/* A new row-major contiguous tensor in page-locked host memory that tasks read and
   write directly over the bus (mapped pinned memory on GPU contexts; ordinary memory on
   host contexts): the copy-in and copy-out of queued work, e.g. gpuos_copy(ctx, dev, pin)
   then gpuos_copy(ctx, pin, dev), with no blocking gpuos_upload/gpuos_download. The
   program reads and writes it through gpuos_tensor_host_data while no queued task uses
   it (after a fence that covers them). Tasks on it run at bus speed: stage, then compute
   on device tensors. */
GPUOS_API gpuos_status gpuos_tensor_new_pinned(gpuos_context *ctx, gpuos_dtype dtype, int rank,
                                               const int64_t *shape, gpuos_tensor **out);
/* The host address of element 0 of a view of a pinned tensor (gpuos_tensor_new_pinned);
   NULL for other tensors and for NULL. */
GPUOS_API void *gpuos_tensor_host_data(const gpuos_tensor *t);
/* A 0-d tensor holding value converted to dtype (as gpuos_cast would). */
GPUOS_API gpuos_status gpuos_tensor_scalar(gpuos_context *ctx, gpuos_dtype dtype, double value,
                                           gpuos_tensor **out);
/* Wraps memory the caller owns: a device pointer on GPU contexts, a host pointer on
   host contexts. strides NULL means row-major contiguous. bytes is the size of the
   allocation from data; every element the view can reach must lie inside it
   (else GPUOS_ERR_BAD_STRIDES). The memory must outlive every task that uses it, and must
   not overlap another live tensor's memory (another wrap, or memory gpuos allocated):
   tasks are ordered, and overlaps refused, by the allocation they use, so tasks on two
   such tensors would not be ordered with each other. */
GPUOS_API gpuos_status gpuos_tensor_wrap(gpuos_context *ctx, void *data, size_t bytes, gpuos_dtype dtype,
                                         int rank, const int64_t *shape, const int64_t *strides,
                                         gpuos_tensor **out);
/* Drops the handle; the memory is freed once no handle, view or queued task uses it. NULL ok.
   The handle itself is freed at once: using it afterwards (or releasing it twice) is
   undefined, as for free(); views taken from it stay valid. */
GPUOS_API void gpuos_tensor_release(gpuos_tensor *t);
GPUOS_API gpuos_status gpuos_tensor_get_info(const gpuos_tensor *t, gpuos_tensor_info *info);

/* Copies bytes of row-major packed host data into the tensor's elements in logical
   (row-major) order; any view may be the target except one that would write an element
   several times (a broadcast view, axes that overlap: GPUOS_ERR_BAD_STRIDES, as for a task's
   output, including its rule above 2^22 elements, docs/OPERATORS.md). bytes must be numel *
   dtype size (else GPUOS_ERR_OUT_OF_BOUNDS).
   It waits until earlier tasks are done with the tensor, and returns once src may be reused. */
GPUOS_API gpuos_status gpuos_upload(gpuos_context *ctx, gpuos_tensor *dst, const void *src, size_t bytes);
/* Waits (wait_timeout_ms) for earlier tasks, then copies the tensor's elements in logical
   row-major order into dst. bytes must be numel * dtype size (else GPUOS_ERR_OUT_OF_BOUNDS). */
GPUOS_API gpuos_status gpuos_download(gpuos_context *ctx, const gpuos_tensor *src, void *dst, size_t bytes);

/* ---------------------------------------------------------------- views (no copy; new handle shares memory) */
/* Axes may be negative (counted from the end). */
/* Python slicing t[start:stop:step] along axis; start/stop are clamped as Python
   does; step may be negative (use GPUOS_SLICE_END for "to the end"); step 0 is an error. */
#define GPUOS_SLICE_END INT64_MAX
GPUOS_API gpuos_status gpuos_view_slice(const gpuos_tensor *t, int axis, int64_t start, int64_t stop,
                                        int64_t step, gpuos_tensor **out);
/* perm is a permutation of 0..rank-1. */
GPUOS_API gpuos_status gpuos_view_permute(const gpuos_tensor *t, const int *perm, gpuos_tensor **out);
GPUOS_API gpuos_status gpuos_view_transpose(const gpuos_tensor *t, int axis0, int axis1, gpuos_tensor **out);
/* NumPy broadcast_to: new leading axes and size-1 axes get stride 0. */
GPUOS_API gpuos_status gpuos_view_broadcast_to(const gpuos_tensor *t, int rank, const int64_t *shape,
                                               gpuos_tensor **out);
/* Same elements, new shape (one entry may be -1). GPUOS_ERR_NOT_VIEWABLE when the
   strides cannot express it without a copy (then copy into a contiguous tensor first). */
GPUOS_API gpuos_status gpuos_view_reshape(const gpuos_tensor *t, int rank, const int64_t *shape,
                                          gpuos_tensor **out);
/* Removes axis, which must have size 1. */
GPUOS_API gpuos_status gpuos_view_squeeze(const gpuos_tensor *t, int axis, gpuos_tensor **out);
/* Inserts a size-1 axis so that it becomes axis `axis` of the result (-1 appends). */
GPUOS_API gpuos_status gpuos_view_unsqueeze(const gpuos_tensor *t, int axis, gpuos_tensor **out);
/* Any view of t's memory: shape, strides and offset in elements, relative to t's
   memory (not to t's view). Every reachable element must lie inside the memory. */
GPUOS_API gpuos_status gpuos_view_strided(const gpuos_tensor *t, int rank, const int64_t *shape,
                                          const int64_t *strides, int64_t offset, gpuos_tensor **out);

/* ---------------------------------------------------------------- submission */
/* A task for gpuos_submit. Start from GPUOS_TASK_INIT. Every operator writes one
   output tensor; inputs are in the order the operator lists them (docs/OPERATORS.md). */
#define GPUOS_AXES_ALL 0xFFFFFFFFu
typedef struct gpuos_task {
    size_t struct_size;                 /* sizeof(gpuos_task), set by GPUOS_TASK_INIT */
    gpuos_op op;
    gpuos_tensor *out;
    gpuos_tensor *in[GPUOS_MAX_INPUTS]; /* unused and optional inputs are NULL */
    double scalar[2];                   /* fill: value; arange: start, step; layernorm, rmsnorm: eps */
    uint32_t axes;                      /* reductions: bit i reduces axis i; GPUOS_AXES_ALL = every axis */
    int axis;                           /* softmax, log_softmax: the axis (negative from the end) */
    int keepdim;                        /* reductions: keep reduced axes with size 1 */
    int correction;                     /* var, std: divide by N - correction */
    int priority;                       /* GPUOS_PRIORITY_NORMAL or GPUOS_PRIORITY_HIGH (below) */
    uint32_t deadline_us;               /* 0: none; else finish within this many us of submission (below) */
} gpuos_task;

#define GPUOS_TASK_INIT                                                                       \
    { sizeof(gpuos_task), GPUOS_OP_COUNT, NULL, { NULL, NULL, NULL, NULL }, { 0.0, 0.0 },     \
      GPUOS_AXES_ALL, -1, 0, 0, 0, 0 }

/* Priorities. A high-priority task runs before normal work queued earlier, whenever it
   does not touch memory that earlier unfinished normal work writes, or write memory it
   uses (then it keeps program order: it runs after that work, and so does everything
   that depends on it). On the GPU, workers take high-priority work between tiles and
   while normal work waits for a dependency, so a short high-priority job submitted behind
   a long normal one finishes first; use gpuos_wait_task / gpuos_task_done to wait for it
   alone (a fence waits for everything before it too). Two levels.

   Deadlines (gpuos_task.deadline_us, gpuos_graph_set_deadline): a task with a deadline is
   urgent, as a high-priority one is, and among urgent work ready to run the earliest
   deadline goes first (then urgent work without a deadline, in submission order); the
   same memory rule keeps program order. The host executor picks urgent work in that
   order; on the GPU urgent work runs in submission order in its lane. Whether each
   deadline was met is counted (gpuos_deadline_stats) when the library sees the task
   finish: on the host executor at once, on the GPU when its poller notices (every
   0.2 ms at most, or at once in a wait), so a miss can be counted up to that late. */
typedef enum gpuos_priority { GPUOS_PRIORITY_NORMAL = 0, GPUOS_PRIORITY_HIGH = 1 } gpuos_priority;

/* Tasks (or graph launches) with a deadline that finished so far: *met in time, *missed
   late (either may be NULL). */
GPUOS_API gpuos_status gpuos_deadline_stats(gpuos_context *ctx, uint64_t *met, uint64_t *missed);

/* Validates and queues a task. On success *seq (if not NULL) is the task's sequence
   number, usable as a fence. On error nothing is queued. */
GPUOS_API gpuos_status gpuos_submit(gpuos_context *ctx, const gpuos_task *task, uint64_t *seq);

/* Validates and queues tasks[0..n) in order, as n calls of gpuos_submit would, taking the
   context's lock once for up to 64 tasks that repeat recent ones (the common case in a
   loop): from several threads, submitting in batches scales where single calls contend for
   the lock. A batch is not atomic: other threads' tasks may come between its tasks (their
   sequence numbers then have gaps). seqs (may be NULL): each queued task's sequence number.
   *n_queued (may be NULL): how many were queued. On an error the status is the failing
   task's, it and the tasks after it are not queued, and those before it are. */
GPUOS_API gpuos_status gpuos_submit_many(gpuos_context *ctx, const gpuos_task *tasks, int n, uint64_t *seqs,
                                         int *n_queued);

/* The sequence number of the last task submitted so far (0 before any). */
GPUOS_API uint64_t gpuos_fence(gpuos_context *ctx);
/* 1 if every task up to and including seq has finished. */
GPUOS_API int gpuos_fence_done(gpuos_context *ctx, uint64_t seq);
/* Waits until every task up to seq has finished, at most timeout_ms
   (GPUOS_ERR_TIMEOUT; the work stays queued). Returns a sticky error if any, and
   GPUOS_ERR_INVALID_ARGUMENT for a seq never issued, above gpuos_fence (also
   gpuos_wait_task); seq 0, the fence before any task, is always finished. */
GPUOS_API gpuos_status gpuos_wait_fence(gpuos_context *ctx, uint64_t seq, uint32_t timeout_ms);
/* Waits for everything submitted so far. */
GPUOS_API gpuos_status gpuos_wait(gpuos_context *ctx, uint32_t timeout_ms);
/* 1 if task seq itself has finished (and with it everything it depends on), whatever
   older tasks are still running: for high-priority work. */
GPUOS_API int gpuos_task_done(gpuos_context *ctx, uint64_t seq);
/* Waits until task seq itself has finished, at most timeout_ms (GPUOS_ERR_TIMEOUT). */
GPUOS_API gpuos_status gpuos_wait_task(gpuos_context *ctx, uint64_t seq, uint32_t timeout_ms);

/* ---------------------------------------------------------------- graphs */
/* A graph records tasks once and launches them many times, each launch one call. Recording
   validates each task (the errors of gpuos_submit, at gpuos_graph_add) and keeps its plan,
   so a launch queues the recorded tasks without validating or planning them again, in
   recorded order (or an order explicit dependencies ask for). A launch may bind other
   tensors in place of recorded ones (same dtype, shape and strides; their tasks are
   validated again) and other scalars. Several launches may be in flight at once, on the
   same or on different tensors: they are ordered by the memory they touch, as submissions
   are. The graph keeps what it recorded alive (the caller may release its tensors).
   Calls on one graph come from one thread at a time; a graph may be released before or
   after its context is destroyed (gpuos_destroy).
   A node of a run-time operator runs the operator's current version.

   Fusion: a launch runs a matmul (2-D output, no batch axes)
   and the element-wise nodes right after it that work in place on its output as ONE task:
   add, sub, mul, maximum, minimum with a tensor of another allocation broadcast to the
   output (a bias row, a residual), and relu, gelu, gelu_tanh, silu, sigmoid, tanh, up to 4
   of them. Each is applied as the output is stored and rounded to the dtype as its own
   task would round it, so results are bit for bit those of the separate tasks (the tests
   check it; a NaN's sign and payload aside, which follow the compiler's operand order: a
   helper's fuzzing saw add and mul of two NaNs keep the other one); only fewer tasks run (tiny_mlp in bench/). A layernorm (no weight or bias)
   right before such a matmul that reads its output joins the same task as its prologue
   where the GPU can run it bit for bit the same: f32, at most 8 rows of 203 to 512
   elements (and K <= 8 ceil(N / 8) for the product's N outputs), the layernorm's input and
   output in storages of their own.
   GPUOS_GRAPH_FUSE=0 turns it off; gpuos_debug_graph_tasks says how many tasks a launch
   queues. */
typedef struct gpuos_graph gpuos_graph;

typedef struct gpuos_graph_bind {
    const gpuos_tensor *recorded; /* a tensor given to gpuos_graph_add (the same handle, still held) */
    gpuos_tensor *actual;         /* used instead, in this launch */
} gpuos_graph_bind;

typedef struct gpuos_graph_scalar {
    int node;     /* as returned by gpuos_graph_add */
    int index;    /* gpuos_task.scalar[index], 0 or 1 */
    double value;
} gpuos_graph_scalar;

GPUOS_API gpuos_status gpuos_graph_create(gpuos_context *ctx, gpuos_graph **graph);
/* Validates task and appends it; *node (may be NULL) receives its index (0, 1, ...). */
GPUOS_API gpuos_status gpuos_graph_add(gpuos_graph *graph, const gpuos_task *task, int *node);
/* Node `after` runs after node `before`, whatever their recorded order (recorded order is
   the default). A dependency that closes a cycle is refused (GPUOS_ERR_INVALID_ARGUMENT).
   Only the nodes a dependency has to move move: every other pair of nodes that share memory
   (one of them writing it) keeps its recorded order. Where the recorded order contradicts a
   dependency, the node it holds back (`after`, and what must follow it) waits, and the nodes
   in between keep their recorded order and run ahead of it: recorded 0: a = 1, 1: a = 2,
   2: o = a, a dependency 2 -> 0 runs 1, 2, 0 (o = 2, then a = 1). Memory is then ordered in
   the order the nodes run: a node moved before another node that writes what it reads sees
   what was there before that writer, not the writer's result. */
GPUOS_API gpuos_status gpuos_graph_add_dep(gpuos_graph *graph, int before, int after);
/* Queues every node once; *seq (may be NULL) is the last one's sequence number (a fence
   for the whole launch). Bindings and scalars are checked before anything is queued
   (a binding of another dtype: GPUOS_ERR_DTYPE_MISMATCH; of another shape or strides:
   GPUOS_ERR_SHAPE_MISMATCH; negative counts, a scalar the node's operator does not read
   (only fill, arange, layernorm, rmsnorm and run-time operators read any), or a tensor bound
   or a scalar set twice in one launch: GPUOS_ERR_INVALID_ARGUMENT). If the queue
   stays full part of the way through a launch (GPUOS_ERR_QUEUE_FULL), the nodes before that
   point stay queued and run; gpuos_last_error says how many. On a GPU another context's
   kernel holds, a launch that must start this context's kernel waits for its turn (up to
   wait_timeout_ms: GPUOS_ERR_TIMEOUT, nothing queued); other threads' calls on the context
   go on meanwhile. */
GPUOS_API gpuos_status gpuos_graph_launch(gpuos_graph *graph, const gpuos_graph_bind *binds, int n_binds,
                                          const gpuos_graph_scalar *scalars, int n_scalars, uint64_t *seq);
/* The priority of the graph's later launches (GPUOS_PRIORITY_NORMAL by default; the
   recorded tasks' own priority fields are not used). A launch runs in one lane: at high
   priority only if none of its nodes must wait for earlier normal work (else the whole
   launch runs at normal priority, in order). A launch's seq then works with
   gpuos_wait_task: the last node finishes after every other node of the launch. */
GPUOS_API gpuos_status gpuos_graph_set_priority(gpuos_graph *graph, int priority);
/* The deadline of the graph's later launches: each launch should finish within
   deadline_us of the gpuos_graph_launch call (0: none, the default). Counted once per
   launch in gpuos_deadline_stats. */
GPUOS_API gpuos_status gpuos_graph_set_deadline(gpuos_graph *graph, uint32_t deadline_us);
/* Number of nodes. */
GPUOS_API int gpuos_graph_size(const gpuos_graph *graph);
/* Diagnostics: the tasks the last launch queued (its nodes less those fused into a matmul;
   0 before any launch). -1 for NULL. */
GPUOS_API int gpuos_debug_graph_tasks(gpuos_graph *graph);
/* NULL is allowed. Launched work keeps running. */
GPUOS_API void gpuos_graph_release(gpuos_graph *graph);

/* ---------------------------------------------------------------- run-time operators */
/* Operators defined while the program runs, from CUDA source, then submitted like any
   built-in one (gpuos_task.op = the handle; scalar[0], scalar[1] are the scalars).

   GPUOS_OPDEF_ELEMENTWISE: source is a body of C/CUDA statements run once per output
     element: it reads the inputs (named in_names[k], default "a", "b", "c") and the
     scalars (scalar_names[k], default "s0", "s1"; double), and assigns the output
     (out_name, default "out", which starts at the output type's zero: a body that never
     assigns it writes 0, on either executor). Names are identifiers, distinct, not starting
     with gpuos or __, not NULL and not one of the constants below (INT_MAX, M_PI ...). Inputs broadcast to the output's shape as for built-in
     element-wise operators; any strides and views; in place allowed. f16 and bf16 values
     are float in the body; bool is bool; integers are the <stdint.h> types. Example:
       def.source = "float t = a * s0 + b; out = t > 0.f ? t : 0.f;";
     On a GPU it is compiled with NVRTC and linked into the run-time module, whose kernel
     runs beside the persistent one (one worker block per 8 multiprocessors while run-time
     operators exist; GPUOS_CUDA_RT_WORKERS sets the count); on the host
     executor it is interpreted (a C subset: declarations, if/else, for/while, the usual
     operators, math functions such as sinf, expf, fminf; the language, its constants
     (INT_MIN, UINT_MAX, LLONG_MAX, INT32_MIN, UINT64_MAX, FLT_MAX ...) and the results it defines
     where C leaves them undefined are in the comment at the top of src/expr.c (in gpuos.c:
     "the interpreter of element-wise bodies"); device intrinsics such as __ldg are GPU
     only; loops that run more than 1048576
     iterations in all for one element, or more than 2^28 instructions of their bodies
     (about a second), stop the run and fail the context with GPUOS_ERR_DEVICE_LOST).
   GPUOS_OPDEF_FUNCTION: source defines `__device__ void <name>(const gpuos_tile &t)`,
     called by every thread of a 256-thread block for the items [t.begin, t.end) of one
     tile (flat row-major indices of the output); t.ptr(q, i) is operand q's address at item
     i (q = 0: out, 1..: inputs), t.s0, t.s1 the scalars; __syncthreads() is allowed where
     every thread reaches it. GPU only: the host executor returns GPUOS_ERR_UNSUPPORTED.
     A function whose static shared memory exceeds the persistent kernel's (~25 KB) is
     refused with GPUOS_ERR_UNSUPPORTED (its blocks must fit where the kernel's do).
     Each definition's source is compiled in a namespace of its own, so helpers and
     __device__ variables of one name in several operators (or in an operator's versions
     still running) are distinct. extern "C" names are not: a definition whose extern "C"
     name another version in use also defines fails with GPUOS_ERR_COMPILE; the version a
     redefinition replaces is still in use then, so an operator whose source defines one
     cannot be redefined (remove it and define it anew, or avoid extern "C").

   Compiling does not stop the running system: other threads keep submitting and queued
   work keeps running; the new code joins at a task boundary, and nothing queued is lost,
   reordered or run twice. A compile error returns GPUOS_ERR_COMPILE with the compiler's log
   in gpuos_last_error and changes nothing. Results are cached on disk (cache_dir). */
typedef enum gpuos_opdef_kind { GPUOS_OPDEF_ELEMENTWISE = 0, GPUOS_OPDEF_FUNCTION = 1 } gpuos_opdef_kind;

#define GPUOS_MAX_RUNTIME_OPS 64     /* defined at once, per context (one more: GPUOS_ERR_OUT_OF_MEMORY) */
#define GPUOS_RUNTIME_MAX_INPUTS 3
#define GPUOS_OP_RUNTIME_BASE 0x10000 /* handles are GPUOS_OP_RUNTIME_BASE + n */

typedef struct gpuos_op_def {
    size_t struct_size;           /* sizeof(gpuos_op_def), set by GPUOS_OP_DEF_INIT */
    const char *name;             /* required: an identifier, for messages (FUNCTION: the function's name) */
    gpuos_opdef_kind kind;
    const char *source;           /* the body or the function's source; copied */
    int n_inputs;                 /* 0 .. GPUOS_RUNTIME_MAX_INPUTS */
    gpuos_dtype out_dtype;
    gpuos_dtype in_dtype[GPUOS_RUNTIME_MAX_INPUTS];
    int n_scalars;                /* 0 .. 2: gpuos_task.scalar[0..n_scalars) */
    const char *out_name;         /* ELEMENTWISE names; NULL: the defaults */
    const char *in_names[GPUOS_RUNTIME_MAX_INPUTS];
    const char *scalar_names[2];
} gpuos_op_def;

#define GPUOS_OP_DEF_INIT                                                                      \
    { sizeof(gpuos_op_def), NULL, GPUOS_OPDEF_ELEMENTWISE, NULL, 0, GPUOS_F32,                  \
      { GPUOS_F32, GPUOS_F32, GPUOS_F32 }, 0, NULL, { NULL, NULL, NULL }, { NULL, NULL } }

/* Defines an operator; *op receives its handle. Blocks the calling thread while it
   compiles (NVRTC on a GPU: about a second cold, milliseconds from the disk cache). */
GPUOS_API gpuos_status gpuos_op_define(gpuos_context *ctx, const gpuos_op_def *def, gpuos_op *op);
/* Replaces op's code (same handle; the signature may change). Tasks submitted before it
   returns run the old code, tasks after it the new: each operator has two code slots, and
   an old one is reused only once no queued task refers to it (a redefinition waits up to
   wait_timeout_ms for the one before last to drain: GPUOS_ERR_TIMEOUT). */
GPUOS_API gpuos_status gpuos_op_redefine(gpuos_context *ctx, gpuos_op op, const gpuos_op_def *def);
/* Removes op: later submissions get GPUOS_ERR_UNKNOWN_OP; queued tasks still run. A later
   definition gets another handle, so op stays unknown (handles repeat only after 2^24
   removals of the same definition slot). */
GPUOS_API gpuos_status gpuos_op_remove(gpuos_context *ctx, gpuos_op op);
/* Diagnostics (benchmarks): the last definition's NVRTC time, nvJitLink time and module swap
   pause in ms (0 for what came from the disk cache, and on the host executor). */
GPUOS_API void gpuos_debug_rt_times(gpuos_context *ctx, double *compile_ms, double *link_ms, double *swap_ms);
/* Diagnostics (benchmarks): how gpuos_create compiled the device code on a GPU: the NVRTC
   programs it was split into (compiled on as many threads; 0: one whole program), the time
   until linked (ms), the slowest program's NVRTC time and the nvJitLink time. Times are 0
   when the code came from the disk cache, and everything on the host executor. */
GPUOS_API void gpuos_debug_compile_times(gpuos_context *ctx, int *programs, double *compile_ms, double *slowest_ms,
                                         double *link_ms);
/* Diagnostics (benchmarks): where gpuos_create's time went on a GPU, in ms: the driver's
   initialisation (cuInit), the device's context, the device code (compiled or read from the
   disk cache, loaded, kernel set up), and the rest (streams, queue memory, threads). All 0
   on the host executor. */
GPUOS_API void gpuos_debug_create_times(gpuos_context *ctx, double *driver_ms, double *context_ms, double *code_ms,
                                        double *rest_ms);
/* Diagnostics (tests, benchmarks): express tasks on a GPU (on unless
   GPUOS_CUDA_EXPRESS=0: a small task sent while nothing else is in flight, and the one right
   behind it, run whole on one worker that polls a mailbox for them, skipping the queue's
   stages: docs/ARCHITECTURE.md), as sent, and as run by that worker from its mailbox (the
   others took the ordinary path). 0 on the host executor. */
GPUOS_API void gpuos_debug_express(gpuos_context *ctx, uint64_t *sent, uint64_t *by_worker);

/* Reductions: axes is a list of n_axes axes (negative from the end); axes NULL
   means every axis. Helpers convert it to gpuos_task.axes. */

/* ---------------------------------------------------------------- convenience functions */
/* BEGIN GENERATED gpuos.h convenience (gen/gen.py; run `make gen`) */
/* generated by gen/gen.py from gen/ops.py and templates/gpuos_h_api.j2; do not edit; run `make gen` */

/* unary element-wise */
/* -a (unsigned wraps) */
GPUOS_API gpuos_status gpuos_neg(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* |a| (INT_MIN stays INT_MIN) */
GPUOS_API gpuos_status gpuos_abs(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* -1, 0 or 1 (NaN gives NaN) */
GPUOS_API gpuos_status gpuos_sign(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* square root */
GPUOS_API gpuos_status gpuos_sqrt(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* 1/sqrt(a) */
GPUOS_API gpuos_status gpuos_rsqrt(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* e^a */
GPUOS_API gpuos_status gpuos_exp(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* 2^a */
GPUOS_API gpuos_status gpuos_exp2(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* natural logarithm */
GPUOS_API gpuos_status gpuos_log(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* base-2 logarithm */
GPUOS_API gpuos_status gpuos_log2(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* log(1 + a) */
GPUOS_API gpuos_status gpuos_log1p(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* exp(a) - 1 */
GPUOS_API gpuos_status gpuos_expm1(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* sine */
GPUOS_API gpuos_status gpuos_sin(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* cosine */
GPUOS_API gpuos_status gpuos_cos(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* tangent */
GPUOS_API gpuos_status gpuos_tan(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* hyperbolic tangent */
GPUOS_API gpuos_status gpuos_tanh(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* 1/(1+exp(-a)) */
GPUOS_API gpuos_status gpuos_sigmoid(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* a > 0 ? a : 0 (NaN gives NaN) */
GPUOS_API gpuos_status gpuos_relu(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* 0.5 a (1 + erf(a/sqrt 2)) */
GPUOS_API gpuos_status gpuos_gelu(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* 0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3))) */
GPUOS_API gpuos_status gpuos_gelu_tanh(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* a * sigmoid(a) */
GPUOS_API gpuos_status gpuos_silu(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* round down */
GPUOS_API gpuos_status gpuos_floor(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* round up */
GPUOS_API gpuos_status gpuos_ceil(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* round to nearest, ties to even */
GPUOS_API gpuos_status gpuos_round(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* round toward zero */
GPUOS_API gpuos_status gpuos_trunc(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* 1/a */
GPUOS_API gpuos_status gpuos_reciprocal(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* a*a (integers wrap) */
GPUOS_API gpuos_status gpuos_square(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* a == 0 */
GPUOS_API gpuos_status gpuos_logical_not(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* ~a (bool: !a) */
GPUOS_API gpuos_status gpuos_bitwise_not(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* a is NaN */
GPUOS_API gpuos_status gpuos_isnan(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* a is +inf or -inf */
GPUOS_API gpuos_status gpuos_isinf(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* a is neither inf nor NaN */
GPUOS_API gpuos_status gpuos_isfinite(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);

/* binary element-wise */
/* a+b */
GPUOS_API gpuos_status gpuos_add(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                 gpuos_tensor *b);
/* a-b */
GPUOS_API gpuos_status gpuos_sub(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                 gpuos_tensor *b);
/* a*b */
GPUOS_API gpuos_status gpuos_mul(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                 gpuos_tensor *b);
/* a/b (integers: toward zero, b == 0 gives 0) */
GPUOS_API gpuos_status gpuos_div(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                 gpuos_tensor *b);
/* floor(a/b) (integers: b == 0 gives 0) */
GPUOS_API gpuos_status gpuos_floordiv(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                      gpuos_tensor *b);
/* remainder with the sign of b (integers: b == 0 gives 0) */
GPUOS_API gpuos_status gpuos_mod(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                 gpuos_tensor *b);
/* a^b (integers: exact, wrapping; b < 0 gives 0 unless |a| == 1) */
GPUOS_API gpuos_status gpuos_pow(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                 gpuos_tensor *b);
/* atan2(a, b) */
GPUOS_API gpuos_status gpuos_atan2(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                   gpuos_tensor *b);
/* element-wise minimum (NaN if either is NaN) */
GPUOS_API gpuos_status gpuos_minimum(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                     gpuos_tensor *b);
/* element-wise maximum (NaN if either is NaN) */
GPUOS_API gpuos_status gpuos_maximum(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                     gpuos_tensor *b);
/* a == b */
GPUOS_API gpuos_status gpuos_eq(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                gpuos_tensor *b);
/* a != b */
GPUOS_API gpuos_status gpuos_ne(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                gpuos_tensor *b);
/* a < b */
GPUOS_API gpuos_status gpuos_lt(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                gpuos_tensor *b);
/* a <= b */
GPUOS_API gpuos_status gpuos_le(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                gpuos_tensor *b);
/* a > b */
GPUOS_API gpuos_status gpuos_gt(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                gpuos_tensor *b);
/* a >= b */
GPUOS_API gpuos_status gpuos_ge(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                gpuos_tensor *b);
/* (a != 0) && (b != 0) */
GPUOS_API gpuos_status gpuos_logical_and(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                         gpuos_tensor *b);
/* (a != 0) || (b != 0) */
GPUOS_API gpuos_status gpuos_logical_or(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                        gpuos_tensor *b);
/* (a != 0) != (b != 0) */
GPUOS_API gpuos_status gpuos_logical_xor(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                         gpuos_tensor *b);
/* a & b */
GPUOS_API gpuos_status gpuos_bitwise_and(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                         gpuos_tensor *b);
/* a | b */
GPUOS_API gpuos_status gpuos_bitwise_or(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                        gpuos_tensor *b);
/* a ^ b */
GPUOS_API gpuos_status gpuos_bitwise_xor(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                         gpuos_tensor *b);
/* a << b (b < 0 or b >= bits gives 0) */
GPUOS_API gpuos_status gpuos_shift_left(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                        gpuos_tensor *b);
/* a >> b, arithmetic for signed (b out of range: 0 or -1) */
GPUOS_API gpuos_status gpuos_shift_right(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                         gpuos_tensor *b);

/* ternary element-wise */
/* cond ? a : b (cond is bool) */
GPUOS_API gpuos_status gpuos_where(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *cond,
                                   gpuos_tensor *a, gpuos_tensor *b);
/* min(max(x, lo), hi), NaN propagating */
GPUOS_API gpuos_status gpuos_clamp(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *x,
                                   gpuos_tensor *lo, gpuos_tensor *hi);
/* a + w*(b-a), fused: fma(w, b-a, a) */
GPUOS_API gpuos_status gpuos_lerp(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                  gpuos_tensor *b, gpuos_tensor *w);
/* a*b + c (floats: fused; integers wrap) */
GPUOS_API gpuos_status gpuos_fma(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                 gpuos_tensor *b, gpuos_tensor *c);

/* other element-wise */
/* a converted to out's dtype */
GPUOS_API gpuos_status gpuos_cast(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* a broadcast to out's shape */
GPUOS_API gpuos_status gpuos_copy(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a);
/* every element = value (converted as a cast from f64) */
GPUOS_API gpuos_status gpuos_fill(gpuos_context *ctx, gpuos_tensor *out, double value);
/* element i (row-major) = start + i*step, in f64, then cast */
GPUOS_API gpuos_status gpuos_arange(gpuos_context *ctx, gpuos_tensor *out, double start,
                                    double step);

/* reductions */
/* sum (integers wrap); axes NULL: all */
GPUOS_API gpuos_status gpuos_sum(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                 const int *axes, int n_axes, int keepdim);
/* product (integers wrap); axes NULL: all */
GPUOS_API gpuos_status gpuos_prod(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                  const int *axes, int n_axes, int keepdim);
/* sum / N (NaN over zero elements); axes NULL: all */
GPUOS_API gpuos_status gpuos_mean(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                  const int *axes, int n_axes, int keepdim);
/* minimum (NaN propagates); axes NULL: all */
GPUOS_API gpuos_status gpuos_min(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                 const int *axes, int n_axes, int keepdim);
/* maximum (NaN propagates); axes NULL: all */
GPUOS_API gpuos_status gpuos_max(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                 const int *axes, int n_axes, int keepdim);
/* flat index of the first minimum (first NaN); axes NULL: all */
GPUOS_API gpuos_status gpuos_argmin(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                    const int *axes, int n_axes, int keepdim);
/* flat index of the first maximum (first NaN); axes NULL: all */
GPUOS_API gpuos_status gpuos_argmax(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                    const int *axes, int n_axes, int keepdim);
/* any element != 0; axes NULL: all */
GPUOS_API gpuos_status gpuos_any(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                 const int *axes, int n_axes, int keepdim);
/* every element != 0; axes NULL: all */
GPUOS_API gpuos_status gpuos_all(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                 const int *axes, int n_axes, int keepdim);
/* sqrt(sum a^2); axes NULL: all */
GPUOS_API gpuos_status gpuos_norm2(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                   const int *axes, int n_axes, int keepdim);
/* sum (a - mean)^2 / (N - correction); axes NULL: all */
GPUOS_API gpuos_status gpuos_var(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                 const int *axes, int n_axes, int keepdim, int correction);
/* sqrt(var); axes NULL: all */
GPUOS_API gpuos_status gpuos_std(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                 const int *axes, int n_axes, int keepdim, int correction);

/* matrix, row-wise, normalisation */
/* NumPy matmul (batch axes broadcast) */
GPUOS_API gpuos_status gpuos_matmul(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                    gpuos_tensor *b);
/* exp(a - max) / sum along axis */
GPUOS_API gpuos_status gpuos_softmax(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                     int axis);
/* a - max - log(sum exp(a - max)) along axis */
GPUOS_API gpuos_status gpuos_log_softmax(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *a,
                                         int axis);
/* (x - mean) / sqrt(var + eps) * weight + bias over the last axis; weight and bias may be NULL */
GPUOS_API gpuos_status gpuos_layernorm(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *x,
                                       gpuos_tensor *weight, gpuos_tensor *bias, double eps);
/* x / sqrt(mean(x^2) + eps) * weight over the last axis; weight may be NULL */
GPUOS_API gpuos_status gpuos_rmsnorm(gpuos_context *ctx, gpuos_tensor *out, gpuos_tensor *x,
                                     gpuos_tensor *weight, double eps);
/* END GENERATED gpuos.h convenience */

/* ---------------------------------------------------------------- tools and tests */
/* Compiles the generated device code with NVRTC for compute capability
   arch_major.arch_minor (no GPU needed, NVRTC is loaded at run time). On failure the
   log is copied into log (log_size bytes, may be 0). GPUOS_ERR_UNSUPPORTED if NVRTC
   cannot be loaded. */
GPUOS_API gpuos_status gpuos_compile_device_code(int arch_major, int arch_minor, char *log, size_t log_size);
/* Test hook: while paused, the executor takes no new tasks from the queue (so that
   tests can fill it). Returns the previous state. */
GPUOS_API int gpuos_debug_pause(gpuos_context *ctx, int paused);

#ifdef __cplusplus
}
#endif
#endif /* GPUOS_H */
