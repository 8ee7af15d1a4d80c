#!/usr/bin/env python3
"""bench/torch_baselines.py - the PyTorch baselines of `make bench`: eager and CUDA graph.

Prints, for bench/collect.py:
    ROW  <row>/<key> <unit> <value>      key: torch_eager, torch_graph
    INFO <key> <value...>
    SKIP torch <reason>                  (no torch, or no CUDA: nothing else is printed)
Times are time.perf_counter from the first operator until torch.cuda.synchronize() returns (the
span gpuos_bench measures), after warm-ups, the median of repetitions; sizes follow gpuos_bench:
    roundtrip           x.add_(1) on 4096 floats, then torch.cuda.synchronize()
    roundtrip_download  x.add_(1), then x[0].item()
    independent         torch.add(in_k, 1, out=out_k) over a pool of 4096-float tensors (ops/s)
    chain               1000 x to x.add_(1) on 4096 floats (us/op)
    large_elementwise   torch.add(a, b, out=o) on 64M floats (GB/s; read a, read b, write o)
    warm_start          a fresh Python process with torch imported: from before its first CUDA
                        call until 4096 floats filled and added are back on the host (ms; the
                        import not counted, as gpuos_bench's child does not count its exec)
Exits 0 when it skips; 1 if a row failed.
"""
import argparse
import statistics
import sys
import time


def median_info(name, v, scale=1.0):
    v = sorted(v)
    n = len(v)
    med = statistics.median(v)
    print(f"INFO {name}.spread n={n} min={v[0]*scale:.4g} p10={v[n//10]*scale:.4g} median={med*scale:.4g} "
          f"p90={v[(n*9)//10]*scale:.4g} max={v[-1]*scale:.4g}")
    return med


def row_out(row, key, unit, value):
    print(f"ROW {row}/{key} {unit} {value:.6g}", flush=True)


class Bench:
    def __init__(self, torch, args):
        self.torch = torch
        self.a = args
        self.dev = torch.device("cuda", args.device)
        torch.cuda.set_device(self.dev)

    def reps(self, full, quick):
        return max(1, int(round((quick if self.a.quick else full) * self.a.reps_scale)))

    def pattern(self, n, base):
        t = self.torch
        return (t.arange(n, device=self.dev, dtype=t.int64) % 97).to(t.float32) * 0.25 + base

    def check(self, x, base, add):
        t = self.torch
        want = self.pattern(x.numel(), base) + add
        if not t.equal(x, want):
            bad = (x != want).nonzero()[0].item()
            raise RuntimeError(f"wrong result at [{bad}]: {x[bad].item()}, want {want[bad].item()}")

    def graph(self, fn):
        """Captures fn() into a CUDA graph (after a warm-up on a side stream, as PyTorch asks)."""
        t = self.torch
        s = t.cuda.Stream()
        s.wait_stream(t.cuda.current_stream())
        with t.cuda.stream(s):
            fn()
        t.cuda.current_stream().wait_stream(s)
        t.cuda.synchronize()
        g = t.cuda.CUDAGraph()
        with t.cuda.graph(g):
            fn()
        t.cuda.synchronize()
        return g

    def timed(self, warm, reps, body, per=1.0):
        """Times body() + synchronize, reps times after warm; returns seconds / per, each."""
        t = self.torch
        out = []
        for r in range(warm + reps):
            t0 = time.perf_counter()
            body()
            t.cuda.synchronize()
            t1 = time.perf_counter()
            if r >= warm:
                out.append((t1 - t0) / per)
        return out

    # ------------------------------------------------------------ rows
    def roundtrip(self):
        x = self.pattern(4096, 1.0)
        warm, R = self.reps(300, 50), self.reps(3000, 300)
        v = self.timed(warm, R, lambda: x.add_(1))
        self.check(x, 1.0, warm + R)
        row_out("roundtrip", "torch_eager", "us", 1e6 * median_info("roundtrip.torch_eager", v, 1e6))
        x = self.pattern(4096, 1.0)
        g = self.graph(lambda: x.add_(1))  # the warm-up on the side stream adds 1, capture does not
        v = self.timed(warm, R, g.replay)
        self.check(x, 1.0, 1 + warm + R)
        row_out("roundtrip", "torch_graph", "us", 1e6 * median_info("roundtrip.torch_graph", v, 1e6))

    def roundtrip_download(self):
        x = self.pattern(4096, 1.0)
        warm, R = self.reps(300, 50), self.reps(3000, 300)
        v = []
        expect = 1.0
        for r in range(warm + R):
            t0 = time.perf_counter()
            x.add_(1)
            got = x[0].item()
            t1 = time.perf_counter()
            expect += 1.0
            if got != expect:
                raise RuntimeError(f"x[0].item() saw {got}, want {expect}")
            if r >= warm:
                v.append(t1 - t0)
        row_out("roundtrip_download", "torch_eager", "us", 1e6 * median_info("roundtrip_download.torch_eager", v, 1e6))
        g = self.graph(lambda: x.add_(1))
        expect += 1.0
        v = []
        for r in range(warm + R):
            t0 = time.perf_counter()
            g.replay()
            got = x[0].item()
            t1 = time.perf_counter()
            expect += 1.0
            if got != expect:
                raise RuntimeError(f"graph: x[0].item() saw {got}, want {expect}")
            if r >= warm:
                v.append(t1 - t0)
        row_out("roundtrip_download", "torch_graph", "us", 1e6 * median_info("roundtrip_download.torch_graph", v, 1e6))

    def chain(self):
        n = self.a.chain_n
        x = self.pattern(4096, 1.0)
        warm, R = self.reps(5, 2), self.reps(50, 10)

        def body():
            for _ in range(n):
                x.add_(1)
        v = self.timed(warm, R, body, per=n)
        self.check(x, 1.0, (warm + R) * n)
        row_out("chain", "torch_eager", "us/op", 1e6 * median_info("chain.torch_eager", v, 1e6))
        x = self.pattern(4096, 1.0)
        g = self.graph(body)
        v = self.timed(warm, R, g.replay, per=n)
        self.check(x, 1.0, (1 + warm + R) * n)
        row_out("chain", "torch_graph", "us/op", 1e6 * median_info("chain.torch_graph", v, 1e6))

    def independent(self):
        t = self.torch
        P = self.a.pool
        N = self.a.indep_ops
        ins = [self.pattern(4096, float(k % 1000)) for k in range(P)]
        outs = [t.empty(4096, device=self.dev) for _ in range(P)]
        warm, R = self.reps(1, 1), self.reps(7, 3)
        n_eager = max(P, N // 10)  # eager is ~10 us/op: a tenth of the ops is plenty
        print(f"INFO independent.torch_eager.ops_per_measurement {n_eager}")

        def body():
            for i in range(n_eager):
                k = i % P
                t.add(ins[k], 1, out=outs[k])
        v = self.timed(warm, R, body)
        for k in range(0, P, max(1, P // 8)):
            self.check(outs[k], float(k % 1000), 1.0)
        eager_rate = n_eager / median_info("independent.torch_eager.s", v)
        row_out("independent", "torch_eager", "ops/s", eager_rate)
        row_out("independent_many", "torch_eager", "ops/s", eager_rate)

        G = min(self.a.graph_nodes, P)
        for o in outs:
            o.zero_()

        def nodes():
            for k in range(G):
                t.add(ins[k], 1, out=outs[k])
        g = self.graph(nodes)
        replays = max(1, N // G)
        print(f"INFO independent.torch_graph.nodes {G}\nINFO independent.torch_graph.replays {replays}")

        def replay():
            for _ in range(replays):
                g.replay()
        v = self.timed(warm, R, replay)
        for k in range(0, G, max(1, G // 8)):
            self.check(outs[k], float(k % 1000), 1.0)
        rate = replays * G / median_info("independent.torch_graph.s", v)
        row_out("independent", "torch_graph", "ops/s", rate)
        # gpuos's batched form (a recorded graph of the same adds) is compared with this replay
        row_out("independent_graph", "torch_graph", "ops/s", rate)
        row_out("independent_many", "torch_graph", "ops/s", rate)

    def large_elementwise(self):
        t = self.torch
        n, K = self.a.large_n, self.a.large_k
        a = self.pattern(n, 1.0)
        b = self.pattern(n, 0.0)
        o = t.empty_like(a)
        warm, R = self.reps(2, 1), self.reps(15, 3)
        nbytes = 3.0 * n * 4

        def body():
            for _ in range(K):
                t.add(a, b, out=o)
        v = self.timed(warm, R, body, per=K)
        if not t.equal(o, a + b):
            raise RuntimeError("wrong large add result")
        row_out("large_elementwise", "torch_eager", "GB/s", nbytes / median_info("large_elementwise.torch_eager.s", v) / 1e9)
        g = self.graph(body)
        v = self.timed(warm, R, g.replay, per=K)
        row_out("large_elementwise", "torch_graph", "GB/s", nbytes / median_info("large_elementwise.torch_graph.s", v) / 1e9)


    def tiny_mlp(self):
        t = self.torch
        F = t.nn.functional
        B, H, NL = 8, 256, 8
        gen = t.Generator(device="cpu").manual_seed(1)
        ws = [((t.rand(H, H, generator=gen) - 0.5) / 8).to(self.dev) for _ in range(NL)]
        bs = [((t.rand(H, generator=gen) - 0.5) / 5).to(self.dev) for _ in range(NL)]
        x0 = (t.rand(B, H, generator=gen) * 2 - 1).to(self.dev)
        out = t.empty(B, H, device=self.dev)

        def forward():
            x = x0
            for l in range(NL):
                h = x @ ws[l]
                h = h + bs[l]
                h = F.gelu(h)
                h = h + x
                x = F.layer_norm(h, (H,), eps=1e-5)
            out.copy_(x)
        warm, R = self.reps(50, 10), self.reps(500, 50)
        v = self.timed(warm, R, forward)
        ref = out.clone()
        if not bool(t.isfinite(ref).all()) or abs(float(ref.mean())) > 1e-3:
            raise RuntimeError("tiny_mlp: the forward's output is not layer-normalised")
        row_out("tiny_mlp", "torch_eager", "us", 1e6 * median_info("tiny_mlp.torch_eager", v, 1e6))
        g = self.graph(forward)
        v = self.timed(warm, R, g.replay)
        if not bool(t.allclose(out, ref, atol=1e-5)):
            raise RuntimeError("tiny_mlp: the graph's forward differs from eager")
        row_out("tiny_mlp", "torch_graph", "us", 1e6 * median_info("tiny_mlp.torch_graph", v, 1e6))


    def warm_start(self):
        import subprocess
        code = ("import sys, time, torch\n"
                "t0 = time.perf_counter()\n"
                f"x = torch.full((4096,), 1.5, device='cuda:{self.a.device}')\n"
                "x.add_(1)\n"
                "h = x.cpu()\n"
                "t1 = time.perf_counter()\n"
                "assert bool((h == 2.5).all()), 'wrong first result'\n"
                "print(f'CHILD first {t1 - t0:.9f}')\n")
        v = []
        for r in range(1 + self.reps(5, 2)):  # the first warms the disk's caches
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
            got = [ln for ln in out.stdout.splitlines() if ln.startswith("CHILD first ")]
            if out.returncode != 0 or not got:
                raise RuntimeError(f"child failed (exit {out.returncode}): {out.stderr.strip()[-300:]}")
            if r > 0:
                v.append(float(got[0].split()[2]))
        row_out("warm_start", "torch_eager", "ms", 1e3 * median_info("warm_start.torch_eager", v, 1e3))


ROWS = ["roundtrip", "roundtrip_download", "independent", "chain", "large_elementwise", "tiny_mlp", "warm_start"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--chain-n", type=int, default=1000)
    ap.add_argument("--indep-ops", type=int, default=None)
    ap.add_argument("--pool", type=int, default=1024)
    ap.add_argument("--graph-nodes", type=int, default=1000)
    ap.add_argument("--large-n", type=int, default=64 << 20)
    ap.add_argument("--large-k", type=int, default=None)
    ap.add_argument("--reps-scale", type=float, default=1.0)
    a = ap.parse_args()
    if a.indep_ops is None:
        a.indep_ops = 40000 if a.quick else 400000
    if a.large_k is None:
        a.large_k = 2 if a.quick else 8
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - any import failure means "no torch here"
        print(f"SKIP torch cannot import torch ({type(e).__name__}: {e}); no torch_eager/torch_graph columns")
        return 0
    if not torch.cuda.is_available():
        print(f"SKIP torch torch {torch.__version__} sees no CUDA device; no torch_eager/torch_graph columns")
        return 0
    b = Bench(torch, a)
    print(f"INFO torch.version {torch.__version__}\nINFO torch.device {torch.cuda.get_device_name(b.dev)}")
    # first CUDA work (context, allocator, kernels) outside the rows
    w = torch.ones(4096, device=b.dev)
    w.add_(1)
    torch.cuda.synchronize()
    want = [r for r in a.rows.split(",") if r] or ROWS
    if "independent_graph" in want or "independent_many" in want:  # measured by independent
        want.append("independent")
    failed = 0
    for r in ROWS:
        if r not in want:
            continue
        print(f"torch_baselines: {r} ...", file=sys.stderr)
        try:
            getattr(b, r)()
        except Exception as e:  # noqa: BLE001 - report and go on with the next row
            print(f"FAIL {r}/torch {type(e).__name__}: {e}", flush=True)
            failed += 1
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
