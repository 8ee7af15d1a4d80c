#!/bin/sh
# tests/gpu/run_gpu.sh - one batch of GPU work for the device tool (logs under $OUT):
#   sh tests/gpu/run_gpu.sh [suite] [stress] [order] [bench] [probes] [sanitize]
# Each step's log is $OUT/<step>.log; a summary line per step goes to stdout.
OUT=${OUT:-/tmp/gpuos-out}
mkdir -p "$OUT"
export GPUOS_CACHE_DIR=${GPUOS_CACHE_DIR:-/tmp/gpuos-cache}
# the device tool's copy of the tree may carry a stale .git: pass GPUOS_BENCH_COMMIT=<hash> literally
COMMIT=${GPUOS_BENCH_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
make -j16 -s all build/order_check build/smoke build/tests/test_order_stress build/tests/test_priority build/tests/test_runs build/tests/test_graph build/tests/test_rtops build/tests/test_fuse build/probe_latency build/probe_submit build/probe_chain \
    > "$OUT/build.log" 2>&1 || { echo "build failed"; tail -20 "$OUT/build.log"; exit 1; }
for step in "$@"; do
  t0=$(date +%s)
  case $step in
  suite) GPUOS_TEST_DEVICE=0 PYTEST_ADDOPTS="-p no:timeout -p no:cacheprovider" \
           python3 tests/run_tests.py --make make --build build c py > "$OUT/suite.log" 2>&1
         tail -3 "$OUT/suite.log" ;;
  stress) GPUOS_TEST_DEVICE=0 GPUOS_TEST_STRESS_TASKS=${STRESS:-10000000} ./build/tests/test_order_stress > "$OUT/stress.log" 2>&1
         tail -3 "$OUT/stress.log" ;;
  order) ./build/order_check 3000 > "$OUT/order.log" 2>&1; tail -2 "$OUT/order.log" ;;
  bench) GPUOS_BENCH_COMMIT=$COMMIT make -s bench BENCH_ARGS="--device 0 ${BENCH_ROWS:+--rows $BENCH_ROWS}" > "$OUT/bench.log" 2>&1
         cp bench/results/*.json bench/results/*.txt "$OUT/" 2>/dev/null; tail -25 "$OUT/bench.log" ;;
  probes) ./build/probe_latency > "$OUT/probe_latency.log" 2>&1; ./build/probe_submit > "$OUT/probe_submit.log" 2>&1
         ./build/probe_chain > "$OUT/probe_chain.log" 2>&1
         cat "$OUT/probe_latency.log" "$OUT/probe_submit.log" "$OUT/probe_chain.log" | tail -40 ;;
  sanitize) compute-sanitizer --tool memcheck ./build/order_check 20 > "$OUT/memcheck.log" 2>&1; tail -2 "$OUT/memcheck.log"
         compute-sanitizer --tool racecheck ./build/smoke > "$OUT/racecheck.log" 2>&1; tail -2 "$OUT/racecheck.log"
         # priorities (lane 1): small programs on fresh contexts (memcheck cannot see memory allocated while a kernel runs)
         GPUOS_TEST_DEVICE=0 GPUOS_TEST_QUICK=1 compute-sanitizer --tool memcheck ./build/tests/test_priority > "$OUT/memcheck_prio.log" 2>&1; tail -2 "$OUT/memcheck_prio.log"
         GPUOS_TEST_DEVICE=0 GPUOS_TEST_QUICK=1 compute-sanitizer --tool racecheck ./build/tests/test_priority > "$OUT/racecheck_prio.log" 2>&1; tail -2 "$OUT/racecheck_prio.log"
         # runs of identical in-place tasks (the worker's run path)
         GPUOS_TEST_DEVICE=0 GPUOS_TEST_QUICK=1 compute-sanitizer --tool racecheck ./build/tests/test_runs > "$OUT/racecheck_runs.log" 2>&1; tail -2 "$OUT/racecheck_runs.log"
         # graph launches expanded by the fetcher (one slot per launch, past the task ring's size)
         GPUOS_TEST_DEVICE=0 GPUOS_TEST_QUICK=1 GPUOS_TEST_ONLY=large compute-sanitizer --tool memcheck ./build/tests/test_graph > "$OUT/memcheck_graph.log" 2>&1; tail -2 "$OUT/memcheck_graph.log"
         GPUOS_TEST_DEVICE=0 GPUOS_TEST_QUICK=1 GPUOS_TEST_ONLY=large compute-sanitizer --tool racecheck ./build/tests/test_graph > "$OUT/racecheck_graph.log" 2>&1; tail -2 "$OUT/racecheck_graph.log"
         # fused matmul epilogues (a fresh context per program, every tensor allocated before its first task)
         GPUOS_TEST_DEVICE=0 GPUOS_TEST_QUICK=1 GPUOS_TEST_FRESH=1 compute-sanitizer --tool memcheck ./build/tests/test_fuse > "$OUT/memcheck_fuse.log" 2>&1; tail -2 "$OUT/memcheck_fuse.log"
         GPUOS_TEST_DEVICE=0 GPUOS_TEST_QUICK=1 GPUOS_TEST_FRESH=1 compute-sanitizer --tool racecheck ./build/tests/test_fuse > "$OUT/racecheck_fuse.log" 2>&1; tail -2 "$OUT/racecheck_fuse.log" ;;
  esac
  echo "== $step rc=$? $(( $(date +%s) - t0 )) s"
done
