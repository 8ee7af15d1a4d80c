/* test_cudalog.c - the CUDA backend's storage logs and the repeat of a task's last encoding
   (cuda_log_record, cuda_memo_find, cuda_memo_relog, cuda_log_newest in src/cuda_backend.c),
   on the host: no GPU is needed, the functions are the library's own (gpuos.c is included).

   A repeated task reuses the descriptor of its last encoding m and renumbers m's log
   entries. After any number of other tasks' accesses since m (that the repeat allows: reads
   of what m only reads, with a full log dropping entries), a later task that conflicts with
   the repeat must still be ordered after it: a writer of what it read, a reader of what it
   wrote. Also: two reads of one storage (z = y[0:N] + y[N:2N]) where a full log dropped one
   of m's entries but not the other (renumbering must not be undone by the re-recording). */
#include "../gpuos.c"

#include "ctest.h"

static struct gpuos__cuda cu;

static void rec(cuda__log *lg, uint64_t dseq, uint64_t lo, uint64_t hi, int write) {
    cuda__access a;
    memset(&a, 0, sizeof a);
    a.dseq = dseq, a.lo = lo, a.hi = hi, a.write = write, a.sig = 7, a.tile = 1024;
    cuda_log_record(&cu, lg, &a);
}

/* The newest unretired lane-0 task (floors included) a later access of [lo, hi) waits for. */
static uint64_t waits_for(const cuda__log *lg, uint64_t lo, uint64_t hi, int write) {
    uint64_t newest[GPUOS__LANES] = {0, 0};
    cuda_log_newest(&cu, lg, lo, hi, write, newest);
    return newest[0];
}

/* m: a task that read the ranges [lo[k], hi[k]) of log y (and wrote [wlo, whi) of log x if
   x), encoded as dseq; then k_other readers of [lo[0], hi[0]) of y; then the repeat as rdseq. */
static void scenario(int n_reads, int k_other, int with_write) {
    static cuda__log x, y;
    cuda__memo m;
    cuda__access *e[GPUOS__MAX_PTR];
    gpuos__qdesc d;
    const uint64_t N = 4096;
    uint64_t dseq = 1, rdseq;
    int k;
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    memset(&m, 0, sizeof m);
    memset(&d, 0, sizeof d);
    memset(&cu, 0, sizeof cu);
    d.base = 3, d.tile_items = 1024;
    /* an earlier instance, then m (each access recorded as cuda_encode does, m noting them) */
    for (k = 0; k < 2; k++, dseq++) {
        int r;
        m.n_acc = 0;
        if (with_write) {
            rec(&x, dseq, 0, N, 1);
            m.lg[m.n_acc] = &x, m.lo[m.n_acc] = 0, m.hi[m.n_acc] = N, m.write[m.n_acc++] = 1;
        }
        for (r = 0; r < n_reads; r++) {
            rec(&y, dseq, r * N, (r + 1) * N, 0);
            m.lg[m.n_acc] = &y, m.lo[m.n_acc] = r * N, m.hi[m.n_acc] = (r + 1) * N, m.write[m.n_acc++] = 0;
        }
        m.dseq = dseq;
        for (r = 0; r < m.n_acc; r++) m.ver[r] = m.write[r] ? m.lg[r]->ver : m.lg[r]->wver;
    }
    for (k = 0; k < k_other; k++) rec(&y, dseq++, 0, N, 0); /* other readers of y[0:N] */
    /* the repeat is allowed: no write to y, x untouched */
    for (k = 0; k < m.n_acc; k++)
        CHECK((m.write[k] ? m.lg[k]->ver : m.lg[k]->wver) == m.ver[k], "reads %d others %d: the repeat was refused",
              n_reads, k_other);
    CHECK(cuda_memo_find(&m, e), "reads %d others %d: an entry of a write is gone", n_reads, k_other);
    rdseq = dseq++;
    cuda_memo_relog(&cu, &m, e, rdseq, &d);
    CHECK(m.dseq == rdseq, "the memo is the repeat");
    /* a later writer of each range the repeat read waits for it */
    for (k = 0; k < n_reads; k++)
        CHECK(waits_for(&y, k * N, (k + 1) * N, 1) >= rdseq,
              "reads %d others %d: a writer of y[%d] waits for %llu, not for the repeat %llu", n_reads, k_other, k,
              (unsigned long long)waits_for(&y, k * N, (k + 1) * N, 1), (unsigned long long)rdseq);
    if (with_write) { /* a later reader (or writer) of what it wrote waits for it */
        CHECK(waits_for(&x, 0, N, 0) >= rdseq, "reads %d others %d: a reader of x does not wait for the repeat",
              n_reads, k_other);
        CHECK(waits_for(&x, 0, N, 1) >= rdseq, "reads %d others %d: a writer of x does not wait for the repeat",
              n_reads, k_other);
    }
    /* a later reader of y waits for no one (reads never wait for reads) */
    CHECK(waits_for(&y, 0, 2 * N, 0) == 0, "a reader of y waits");
    /* the repeat may repeat again: its entries are there */
    CHECK(cuda_memo_find(&m, e), "reads %d others %d: the repeat's entries are gone", n_reads, k_other);
}

/* cuda_graph_stand_ins: which reads of a recorded graph a launch need not record. Node k's
   descriptor and accesses are set by hand, as gpuos__cuda_graph_make_locked leaves them. */
static struct gpuos__cuda_graph sg;
static gpuos__qdesc sdesc[4];
static cuda__gacc sacc[16];
static gpuos__storage sst[3]; /* X, Y, Z */
static void sg_reset(int n) {
    memset(&sg, 0, sizeof sg), memset(sdesc, 0, sizeof sdesc), memset(sacc, 0, sizeof sacc);
    sg.n = n, sg.desc = sdesc, sg.acc = sacc;
    for (int k = 0; k < n; k++) sdesc[k].n_tiles = 4, sdesc[k].tile_items = 1024;
}
static void sg_acc(int st, uint64_t lo, uint64_t hi, uint64_t sig, int node, int write, int apred) {
    cuda__gacc *a = &sacc[sg.n_acc++];
    a->st = &sst[st], a->lo = lo, a->hi = hi, a->sig = sig, a->node = node, a->write = write, a->apred = apred;
}
static void stand_ins(void) {
    /* node 0 reads X (map 5) and writes Y; node 1, tile-aligned with it through Y, reads X
       through the same map: it stands for node 0's read */
    sg_reset(2);
    sg_acc(1, 0, 16384, 9, 0, 1, -1), sg_acc(0, 0, 16384, 5, 0, 0, -1);
    sg_acc(2, 0, 16384, 9, 1, 1, -1), sg_acc(1, 0, 16384, 9, 1, 0, 0), sg_acc(0, 0, 16384, 5, 1, 0, -1);
    cuda_graph_stand_ins(&sg);
    CHECK(sacc[1].stood && !sacc[4].stood, "aligned chain, same map: the later read stands in (%d %d)", sacc[1].stood,
          sacc[4].stood);
    /* node 1 reads X through another map (X transposed against X): a writer aligned with node
       1's read follows only its tile t, while node 0's other tiles read those bytes */
    sacc[4].sig = 6, sacc[1].stood = 0;
    cuda_graph_stand_ins(&sg);
    CHECK(!sacc[1].stood, "aligned, another map: node 0's read stays recorded");
    /* ... unless nothing can align with node 1's read (sig 0) */
    sacc[4].sig = 0;
    cuda_graph_stand_ins(&sg);
    CHECK(sacc[1].stood, "aligned, node 1's read aligns with nothing: it stands in");
    /* no order between them (node 1 not aligned, no dependency): both stay */
    sacc[4].sig = 5, sacc[1].stood = 0, sacc[3].apred = -1;
    cuda_graph_stand_ins(&sg);
    CHECK(!sacc[1].stood, "independent readers: both recorded");
    /* an explicit dependency of node 1 on node 0 */
    sdesc[1].n_deps = 1, sdesc[1].dep_delta[0] = 1;
    cuda_graph_stand_ins(&sg);
    CHECK(sacc[1].stood, "explicit dependency: the later read stands in");
    /* the later read covers less than the earlier one */
    sacc[1].stood = 0, sacc[4].hi = 8192;
    cuda_graph_stand_ins(&sg);
    CHECK(!sacc[1].stood, "a smaller later read stands for nothing");
    /* aligned with a node of more tiles: its extra tiles are not implied */
    sacc[4].hi = 16384, sdesc[1].n_deps = 0, sacc[3].apred = 0, sdesc[0].n_tiles = 8;
    cuda_graph_stand_ins(&sg);
    CHECK(!sacc[1].stood, "aligned with a node of more tiles: not implied");
    /* a wait for every earlier task implies everything before */
    sdesc[1].n_deps = GPUOS__DEPS_ALL, sacc[3].apred = -1;
    cuda_graph_stand_ins(&sg);
    CHECK(sacc[1].stood, "a wait for all earlier tasks: the later read stands in");
    /* transitively: 0 -> 1 -> 2 by alignment, node 2 reads X as node 0 does */
    sg_reset(3);
    sg_acc(1, 0, 16384, 9, 0, 1, -1), sg_acc(0, 0, 16384, 5, 0, 0, -1);
    sg_acc(1, 0, 16384, 9, 1, 1, 0);
    sg_acc(2, 0, 16384, 9, 2, 1, -1), sg_acc(1, 0, 16384, 9, 2, 0, 1), sg_acc(0, 0, 16384, 5, 2, 0, -1);
    cuda_graph_stand_ins(&sg);
    CHECK(sacc[1].stood, "a chain of alignments: the last read stands in");
}

int main(void) {
    int n_reads, k_other, w;
    (void)ctest_device; /* no context here */
    for (w = 0; w < 2; w++)
        for (n_reads = 1; n_reads <= 3; n_reads++)
            for (k_other = 0; k_other <= 2 * CUDA__LOG_LEN; k_other++) scenario(n_reads, k_other, w);
    stand_ins();
    return ctest_summary("test_cudalog");
}
