#!/bin/sh
# tests/gpu/run_gpu.sh - one batch of GPU work for the device tool (logs under $OUT):
#   sh tests/gpu/run_gpu.sh [suite] [express] [stress] [order] [bench] [pool] [probes] [hostprobe] [sanitize]
# SUITE_PARTS picks the suite's parts (default "c py"; C test names also, e.g. "test_fuse py").
# Each step's log is $OUT/<step>.log; a summary line per step goes to stdout.
OUT=${OUT:-/tmp/gpuos-out}
mkdir -p "$OUT"
export GPUOS_CACHE_DIR=${GPUOS_CACHE_DIR:-/tmp/gpuos-cache}
# the device tool's copy of the tree may carry a stale .git: pass GPUOS_BENCH_COMMIT=<hash> literally
COMMIT=${GPUOS_BENCH_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
make -j16 -s all build/order_check build/smoke build/tests/test_order_stress build/tests/test_priority build/tests/test_runs build/tests/test_graph build/tests/test_rtops build/tests/test_fuse build/tests/test_express build/probe_latency build/probe_submit build/probe_chain \
    > "$OUT/build.log" 2>&1 || { echo "build failed"; tail -20 "$OUT/build.log"; exit 1; }
RC=0
# run LOG N CMD...: CMD's output into $OUT/LOG, its last N lines shown, a failure remembered
# (the step's line says so, and the script exits 1 at the end)
run() {
  log=$1; n=$2; shift 2
  "$@" > "$OUT/$log" 2>&1; r=$?
  tail -"$n" "$OUT/$log"
  if [ $r -ne 0 ]; then echo "!! $log: exit status $r"; RC=1; fi
}
CS="compute-sanitizer --error-exitcode 1"
for step in "$@"; do
  t0=$(date +%s); rc0=$RC; RC=0
  case $step in
  suite) run suite.log 3 env GPUOS_TEST_DEVICE=0 PYTEST_ADDOPTS="-p no:timeout -p no:cacheprovider" \
           python3 tests/run_tests.py --make make --build build ${SUITE_PARTS:-c py} ;;
  express) # express tasks with runs of them allowed (GPUOS_CUDA_EXPRESS_RUN; the suite runs the default, 2), and off
         run express_run4.log 2 env GPUOS_TEST_DEVICE=0 GPUOS_CUDA_EXPRESS_RUN=4 ./build/tests/test_express
         run express_off.log 2 env GPUOS_TEST_DEVICE=0 GPUOS_CUDA_EXPRESS=0 ./build/tests/test_express ;;
  stress) run stress.log 3 env GPUOS_TEST_DEVICE=0 GPUOS_TEST_STRESS_TASKS=${STRESS:-10000000} ./build/tests/test_order_stress ;;
  order) run order.log 2 ./build/order_check 3000 ;;
  bench) run bench.log 25 env GPUOS_BENCH_COMMIT=$COMMIT make -s bench BENCH_ARGS="--device 0 ${BENCH_ROWS:+--rows $BENCH_ROWS}"
         # the results this run wrote (the device tool brings back at most 8 files: the logs go in a tar below)
         f=$(sed -n 's|^wrote \(bench/results/.*\)\.json$|\1|p' "$OUT/bench.log" | tail -1)
         [ -n "$f" ] && cp "$f.json" "$OUT/" && sed -n '/^gpuos benchmark:/,/^wrote bench\/results/p' "$OUT/bench.log" > "$OUT/$(basename "$f").txt"
         cp build/bench/last-run.log "$OUT/bench_raw.log" 2>/dev/null ;;
  hostprobe) # the host's submission cost: the encoder alone on this machine's CPU (no device), then with the device
         make -s build/probe_encode build/probe_submit > "$OUT/hostprobe_build.log" 2>&1
         run probe_encode.log 8 ./build/probe_encode
         run probe_submit_host.log 14 ./build/probe_submit ;;
  pool) # the repeat table's reach: 1024 entries (the old default) against 8192, alternating
         make -s build/probe_pool > "$OUT/pool_build.log" 2>&1
         for t in 1024 8192 1024 8192; do echo "GPUOS_REPEAT_TABLE=$t"; GPUOS_REPEAT_TABLE=$t ./build/probe_pool; done > "$OUT/pool.log" 2>&1
         cat "$OUT/pool.log" ;;
  probes) run probe_latency.log 12 ./build/probe_latency
         run probe_submit.log 14 ./build/probe_submit
         run probe_chain.log 14 ./build/probe_chain ;;
  sanitize) run memcheck.log 2 $CS --tool memcheck ./build/order_check 20
         run racecheck.log 2 $CS --tool racecheck ./build/smoke
         # priorities (lane 1): small programs on fresh contexts (memcheck cannot see memory allocated while a kernel runs)
         run memcheck_prio.log 2 env GPUOS_TEST_DEVICE=0 GPUOS_TEST_QUICK=1 $CS --tool memcheck ./build/tests/test_priority
         run racecheck_prio.log 2 env GPUOS_TEST_DEVICE=0 GPUOS_TEST_QUICK=1 $CS --tool racecheck ./build/tests/test_priority
         # runs of identical in-place tasks (the worker's run path; memcheck: a fresh context per program)
         run racecheck_runs.log 2 env GPUOS_TEST_DEVICE=0 GPUOS_TEST_QUICK=1 $CS --tool racecheck ./build/tests/test_runs
         run memcheck_runs.log 2 env GPUOS_TEST_DEVICE=0 GPUOS_TEST_QUICK=1 GPUOS_TEST_FRESH=1 $CS --tool memcheck ./build/tests/test_runs
         # graph launches expanded by the fetcher (one slot per launch, past the task ring's size)
         run memcheck_graph.log 2 env GPUOS_TEST_DEVICE=0 GPUOS_TEST_QUICK=1 GPUOS_TEST_ONLY=large $CS --tool memcheck ./build/tests/test_graph
         run racecheck_graph.log 2 env GPUOS_TEST_DEVICE=0 GPUOS_TEST_QUICK=1 GPUOS_TEST_ONLY=large $CS --tool racecheck ./build/tests/test_graph
         # fused matmul epilogues (a fresh context per program, every tensor allocated before its first task)
         run memcheck_fuse.log 2 env GPUOS_TEST_DEVICE=0 GPUOS_TEST_QUICK=1 GPUOS_TEST_FRESH=1 $CS --tool memcheck ./build/tests/test_fuse
         run racecheck_fuse.log 2 env GPUOS_TEST_DEVICE=0 GPUOS_TEST_QUICK=1 GPUOS_TEST_FRESH=1 $CS --tool racecheck ./build/tests/test_fuse
         # express tasks (the express worker's mailbox and whole-task runs)
         run memcheck_express.log 2 env GPUOS_TEST_DEVICE=0 GPUOS_TEST_QUICK=1 GPUOS_TEST_FRESH=1 $CS --tool memcheck ./build/tests/test_express
         run racecheck_express.log 2 env GPUOS_TEST_DEVICE=0 GPUOS_TEST_QUICK=1 $CS --tool racecheck ./build/tests/test_express ;;
  *) echo "unknown step $step"; RC=1 ;;
  esac
  echo "== $step $([ $RC -eq 0 ] && echo ok || echo FAILED) $(( $(date +%s) - t0 )) s"
  [ $rc0 -ne 0 ] && RC=1
done
# the device tool brings back at most 8 files from $OUT: past 8, the logs go into one tar
if [ "$(ls "$OUT" | wc -l)" -gt 8 ]; then
  (cd "$OUT" && tar czf logs.tgz *.log && rm -f *.log)
fi
exit $RC
