/* gpuos_plan.h - plain-data plans of tasks, shared by host C code and device CUDA code.

   The runtime (src/plan.c) validates a task at submission and turns it into one of
   these plans: pointers already offset, broadcasting turned into 0 strides, reduced
   axes separated from kept ones, strides in BYTES. Generated kernels (host C in
   src/generated/host_ops.c, device CUDA in src/generated/device_ops.cu) consume them.
   The same text is compiled by a C99 compiler and by NVRTC, so it uses only fixed
   width integer types the two agree on (the device prelude defines int64_t etc.).

   Every kernel takes a range of work items, so an executor can split a task over
   threads (host) or tiles (device):
     element-wise  items = flat row-major output indices      [0, numel)
     reduce        items = output elements (outer indices)    [0, outer_numel)
     rows          items = rows                               [0, outer_numel)
     matmul        items = output rows over the batch         [0, batch_numel * M)
*/
#ifndef GPUOS_PLAN_H
#define GPUOS_PLAN_H

#define GPUOS__MAX_RANK 8
#define GPUOS__MAX_PTR 5 /* out + GPUOS_MAX_INPUTS inputs */

/* Element-wise (unary, binary, ternary, where, cast, copy, fill, arange).
   ptr[0] is the output, ptr[1..n_ptr-1] the inputs in op order. All operands have
   been broadcast to the output shape (stride 0 where broadcast) and adjacent
   dimensions merged where every operand allows it, so rank is often 1. The merge
   keeps row-major order, so item i is the output's flat row-major index i. */
typedef struct gpuos__ew_plan {
    int32_t rank;   /* 0 .. 8 after merging */
    int32_t n_ptr;  /* 1 + number of inputs */
    int64_t numel;
    int64_t shape[GPUOS__MAX_RANK];
    int64_t stride[GPUOS__MAX_PTR][GPUOS__MAX_RANK]; /* bytes */
    char *ptr[GPUOS__MAX_PTR];
    double scalar[2]; /* fill: value; arange: start, step */
} gpuos__ew_plan;

/* Reductions. The input's axes are split into outer (kept, in order) and inner
   (reduced, in increasing axis order). Output element o (row-major over outer_shape)
   is at out + sum(idx_k * outer_out_stride[k]); it reduces the inner_numel input
   elements at in + sum(idx_k * outer_in_stride[k]) + sum(jdx_l * inner_in_stride[l]),
   visited in row-major order of inner_shape (argmin/argmax report that flat index). */
typedef struct gpuos__reduce_plan {
    int32_t outer_rank;
    int32_t inner_rank;
    int64_t outer_numel;
    int64_t inner_numel;
    int64_t outer_shape[GPUOS__MAX_RANK];
    int64_t outer_in_stride[GPUOS__MAX_RANK];  /* bytes */
    int64_t outer_out_stride[GPUOS__MAX_RANK]; /* bytes */
    int64_t inner_shape[GPUOS__MAX_RANK];
    int64_t inner_in_stride[GPUOS__MAX_RANK];  /* bytes */
    char *out;
    const char *in;
    int32_t correction; /* var, std */
    int32_t pad_;
} gpuos__reduce_plan;

/* Row-wise operators (softmax, log_softmax along an axis; layernorm, rmsnorm along
   the last axis). Row r (row-major over outer_shape) has n elements at
   in + sum(idx_k * outer_in_stride[k]) + j * in_stride, written likewise to out. */
typedef struct gpuos__rows_plan {
    int32_t outer_rank;
    int32_t pad_;
    int64_t outer_numel;
    int64_t outer_shape[GPUOS__MAX_RANK];
    int64_t outer_in_stride[GPUOS__MAX_RANK];  /* bytes */
    int64_t outer_out_stride[GPUOS__MAX_RANK]; /* bytes */
    int64_t n;
    int64_t in_stride;  /* bytes */
    int64_t out_stride; /* bytes */
    char *out;
    const char *in;
    const char *weight; /* NULL when absent; n elements at weight_stride */
    int64_t weight_stride;
    const char *bias;   /* NULL when absent */
    int64_t bias_stride;
    double eps;
} gpuos__rows_plan;

#define GPUOS__MM_EPI 4          /* epilogue operators at most */
#define GPUOS__MM_EPI_IN 2       /* epilogue tensor operands at most */
#define GPUOS__EPI_OP 0xff       /* epi[i]: the operator id */
#define GPUOS__EPI_SWAP 0x100    /* the output is the second operand */
#define GPUOS__EPI_IN_SHIFT 12   /* the tensor operand's index */
#define GPUOS__MM_ROWS (-1)      /* gpuos__matmul_plan.n_cb: row tiles */

/* Batched matmul, NumPy semantics already resolved (1-D operands given a size-1
   axis, batch axes broadcast). For batch index b (row-major over batch_shape) and
   output row m: out[b][m][n] = sum_k a[b][m][k] * b[b][k][n]. */
typedef struct gpuos__matmul_plan {
    int32_t batch_rank;
    int32_t pro; /* 1: a fused layernorm prologue (below); 0: none */
    int64_t batch_numel;
    int64_t batch_shape[GPUOS__MAX_RANK];
    int64_t batch_a_stride[GPUOS__MAX_RANK];   /* bytes */
    int64_t batch_b_stride[GPUOS__MAX_RANK];   /* bytes */
    int64_t batch_out_stride[GPUOS__MAX_RANK]; /* bytes */
    int64_t M, N, K;
    int64_t a_m, a_k; /* bytes */
    int64_t b_k, b_n; /* bytes */
    int64_t o_m, o_n; /* bytes */
    char *out;
    const char *a;
    const char *b;
    int64_t n_cb; /* GPU only (the CUDA backend sets it; 0 or 1: none): items are column block
                     cb = item / (batch_numel * M) times rows, each N / n_cb columns (a multiple
                     of 32), so that a few rows are shared by several blocks;
                     GPUOS__MM_ROWS: row tiles, a tile one whole output row (the device's
                     gpuos__d_mm_row, summed as the narrow blocks sum: bit for bit); -S
                     (S >= 2): row tiles of S 64-column slices, item m S + s row m's slice s
                     (gpuos__d_mm_rowslice, N = 64 S, summed alike) */
    /* Epilogue: element-wise operators that a recorded graph fused into the product
       (src/graph.c), applied in order to each output element as it is stored, each result
       rounded to the output dtype as a store would round it, so the output is bit for bit
       what the separate tasks give. Only without batch axes (batch_rank 0): element (m, n)
       of tensor operand j is at epi_ptr[j] + m * epi_sm[j] + n * epi_sn[j] (0: broadcast).
       epi[i] = operator id | GPUOS__EPI_SWAP (the output is the operator's second operand)
       | operand j << GPUOS__EPI_IN_SHIFT (binary operators). n_epi 0: none. */
    int32_t n_epi;
    int32_t epi[GPUOS__MM_EPI];
    int32_t pad2_;
    const char *epi_ptr[GPUOS__MM_EPI_IN];
    int64_t epi_sm[GPUOS__MM_EPI_IN], epi_sn[GPUOS__MM_EPI_IN]; /* bytes */
    /* Prologue (pro = 1): a layernorm (no weight, no bias) that a recorded graph fused in
       front of the product (src/graph.c): a (a_m, a_k) is the layernorm's input, [M, K];
       each row is normalised as the layernorm task would (eps pro_eps), written to pro_out
       (pro_om, pro_ok: bytes) and multiplied by b as A. Only f32, no batch axes, M <= 8,
       the device's narrow column blocks (column block cb also writes columns
       [8 cb, 8 cb + 8) of pro_out, so K <= 8 n_cb). */
    char *pro_out;
    int64_t pro_om, pro_ok;
    double pro_eps;
} gpuos__matmul_plan;

/* Run-time operators (src/rtops.c) on the device: task kernel ids from
   GPUOS__RT_KERNEL_BASE name physical slots (two per operator: the version queued tasks
   use and the next one) of the run-time module's gpuos__rt_table. That module is the
   device source compiled as part GPUOS__D_PART_RT (the worker loop, the run-time
   dispatcher and the kernel gpuos__pk_rt, none of the built-in groups) linked with the
   operators' objects (compiled as part GPUOS__D_PART_OP: templates only). */
#define GPUOS__RT_KERNEL_BASE 30000
#define GPUOS__RT_SLOTS 128
#define GPUOS__D_PART_RT 98
#define GPUOS__D_PART_OP 99

#endif /* GPUOS_PLAN_H */
