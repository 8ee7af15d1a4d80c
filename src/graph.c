/* graph.c - recorded task graphs (gpuos_graph_*): record once, launch many times.

   A node keeps the task as recorded (its tensors replaced by the graph's own views of the
   same memory, so the caller may release theirs) and the job gpuos__plan_task built for it:
   a launch copies that job into the queue (gpuos__queue_push_batch takes the storage references
   and, on a GPU, encodes it), skipping validation and planning. A node that a launch binds
   other tensors or scalars into is planned again from its task, with full validation.
   Explicit dependencies only reorder nodes (a topological order, recorded order among
   equals); memory dependencies between nodes, and between launches, are the queue's, as
   for any submission.

   Fusion: a launch queues a matmul and the in-place element-wise nodes
   that follow it on its output (h = h + bias, h = gelu(h), h = h + x: gen/ops.py EPILOGUE)
   as ONE task, the matmul with an epilogue (gpuos__matmul_plan.epi) that both executors
   apply to each output element as it is stored, rounding as the separate tasks would, so
   results are bit for bit the unfused ones. GPUOS_GRAPH_FUSE=0 turns it off (A/B). */
#include <stdlib.h>
#include <string.h>

#include "gpuos_runtime.h"

typedef struct graph_node {
    gpuos_task task;                        /* tensors: the graph's views */
    const gpuos_tensor *orig[1 + GPUOS_MAX_INPUTS]; /* the caller's handles (binding keys; never dereferenced) */
    uint64_t orig_uid[1 + GPUOS_MAX_INPUTS];        /* and their uids: a new handle at a freed one's address is not it */
    gpuos__job *tmpl;                       /* the planned job (never queued itself) */
} graph_node;

/* The scalars a node's operator reads (gpuos_task.scalar[0..n)), from the operator table; a
   run-time operator's own count may change with a redefinition before the launch, so both
   are allowed there. */
static int graph_node_scalars(const graph_node *nd) {
    const int op = (int)nd->task.op;
    return op >= 0 && op < GPUOS_OP_COUNT ? gpuos__ops[op].n_scalars : 2;
}

struct gpuos_graph {
    gpuos_context *ctx;
    graph_node *nodes;
    int n, cap;
    int (*edges)[2]; /* before, after */
    int n_edges, cap_edges;
    int *edge_next;  /* the cycle check's successor lists: edge e's next edge from the same node */
    int *edge_head;  /* node i's last edge (-1: none), for the first cap_head nodes */
    int *mark;       /* graph_order_dep's visits: node i seen when mark[i] == mark_gen */
    int *walk;       /* its forward set */
    int *ord;        /* a topological order of the explicit dependencies: ord[u] < ord[v] for each u -> v */
    int *pedge_head; /* the predecessor lists: node i's last edge into it (-1: none) */
    int *pedge_next; /* edge e's next edge into the same node */
    int *walk2;      /* its stack, then its backward set */
    int cap_head, n_ord; /* arrays sized for cap_head nodes; ord given to the first n_ord */
    unsigned mark_gen;
    int *order;      /* launch order; valid while order_ok */
    int order_ok;
    struct gpuos__cuda_graph *cg; /* GPU: the nodes encoded once (cuda_backend.c); NULL until a launch makes it */
    int cg_refused;               /* the CUDA backend cannot pre-encode this graph: per-node launches */
    int priority;                 /* of its launches (gpuos_graph_set_priority) */
    uint32_t deadline_us;         /* of its launches (gpuos_graph_set_deadline); 0: none */
    struct graph_fused *fz;       /* per launch-order position: the fused task that starts there; valid while fz_ok */
    int fz_ok;
    int n_tasks;                  /* tasks a launch without bindings queues (nodes less fused ones) */
    int last_tasks;               /* tasks the last launch queued (gpuos_debug_graph_tasks) */
    int n_rt;                     /* nodes that run a run-time operator */
};

/* A matmul node and the element-wise nodes after it, as one task (len 0: none starts here). */
typedef struct graph_fused {
    gpuos__job *job; /* the matmul's template with the epilogue, its storages added */
    int len;         /* nodes it covers, in launch order from its position */
} graph_fused;

static void graph_drop_fused(gpuos_context *ctx, gpuos_graph *g) {
    int i;
    if (g->fz)
        for (i = 0; i < g->n; i++)
            if (g->fz[i].job) gpuos__job_free(ctx, g->fz[i].job);
    free(g->fz);
    g->fz = NULL;
    g->fz_ok = 0;
}

static void graph_drop_cg(gpuos_graph *g) {
    if (!g->cg) return;
    pthread_mutex_lock(&g->ctx->mu);
    gpuos__cuda_graph_free_locked(g->ctx, g->cg);
    pthread_mutex_unlock(&g->ctx->mu);
    g->cg = NULL;
}

gpuos_status gpuos_graph_create(gpuos_context *ctx, gpuos_graph **graph) {
    gpuos_graph *g;
    if (graph) *graph = NULL;
    if (!ctx) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "gpuos_graph_create: ctx is NULL");
    if (!graph) return gpuos__set_error(ctx, GPUOS_ERR_NULL_POINTER, "gpuos_graph_create: graph is NULL");
    if (gpuos__check_alive(ctx, "gpuos_graph_create") != GPUOS_OK) return GPUOS_ERR_INVALID_ARGUMENT;
    g = (gpuos_graph *)calloc(1, sizeof *g);
    if (!g) return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "gpuos_graph_create: no memory");
    g->ctx = ctx;
    gpuos__context_ref(ctx); /* the graph holds the context (its memory) until released */
    *graph = g;
    return GPUOS_OK;
}

int gpuos_graph_size(const gpuos_graph *graph) { return graph ? graph->n : 0; }

gpuos_status gpuos_graph_set_deadline(gpuos_graph *g, uint32_t deadline_us) {
    if (!g) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "gpuos_graph_set_deadline: graph is NULL");
    g->deadline_us = deadline_us;
    return GPUOS_OK;
}

gpuos_status gpuos_graph_set_priority(gpuos_graph *g, int priority) {
    if (!g) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "gpuos_graph_set_priority: graph is NULL");
    if (gpuos__check_priority(g->ctx, "gpuos_graph_set_priority", "priority", priority) != GPUOS_OK)
        return GPUOS_ERR_INVALID_ARGUMENT;
    g->priority = priority;
    return GPUOS_OK;
}

static gpuos_status graph_view(gpuos_context *ctx, const gpuos_tensor *t, gpuos_tensor **out) {
    *out = NULL;
    if (!t) return GPUOS_OK;
    return gpuos__tensor_make(ctx, t->st, t->dtype, t->rank, t->shape, t->strides, t->offset, out);
}

static void graph_node_free(gpuos_context *ctx, graph_node *nd) {
    int k;
    if (nd->tmpl) {
        gpuos__job_free(ctx, nd->tmpl); /* drops its run-time operator version's reference */
        nd->tmpl = NULL;
    }
    gpuos_tensor_release(nd->task.out);
    for (k = 0; k < GPUOS_MAX_INPUTS; k++) gpuos_tensor_release(nd->task.in[k]);
}

/* tmpl, just planned, becomes a node's template: its run-time operator version (if any)
   stays allocated, but a redefinition may take its code slot back (rtops.c) */
static void graph_template(gpuos_context *ctx, gpuos__job *tmpl) {
    if (!tmpl->rt) return;
    pthread_mutex_lock(&ctx->mu);
    gpuos__rt_template_locked(tmpl);
    pthread_mutex_unlock(&ctx->mu);
}

/* Whether fresh, node tmpl's task planned again, runs the definition tmpl recorded: a removed
   operator's index (its handle) may name another definition since (rtops.c, def_id). */
static int graph_same_def(const gpuos__job *tmpl, const gpuos__job *fresh) {
    return !tmpl->rt || (fresh->rt && fresh->rt->def_id == tmpl->rt->def_id);
}
static gpuos_status graph_removed(gpuos_context *ctx, gpuos__job *fresh, int node) {
    gpuos__job_free(ctx, fresh);
    return gpuos__set_error(ctx, GPUOS_ERR_UNKNOWN_OP,
                            "gpuos_graph_launch: node %d's run-time operator was removed (its handle names another "
                            "definition now); nothing of the launch was queued",
                            node);
}

/* A launch's reference to each run-time operator version its nodes' templates run, into
   job->xrt (ctx->mu held): the launch's tasks are queued with those slots' code, so the
   slots stay theirs until it retires. 0 when one of them is no longer current (that node is
   planned again: the per-node path), or without memory. */
static int graph_pin_versions_locked(gpuos_context *ctx, gpuos_graph *g, gpuos__job *job) {
    int i, k;
    if (!g->n_rt) return 1;
    job->xrt = (gpuos__rt_version **)malloc((size_t)g->n_rt * sizeof *job->xrt);
    if (!job->xrt) return 0;
    for (i = 0; i < g->n; i++) {
        gpuos__rt_version *v = g->nodes[i].tmpl->rt;
        if (!v) continue;
        if (ctx->rt_cur[v->index] != v) return 0; /* (job_free drops those taken) */
        for (k = 0; k < job->n_xrt && job->xrt[k] != v; k++) {
        }
        if (k == job->n_xrt) {
            gpuos__rt_retain_locked(v);
            job->xrt[job->n_xrt++] = v;
        }
    }
    return 1;
}

gpuos_status gpuos_graph_add(gpuos_graph *g, const gpuos_task *task, int *node) {
    gpuos_context *ctx;
    graph_node nd;
    gpuos_status s;
    int k;
    if (!g) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "gpuos_graph_add: graph is NULL");
    ctx = g->ctx;
    if ((s = gpuos__check_alive(ctx, "gpuos_graph_add")) != GPUOS_OK) return s;
    if (!task) return gpuos__set_error(ctx, GPUOS_ERR_NULL_POINTER, "gpuos_graph_add: task is NULL");
    if (node) *node = -1;
    if (task->struct_size != sizeof(gpuos_task))
        return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT,
                                "gpuos_graph_add: task->struct_size is %zu, not %zu; start from GPUOS_TASK_INIT",
                                task->struct_size, sizeof(gpuos_task));
    memset(&nd, 0, sizeof nd);
    nd.task = *task;
    nd.task.out = NULL;
    memset(nd.task.in, 0, sizeof nd.task.in);
    /* plan with the caller's tensors first: every error is the one gpuos_submit gives */
    if ((s = gpuos__plan_task(ctx, task, &nd.tmpl)) != GPUOS_OK) return s;
    graph_template(ctx, nd.tmpl);
    nd.orig[0] = task->out;
    nd.orig_uid[0] = task->out ? task->out->uid : 0;
    s = graph_view(ctx, task->out, &nd.task.out);
    for (k = 0; k < GPUOS_MAX_INPUTS && s == GPUOS_OK; k++) {
        nd.orig[1 + k] = task->in[k];
        nd.orig_uid[1 + k] = task->in[k] ? task->in[k]->uid : 0;
        s = graph_view(ctx, task->in[k], &nd.task.in[k]);
    }
    if (s == GPUOS_OK && g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 16;
        graph_node *p = (graph_node *)realloc(g->nodes, (size_t)cap * sizeof *p);
        if (!p) s = gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "gpuos_graph_add: no memory");
        else g->nodes = p, g->cap = cap;
    }
    if (s != GPUOS_OK) {
        graph_node_free(ctx, &nd);
        return s;
    }
    g->nodes[g->n] = nd;
    if (node) *node = g->n;
    graph_drop_fused(ctx, g); /* its positions are the old graph's */
    g->n++;
    if (nd.tmpl->rt) g->n_rt++;
    g->order_ok = 0;
    graph_drop_cg(g);
    g->cg_refused = 0;
    return GPUOS_OK;
}

/* A binary min-heap of node indices (graph_kahn's ready sets). */
static void graph_heap_push(int *h, int *n, int v) {
    int i = (*n)++;
    while (i > 0 && h[(i - 1) / 2] > v) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}
static int graph_heap_pop(int *h, int *n) {
    const int top = h[0], v = h[--*n];
    int i = 0, c;
    while ((c = 2 * i + 1) < *n) {
        if (c + 1 < *n && h[c + 1] < h[c]) c++;
        if (v <= h[c]) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
    return top;
}
/* The m edges e[0..m) (before -> after) of n nodes as lists of successors: node i's are
   adj[start[i] .. start[i + 1]). 0 without memory. */
static int graph_csr(int n, int m, const int (*e)[2], int **start, int **adj) {
    int i;
    *start = (int *)calloc((size_t)n + 2, sizeof(int));
    *adj = (int *)malloc(((size_t)m + 1) * sizeof(int));
    if (!*start || !*adj) return 0;
    for (i = 0; i < m; i++) (*start)[e[i][0] + 2]++;
    for (i = 2; i < n + 2; i++) (*start)[i] += (*start)[i - 1];
    for (i = 0; i < m; i++) (*adj)[(*start)[e[i][0] + 1]++] = e[i][1];
    return 1;
}

/* Kahn's algorithm over the explicit dependencies (the successor lists that
   gpuos_graph_add_dep keeps, edge_head/edge_next) and ni implicit ones (imp, before ->
   after), smallest index first among the ready nodes; where the implicit ones
   contradict the explicit ones (the combined graph has a cycle) the smallest node whose
   explicit predecessors have all run goes next: a node that a dependency holds back waits,
   and the others keep their recorded order past it. Ready nodes in two min-heaps (ready for
   both kinds; for the explicit ones), so O((n + edges) log n): a scan of every node and edge
   for each node placed made 2000 nodes' dependencies take 3 s to add (a review). Returns 1,
   0 when the explicit dependencies have a cycle, -1 without memory. */
static int graph_kahn(gpuos_graph *g, const int (*imp)[2], int ni, int *order) {
    const int n = g->n, n_edges = g->n_edges;
    int *ind_x = (int *)calloc((size_t)n + 1, sizeof(int)), *ind_i = (int *)calloc((size_t)n + 1, sizeof(int));
    int *ha = (int *)malloc(((size_t)n + 1) * sizeof(int)), *hb = (int *)malloc(((size_t)n + 1) * sizeof(int));
    int *is = NULL, *ia = NULL;
    char *used = (char *)calloc((size_t)n + 1, 1);
    int i, e, done = 0, ok = -1, na = 0, nb = 0;
    if (!ind_x || !ind_i || !ha || !hb || !used || !graph_csr(n, ni, imp, &is, &ia))
        goto out;
    for (e = 0; e < n_edges; e++) ind_x[g->edges[e][1]]++;
    for (e = 0; e < ni; e++) ind_i[imp[e][1]]++;
    for (i = 0; i < n; i++)
        if (ind_x[i] == 0) {
            graph_heap_push(hb, &nb, i);
            if (ind_i[i] == 0) graph_heap_push(ha, &na, i);
        }
    while (done < n) {
        i = -1;
        while (na > 0 && i < 0)
            if (!used[e = graph_heap_pop(ha, &na)]) i = e;
        while (nb > 0 && i < 0) /* recorded order contradicts a dependency: that dependency wins */
            if (!used[e = graph_heap_pop(hb, &nb)]) i = e;
        if (i < 0) break; /* the rest is on a cycle of explicit dependencies */
        used[i] = 1;
        order[done++] = i;
        for (e = i < g->cap_head ? g->edge_head[i] : -1; e >= 0; e = g->edge_next[e]) { /* (its kept lists) */
            const int s = g->edges[e][1];
            if (--ind_x[s] == 0) {
                graph_heap_push(hb, &nb, s);
                if (ind_i[s] == 0) graph_heap_push(ha, &na, s);
            }
        }
        for (e = is[i]; e < is[i + 1]; e++) {
            const int s = ia[e];
            if (--ind_i[s] == 0 && ind_x[s] == 0) graph_heap_push(ha, &na, s);
        }
    }
    ok = done == n;
out:
    free(ind_x);
    free(ind_i);
    free(ha);
    free(hb);
    free(is);
    free(ia);
    free(used);
    return ok;
}

/* The cycle check of a new explicit dependency before -> after, which keeps a topological order
   of them (ord; Pearce and Kelly's dynamic order): 1 if `after` reaches `before` (the new one
   would close a cycle), else 0 with ord still a topological order once the edge is in; -1
   without memory. Nodes take ord in the order they were added, so a dependency that follows the
   recorded order (ord[before] < ord[after], the usual case) needs no walk at all; otherwise only
   the nodes whose ord lies between the two are walked, forward from `after` and back from
   `before`, and those two sets swap their ranks. (A walk of everything `after` reached took
   2.2 s for 100000 dependencies on 5000 nodes; 5.8 s before that, when the lists were rebuilt
   at each call.) The lists are kept with the graph and the visits stamped with a generation. */
static int graph_grow_heads(gpuos_graph *g) {
    int i, cap;
    int **arr[5];
    if (g->cap_head >= g->n) return 1;
    cap = g->n > 2 * g->cap_head ? g->n : 2 * g->cap_head;
    arr[0] = &g->edge_head, arr[1] = &g->mark, arr[2] = &g->walk, arr[3] = &g->ord, arr[4] = &g->pedge_head;
    for (i = 0; i < 5; i++) {
        int *p = (int *)realloc(*arr[i], (size_t)cap * sizeof(int));
        if (!p) return 0;
        *arr[i] = p;
    }
    {
        int *w = (int *)realloc(g->walk2, (size_t)cap * sizeof(int));
        if (!w) return 0;
        g->walk2 = w;
    }
    for (i = g->cap_head; i < cap; i++) g->edge_head[i] = -1, g->pedge_head[i] = -1, g->mark[i] = 0;
    g->cap_head = cap;
    return 1;
}
static int graph_pair_cmp(const void *a, const void *b) { /* (rank, node) pairs, and ranks, by rank */
    const int *x = (const int *)a, *y = (const int *)b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}
static int graph_order_dep(gpuos_graph *g, int before, int after) {
    int nf = 0, nb = 0, n = 0, e, i, lb, ub;
    int(*pairs)[2];
    int *ranks;
    if (!graph_grow_heads(g)) return -1;
    while (g->n_ord < g->n) g->ord[g->n_ord] = g->n_ord, g->n_ord++; /* (nodes added since: last) */
    lb = g->ord[after], ub = g->ord[before];
    if (ub < lb) return 0; /* the new one follows the order: no path after -> before can exist */
    if (++g->mark_gen == 0) { /* (wrapped: no stale stamp may match) */
        for (i = 0; i < g->cap_head; i++) g->mark[i] = 0;
        g->mark_gen = 1;
    }
    /* forward from after, within ord <= ub: F (kept in walk[0..nf)) */
    g->mark[after] = (int)g->mark_gen;
    g->walk2[n++] = after;
    while (n > 0) {
        const int v = g->walk2[--n];
        if (v == before) return 1;
        g->walk[nf++] = v;
        for (e = g->edge_head[v]; e >= 0; e = g->edge_next[e]) {
            const int t = g->edges[e][1];
            if (g->mark[t] != (int)g->mark_gen && g->ord[t] <= ub) g->mark[t] = (int)g->mark_gen, g->walk2[n++] = t;
        }
    }
    /* back from before, within ord > lb: B (in walk2[0..nb); F's marks keep them apart: a node in
       both would be a path after -> before, found above) */
    g->mark[before] = (int)g->mark_gen;
    g->walk2[nb++] = before;
    for (i = 0; i < nb; i++) {
        const int v = g->walk2[i];
        for (e = g->pedge_head[v]; e >= 0; e = g->pedge_next[e]) {
            const int s = g->edges[e][0];
            if (g->mark[s] != (int)g->mark_gen && g->ord[s] > lb) g->mark[s] = (int)g->mark_gen, g->walk2[nb++] = s;
        }
    }
    /* B's nodes take the smallest of the ranks B and F hold, F's the rest, each set in its
       own order: every edge keeps ord increasing, and before (in B) now precedes after (in F) */
    pairs = (int(*)[2])malloc((size_t)(nb + nf) * sizeof *pairs);
    ranks = (int *)malloc((size_t)(nb + nf) * sizeof *ranks);
    if (!pairs || !ranks) {
        free(pairs);
        free(ranks);
        return -1;
    }
    for (i = 0; i < nb; i++) pairs[i][0] = g->ord[g->walk2[i]], pairs[i][1] = g->walk2[i];
    for (i = 0; i < nf; i++) pairs[nb + i][0] = g->ord[g->walk[i]], pairs[nb + i][1] = g->walk[i];
    qsort(pairs, (size_t)nb, sizeof *pairs, graph_pair_cmp);
    qsort(pairs + nb, (size_t)nf, sizeof *pairs, graph_pair_cmp);
    for (i = 0; i < nb + nf; i++) ranks[i] = pairs[i][0];
    qsort(ranks, (size_t)(nb + nf), sizeof *ranks, graph_pair_cmp);
    for (i = 0; i < nb + nf; i++) g->ord[pairs[i][1]] = ranks[i];
    free(pairs);
    free(ranks);
    return 0;
}

/* The launch order of a graph with dependencies (graph_kahn): the explicit ones, and,
   wherever they allow, the recorded order of nodes that touch the same storage with one of
   them writing (each access after the storage's last write before it, each write after the
   reads since), so that a dependency moves only the nodes it has to: with the explicit ones
   alone, smallest index first, a node no dependency named overtook a node whose output it
   reads (a review's find). 1, 0 on a cycle, -1 without memory. */
typedef struct graph_acc {
    const void *st;
    int node, write;
} graph_acc;
static int graph_acc_cmp(const void *a, const void *b) {
    const graph_acc *x = (const graph_acc *)a, *y = (const graph_acc *)b;
    if (x->st != y->st) return (uintptr_t)x->st < (uintptr_t)y->st ? -1 : 1;
    return x->node - y->node;
}
static int graph_launch_order(gpuos_graph *g, int *order) {
    const int n = g->n, per = 1 + GPUOS_MAX_INPUTS;
    graph_acc *acc = (graph_acc *)malloc((size_t)n * (size_t)per * sizeof *acc);
    int(*imp)[2] = (int(*)[2])malloc((size_t)n * (size_t)per * 2 * sizeof *imp);
    int na = 0, ni = 0, i, k, ok = -1;
    if (!acc || !imp) goto out;
    for (i = 0; i < n; i++) { /* each node once per storage, writing if it writes it */
        const gpuos_task *t = &g->nodes[i].task;
        for (k = 0; k < per; k++) {
            const gpuos_tensor *x = k == 0 ? t->out : t->in[k - 1];
            int q;
            if (!x) continue;
            for (q = na - 1; q >= 0 && acc[q].node == i; q--)
                if (acc[q].st == x->st) break;
            if (q >= 0 && acc[q].node == i) acc[q].write |= k == 0;
            else acc[na].st = x->st, acc[na].node = i, acc[na].write = k == 0, na++;
        }
    }
    qsort(acc, (size_t)na, sizeof *acc, graph_acc_cmp);
    for (i = 0; i < na;) { /* one storage's accesses in recorded order */
        int j = i, w = -1, r0 = i; /* the last write's position; the reads since start at r0 */
        for (; j < na && acc[j].st == acc[i].st; j++) {
            if (w >= 0) imp[ni][0] = acc[w].node, imp[ni][1] = acc[j].node, ni++;
            if (acc[j].write) {
                for (k = (w >= 0 ? w + 1 : r0); k < j; k++) imp[ni][0] = acc[k].node, imp[ni][1] = acc[j].node, ni++;
                w = j;
            }
        }
        i = j;
    }
    ok = graph_kahn(g, (const int(*)[2])imp, ni, order);
out:
    free(acc);
    free(imp);
    return ok;
}

gpuos_status gpuos_graph_add_dep(gpuos_graph *g, int before, int after) {
    gpuos_context *ctx;
    int ok;
    if (!g) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "gpuos_graph_add_dep: graph is NULL");
    ctx = g->ctx;
    if (gpuos__check_alive(ctx, "gpuos_graph_add_dep") != GPUOS_OK) return GPUOS_ERR_INVALID_ARGUMENT;
    if (before < 0 || before >= g->n || after < 0 || after >= g->n)
        return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT,
                                "gpuos_graph_add_dep: nodes %d -> %d; the graph has nodes 0..%d", before, after, g->n - 1);
    if (before == after)
        return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT, "gpuos_graph_add_dep: node %d cannot run after itself",
                                before);
    if (g->n_edges == g->cap_edges) {
        int cap = g->cap_edges ? 2 * g->cap_edges : 16, *nx;
        int(*p)[2] = (int(*)[2])realloc(g->edges, (size_t)cap * sizeof *p);
        if (!p) return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "gpuos_graph_add_dep: no memory");
        g->edges = p;
        nx = (int *)realloc(g->edge_next, (size_t)cap * sizeof(int));
        if (!nx) return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "gpuos_graph_add_dep: no memory");
        g->edge_next = nx;
        nx = (int *)realloc(g->pedge_next, (size_t)cap * sizeof(int));
        if (!nx) return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "gpuos_graph_add_dep: no memory");
        g->pedge_next = nx;
        g->cap_edges = cap;
    }
    ok = graph_order_dep(g, before, after); /* (does the new one close a cycle?) */
    if (ok < 0) return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "gpuos_graph_add_dep: no memory");
    if (ok)
        return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT,
                                "gpuos_graph_add_dep: node %d -> node %d closes a cycle (node %d already runs before "
                                "node %d); the dependency was not added",
                                before, after, after, before);
    g->edges[g->n_edges][0] = before;
    g->edges[g->n_edges][1] = after;
    g->edge_next[g->n_edges] = g->edge_head[before]; /* (graph_order_dep sized the lists for every node) */
    g->edge_head[before] = g->n_edges;
    g->pedge_next[g->n_edges] = g->pedge_head[after];
    g->pedge_head[after] = g->n_edges;
    g->n_edges++;
    g->order_ok = 0;
    graph_drop_fused(ctx, g);
    graph_drop_cg(g);
    g->cg_refused = 0;
    return GPUOS_OK;
}

/* Whether the caller's handle r (live) is operand k of node nd as recorded. */
static int graph_is(const graph_node *nd, int k, const gpuos_tensor *r) {
    return r && nd->orig[k] == r && nd->orig_uid[k] == r->uid;
}

/* Whether job runs a run-time operator version that is no longer the operator's current one. */
static int graph_rt_stale(gpuos_context *ctx, const gpuos__job *job) {
    int stale;
    if (!job->rt) return 0;
    pthread_mutex_lock(&ctx->mu);
    stale = ctx->rt_cur[job->rt->index] != job->rt;
    pthread_mutex_unlock(&ctx->mu);
    return stale;
}

static int graph_same_layout(const gpuos_tensor *a, const gpuos_tensor *b) {
    int k;
    if (a->dtype != b->dtype || a->rank != b->rank) return 0;
    for (k = 0; k < a->rank; k++)
        if (a->shape[k] != b->shape[k] || (a->shape[k] > 1 && a->strides[k] != b->strides[k])) return 0;
    return 1;
}

/* ---------------------------------------------------------------- fusion */
/* The same elements in the same order: storage, offset, dtype, shape and strides. */
static int graph_same_view(const gpuos_tensor *a, const gpuos_tensor *b) {
    return a && b && a->st == b->st && a->offset == b->offset && graph_same_layout(a, b);
}

/* Can task mt (planned as mj) lead a fused task: a matmul of one [M, N] product (no batch),
   built-in? */
static int graph_fuse_lead(const gpuos_task *mt, const gpuos__job *mj) {
    return mj->kind == GPUOS__KIND_MATMUL && !mj->rt && mj->plan.matmul.batch_numel == 1 && mj->items > 0 && mt->out &&
           mt->out->rank == 2 && mj->plan.matmul.M == mt->out->shape[0] && mj->plan.matmul.N == mt->out->shape[1];
}

/* Is the epilogue operand (ptr, sm, sn) the fused prologue's output view exactly (one operand
   with it in cuda_operands, which compares strides)? An M = 1 view read with sm 0 reads the
   same elements (graph_fuse_add lets it read them back) but is a separate operand there. */
static int graph_pro_view(const gpuos__matmul_plan *p, const char *ptr, int64_t sm, int64_t sn) {
    return ptr == p->pro_out && sm == p->pro_om && sn == p->pro_ok;
}

/* Adds task et (planned as ej) to the epilogue of f (a copy of the matmul mt's job) when it
   is an epilogue operator in place on mt's output: every input that is not the output is
   another storage, read as broadcast to [M, N]. Returns 0 (f unchanged) when it cannot. */
static int graph_fuse_add(const gpuos_task *mt, gpuos__job *f, const gpuos_task *et, const gpuos__job *ej) {
    const gpuos_tensor *out = mt->out;
    const gpuos__op_info *info;
    gpuos__matmul_plan *p = &f->plan.matmul;
    const int64_t es = (int64_t)gpuos__elsize(out->dtype);
    int code, k, self = -1, other = -1;
    if (ej->kind != GPUOS__KIND_EW || ej->rt || (unsigned)et->op >= GPUOS_OP_COUNT) return 0;
    if (!gpuos__matmul_epi_ok(et->op, out->dtype) || p->n_epi >= GPUOS__MM_EPI) return 0;
    if (!graph_same_view(et->out, out)) return 0;
    info = &gpuos__ops[et->op];
    code = (int)et->op;
    for (k = 0; k < info->n_in; k++) {
        if (self < 0 && graph_same_view(et->in[k], out)) self = k;
        else other = k;
    }
    if (self < 0 || info->n_in > 2 || (info->n_in == 1 && other >= 0)) return 0;
    if (other >= 0) { /* binary: the other operand, broadcast to [M, N] */
        const gpuos_tensor *y = et->in[other];
        const char *ptr;
        int64_t sm, sn;
        int j, used = 0, found = -1, s;
        if (!y || y->st == out->st || y->dtype != out->dtype || y->rank > 2) return 0;
        ptr = y->st->data + y->offset * es;
        sn = y->rank >= 1 && y->shape[y->rank - 1] != 1 ? y->strides[y->rank - 1] * es : 0;
        sm = y->rank == 2 && y->shape[0] != 1 ? y->strides[0] * es : 0;
        /* the prologue's output (written by this task: column block cb reads back only the
           columns it wrote, so only that very view, with K == N) */
        if (p->pro && p->pro_out >= y->st->data && p->pro_out < y->st->data + y->st->bytes &&
            !(ptr == p->pro_out && p->K == p->N && sn == p->pro_ok && (p->M == 1 || sm == p->pro_om)))
            return 0;
        for (s = 0; s < p->n_epi; s++) /* the operand slots in use; this operand's, if already read */
            if (gpuos__epi_binary(p->epi[s])) {
                const int q = (p->epi[s] >> GPUOS__EPI_IN_SHIFT) & 1;
                used |= 1 << q;
                if (p->epi_ptr[q] == ptr && p->epi_sm[q] == sm && p->epi_sn[q] == sn) found = q;
            }
        if (found >= 0) {
            j = found;
        } else {
            for (j = 0; j < GPUOS__MM_EPI_IN && (used >> j & 1); j++) continue;
            if (j == GPUOS__MM_EPI_IN) return 0;
            /* with a prologue the task's operand views are out, a, b and the prologue's output
               (cuda_operands: GPUOS__MAX_PTR at most): room for one more, besides that view */
            if (p->pro && j > 0 && !graph_pro_view(p, p->epi_ptr[0], p->epi_sm[0], p->epi_sn[0]) &&
                !graph_pro_view(p, ptr, sm, sn))
                return 0;
            for (s = 0; s < f->n_st && f->st[s] != y->st; s++) continue;
            if (s == f->n_st) { /* its storage, for references and dependencies (an input) */
                if (f->n_st == GPUOS__MAX_PTR) return 0;
                f->st[f->n_st++] = y->st;
            }
            p->epi_ptr[j] = ptr;
            p->epi_sm[j] = sm;
            p->epi_sn[j] = sn;
        }
        code |= j << GPUOS__EPI_IN_SHIFT | (self == 1 ? GPUOS__EPI_SWAP : 0);
    }
    p->epi[p->n_epi++] = code;
    f->item_cost += 4 * p->N;
    return 1;
}

/* Would the device's layernorm give a row of n elements, alone in its tile, to the whole block
   (gpuos__d_group(1, 3 n) == GPUOS__PK_THREADS, device_ops.cu)? The prologue reduces a row as
   that block does, so that its values are the layernorm task's bit for bit. */
static int graph_ln_block(int64_t n) {
    const int64_t nt = GPUOS__PK_THREADS, n_in = 3 * n;
    const int64_t c1 = n_in, c32 = (n_in + 31) / 32 + 8, cb = (n_in + nt - 1) / nt + 24;
    return !(c1 <= c32 && c1 <= cb) && cb < c32;
}

/* Makes f (a copy of the job mj of matmul task mt, which can lead) the fused task of the
   layernorm lt (planned as lj) right before it and the matmul, when mt's A is lt's output:
   the layernorm becomes the product's prologue (gpuos__matmul_plan.pro), which normalises
   each row of lt's input, writes it to lt's output and multiplies it. Only where the
   device's narrow column blocks run it (f32, M <= 8, every column of lt's output written by
   one block: K <= 8 ceil(N / 8), K at most 512 for its shared buffer) and the layernorm has
   no weight or bias; its input and output are other storages than the product's output and
   B. Returns 0 (f unchanged) when it cannot. */
static int graph_fuse_pro(const gpuos_task *lt, const gpuos__job *lj, const gpuos_task *mt, gpuos__job *f) {
    const gpuos__rows_plan *r = &lj->plan.rows;
    gpuos__matmul_plan *p = &f->plan.matmul;
    const gpuos_tensor *x = lt->out, *hin = lt->in[0];
    int s;
    if (lj->kind != GPUOS__KIND_ROWS || lj->op != GPUOS_OP_LAYERNORM || lj->rt || r->weight || r->bias) return 0;
    if (!x || !hin || x->dtype != GPUOS_F32 || hin->dtype != GPUOS_F32 || mt->out->dtype != GPUOS_F32 ||
        mt->in[1]->dtype != GPUOS_F32)
        return 0;
    if (!graph_same_view(mt->in[0], x) || p->pro || p->n_epi > 0) return 0;
    if (p->M > 8 || p->N < 9 || p->K != r->n || p->K > 512 || p->K > 8 * ((p->N + 7) / 8) || !graph_ln_block(p->K))
        return 0;
    if (r->outer_numel != p->M || r->outer_rank > 1 || (r->outer_rank == 0 && p->M != 1)) return 0;
    if (hin->st == x->st || mt->out->st == hin->st || mt->out->st == x->st || mt->in[1]->st == x->st) return 0;
    for (s = 0; s < f->n_st && f->st[s] != hin->st; s++) continue;
    if (s == f->n_st) { /* the layernorm's input: a storage the task reads */
        if (f->n_st == GPUOS__MAX_PTR) return 0;
        f->st[f->n_st++] = hin->st;
    }
    p->pro = 1;
    p->pro_out = r->out;
    p->pro_om = r->outer_rank ? r->outer_out_stride[0] : 0;
    p->pro_ok = r->out_stride;
    p->pro_eps = r->eps;
    p->a = r->in;
    p->a_m = r->outer_rank ? r->outer_in_stride[0] : 0;
    p->a_k = r->in_stride;
    f->item_cost += 8 * p->K;
    return 1;
}

static int graph_fuse_on(void) {
    const char *env = getenv("GPUOS_GRAPH_FUSE");
    return !(env && env[0] == '0');
}

/* A launch order to fuse: the tasks and jobs at positions 0..n-1, either a launch's jobs as
   bound and the tasks they were planned from (tasks, jobs), or a graph's nodes in launch
   order (nodes, order: their templates). */
typedef struct graph_seq {
    const gpuos_task *tasks;
    gpuos__job *const *jobs;
    const graph_node *nodes;
    const int *order;
} graph_seq;
static const gpuos_task *graph_seq_task(const graph_seq *s, int k) {
    return s->tasks ? &s->tasks[k] : &s->nodes[s->order[k]].task;
}
static const gpuos__job *graph_seq_job(const graph_seq *s, int k) {
    return s->jobs ? s->jobs[k] : s->nodes[s->order[k]].tmpl;
}

/* The fused group that starts at position i of s (n positions): a layernorm the matmul after
   it takes as a prologue, or not; the matmul that leads; the epilogue nodes after it. Returns
   its length, and in *f the fused job (a copy of the matmul's, fused); 1: nothing fused, *f
   not meaningful. The jobs of s are not changed. */
static int graph_group(const graph_seq *s, int n, int i, gpuos__job *f) {
    int len = 0, lead = i;
    if (i + 1 < n && graph_fuse_lead(graph_seq_task(s, i + 1), graph_seq_job(s, i + 1))) {
        memcpy(f, graph_seq_job(s, i + 1), sizeof *f);
        if (graph_fuse_pro(graph_seq_task(s, i), graph_seq_job(s, i), graph_seq_task(s, i + 1), f))
            len = 2, lead = i + 1;
    }
    if (len == 0) {
        if (!graph_fuse_lead(graph_seq_task(s, i), graph_seq_job(s, i))) return 1;
        memcpy(f, graph_seq_job(s, i), sizeof *f);
        len = 1;
    }
    while (i + len < n && graph_fuse_add(graph_seq_task(s, lead), f, graph_seq_task(s, i + len), graph_seq_job(s, i + len)))
        len++;
    f->next_free = NULL;
    return len;
}

/* A launch with bindings: its jobs (as bound, not queued yet: no references) fused the same
   way, by the tasks they were planned from: a group's first job becomes the fused job, the
   others are freed. Returns the count. */
static int graph_fuse_jobs(gpuos_context *ctx, gpuos__job **jobs, const gpuos_task *tasks, int n) {
    const graph_seq s = {tasks, jobs, NULL, NULL};
    gpuos__job f;
    int i, k, m = 0;
    for (i = 0; i < n;) {
        const int len = graph_group(&s, n, i, &f);
        if (len > 1) {
            memcpy(jobs[i], &f, sizeof f);
            for (k = i + 1; k < i + len; k++) {
                jobs[k]->n_st = 0;
                gpuos__job_free(ctx, jobs[k]);
                jobs[k] = NULL;
            }
        }
        jobs[m++] = jobs[i];
        i += len;
    }
    return m;
}

/* Builds g->fz for the launch order (g->order valid): each group (graph_group) becomes a
   fused template at its first position. */
static gpuos_status graph_fuse(gpuos_graph *g) {
    gpuos_context *ctx = g->ctx;
    const graph_seq s = {NULL, NULL, g->nodes, g->order};
    const int on = graph_fuse_on();
    int i;
    graph_drop_fused(ctx, g);
    g->fz = (graph_fused *)calloc((size_t)g->n + 1, sizeof *g->fz);
    if (!g->fz) return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "gpuos_graph_launch: no memory");
    g->n_tasks = g->n;
    for (i = 0; i < g->n && on;) {
        gpuos__job f;
        const int len = graph_group(&s, g->n, i, &f);
        if (len > 1) {
            gpuos__job *job = gpuos__job_alloc(ctx);
            if (!job) return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "gpuos_graph_launch: no memory");
            memcpy(job, &f, sizeof f);
            g->fz[i].job = job;
            g->fz[i].len = len;
            g->n_tasks -= len - 1;
        }
        i += len;
    }
    g->fz_ok = 1;
    return GPUOS_OK;
}

int gpuos_debug_graph_tasks(gpuos_graph *g) { return g ? g->last_tasks : -1; }

/* A launch that queued none of its n tasks says so (s set; the queue's own detail, which
   names gpuos_submit, kept after the status name). Returns s. */
static gpuos_status graph_nothing_queued(gpuos_context *ctx, gpuos_status s, int n) {
    char why[GPUOS__ERR_LEN];
    const char *w, *c;
    gpuos__last_error_copy(ctx, why, sizeof why);
    w = gpuos__error_detail(why);
    if (strncmp(w, "gpuos_submit: ", 14) == 0) w += 14;
    if (strncmp(w, "gpuos_graph_launch: ", 20) == 0) w += 20;
    if ((c = strstr(w, "; the task was not queued")) != NULL && c[25] == 0) why[c - why] = 0;
    return gpuos__set_error(ctx, s, "gpuos_graph_launch: none of the launch's %d tasks were queued: %s", n, w);
}

gpuos_status gpuos_graph_launch(gpuos_graph *g, const gpuos_graph_bind *binds, int n_binds,
                                const gpuos_graph_scalar *scalars, int n_scalars, uint64_t *seq) {
    static const char fn[] = "gpuos_graph_launch";
    gpuos_context *ctx;
    gpuos__job **jobs;
    gpuos_task *eff; /* a launch with bindings: each job's task as bound (fusion) */
    int i, j, k, queued = 0, nj = 0, fuse, fuse_bound;
    gpuos_status s = GPUOS_OK;
    if (!g) return gpuos__set_error(NULL, GPUOS_ERR_NULL_POINTER, "%s: graph is NULL", fn);
    ctx = g->ctx;
    if ((s = gpuos__check_alive(ctx, fn)) != GPUOS_OK) return s; /* (before a stale node is planned again) */
    if (n_binds < 0 || n_scalars < 0)
        return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT, "%s: %d bindings and %d scalars (negative counts)", fn,
                                n_binds, n_scalars);
    if ((n_binds > 0 && !binds) || (n_scalars > 0 && !scalars))
        return gpuos__set_error(ctx, GPUOS_ERR_NULL_POINTER, "%s: %d bindings and %d scalars, but a NULL array", fn,
                                n_binds, n_scalars);
    /* every binding and scalar is checked before anything is queued */
    for (i = 0; i < n_binds; i++) {
        const gpuos_tensor *r = binds[i].recorded;
        const gpuos_tensor *a = binds[i].actual, *rec = NULL;
        /* (uids are per context: a handle of another context could match a released one's) */
        if (r && r->ctx != ctx)
            return gpuos__set_error(ctx, GPUOS_ERR_CONTEXT_MISMATCH, "%s: binds[%d].recorded belongs to another context", fn, i);
        for (j = 0; j < g->n && !rec; j++)
            for (k = 0; k <= GPUOS_MAX_INPUTS && !rec; k++)
                if (graph_is(&g->nodes[j], k, r)) rec = k ? g->nodes[j].task.in[k - 1] : g->nodes[j].task.out;
        if (!rec) return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT, "%s: binds[%d].recorded is not a tensor of the graph", fn, i);
        for (j = 0; j < i; j++) /* (the last one won, a user's review: a mistake, refused) */
            if (binds[j].recorded == r)
                return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT,
                                        "%s: binds[%d].recorded is bound already by binds[%d]", fn, i, j);
        if (!a) return gpuos__set_error(ctx, GPUOS_ERR_NULL_POINTER, "%s: binds[%d].actual is NULL", fn, i);
        if (a->ctx != ctx) return gpuos__set_error(ctx, GPUOS_ERR_CONTEXT_MISMATCH, "%s: binds[%d].actual belongs to another context", fn, i);
        if (a->dtype != rec->dtype)
            return gpuos__set_error(ctx, GPUOS_ERR_DTYPE_MISMATCH, "%s: binds[%d].actual is %s, the recorded tensor %s", fn,
                                    i, gpuos_dtype_name(a->dtype), gpuos_dtype_name(rec->dtype));
        if (!graph_same_layout(rec, a))
            return gpuos__set_error(ctx, GPUOS_ERR_SHAPE_MISMATCH,
                                    "%s: binds[%d].actual must have the recorded tensor's dtype, shape and strides", fn, i);
    }
    for (i = 0; i < n_scalars; i++) {
        int takes;
        if (scalars[i].node < 0 || scalars[i].node >= g->n || scalars[i].index < 0 || scalars[i].index > 1)
            return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT,
                                    "%s: scalars[%d] names node %d, scalar %d (nodes 0..%d, scalars 0..1)", fn, i,
                                    scalars[i].node, scalars[i].index, g->n - 1);
        if (scalars[i].index >= (takes = graph_node_scalars(&g->nodes[scalars[i].node])))
            return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT,
                                    "%s: scalars[%d] sets scalar %d of node %d, a %s, which takes %d scalar%s", fn, i,
                                    scalars[i].index, scalars[i].node, gpuos_op_name(g->nodes[scalars[i].node].task.op),
                                    takes, takes == 1 ? "" : "s");
        for (j = 0; j < i; j++)
            if (scalars[j].node == scalars[i].node && scalars[j].index == scalars[i].index)
                return gpuos__set_error(ctx, GPUOS_ERR_INVALID_ARGUMENT, "%s: scalars[%d] sets what scalars[%d] set already",
                                        fn, i, j);
    }
    if (g->n == 0) {
        if (seq) *seq = gpuos_fence(ctx);
        return GPUOS_OK;
    }
    if (!g->order_ok) {
        int *o = (int *)realloc(g->order, (size_t)g->n * sizeof(int));
        if (!o) return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "%s: no memory", fn);
        g->order = o;
        if (g->n_edges == 0)
            for (i = 0; i < g->n; i++) g->order[i] = i;
        else if ((k = graph_launch_order(g, g->order)) != 1)
            return gpuos__set_error(ctx, k < 0 ? GPUOS_ERR_OUT_OF_MEMORY : GPUOS_ERR_INTERNAL,
                                    k < 0 ? "%s: no memory" : "%s: the dependencies have a cycle", fn);
        g->order_ok = 1;
    }
    /* nothing bound: the fused templates (g->fz); bound: the jobs as bound are fused below
       (graph_fuse_jobs), since a binding may make an epilogue operand alias the output */
    fuse = n_binds == 0 && n_scalars == 0;
    if (fuse && !g->fz_ok && (s = graph_fuse(g)) != GPUOS_OK) return s;
    /* GPU, nothing bound: the nodes were encoded once; a launch is a copy of their slots */
    if (ctx->cuda && n_binds == 0 && n_scalars == 0 && !g->cg_refused) {
        int fresh_needed = 0, repin = 0;
        for (i = 0; i < g->n && !fresh_needed; i++) fresh_needed = graph_rt_stale(ctx, g->nodes[i].tmpl);
        if (!fresh_needed) {
            gpuos__job *job = gpuos__job_alloc(ctx);
            if (!job) return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "%s: no memory", fn);
            pthread_mutex_lock(&ctx->mu);
            if (!g->cg) {
                gpuos__job **tm = (gpuos__job **)malloc((size_t)g->n * sizeof *tm);
                if (!tm) {
                    s = GPUOS_ERR_OUT_OF_MEMORY;
                } else {
                    for (i = 0; i < g->n; i += g->fz[i].len ? g->fz[i].len : 1)
                        tm[nj++] = g->fz[i].len ? g->fz[i].job : g->nodes[g->order[i]].tmpl;
                    s = gpuos__cuda_graph_make_locked(ctx, tm, nj, &g->cg);
                    nj = 0;
                    free(tm);
                }
                if (s == GPUOS_ERR_UNSUPPORTED) g->cg_refused = 1;
            }
            if (g->cg && !graph_pin_versions_locked(ctx, g, job)) {
                /* a run-time operator redefined since the check above: node by node (planned again) */
                if (job->xrt) repin = 1;
                else s = GPUOS_ERR_OUT_OF_MEMORY;
            } else if (g->cg) {
                job->xst = (gpuos__storage **)malloc((size_t)gpuos__cuda_graph_storages(g->cg) * sizeof *job->xst + 1);
                job->deadline_ns = gpuos__deadline_at(g->deadline_us);
                job->dl_open = g->deadline_us != 0;
                s = job->xst ? gpuos__cuda_graph_launch_locked(ctx, g->cg, job,
                                                               gpuos__urgency(g->priority, g->deadline_us), seq)
                             : GPUOS_ERR_OUT_OF_MEMORY;
                if (s == GPUOS_OK) job = NULL, g->last_tasks = g->n_tasks; /* queued */
            }
            pthread_mutex_unlock(&ctx->mu);
            if (job) {
                job->n_xst = 0;
                gpuos__job_free(ctx, job); /* frees xst, drops xrt's references */
            }
            if (!repin && (g->cg || s != GPUOS_ERR_UNSUPPORTED)) {
                if (s == GPUOS_ERR_OUT_OF_MEMORY) return gpuos__set_error(ctx, s, "%s: no memory", fn);
                if (s != GPUOS_OK) return graph_nothing_queued(ctx, s, g->n_tasks);
                return s;
            }
            s = GPUOS_OK; /* refused: per-node launches below */
        }
    }
    /* every job first (a node that fails validation queues nothing), then push them in order */
    jobs = (gpuos__job **)calloc((size_t)g->n, sizeof *jobs);
    fuse_bound = !fuse && graph_fuse_on();
    eff = fuse_bound ? (gpuos_task *)malloc((size_t)g->n * sizeof *eff) : NULL;
    if (!jobs || (fuse_bound && !eff)) {
        free(jobs);
        free(eff);
        return gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "%s: no memory", fn);
    }
    for (i = 0; i < g->n && s == GPUOS_OK; i++) {
        graph_node *nd = &g->nodes[g->order[i]];
        int bound = 0;
        if (fuse && g->fz[i].len) { /* the fused task: a copy of its template */
            gpuos__job *job = gpuos__job_alloc(ctx);
            if (!job) {
                s = gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "%s: no memory", fn);
                break;
            }
            memcpy(job, g->fz[i].job, sizeof *job);
            job->next_free = NULL;
            jobs[nj++] = job;
            i += g->fz[i].len - 1;
            continue;
        }
        if (graph_rt_stale(ctx, nd->tmpl)) { /* a run-time operator redefined (or removed) since: plan again */
            gpuos__job *fresh;
            s = gpuos__plan_task(ctx, &nd->task, &fresh);
            if (s != GPUOS_OK) break;
            if (!graph_same_def(nd->tmpl, fresh)) {
                s = graph_removed(ctx, fresh, g->order[i]);
                break;
            }
            graph_template(ctx, fresh);
            gpuos__job_free(ctx, nd->tmpl); /* drops its version's reference */
            nd->tmpl = fresh;
            graph_drop_cg(g); /* its kernel ids changed */
            g->cg_refused = 0;
        }
        for (j = 0; j < n_binds && !bound; j++)
            for (k = 0; k <= GPUOS_MAX_INPUTS; k++)
                if (graph_is(nd, k, binds[j].recorded)) bound = 1;
        for (j = 0; j < n_scalars && !bound; j++)
            if (scalars[j].node == g->order[i]) bound = 1;
        if (bound) { /* planned again from the task, with this launch's tensors and scalars */
            gpuos_task t = nd->task;
            for (j = 0; j < n_binds; j++)
                for (k = 0; k <= GPUOS_MAX_INPUTS; k++)
                    if (graph_is(nd, k, binds[j].recorded)) {
                        if (k == 0) t.out = binds[j].actual;
                        else t.in[k - 1] = binds[j].actual;
                    }
            for (j = 0; j < n_scalars; j++)
                if (scalars[j].node == g->order[i]) t.scalar[scalars[j].index] = scalars[j].value;
            if (eff) eff[nj] = t;
            s = gpuos__plan_task(ctx, &t, &jobs[nj]);
            if (s == GPUOS_OK && !graph_same_def(nd->tmpl, jobs[nj])) {
                s = graph_removed(ctx, jobs[nj], g->order[i]);
                jobs[nj] = NULL;
            }
            if (s == GPUOS_OK) nj++;
        } else { /* the recorded job, copied */
            gpuos__job *job = gpuos__job_alloc(ctx);
            if (!job) {
                s = gpuos__set_error(ctx, GPUOS_ERR_OUT_OF_MEMORY, "%s: no memory", fn);
                break;
            }
            memcpy(job, nd->tmpl, sizeof *job);
            job->next_free = NULL;
            job->n_st = nd->tmpl->n_st; /* references are taken when it is queued */
            job->rt_tmpl = 0;
            if (job->rt) { /* the version must still be current: else its slot may be gone */
                int cur;
                pthread_mutex_lock(&ctx->mu);
                cur = ctx->rt_cur[job->rt->index] == job->rt;
                if (cur) gpuos__rt_retain_locked(job->rt);
                pthread_mutex_unlock(&ctx->mu);
                if (!cur) { /* redefined since the check above: this node again, planned again */
                    job->rt = NULL; /* (not taken) */
                    gpuos__job_free(ctx, job);
                    i--;
                    continue;
                }
            }
            if (eff) eff[nj] = nd->task;
            jobs[nj++] = job;
        }
    }
    if (s == GPUOS_OK && eff) nj = graph_fuse_jobs(ctx, jobs, eff, nj);
    free(eff);
    if (s != GPUOS_OK) {
        for (i = 0; i < nj; i++)
            if (jobs[i]) {
                jobs[i]->n_st = 0; /* no references taken */
                gpuos__job_free(ctx, jobs[i]);
            }
        free(jobs);
        return s;
    }
    {
        const uint64_t dl = gpuos__deadline_at(g->deadline_us);
        for (i = 0; i < nj; i++) {
            jobs[i]->prio = gpuos__urgency(g->priority, g->deadline_us);
            jobs[i]->deadline_ns = dl;
            jobs[i]->dl_open = 0; /* a node recorded with its own deadline_us counts as the launch's */
        }
        if (nj > 0) jobs[nj - 1]->dl_open = g->deadline_us != 0; /* the launch counts once, by its last task */
    }
    s = gpuos__queue_push_batch(ctx, jobs, nj, seq, &queued);
    g->last_tasks = queued;
    if (s != GPUOS_OK && queued > 0)
        gpuos__set_error(ctx, s,
                         "%s: stopped after %d of the launch's %d tasks were queued (%s); those stay queued and "
                         "run, the others were not queued",
                         fn, queued, nj,
                         s == GPUOS_ERR_QUEUE_FULL      ? "the queue stayed full"
                         : s == GPUOS_ERR_OUT_OF_MEMORY ? "no memory to grow the queue"
                                                        : "the context failed or was destroyed");
    else if (s != GPUOS_OK)
        graph_nothing_queued(ctx, s, nj);
    free(jobs);
    return s;
}

void gpuos_graph_release(gpuos_graph *g) {
    gpuos_context *ctx;
    int i;
    if (!g) return;
    ctx = g->ctx;
    graph_drop_cg(g);
    graph_drop_fused(ctx, g);
    for (i = 0; i < g->n; i++) graph_node_free(ctx, &g->nodes[i]);
    free(g->nodes);
    free(g->edges);
    free(g->edge_next);
    free(g->edge_head);
    free(g->mark);
    free(g->walk);
    free(g->walk2);
    free(g->ord);
    free(g->pedge_head);
    free(g->pedge_next);
    free(g->order);
    free(g);
    gpuos__context_unref(ctx); /* the graph's hold on the context (gpuos_graph_create) */
}
