/* plan.c - gpuos_submit: validate a task, build its plan, queue it.

   Checks run in the order of docs/OPERATORS.md's error table: pointers and op, tensor
   contexts, dtypes, then per kind of operator the shapes and axes, then the output's
   strides, aliasing between output and inputs, and the kind's own conditions (empty
   min/max). Everything is looked up in gpuos__ops[op] (generated); the few operators
   with rules of their own (copy broadcasts to the output, min/max/argmin/argmax refuse
   empty reductions, softmax has an axis, layernorm/rmsnorm take weight and bias) are
   named here.

   Plans (gpuos_plan.h) carry byte strides and pointers already offset; broadcast axes
   get stride 0; size-1 axes are dropped and adjacent axes merged wherever every
   operand allows it, keeping row-major order (so element-wise item i stays the
   output's flat index i, and argmin/argmax flat indices are unchanged). */
#include "gpuos_runtime.h"

#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* malloc, free, qsort */
#include <string.h> /* memcpy, memset */

/* Per-submission working state. */
typedef struct plan_state {
    gpuos_context *ctx;
    const gpuos_task *task;
    gpuos_op op;
    const gpuos__op_info *info;
    const char *name;               /* the op's name, for messages */
    gpuos_tensor *out;
    gpuos_tensor *in[GPUOS_MAX_INPUTS]; /* NULL where absent */
    gpuos_dtype key;                /* the dtype that selects the code */
    gpuos__job *job;
    gpuos__rt_version *rt;          /* a run-time operator's version (a reference), else NULL */
    gpuos__op_info rt_info;         /* its op table entry */
} plan_state;

/* ---------------------------------------------------------------- messages */
static const char *plan_dtype(gpuos_dtype d) {
    const char *n = gpuos_dtype_name(d);
    return n ? n : "?";
}

/* "[2, 3, 4]" into buf. */
static const char *plan_shape_str(int rank, const int64_t *shape, char *buf, size_t size) {
    size_t n = 0;
    int i;
    buf[0] = '\0';
    n += (size_t)snprintf(buf + n, size - n, "[");
    for (i = 0; i < rank && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (n < size) snprintf(buf + n, size - n, "]");
    return buf;
}

static const char *plan_dtype_set(uint32_t mask, char *buf, size_t size) {
    size_t n = 0;
    int d;
    buf[0] = '\0';
    for (d = 0; d < GPUOS_DTYPE_COUNT && n < size; d++)
        if (mask >> d & 1u) n += (size_t)snprintf(buf + n, size - n, n ? " %s" : "%s", plan_dtype((gpuos_dtype)d));
    return buf;
}

static const char *plan_operand(int k) {
    static const char *const names[] = {"in[0]", "in[1]", "in[2]", "in[3]"};
    return k >= 0 && k < GPUOS_MAX_INPUTS ? names[k] : "out";
}

/* ---------------------------------------------------------------- views as byte ranges */
/* First byte and one past the last byte a view reaches; 0 when it reaches nothing. */
static int plan_byte_range(const gpuos_tensor *t, int64_t *lo, int64_t *hi) {
    int64_t l, h, es = (int64_t)gpuos__elsize(t->dtype);
    if (t->numel == 0) return 0;
    if (!gpuos__view_extent(t->rank, t->shape, t->strides, &l, &h)) return 0; /* cannot happen: checked at creation */
    *lo = (t->offset + l) * es;
    *hi = (t->offset + h + 1) * es;
    return 1;
}

static int plan_overlap(const gpuos_tensor *a, const gpuos_tensor *b) {
    int64_t alo, ahi, blo, bhi;
    if (a->st != b->st) return 0;
    if (!plan_byte_range(a, &alo, &ahi) || !plan_byte_range(b, &blo, &bhi)) return 0;
    return alo < bhi && blo < ahi;
}

/* 1 when in, broadcast to out's shape (right-aligned), addresses exactly out's elements. */
static int plan_same_view(const gpuos_tensor *out, const gpuos_tensor *in) {
    int d, lead = out->rank - in->rank;
    if (out->st != in->st || gpuos__elsize(out->dtype) != gpuos__elsize(in->dtype) || out->offset != in->offset)
        return 0;
    if (lead < 0) return 0;
    for (d = 0; d < out->rank; d++) {
        if (out->shape[d] == 1) continue;
        if (d < lead || in->shape[d - lead] != out->shape[d] || in->strides[d - lead] != out->strides[d]) return 0;
    }
    return 1;
}

/* ---------------------------------------------------------------- output checks */
typedef struct plan_axis {
    int64_t size, stride;
} plan_axis;

static int plan_axis_cmp(const void *a, const void *b) {
    int64_t x = ((const plan_axis *)a)->stride, y = ((const plan_axis *)b)->stride;
    return x < y ? -1 : x > y;
}

static int plan_i64_cmp(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

#define PLAN_EXACT_OVERLAP_LIMIT ((int64_t)1 << 22)

/* Fills offs[0..numel) with every element's offset (elements, from the storage's start). */
static void plan_offsets(const gpuos_tensor *t, int64_t *offs) {
    int64_t idx[GPUOS_MAX_RANK] = {0}, k;
    for (k = 0; k < t->numel; k++) {
        int64_t o = t->offset;
        int d;
        for (d = 0; d < t->rank; d++) o += idx[d] * t->strides[d];
        offs[k] = o;
        for (d = t->rank - 1; d >= 0; d--) {
            if (++idx[d] < t->shape[d]) break;
            idx[d] = 0;
        }
    }
}


/* 1 when two different indices of the view address the same element; -1 when it is
   too large to decide (treated as overlapping); -2 when the exact check's memory could not
   be had. Strides 0 over size > 1 are handled by the caller. */
static int plan_self_overlap(const gpuos_tensor *t, int64_t exact_limit) {
    plan_axis ax[GPUOS_MAX_RANK];
    int n = 0, i;
    int64_t reach = 0; /* elements spanned by the axes so far: (size-1)*|stride| summed */
    for (i = 0; i < t->rank; i++) {
        if (t->shape[i] <= 1) continue;
        ax[n].size = t->shape[i];
        ax[n].stride = gpuos__abs64(t->strides[i]);
        n++;
    }
    qsort(ax, (size_t)n, sizeof ax[0], plan_axis_cmp);
    for (i = 0; i < n; i++) {
        if (ax[i].stride <= reach) break; /* may land inside what the inner axes cover */
        reach += (ax[i].size - 1) * ax[i].stride;
    }
    if (i == n) return 0; /* nested axes: provably no overlap */
    if (t->numel > exact_limit) return -1;
    {
        /* exact: list every offset and look for a repeat */
        int64_t *offs = (int64_t *)malloc((size_t)t->numel * sizeof *offs), k;
        int dup = 0;
        if (!offs) return -2;
        plan_offsets(t, offs);
        qsort(offs, (size_t)t->numel, sizeof *offs, plan_i64_cmp);
        for (k = 1; k < t->numel && !dup; k++) dup = offs[k] == offs[k - 1];
        free(offs);
        return dup;
    }
}

/* Refuses an output view that would write one element several times (a stride 0 over a
   size above 1, or axes that overlap), for a task's output and gpuos_upload's target alike:
   nested axes pass at once; others are checked exactly (a sort of every offset) up to 2^22
   elements, and beyond that refused as possibly overlapping. */
gpuos_status gpuos__check_output_view(const gpuos_context *ctx, const gpuos_tensor *o, const char *name) {
    int i, ov;
    char sb[128], tb[160];
    if (o->numel == 0) return GPUOS_OK; /* writes nothing */
    for (i = 0; i < o->rank; i++)
        if (o->strides[i] == 0 && o->shape[i] > 1)
            return gpuos__set_error(ctx, GPUOS_ERR_BAD_STRIDES,
                                    "%s: the output has stride 0 over axis %d of size %lld (shape %s), so it would "
                                    "write one element several times",
                                    name, i, (long long)o->shape[i],
                                    plan_shape_str(o->rank, o->shape, sb, sizeof sb));
    ov = plan_self_overlap(o, PLAN_EXACT_OVERLAP_LIMIT);
    if (ov == -2)
        return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "%s: out of host memory checking whether the output's "
                                "strides %s over shape %s make it overlap itself", name,
                                plan_shape_str(o->rank, o->strides, tb, sizeof tb),
                                plan_shape_str(o->rank, o->shape, sb, sizeof sb));
    if (ov != 0)
        return gpuos__set_error(ctx, GPUOS_ERR_BAD_STRIDES,
                                "%s: the output's strides %s over shape %s %s", name,
                                plan_shape_str(o->rank, o->strides, tb, sizeof tb),
                                plan_shape_str(o->rank, o->shape, sb, sizeof sb),
                                ov > 0 ? "make it overlap itself"
                                       : "may make it overlap itself (too large to check exactly)");
    return GPUOS_OK;
}

#define PLAN_EXACT_ALIAS_OUT ((int64_t)1 << 20) /* output elements listed by the exact alias check */
#define PLAN_EXACT_ALIAS_IN ((int64_t)1 << 22)  /* input elements looked up */

/* Do two views of one storage whose byte ranges overlap share a byte? 1 yes, 0 no, -1
   too large to decide (treated as yes), -2 out of memory. out's elements are distinct (the output check
   ran first), so its sorted element starts (multiples of its element size) give disjoint
   intervals: an input element overlaps one exactly when the last start at or below the
   input element's last byte lies less than out's element size below its first. Interleaved
   views (x[:, 0::2] and x[:, 1::2], the real and imaginary parts) are the case. */
/* The gcd of a view's byte strides over its axes of size above 1 (0 for one element): every
   element of it starts at offset * elsize modulo this. */
static int64_t plan_stride_gcd(const gpuos_tensor *t, int64_t es) {
    int64_t g = 0;
    int d;
    for (d = 0; d < t->rank; d++)
        if (t->shape[d] > 1) g = gpuos__gcd64(g, gpuos__abs64(t->strides[d]) * es);
    return g;
}
static int plan_views_share(const gpuos_tensor *out, const gpuos_tensor *in) {
    const int64_t eo = (int64_t)gpuos__elsize(out->dtype), ei = (int64_t)gpuos__elsize(in->dtype);
    int64_t *offs, idx[GPUOS_MAX_RANK] = {0}, k;
    int hit = 0;
    {
        /* At once (no listing, whatever the sizes): every element of out starts at a byte
           congruent to out's first modulo G (the gcd of both views' byte strides), every
           element of in likewise; when out's bytes [0, eo) and in's [dl, dl + ei) relative to
           those residues do not meet modulo G, no byte is shared (x[:, 0::2] and x[:, 1::2]:
           G = 2 elements, dl = 1 element). */
        const int64_t g = gpuos__gcd64(plan_stride_gcd(out, eo), plan_stride_gcd(in, ei));
        if (g >= eo + ei) {
            const int64_t dl = ((in->offset * ei - out->offset * eo) % g + g) % g;
            if (dl >= eo && dl + ei <= g) return 0;
        }
    }
    if (out->numel > PLAN_EXACT_ALIAS_OUT || in->numel > PLAN_EXACT_ALIAS_IN) return -1;
    offs = (int64_t *)malloc((size_t)out->numel * sizeof *offs);
    if (!offs) return -2;
    plan_offsets(out, offs);
    for (k = 0; k < out->numel; k++) offs[k] *= eo; /* bytes */
    qsort(offs, (size_t)out->numel, sizeof *offs, plan_i64_cmp);
    for (k = 0; k < in->numel && !hit; k++) {
        int64_t b = in->offset, lo = 0, hi = out->numel;
        int d;
        for (d = 0; d < in->rank; d++) b += idx[d] * in->strides[d];
        b *= ei;
        while (lo < hi) { /* the first out start above b's last byte */
            const int64_t m = lo + (hi - lo) / 2;
            if (offs[m] <= b + ei - 1) lo = m + 1;
            else hi = m;
        }
        hit = lo > 0 && offs[lo - 1] + eo > b;
        for (d = in->rank - 1; d >= 0; d--) {
            if (++idx[d] < in->shape[d]) break;
            idx[d] = 0;
        }
    }
    free(offs);
    return hit;
}

static gpuos_status plan_check_output(plan_state *ps) {
    return gpuos__check_output_view(ps->ctx, ps->out, ps->name);
}

/* Refuses an output that overlaps an input (shares a byte with it), except the very same
   view of input 0..n_identical-1 when the op works in place. Views whose byte ranges
   overlap are checked element by element (plan_views_share). */
static gpuos_status plan_check_alias(plan_state *ps, int n_identical) {
    int k, sh;
    for (k = 0; k < GPUOS_MAX_INPUTS; k++) {
        const gpuos_tensor *in = ps->in[k];
        if (!in || !plan_overlap(ps->out, in)) continue;
        if (ps->info->inplace_ok && k < n_identical && plan_same_view(ps->out, in)) continue;
        if ((sh = plan_views_share(ps->out, in)) == 0) continue;
        if (sh == -2)
            return gpuos__set_error(ps->ctx, GPUOS_ERR_OUT_OF_MEMORY,
                                    "%s: out of host memory checking whether the output overlaps %s", ps->name,
                                    plan_operand(k));
        return gpuos__set_error(ps->ctx, GPUOS_ERR_ALIASING,
                                "%s: the output %s %s%s", ps->name,
                                sh > 0 ? "overlaps" : "may overlap (too large to check exactly)", plan_operand(k),
                                ps->info->inplace_ok
                                    ? " without being the very same view (in place needs identical offset, shape "
                                      "and strides)"
                                    : "; this operator cannot work in place, use a separate output");
    }
    return GPUOS_OK;
}

/* ---------------------------------------------------------------- plan helpers */
static char *plan_ptr(const gpuos_tensor *t) {
    if (t->numel == 0) return t->st->data; /* an empty view may carry any offset: it reaches nothing */
    return t->st->data + t->offset * (int64_t)gpuos__elsize(t->dtype);
}

/* Byte stride of t along a stride of elements: 0 for an empty t, whose strides may be
   anything (nothing is reached; their products passed 2^63 in plans and kernels: UB), and
   wrapping for a size-1 axis' stride, which may be anything too (only index 0 meets it) */
static int64_t plan_bs(const gpuos_tensor *t, int64_t stride, int64_t es) {
    return t->numel == 0 ? 0 : (int64_t)((uint64_t)stride * (uint64_t)es);
}

/* Elements of an index space of n axes: 0 when a size is 0, else their product, held at
   INT64_MAX past 2^63 (an empty operand's other sizes may multiply past it) */
static int64_t plan_count(int n, const int64_t *shape) {
    int64_t c = 1;
    int d;
    for (d = 0; d < n; d++)
        if (shape[d] == 0) return 0;
    for (d = 0; d < n; d++)
        if (!gpuos__mul64(c, shape[d], &c)) return INT64_MAX;
    return c;
}

/* Adds t's storage to the job's list (once). */
static void plan_use(gpuos__job *job, const gpuos_tensor *t) {
    int i;
    for (i = 0; i < job->n_st; i++)
        if (job->st[i] == t->st) return;
    job->st[job->n_st++] = t->st;
}

/* NumPy broadcasting of a and b (right-aligned) into out (rank max). 0 if they do not broadcast. */
static int plan_broadcast(int ra, const int64_t *a, int rb, const int64_t *b, int *rout, int64_t *out) {
    int r = ra > rb ? ra : rb, i;
    for (i = 0; i < r; i++) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t x = ia >= 0 ? a[ia] : 1, y = ib >= 0 ? b[ib] : 1;
        if (x == y || y == 1) out[i] = x;
        else if (x == 1) out[i] = y;
        else return 0;
    }
    *rout = r;
    return 1;
}

/* Byte strides of t broadcast (right-aligned) to a shape of rank r: 0 on missing and
   broadcast axes. */
static void plan_bcast_strides(const gpuos_tensor *t, int r, const int64_t *shape, int64_t *bs) {
    int d, lead = r - t->rank;
    int64_t es = (int64_t)gpuos__elsize(t->dtype);
    for (d = 0; d < r; d++) {
        int td = d - lead;
        /* (wrapping: a size-1 or empty axis may carry any stride, and then stride * es may
           pass 2^63; only reachable elements' products are used, and those fit) */
        bs[d] = (td < 0 || (t->shape[td] == 1 && shape[d] != 1)) ? 0
                                                                  : (int64_t)((uint64_t)t->strides[td] * (uint64_t)es);
    }
}

static int plan_same_shape(const gpuos_tensor *t, int rank, const int64_t *shape) {
    int i;
    if (t->rank != rank) return 0;
    for (i = 0; i < rank; i++)
        if (t->shape[i] != shape[i]) return 0;
    return 1;
}

static gpuos_status plan_shape_error(plan_state *ps, int rank, const int64_t *shape) {
    char a[128], b[128];
    return gpuos__set_error(ps->ctx, GPUOS_ERR_SHAPE_MISMATCH, "%s: the output has shape %s but the result has shape %s",
                            ps->name, plan_shape_str(ps->out->rank, ps->out->shape, a, sizeof a),
                            plan_shape_str(rank, shape, b, sizeof b));
}

/* Merges the axes of a multi-operand index space: drops size-1 axes and merges axis i
   into i+1 when every operand has stride[i] == stride[i+1] * shape[i+1]. shape has
   *rank entries; stride[k] (k < n_ops) are the operands' strides, in place. */
static void plan_merge(int *rank, int64_t *shape, int n_ops, int64_t (*stride)[GPUOS__MAX_RANK]) {
    int r = 0, i, k;
    for (i = 0; i < *rank; i++) {
        if (shape[i] == 1) continue;
        if (r > 0) {
            int ok = 1;
            for (k = 0; k < n_ops && ok; k++) ok = stride[k][r - 1] == stride[k][i] * shape[i];
            if (ok) {
                shape[r - 1] *= shape[i];
                for (k = 0; k < n_ops; k++) stride[k][r - 1] = stride[k][i];
                continue;
            }
        }
        shape[r] = shape[i];
        for (k = 0; k < n_ops; k++) stride[k][r] = stride[k][i];
        r++;
    }
    for (i = r; i < *rank; i++) {
        shape[i] = 0;
        for (k = 0; k < n_ops; k++) stride[k][i] = 0;
    }
    *rank = r;
}

/* Host executor only: axes in the order of memory (the largest stride first, stable; then
   merged again). Element-wise plans take the output's order, so that an operator on views
   that are all transposed the same way (y^T = exp(x^T), C^T = A^T + B^T) walks memory in
   order, as on contiguous tensors (1024^2 f32 C^T = A^T + B^T: 5.1 -> 0.19 ms, as C = A + B;
   the host's tiles cannot help when every operand is strided along a row). Where the
   operands' layouts differ, the output's order is the one that pays (sorting by all
   operands' strides, the output's twice, was no faster on any of a review's x^T / y / out^T
   mixes, and 1.4-1.9x slower with two inputs transposed). Items are then numbered in that
   order, which only arange reads (it is left alone); a job runs whole on the host, so no
   other job sees its numbering. Reductions take the input's order over the reduced axes
   (a float sum then adds in another order: other last bits, within the tolerances), except
   argmin and argmax, whose index is the row-major one and whose ties go to the first. Not on
   a GPU: there a task's tiles are its items, which the dependency tracking compares across
   tasks. */
static void plan_memory_order(int *rank, int64_t *shape, int n_ops, int64_t (*stride)[GPUOS__MAX_RANK]) {
    int perm[GPUOS__MAX_RANK], i, j, k, moved = 0;
    int64_t sh[GPUOS__MAX_RANK], st[GPUOS__MAX_PTR][GPUOS__MAX_RANK];
    for (i = 0; i < *rank; i++) perm[i] = i;
    for (i = 1; i < *rank; i++) { /* insertion sort: ties keep their order */
        const int d = perm[i];
        for (j = i; j > 0 && gpuos__abs64(stride[0][perm[j - 1]]) < gpuos__abs64(stride[0][d]); j--) perm[j] = perm[j - 1];
        perm[j] = d;
    }
    for (i = 0; i < *rank; i++) moved |= perm[i] != i;
    if (!moved) return;
    for (i = 0; i < *rank; i++) {
        sh[i] = shape[perm[i]];
        for (k = 0; k < n_ops; k++) st[k][i] = stride[k][perm[i]];
    }
    for (i = 0; i < *rank; i++) {
        shape[i] = sh[i];
        for (k = 0; k < n_ops; k++) stride[k][i] = st[k][i];
    }
    plan_merge(rank, shape, n_ops, stride);
}

/* ---------------------------------------------------------------- element-wise */
static gpuos_status plan_ew(plan_state *ps) {
    gpuos__job *job = ps->job;
    gpuos__ew_plan *p = &job->plan.ew;
    int64_t shape[GPUOS_MAX_RANK], numel;
    int rank = 0, k, n_in = ps->info->n_in;
    gpuos_status s;

    /* the result's shape */
    if (n_in == 0 || ps->op == GPUOS_OP_COPY) { /* fill, arange: any shape; copy: in[0] broadcasts to it */
        rank = ps->out->rank;
        memcpy(shape, ps->out->shape, sizeof shape);
        if (n_in > 0) {
            int r2;
            int64_t b[GPUOS_MAX_RANK];
            const gpuos_tensor *a = ps->in[0];
            if (a->rank > rank || !plan_broadcast(rank, shape, a->rank, a->shape, &r2, b) ||
                !plan_same_shape(ps->out, r2, b)) {
                char x[128], y[128];
                return gpuos__set_error(ps->ctx, GPUOS_ERR_SHAPE_MISMATCH,
                                        "%s: the input of shape %s does not broadcast to the output's shape %s",
                                        ps->name, plan_shape_str(a->rank, a->shape, x, sizeof x),
                                        plan_shape_str(ps->out->rank, ps->out->shape, y, sizeof y));
            }
        }
    } else {
        rank = ps->in[0]->rank;
        memcpy(shape, ps->in[0]->shape, sizeof shape);
        for (k = 1; k < n_in; k++) {
            const gpuos_tensor *b = ps->in[k];
            int64_t prev[GPUOS_MAX_RANK];
            int prank = rank;
            memcpy(prev, shape, sizeof prev);
            if (!plan_broadcast(prank, prev, b->rank, b->shape, &rank, shape)) {
                char x[128], y[128];
                return gpuos__set_error(ps->ctx, GPUOS_ERR_SHAPE_MISMATCH,
                                        k == 1 ? "%s: in[%d]'s shape %s does not broadcast with in[0]'s %s"
                                               : "%s: in[%d]'s shape %s does not broadcast with %s, the shape of "
                                                 "in[0..%d] broadcast together",
                                        ps->name, k, plan_shape_str(b->rank, b->shape, y, sizeof y),
                                        plan_shape_str(prank, prev, x, sizeof x), k - 1);
            }
        }
        if (!plan_same_shape(ps->out, rank, shape)) return plan_shape_error(ps, rank, shape);
    }
    if ((s = plan_check_output(ps)) != GPUOS_OK) return s;
    if ((s = plan_check_alias(ps, GPUOS_MAX_INPUTS)) != GPUOS_OK) return s;

    /* the plan */
    numel = ps->out->numel;
    p->n_ptr = 1 + n_in;
    p->numel = numel;
    p->scalar[0] = ps->task->scalar[0];
    p->scalar[1] = ps->task->scalar[1];
    p->ptr[0] = plan_ptr(ps->out);
    plan_bcast_strides(ps->out, rank, shape, p->stride[0]);
    plan_use(job, ps->out);
    for (k = 0; k < n_in; k++) {
        p->ptr[1 + k] = plan_ptr(ps->in[k]);
        plan_bcast_strides(ps->in[k], rank, shape, p->stride[1 + k]);
        plan_use(job, ps->in[k]);
    }
    memcpy(p->shape, shape, sizeof shape);
    p->rank = rank;
    if (numel > 0) {
        plan_merge(&p->rank, p->shape, p->n_ptr, p->stride); /* rank 0: one element */
        if (!ps->ctx->cuda && ps->op != GPUOS_OP_ARANGE && p->rank >= 2)
            plan_memory_order(&p->rank, p->shape, p->n_ptr, p->stride);
    }
    job->items = numel;
    job->item_cost = 1;

    if (ps->rt) { /* a run-time operator: the job keeps its version's reference */
        job->rt = ps->rt;
        ps->rt = NULL;
        job->item_cost = 8;
        return GPUOS_OK;
    }
    job->ew_loop = gpuos__host_ew_loop(ps->op, ps->key, ps->out->dtype);
    if (!job->ew_loop)
        return gpuos__set_error(ps->ctx, GPUOS_ERR_UNSUPPORTED_DTYPE,
                                "%s: this build has no host code for %s -> %s (make gen DTYPES=...)", ps->name,
                                plan_dtype(ps->key), plan_dtype(ps->out->dtype));
    if (numel > 0) {
        job->ew_iter = gpuos__host_ew_iter(p->rank);
        if (!job->ew_iter)
            return gpuos__set_error(ps->ctx, GPUOS_ERR_RANK,
                                    "%s: this build has no element-wise code for rank %d (the operands' axes merge "
                                    "to %d; make gen RANKS=...)",
                                    ps->name, (int)p->rank, (int)p->rank);
    }
    return GPUOS_OK;
}

/* ---------------------------------------------------------------- reductions */
static gpuos_status plan_reduce(plan_state *ps) {
    gpuos__job *job = ps->job;
    gpuos__reduce_plan *p = &job->plan.reduce;
    const gpuos_tensor *a = ps->in[0];
    const gpuos_tensor *o = ps->out;
    int64_t oshape[GPUOS_MAX_RANK], ostr[2][GPUOS__MAX_RANK], istr[1][GPUOS__MAX_RANK];
    int64_t ishape[GPUOS_MAX_RANK], es_in = (int64_t)gpuos__elsize(a->dtype), es_out = (int64_t)gpuos__elsize(o->dtype);
    int64_t outer_numel = 1, inner_numel = 1;
    uint32_t mask;
    int r = a->rank, d, orank = 0, no = 0, ni = 0;
    gpuos_status s;

    if (ps->task->axes == GPUOS_AXES_ALL) {
        mask = r == 0 ? 0u : (uint32_t)((1u << r) - 1u);
    } else {
        mask = ps->task->axes;
        if (r < 32 && (mask >> r) != 0) {
            int bit = r;
            while (!(mask >> bit & 1u)) bit++;
            return gpuos__set_error(ps->ctx, GPUOS_ERR_AXIS,
                                    "%s: axes has bit %d set but the input has rank %d (bits 0..%d, or "
                                    "GPUOS_AXES_ALL)",
                                    ps->name, bit, r, r - 1);
        }
    }
    /* (an empty input's other sizes may multiply past 2^63: a count that would is held at
       INT64_MAX, and one with a 0 among its sizes is 0 all the same) */
    for (d = 0; d < r; d++) {
        if (mask >> d & 1u) {
            if (!gpuos__mul64(inner_numel, a->shape[d], &inner_numel)) inner_numel = INT64_MAX;
            if (ps->task->keepdim) oshape[orank++] = 1;
        } else {
            if (!gpuos__mul64(outer_numel, a->shape[d], &outer_numel)) outer_numel = INT64_MAX;
            oshape[orank++] = a->shape[d];
        }
    }
    if (!plan_same_shape(o, orank, oshape)) return plan_shape_error(ps, orank, oshape);
    if ((s = plan_check_output(ps)) != GPUOS_OK) return s;
    if ((s = plan_check_alias(ps, 0)) != GPUOS_OK) return s;
    if (inner_numel == 0 && outer_numel > 0 &&
        (ps->op == GPUOS_OP_MIN || ps->op == GPUOS_OP_MAX || ps->op == GPUOS_OP_ARGMIN || ps->op == GPUOS_OP_ARGMAX))
        return gpuos__set_error(ps->ctx, GPUOS_ERR_INVALID_ARGUMENT,
                                "%s: reduction over zero elements has no result (%s has no identity)", ps->name,
                                ps->name);

    /* outer axes (kept) and inner axes (reduced), in order; size-1 axes dropped */
    for (d = 0, orank = 0; d < r; d++) {
        int od = orank; /* the output axis of input axis d */
        if (!(mask >> d & 1u) || ps->task->keepdim) orank++;
        if (a->shape[d] == 1) continue;
        /* byte strides: an empty tensor's may pass 2^63 (wrapping: nothing is reached) */
        if (mask >> d & 1u) {
            ishape[ni] = a->shape[d];
            istr[0][ni] = plan_bs(a, a->strides[d], es_in);
            ni++;
        } else {
            oshape[no] = a->shape[d];
            ostr[0][no] = plan_bs(a, a->strides[d], es_in);
            ostr[1][no] = plan_bs(o, o->strides[od], es_out);
            no++;
        }
    }
    if (outer_numel > 0) plan_merge(&no, oshape, 2, ostr);
    if (inner_numel > 0 && a->numel > 0) plan_merge(&ni, ishape, 1, istr); /* (no product past 2^63) */
    if (!ps->ctx->cuda && ni >= 2 && ps->op != GPUOS_OP_ARGMIN && ps->op != GPUOS_OP_ARGMAX && inner_numel > 0 &&
        a->numel > 0)
        plan_memory_order(&ni, ishape, 1, istr); /* (argmin, argmax: their index is the row-major one) */
    memset(p, 0, sizeof *p);
    p->outer_rank = no;
    p->inner_rank = ni;
    p->outer_numel = outer_numel;
    p->inner_numel = inner_numel;
    for (d = 0; d < no; d++) {
        p->outer_shape[d] = oshape[d];
        p->outer_in_stride[d] = ostr[0][d];
        p->outer_out_stride[d] = ostr[1][d];
    }
    for (d = 0; d < ni; d++) {
        p->inner_shape[d] = ishape[d];
        p->inner_in_stride[d] = istr[0][d];
    }
    p->out = plan_ptr(o);
    p->in = plan_ptr(a);
    p->correction = ps->task->correction;
    plan_use(job, o);
    plan_use(job, a);
    job->items = o->numel == 0 ? 0 : outer_numel;
    job->item_cost = inner_numel > 0 ? inner_numel : 1;
    job->reduce_fn = gpuos__host_reduce(ps->op, ps->key);
    if (!job->reduce_fn)
        return gpuos__set_error(ps->ctx, GPUOS_ERR_UNSUPPORTED_DTYPE,
                                "%s: this build has no host code for %s (make gen DTYPES=...)", ps->name,
                                plan_dtype(ps->key));
    return GPUOS_OK;
}

/* ---------------------------------------------------------------- row-wise */
static gpuos_status plan_rows(plan_state *ps) {
    gpuos__job *job = ps->job;
    gpuos__rows_plan *p = &job->plan.rows;
    const gpuos_tensor *x = ps->in[0];
    const gpuos_tensor *o = ps->out;
    int64_t shape[GPUOS_MAX_RANK], str[2][GPUOS__MAX_RANK], n, es = (int64_t)gpuos__elsize(x->dtype);
    int r = x->rank, axis, d, no = 0, k;
    int normalise = ps->info->n_in_max > 1; /* layernorm, rmsnorm: last axis, weight, bias */
    gpuos_status s;

    if (normalise) {
        axis = r - 1;
    } else {
        axis = ps->task->axis;
        if (axis < -(r > 0 ? r : 1) || axis >= (r > 0 ? r : 1))
            return gpuos__set_error(ps->ctx, GPUOS_ERR_AXIS, "%s: axis %d is out of range for rank %d (use %d..%d)",
                                    ps->name, axis, r, r > 0 ? -r : -1, r > 0 ? r - 1 : 0);
        if (axis < 0) axis += r > 0 ? r : 1;
        if (r == 0) axis = -1;
    }
    n = r > 0 ? x->shape[axis] : 1; /* a 0-d tensor is one row of one element */
    if (!plan_same_shape(o, r, x->shape)) return plan_shape_error(ps, r, x->shape);
    for (k = 1; k < GPUOS_MAX_INPUTS; k++) {
        const gpuos_tensor *w = ps->in[k];
        if (!w) continue;
        if (w->rank != 1 || w->shape[0] != n) {
            char b[128];
            return gpuos__set_error(ps->ctx, GPUOS_ERR_SHAPE_MISMATCH,
                                    "%s: %s (%s) has shape %s; it must be [%lld], the size of the input's last axis",
                                    ps->name, plan_operand(k), k == 1 ? "weight" : "bias",
                                    plan_shape_str(w->rank, w->shape, b, sizeof b), (long long)n);
        }
    }
    if ((s = plan_check_output(ps)) != GPUOS_OK) return s;
    if ((s = plan_check_alias(ps, 1)) != GPUOS_OK) return s;

    memset(p, 0, sizeof *p);
    for (d = 0; d < r; d++) {
        if (d == axis) continue;
        shape[no] = x->shape[d];
        str[0][no] = plan_bs(x, x->strides[d], es);
        str[1][no] = plan_bs(o, o->strides[d], es);
        no++;
    }
    p->outer_numel = plan_count(no, shape);
    if (p->outer_numel > 0 && o->numel > 0) plan_merge(&no, shape, 2, str); /* (no product past 2^63) */
    p->outer_rank = no;
    for (d = 0; d < no; d++) {
        p->outer_shape[d] = shape[d];
        p->outer_in_stride[d] = str[0][d];
        p->outer_out_stride[d] = str[1][d];
    }
    p->n = n;
    p->in_stride = r > 0 ? plan_bs(x, x->strides[axis], es) : 0;
    p->out_stride = r > 0 ? plan_bs(o, o->strides[axis], es) : 0;
    p->out = plan_ptr(o);
    p->in = plan_ptr(x);
    plan_use(job, o);
    plan_use(job, x);
    if (ps->in[1]) {
        p->weight = plan_ptr(ps->in[1]);
        p->weight_stride = plan_bs(ps->in[1], ps->in[1]->strides[0], es);
        plan_use(job, ps->in[1]);
    }
    if (ps->in[2]) {
        p->bias = plan_ptr(ps->in[2]);
        p->bias_stride = plan_bs(ps->in[2], ps->in[2]->strides[0], es);
        plan_use(job, ps->in[2]);
    }
    p->eps = ps->task->scalar[0];
    job->items = o->numel == 0 ? 0 : p->outer_numel;
    if (!gpuos__mul64(4, n > 0 ? n : 1, &job->item_cost)) job->item_cost = INT64_MAX; /* (an empty row's n may be huge) */
    job->rows_fn = gpuos__host_rows(ps->op, ps->key);
    if (!job->rows_fn)
        return gpuos__set_error(ps->ctx, GPUOS_ERR_UNSUPPORTED_DTYPE,
                                "%s: this build has no host code for %s (make gen DTYPES=...)", ps->name,
                                plan_dtype(ps->key));
    return GPUOS_OK;
}

/* ---------------------------------------------------------------- matmul */
static gpuos_status plan_matmul(plan_state *ps) {
    gpuos__job *job = ps->job;
    gpuos__matmul_plan *p = &job->plan.matmul;
    const gpuos_tensor *a = ps->in[0], *b = ps->in[1], *o = ps->out;
    int64_t es = (int64_t)gpuos__elsize(a->dtype);
    int64_t M, K, Kb, N, bshape[GPUOS_MAX_RANK], oshape[GPUOS_MAX_RANK], str[3][GPUOS__MAX_RANK];
    int ra = a->rank, rb = b->rank, bra = ra > 2 ? ra - 2 : 0, brb = rb > 2 ? rb - 2 : 0, br, orank, d;
    gpuos_status s;
    char x[128], y[128];

    if (ra < 1 || rb < 1)
        return gpuos__set_error(ps->ctx, GPUOS_ERR_RANK, "%s: operands must have rank >= 1 (a has %d, b has %d)",
                                ps->name, ra, rb);
    M = ra >= 2 ? a->shape[ra - 2] : 1;
    K = a->shape[ra - 1];
    Kb = rb >= 2 ? b->shape[rb - 2] : b->shape[0];
    N = rb >= 2 ? b->shape[rb - 1] : 1;
    if (K != Kb)
        return gpuos__set_error(ps->ctx, GPUOS_ERR_SHAPE_MISMATCH,
                                "%s: a %s and b %s: a's last axis (%lld) must match b's %s axis (%lld)", ps->name,
                                plan_shape_str(ra, a->shape, x, sizeof x), plan_shape_str(rb, b->shape, y, sizeof y),
                                (long long)K, rb >= 2 ? "second-to-last" : "only", (long long)Kb);
    if (!plan_broadcast(bra, a->shape, brb, b->shape, &br, bshape))
        return gpuos__set_error(ps->ctx, GPUOS_ERR_SHAPE_MISMATCH, "%s: the batch axes of a %s and b %s do not broadcast",
                                ps->name, plan_shape_str(ra, a->shape, x, sizeof x),
                                plan_shape_str(rb, b->shape, y, sizeof y));
    orank = br;
    memcpy(oshape, bshape, sizeof oshape);
    if (ra >= 2) oshape[orank++] = M;
    if (rb >= 2) oshape[orank++] = N;
    if (!plan_same_shape(o, orank, oshape)) return plan_shape_error(ps, orank, oshape);
    if ((s = plan_check_output(ps)) != GPUOS_OK) return s;
    if ((s = plan_check_alias(ps, 0)) != GPUOS_OK) return s;

    memset(p, 0, sizeof *p);
    for (d = 0; d < br; d++) {
        int da = d - (br - bra), db = d - (br - brb);
        str[0][d] = (da < 0 || (a->shape[da] == 1 && bshape[d] != 1)) ? 0 : plan_bs(a, a->strides[da], es);
        str[1][d] = (db < 0 || (b->shape[db] == 1 && bshape[d] != 1)) ? 0 : plan_bs(b, b->strides[db], es);
        str[2][d] = plan_bs(o, o->strides[d], es);
    }
    p->batch_numel = plan_count(br, bshape);
    if (p->batch_numel > 0 && o->numel > 0) plan_merge(&br, bshape, 3, str); /* (no product past 2^63) */
    p->batch_rank = br;
    for (d = 0; d < br; d++) {
        p->batch_shape[d] = bshape[d];
        p->batch_a_stride[d] = str[0][d];
        p->batch_b_stride[d] = str[1][d];
        p->batch_out_stride[d] = str[2][d];
    }
    p->M = M;
    p->N = N;
    p->K = K;
    p->a_m = ra >= 2 ? plan_bs(a, a->strides[ra - 2], es) : 0;
    p->a_k = plan_bs(a, a->strides[ra - 1], es);
    p->b_k = plan_bs(b, rb >= 2 ? b->strides[rb - 2] : b->strides[0], es);
    p->b_n = rb >= 2 ? plan_bs(b, b->strides[rb - 1], es) : 0;
    p->o_m = ra >= 2 ? plan_bs(o, o->strides[o->rank - (rb >= 2 ? 2 : 1)], es) : 0;
    p->o_n = rb >= 2 ? plan_bs(o, o->strides[o->rank - 1], es) : 0;
    p->out = plan_ptr(o);
    p->a = plan_ptr(a);
    p->b = plan_ptr(b);
    plan_use(job, o);
    plan_use(job, a);
    plan_use(job, b);
    job->items = o->numel == 0 ? 0 : p->batch_numel * M;
    if (!gpuos__mul64(N > 0 ? N : 1, K > 0 ? K : 1, &job->item_cost)) job->item_cost = INT64_MAX;
    job->matmul_fn = gpuos__host_matmul(ps->key);
    if (!job->matmul_fn)
        return gpuos__set_error(ps->ctx, GPUOS_ERR_UNSUPPORTED_DTYPE,
                                "%s: this build has no host code for %s (make gen DTYPES=...)", ps->name,
                                plan_dtype(ps->key));
    return GPUOS_OK;
}

/* ---------------------------------------------------------------- common checks */
/* A run-time operator (rtops.c): element-wise with the signature of its definition. */
static gpuos_status plan_check_rt(plan_state *ps) {
    const gpuos_task *task = ps->task;
    gpuos__rt_version *v;
    gpuos_status s;
    int k;
    if ((s = gpuos__rt_lookup(ps->ctx, task->op, &v)) != GPUOS_OK) return s;
    ps->rt = v; /* released by gpuos_submit if anything below fails */
    ps->op = task->op;
    memset(&ps->rt_info, 0, sizeof ps->rt_info);
    ps->rt_info.name = v->name;
    ps->rt_info.kind = GPUOS__KIND_EW;
    ps->rt_info.n_in = ps->rt_info.n_in_max = (uint8_t)v->n_in;
    ps->rt_info.out_rule = GPUOS__OUT_ANY;
    ps->rt_info.key_input = GPUOS__KEY_OUT;
    ps->rt_info.inplace_ok = 1;
    ps->rt_info.dtypes = 0xffffffffu;
    ps->info = &ps->rt_info;
    ps->name = v->name;
    ps->out = task->out;
    if (!task->out) return gpuos__set_error(ps->ctx, GPUOS_ERR_NULL_POINTER, "%s: task->out is NULL", ps->name);
    for (k = 0; k < GPUOS_MAX_INPUTS; k++) {
        ps->in[k] = task->in[k];
        if (k < v->n_in && !task->in[k])
            return gpuos__set_error(ps->ctx, GPUOS_ERR_NULL_POINTER, "%s: %s is NULL; the operator takes %d input%s",
                                    ps->name, plan_operand(k), v->n_in, v->n_in == 1 ? "" : "s");
        if (k >= v->n_in && task->in[k])
            return gpuos__set_error(ps->ctx, GPUOS_ERR_INVALID_ARGUMENT, "%s: %s is set but the operator takes %d input%s",
                                    ps->name, plan_operand(k), v->n_in, v->n_in == 1 ? "" : "s");
    }
    if (ps->out->ctx != ps->ctx)
        return gpuos__set_error(ps->ctx, GPUOS_ERR_CONTEXT_MISMATCH, "%s: the output belongs to another context",
                                ps->name);
    if (ps->out->dtype != v->out_dtype)
        return gpuos__set_error(ps->ctx, GPUOS_ERR_DTYPE_MISMATCH, "%s: the output is %s but the operator writes %s",
                                ps->name, plan_dtype(ps->out->dtype), plan_dtype(v->out_dtype));
    for (k = 0; k < v->n_in; k++) {
        if (ps->in[k]->ctx != ps->ctx)
            return gpuos__set_error(ps->ctx, GPUOS_ERR_CONTEXT_MISMATCH, "%s: %s belongs to another context",
                                    ps->name, plan_operand(k));
        if (ps->in[k]->dtype != v->in_dtype[k])
            return gpuos__set_error(ps->ctx, GPUOS_ERR_DTYPE_MISMATCH, "%s: %s is %s but the operator reads %s",
                                    ps->name, plan_operand(k), plan_dtype(ps->in[k]->dtype), plan_dtype(v->in_dtype[k]));
    }
    ps->key = ps->out->dtype;
    return GPUOS_OK;
}

uint64_t gpuos__now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int gpuos__urgency(int priority, uint32_t deadline_us) {
    return deadline_us ? GPUOS_PRIORITY_HIGH : priority;
}

uint64_t gpuos__deadline_at(uint32_t deadline_us) {
    return deadline_us ? gpuos__now_ns() + (uint64_t)deadline_us * 1000u : 0;
}

gpuos_status gpuos__check_priority(const gpuos_context *ctx, const char *fn, const char *what, int priority) {
    if (priority == GPUOS_PRIORITY_NORMAL || priority == GPUOS_PRIORITY_HIGH) return GPUOS_OK;
    return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT,
                            "%s: %s is %d; use GPUOS_PRIORITY_NORMAL (0) or GPUOS_PRIORITY_HIGH (1)", fn, what, priority);
}

static gpuos_status plan_check_task(plan_state *ps) {
    const gpuos_task *task = ps->task;
    const gpuos__op_info *info;
    gpuos_dtype want;
    int k;
    char b1[128];

    if (task->struct_size != sizeof(gpuos_task))
        return gpuos__set_error(ps->ctx, GPUOS_ERR_INVALID_ARGUMENT,
                                "gpuos_submit: task->struct_size is %zu but this library's gpuos_task is %zu bytes; "
                                "start from GPUOS_TASK_INIT",
                                task->struct_size, sizeof(gpuos_task));
    if (gpuos__check_priority(ps->ctx, "gpuos_submit", "task->priority", task->priority) != GPUOS_OK)
        return GPUOS_ERR_INVALID_ARGUMENT;
    if ((long)task->op >= GPUOS_OP_RUNTIME_BASE) return plan_check_rt(ps);
    if ((unsigned)task->op >= (unsigned)GPUOS_OP_COUNT)
        return gpuos__set_error(ps->ctx, GPUOS_ERR_UNKNOWN_OP, "gpuos_submit: op %d is not an operator (0..%d)",
                                (int)task->op, (int)GPUOS_OP_COUNT - 1);
    ps->op = task->op;
    ps->info = info = &gpuos__ops[task->op];
    ps->name = info->name ? info->name : "gpuos_submit";
    ps->out = task->out;
    if (!task->out) return gpuos__set_error(ps->ctx, GPUOS_ERR_NULL_POINTER, "%s: task->out is NULL", ps->name);
    for (k = 0; k < GPUOS_MAX_INPUTS; k++) {
        ps->in[k] = task->in[k];
        if (k < info->n_in && !task->in[k])
            return gpuos__set_error(ps->ctx, GPUOS_ERR_NULL_POINTER, "%s: %s is NULL; the operator takes %d input%s",
                                    ps->name, plan_operand(k), info->n_in, info->n_in == 1 ? "" : "s");
        if (k >= info->n_in_max && task->in[k])
            return gpuos__set_error(ps->ctx, GPUOS_ERR_INVALID_ARGUMENT,
                                    "%s: %s is set but the operator takes at most %d input%s", ps->name,
                                    plan_operand(k), info->n_in_max, info->n_in_max == 1 ? "" : "s");
    }
    if (ps->out->ctx != ps->ctx)
        return gpuos__set_error(ps->ctx, GPUOS_ERR_CONTEXT_MISMATCH, "%s: the output belongs to another context",
                                ps->name);
    for (k = 0; k < GPUOS_MAX_INPUTS; k++)
        if (ps->in[k] && ps->in[k]->ctx != ps->ctx)
            return gpuos__set_error(ps->ctx, GPUOS_ERR_CONTEXT_MISMATCH, "%s: %s belongs to another context",
                                    ps->name, plan_operand(k));

    /* dtypes */
    ps->key = info->key_input == GPUOS__KEY_OUT ? ps->out->dtype : ps->in[info->key_input]->dtype;
    if (info->bool_input0 && ps->in[0]->dtype != GPUOS_BOOL)
        return gpuos__set_error(ps->ctx, GPUOS_ERR_DTYPE_MISMATCH, "%s: in[0] must be bool, not %s", ps->name,
                                plan_dtype(ps->in[0]->dtype));
    for (k = info->same_dtype_from; k < info->n_in_max && k < GPUOS_MAX_INPUTS; k++)
        if (ps->in[k] && ps->in[k]->dtype != ps->key)
            return gpuos__set_error(ps->ctx, GPUOS_ERR_DTYPE_MISMATCH,
                                    "%s: %s is %s but %s is %s; operands must share a dtype (use gpuos_cast)",
                                    ps->name, plan_operand(k), plan_dtype(ps->in[k]->dtype),
                                    info->key_input == GPUOS__KEY_OUT ? "out" : plan_operand(info->key_input),
                                    plan_dtype(ps->key));
    switch (info->out_rule) {
    case GPUOS__OUT_BOOL: want = GPUOS_BOOL; break;
    case GPUOS__OUT_I64: want = GPUOS_I64; break;
    case GPUOS__OUT_ANY: want = ps->out->dtype; break;
    default: want = ps->key; break;
    }
    /* the operator's dtypes first: an output dtype fixed for an input it cannot take anyway
       would only send the caller on a detour */
    if (!(info->dtypes >> ps->key & 1u))
        return gpuos__set_error(ps->ctx, GPUOS_ERR_UNSUPPORTED_DTYPE, "%s is not defined for %s (only for: %s)",
                                ps->name, plan_dtype(ps->key), plan_dtype_set(info->dtypes, b1, sizeof b1));
    if (ps->out->dtype != want)
        return gpuos__set_error(ps->ctx, GPUOS_ERR_DTYPE_MISMATCH, "%s: the output is %s but must be %s", ps->name,
                                plan_dtype(ps->out->dtype), plan_dtype(want));
    if (!(gpuos__generated_dtypes >> ps->key & 1u) || !(gpuos__generated_dtypes >> ps->out->dtype & 1u))
        return gpuos__set_error(ps->ctx, GPUOS_ERR_UNSUPPORTED_DTYPE,
                                "%s: this build was generated without %s (it has: %s; make gen DTYPES=...)", ps->name,
                                plan_dtype(!(gpuos__generated_dtypes >> ps->key & 1u) ? ps->key : ps->out->dtype),
                                plan_dtype_set(gpuos__generated_dtypes, b1, sizeof b1));

    /* ranks: the operator's minimum and the ranks this build was generated for */
    for (k = -1; k < GPUOS_MAX_INPUTS; k++) {
        const gpuos_tensor *t = k < 0 ? ps->out : ps->in[k];
        int rank;
        if (!t) continue;
        /* the rank that selects the code: the output's for element-wise ops, the inputs' otherwise */
        if ((info->kind == GPUOS__KIND_EW) != (k < 0)) continue;
        if (info->kind == GPUOS__KIND_ROWS && k > 0) continue; /* weight, bias: always [N] */
        rank = t->rank;
        if (!gpuos_op_supported(ps->op, ps->key, rank)) {
            if (!(gpuos__generated_ranks >> rank & 1u))
                return gpuos__set_error(ps->ctx, GPUOS_ERR_RANK,
                                        "%s: this build was generated without rank %d (make gen RANKS=...)", ps->name,
                                        rank);
            return gpuos__set_error(ps->ctx, GPUOS_ERR_RANK, "%s is not defined for %s of rank %d", ps->name,
                                    k < 0 ? "an output" : "an input", rank);
        }
    }
    return GPUOS_OK;
}

/* ---------------------------------------------------------------- gpuos_submit */
/* Validates task and builds its job (not queued): *out, to push or free (gpuos__job_free). */
gpuos_status gpuos__plan_task(gpuos_context *ctx, const gpuos_task *task, gpuos__job **out) {
    plan_state ps;
    gpuos_status s;
    *out = NULL;
    memset(&ps, 0, sizeof ps);
    ps.ctx = ctx;
    ps.task = task;
    if ((s = plan_check_task(&ps)) != GPUOS_OK) {
        gpuos__rt_release(ctx, ps.rt);
        return s;
    }
    ps.job = gpuos__job_alloc(ctx);
    if (!ps.job) {
        gpuos__rt_release(ctx, ps.rt);
        return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "%s: no memory for the task", ps.name);
    }
    ps.job->op = ps.op;
    ps.job->kind = ps.info->kind;
    ps.job->prio = gpuos__urgency(task->priority, task->deadline_us);
    ps.job->deadline_ns = gpuos__deadline_at(task->deadline_us);
    ps.job->dl_open = task->deadline_us != 0;
    switch (ps.info->kind) {
    case GPUOS__KIND_EW: s = plan_ew(&ps); break;
    case GPUOS__KIND_REDUCE: s = plan_reduce(&ps); break;
    case GPUOS__KIND_ROWS: s = plan_rows(&ps); break;
    case GPUOS__KIND_MATMUL: s = plan_matmul(&ps); break;
    default:
        s = gpuos__set_error(ctx, GPUOS_ERR_INTERNAL, "%s: unknown operator kind %d in the op table", ps.name,
                             (int)ps.info->kind);
        break;
    }
    if (s != GPUOS_OK) {
        gpuos__rt_release(ctx, ps.rt); /* NULL once the job took it */
        gpuos__job_free(ctx, ps.job);
        return s;
    }
    {
        int k;
        ps.job->dev_kernel = ps.job->rt ? GPUOS__RT_KERNEL_BASE + ps.job->rt->slot
                                        : gpuos__device_kernel_id(ps.op, ps.key, ps.out->dtype);
        if (ctx->cuda && ps.job->dev_kernel < 0) { /* refused now, not stuck in the queue */
            gpuos__job_free(ctx, ps.job);
            return gpuos__set_error(ctx, GPUOS_ERR_UNSUPPORTED, "%s: this build has no device code for %s", ps.name,
                                    plan_dtype(ps.key));
        }
        ps.job->elsize[0] = (uint8_t)gpuos__elsize(ps.out->dtype);
        for (k = 0; k < GPUOS_MAX_INPUTS; k++)
            ps.job->elsize[1 + k] = (uint8_t)(ps.in[k] ? gpuos__elsize(ps.in[k]->dtype) : 0);
    }
    *out = ps.job;
    return GPUOS_OK;
}

gpuos_status gpuos_submit(gpuos_context *ctx, const gpuos_task *task, uint64_t *seq) {
    gpuos__job *job;
    gpuos_status s;
    if (!ctx) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "gpuos_submit: ctx is NULL");
    if (!task) return gpuos__set_error(ctx, GPUOS_ERR_NULL_POINTER, "gpuos_submit: task is NULL");
    {
        const uint64_t t0 = GPUOS__PH_NOW();
        const int r = gpuos__queue_submit_repeat(ctx, task, seq, &s); /* the job of an identical recent task */
        GPUOS__PH(GPUOS__PH_SUBMIT, t0);
        GPUOS__PH_INC(GPUOS__PH_COUNT);
        if (r) return s;
    }
    if ((s = gpuos__plan_task(ctx, task, &job)) != GPUOS_OK) return s;
    return gpuos__queue_push_task(ctx, task, job, seq); /* frees the job on error */
}
