/* view.c - views: new tensor handles on the same memory, no copy.

   Every function checks its arguments, computes the new shape, strides and offset,
   and makes a handle with gpuos__tensor_make (which takes a storage reference). Only
   gpuos_view_strided can reach new memory, so it alone checks against the storage;
   the others keep the source's elements by construction. Axes may be negative. */
#include "gpuos_runtime.h"

#include <string.h> /* memcpy */

/* Normalises axis (negative from the end) for an axis count of n. */
static gpuos_status view_axis(const gpuos_context *ctx, const char *fn, int axis, int n, int *out) {
    int a = axis < 0 ? axis + n : axis;
    if (a < 0 || a >= n)
        return gpuos__set_error(ctx, GPUOS_ERR_AXIS, "%s: axis %d is out of range for rank %d (use %d..%d)", fn,
                                axis, n, -n, n - 1);
    *out = a;
    return GPUOS_OK;
}

/* Common start: t and out not NULL. */
static gpuos_status view_begin(const gpuos_tensor *t, gpuos_tensor **out, const char *fn) {
    if (out) *out = NULL;
    if (!t) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "%s: the tensor is NULL", fn);
    if (!out) return gpuos__set_error(t->ctx, GPUOS_ERR_NULL_POINTER, "%s: out is NULL", fn);
    return GPUOS_OK;
}

/* Makes the view after checking that its element count fits. */
static gpuos_status view_make(const gpuos_tensor *t, int rank, const int64_t *shape, const int64_t *strides,
                              int64_t offset, gpuos_tensor **out, const char *fn) {
    int64_t numel;
    gpuos_status s = gpuos__shape_numel(t->ctx, fn, rank, shape, &numel);
    if (s != GPUOS_OK) return s;
    return gpuos__tensor_make(t->ctx, t->st, t->dtype, rank, shape, strides, offset, out);
}

/* ---------------------------------------------------------------- slice */
gpuos_status gpuos_view_slice(const gpuos_tensor *t, int axis, int64_t start, int64_t stop, int64_t step,
                              gpuos_tensor **out) {
    static const char fn[] = "gpuos_view_slice";
    int64_t shape[GPUOS_MAX_RANK], strides[GPUOS_MAX_RANK], len, count = 0, offset, stride;
    gpuos_status s;
    int a = 0;
    if ((s = view_begin(t, out, fn)) != GPUOS_OK) return s;
    if ((s = view_axis(t->ctx, fn, axis, t->rank, &a)) != GPUOS_OK) return s;
    if (step == 0) return gpuos__set_error(t->ctx, GPUOS_ERR_INVALID_ARGUMENT, "%s: step is 0", fn);
    len = t->shape[a];
    /* Python's PySlice_AdjustIndices */
    if (start < 0) {
        start += len;
        if (start < 0) start = step < 0 ? -1 : 0;
    } else if (start >= len) {
        start = step < 0 ? len - 1 : len;
    }
    if (stop == GPUOS_SLICE_END && step < 0) {
        stop = -1; /* "to the end" going backwards: past index 0, as Python's None */
    } else if (stop < 0) {
        stop += len;
        if (stop < 0) stop = step < 0 ? -1 : 0;
    } else if (stop >= len) {
        stop = step < 0 ? len - 1 : len;
    }
    if (step < 0) {
        if (stop < start) count = (int64_t)((uint64_t)(start - stop - 1) / (0u - (uint64_t)step)) + 1;
    } else if (start < stop) {
        count = (stop - start - 1) / step + 1;
    }
    memcpy(shape, t->shape, sizeof shape);
    memcpy(strides, t->strides, sizeof strides);
    offset = t->offset;
    stride = t->strides[a];
    /* start is a valid index then, and the product fits: it reaches an element of the
       storage; unless the tensor is empty, whose strides may be anything (wrapping: an empty
       view's offset and strides reach nothing) */
    if (count > 0) offset = (int64_t)((uint64_t)offset + (uint64_t)start * (uint64_t)stride);
    shape[a] = count;
    if (count > 1) strides[a] = (int64_t)((uint64_t)stride * (uint64_t)step);
    return view_make(t, t->rank, shape, strides, offset, out, fn);
}

/* ---------------------------------------------------------------- permute, transpose */
gpuos_status gpuos_view_permute(const gpuos_tensor *t, const int *perm, gpuos_tensor **out) {
    static const char fn[] = "gpuos_view_permute";
    int64_t shape[GPUOS_MAX_RANK], strides[GPUOS_MAX_RANK];
    int seen[GPUOS_MAX_RANK] = {0}, i, a = 0;
    gpuos_status s;
    if ((s = view_begin(t, out, fn)) != GPUOS_OK) return s;
    if (!perm && t->rank > 0) return gpuos__set_error(t->ctx, GPUOS_ERR_NULL_POINTER, "%s: perm is NULL", fn);
    for (i = 0; i < t->rank; i++) {
        if ((s = view_axis(t->ctx, fn, perm[i], t->rank, &a)) != GPUOS_OK) return s;
        if (seen[a])
            return gpuos__set_error(t->ctx, GPUOS_ERR_INVALID_ARGUMENT,
                                    "%s: axis %d appears twice in perm; perm must be a permutation of 0..%d", fn, a,
                                    t->rank - 1);
        seen[a] = 1;
        shape[i] = t->shape[a];
        strides[i] = t->strides[a];
    }
    return view_make(t, t->rank, shape, strides, t->offset, out, fn);
}

gpuos_status gpuos_view_transpose(const gpuos_tensor *t, int axis0, int axis1, gpuos_tensor **out) {
    static const char fn[] = "gpuos_view_transpose";
    int64_t shape[GPUOS_MAX_RANK], strides[GPUOS_MAX_RANK], tmp;
    int a0 = 0, a1 = 0;
    gpuos_status s;
    if ((s = view_begin(t, out, fn)) != GPUOS_OK) return s;
    if ((s = view_axis(t->ctx, fn, axis0, t->rank, &a0)) != GPUOS_OK) return s;
    if ((s = view_axis(t->ctx, fn, axis1, t->rank, &a1)) != GPUOS_OK) return s;
    memcpy(shape, t->shape, sizeof shape);
    memcpy(strides, t->strides, sizeof strides);
    tmp = shape[a0];
    shape[a0] = shape[a1];
    shape[a1] = tmp;
    tmp = strides[a0];
    strides[a0] = strides[a1];
    strides[a1] = tmp;
    return view_make(t, t->rank, shape, strides, t->offset, out, fn);
}

/* ---------------------------------------------------------------- broadcast_to */
gpuos_status gpuos_view_broadcast_to(const gpuos_tensor *t, int rank, const int64_t *shape, gpuos_tensor **out) {
    static const char fn[] = "gpuos_view_broadcast_to";
    int64_t nshape[GPUOS_MAX_RANK], nstrides[GPUOS_MAX_RANK];
    int i, lead;
    gpuos_status s;
    if ((s = view_begin(t, out, fn)) != GPUOS_OK) return s;
    if (rank < 0 || rank > GPUOS_MAX_RANK)
        return gpuos__set_error(t->ctx, GPUOS_ERR_RANK, "%s: rank %d is outside 0..%d", fn, rank, GPUOS_MAX_RANK);
    if (rank > 0 && !shape) return gpuos__set_error(t->ctx, GPUOS_ERR_NULL_POINTER, "%s: shape is NULL", fn);
    for (i = 0; i < rank; i++)
        if (shape[i] < 0)
            return gpuos__set_error(t->ctx, GPUOS_ERR_INVALID_ARGUMENT, "%s: shape[%d] is %lld; sizes must be >= 0",
                                    fn, i, (long long)shape[i]);
    if (rank < t->rank)
        return gpuos__set_error(t->ctx, GPUOS_ERR_SHAPE_MISMATCH,
                                "%s: cannot broadcast a rank-%d tensor to rank %d (broadcasting only adds axes)",
                                fn, t->rank, rank);
    lead = rank - t->rank;
    for (i = 0; i < rank; i++) {
        nshape[i] = shape[i];
        if (i < lead) {
            nstrides[i] = 0;
        } else if (t->shape[i - lead] == shape[i]) {
            nstrides[i] = t->strides[i - lead];
        } else if (t->shape[i - lead] == 1) {
            nstrides[i] = 0;
        } else {
            return gpuos__set_error(t->ctx, GPUOS_ERR_SHAPE_MISMATCH,
                                    "%s: axis %d of size %lld cannot be broadcast to size %lld (only size 1 can)", fn,
                                    i - lead, (long long)t->shape[i - lead], (long long)shape[i]);
        }
    }
    return view_make(t, rank, nshape, nstrides, t->offset, out, fn);
}

/* ---------------------------------------------------------------- reshape */
/* NumPy's _attempt_nocopy_reshape (C order): 1 and newstrides when the old strides
   can express the new shape, else 0. Both element counts are > 0 and equal. */
static int view_nocopy_reshape(int old_rank, const int64_t *old_shape, const int64_t *old_strides, int new_rank,
                               const int64_t *new_shape, int64_t *new_strides) {
    int64_t od[GPUOS_MAX_RANK], os[GPUOS_MAX_RANK], np_, op, last_stride;
    int oldnd = 0, oi, oj, ni, nj, ok, nk;
    for (oi = 0; oi < old_rank; oi++) {
        if (old_shape[oi] != 1) {
            od[oldnd] = old_shape[oi];
            os[oldnd] = old_strides[oi];
            oldnd++;
        }
    }
    oi = 0;
    oj = 1;
    ni = 0;
    nj = 1;
    while (ni < new_rank && oi < oldnd) {
        np_ = new_shape[ni];
        op = od[oi];
        while (np_ != op) {
            if (np_ < op) np_ *= new_shape[nj++]; /* trailing 1s are handled below */
            else op *= od[oj++];
        }
        for (ok = oi; ok < oj - 1; ok++) /* can the old axes oi..oj-1 be combined? */
            if (os[ok] != od[ok + 1] * os[ok + 1]) return 0;
        new_strides[nj - 1] = os[oj - 1];
        for (nk = nj - 1; nk > ni; nk--) new_strides[nk - 1] = new_strides[nk] * new_shape[nk];
        ni = nj++;
        oi = oj++;
    }
    last_stride = ni >= 1 ? new_strides[ni - 1] : 1;
    for (nk = ni; nk < new_rank; nk++) new_strides[nk] = last_stride; /* trailing size-1 axes */
    return 1;
}

gpuos_status gpuos_view_reshape(const gpuos_tensor *t, int rank, const int64_t *shape, gpuos_tensor **out) {
    static const char fn[] = "gpuos_view_reshape";
    int64_t nshape[GPUOS_MAX_RANK], nstrides[GPUOS_MAX_RANK], known = 1;
    int i, infer = -1;
    gpuos_status s;
    if ((s = view_begin(t, out, fn)) != GPUOS_OK) return s;
    if (rank < 0 || rank > GPUOS_MAX_RANK)
        return gpuos__set_error(t->ctx, GPUOS_ERR_RANK, "%s: rank %d is outside 0..%d", fn, rank, GPUOS_MAX_RANK);
    if (rank > 0 && !shape) return gpuos__set_error(t->ctx, GPUOS_ERR_NULL_POINTER, "%s: shape is NULL", fn);
    for (i = 0; i < rank; i++) {
        nshape[i] = shape[i];
        if (shape[i] == -1) {
            if (infer >= 0)
                return gpuos__set_error(t->ctx, GPUOS_ERR_INVALID_ARGUMENT, "%s: more than one -1 in the shape", fn);
            infer = i;
        } else if (shape[i] < 0) {
            return gpuos__set_error(t->ctx, GPUOS_ERR_INVALID_ARGUMENT,
                                    "%s: shape[%d] is %lld; sizes must be >= 0 (or one -1)", fn, i,
                                    (long long)shape[i]);
        } else if (!gpuos__mul64(known, shape[i], &known)) {
            int j, zero = 0; /* an empty shape's other sizes may multiply past 2^63 (as gpuos_tensor_new allows) */
            for (j = 0; j < rank; j++) zero |= shape[j] == 0;
            if (!zero)
                return gpuos__set_error(t->ctx, GPUOS_ERR_SHAPE_MISMATCH, "%s: the new shape has too many elements",
                                        fn);
            known = 0;
        }
    }
    if (infer >= 0) {
        if (known == 0 || t->numel % known != 0)
            return gpuos__set_error(t->ctx, GPUOS_ERR_SHAPE_MISMATCH,
                                    "%s: cannot infer the -1 size: %lld elements do not divide into the other sizes "
                                    "(product %lld)",
                                    fn, (long long)t->numel, (long long)known);
        nshape[infer] = t->numel / known;
        known = t->numel;
    }
    if (known != t->numel)
        return gpuos__set_error(t->ctx, GPUOS_ERR_SHAPE_MISMATCH,
                                "%s: the tensor has %lld elements but the new shape has %lld", fn,
                                (long long)t->numel, (long long)known);
    if (t->numel == 0) { /* nothing is reachable: any strides do, take contiguous ones */
        gpuos__contiguous_strides(rank, nshape, nstrides);
    } else if (!view_nocopy_reshape(t->rank, t->shape, t->strides, rank, nshape, nstrides)) {
        return gpuos__set_error(t->ctx, GPUOS_ERR_NOT_VIEWABLE,
                                "%s: the tensor's strides cannot express the new shape without a copy; copy it into "
                                "a contiguous tensor (gpuos_copy) and reshape that",
                                fn);
    }
    return view_make(t, rank, nshape, nstrides, t->offset, out, fn);
}

/* ---------------------------------------------------------------- squeeze, unsqueeze */
gpuos_status gpuos_view_squeeze(const gpuos_tensor *t, int axis, gpuos_tensor **out) {
    static const char fn[] = "gpuos_view_squeeze";
    int64_t shape[GPUOS_MAX_RANK], strides[GPUOS_MAX_RANK];
    int a = 0, i, n = 0;
    gpuos_status s;
    if ((s = view_begin(t, out, fn)) != GPUOS_OK) return s;
    if ((s = view_axis(t->ctx, fn, axis, t->rank, &a)) != GPUOS_OK) return s;
    if (t->shape[a] != 1)
        return gpuos__set_error(t->ctx, GPUOS_ERR_INVALID_ARGUMENT,
                                "%s: axis %d has size %lld; only an axis of size 1 can be removed", fn, a,
                                (long long)t->shape[a]);
    for (i = 0; i < t->rank; i++) {
        if (i == a) continue;
        shape[n] = t->shape[i];
        strides[n] = t->strides[i];
        n++;
    }
    return view_make(t, n, shape, strides, t->offset, out, fn);
}

gpuos_status gpuos_view_unsqueeze(const gpuos_tensor *t, int axis, gpuos_tensor **out) {
    static const char fn[] = "gpuos_view_unsqueeze";
    int64_t shape[GPUOS_MAX_RANK], strides[GPUOS_MAX_RANK];
    int a = 0, i, n = 0;
    gpuos_status s;
    if ((s = view_begin(t, out, fn)) != GPUOS_OK) return s;
    if (t->rank >= GPUOS_MAX_RANK)
        return gpuos__set_error(t->ctx, GPUOS_ERR_RANK, "%s: the tensor already has the maximum rank %d", fn,
                                GPUOS_MAX_RANK);
    if ((s = view_axis(t->ctx, fn, axis, t->rank + 1, &a)) != GPUOS_OK) return s;
    for (i = 0; i <= t->rank; i++) {
        if (i == a) {
            shape[i] = 1;
            /* any value works for size 1: size x stride of the next axis where that fits (it
               may not in an empty tensor, whose other sizes may multiply past 2^63), else its
               stride */
            strides[i] = 1;
            if (a < t->rank && (t->shape[a] == 0 || !gpuos__mul64(t->shape[a], t->strides[a], &strides[i])))
                strides[i] = t->strides[a];
            continue;
        }
        shape[i] = t->shape[n];
        strides[i] = t->strides[n];
        n++;
    }
    return view_make(t, t->rank + 1, shape, strides, t->offset, out, fn);
}

/* ---------------------------------------------------------------- strided */
gpuos_status gpuos_view_strided(const gpuos_tensor *t, int rank, const int64_t *shape, const int64_t *strides,
                                int64_t offset, gpuos_tensor **out) {
    static const char fn[] = "gpuos_view_strided";
    int64_t numel;
    gpuos_status s;
    if ((s = view_begin(t, out, fn)) != GPUOS_OK) return s;
    if (rank < 0 || rank > GPUOS_MAX_RANK)
        return gpuos__set_error(t->ctx, GPUOS_ERR_RANK, "%s: rank %d is outside 0..%d", fn, rank, GPUOS_MAX_RANK);
    if (rank > 0 && (!shape || !strides))
        return gpuos__set_error(t->ctx, GPUOS_ERR_NULL_POINTER, "%s: %s is NULL", fn, shape ? "strides" : "shape");
    if ((s = gpuos__shape_numel(t->ctx, fn, rank, shape, &numel)) != GPUOS_OK) return s;
    s = gpuos__check_in_storage(t->ctx, fn, t->st->bytes, gpuos__elsize(t->dtype), rank, shape, strides, offset);
    if (s != GPUOS_OK) return s;
    return gpuos__tensor_make(t->ctx, t->st, t->dtype, rank, shape, strides, offset, out);
}
