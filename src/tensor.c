/* tensor.c - storages and tensor handles; upload and download.

   A storage is the memory (owned: 64-byte aligned malloc; wrapped: the caller's
   pointer and size). A tensor handle is a view of a storage: dtype, rank, shape,
   element strides (0 and negative allowed) and an element offset. Every handle and
   every queued job holds a reference on its storage (ctx->mu), and every storage holds
   one on its context, so memory lives until the last user is gone.

   Invariant kept by every constructor (here and in view.c): each element a handle can
   reach lies inside its storage. */
#include "gpuos_runtime.h"

#include <math.h>   /* isnan */
#include <stdlib.h> /* malloc, free, getenv */
#include <string.h> /* memcpy */

/* Bytes per element; 0 for a value that is not a dtype (every dtype of gen/ops.py is in
   GPUOS__DTYPES, src/generated/gpuos_dtypes.h). */
size_t gpuos__elsize(gpuos_dtype dtype) {
    switch (dtype) {
#define TENSOR_SIZE(E, N, CLS, T, C, SIZE, LO, HI, VT) case E: return SIZE;
    GPUOS__DTYPES(TENSOR_SIZE)
#undef TENSOR_SIZE
    default: return 0;
    }
}

/* ---------------------------------------------------------------- checked arithmetic */
int gpuos__mul64(int64_t a, int64_t b, int64_t *r) {
    if (a == 0 || b == 0) {
        *r = 0;
        return 1;
    }
    if (a > 0) {
        if (b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a) return 0;
    } else {
        if (b > 0 ? a < INT64_MIN / b : b < INT64_MAX / a) return 0;
    }
    *r = a * b;
    return 1;
}

int gpuos__add64(int64_t a, int64_t b, int64_t *r) {
    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) return 0;
    *r = a + b;
    return 1;
}

/* ---------------------------------------------------------------- shapes and extents */
gpuos_status gpuos__shape_numel(const gpuos_context *ctx, const char *what, int rank, const int64_t *shape,
                                int64_t *numel) {
    int64_t n = 1;
    int i, zero = 0;
    for (i = 0; i < rank; i++) {
        if (shape[i] < 0)
            return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT, "%s: shape[%d] is %lld; sizes must be >= 0",
                                    what, i, (long long)shape[i]);
        if (shape[i] == 0) zero = 1;
    }
    if (zero) {
        *numel = 0;
        return GPUOS_OK;
    }
    for (i = 0; i < rank; i++)
        if (!gpuos__mul64(n, shape[i], &n))
            return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT,
                                    "%s: the shape has more than 2^63 elements", what);
    *numel = n;
    return GPUOS_OK;
}

int gpuos__view_extent(int rank, const int64_t *shape, const int64_t *strides, int64_t *lo, int64_t *hi) {
    int64_t l = 0, h = 0, d;
    int i;
    for (i = 0; i < rank; i++) {
        if (shape[i] <= 1) continue;
        if (!gpuos__mul64(shape[i] - 1, strides[i], &d)) return 0;
        if (!(d < 0 ? gpuos__add64(l, d, &l) : gpuos__add64(h, d, &h))) return 0;
    }
    *lo = l;
    *hi = h;
    return 1;
}

gpuos_status gpuos__check_in_storage(const gpuos_context *ctx, const char *fn, size_t bytes, size_t elsize,
                                     int rank, const int64_t *shape, const int64_t *strides, int64_t offset) {
    int64_t numel = 1, lo, hi, first, last, end_byte;
    int i;
    for (i = 0; i < rank; i++)
        if (shape[i] == 0) numel = 0;
    if (numel == 0) return GPUOS_OK; /* reaches nothing */
    if (!gpuos__view_extent(rank, shape, strides, &lo, &hi) || !gpuos__add64(offset, lo, &first) ||
        !gpuos__add64(offset, hi, &last) || !gpuos__add64(last, 1, &end_byte) ||
        !gpuos__mul64(end_byte, (int64_t)elsize, &end_byte))
        return gpuos__set_error(ctx, GPUOS_ERR_BAD_STRIDES, "%s: the view's strides overflow 64-bit offsets", fn);
    if (first < 0)
        return gpuos__set_error(ctx, GPUOS_ERR_BAD_STRIDES,
                                "%s: the view reaches element %lld, before the start of its memory (offset %lld)",
                                fn, (long long)first, (long long)offset);
    if ((uint64_t)end_byte > (uint64_t)bytes)
        return gpuos__set_error(ctx, GPUOS_ERR_BAD_STRIDES,
                                "%s: the view reaches element %lld (bytes up to %lld) but its memory has %llu bytes",
                                fn, (long long)last, (long long)end_byte, (unsigned long long)bytes);
    return GPUOS_OK;
}

int gpuos__is_contiguous(int rank, const int64_t *shape, const int64_t *strides) {
    int64_t expect = 1;
    int i;
    for (i = 0; i < rank; i++)
        if (shape[i] == 0) return 1;
    for (i = rank - 1; i >= 0; i--) {
        if (shape[i] == 1) continue;
        if (strides[i] != expect) return 0;
        expect *= shape[i];
    }
    return 1;
}

/* ---------------------------------------------------------------- reference counts */
void gpuos__storage_retain_locked(gpuos__storage *st) { st->refs++; }

int gpuos__storage_release_locked(gpuos__storage *st) {
    gpuos_context *ctx = st->ctx;
    if (--st->refs > 0) return 0;
    if (st->on_device && st->owned) {
        if (ctx->cuda) { /* after destroy: left to the driver */
            if (st->pinned)
                gpuos__cuda_free_pinned_locked(ctx, st->pinned);
            else
                gpuos__cuda_free_locked(ctx, st->data);
        }
    } else {
        free(st->block);
    }
    if (!st->owned) GPUOS__AADD(&ctx->host_wraps, -1, GPUOS__RELAXED);
    free(st->cuda_log);
    free(st);
    return --ctx->refs == 0;
}

/* A storage with one reference (the caller's), holding one on ctx; pinned: mapped pinned
   host memory on GPU contexts (ordinary memory on host contexts). */
static gpuos_status tensor_storage_new(gpuos_context *ctx, size_t bytes, void *wrap, int pinned,
                                       gpuos__storage **out) {
    gpuos__storage *st = (gpuos__storage *)malloc(sizeof *st);
    if (!st) return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "no memory for a tensor");
    st->ctx = ctx;
    st->bytes = bytes;
    st->refs = 1;
    st->last_use = 0;
    st->host_w0 = st->host_u0 = 0;
    st->cuda_log = NULL;
    st->on_device = ctx->cuda != NULL;
    st->pinned = NULL;
    if (wrap) {
        st->owned = 0;
        st->block = NULL;
        st->data = (char *)wrap;
        GPUOS__AADD(&ctx->host_wraps, 1, GPUOS__RELAXED); /* (queue_host_lane) */
    } else {
        size_t want = bytes + 64u;
        uintptr_t p;
        if (want < bytes) { /* wraps around */
            free(st);
            return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "cannot allocate %llu bytes",
                                    (unsigned long long)bytes);
        }
        st->owned = 1;
        if (ctx->cuda) { /* device memory, 256-byte aligned by the driver; pinned: page-aligned */
            void *d = NULL;
            gpuos_status s = pinned ? gpuos__cuda_alloc_pinned(ctx, bytes, &st->pinned, &d)
                                    : gpuos__cuda_alloc(ctx, bytes, &d);
            if (s != GPUOS_OK) {
                free(st);
                return s;
            }
            st->block = NULL;
            st->data = (char *)d;
            goto done;
        }
        st->block = malloc(want);
        if (!st->block) {
            free(st);
            return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "cannot allocate %llu bytes for a tensor",
                                    (unsigned long long)bytes);
        }
        p = ((uintptr_t)st->block + 63u) & ~(uintptr_t)63u;
        st->data = (char *)p;
        if (pinned) st->pinned = st->data;
    }
done:
    gpuos__context_ref(ctx);
    *out = st;
    return GPUOS_OK;
}

/* Drops the creator's reference of a storage that no handle uses yet. */
static void tensor_storage_drop(gpuos__storage *st) {
    gpuos_context *ctx = st->ctx;
    int last;
    pthread_mutex_lock(&ctx->mu);
    last = gpuos__storage_release_locked(st);
    pthread_mutex_unlock(&ctx->mu);
    if (last) gpuos__context_free(ctx);
}

gpuos_status gpuos__tensor_make(gpuos_context *ctx, gpuos__storage *st, gpuos_dtype dtype, int rank,
                                const int64_t *shape, const int64_t *strides, int64_t offset, gpuos_tensor **out) {
    gpuos_tensor *t = (gpuos_tensor *)malloc(sizeof *t);
    int i;
    if (!t) return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "no memory for a tensor handle");
    memset(t, 0, sizeof *t);
    t->ctx = ctx;
    t->st = st;
    t->dtype = dtype;
    t->rank = rank;
    t->offset = offset;
    t->numel = 1;
    for (i = 0; i < rank; i++) {
        t->shape[i] = shape[i];
        t->strides[i] = strides[i];
    }
    /* validated by the caller: the product fits, unless a size is 0 (then the others may
       multiply past 2^63 before it, and numel is 0) */
    for (i = 0; i < rank; i++)
        if (shape[i] == 0) t->numel = 0;
    for (i = 0; i < rank && t->numel; i++) t->numel *= shape[i];
    pthread_mutex_lock(&ctx->mu);
    gpuos__storage_retain_locked(st);
    t->uid = ++ctx->tensor_uid;
    pthread_mutex_unlock(&ctx->mu);
    *out = t;
    return GPUOS_OK;
}

/* ---------------------------------------------------------------- argument checks */
static gpuos_status tensor_check_dtype_rank(gpuos_context *ctx, const char *fn, gpuos_dtype dtype, int rank,
                                            const int64_t *shape) {
    if ((unsigned)dtype >= (unsigned)GPUOS_DTYPE_COUNT)
        return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT, "%s: dtype %d is not a gpuos_dtype", fn,
                                (int)dtype);
    if (rank < 0 || rank > GPUOS_MAX_RANK)
        return gpuos__set_error(ctx, GPUOS_ERR_RANK, "%s: rank %d is outside 0..%d", fn, rank, GPUOS_MAX_RANK);
    if (rank > 0 && !shape) return gpuos__set_error(ctx, GPUOS_ERR_NULL_POINTER, "%s: shape is NULL", fn);
    return GPUOS_OK;
}

void gpuos__contiguous_strides(int rank, const int64_t *shape, int64_t *strides) {
    int64_t s = 1;
    int i;
    for (i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        /* a zero-size tensor's other sizes may multiply past 2^63 (numel is 0): its strides
           reach no element, so they stop growing there */
        if (shape[i] > 0) {
            int64_t p;
            if (gpuos__mul64(s, shape[i], &p)) s = p;
        }
    }
}

/* ---------------------------------------------------------------- creation */
static gpuos_status tensor_new(const char *fn, gpuos_context *ctx, gpuos_dtype dtype, int rank,
                               const int64_t *shape, int pinned, gpuos_tensor **out) {
    int64_t numel, bytes, strides[GPUOS_MAX_RANK];
    gpuos__storage *st;
    gpuos_status s;
    if (out) *out = NULL;
    if (!ctx) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "%s: ctx is NULL", fn);
    if (!out) return gpuos__set_error(ctx, GPUOS_ERR_NULL_POINTER, "%s: out is NULL", fn);
    if ((s = gpuos__check_alive(ctx, fn)) != GPUOS_OK) return s;
    if ((s = tensor_check_dtype_rank(ctx, fn, dtype, rank, shape)) != GPUOS_OK) return s;
    if (gpuos__elsize(dtype) == 0) /* a dtype of gpuos.h that src/generated/gpuos_dtypes.h lacks: regenerate */
        return gpuos__set_error(ctx, GPUOS_ERR_UNSUPPORTED_DTYPE,
                                "%s: dtype %d has no element size in this build (src/generated/gpuos_dtypes.h; "
                                "run `make gen`)", fn, (int)dtype);
    if ((s = gpuos__shape_numel(ctx, fn, rank, shape, &numel)) != GPUOS_OK) return s;
    if (!gpuos__mul64(numel, (int64_t)gpuos__elsize(dtype), &bytes) || (uint64_t)bytes > (uint64_t)SIZE_MAX / 2)
        return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "%s: %lld elements are too many", fn,
                                (long long)numel);
    gpuos__contiguous_strides(rank, shape, strides);
    if ((s = tensor_storage_new(ctx, (size_t)bytes, NULL, pinned, &st)) != GPUOS_OK) return s;
    s = gpuos__tensor_make(ctx, st, dtype, rank, shape, strides, 0, out);
    tensor_storage_drop(st); /* the handle holds the storage now (or nothing does) */
    return s;
}

gpuos_status gpuos_tensor_new(gpuos_context *ctx, gpuos_dtype dtype, int rank, const int64_t *shape,
                              gpuos_tensor **out) {
    return tensor_new("gpuos_tensor_new", ctx, dtype, rank, shape, 0, out);
}

gpuos_status gpuos_tensor_new_pinned(gpuos_context *ctx, gpuos_dtype dtype, int rank, const int64_t *shape,
                                     gpuos_tensor **out) {
    return tensor_new("gpuos_tensor_new_pinned", ctx, dtype, rank, shape, 1, out);
}

void *gpuos_tensor_host_data(const gpuos_tensor *t) {
    if (!t || !t->st->pinned) return NULL;
    if (t->numel == 0) return t->st->pinned; /* an empty view may carry any offset: it reaches nothing */
    return (char *)t->st->pinned + t->offset * (int64_t)gpuos__elsize(t->dtype);
}

void gpuos__store_f64(gpuos_dtype dtype, double v, void *dst) {
    /* Float to integer: truncate toward zero, saturate, NaN -> 0. */
#define TENSOR_SAT(T, LO, HI)                                   \
    do {                                                        \
        T x_;                                                   \
        if (isnan(v)) x_ = 0;                                   \
        else if (v <= (double)(LO)) x_ = (LO);                  \
        else if (v >= (double)(HI)) x_ = (HI);                  \
        else x_ = (T)v;                                         \
        memcpy(dst, &x_, sizeof x_);                            \
    } while (0)
    /* one case per dtype (GPUOS__DTYPES), by class; i64: 2^63 as double saturates */
#define TENSOR_STORE_BOOL(T, N, LO, HI) { uint8_t b = (uint8_t)(v != 0.0 || isnan(v)); memcpy(dst, &b, 1); }
#define TENSOR_STORE_SINT(T, N, LO, HI) TENSOR_SAT(T, LO, HI)
#define TENSOR_STORE_UINT(T, N, LO, HI) TENSOR_SAT(T, LO, HI)
#define TENSOR_STORE_HALF(T, N, LO, HI) { T h = gpuos__f64_to_##N(v); memcpy(dst, &h, sizeof h); }
#define TENSOR_STORE_FLOAT(T, N, LO, HI) { T f = (T)v; memcpy(dst, &f, sizeof f); }
#define TENSOR_STORE(E, N, CLS, T, C, SIZE, LO, HI, VT) case E: TENSOR_STORE_##CLS(T, N, LO, HI); break;
    switch (dtype) {
    GPUOS__DTYPES(TENSOR_STORE)
    default: break;
    }
#undef TENSOR_STORE
#undef TENSOR_STORE_BOOL
#undef TENSOR_STORE_SINT
#undef TENSOR_STORE_UINT
#undef TENSOR_STORE_HALF
#undef TENSOR_STORE_FLOAT
#undef TENSOR_SAT
}

gpuos_status gpuos_tensor_scalar(gpuos_context *ctx, gpuos_dtype dtype, double value, gpuos_tensor **out) {
    gpuos_status s;
    if (out) *out = NULL;
    if (!ctx) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "gpuos_tensor_scalar: ctx is NULL");
    if (!out) return gpuos__set_error(ctx, GPUOS_ERR_NULL_POINTER, "gpuos_tensor_scalar: out is NULL");
    if ((s = gpuos_tensor_new(ctx, dtype, 0, NULL, out)) != GPUOS_OK) return s;
    {
        double bits = 0.0; /* 8 aligned bytes: room for any dtype */
        gpuos__store_f64(dtype, value, &bits);
        s = gpuos_upload(ctx, *out, &bits, gpuos__elsize(dtype)); /* host or device memory */
    }
    if (s != GPUOS_OK) {
        gpuos_tensor_release(*out);
        *out = NULL;
    }
    return s;
}

gpuos_status gpuos_tensor_wrap(gpuos_context *ctx, void *data, size_t bytes, gpuos_dtype dtype, int rank,
                               const int64_t *shape, const int64_t *strides, gpuos_tensor **out) {
    int64_t numel, cstrides[GPUOS_MAX_RANK];
    gpuos__storage *st;
    gpuos_status s;
    size_t elsize;
    if (out) *out = NULL;
    if (!ctx) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "gpuos_tensor_wrap: ctx is NULL");
    if (!out) return gpuos__set_error(ctx, GPUOS_ERR_NULL_POINTER, "gpuos_tensor_wrap: out is NULL");
    if (!data) return gpuos__set_error(ctx, GPUOS_ERR_NULL_POINTER, "gpuos_tensor_wrap: data is NULL");
    if ((s = gpuos__check_alive(ctx, "gpuos_tensor_wrap")) != GPUOS_OK) return s;
    if ((s = tensor_check_dtype_rank(ctx, "gpuos_tensor_wrap", dtype, rank, shape)) != GPUOS_OK) return s;
    if ((s = gpuos__shape_numel(ctx, "gpuos_tensor_wrap", rank, shape, &numel)) != GPUOS_OK) return s;
    elsize = gpuos__elsize(dtype);
    if ((uintptr_t)data % elsize != 0)
        return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT,
                                "gpuos_tensor_wrap: data %p is not aligned to the %zu-byte elements of %s", data,
                                elsize, gpuos_dtype_name(dtype));
    if (!strides) {
        gpuos__contiguous_strides(rank, shape, cstrides);
        strides = cstrides;
    }
    s = gpuos__check_in_storage(ctx, "gpuos_tensor_wrap", bytes, elsize, rank, shape, strides, 0);
    if (s != GPUOS_OK) return s;
    if ((s = tensor_storage_new(ctx, bytes, data, 0, &st)) != GPUOS_OK) return s;
    s = gpuos__tensor_make(ctx, st, dtype, rank, shape, strides, 0, out);
    tensor_storage_drop(st);
    return s;
}

void gpuos_tensor_release(gpuos_tensor *t) {
    gpuos_context *ctx;
    int last;
    if (!t) return;
    ctx = t->ctx;
    pthread_mutex_lock(&ctx->mu);
    last = gpuos__storage_release_locked(t->st);
    pthread_mutex_unlock(&ctx->mu);
    free(t);
    if (last) gpuos__context_free(ctx);
}

gpuos_status gpuos_tensor_get_info(const gpuos_tensor *t, gpuos_tensor_info *info) {
    int i;
    if (!t) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "gpuos_tensor_get_info: t is NULL");
    if (!info) return gpuos__set_error(t->ctx, GPUOS_ERR_NULL_POINTER, "gpuos_tensor_get_info: info is NULL");
    memset(info, 0, sizeof *info);
    info->dtype = t->dtype;
    info->rank = t->rank;
    for (i = 0; i < t->rank; i++) {
        info->shape[i] = t->shape[i];
        info->strides[i] = t->strides[i];
    }
    info->offset = t->offset;
    info->numel = t->numel;
    info->contiguous = gpuos__is_contiguous(t->rank, t->shape, t->strides);
    info->owned = t->st->owned;
    return GPUOS_OK;
}

/* ---------------------------------------------------------------- upload / download */
/* The view's last two merged axes when its rows lie closer together than its columns (a
   transposed view): in tiles of TENSOR_TILE_R x TENSOR_TILE_C elements, so that the view's
   cache lines are read once per tile rather than once per row (a 2048 x 2048 f32 transposed
   view's download: 23 ms against 1.2 contiguous, a review). Returns 0 (nothing done) when
   that is not the case. sh, sd: the merged axes (n >= 2), element strides. 32 x 16: at
   power-of-two sizes a tile's column of lines shares one L1 set, which 64 columns overflowed
   (CI-class CPU, best of 8, 16 x 64 -> 32 x 16: f32 1024^2 transposed download 1.85 -> 0.9-1.1
   ms, upload 6.2 -> 2.0; 2048^2 9.0 -> 6.5, 25.4 -> 10.0; 1000^2 0.5 -> 0.55, 0.9 -> 0.8). */
#ifndef TENSOR_TILE_R
#define TENSOR_TILE_R 32
#endif
#ifndef TENSOR_TILE_C
#define TENSOR_TILE_C 16
#endif
static int tensor_copy_tiles(char *base, size_t elsize, int n, const int64_t *sh, const int64_t *sd, char *packed,
                             int to_view) {
    const int64_t R = sh[n - 2], C = sh[n - 1], es = (int64_t)elsize;
    const int64_t sr = sd[n - 2] * es, sc = sd[n - 1] * es;
    int64_t idx[GPUOS_MAX_RANK] = {0}, r0, c0, r, c;
    int i;
    if (gpuos__abs64(sc) <= 64 || gpuos__abs64(sr) >= gpuos__abs64(sc) || C < 2 * TENSOR_TILE_C || R < 2)
        return 0;
    for (;;) { /* each matrix of the outer axes' odometer */
        char *m = base;
        for (i = 0; i < n - 2; i++) m += idx[i] * sd[i] * es;
        for (r0 = 0; r0 < R; r0 += TENSOR_TILE_R)
            for (c0 = 0; c0 < C; c0 += TENSOR_TILE_C) {
                const int64_t r1 = R - r0 < TENSOR_TILE_R ? R : r0 + TENSOR_TILE_R,
                              c1 = C - c0 < TENSOR_TILE_C ? C : c0 + TENSOR_TILE_C;
                for (r = r0; r < r1; r++)
                    for (c = c0; c < c1; c++)
                        if (to_view) gpuos__copy_el(m + r * sr + c * sc, packed + (r * C + c) * es, elsize);
                        else gpuos__copy_el(packed + (r * C + c) * es, m + r * sr + c * sc, elsize);
            }
        packed += R * C * es;
        for (i = n - 3; i >= 0; i--) {
            if (++idx[i] < sh[i]) break;
            idx[i] = 0;
        }
        if (i < 0) break;
    }
    return 1;
}

/* Copies between the view (base + offset, element strides) and packed row-major
   memory, in logical order. to_view: packed -> view, else view -> packed. */
static void tensor_copy_strided(char *base, size_t elsize, int rank, const int64_t *shape, const int64_t *strides,
                                char *packed, int to_view) {
    int64_t sh[GPUOS_MAX_RANK], sd[GPUOS_MAX_RANK], idx[GPUOS_MAX_RANK], run, run_bytes;
    int n = 0, i, contiguous_run;
    /* drop size-1 axes, merge axes that are contiguous with their inner neighbour */
    for (i = 0; i < rank; i++) {
        if (shape[i] == 1) continue;
        if (n > 0 && sd[n - 1] == strides[i] * shape[i]) {
            sh[n - 1] *= shape[i];
            sd[n - 1] = strides[i];
        } else {
            sh[n] = shape[i];
            sd[n] = strides[i];
            n++;
        }
    }
    if (n == 0) { /* one element */
        if (to_view) memcpy(base, packed, elsize);
        else memcpy(packed, base, elsize);
        return;
    }
    if (n >= 2 && tensor_copy_tiles(base, elsize, n, sh, sd, packed, to_view)) return;
    contiguous_run = sd[n - 1] == 1;
    run = sh[n - 1];
    run_bytes = run * (int64_t)elsize;
    for (i = 0; i < n; i++) idx[i] = 0;
    for (;;) {
        char *p = base;
        for (i = 0; i < n - 1; i++) p += idx[i] * sd[i] * (int64_t)elsize;
        if (contiguous_run) {
            if (to_view) memcpy(p, packed, (size_t)run_bytes);
            else memcpy(packed, p, (size_t)run_bytes);
            packed += run_bytes;
        } else {
            int64_t j, step = sd[n - 1] * (int64_t)elsize;
            for (j = 0; j < run; j++, p += step, packed += elsize) {
                if (to_view) gpuos__copy_el(p, packed, elsize);
                else gpuos__copy_el(packed, p, elsize);
            }
        }
        for (i = n - 2; i >= 0; i--) { /* odometer over the outer axes */
            if (++idx[i] < sh[i]) break;
            idx[i] = 0;
        }
        if (i < 0) break;
    }
}

/* Device memory: a contiguous view is copied directly; any other view goes through a
   contiguous device tensor and a queued copy task. */
static gpuos_status tensor_transfer_device(gpuos_context *ctx, const gpuos_tensor *t, void *host, size_t bytes,
                                           int to_view) {
    const size_t elsize = gpuos__elsize(t->dtype);
    gpuos_tensor *tmp = NULL;
    gpuos_status s;
    if (gpuos__is_contiguous(t->rank, t->shape, t->strides))
        return gpuos__cuda_memcpy(ctx, to_view ? (void *)(t->st->data + t->offset * (int64_t)elsize) : host,
                                  to_view ? host : (void *)(t->st->data + t->offset * (int64_t)elsize), bytes,
                                  to_view);
    s = gpuos_tensor_new(ctx, t->dtype, t->rank, t->shape, &tmp);
    if (s != GPUOS_OK) return s;
    if (to_view) {
        s = gpuos__cuda_memcpy(ctx, tmp->st->data, host, bytes, 1);
        if (s == GPUOS_OK) s = gpuos_copy(ctx, (gpuos_tensor *)t, tmp);
        if (s == GPUOS_OK) s = gpuos_wait(ctx, ctx->cfg.wait_timeout_ms);
    } else {
        s = gpuos_copy(ctx, tmp, (gpuos_tensor *)t);
        if (s == GPUOS_OK) s = gpuos_wait(ctx, ctx->cfg.wait_timeout_ms);
        if (s == GPUOS_OK) s = gpuos__cuda_memcpy(ctx, host, tmp->st->data, bytes, 0);
    }
    gpuos_tensor_release(tmp);
    return s;
}

/* The staging of small GPU downloads: one mapped pinned buffer of TENSOR_STAGE_BYTES
   (ctx->stage_bytes while it exists), allocated when the CUDA backend has opened, before the
   kernel's first launch (memory allocated while the kernel runs is invisible to
   compute-sanitizer memcheck, and the allocation is not paid by the first download). No
   pinned memory, or the diagnostic GPUOS_CUDA_STAGE=0: stage_bytes 0, downloads through the
   driver's copy. */
#define TENSOR_STAGE_BYTES 65536
void gpuos__stage_open(gpuos_context *ctx) {
    int64_t n = TENSOR_STAGE_BYTES;
    if (getenv("GPUOS_CUDA_STAGE") && atoi(getenv("GPUOS_CUDA_STAGE")) == 0) return;
    if (gpuos_tensor_new_pinned(ctx, GPUOS_U8, 1, &n, &ctx->stage_buf) == GPUOS_OK)
        ctx->stage_bytes = TENSOR_STAGE_BYTES; /* (else the detail stays as gpuos_last_error's) */
}

void gpuos__stage_close(gpuos_context *ctx) {
    pthread_mutex_lock(&ctx->stage_mu);
    gpuos_tensor_release(ctx->stage_view);
    gpuos_tensor_release(ctx->stage_buf);
    ctx->stage_view = ctx->stage_buf = NULL;
    ctx->stage_bytes = 0;
    pthread_mutex_unlock(&ctx->stage_mu);
}

/* A small download on a GPU: one copy task from t into the mapped pinned staging (ordered after
   t's writers like any task), a wait for that task, and a memcpy out of the staging. The
   driver's copy and its stream synchronisation took as long again as the wait for the
   writers; this is one trip through the queue. The staging view (contiguous, t's dtype and
   shape) is kept while downloads repeat them, so a repeated download is a repeated task
   (the repeat table's). *done = 0: not taken (the caller copies). */
static gpuos_status tensor_download_staged(gpuos_context *ctx, const gpuos_tensor *t, void *host, size_t bytes,
                                           int *done) {
    int64_t strides[GPUOS_MAX_RANK];
    gpuos_tensor *view;
    gpuos_task task = GPUOS_TASK_INIT;
    uint64_t seq;
    gpuos_status s;
    *done = 0;
    if (bytes > ctx->stage_bytes) return GPUOS_OK;
    pthread_mutex_lock(&ctx->stage_mu);
    view = ctx->stage_view;
    if (!ctx->stage_buf) { /* closed meanwhile */
        pthread_mutex_unlock(&ctx->stage_mu);
        return GPUOS_OK;
    }
    if (!view || view->dtype != t->dtype || view->rank != t->rank ||
        memcmp(view->shape, t->shape, (size_t)t->rank * sizeof t->shape[0]) != 0) {
        gpuos__contiguous_strides(t->rank, t->shape, strides);
        if (gpuos__tensor_make(ctx, ctx->stage_buf->st, t->dtype, t->rank, t->shape, strides, 0, &view) != GPUOS_OK) {
            pthread_mutex_unlock(&ctx->stage_mu);
            return GPUOS_OK; /* (no memory for a handle: the driver's copy) */
        }
        gpuos_tensor_release(ctx->stage_view);
        ctx->stage_view = view;
    }
    task.op = GPUOS_OP_COPY;
    task.out = view;
    task.in[0] = (gpuos_tensor *)t;
    s = gpuos_submit(ctx, &task, &seq); /* (refused: the driver's copy, which reports what is wrong) */
    if (s == GPUOS_OK) {
        *done = 1;
        s = gpuos_wait_task(ctx, seq, ctx->cfg.wait_timeout_ms);
        /* the device's writes to mapped memory are seen by the host once the task is seen
           done, as for pinned tensors (docs/ARCHITECTURE.md) */
        if (s == GPUOS_OK) memcpy(host, gpuos_tensor_host_data(view), bytes);
    }
    pthread_mutex_unlock(&ctx->stage_mu);
    return s;
}

static gpuos_status tensor_transfer(gpuos_context *ctx, const gpuos_tensor *t, void *host, size_t bytes,
                                    int to_view, const char *fn) {
    size_t elsize, want;
    int64_t want64;
    uint64_t last_use;
    gpuos_status s;
    if (!ctx) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "%s: ctx is NULL", fn);
    if (!t) return gpuos__set_error(ctx, GPUOS_ERR_NULL_POINTER, "%s: the tensor is NULL", fn);
    if (t->ctx != ctx)
        return gpuos__set_error(ctx, GPUOS_ERR_CONTEXT_MISMATCH, "%s: the tensor belongs to another context", fn);
    elsize = gpuos__elsize(t->dtype);
    if (!gpuos__mul64(t->numel, (int64_t)elsize, &want64) || (uint64_t)want64 > (uint64_t)SIZE_MAX)
        return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_BOUNDS, "%s: the tensor has too many elements (%lld) to copy",
                                fn, (long long)t->numel);
    want = (size_t)want64;
    if (bytes != want)
        return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_BOUNDS,
                                "%s: bytes is %zu but the tensor has %lld elements of %zu bytes = %zu bytes", fn,
                                bytes, (long long)t->numel, elsize, want);
    if (!host && bytes > 0)
        return gpuos__set_error(ctx, GPUOS_ERR_NULL_POINTER, "%s: the host buffer is NULL", fn);
    /* as for a task's output: a view that writes one element several times, or above 2^22
       elements may (strides that do not nest), is refused */
    if (to_view && (s = gpuos__check_output_view(ctx, t, fn)) != GPUOS_OK) return s;
    if (!to_view && t->numel > 0 && t->st->on_device) {
        int done;
        s = tensor_download_staged(ctx, t, host, bytes, &done);
        if (done) return s;
    }
    /* Wait for the queued jobs that use this memory (jobs run in order). */
    pthread_mutex_lock(&ctx->mu);
    last_use = t->st->last_use;
    pthread_mutex_unlock(&ctx->mu);
    if ((s = gpuos__wait_seq(ctx, last_use, 0, ctx->cfg.wait_timeout_ms, fn)) != GPUOS_OK) return s;
    if (t->numel == 0) return GPUOS_OK;
    if (t->st->on_device) return tensor_transfer_device(ctx, t, host, bytes, to_view);
    tensor_copy_strided(t->st->data + t->offset * (int64_t)elsize, elsize, t->rank, t->shape, t->strides,
                        (char *)host, to_view);
    return GPUOS_OK;
}

gpuos_status gpuos_upload(gpuos_context *ctx, gpuos_tensor *dst, const void *src, size_t bytes) {
    return tensor_transfer(ctx, dst, (void *)src, bytes, 1, "gpuos_upload");
}

gpuos_status gpuos_download(gpuos_context *ctx, const gpuos_tensor *src, void *dst, size_t bytes) {
    return tensor_transfer(ctx, src, dst, bytes, 0, "gpuos_download");
}
