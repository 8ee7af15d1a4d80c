/* persistent.cuh - the persistent kernel: fetches tasks from the host ring, runs
   their tiles on worker blocks, tracks dependencies, retires tasks in order.

   Compiled as part of the device source (after the generated kernels, whose
   dispatcher gpuos__d_run(kernel_id, plan, begin, end) it calls). Layout and
   protocol are described in docs/ARCHITECTURE.md ("The GPU path"); the host side is
   src/cuda_backend.c, which shares the structs below through src/gpuos_queue.h.

   Blocks: block 0 is the scheduler (fetches descriptors from pinned host memory into
   the device task ring, copies inline plans into the plan table, retires finished
   tasks and reports progress to the host); blocks 1..n-1 are workers. While run-time
   operators are defined, a second kernel (gpuos__pk_rt, from the run-time module:
   this file compiled as part GPUOS__D_PART_RT) runs beside it with n_rt more workers,
   which take the run-time operators' tiles. Every worker walks its own task sequence
   in order; tile t of a task belongs to worker (base + t) % n_main (built-in kernels),
   or to run-time worker (base + t) % n_rt. A chain of element-wise tasks on the same tiles gets the
   same base from the host, so its tiles stay on one block and need no cross-block
   synchronisation (in-order processing plus __syncthreads is enough). Dependencies
   the host could not prove tile-local are waited for on the producer's done stamp. */

/* part 0 of a split compile (device_ops.cu): the whole kernel; part GPUOS__D_PART_RT: the
   workers and gpuos__pk_rt */
#if !defined(GPUOS__D_PART) || GPUOS__D_PART == 0 || GPUOS__D_PART == GPUOS__D_PART_RT
#if !defined(GPUOS__D_PART) || GPUOS__D_PART == 0
#define GPUOS__PK_SCHED 1 /* this part has the scheduler block and gpuos__pk_main */
#else
#define GPUOS__PK_SCHED 0
#endif
/* ---------------------------------------------------------------- memory model helpers */
static __device__ __forceinline__ uint64_t gpuos__ld_acquire_gpu_u64(const volatile uint64_t *p) {
    uint64_t v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
static __device__ __forceinline__ uint32_t gpuos__ld_acquire_gpu_u32(const volatile uint32_t *p) {
    uint32_t v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
static __device__ __forceinline__ void gpuos__st_release_gpu_u64(volatile uint64_t *p, uint64_t v) {
    asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
static __device__ __forceinline__ void gpuos__st_relaxed_sys_u64(volatile uint64_t *p, uint64_t v) {
    asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
static __device__ __forceinline__ void gpuos__nanosleep(unsigned ns) { asm volatile("nanosleep.u32 %0;" ::"r"(ns)); }

static __device__ __forceinline__ void gpuos__st_release_gpu_u32(volatile uint32_t *p, uint32_t v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
static __device__ __forceinline__ uint64_t gpuos__globaltimer(void) {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Copies a descriptor with strong (L2-coherent) loads: inbox and task-ring entries are
   rewritten by another multiprocessor every lap, so the copy must not depend on whether
   the acquire of the entry's stamp also dropped this multiprocessor's L1 lines. */
static __device__ __forceinline__ void gpuos__ld_desc(gpuos__qdesc *dst, const gpuos__qdesc *src) {
    const uint64_t *s = (const uint64_t *)src;
    uint64_t *d = (uint64_t *)dst;
#pragma unroll
    for (int k = 0; k < (int)(sizeof(gpuos__qdesc) / 8); k++)
        asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(d[k]) : "l"(s + k) : "memory");
}

/* The words the fetcher and retirer warps share are read and written with shared-memory
   atomics: no barrier joins the two roles, and plain accesses would be a data race. */
static __device__ __forceinline__ uint64_t gpuos__sh_load(uint64_t *p) {
    return atomicAdd((unsigned long long *)p, 0ull);
}
static __device__ __forceinline__ void gpuos__sh_store(uint64_t *p, uint64_t v) {
    atomicExch((unsigned long long *)p, (unsigned long long)v);
}

/* ---------------------------------------------------------------- the scheduler block */
/* Warp-specialised, one fetcher and one retirer per lane (gpuos_queue.h). Warps 0-3 fetch
   lane 0 (warps 1-3 poll, warp 0 pushes the batch polled before), warp 5 lane 1 (polls,
   then pushes): each polls its host ring (one slot while idle, all its slots once busy,
   eight threads per slot, one PCIe round trip per poll), copies plan chunks into the plan
   table and descriptors into its task ring, and pushes each task, in sequence order, into
   its lane's inbox of every worker that owns one of its tiles. Warps 4 and 6 retire:
   each advances its lane's `retired` over finished tasks in order (32 per parallel read)
   and tells the host with one posted write. The roles meet only through shared words
   (atomics), so retirement never waits for a PCIe poll, and a full lane-0 inbox never
   holds up lane 1. */
#define GPUOS__FETCH_THREADS 128 /* lane 0's fetcher: a processor warp and 12 slots per poll */
#define GPUOS__FETCH_THREADS_HI 32 /* lane 1's: 4 slots per poll */
#define GPUOS__FETCH_FIRST_HI 160  /* lane 1's fetcher is warp 5 */
#if GPUOS__PK_SCHED
template <int ID, int NT>
static __device__ __forceinline__ void gpuos__named_bar(void) {
    asm volatile("bar.sync %0, %1;" ::"n"(ID), "n"(NT) : "memory");
}
/* The same barrier, returning how many of its threads passed a true pred (bar.red.popc):
   how the fetcher's poller hands a batch's size to the processor without a shared word
   (a plain one was flagged by racecheck across the role-split barrier, shared-memory
   atomics cost pipeline_jobs 20%). Every thread of that barrier instance must use it. */
template <int ID, int NT>
static __device__ __forceinline__ uint32_t gpuos__named_bar_popc(int pred) {
    uint32_t r;
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.s32 p, %1, 0;\n\tbar.red.popc.u32 %0, %2, %3, p;\n\t}"
                 : "=r"(r) : "r"(pred), "n"(ID), "n"(NT) : "memory");
    return r;
}

/* One poll of LANE's host ring by NTP threads (ptid 0..NTP-1, eight per slot, barrier BAR
   of NTP threads): reads up to min(width, room) slots from ring position pos, one 8-byte
   volatile read per thread, so that one PCIe round trip both detects and delivers a slot
   (measured on the H100: one 8-byte read ~0.33 us; four 16-byte reads from ONE thread are
   serialised, ~3.7 us). The complete slots from the first one on go to body[0..n); returns
   n in every thread. */
template <int LANE, int NTP, int BAR>
static __device__ __forceinline__ int gpuos__fetch_poll(const gpuos__pk_params &P, int ptid, uint64_t pos, int width,
                                                        int64_t room, gpuos__qbody *body, uint32_t *s_ballot) {
    const int g = ptid >> 3, k = ptid & 7, lane = ptid & 31, warp = ptid >> 5;
    const uint64_t spos = pos + g;
    uint64_t wv = 0;
    int ok = 0;
    if (g < width && g < room) {
        asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(wv) : "l"(&P.ring[LANE][spos & (P.ring_slots - 1)].w[k]) : "memory");
        ok = (wv >> 56) == GPUOS__LAP_TAG(spos, P.ring_log2);
    }
    const uint64_t nx = __shfl_down_sync(0xffffffffu, wv, 1);
    const uint32_t okb = __ballot_sync(0xffffffffu, ok);
    if (((okb >> (8 * (g & 3))) & 0xffu) == 0xffu && k < 7) { /* the slot is complete: its body word k */
        const uint64_t m = 0x00ffffffffffffffull;
        body[g].w[k] = ((wv & m) >> (8 * k)) | ((nx & m) << (56 - 8 * k));
    }
#ifdef GPUOS__PK_TIMESTAMPS
    if (LANE == 0 && ptid == 0 && ok) P.ctl->stamp[0] = gpuos__globaltimer();
#endif
    if (lane == 0) {
        uint32_t r = 0;
        for (int q = 0; q < 4; q++)
            if (((okb >> (8 * q)) & 0xffu) == 0xffu) r |= 1u << q;
        s_ballot[warp] = r;
    }
    gpuos__named_bar<BAR, NTP>();
    int n = 0;
    for (int w = 0; w < NTP / 32; w++) {
        uint32_t x = s_ballot[w];
        if (x == 0xfu) { n += 4; continue; }
        n += __ffs(~x) - 1;
        break;
    }
    gpuos__named_bar<BAR, NTP>(); /* s_ballot is read by all before the next poll writes it */
    return n;
}

/* State of LANE's batch processor (one warp): what it pushed so far. */
struct gpuos__fetch_state {
    uint64_t pos, seq; /* ring position and task sequence number of the next slot */
    int exit;          /* EXIT seen */
    uint64_t xtaken;   /* lane 0: the last express task the express worker has (claimed, or left to it) */
};

/* Puts bodies s_body[0..n) (n <= MAXN; no GRAPH slot) into the device queue, one warp
   (lane 0..31): plan chunks into the plan table, descriptors into the task ring, and each
   task, in sequence order, into the inbox of every worker that owns one of its tiles. They
   took `slots` ring slots (0 for a graph's tasks but its last): then tells the host how far
   it fetched. */
template <int LANE, int MAXN>
static __device__ void gpuos__fetch_process(const gpuos__pk_params &P, const gpuos__qbody *s_body, int n,
                                            gpuos__fetch_state *st, uint32_t *s_wtail, uint32_t *s_wseen,
                                            unsigned long long *fprof, uint32_t slots) {
    __shared__ gpuos__qdesc s_d[MAXN];
    __shared__ uint32_t s_off[MAXN + 1];
    __shared__ uint32_t s_wo[MAXN], s_wn[MAXN]; /* a task's workers: inboxes s_wo + (base + j) % s_wn */
    __shared__ uint32_t s_wr[MAXN];             /* base % s_wn, once a batch */
    __shared__ uint8_t s_beg[32];               /* a push round: the task whose pairs begin at lane k */
    const int lane = threadIdx.x & 31;
    const uint32_t nw = P.n_main + P.n_rt; /* every inbox (EXIT goes to all) */
    gpuos__dtask *const tasks = P.tasks[LANE];
    gpuos__ientry *const inbox = P.inbox[LANE];
    uint64_t *const done = P.done[LANE];
    uint32_t *const wpos = P.wpos[LANE];
    const uint64_t s_seq = st->seq;
#ifdef GPUOS__PK_TIMESTAMPS
    long long ph = clock64(), ph1;
#define GPUOS__FPH(k) (ph1 = clock64(), lane == 0 && LANE == 0 ? (void)(fprof[k] += (unsigned long long)(ph1 - ph)) : (void)0, ph = ph1)
#else
#define GPUOS__FPH(k) (void)0
#endif
    gpuos__qbody body;
    if (lane < n) body = s_body[lane];
    /* Lane t handles slot t of the batch (complete: every word carried the tag). */
    const uint32_t kind = lane < n ? GPUOS__KIND(body.d.kind) : 0;
    const int is_task = lane < n && kind != GPUOS__SLOT_PLAN;
    const uint32_t b = __ballot_sync(0xffffffffu, is_task);
    const uint32_t rank = __popc(b & ((1u << lane) - 1)); /* index among this batch's tasks */
    const uint32_t n_tasks = __popc(b);
    const uint64_t seq = s_seq + rank;
    /* Express tasks (lane 0), claimed in seq order by lane 0: one the express worker claimed
       first is its (no stamp here, no inbox entry); one right after a task the express worker
       has (a small download of what it just computed) is left to it too, which it runs next,
       before any inbox entry (xown marks it the worker's: gpuos__pk_xtake, gpuos__pk_xowed);
       any other the fetcher takes, and queues as any task, to the express worker's inbox. */
    const uint32_t xb = __ballot_sync(0xffffffffu, LANE == 0 && lane < n && kind == GPUOS__SLOT_TASK &&
                                                        (body.d.stamp & GPUOS__DESC_XPRESS));
    uint32_t xt = 0; /* the express tasks the express worker has */
    if (LANE == 0 && xb) {
        if (lane == 0)
            for (uint32_t m = xb; m; m &= m - 1) {
                const int l = __ffs(m) - 1;
                const uint64_t sq = s_seq + __popc(b & ((1u << l) - 1));
                const bool defer = st->xtaken + 1 == sq; /* right after one the worker has */
                /* whose it is, before the claim that the worker's claim may see */
                P.xown[sq & (GPUOS__XOWN - 1)] = sq | (defer ? GPUOS__XOWN_X : 0ull);
                __threadfence();
                if (atomicMax(P.xclaim, (unsigned long long)sq) >= sq || defer) {
                    xt |= 1u << l;
                    st->xtaken = sq;
                }
            }
        xt = __shfl_sync(0xffffffffu, xt, 0);
        st->xtaken = __shfl_sync(0xffffffffu, st->xtaken, 0);
    }
    if (lane < n) {
        if (kind == GPUOS__SLOT_PLAN) {
            uint64_t *dst = (uint64_t *)(P.plans + (size_t)body.p.plan_id * GPUOS__PLAN_BYTES +
                                         (size_t)body.p.chunk * GPUOS__SLOT_PAYLOAD);
            for (int k = 0; k < (int)(GPUOS__SLOT_PAYLOAD / 8); k++) dst[k] = body.p.payload[k];
        } else {
            gpuos__qdesc d = body.d;
            if (kind == GPUOS__SLOT_EXIT) d.n_tiles = 0, d.base = 0;
            /* an express task the express worker has: it runs there and writes its done stamp */
            const bool taken = (xt >> lane) & 1u;
            if (taken) d.n_tiles = 0;
            s_d[rank] = d;
            gpuos__dtask *t = &tasks[seq & (P.task_cap - 1)];
            t->d = d;
            if (!taken)
                done[seq & (P.task_cap - 1)] = kind == GPUOS__SLOT_EXIT ? GPUOS__DONE_EXIT(seq) : GPUOS__DONE_INIT(seq, d.n_tiles);
        }
    }
    /* s_d and the task-ring entries are complete for the warp after this sync. The task-ring
       entries (plain stores) are published below by one fence a batch (instead of one per
       writing thread or one per release). */
    __syncwarp();
    GPUOS__FPH(GPUOS__PROF_F_RING);
    /* Push each task, in order, to the inboxes of the workers owning its tiles: the batch as
       (task, owner) pairs in sequence order, 32 pairs per round; lanes naming the same
       worker take consecutive inbox entries in lane order, so every inbox stays in sequence
       order. */
    { /* lane i: task i's inbox range and its entries' offset (a prefix sum over the warp) */
        uint32_t cnt = 0;
        int is_exit = 0;
        if ((uint32_t)lane < n_tasks) {
            gpuos__qdesc *d = &s_d[lane];
            const int rt = d->kernel_id >= GPUOS__RT_KERNEL_BASE && P.n_rt;
            const uint32_t nk = rt ? P.n_rt : P.n_main;
            is_exit = GPUOS__KIND(d->kind) == GPUOS__SLOT_EXIT;
            if (is_exit) { /* every inbox */
                s_wo[lane] = 0;
                s_wn[lane] = nw;
                s_wr[lane] = 0;
                cnt = nw;
            } else {
                s_wo[lane] = rt ? P.n_main : 0;
                s_wn[lane] = nk;
                s_wr[lane] = d->base % nk;
                cnt = d->n_tiles < nk ? d->n_tiles : nk;
            }
        }
        uint32_t incl = cnt;
#pragma unroll
        for (int k = 1; k < 32; k <<= 1) {
            const uint32_t v = __shfl_up_sync(0xffffffffu, incl, k);
            if (lane >= k) incl += v;
        }
        if ((uint32_t)lane < n_tasks) s_off[lane] = incl - cnt;
        const uint32_t total = __shfl_sync(0xffffffffu, incl, 31); /* lanes past the tasks add 0 */
        if (lane == 0) s_off[n_tasks] = total;
        if (__any_sync(0xffffffffu, is_exit)) st->exit = 1;
    }
    __syncwarp();
    const uint32_t pairs = s_off[n_tasks];
    GPUOS__FPH(GPUOS__PROF_F_LAYOUT);
    /* ONE fence: the task-ring entries and done stamps (plain stores above) before the
       relaxed stores of every inbox entry naming them (a worker reads the descriptor from the
       task ring after its acquire of the entry, and adds its tiles to the stamp) */
    __threadfence();
    __syncwarp();
    GPUOS__FPH(GPUOS__PROF_F_FENCE);
    uint32_t carry = 0; /* the task of the previous round's last pair */
    for (uint32_t p0 = 0; p0 < pairs; p0 += 32) {
        const uint32_t p = p0 + lane;
        const int active = p < pairs;
        /* pair p's task, the last one with pairs beginning at or before p (tasks without
           pairs have none): lane t < n_tasks marks where task t's pairs begin in this
           round, and each pair lane takes the nearest mark at or below it (else the task
           the previous round ended in). A binary search over s_off and a modulo cost a
           round ~500 of its ~1400 cycles (tests/gpu/probe_rank.cu, H100). */
        uint32_t mark = 0;
        if ((uint32_t)lane < n_tasks) {
            const uint32_t o = s_off[lane];
            if (s_off[lane + 1] > o && o >= p0 && o - p0 < 32u) {
                mark = 1u << (o - p0);
                s_beg[o - p0] = (uint8_t)lane;
            }
        }
#if __CUDA_ARCH__ >= 800
        const uint32_t begins = __reduce_or_sync(0xffffffffu, mark);
#else
        uint32_t begins = mark;
#pragma unroll
        for (int k = 16; k >= 1; k >>= 1) begins |= __shfl_xor_sync(0xffffffffu, begins, k);
#endif
        __syncwarp();
        const uint32_t below = begins & ((2u << lane) - 1u); /* lane 31: every bit */
        const uint32_t i = below ? s_beg[31 - __clz(below)] : carry;
        carry = __shfl_sync(0xffffffffu, i, 31);
        uint32_t w = 0xffffffffu;
        const uint32_t wo = s_wo[i], wn = s_wn[i];
        if (active) { /* (base + j) % wn as (base % wn + j) less wn once: j < cnt <= wn */
            w = s_wr[i] + (p - s_off[i]);
            if (w >= wn) w -= wn;
            w += wo;
        }
        /* each lane's rank among the round's lanes naming its worker: none share one when
           the round's workers are consecutive (independent tasks on advancing bases, one
           task's tiles), else __match_any_sync (~350 cycles) */
        const uint32_t w0 = __shfl_sync(0xffffffffu, w, 0), wo0 = __shfl_sync(0xffffffffu, wo, 0),
                       wn0 = __shfl_sync(0xffffffffu, wn, 0);
        uint32_t ex = w0 - wo0 + (uint32_t)lane; /* w0's worker + lane, wrapped: lane < wn0 */
        if (ex >= wn0) ex -= wn0;
        const bool consecutive =
            __all_sync(0xffffffffu, !active || ((uint32_t)lane < wn0 && wo == wo0 && wn == wn0 && w == wo0 + ex));
        const uint32_t peers = consecutive ? 1u << lane : __match_any_sync(0xffffffffu, w);
        const uint32_t prank = __popc(peers & ((1u << lane) - 1));
        const uint32_t tail = active ? s_wtail[w] : 0;
        const int last = active && prank == (uint32_t)__popc(peers) - 1; /* w's newest entry of the round */
        __syncwarp();
        if (last) { /* inbox full: wait for the worker (one lane per worker: room for the
                       newest entry is room for the round's others) */
            const uint32_t k = tail + prank;
            while (k - s_wseen[w] >= P.inbox_cap) {
                uint32_t c = gpuos__ld_acquire_gpu_u32(&wpos[w]);
                if (k - c >= P.inbox_cap) gpuos__nanosleep(64);
                else s_wseen[w] = c;
            }
        }
        __syncwarp();
        if (active) {
            const uint32_t k = tail + prank;
            gpuos__ientry *e = &inbox[(size_t)w * P.inbox_cap + (k & (P.inbox_cap - 1))];
            asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(e), "l"(GPUOS__IE_MAKE(s_seq + i, k)) : "memory");
            if (last) s_wtail[w] = k + 1;
        }
        __syncwarp();
    }
    GPUOS__FPH(GPUOS__PROF_F_PUSH);
#ifdef GPUOS__PK_TIMESTAMPS
    if (lane == 0 && LANE == 0) fprof[GPUOS__PROF_F_PAIRS] += pairs;
#endif
#undef GPUOS__FPH
    st->pos += slots;
    st->seq += n_tasks;
    if (LANE == 0 && lane == 0 && n_tasks && P.xworker < P.n_main) /* the express worker's idle test (gpuos__pk_work) */
        asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(P.xfetched), "l"(st->seq) : "memory");
    if (lane == 0 && slots) {
        gpuos__st_relaxed_sys_u64(LANE ? &P.ctl->fetched_hi : &P.ctl->fetched, st->pos);
#ifdef GPUOS__PK_TIMESTAMPS
        if (n_tasks) P.ctl->stamp[LANE ? 6 : 1] = gpuos__globaltimer();
#endif
    }
    __syncwarp(); /* s_d, s_off are rewritten by the next batch */
}

/* The fetcher's warp waits until the task ring has room for n more tasks (lane 0 polls the
   limit the retirer raises). */
template <int LANE>
static __device__ __forceinline__ void gpuos__fetch_wait_room(uint64_t *s_limit, const gpuos__fetch_state *st, uint32_t n) {
    if ((threadIdx.x & 31) == 0)
        while ((int64_t)(gpuos__sh_load(&s_limit[LANE]) - st->seq) < (int64_t)n) gpuos__nanosleep(64);
    __syncwarp();
}

/* Expands a graph launch (the GRAPH slot's body gs, in shared memory) into its tasks,
   MAXN at a time: each node's descriptor from device memory, the launch's parts added as
   the host would (cuda_backend.c, gpuos__cuda_graph_launch_locked), then through
   gpuos__fetch_process like a polled batch. Waits for room in the task ring first (the
   poller took the launch with room for one task; retirement never waits for the fetcher). */
template <int LANE, int MAXN>
static __device__ void gpuos__fetch_graph(const gpuos__pk_params &P, const gpuos__qgraph *gs, gpuos__fetch_state *st,
                                          uint32_t *s_wtail, uint32_t *s_wseen, unsigned long long *fprof,
                                          uint64_t *s_limit) {
    __shared__ gpuos__qbody s_gb[MAXN];
    const int lane = threadIdx.x & 31;
    const gpuos__qgraph g = *gs;
    const gpuos__qdesc *src = (const gpuos__qdesc *)(uintptr_t)g.desc;
    for (uint32_t k0 = 0; k0 < g.n; k0 += MAXN) {
        const uint32_t m = g.n - k0 < (uint32_t)MAXN ? g.n - k0 : (uint32_t)MAXN;
        gpuos__fetch_wait_room<LANE>(s_limit, st, m);
        if ((uint32_t)lane < m) {
            gpuos__qdesc d;
            gpuos__ld_desc(&d, src + k0 + lane); /* strong loads: a freed table's address may come back */
            gpuos__qgraph_node(&g, &d, st->seq + lane);
            s_gb[lane].d = d;
        }
        __syncwarp();
        gpuos__fetch_process<LANE, MAXN>(P, s_gb, (int)m, st, s_wtail, s_wseen, fprof, k0 + m >= g.n ? 1u : 0u);
    }
}

/* A polled batch s_body[0..n): runs of ordinary slots through gpuos__fetch_process, each
   graph launch expanded by gpuos__fetch_graph, in ring order. */
template <int LANE, int MAXN>
static __device__ void gpuos__fetch_batch(const gpuos__pk_params &P, const gpuos__qbody *s_body, int n,
                                          gpuos__fetch_state *st, uint32_t *s_wtail, uint32_t *s_wseen,
                                          unsigned long long *fprof, uint64_t *s_limit) {
    const int lane = threadIdx.x & 31;
    uint32_t gm = __ballot_sync(0xffffffffu, lane < n && GPUOS__KIND(s_body[lane].d.kind) == GPUOS__SLOT_GRAPH);
    int i0 = 0;
    while (i0 < n) {
        const int gi = gm ? __ffs(gm) - 1 : n; /* the next graph launch, or the end */
        if (gi > i0) {
            if (i0 > 0) /* after a graph: the poller counted room for its slots only */
                gpuos__fetch_wait_room<LANE>(s_limit, st, (uint32_t)(gi - i0));
            gpuos__fetch_process<LANE, MAXN>(P, s_body + i0, gi - i0, st, s_wtail, s_wseen, fprof, (uint32_t)(gi - i0));
        }
        if (gi < n) {
            gpuos__fetch_graph<LANE, MAXN>(P, &s_body[gi].g, st, s_wtail, s_wseen, fprof, s_limit);
            gm &= gm - 1;
        }
        i0 = gi + 1;
    }
}

/* LANE's fetcher. Lane 1 (one warp): poll, then process, in turn. Lane 0 (GPUOS__FETCH_THREADS
   threads): warp 0 processes batches while warps 1.. poll for the next one, so the PCIe
   round trip of a poll (~2 us of the ~6 us a 16-slot batch took when the two alternated)
   overlaps the pushing; batches are handed over through two shared buffers at a barrier of
   all the fetcher's threads. s_limit, s_stop: shared with the retirers. */
#ifdef GPUOS__PK_TIMESTAMPS
/* probe builds: the fetcher's counters into P.prof */
static __device__ __forceinline__ void gpuos__fetch_prof_flush(const gpuos__pk_params &P, unsigned long long *fprof) {
    for (int k = GPUOS__PROF_F_POLL; k < GPUOS__PROF_N; k++)
        if (fprof[k]) atomicAdd(&P.prof[k], fprof[k]), fprof[k] = 0;
}
#endif
#ifndef GPUOS__POLL_OVERLAP /* 1: always poll while the last batch is pushed; 0: never; 2: after a full poll */
#define GPUOS__POLL_OVERLAP 2
#endif
#ifndef GPUOS__POLL_IDLE_NS /* the poller's pause after a poll that found nothing */
#define GPUOS__POLL_IDLE_NS 32
#endif
#define GPUOS__POLL_WAITS(n, slots) (GPUOS__POLL_OVERLAP == 0 || (GPUOS__POLL_OVERLAP == 2 && (n) < (slots)))
template <int LANE, int NT>
static __device__ void gpuos__pk_fetch(const gpuos__pk_params &P, uint64_t *s_limit, uint64_t *s_stop) {
    enum { SPLIT = NT > 32, NTP = SPLIT ? NT - 32 : NT, SLOTS = NTP / 8 }; /* slots per poll: eight threads read one */
    enum { GCHUNK = LANE ? 8 : 32 }; /* a graph launch's tasks per gpuos__fetch_process (>= SLOTS, <= 32) */
    __shared__ uint32_t s_ballot[NTP / 32];
    __shared__ uint32_t s_wtail[GPUOS__MAX_WORKERS]; /* inbox entries written, per worker */
    __shared__ uint32_t s_wseen[GPUOS__MAX_WORKERS]; /* last seen consumption, per worker */
    __shared__ gpuos__qbody s_body[SPLIT ? 2 : 1][SLOTS];
    const int tid = (int)threadIdx.x - (LANE ? GPUOS__FETCH_FIRST_HI : 0);
    const uint32_t nw = P.n_main + P.n_rt;
    for (uint32_t w = tid; w < nw; w += NT) {
        s_wtail[w] = P.wpos[LANE][w]; /* the host left each inbox empty: tail == consumed */
        s_wseen[w] = s_wtail[w];
    }
    gpuos__named_bar<1 + LANE, NT>();
    gpuos__fetch_state st;
    st.pos = P.start_pos[LANE];
    st.seq = P.start_seq[LANE];
    st.exit = 0;
    st.xtaken = 0;
#ifdef GPUOS__PK_TIMESTAMPS
    unsigned long long fprof[GPUOS__PROF_N] = {0};
#define GPUOS__FPROF fprof
#else
#define GPUOS__FPROF nullptr
#endif
    if (!SPLIT || tid >= 32) { /* the poller: every thread of lane 1, warps 1.. of lane 0 */
        const int ptid = SPLIT ? tid - 32 : tid;
        int width = 1, kb = 0; /* slots polled per round trip: 1 while idle */
        uint64_t pos = st.pos, tasks = st.seq; /* next slot to poll; tasks accepted so far + 1 */
        for (;;) {
            /* lane 1 ends with lane 0: the host sends EXIT (on lane 0) only once lane 1 retired everything */
            if (LANE == 1 && __shfl_sync(0xffffffffu, (threadIdx.x & 31) == 0 ? (int)gpuos__sh_load(s_stop) : 0, 0)) break;
#ifdef GPUOS__PK_TIMESTAMPS
            const long long t_poll = clock64();
#endif
            const int64_t room = (int64_t)(gpuos__sh_load(&s_limit[LANE]) - tasks); /* free task-ring entries */
            const int n = gpuos__fetch_poll<LANE, NTP, SPLIT ? 3 : 1 + LANE>(P, ptid, pos, width, room, s_body[kb], s_ballot);
            if (n == 0) {
#ifdef GPUOS__PK_TIMESTAMPS
                if (LANE == 0 && ptid == 0) {
                    fprof[GPUOS__PROF_F_POLL] += (unsigned long long)(clock64() - t_poll);
                    if (++fprof[GPUOS__PROF_F_EMPTY] >= 1024) gpuos__fetch_prof_flush(P, fprof);
                }
#endif
                width = 1;
                if (ptid == 0) gpuos__nanosleep(GPUOS__POLL_IDLE_NS);
                /* every poller waits for the pause: the eight readers of a slot must issue their
                   loads together (one request; a lane that reads later makes it two round trips) */
                gpuos__named_bar<SPLIT ? 3 : 1 + LANE, NTP>();
                continue;
            }
            width = SLOTS;
            if (!SPLIT) { /* process it here (one warp), then poll again */
                gpuos__fetch_batch<LANE, GCHUNK>(P, s_body[0], n, &st, s_wtail, s_wseen, GPUOS__FPROF, s_limit);
                pos = st.pos;
                tasks = st.seq;
                if (st.exit) break;
                continue;
            }
            /* count the batch's tasks (room) and whether it ends the kernel, then hand it over */
            int n_tasks = 0, ex = 0;
            for (int i = 0; i < n; i++) {
                const uint32_t kd = GPUOS__KIND(s_body[kb][i].d.kind);
                n_tasks += kd == GPUOS__SLOT_GRAPH ? (int)s_body[kb][i].g.n : kd != GPUOS__SLOT_PLAN;
                ex |= kd == GPUOS__SLOT_EXIT;
            }
            /* hand-over: the processor takes buffer kb; the barrier counts its n slots */
            gpuos__named_bar_popc<1 + LANE, NT>(ptid < n);
            pos += n;
            tasks += n_tasks;
            kb ^= 1;
            if (ex) break;
            if (GPUOS__POLL_WAITS(n, SLOTS)) gpuos__named_bar<1 + LANE, NT>(); /* until it is pushed */
        }
    } else { /* lane 0's processor: warp 0 */
        for (int kb = 0;; kb ^= 1) {
#ifdef GPUOS__PK_TIMESTAMPS
            const long long t_ho = clock64();
#endif
            const int n = (int)gpuos__named_bar_popc<1 + LANE, NT>(0); /* a batch of n slots in buffer kb */
#ifdef GPUOS__PK_TIMESTAMPS
            const long long t_batch = clock64();
            if (tid == 0) fprof[GPUOS__PROF_F_HANDOVER] += (unsigned long long)(t_batch - t_ho);
#endif
            gpuos__fetch_batch<LANE, GCHUNK>(P, s_body[kb], n, &st, s_wtail, s_wseen, GPUOS__FPROF, s_limit);
#ifdef GPUOS__PK_TIMESTAMPS
            if (tid == 0) {
                fprof[GPUOS__PROF_F_BATCH] += (unsigned long long)(clock64() - t_batch);
                fprof[GPUOS__PROF_F_FULL]++;
                fprof[GPUOS__PROF_F_SLOTS] += (unsigned long long)n;
                gpuos__fetch_prof_flush(P, fprof);
            }
#endif
            if (st.exit) break;
            if (GPUOS__POLL_WAITS(n, SLOTS)) gpuos__named_bar<1 + LANE, NT>(); /* the poller waits for this one */
        }
    }
    if (LANE == 0 && tid == 0) {
        while (!gpuos__sh_load(s_stop)) gpuos__nanosleep(100); /* the retirer retired everything up to EXIT */
        gpuos__st_relaxed_sys_u64(&P.ctl->exit_pos, st.pos);
        gpuos__st_relaxed_sys_u64(&P.ctl->exit_seq, st.seq);
    }
}
#undef GPUOS__FPROF

/* LANE's retirer (one warp). Lane 0 stops at EXIT and then raises s_stop; lane 1 stops at s_stop. */
template <int LANE>
static __device__ void gpuos__pk_retire(const gpuos__pk_params &P, uint64_t *s_limit, uint64_t *s_stop) {
    const int lane = threadIdx.x & 31;
    const uint64_t *const done = P.done[LANE];
    uint64_t r = P.start_seq[LANE] - 1;
    if (lane == 0) gpuos__sh_store(&s_limit[LANE], r + 1 + P.task_cap);
    for (;;) {
        int hit_exit = 0;
        if (LANE == 1 && __shfl_sync(0xffffffffu, (threadIdx.x & 31) == 0 ? (int)gpuos__sh_load(s_stop) : 0, 0)) break;
        for (;;) {
            const uint64_t nx = r + 1 + lane;
            /* one load tells whether task nx is published and finished, and whether it is
               EXIT (its done stamp, gpuos_queue.h) */
            const uint64_t v = gpuos__ld_acquire_gpu_u64(&done[nx & (P.task_cap - 1)]);
            const int fin = GPUOS__DONE_FIN(v, nx), is_exit = fin && (v & 1u);
            uint32_t fb = __ballot_sync(0xffffffffu, fin);
            int k = fb == 0xffffffffu ? 32 : __ffs(~fb) - 1;
            uint32_t eb = __ballot_sync(0xffffffffu, is_exit) & (k == 32 ? 0xffffffffu : ((1u << k) - 1));
            if (eb) { /* retire up to and including EXIT, then stop */
                k = __ffs(eb);
                hit_exit = 1;
            }
            if (k == 0) break;
            r += k;
            if (lane == 0) {
                gpuos__st_release_gpu_u64(&P.retired[LANE], r);
#ifdef GPUOS__PK_TIMESTAMPS
                P.ctl->stamp[LANE ? 7 : 5] = gpuos__globaltimer();
#endif
                gpuos__st_relaxed_sys_u64(LANE ? &P.ctl->retired_hi : &P.ctl->retired, r);
                gpuos__sh_store(&s_limit[LANE], r + 1 + P.task_cap); /* a task-ring entry is reused once retired */
            }
            if (hit_exit || k < 32) break;
        }
        if (hit_exit) break;
        gpuos__nanosleep(20);
    }
    if (LANE == 0 && lane == 0) gpuos__sh_store(s_stop, 1);
}

static __device__ void gpuos__pk_schedule(const gpuos__pk_params &P) {
    __shared__ uint64_t s_limit[GPUOS__LANES], s_stop;
    if (threadIdx.x == 0) {
        s_limit[0] = P.start_seq[0] + P.task_cap;
        s_limit[1] = P.start_seq[1] + P.task_cap;
        s_stop = 0;
        gpuos__st_relaxed_sys_u64(&P.ctl->alive, 1);
    }
    __syncthreads();
    const int warp = threadIdx.x >> 5;
    if (threadIdx.x < GPUOS__FETCH_THREADS)
        gpuos__pk_fetch<0, GPUOS__FETCH_THREADS>(P, s_limit, &s_stop);
    else if (warp == 4)
        gpuos__pk_retire<0>(P, s_limit, &s_stop);
    else if (warp == 5)
        gpuos__pk_fetch<1, GPUOS__FETCH_THREADS_HI>(P, s_limit, &s_stop);
    else if (warp == 6)
        gpuos__pk_retire<1>(P, s_limit, &s_stop);
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence_system();
        gpuos__st_relaxed_sys_u64(&P.ctl->alive, 0);
    }
}

#endif /* GPUOS__PK_SCHED */

/* ---------------------------------------------------------------- worker blocks */
static __device__ __forceinline__ int gpuos__pk_dep_done(const gpuos__pk_params &P, int lane, uint64_t dep) {
    /* dep's done stamp (gpuos_queue.h), one load: finished, or its slot already holds a later
       task (reused, which it is only after dep retired). Earlier or running: not yet (the
       fetcher writes the stamp before its fence, so a task that names dep sees at least
       that; the earlier case is kept safe all the same). */
    const uint64_t v = gpuos__ld_acquire_gpu_u64(&P.done[lane][dep & (P.task_cap - 1)]);
    const int32_t age = GPUOS__DONE_AGE(v, dep);
    return age > 1 || (age == 1 && (uint32_t)v <= 1u);
}

/* Lane 1 retired task x (x mod 2^30, GPUOS__DEP_HI)? */
static __device__ __forceinline__ int gpuos__pk_hi_retired(const gpuos__pk_params &P, uint32_t x) {
    const uint32_t r = (uint32_t)gpuos__ld_acquire_gpu_u64(&P.retired[1]);
    return ((r - x) & GPUOS__DEP_HI_MASK) < (GPUOS__DEP_HI_MASK >> 1);
}

/* Are task seq's dependencies (lane `lane`) satisfied? One check, no waiting. */
static __device__ int gpuos__pk_deps_ready(const gpuos__pk_params &P, int lane, const gpuos__qdesc *d, uint64_t seq) {
    if (d->n_deps == GPUOS__DEPS_ALL) {
        if (gpuos__ld_acquire_gpu_u64(&P.retired[lane]) < seq - 1) return 0;
        /* lane 0: every earlier task of lane 1 too (the host puts it in dep_delta[0]) */
        return lane != 0 || !(d->dep_delta[0] & GPUOS__DEP_HI) ||
               gpuos__pk_hi_retired(P, d->dep_delta[0] & GPUOS__DEP_HI_MASK);
    }
    for (uint32_t k = 0; k < d->n_deps; k++) {
        const uint32_t dd = d->dep_delta[k];
        if (dd & GPUOS__DEP_HI) {
            if (!gpuos__pk_hi_retired(P, dd & GPUOS__DEP_HI_MASK)) return 0;
            continue;
        }
        const uint64_t dep = seq - (dd & ~GPUOS__DEP_RETIRED);
        if (dd & GPUOS__DEP_RETIRED) {
            if (gpuos__ld_acquire_gpu_u64(&P.retired[lane]) < dep) return 0;
        } else if (!gpuos__pk_dep_done(P, lane, dep)) {
            return 0;
        }
    }
    return 1;
}

/* Lane 1 work waiting in this worker's inbox (a hint: the drain reads it properly)? No
   "memory" clobber: the hint orders nothing. */
static __device__ __forceinline__ const gpuos__ientry *gpuos__pk_hi_entry(const gpuos__pk_params &P, uint32_t me,
                                                                         uint32_t hhead) {
    return &P.inbox[1][(size_t)me * P.inbox_cap + (hhead & (P.inbox_cap - 1))];
}
static __device__ __forceinline__ int gpuos__pk_hi_waiting(const gpuos__pk_params &P, uint32_t me, uint32_t hhead) {
    uint64_t v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(gpuos__pk_hi_entry(P, me, hhead)));
    return GPUOS__IE_WRITTEN(v, hhead);
}

/* Reads entry k of a worker's inbox of lane ln: 0 if it is not written yet; else the
   task's seq into *seq (ref: a seq this inbox held before, or the lane's first seq - 1)
   and its descriptor from the task ring into *d. */
static __device__ __forceinline__ int gpuos__pk_read_entry(const gpuos__pk_params &P, int ln, const gpuos__ientry *inbox,
                                                           uint32_t k, uint64_t ref, gpuos__qdesc *d, uint64_t *seq) {
    const uint64_t v = gpuos__ld_acquire_gpu_u64(&inbox[k & (P.inbox_cap - 1)]);
    if (!GPUOS__IE_WRITTEN(v, k)) return 0;
    const uint64_t sq = GPUOS__IE_SEQ(v, ref);
    gpuos__ld_desc(d, &P.tasks[ln][sq & (P.task_cap - 1)].d);
    *seq = sq;
    return 1;
}

/* A worker's look at its lane-0 inbox (warp 0): lane k reads entry head + k into s_d[k],
   s_seq[k] (*ok: it was there) and clears s_mine[k]; returns how many in a row were there. */
static __device__ __forceinline__ int gpuos__pk_look_inbox(const gpuos__pk_params &P, const gpuos__ientry *inbox,
                                                           uint32_t head, uint64_t ref, gpuos__qdesc *s_d,
                                                           uint64_t *s_seq, uint32_t *s_mine, int *ok) {
    const int lane = threadIdx.x & 31;
    *ok = gpuos__pk_read_entry(P, 0, inbox, head + lane, ref, &s_d[lane], &s_seq[lane]);
    s_mine[lane] = 0;
    const uint32_t b = __ballot_sync(0xffffffffu, *ok);
    return b == 0xffffffffu ? 32 : __ffs(~b) - 1;
}

/* The express worker's mailbox read (every lane of warp 0, one PCIe round trip): lanes 0..15
   slot xq % GPUOS__XBOX, lanes 16..31 the next one, a word each (gpuos__pk_xclaim decodes). */
static __device__ __forceinline__ uint64_t gpuos__pk_xbox_read(const gpuos__pk_params &P, uint64_t xq) {
    const int lane = threadIdx.x & 31;
    uint64_t v;
    asm volatile("ld.volatile.global.u64 %0, [%1];"
                 : "=l"(v) : "l"(&P.ctl->xbox[(xq + (lane >> 4)) % GPUOS__XBOX][(lane >> 3) & 1].w[lane & 7]) : "memory");
    return v;
}

/* The plan of task d differs from the (row, epoch) a worker's s_plan holds. */
static __device__ __forceinline__ bool gpuos__pk_plan_changed(const gpuos__qdesc *d, uint32_t row, uint32_t epoch) {
    return d->plan_id != row || (d->kind >> 8) != epoch;
}
/* Threads k = 0..n-1 copy task d's plan row into s_plan with one parallel load, when it is
   not the (row, epoch) s_plan holds. */
static __device__ __forceinline__ void gpuos__pk_load_plan(const gpuos__pk_params &P, const gpuos__qdesc *d,
                                                           uint64_t *s_plan, int k, int n, uint32_t row, uint32_t epoch) {
    if (!gpuos__pk_plan_changed(d, row, epoch)) return;
    const uint64_t *src = (const uint64_t *)(P.plans + (size_t)d->plan_id * GPUOS__PLAN_BYTES);
    for (; k < (int)(GPUOS__PLAN_SLOTS * GPUOS__SLOT_PAYLOAD / 8); k += n) s_plan[k] = src[k];
}
/* 1: a task that waits for dependencies has its plan staged by warps 1.. during the wait
   (0: after it, A/B). */
#ifndef GPUOS__PK_PLAN_EARLY
#define GPUOS__PK_PLAN_EARLY 1
#endif

/* Publishes the finished tiles of batch entries [from, to) of queue lane Q (s_mine[k]
   tiles of task s_seq[k]), called by every lane of warp 0 after a barrier of the block: one fence (the
   warp's; it orders every tile the block wrote before, which the barrier made this warp's
   to publish; system scope when one of them writes mapped host memory: bit k of sysw,
   GPUOS__DESC_SYSW, noted when the batch was read, so that other batches pay one test),
   then the done counters, one per lane, in parallel. */
static __device__ __forceinline__ void gpuos__pk_publish(const gpuos__pk_params &P, int Q, int lane, int from, int to,
                                                         const uint64_t *s_seq, const uint32_t *s_mine,
                                                         uint32_t sysw) {
    __syncwarp(); /* thread 0 wrote s_mine */
    if (sysw & (uint32_t)(((1ull << to) - 1u) & ~((1ull << from) - 1u)))
        __threadfence_system();
    else
        __threadfence();
    for (int k = from + lane; k < to; k += 32)
        if (s_mine[k]) atomicAdd((unsigned long long *)&P.done[Q][s_seq[k] & (P.task_cap - 1)], (unsigned long long)s_mine[k]);
}

/* Runs every lane-1 (high-priority) task in this worker's inbox, until it is empty. Called
   by every thread of the block at a tile boundary of lane-0 work (nothing of it is in
   flight in shared memory) or while lane-0 work waits for a dependency. Lane-1 tasks wait
   only for lane-1 tasks, which every worker runs first, so this always finishes. Plans go
   through their own shared buffer: the lane-0 task's copy stays valid. */
/* Thread 0's read of the cancel word (gpuos__pk_params.cancel), issued before a tile runs
   and used by the barrier after it (__syncthreads_or), so that its L2 round trip hides
   behind the tile. */
#ifndef GPUOS__PK_CANCEL
#define GPUOS__PK_CANCEL 1
#endif
static __device__ __forceinline__ uint32_t gpuos__pk_cancel_ld(const gpuos__pk_params &P) {
    uint32_t v = 0;
    if (GPUOS__PK_CANCEL && threadIdx.x == 0) asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(P.cancel) : "memory");
    return v;
}
static __device__ __noinline__ void gpuos__pk_hi(const gpuos__pk_params &P, uint32_t me, uint32_t loc, uint32_t nw,
                                                  uint32_t *s_hhead, uint64_t *s_href) {
    __shared__ gpuos__qdesc s_d[32];
    __shared__ uint64_t s_seq[32];
    __shared__ uint32_t s_mine[32];
    __shared__ uint64_t s_plan[GPUOS__PLAN_SLOTS * GPUOS__SLOT_PAYLOAD / 8];
    __shared__ int s_n;
    __shared__ uint32_t s_sysw; /* bit k: entry k writes mapped host memory (gpuos__pk_publish) */
    const int tid = threadIdx.x, lane = tid & 31;
    const gpuos__ientry *inbox = P.inbox[1] + (size_t)me * P.inbox_cap;
    int skip = 0; /* (block-uniform) the context is being destroyed: tiles are skipped */
    for (;;) {
        const uint32_t head = *s_hhead;
        if (tid < 32) {
            const int ok = gpuos__pk_read_entry(P, 1, inbox, head + lane, *s_href, &s_d[lane], &s_seq[lane]);
            s_mine[lane] = 0;
            uint32_t b = __ballot_sync(0xffffffffu, ok);
            const uint32_t sw = __ballot_sync(0xffffffffu, ok && (s_d[lane].stamp & GPUOS__DESC_SYSW));
            if (lane == 0) s_n = b == 0xffffffffu ? 32 : __ffs(~b) - 1, s_sysw = sw;
        }
        __syncthreads();
        const int n = s_n;
        if (n == 0) break;
        int flushed = 0;
        for (int i = 0; i < n; i++) {
            const gpuos__qdesc *d = &s_d[i];
            const uint64_t seq = s_seq[i];
            if (d->n_deps) {
                if (tid < 32) { /* publish our finished tiles first: the producer may wait on them */
                    gpuos__pk_publish(P, 1, lane, flushed, i, s_seq, s_mine, s_sysw);
                    unsigned spin = 0;
                    if (tid == 0)
                        while (!gpuos__pk_deps_ready(P, 1, d, seq))
                            if (++spin > 16) gpuos__nanosleep(32);
                }
                flushed = i;
                __syncthreads();
                asm volatile("fence.acq_rel.gpu;" ::: "memory");
            }
            const uint64_t *src = (const uint64_t *)(P.plans + (size_t)d->plan_id * GPUOS__PLAN_BYTES);
            for (int k = tid; k < (int)(GPUOS__PLAN_SLOTS * GPUOS__SLOT_PAYLOAD / 8); k += blockDim.x) s_plan[k] = src[k];
            __syncthreads();
            const uint32_t first = (loc + nw - (d->base % nw)) % nw;
            uint32_t mine = 0;
            for (uint32_t t = first; t < d->n_tiles; t += nw) {
                int64_t b = (int64_t)t * d->tile_items;
                int64_t e = b + d->tile_items;
                if (e > d->n_items) e = d->n_items;
                const uint32_t cv = gpuos__pk_cancel_ld(P);
                if (!skip) gpuos__d_run(d->kernel_id, s_plan, b, e);
                skip |= __syncthreads_or(cv); /* (the destroy's cancel: the tiles left are skipped) */
                mine++;
            }
            if (tid == 0) s_mine[i] = mine;
        }
        if (tid < 32) {
            gpuos__pk_publish(P, 1, lane, flushed, n, s_seq, s_mine, s_sysw);
            if (tid == 0) {
                gpuos__st_release_gpu_u32(&P.wpos[1][me], head + n);
                *s_hhead = head + n;
                *s_href = s_seq[n - 1];
            }
        }
        __syncthreads();
    }
}

#ifdef GPUOS__PK_TIMESTAMPS
#define GPUOS__PROF_T0(v) long long v = clock64()
#define GPUOS__PROF_ADD(acc, k, t0) (acc[k] += (unsigned long long)(clock64() - (t0)))
#else
#define GPUOS__PROF_T0(v) (void)0
#define GPUOS__PROF_ADD(acc, k, t0) (void)0
#endif

#define GPUOS__HI_BATCH_TILES 8 /* a marked batch ends after this many tiles (lane-1 latency) */

/* Runs: identical in-place element-wise tasks in a row of a worker's batch (a loop's
   `x = x + s`, a simulation's repeated update) run as one pass over each tile, which
   applies the operator `reps` times between one load and one store (gpuos__d_ew_rep).
   A follower must not wait for anything (n_deps == 0): then no other task reads or writes
   the tile between two of them (the host would have given it a dependency), so nobody can
   see the values it skips. 0 turns runs off (A/B). */
#ifndef GPUOS__PK_RUNS
#define GPUOS__PK_RUNS 1
#endif
#if GPUOS__PK_RUNS && GPUOS__D_EW_SPLIT && GPUOS__D_EW_INLINE && GPUOS__PK_SCHED && !defined(GPUOS__PROBE_RUN)
#define GPUOS__PK_RUN_ON 1
#else
#define GPUOS__PK_RUN_ON 0
#endif
static __device__ __forceinline__ int gpuos__pk_same_task(const gpuos__qdesc *a, const gpuos__qdesc *d) {
    return a->n_deps == 0 && !((a->stamp | d->stamp) & GPUOS__DESC_XPRESS) && a->kind == d->kind && a->kernel_id == d->kernel_id && a->plan_id == d->plan_id &&
           a->n_items == d->n_items && a->tile_items == d->tile_items && a->n_tiles == d->n_tiles && a->base == d->base;
}
#if GPUOS__PK_RUN_ON
#define GPUOS__PK_RUN_CANCEL 64 /* gpuos__pk_run's count: the cancel word was seen (a run is at most 32) */
/* Runs task d (its plan in shared memory at plan) and the identical entries after it as
   one: same is the batch's s_same from d's entry on (bit 0 set; the worker's warp 0 marks
   which entries repeat the one before them when it reads the batch). Returns how many
   tasks it ran (their tiles on this block: *mine each), or 1 having run nothing when the
   kernel cannot (a run-time operator, not one of gpuos__d_ew_rep's groups, operands not
   vector-able, no input is the output: gpuos__d_ew_rep_mask says 0). Out of line: the
   worker loop keeps its registers. */
static __device__ __noinline__ int gpuos__pk_run(const uint32_t *cancel, const gpuos__qdesc *d, const uint64_t *plan,
                                                 uint32_t first, uint32_t nw, uint32_t same, uint32_t *mine) {
    const gpuos__ew_plan *p = (const gpuos__ew_plan *)plan;
    const unsigned amask = gpuos__d_ew_rep_mask(d->kernel_id, p);
    if (!amask) return 1;
    const int reps = __ffs(~same); /* the entries up to the first that does not repeat */
    uint32_t m = 0, cv = 0;
    /* the destroy's cancel, read once as the run starts and known after its first tile (a
       read a tile cost chain 5%: the function's spills) */
    if (threadIdx.x == 0) asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(cv) : "l"(cancel) : "memory");
    for (uint32_t t = first; t < d->n_tiles; t += nw) {
        const int64_t b = (int64_t)t * d->tile_items;
        const int64_t e = b + d->tile_items < d->n_items ? b + d->tile_items : d->n_items;
        const int64_t r = gpuos__d_ew_rep(d->kernel_id, p, b, e, reps, amask);
        for (int k = 0; k < reps && r < e; k++) { /* the items it left, task by task */
            gpuos__d_run(d->kernel_id, plan, r, e);
            __syncthreads();
        }
        __syncthreads(); /* the next task reads our writes */
        m++;
    }
    cv = __syncthreads_or(cv);
    *mine = m;
    return reps | (cv ? GPUOS__PK_RUN_CANCEL : 0);
}
#endif


/* Runs the tasks of this block's inbox in order, reading up to 32 entries per
   parallel read of its own (uncontended) inbox lines. Finished-tile counts are
   published in batches: one fence for a batch, and always before waiting on another
   block (which might be waiting on one of ours), so nothing can deadlock. */
/* me: this block's inbox; loc, nw: its index among the nw workers of its kind (the
   tiles it owns are those with (base + t) % nw == loc). */
/* Slot half h of a mailbox read (lanes 16 h .. 16 h + 15 of warp 0 hold its 16 words wv):
   -1 if it does not hold express task qe yet (incomplete, or an earlier lap's), 1 if it
   holds a later lap's (task qe is done), else 0 with its seq in *sq and its descriptor in
   *xd (every lane; lanes 16 h .. 16 h + 6 write it). */
static __device__ __forceinline__ int gpuos__pk_xslot(uint64_t wv, int h, uint64_t qe, uint64_t *sq, gpuos__qdesc *xd) {
    const int lane = threadIdx.x & 31, o = 16 * h;
    const uint64_t m = 0x00ffffffffffffffull;
    const uint64_t tag = wv >> 56, tag0 = __shfl_sync(0xffffffffu, tag, o);
    const uint64_t nx = __shfl_down_sync(0xffffffffu, wv, 1);
    const bool whole = __all_sync(0xffffffffu, lane < o || lane >= o + 16 || (tag == tag0 && tag != 0));
    const uint64_t s = __shfl_sync(0xffffffffu, wv, o + 8) & m, qq = __shfl_sync(0xffffffffu, wv, o + 9) & m;
    if (!whole || qq < qe || tag0 != GPUOS__XTAG(qq)) return -1;
    if (qq > qe) return 1;
    if (lane >= o && lane < o + 7) /* body word lane - o, as gpuos__fetch_poll decodes it */
        ((uint64_t *)xd)[lane - o] = ((wv & m) >> (8 * (lane - o))) | ((nx & m) << (56 - 8 * (lane - o)));
    __syncwarp();
    *sq = s;
    return 0;
}
/* May express task sq (descriptor xd) run after every task up to `ran` (lane 0)? Its
   dependencies on those count as done (express tasks this worker ran, or runs first; every
   earlier task not express had retired when it was sent). */
static __device__ __forceinline__ int gpuos__pk_xready(const gpuos__pk_params &P, const gpuos__qdesc *xd, uint64_t sq,
                                                       uint64_t ran) {
    for (uint32_t k = 0; k < xd->n_deps; k++) { /* (never GPUOS__DEPS_ALL, nor lane 1) */
        const uint32_t dd = xd->dep_delta[k];
        const uint64_t dep = sq - (dd & ~GPUOS__DEP_RETIRED);
        if (dep <= ran) continue;
        if (dd & GPUOS__DEP_RETIRED ? gpuos__ld_acquire_gpu_u64(&P.retired[0]) < dep : !gpuos__pk_dep_done(P, 0, dep))
            return 0;
    }
    return 1;
}
/* Does the express worker have express task sq (lane 0)? It claims it (atomicMax of xclaim),
   or the fetcher left it to it (claimed it, marking xown[sq] as the worker's). */
static __device__ __forceinline__ bool gpuos__pk_xtake(const gpuos__pk_params &P, uint64_t sq) {
    if (atomicMax(P.xclaim, (unsigned long long)sq) < sq) return true;
    asm volatile("fence.acq_rel.gpu;" ::: "memory"); /* the fetcher's mark came before its claim */
    uint64_t w;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(w) : "l"(&P.xown[sq & (GPUOS__XOWN - 1)]) : "memory");
    return w == (sq | GPUOS__XOWN_X);
}
/* Did the fetcher leave an express task to the express worker that it has not run (lane 0)?
   Then the worker runs it before any inbox entry (later ones may be aligned with it). */
static __device__ __forceinline__ bool gpuos__pk_xowed(const gpuos__pk_params &P, uint64_t xran) {
    const uint64_t c = gpuos__ld_acquire_gpu_u64((const volatile uint64_t *)P.xclaim);
    if (c <= xran) return false;
    uint64_t w;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(w) : "l"(&P.xown[c & (GPUOS__XOWN - 1)]) : "memory");
    return w == (c | GPUOS__XOWN_X);
}
/* The express worker's look at its mailbox (gpuos__pk_ctl.xbox; every lane of warp 0: lanes
   0..15 read slot *xq % GPUOS__XBOX, lanes 16..31 the next one, issued with the inbox read,
   so one PCIe round trip). An express task is a task of one tile on this worker; whoever
   claims it first (atomicMax of P.xclaim to its seq), this worker from its mailbox or the
   fetcher from the ring (which then queues it here as any task), has it. Both claim in seq
   order. This worker claims task *xq once it has run every express task the fetcher took
   before it (xran >= *xlost: those are in its inbox, and this one may be aligned with them)
   and the task's dependencies are done; then the next one too when the read caught it (two
   tasks sent together, as a task and the small download of its result: the fetcher would
   take the second while the first runs). Returns the tasks claimed (0, 1 or 2; the same in
   every lane), to run now in order: descriptors xd[], seqs xseq[] (lane 0; the worker passes
   its batch arrays s_d, s_seq). *xq moves past the tasks claimed, a task the fetcher took,
   and one whose slot already holds a later lap's (the host rewrites a slot once its task is
   done). A torn slot (words of two laps) has tags that differ: not complete. */
static __device__ __forceinline__ int gpuos__pk_xclaim(const gpuos__pk_params &P, uint64_t wv, uint64_t *xq,
                                                       uint64_t *xlost, uint64_t xran, gpuos__qdesc *xd, uint64_t *xseq) {
    const int lane = threadIdx.x & 31;
    const uint64_t q = *xq;
    uint64_t sq = 0, sq2 = 0;
    const int r = gpuos__pk_xslot(wv, 0, q, &sq, &xd[0]);
    if (r < 0) return 0;
    if (r > 0 || sq <= xran) { /* done already: the next one (this read's, if it holds it) */
        uint64_t s2 = 0;
        const int r2 = gpuos__pk_xslot(wv, 1, q + 1, &s2, &xd[0]);
        /* the read holds the next task: claim it now, as this read's first, instead of from the
           next read (a task's small download waited a look longer: roundtrip_download's p90
           17.4 -> 13 us, bench/NOTES.md session 27, GPUOS__PK_XSKIP then). The caller learns its
           slot is q + 1 from bit 2 of the count. */
        if (r2 == 0 && s2 > xran && xran >= *xlost) {
            int st = 0; /* 0: not yet, 1: claimed, 2: the fetcher has it */
            if (lane == 0) {
                if (gpuos__pk_xready(P, &xd[0], s2, xran)) st = gpuos__pk_xtake(P, s2) ? 1 : 2;
                xseq[0] = s2;
            }
            st = __shfl_sync(0xffffffffu, st, 0);
            *xq = q + 1 + (st != 0);
            if (st == 2) *xlost = s2;
            __syncwarp();
            return st == 1 ? (1 | 4) : 0;
        }
        *xq = q + 1 + (r2 > 0 || (r2 == 0 && s2 <= xran));
        return 0;
    }
    if (xran < *xlost) return 0; /* the fetcher's express tasks first (from the inbox) */
    const int r2 = gpuos__pk_xslot(wv, 1, q + 1, &sq2, &xd[1]);
    int st = 0; /* 0: not yet, 1: claimed, 2: the fetcher has it; + 4: the next one claimed, + 8: lost */
    if (lane == 0) {
        if (gpuos__pk_xready(P, &xd[0], sq, xran)) st = gpuos__pk_xtake(P, sq) ? 1 : 2;
        if (st == 1 && r2 == 0 && gpuos__pk_xready(P, &xd[1], sq2, sq)) st |= gpuos__pk_xtake(P, sq2) ? 4 : 8;
        xseq[0] = sq, xseq[1] = sq2;
    }
    st = __shfl_sync(0xffffffffu, st, 0);
    if (st & 3) *xq = q + 1 + (st & 12 ? 1 : 0);
    if ((st & 3) == 2) *xlost = sq;
    if (st & 8) *xlost = sq2;
    __syncwarp();
    return (st & 3) == 1 ? 1 + ((st & 4) != 0) : 0;
}

/* Express task sq (descriptor d, mailbox slot `slot`) ran on this block (thread 0, after the
   block's barrier): its finished done stamp, then the host's word. */
static __device__ __forceinline__ void gpuos__pk_xfinish(const gpuos__pk_params &P, const gpuos__qdesc *d, uint64_t sq,
                                                         uint32_t slot) {
#ifdef GPUOS__PK_TIMESTAMPS
    P.ctl->stamp[3] = gpuos__globaltimer(); /* run */
#endif
    atomicAdd(P.xruns, 1ull); /* express tasks run from the mailbox (gpuos_debug_express) */
    if (d->stamp & GPUOS__DESC_SYSW)
        __threadfence_system();
    else
        __threadfence();
    /* finished: the stamp of a task with no tiles left */
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(&P.done[0][sq & (P.task_cap - 1)]),
                 "l"(GPUOS__DONE_INIT(sq, 0)) : "memory");
    gpuos__st_relaxed_sys_u64(&P.ctl->xfin[slot % GPUOS__XBOX], sq);
#ifdef GPUOS__PK_TIMESTAMPS
    P.ctl->stamp[4] = gpuos__globaltimer(); /* finished (its host word written) */
#endif
}

/* After a dependency wait: 0 (default), thread 0's acquire loads of the done stamps, then the
   block's barrier, which orders every other thread's loads after that acquire: the pattern of
   CUDA's own grid sync (cooperative_groups' sync_grids: the block's master polls with
   ld.acquire.gpu, then __syncthreads, no fence in the other threads). 1: every thread also
   runs fence.acq_rel.gpu (as before; tiny_mlp 50.5-50.8 -> 48.5 us and branchy_dag 59.9 ->
   57.9-59.2 without it, H200, same call; A/B). */
#ifndef GPUOS__PK_DEP_FENCE
#define GPUOS__PK_DEP_FENCE 0
#endif
static __device__ void gpuos__pk_work(const gpuos__pk_params &P, const uint32_t me, const uint32_t loc,
                                      const uint32_t nw) {
    __shared__ gpuos__qdesc s_d[32];
    __shared__ uint64_t s_seq[32];
    __shared__ uint32_t s_mine[32];
    __shared__ uint64_t s_plan[GPUOS__PLAN_SLOTS * GPUOS__SLOT_PAYLOAD / 8];
    __shared__ int s_n, s_stale, s_ready;
    __shared__ uint32_t s_hhead;   /* lane 1: inbox entries consumed (gpuos__pk_hi) */
    __shared__ uint32_t s_hh0;     /* lane 1: s_hhead at this launch's start */
    __shared__ uint64_t s_href;    /* lane 1: the seq of the last entry consumed (gpuos__pk_read_entry) */
    __shared__ uint32_t s_same;    /* bit i: entry i + 1 is identical to entry i (runs) */
    __shared__ uint32_t s_sysw;    /* bit i: entry i writes mapped host memory (gpuos__pk_publish) */
    __shared__ uint32_t s_xslot;     /* the first one's mailbox slot */
    const int tid = threadIdx.x, lane = tid & 31;
    const bool xw = me == P.xworker; /* the express worker: also polls the mailbox when idle */
    uint64_t xq = P.xq0;             /* (warp 0) the next express task it looks for in its mailbox */
    /* the newest express task it ran (from the mailbox or the inbox); every task before this
       launch is done (else a task left to the worker in the last launch would look owed forever) */
    uint64_t xran = P.start_seq[0] - 1;
    uint64_t xlost = 0;              /* (warp 0) the newest the fetcher took (it runs from the inbox) */
    int xowed = 0;                   /* (warp 0) the fetcher left it an express task it has not run */
    int skip = 0;                    /* (block-uniform) the context is being destroyed: tiles are skipped */
    const gpuos__ientry *inbox = P.inbox[0] + (size_t)me * P.inbox_cap;
    uint32_t head = P.wpos[0][me];
    uint64_t ref = P.start_seq[0] - 1; /* the seq of the last entry consumed (gpuos__pk_read_entry) */

    uint32_t plan_row = 0xffffffffu, plan_epoch = 0; /* the plan s_plan holds (same in every thread) */
    int vec_kid = -1, vec_state = -1; /* gpuos__d_ew_inline's check of that plan, for kernel vec_kid */
#if GPUOS__PK_RUN_ON
    int run_kid = -1; /* gpuos__pk_run refused kernel run_kid on that plan: identical entries run one by one */
#endif
    /* s_plan now holds d's plan (row, epoch): what was learnt of the one before is forgotten
       (a macro: the same as a lambda, which cost the kernel 6 registers) */
#if GPUOS__PK_RUN_ON
#define GPUOS__PK_PLAN_NOW(d) (plan_row = (d)->plan_id, plan_epoch = (d)->kind >> 8, vec_state = -1, run_kid = -1)
#else
#define GPUOS__PK_PLAN_NOW(d) (plan_row = (d)->plan_id, plan_epoch = (d)->kind >> 8, vec_state = -1)
#endif
#ifdef GPUOS__PK_TIMESTAMPS
    unsigned long long prof[GPUOS__PROF_N] = {0};
#endif
    if (tid == 0) s_stale = 0, s_hhead = s_hh0 = P.wpos[1][me], s_href = P.start_seq[1] - 1;
    __syncthreads();
    for (;;) {
        GPUOS__PROF_T0(t_wait);
        if (tid < 32) {
            unsigned spin = 0;
            int xnext = 0; /* (warp 0, express worker) the last look found the device idle */
            for (;;) {
                const uint32_t hh = s_hhead;
                /* the express worker idle: its mailbox read flies with the inbox read */
                uint64_t xv = 0;
                bool xpoll = false; /* (set by the express worker's look) */
                int ok, n;
                if (xw) {
                    /* The express worker's look: every word it reads in flight at once, relaxed
                       (lane 1's next entry, the fetcher's and the retirer's progress, the claim
                       word; the mailbox when the last look found the device idle, or a task
                       owed), then its inbox entries (acquire), so a look while idle is one PCIe
                       round trip, not it and four L2 round trips in turn. xf, xr and xc only
                       steer the next look; an entry found is checked against the claim word
                       again after its acquire (gpuos__pk_xowed). */
                    uint64_t hv = 0, xf = 0, xr = 0, xc = 0;
                    /* (not once this block ran lane-1 work in this launch: the context has used
                       priorities, so the host sends no express tasks, and a lane-1 entry must not
                       wait for a mailbox read in flight) */
                    xpoll = xowed || (xnext && s_hhead == s_hh0);
                    if (lane == 0) {
                        asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(hv) : "l"(gpuos__pk_hi_entry(P, me, hh)) : "memory");
                        asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(xf) : "l"(P.xfetched) : "memory");
                        asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(xr) : "l"(&P.retired[0]) : "memory");
                        asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(xc) : "l"(P.xclaim) : "memory");
                    }
                    if (xpoll) xv = gpuos__pk_xbox_read(P, xq);
                    /* lane 1 first: an empty lane-0 batch (s_n = 0) sends the block to it */
                    if (__shfl_sync(0xffffffffu, lane == 0 && GPUOS__IE_WRITTEN(hv, hh), 0)) {
                        if (lane == 0) s_n = 0;
                        break;
                    }
                    n = gpuos__pk_look_inbox(P, inbox, head, ref, s_d, s_seq, s_mine, &ok);
                    /* (the device idle: every task fetched retired, the fetcher past the last
                       express task this worker ran; an express task may retire before the fetcher
                       reaches its slot: until it has, what the host sent next may be on its way) */
                    xnext = __shfl_sync(0xffffffffu, xf <= xr + 1 && xf > xran, 0);
                    /* an entry: the claim word after its acquire (a task left to this worker came
                       before the entries that follow it); none: the speculative look decides */
                    __syncwarp(); /* (orders another lane's acquire of an entry before lane 0's look) */
                    xowed = __shfl_sync(0xffffffffu, lane == 0 && (n > 0 || xc > xran) ? (int)gpuos__pk_xowed(P, xran) : 0, 0);
                } else { /* any other worker: lane 1, then its inbox */
                    const int hs = lane == 0 ? gpuos__pk_hi_waiting(P, me, hh) : 0;
                    /* lane 1 first: an empty lane-0 batch (s_n = 0) sends the block to it */
                    if (__shfl_sync(0xffffffffu, hs, 0)) {
                        if (lane == 0) s_n = 0;
                        break;
                    }
                    n = gpuos__pk_look_inbox(P, inbox, head, ref, s_d, s_seq, s_mine, &ok);
                }
                if (xowed) n = 0; /* the mailbox first */
                if (n > 0) {
                    const uint32_t sw = __ballot_sync(0xffffffffu, ok && (s_d[lane].stamp & GPUOS__DESC_SYSW));
                    if (lane == 0) s_sysw = sw;
#if GPUOS__PK_RUN_ON
                    uint32_t same = 0;
                    if (n > 1) { /* runs: which entries repeat the one before them */
                        __syncwarp();
                        same = __ballot_sync(0xffffffffu, lane + 1 < n && gpuos__pk_same_task(&s_d[lane + 1], &s_d[lane]));
                    }
                    if (lane == 0) s_same = same;
#endif
                    if (lane == 0) s_n = n;
#ifdef GPUOS__PK_TIMESTAMPS
                    if (lane == 0) P.ctl->stamp[2] = gpuos__globaltimer();
#endif
                    break;
                }
                if (xpoll) {
                    uint32_t slot = (uint32_t)(xq % GPUOS__XBOX);
                    int nx = gpuos__pk_xclaim(P, xv, &xq, &xlost, xran, s_d, s_seq);
                    if (nx & 4) nx &= 3, slot = (slot + 1) % GPUOS__XBOX; /* claimed from the read's second slot */
                    if (nx) {
                        if (lane == 0) s_n = -nx, s_xslot = slot;
#ifdef GPUOS__PK_TIMESTAMPS
                        if (lane == 0) P.ctl->stamp[2] = gpuos__globaltimer(); /* claimed from the mailbox */
#endif
                        break;
                    }
                }
                if (++spin > 8) gpuos__nanosleep(spin > 4096 ? 256 : 32);
                /* long idle: forget the plan copy, so that however many plan rows were
                   rewritten meanwhile, a wrapped 24-bit epoch can never match it */
                if (spin == (1u << 20) && lane == 0) s_stale = 1;
            }
        }
        GPUOS__PROF_ADD(prof, GPUOS__PROF_WAIT, t_wait);
        GPUOS__PROF_T0(t_start);
        __syncthreads();
        GPUOS__PROF_ADD(prof, GPUOS__PROF_START, t_start);
        int n = s_n;
        int stop = 0, flushed = 0;
        uint32_t btiles = 0; /* tiles run in this batch */
        if (s_stale) {
            plan_row = 0xffffffffu, vec_state = -1;
#if GPUOS__PK_RUN_ON
            run_kid = -1;
#endif
        }
        /* express tasks claimed from the mailbox (s_n = -1, -2; into s_d, s_seq): the batch loop below runs them,
           each one tile here (no dependency wait, no inbox entry: its done stamp and the host's
           word when it ran), so their element-wise passes run inline as any entry's do */
        const int xn = n < 0 ? -n : 0;
        if (xn) {
            /* every thread acquires: the tasks' inputs were written by finished tasks */
            asm volatile("fence.acq_rel.gpu;" ::: "memory");
            n = xn;
        }
        if (n == 0) { /* lane 1 work: run it, then look again */
            gpuos__pk_hi(P, me, loc, nw, &s_hhead, &s_href);
            continue;
        }
        for (int i = 0; i < n; i++) {
            const gpuos__qdesc *d = &s_d[i];
            if (GPUOS__KIND(d->kind) == GPUOS__SLOT_EXIT) { stop = 1; break; }
            /* Lane 1 is looked for when a batch starts and while a task waits. Once the
               context has used priorities (the host marks lane-0 tasks), a batch also ends
               after GPUOS__HI_BATCH_TILES tiles, so the next poll sees lane-1 work soon; the
               rest of the batch is read again. (A check between tiles cost a chain of small
               tasks 15% even when never taken: chain 1.2 -> 1.4 us/op.) */
            if (btiles >= GPUOS__HI_BATCH_TILES && (d->kind & GPUOS__KIND_HICHECK) && !xn) {
                n = i;
                break;
            }
            const uint64_t seq = s_seq[i];
            if (xn || (d->stamp & GPUOS__DESC_XPRESS)) xran = seq; /* (or one the fetcher took, on the express worker) */
            GPUOS__PROF_T0(t_deps);
            if (d->n_deps && !xn) { /* (an express task's are done: gpuos__pk_xready) */
                if (tid < 32) /* publish our finished tiles first: the producer may wait on them */
                    gpuos__pk_publish(P, 0, lane, flushed, i, s_seq, s_mine, s_sysw);
                else if (GPUOS__PK_PLAN_EARLY)
                    gpuos__pk_load_plan(P, d, s_plan, tid - 32, blockDim.x - 32, plan_row, plan_epoch);
                if (GPUOS__PK_PLAN_EARLY && gpuos__pk_plan_changed(d, plan_row, plan_epoch)) {
                    /* the plan is staged meanwhile by warps 1.. (the barriers of the wait order it
                       before its readers): its L2 round trip overlaps the wait */
                    GPUOS__PK_PLAN_NOW(d);
#ifdef GPUOS__PK_TIMESTAMPS
                    prof[GPUOS__PROF_PLANS]++;
#endif
                }
                flushed = i;
                /* wait, running lane-1 work that arrives meanwhile (a lane-0 task may wait for it) */
                for (;;) {
                    if (tid == 0) {
                        unsigned spin = 0;
                        int r;
                        while (!(r = gpuos__pk_deps_ready(P, 0, d, seq))) {
                            if (gpuos__pk_hi_waiting(P, me, s_hhead)) break;
                            if (++spin > 16) gpuos__nanosleep(32);
                        }
                        s_ready = r;
                    }
                    __syncthreads();
                    if (s_ready) break;
                    gpuos__pk_hi(P, me, loc, nw, &s_hhead, &s_href); /* its barriers order s_ready's next write */
                }
                __syncthreads(); /* s_ready is read by all before thread 0 writes it again */
#if GPUOS__PK_DEP_FENCE
                /* every thread acquires (GPUOS__PK_DEP_FENCE) */
                asm volatile("fence.acq_rel.gpu;" ::: "memory");
#endif
                GPUOS__PROF_ADD(prof, GPUOS__PROF_DEPS, t_deps);
            }
            GPUOS__PROF_T0(t_plan);
            /* The plan into shared memory with one parallel load: the kernels read its
               fields in dependent chains, each an L2 round trip from global memory. A
               row rewritten by the host gets a new epoch (kind >> 8), so the copy this
               block holds is reused while (row, epoch) stay the same: a chain's tasks
               share one plan and skip the load and its barrier. */
            if (gpuos__pk_plan_changed(d, plan_row, plan_epoch)) {
                gpuos__pk_load_plan(P, d, s_plan, tid, blockDim.x, plan_row, plan_epoch);
                GPUOS__PK_PLAN_NOW(d);
                __syncthreads();
                GPUOS__PROF_ADD(prof, GPUOS__PROF_PLAN, t_plan);
#ifdef GPUOS__PK_TIMESTAMPS
                prof[GPUOS__PROF_PLANS]++;
#endif
            }
            const void *plan = s_plan;
            /* (base + first) % nw == loc; an express task's one tile is this block's */
            const uint32_t first = xn ? 0 : (loc + nw - (d->base % nw)) % nw;
            const uint32_t n_tiles = xn ? 1 : d->n_tiles;
            uint32_t mine = 0;
#if GPUOS__PK_RUN_ON
            if (!xn && !skip && ((s_same >> i) & 1u) && d->kernel_id != run_kid) { /* entries i + 1 .. repeat this one: run them as one */
                GPUOS__PROF_T0(t_run);
                int reps = gpuos__pk_run(P.cancel, d, s_plan, first, nw, s_same >> i, &mine);
                if (reps & GPUOS__PK_RUN_CANCEL) skip = 1, reps &= GPUOS__PK_RUN_CANCEL - 1;
                if (reps == 1) run_kid = d->kernel_id; /* not a run this kernel can do (the call cost 0.4 us a task) */
                if (reps > 1) {
                    GPUOS__PROF_ADD(prof, GPUOS__PROF_RUN, t_run);
                    if (tid == 0)
                        for (int k = 0; k < reps; k++) s_mine[i + k] = mine;
                    btiles += mine;
#ifdef GPUOS__PK_TIMESTAMPS
                    prof[GPUOS__PROF_TILES] += (unsigned long long)mine * reps;
                    prof[GPUOS__PROF_TASKS] += reps;
                    prof[GPUOS__PROF_RUNS]++;
#endif
                    i += reps - 1;
                    continue;
                }
            }
#endif
            for (uint32_t t = first; t < n_tiles; t += nw) {
                int64_t b = (int64_t)t * d->tile_items;
                int64_t e = b + d->tile_items;
                if (e > d->n_items) e = d->n_items;
                GPUOS__PROF_T0(t_run);
                const uint32_t cv = gpuos__pk_cancel_ld(P);
                if (skip) {
                } else
#if defined(GPUOS__PROBE_RUN)
                /* probe only (tests/gpu/probe_chain.c): the floors of a tile inside this loop.
                   1: every rank-1 three-operand task as out = a + b[0] in f32, hand-written
                   inline; 2: no tile work at all */
                if (GPUOS__PROBE_RUN == 3 && ((const gpuos__ew_plan *)s_plan)->n_ptr == 3 &&
                    ((const gpuos__ew_plan *)s_plan)->rank == 1 && e - b <= 16 * (int64_t)blockDim.x) {
                    /* 3: the same, every load of the tile (up to 4 passes) before any store */
                    const gpuos__ew_plan *pp = (const gpuos__ew_plan *)s_plan;
                    float *po = (float *)pp->ptr[0];
                    const float *pa = (const float *)pp->ptr[1];
                    const float bb = *(const float *)pp->ptr[2];
                    float4 v[4];
#pragma unroll
                    for (int h = 0; h < 4; h++) {
                        const int64_t q = b + 4 * (tid + h * (int64_t)blockDim.x);
                        if (q + 4 <= e) v[h] = *(const float4 *)(pa + q);
                    }
#pragma unroll
                    for (int h = 0; h < 4; h++) {
                        const int64_t q = b + 4 * (tid + h * (int64_t)blockDim.x);
                        v[h].x += bb; v[h].y += bb; v[h].z += bb; v[h].w += bb;
                        if (q + 4 <= e) *(float4 *)(po + q) = v[h];
                    }
                } else if ((GPUOS__PROBE_RUN == 1 || GPUOS__PROBE_RUN == 3) && ((const gpuos__ew_plan *)s_plan)->n_ptr == 3 &&
                    ((const gpuos__ew_plan *)s_plan)->rank == 1) {
                    const gpuos__ew_plan *pp = (const gpuos__ew_plan *)s_plan;
                    float *po = (float *)pp->ptr[0];
                    const float *pa = (const float *)pp->ptr[1];
                    const float bb = *(const float *)pp->ptr[2];
                    for (int64_t q = b + 4 * tid; q + 4 <= e; q += 4 * (int64_t)blockDim.x) {
                        float4 v = *(const float4 *)(pa + q);
                        v.x += bb; v.y += bb; v.z += bb; v.w += bb;
                        *(float4 *)(po + q) = v;
                    }
                } else if (GPUOS__PROBE_RUN != 2) {
                    gpuos__d_run(d->kernel_id, plan, b, e);
                }
#elif GPUOS__D_EW_SPLIT && GPUOS__D_EW_INLINE && GPUOS__PK_SCHED
#if GPUOS__D_MM_LEAN_FAST
                /* a lean narrow matmul tile: straight to its entry (gpuos__d_mm_lean_fast) */
                if (gpuos__d_mm_lean_fast(d->kernel_id, (const gpuos__matmul_plan *)s_plan, b, e)) {
                } else
#endif
                {
                    /* element-wise vector passes inline, the rest (or any other kernel) called */
                    if (d->kernel_id != vec_kid) vec_kid = d->kernel_id, vec_state = -1;
                    const int64_t r = d->kernel_id < GPUOS__RT_KERNEL_BASE
                                          ? gpuos__d_ew_inline(d->kernel_id, (const gpuos__ew_plan *)s_plan, b, e, &vec_state)
                                          : b;
#if GPUOS__D_MM_ROW_INLINE
                    if (r < e && !(r == b && gpuos__d_mm_row_inline(d->kernel_id, (const gpuos__matmul_plan *)s_plan, b, e)))
#else
                    if (r < e)
#endif
                        gpuos__d_run(d->kernel_id, plan, r, e);
                }
#else
                gpuos__d_run(d->kernel_id, plan, b, e);
#endif
                GPUOS__PROF_ADD(prof, GPUOS__PROF_RUN, t_run);
                GPUOS__PROF_T0(t_sync);
                /* kernels may reuse static shared memory; next task reads our writes; the
                   destroy's cancel (thread 0's read) skips the tiles left */
                skip |= __syncthreads_or(cv);
                GPUOS__PROF_ADD(prof, GPUOS__PROF_SYNC, t_sync);
                mine++;
            }
            if (tid == 0) {
                if (xn)
                    gpuos__pk_xfinish(P, d, seq, s_xslot + i);
                else
                    s_mine[i] = mine;
            }
            btiles += mine;
#ifdef GPUOS__PK_TIMESTAMPS
            prof[GPUOS__PROF_TILES] += mine;
            prof[GPUOS__PROF_TASKS]++;
#endif
        }
        GPUOS__PROF_T0(t_flush);
        if (tid < 32 && !xn) {
#ifdef GPUOS__PK_TIMESTAMPS
            if (tid == 0) P.ctl->stamp[3] = gpuos__globaltimer();
#endif
            gpuos__pk_publish(P, 0, lane, flushed, n, s_seq, s_mine, s_sysw);
            __syncwarp();
            /* after lane 0's fence in gpuos__pk_publish: the batch's reads of its entries
               and their task-ring descriptors come first (on EXIT, n ends at it) */
            if (tid == 0) asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(&P.wpos[0][me]), "r"(head + n) : "memory");
        }
        if (tid == 0) {
#ifdef GPUOS__PK_TIMESTAMPS
            if (!xn && s_mine[n - 1]) P.ctl->stamp[4] = gpuos__globaltimer();
#endif
#ifdef GPUOS__PK_TIMESTAMPS
            GPUOS__PROF_ADD(prof, GPUOS__PROF_FLUSH, t_flush);
            prof[GPUOS__PROF_BATCHES]++;
            for (int k = 0; k < GPUOS__PROF_N; k++)
                if (prof[k]) atomicAdd(&P.prof[k], prof[k]), prof[k] = 0;
#endif
        }
        if (stop) break;
        if (!xn) {
            if (n > 0) ref = s_seq[n - 1];
            head += n;
        }
        __syncthreads(); /* (and s_d, s_seq, s_n and the plan read by all before warp 0 looks again) */
        if (tid == 0) s_stale = 0;
    }
}
#undef GPUOS__PK_PLAN_NOW

/* Two blocks per multiprocessor: caps the kernel at 128 registers (the element-wise
   vector mode inlined into the worker loop would take ~150). __launch_bounds__ wins over
   --maxrregcount for the kernel, so the called functions must be compiled with a cap no
   higher (the runtime passes --maxrregcount=128; with GPUOS_CUDA_MAXRREG above 128 it
   passes -DGPUOS__PK_MIN_BLOCKS=1). */
#ifndef GPUOS__PK_MIN_BLOCKS
#define GPUOS__PK_MIN_BLOCKS 2
#endif
/* This block started (block b of the launch's n_main + 1 + n_rt; one posted write). */
static __device__ __forceinline__ void gpuos__pk_up(const gpuos__pk_params &P, uint32_t b) {
    if (threadIdx.x == 0) asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(&P.up[b]), "r"(P.epoch) : "memory");
}

#if GPUOS__PK_SCHED
extern "C" __global__ void __launch_bounds__(GPUOS__PK_THREADS, GPUOS__PK_MIN_BLOCKS) gpuos__pk_main(const __grid_constant__ gpuos__pk_params P) {
    gpuos__pk_up(P, blockIdx.x);
    if (blockIdx.x == 0)
        gpuos__pk_schedule(P);
    else
        gpuos__pk_work(P, blockIdx.x - 1, blockIdx.x - 1, gridDim.x - 1); /* gridDim.x - 1 == P.n_main */
}
#else
/* The run-time module's kernel: n_rt worker blocks (inboxes n_main..), launched beside
   gpuos__pk_main and stopped by the same EXIT. Its tiles run through this module's
   gpuos__d_run, which knows only the run-time operators' table. */
extern "C" __global__ void __launch_bounds__(GPUOS__PK_THREADS, GPUOS__PK_MIN_BLOCKS) gpuos__pk_rt(const __grid_constant__ gpuos__pk_params P) {
    gpuos__pk_up(P, P.n_main + 1 + blockIdx.x);
    gpuos__pk_work(P, P.n_main + blockIdx.x, blockIdx.x, P.n_rt);
}
#endif
#undef GPUOS__PK_SCHED
#endif /* part 0 or GPUOS__D_PART_RT */
