/* status.c - version, status strings, and the detail of the last error.

   Each context keeps its last error messages in a small ring of slots
   (GPUOS__ERR_SLOTS); a new message goes into the next slot. gpuos_last_error returns the
   calling thread's own copy of the latest one. Errors without a context (a failed
   gpuos_create, a NULL context) go to one process-wide buffer. */
#include "gpuos_runtime.h"

#include <stdio.h>  /* vsnprintf */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* memset, memcpy */

/* ---------------------------------------------------------------- version */
int gpuos_version(void) { return GPUOS_VERSION_NUMBER; }

/* ---------------------------------------------------------------- status strings */
typedef struct status_text {
    const char *name;
    const char *text;
} status_text;

static const status_text status_texts[] = {
    /* GPUOS_OK */
    {"GPUOS_OK", "GPUOS_OK: success"},
    /* GPUOS_ERR_INVALID_ARGUMENT */
    {"GPUOS_ERR_INVALID_ARGUMENT",
     "GPUOS_ERR_INVALID_ARGUMENT: an argument is out of its documented range; see gpuos_last_error for which"},
    /* GPUOS_ERR_NULL_POINTER */
    {"GPUOS_ERR_NULL_POINTER", "GPUOS_ERR_NULL_POINTER: a required pointer argument was NULL"},
    /* GPUOS_ERR_SHAPE_MISMATCH */
    {"GPUOS_ERR_SHAPE_MISMATCH",
     "GPUOS_ERR_SHAPE_MISMATCH: shapes do not broadcast, or the output does not have the result's shape "
     "(or a graph binding's shape or strides differ from the recorded tensor's); "
     "make the output exactly the broadcast/result shape"},
    /* GPUOS_ERR_DTYPE_MISMATCH */
    {"GPUOS_ERR_DTYPE_MISMATCH",
     "GPUOS_ERR_DTYPE_MISMATCH: operands have different dtypes, or the output has the wrong dtype; "
     "convert explicitly with gpuos_cast"},
    /* GPUOS_ERR_UNSUPPORTED_DTYPE */
    {"GPUOS_ERR_UNSUPPORTED_DTYPE",
     "GPUOS_ERR_UNSUPPORTED_DTYPE: the operator is not defined for this dtype, or this build was not "
     "generated for it (make gen DTYPES=...)"},
    /* GPUOS_ERR_RANK */
    {"GPUOS_ERR_RANK",
     "GPUOS_ERR_RANK: rank outside 0..GPUOS_MAX_RANK, or a rank the operator (or this build) does not allow"},
    /* GPUOS_ERR_BAD_STRIDES */
    {"GPUOS_ERR_BAD_STRIDES",
     "GPUOS_ERR_BAD_STRIDES: the view reaches outside its memory, or an output overlaps itself "
     "(stride 0 over a size > 1); write into a contiguous tensor instead"},
    /* GPUOS_ERR_UNKNOWN_OP */
    {"GPUOS_ERR_UNKNOWN_OP", "GPUOS_ERR_UNKNOWN_OP: no such operator (not a built-in op below GPUOS_OP_COUNT, nor a defined run-time "
     "operator's handle)"},
    /* GPUOS_ERR_AXIS */
    {"GPUOS_ERR_AXIS", "GPUOS_ERR_AXIS: an axis is out of range for the tensor's rank"},
    /* GPUOS_ERR_QUEUE_FULL */
    {"GPUOS_ERR_QUEUE_FULL",
     "GPUOS_ERR_QUEUE_FULL: the queue stayed full for submit_timeout_ms; the task was not queued (of a "
     "graph launch, the detail says how many were). Wait (gpuos_wait) and submit again, or raise "
     "queue_capacity / submit_timeout_ms"},
    /* GPUOS_ERR_TIMEOUT */
    {"GPUOS_ERR_TIMEOUT",
     "GPUOS_ERR_TIMEOUT: a wait ran out of time; the work is still queued, so wait again or raise the timeout"},
    /* GPUOS_ERR_OUT_OF_MEMORY */
    {"GPUOS_ERR_OUT_OF_MEMORY", "GPUOS_ERR_OUT_OF_MEMORY: a host or device allocation failed"},
    /* GPUOS_ERR_NO_DEVICE */
    {"GPUOS_ERR_NO_DEVICE",
     "GPUOS_ERR_NO_DEVICE: no usable GPU (no driver, no device, or a bad ordinal); use GPUOS_DEVICE_AUTO "
     "or GPUOS_DEVICE_HOST to run on the host"},
    /* GPUOS_ERR_DEVICE_LOST */
    {"GPUOS_ERR_DEVICE_LOST",
     "GPUOS_ERR_DEVICE_LOST: the GPU faulted or vanished (host executor: a run-time operator ran away); "
     "the context is unusable, destroy it and create another"},
    /* GPUOS_ERR_COMPILE */
    {"GPUOS_ERR_COMPILE",
     "GPUOS_ERR_COMPILE: an operator's source did not compile (NVRTC or nvJitLink on a GPU, the expression "
     "compiler on the host); the log is in gpuos_last_error"},
    /* GPUOS_ERR_UNSUPPORTED */
    {"GPUOS_ERR_UNSUPPORTED",
     "GPUOS_ERR_UNSUPPORTED: a valid request that this build or backend cannot do (for example, no NVRTC)"},
    /* GPUOS_ERR_NOT_VIEWABLE */
    {"GPUOS_ERR_NOT_VIEWABLE",
     "GPUOS_ERR_NOT_VIEWABLE: the reshape needs a copy because the strides cannot express it; copy into a "
     "contiguous tensor (gpuos_copy) and reshape that"},
    /* GPUOS_ERR_OUT_OF_BOUNDS */
    {"GPUOS_ERR_OUT_OF_BOUNDS",
     "GPUOS_ERR_OUT_OF_BOUNDS: a size or index beyond a tensor or buffer (upload/download need exactly "
     "numel * dtype size bytes)"},
    /* GPUOS_ERR_ALIASING */
    {"GPUOS_ERR_ALIASING",
     "GPUOS_ERR_ALIASING: the output overlaps an input in a way the operator forbids; use a separate output "
     "(in place is allowed only for element-wise and row-wise ops, with the very same view)"},
    /* GPUOS_ERR_BAD_CONFIG */
    {"GPUOS_ERR_BAD_CONFIG",
     "GPUOS_ERR_BAD_CONFIG: gpuos_config of an unknown size or version, or a bad field; start from "
     "GPUOS_CONFIG_INIT"},
    /* GPUOS_ERR_CONTEXT_MISMATCH */
    {"GPUOS_ERR_CONTEXT_MISMATCH",
     "GPUOS_ERR_CONTEXT_MISMATCH: a tensor belongs to another context; tensors cannot cross contexts"},
    /* GPUOS_ERR_INTERNAL */
    {"GPUOS_ERR_INTERNAL",
     "GPUOS_ERR_INTERNAL: a bug in gpuos; please report it with the text of gpuos_last_error"},
};

#define STATUS_COUNT ((int)(sizeof status_texts / sizeof status_texts[0]))
typedef char status_table_complete[(STATUS_COUNT == GPUOS_ERR_INTERNAL + 1) ? 1 : -1];

const char *gpuos_status_string(gpuos_status status) {
    int s = (int)status;
    if (s < 0 || s >= STATUS_COUNT) return "unknown gpuos_status code (not one of gpuos.h's GPUOS_ERR_*)";
    return status_texts[s].text;
}

const char *gpuos__status_name(gpuos_status status) {
    int s = (int)status;
    if (s < 0 || s >= STATUS_COUNT) return "GPUOS_ERR_?";
    return status_texts[s].name;
}

/* ---------------------------------------------------------------- error detail */
static gpuos__errbuf status_global = {PTHREAD_MUTEX_INITIALIZER, 0, {{0}}};

int gpuos__errbuf_init(gpuos__errbuf *e) {
    memset(e->msg, 0, sizeof e->msg);
    e->cur = 0;
    return pthread_mutex_init(&e->mu, NULL) == 0;
}

void gpuos__errbuf_fini(gpuos__errbuf *e) { pthread_mutex_destroy(&e->mu); }

gpuos_status gpuos__set_errorv(const gpuos_context *ctx, gpuos_status status, const char *fmt, va_list ap) {
    /* The buffer is logically mutable state behind a const handle. */
    gpuos__errbuf *e = ctx ? (gpuos__errbuf *)&((gpuos_context *)ctx)->err : &status_global;
    unsigned slot;
    size_t n;
    char *msg;
    pthread_mutex_lock(&e->mu);
    slot = (e->cur + 1u) % GPUOS__ERR_SLOTS;
    msg = e->msg[slot];
    n = (size_t)snprintf(msg, GPUOS__ERR_LEN, "%s: ", gpuos__status_name(status));
    if (n < GPUOS__ERR_LEN) vsnprintf(msg + n, GPUOS__ERR_LEN - n, fmt, ap);
    msg[GPUOS__ERR_LEN - 1] = '\0';
    e->cur = slot;
    pthread_mutex_unlock(&e->mu);
    return status;
}

gpuos_status gpuos__set_error(const gpuos_context *ctx, gpuos_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    gpuos__set_errorv(ctx, status, fmt, ap);
    va_end(ap);
    return status;
}

/* What gpuos_last_error returns is a copy, taken under the buffer's lock, in the calling
   thread's own ring of GPUOS__ERR_SLOTS strings: another thread's failure, which rewrites a
   slot of the buffer, never changes a string being read (it did: a data race). Allocated on
   a thread's first call, freed when it exits; without it (no memory) the buffer's slot. */
typedef struct status_tls {
    unsigned next;
    char msg[GPUOS__ERR_SLOTS][GPUOS__ERR_LEN];
} status_tls;
static pthread_key_t status_key;
static pthread_once_t status_once = PTHREAD_ONCE_INIT;
static int status_key_ok;
static void status_key_make(void) { status_key_ok = pthread_key_create(&status_key, free) == 0; }

const char *gpuos_last_error(const gpuos_context *ctx) {
    gpuos__errbuf *e = ctx ? (gpuos__errbuf *)&((gpuos_context *)ctx)->err : &status_global;
    status_tls *t = NULL;
    const char *s;
    pthread_once(&status_once, status_key_make);
    if (status_key_ok && !(t = (status_tls *)pthread_getspecific(status_key))) {
        t = (status_tls *)calloc(1, sizeof *t);
        if (t && pthread_setspecific(status_key, t) != 0) {
            free(t);
            t = NULL;
        }
    }
    pthread_mutex_lock(&e->mu);
    s = e->msg[e->cur];
    if (t) {
        char *d = t->msg[t->next];
        t->next = (t->next + 1u) % GPUOS__ERR_SLOTS;
        memcpy(d, s, strlen(s) + 1); /* (slots are NUL-terminated within GPUOS__ERR_LEN) */
        s = d;
    }
    pthread_mutex_unlock(&e->mu);
    return s;
}

/* A copy of ctx's last error into buf (n > 0 bytes, NUL-terminated), taken under the
   buffer's lock: another thread's failure may rewrite the slot meanwhile. */
void gpuos__last_error_copy(const gpuos_context *ctx, char *buf, size_t n) {
    gpuos__errbuf *e = ctx ? (gpuos__errbuf *)&((gpuos_context *)ctx)->err : &status_global;
    pthread_mutex_lock(&e->mu);
    snprintf(buf, n, "%s", e->msg[e->cur]);
    pthread_mutex_unlock(&e->mu);
}

/* msg without its "GPUOS_ERR_X: " prefix (the detail, to be re-reported under another name). */
const char *gpuos__error_detail(const char *msg) {
    const char *p = strstr(msg, ": ");
    return strncmp(msg, "GPUOS_", 6) == 0 && p ? p + 2 : msg;
}

/* Makes the context fail for good (ctx->mu held): the sticky status GPUOS_ERR_DEVICE_LOST,
   its detail kept for every later error to repeat; wakes every waiter. A second failure
   keeps the first one's detail. */
void gpuos__fail_locked(gpuos_context *ctx, const char *fmt, ...) {
    va_list ap;
    if (ctx->sticky != GPUOS_OK) return;
    ctx->sticky = GPUOS_ERR_DEVICE_LOST;
    va_start(ap, fmt);
    vsnprintf(ctx->sticky_msg, sizeof ctx->sticky_msg, fmt, ap);
    va_end(ap);
    gpuos__set_error(ctx, GPUOS_ERR_DEVICE_LOST, "%s", ctx->sticky_msg);
    pthread_cond_broadcast(&ctx->cv_done);
    pthread_cond_broadcast(&ctx->cv_room);
}
