/* test_header.c - gpuos.h is strict C99 (built with -std=c99 -Wall -Wextra -Werror -pedantic), its
   ABI constants are those of docs/OPERATORS.md, and a program built against it links and runs
   (through a generated convenience function) on $GPUOS_TEST_DEVICE (default: the host executor). */
#include "gpuos.h"
#include "gpuos.h" /* the include guard works */

#include <stddef.h> /* offsetof */
#include <string.h> /* strcmp, strncmp */

#include "ctest.h"

/* Every operator in the order of docs/OPERATORS.md: the id is the position. */
static const gpuos_op ops[] = {
    GPUOS_OP_NEG, GPUOS_OP_ABS, GPUOS_OP_SIGN, GPUOS_OP_SQRT, GPUOS_OP_RSQRT, GPUOS_OP_EXP, GPUOS_OP_EXP2,
    GPUOS_OP_LOG, GPUOS_OP_LOG2, GPUOS_OP_LOG1P, GPUOS_OP_EXPM1, GPUOS_OP_SIN, GPUOS_OP_COS, GPUOS_OP_TAN,
    GPUOS_OP_TANH, GPUOS_OP_SIGMOID, GPUOS_OP_RELU, GPUOS_OP_GELU, GPUOS_OP_GELU_TANH, GPUOS_OP_SILU,
    GPUOS_OP_FLOOR, GPUOS_OP_CEIL, GPUOS_OP_ROUND, GPUOS_OP_TRUNC, GPUOS_OP_RECIPROCAL, GPUOS_OP_SQUARE,
    GPUOS_OP_LOGICAL_NOT, GPUOS_OP_BITWISE_NOT, GPUOS_OP_ISNAN, GPUOS_OP_ISINF, GPUOS_OP_ISFINITE,
    GPUOS_OP_ADD, GPUOS_OP_SUB, GPUOS_OP_MUL, GPUOS_OP_DIV, GPUOS_OP_FLOORDIV, GPUOS_OP_MOD, GPUOS_OP_POW,
    GPUOS_OP_ATAN2, GPUOS_OP_MINIMUM, GPUOS_OP_MAXIMUM, GPUOS_OP_EQ, GPUOS_OP_NE, GPUOS_OP_LT, GPUOS_OP_LE,
    GPUOS_OP_GT, GPUOS_OP_GE, GPUOS_OP_LOGICAL_AND, GPUOS_OP_LOGICAL_OR, GPUOS_OP_LOGICAL_XOR,
    GPUOS_OP_BITWISE_AND, GPUOS_OP_BITWISE_OR, GPUOS_OP_BITWISE_XOR, GPUOS_OP_SHIFT_LEFT,
    GPUOS_OP_SHIFT_RIGHT, GPUOS_OP_WHERE, GPUOS_OP_CLAMP, GPUOS_OP_LERP, GPUOS_OP_FMA, GPUOS_OP_CAST,
    GPUOS_OP_COPY, GPUOS_OP_FILL, GPUOS_OP_ARANGE, GPUOS_OP_SUM, GPUOS_OP_PROD, GPUOS_OP_MEAN, GPUOS_OP_MIN,
    GPUOS_OP_MAX, GPUOS_OP_ARGMIN, GPUOS_OP_ARGMAX, GPUOS_OP_ANY, GPUOS_OP_ALL, GPUOS_OP_NORM2, GPUOS_OP_VAR,
    GPUOS_OP_STD, GPUOS_OP_MATMUL, GPUOS_OP_SOFTMAX, GPUOS_OP_LOG_SOFTMAX, GPUOS_OP_LAYERNORM,
    GPUOS_OP_RMSNORM,
};
static const char *const op_names[] = {
    "neg", "abs", "sign", "sqrt", "rsqrt", "exp", "exp2", "log", "log2", "log1p", "expm1", "sin",
    "cos", "tan", "tanh", "sigmoid", "relu", "gelu", "gelu_tanh", "silu", "floor", "ceil", "round",
    "trunc", "reciprocal", "square", "logical_not", "bitwise_not", "isnan", "isinf", "isfinite",
    "add", "sub", "mul", "div", "floordiv", "mod", "pow", "atan2", "minimum", "maximum", "eq", "ne",
    "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
    "bitwise_xor", "shift_left", "shift_right", "where", "clamp", "lerp", "fma", "cast", "copy",
    "fill", "arange", "sum", "prod", "mean", "min", "max", "argmin", "argmax", "any", "all",
    "norm2", "var", "std", "matmul", "softmax", "log_softmax", "layernorm", "rmsnorm",
};
/* Every dtype, pinned by hand on purpose (the ABI check): a dtype added to gen/ops.py is added
   here too, with GPUOS_DTYPE_COUNT below (README, "adding a dtype"). */
static const gpuos_dtype dtypes[] = {GPUOS_BOOL, GPUOS_I8,   GPUOS_U8,  GPUOS_I16, GPUOS_I32,
                                     GPUOS_I64,  GPUOS_F16,  GPUOS_BF16, GPUOS_F32, GPUOS_F64};
static const char *const dtype_names[] = {"bool", "i8", "u8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"};
static const size_t dtype_sizes[] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};

int main(void) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_task task = GPUOS_TASK_INIT;
    gpuos_context *ctx = NULL;
    gpuos_tensor *a = NULL, *b = NULL, *c = NULL;
    int64_t shape[2] = {2, 3};
    float ha[6] = {1, 2, 3, 4, 5, 6}, hb[6] = {10, 20, 30, 40, 50, 60}, hc[6] = {0};
    gpuos_status st;
    size_t i;

    /* status codes: fixed values */
    CHECK(GPUOS_OK == 0 && GPUOS_ERR_INVALID_ARGUMENT == 1 && GPUOS_ERR_SHAPE_MISMATCH == 3, "status values");
    CHECK(GPUOS_ERR_QUEUE_FULL == 10 && GPUOS_ERR_NOT_VIEWABLE == 17 && GPUOS_ERR_INTERNAL == 22, "status values");
    /* dtypes and operators: ids of docs/OPERATORS.md */
    CHECK(GPUOS_DTYPE_COUNT == 10, "GPUOS_DTYPE_COUNT = %d", (int)GPUOS_DTYPE_COUNT);
    CHECK(GPUOS_OP_COUNT == 80, "GPUOS_OP_COUNT = %d", (int)GPUOS_OP_COUNT);
    CHECK(sizeof ops / sizeof ops[0] == 80 && sizeof op_names / sizeof op_names[0] == 80, "op table");
    for (i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        const char *name = gpuos_op_name(ops[i]);
        CHECK((size_t)ops[i] == i, "op %s has id %d, expected %d", op_names[i], (int)ops[i], (int)i);
        CHECK(name != NULL && strcmp(name, op_names[i]) == 0, "gpuos_op_name(%d) = %s, expected %s", (int)i,
              name ? name : "NULL", op_names[i]);
        CHECK(gpuos_op_from_name(op_names[i]) == ops[i], "gpuos_op_from_name(%s)", op_names[i]);
    }
    CHECK(gpuos_op_name(GPUOS_OP_COUNT) == NULL, "gpuos_op_name(GPUOS_OP_COUNT) is not NULL");
    CHECK(gpuos_op_from_name("no_such_op") == GPUOS_OP_COUNT, "gpuos_op_from_name of an unknown name");
    for (i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
        const char *name = gpuos_dtype_name(dtypes[i]);
        CHECK((size_t)dtypes[i] == i, "dtype %s has id %d", dtype_names[i], (int)dtypes[i]);
        CHECK(name != NULL && strcmp(name, dtype_names[i]) == 0, "gpuos_dtype_name(%d) = %s", (int)i,
              name ? name : "NULL");
        CHECK(gpuos_dtype_size(dtypes[i]) == dtype_sizes[i], "gpuos_dtype_size(%s) = %d", dtype_names[i],
              (int)gpuos_dtype_size(dtypes[i]));
    }
    CHECK(gpuos_dtype_name(GPUOS_DTYPE_COUNT) == NULL && gpuos_dtype_size(GPUOS_DTYPE_COUNT) == 0,
          "unknown dtype has a name or a size");

    /* initializers and version */
    CHECK(gpuos_version() == GPUOS_VERSION_NUMBER, "library %d, header %d", gpuos_version(), GPUOS_VERSION_NUMBER);
    CHECK(cfg.struct_size == sizeof(gpuos_config) && cfg.api_version == GPUOS_VERSION_NUMBER, "GPUOS_CONFIG_INIT");
    CHECK(cfg.device == GPUOS_DEVICE_AUTO && cfg.queue_capacity == 4096u, "GPUOS_CONFIG_INIT defaults");
    CHECK(task.struct_size == sizeof(gpuos_task) && task.op == GPUOS_OP_COUNT && task.axes == GPUOS_AXES_ALL &&
              task.axis == -1 && task.out == NULL && task.in[3] == NULL,
          "GPUOS_TASK_INIT");
    /* the layout tests/gpuos_ctypes.py mirrors (LP64) */
    if (sizeof(void *) == 8) {
        CHECK(sizeof(gpuos_task) == 96 && offsetof(gpuos_task, scalar) == 56 && offsetof(gpuos_task, correction) == 84 &&
                  offsetof(gpuos_task, priority) == 88,
              "gpuos_task layout: size %d", (int)sizeof(gpuos_task));
        CHECK(sizeof(gpuos_config) == 48 && offsetof(gpuos_config, cache_dir) == 32, "gpuos_config layout: size %d",
              (int)sizeof(gpuos_config));
        CHECK(sizeof(gpuos_tensor_info) == 160, "gpuos_tensor_info size %d", (int)sizeof(gpuos_tensor_info));
    }
    CHECK(strncmp(gpuos_status_string(GPUOS_ERR_SHAPE_MISMATCH), "GPUOS_ERR_SHAPE_MISMATCH", 24) == 0,
          "gpuos_status_string: %s", gpuos_status_string(GPUOS_ERR_SHAPE_MISMATCH));

    /* a program built against the header runs: c = a + b on the host executor */
    cfg.device = ctest_device();
    st = gpuos_create(&cfg, &ctx);
    CHECK(st == GPUOS_OK, "gpuos_create: %s %s", gpuos_status_string(st), gpuos_last_error(NULL));
    if (st == GPUOS_OK) {
        if (cfg.device == GPUOS_DEVICE_HOST) CHECK(gpuos_context_backend(ctx) == GPUOS_BACKEND_HOST, "backend");
        CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 2, shape, &a) == GPUOS_OK, "new a");
        CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 2, shape, &b) == GPUOS_OK, "new b");
        CHECK(gpuos_tensor_new(ctx, GPUOS_F32, 2, shape, &c) == GPUOS_OK, "new c");
        CHECK(gpuos_upload(ctx, a, ha, sizeof ha) == GPUOS_OK, "upload a");
        CHECK(gpuos_upload(ctx, b, hb, sizeof hb) == GPUOS_OK, "upload b");
        st = gpuos_add(ctx, c, a, b);
        CHECK(st == GPUOS_OK, "gpuos_add: %s %s", gpuos_status_string(st), gpuos_last_error(ctx));
        task.op = GPUOS_OP_MUL;
        task.out = c;
        task.in[0] = c;
        task.in[1] = b;
        st = gpuos_submit(ctx, &task, NULL);
        CHECK(st == GPUOS_OK, "gpuos_submit: %s %s", gpuos_status_string(st), gpuos_last_error(ctx));
        CHECK(gpuos_download(ctx, c, hc, sizeof hc) == GPUOS_OK, "download");
        for (i = 0; i < 6; i++)
            CHECK(hc[i] == (ha[i] + hb[i]) * hb[i], "c[%d] = %g, expected %g", (int)i, hc[i], (ha[i] + hb[i]) * hb[i]);
        gpuos_tensor_release(a);
        gpuos_tensor_release(b);
        gpuos_tensor_release(c);
        CHECK(gpuos_wait(ctx, 1000) == GPUOS_OK, "wait");
        gpuos_destroy(ctx);
    }
    gpuos_destroy(NULL);
    gpuos_tensor_release(NULL);
    return ctest_summary("test_header_c");
}
