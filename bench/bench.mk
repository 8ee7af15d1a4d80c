# bench/bench.mk - the benchmarks, included by the Makefile (`include bench/bench.mk`).
#   make bench        on the GPU machine: builds build/bench/gpuos_bench (gpuos.o, no nvcc) and
#                     build/bench/baselines (nvcc), then bench/collect.py runs gpuos_bench, the
#                     CUDA baselines and the PyTorch baselines one after another, prints the table
#                     (values, ratios, target checks) and writes bench/results/<device>.json
#   make bench-host   the gpuos column only, on the host executor (any machine, no GPU, no nvcc);
#                     writes bench/results/host-<cpu>.json
#   make bench-build  build both programs without running them (checks that baselines.cu compiles)
# Knobs: BENCH_ARGS="--rows chain,roundtrip --threads 1,4 --quick --device 0" (see collect.py -h);
# NVCC, BENCH_ARCH (sm_90), BENCH_NVCCFLAGS. The raw output of the last run: build/bench/last-run.log.
NVCC            ?= nvcc
BENCH_ARCH      ?= sm_90
BENCH_NVCCFLAGS ?= -O3 -std=c++17
BENCH_BUILD     := $(BUILD)/bench
BENCH_ARGS      ?=

$(BENCH_BUILD):
	mkdir -p $(BENCH_BUILD)

$(BENCH_BUILD)/gpuos_bench: bench/gpuos_bench.c gpuos.h $(BUILD)/gpuos.o | $(BENCH_BUILD)
	$(CC) -std=c99 $(WARN) $(CFLAGS) -I. bench/gpuos_bench.c $(BUILD)/gpuos.o -o $@ $(LDLIBS)

$(BENCH_BUILD)/baselines: bench/baselines.cu | $(BENCH_BUILD)
	$(NVCC) -arch=$(BENCH_ARCH) $(BENCH_NVCCFLAGS) bench/baselines.cu -o $@

.PHONY: bench bench-host bench-build
bench-build: $(BENCH_BUILD)/gpuos_bench $(BENCH_BUILD)/baselines

bench: bench-build
	$(PYTHON) bench/collect.py --build $(BENCH_BUILD) $(BENCH_ARGS)

bench-host: $(BENCH_BUILD)/gpuos_bench
	$(PYTHON) bench/collect.py --host --build $(BENCH_BUILD) $(BENCH_ARGS)
