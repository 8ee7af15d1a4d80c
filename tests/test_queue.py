"""The queue: full at exactly queue_capacity (GPUOS_ERR_QUEUE_FULL with submit_timeout_ms 0), waits
that time out while the executor is paused (gpuos_debug_pause) and succeed after, fences, program
order, and tensors released right after the submission that uses them."""
import threading
import time

import numpy as np

import ctypes

from gpuos_ctypes import (ERR_DTYPE_MISMATCH, ERR_INVALID_ARGUMENT, ERR_NULL_POINTER, ERR_QUEUE_FULL, ERR_TIMEOUT, OK,
                          Context, Task, lib, status_name)


def test_queue_full_at_capacity():
    with Context(queue_capacity=16, submit_timeout_ms=0) as c:
        x = c.tensor(np.zeros(8, dtype=np.int32), "i32")
        one = c.tensor(np.ones(8, dtype=np.int32), "i32")
        outs = [c.new("i32", (8,)) for _ in range(40)]
        assert c.debug_pause(1) == 0
        accepted, st, seqs = 0, OK, []
        for i in range(40):
            # x += 1, then a snapshot of x into outs[i]: two tasks per step, the chain in program order
            st, seq = c.submit_task(c.task("add", x, [x, one]))
            if st != OK:
                break
            accepted += 1
            seqs.append(seq)
            st, seq = c.submit_task(c.task("copy", outs[i], [x]))
            if st != OK:
                break
            accepted += 1
            seqs.append(seq)
        assert st == ERR_QUEUE_FULL, "submission %d into a paused queue of 16: %s" % (accepted + 1, status_name(st))
        assert c.last_error() != ""
        assert accepted == 16, "the queue of capacity 16 took %d tasks before GPUOS_ERR_QUEUE_FULL" % accepted
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), "sequence numbers %s" % seqs
        assert c.fence() == seqs[-1]
        assert not c.fence_done(seqs[0]), "a task finished while the executor was paused"
        assert c.debug_pause(0) == 1
        assert c.wait(10000) == OK
        assert all(c.fence_done(s) for s in seqs)
        steps = accepted // 2
        assert np.array_equal(c.download(x), np.full(8, steps, dtype=np.int32))
        for i in range(steps):
            got = c.download(outs[i])
            assert np.array_equal(got, np.full(8, i + 1, dtype=np.int32)), "snapshot %d = %s" % (i, got)
        # usable afterwards, and the queue takes work again (at most 16 at a time: submit_timeout_ms is 0)
        for _ in range(4):
            for _ in range(10):
                c.submit("add", x, [x, one])
            assert c.wait(10000) == OK
        assert np.array_equal(c.download(x), np.full(8, steps + 40, dtype=np.int32))
        assert c.status() == OK


def test_submit_waits_for_room():
    """With submit_timeout_ms, a submission into a full queue waits: it fails after the timeout, and
    succeeds when the executor makes room in time."""
    for timeout_ms, resume in ((150, False), (10000, True)):
        with Context(queue_capacity=16, submit_timeout_ms=timeout_ms) as c:
            x = c.tensor(np.zeros(4, dtype=np.float32), "f32")
            one = c.tensor(np.ones(4, dtype=np.float32), "f32")
            c.debug_pause(1)
            for _ in range(16):
                c.submit("add", x, [x, one])
            timer = threading.Timer(0.05, lambda: c.debug_pause(0)) if resume else None
            if timer:
                timer.start()
            t0 = time.monotonic()
            st = c.try_submit("add", x, [x, one])
            waited = time.monotonic() - t0
            if timer:
                timer.join()
                assert st == OK, "submission while the executor resumes: %s %s" % (status_name(st), c.last_error())
                assert waited >= 0.04, "the 17th submission did not wait for room (%.3f s)" % waited
                assert np.array_equal(c.download(x), np.full(4, 17, dtype=np.float32))
            else:
                assert st == ERR_QUEUE_FULL, status_name(st)
                assert waited >= 0.1, "GPUOS_ERR_QUEUE_FULL after %.3f s, submit_timeout_ms is 150" % waited
                c.debug_pause(0)
                assert np.array_equal(c.download(x), np.full(4, 16, dtype=np.float32))


def test_wait_timeout_while_paused():
    with Context(wait_timeout_ms=100) as c:
        x = c.tensor(np.arange(5, dtype=np.float64), "f64")
        c.debug_pause(1)
        seq = c.submit("mul", x, [x, x])
        t0 = time.monotonic()
        assert c.wait(50) == ERR_TIMEOUT, "gpuos_wait while paused"
        assert time.monotonic() - t0 >= 0.04
        assert c.wait_fence(seq, 20) == ERR_TIMEOUT, "gpuos_wait_fence while paused"
        assert c.fence_done(seq) == 0
        buf = np.zeros(5)
        st = c.lib.gpuos_download(c.ptr, x.ptr, buf.ctypes.data, buf.nbytes)
        assert st == ERR_TIMEOUT, "gpuos_download of a tensor with queued work while paused: %s" % status_name(st)
        assert c.status() == OK, "a timeout must not be sticky"
        c.debug_pause(0)
        assert c.wait_fence(seq, 10000) == OK
        assert c.fence_done(seq) == 1
        assert c.wait(10000) == OK
        assert np.array_equal(c.download(x), np.arange(5, dtype=np.float64) ** 2)


def test_debug_pause_returns_previous_state(ctx):
    assert ctx.debug_pause(1) == 0
    assert ctx.debug_pause(1) == 1
    assert ctx.debug_pause(0) == 1
    assert ctx.debug_pause(0) == 0


def test_fences(ctx):
    x = ctx.tensor(np.zeros(3, dtype=np.int64), "i64")
    one = ctx.scalar("i64", 1)
    before = ctx.fence()
    seqs = [ctx.submit("add", x, [x, one]) for _ in range(50)]
    assert before < seqs[0] and all(p < q for p, q in zip(seqs, seqs[1:])), "sequence numbers %s" % seqs[:5]
    assert ctx.fence() == seqs[-1]
    assert ctx.wait_fence(seqs[-1], 10000) == OK
    assert all(ctx.fence_done(s) for s in seqs)
    assert ctx.fence_done(0) == 1
    assert np.array_equal(ctx.download(x), np.full(3, 50))
    assert ctx.wait(10000) == OK


def test_release_right_after_submit(ctx):
    """Tensors and views released right after the submission that uses them keep their memory
    until the task has run."""
    vals = np.arange(1000, dtype=np.float32)
    out = ctx.new("f32", (1000,))
    for k in range(20):
        a = ctx.tensor(vals + k, "f32")
        b = a.slice(0, 0, 1000)
        c = ctx.scalar("f32", 2.0)
        ctx.submit("mul", out if k == 19 else ctx.new("f32", (1000,)), [b, c])
        a.release()
        b.release()
        c.release()
    assert np.array_equal(ctx.download(out), (vals + 19) * 2)


def test_program_order_chain(ctx, rng):
    """A long chain of dependent tasks on mixed ops sees every earlier write (inputs from the
    suite's seed: GPUOS_TEST_SEED reproduces them)."""
    a0 = rng.integers(-1000, 1000, 64).astype(np.int64)
    a = ctx.tensor(a0, "i64")
    b = ctx.new("i64", (64,))
    s = ctx.new("i64", ())
    ref = a0.copy()
    for i in range(200):
        if i % 3 == 0:
            ctx.submit("copy", b, [a])
            refb = ref.copy()
        elif i % 3 == 1:
            ctx.submit("sum", s, [b])
            refs = refb.sum()
        else:
            ctx.submit("sub", a, [b, s])
            ref = refb - refs
    assert np.array_equal(ctx.download(a), ref)


def test_submit_many_equals_single_submissions(ctx, rng):
    """gpuos_submit_many queues a batch in order, as single submissions would: repeated tasks (one
    lock for the run) mixed with new ones; consecutive sequence numbers; exact results (inputs and
    batches from the suite's seed: GPUOS_TEST_SEED reproduces them)."""
    x0 = rng.integers(-1000, 1000, 256).astype(np.int64)
    x = ctx.tensor(x0, "i64")
    y = ctx.new("i64", (256,))
    s = ctx.new("i64", ())
    one = ctx.tensor(np.ones(256, dtype=np.int64), "i64")
    ref = x0.copy()
    for rnd in range(30):
        tasks, n = [], int(rng.integers(1, 40))
        for i in range(n):
            k = int(rng.integers(0, 4))
            if k == 0:
                tasks.append(ctx.task("add", x, [x, one]))
                ref = ref + 1
            elif k == 1:
                tasks.append(ctx.task("mul", y, [x, x]))
                refy = ref * ref
            elif k == 2:
                tasks.append(ctx.task("sum", s, [x]))
                refs = ref.sum()
            else:
                tasks.append(ctx.task("sub", x, [x, one]))
                ref = ref - 1
        before = ctx.fence()
        st, seqs, nq = ctx.submit_many(tasks)
        assert st == OK, ctx.last_error()
        assert nq == n and seqs == list(range(before + 1, before + 1 + n)), (before, seqs)
    assert ctx.wait(20000) == OK
    assert np.array_equal(ctx.download(x), ref)
    assert np.array_equal(ctx.download(y), refy)
    assert ctx.download(s) == refs


def test_submit_many_stops_at_the_first_error(ctx):
    x = ctx.tensor(np.zeros(8, dtype=np.int32), "i32")
    one = ctx.tensor(np.ones(8, dtype=np.int32), "i32")
    bad_out = ctx.new("f32", (8,))
    good = ctx.task("add", x, [x, one])
    tasks = [good, good, good, ctx.task("add", bad_out, [x, one]), good, good]
    st, seqs, nq = ctx.submit_many(tasks)
    assert st == ERR_DTYPE_MISMATCH, status_name(st)
    assert nq == 3 and len(seqs) == 3, nq
    msg = ctx.last_error()
    assert msg.startswith("GPUOS_ERR_DTYPE_MISMATCH: gpuos_submit_many: task 3 of 6 not queued") and "(the 3 before it were)" in msg \
        and msg.count("GPUOS_ERR_") == 1, msg
    assert ctx.wait(10000) == OK
    assert np.array_equal(ctx.download(x), np.full(8, 3, dtype=np.int32)), "the three tasks before the error ran"
    L = lib()
    nq = ctypes.c_int(-1)
    assert L.gpuos_submit_many(ctx.ptr, None, 0, None, ctypes.byref(nq)) == OK and nq.value == 0
    assert L.gpuos_submit_many(ctx.ptr, None, 2, None, ctypes.byref(nq)) == ERR_NULL_POINTER and nq.value == 0
    arr = (Task * 1)(good)
    assert L.gpuos_submit_many(ctx.ptr, arr, -1, None, None) == ERR_INVALID_ARGUMENT
    assert L.gpuos_submit_many(None, arr, 1, None, ctypes.byref(nq)) == ERR_NULL_POINTER and nq.value == 0
    assert L.gpuos_submit_many(ctx.ptr, arr, 1, None, None) == OK  # seqs and n_queued may be NULL
    assert ctx.wait(10000) == OK
    assert np.array_equal(ctx.download(x), np.full(8, 4, dtype=np.int32))


def test_submit_many_waits_for_room():
    """A batch longer than the queue waits for room as single submissions do (and fails after
    submit_timeout_ms while the executor is paused, with the count of what went in)."""
    with Context(queue_capacity=16, submit_timeout_ms=10000) as c:
        x = c.tensor(np.zeros(4, dtype=np.int64), "i64")
        one = c.tensor(np.ones(4, dtype=np.int64), "i64")
        st, seqs, nq = c.submit_many([c.task("add", x, [x, one])] * 200)
        assert st == OK and nq == 200, (status_name(st), nq, c.last_error())
        assert c.wait(10000) == OK
        assert np.array_equal(c.download(x), np.full(4, 200, dtype=np.int64))
    with Context(queue_capacity=16, submit_timeout_ms=0) as c:
        x = c.tensor(np.zeros(4, dtype=np.int64), "i64")
        one = c.tensor(np.ones(4, dtype=np.int64), "i64")
        assert c.debug_pause(1) == 0
        st, seqs, nq = c.submit_many([c.task("add", x, [x, one])] * 40)
        assert st == ERR_QUEUE_FULL and nq == 16, (status_name(st), nq)
        assert c.debug_pause(0) == 1
        assert c.wait(10000) == OK
        assert np.array_equal(c.download(x), np.full(4, 16, dtype=np.int64))
