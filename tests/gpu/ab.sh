#!/bin/sh
# tests/gpu/ab.sh - an A/B of the bench's rows on the device, alternating in one call (not a test).
# Prepare the baseline here first (the device's copy of the tree may carry a stale .git):
#   git show REV:gpuos.c > ab/gpuos_old.c && git show REV:bench/gpuos_bench.c > ab/bench_old.c
# then on the device (run's carry: ["ab"]):
#   ROWS=chain,independent ROUNDS=2 sh tests/gpu/ab.sh [NAME=ENV ...]
# Each NAME=ENV adds a variant of the working tree's build run with ENV set (variables joined by
# '+', e.g. ahead0=GPUOS_CUDA_NVRTC_OPT=-DGPUOS__POLL_AHEAD=0, or both=GPUOS_CUDA_NVRTC_OPT=-DA=0+
# GPUOS_CUDA_NVRTC_OPT2=-DB=0 without the line break); "new" (the working tree) and "old"
# (the baseline, when ab/gpuos_old.c exists) always run. Prints each variant's ROW lines.
export GPUOS_CACHE_DIR=${GPUOS_CACHE_DIR:-/tmp/gpuos-cache}
ROWS=${ROWS:-chain,independent,roundtrip,branchy_dag,pipeline_jobs}
# (GPUOS_CUDA_NVRTC_OPT and _OPT2 take one option each, so a variant may change two device macros)
make -s -j16 build/gpuos.o build/bench/gpuos_bench >/dev/null 2>&1 || { echo "build failed"; exit 1; }
V="new="
if [ -f ab/gpuos_old.c ]; then
  cc -std=c99 -O2 -fPIC -I. -c ab/gpuos_old.c -o ab/old.o || exit 1
  cc -std=c99 -O2 -I. ${AB_BENCH_OLD:-ab/bench_old.c} ab/old.o -o ab/bench_old -lpthread -ldl -lm || exit 1
  V="$V old="
fi
V="$V $*"
r=0
while [ $r -lt ${ROUNDS:-2} ]; do
  for v in $V; do
    name=${v%%=*}; var=$(echo "${v#*=}" | tr '+' ' ')
    b=build/bench/gpuos_bench; [ "$name" = old ] && b=ab/bench_old
    env $var $b --device 0 --rows "$ROWS" 2>&1 | grep -E '^ROW [a-z_]+ |INFO chain.submit|INFO chain.graph_us|INFO [a-z_]+\.express|INFO roundtrip[a-z_]*\.spread|FAIL|rror' | sed "s/^/$name /"
  done
  r=$((r + 1))
done
