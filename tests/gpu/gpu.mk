# tests/gpu/gpu.mk - GPU tests of the device code (included by the main Makefile).
#   make test-gpu-dev           build/devcheck: every device kernel against the host kernels,
#                               first with the kernels compiled by nvcc (capped at 64
#                               registers, so that blocks of 1024 threads run too), then with
#                               the ones NVRTC compiles from gpuos__device_source with the
#                               runtime's options, then with --maxrregcount=64 added.
#                               Needs nvcc and an sm_90 GPU.
#   make check-device-compile   NVRTC-compiles src/generated/gpuos_device.cu with the runtime's
#                               options and prints the time (no GPU needed, NVRTC only).
NVCC      ?= nvcc
GPU_ARCH  ?= sm_90
NVCCFLAGS ?= -O2 -std=c++17
CUDA_LIB  ?= /usr/local/cuda/lib64

DEVCHECK_DEPS := tests/gpu/devcheck.cu tests/gpu/devcheck_kernels.cu src/generated/gpuos_device.cu \
                 gpuos.h src/gpuos_ops.h src/gpuos_plan.h $(BUILD)/gpuos.o

$(BUILD)/devcheck: $(DEVCHECK_DEPS) | $(BUILD)
	$(NVCC) -arch=$(GPU_ARCH) $(NVCCFLAGS) -maxrregcount=64 -I. tests/gpu/devcheck.cu \
		tests/gpu/devcheck_kernels.cu $(BUILD)/gpuos.o -o $@ -lnvrtc -lnvJitLink -ldl -lpthread

$(BUILD)/nvrtc_compile: tests/gpu/nvrtc_compile.c | $(BUILD)
	$(CC) -std=c99 $(WARN) $(CFLAGS) $< -o $@ -ldl

.PHONY: test-gpu-dev check-device-compile
test-gpu-dev: $(BUILD)/devcheck
	./$(BUILD)/devcheck
	./$(BUILD)/devcheck --nvrtc
	./$(BUILD)/devcheck --nvrtc --maxrreg 64

check-device-compile: $(BUILD)/nvrtc_compile
	LD_LIBRARY_PATH="$(CUDA_LIB):$$LD_LIBRARY_PATH" ./$(BUILD)/nvrtc_compile src/generated/gpuos_device.cu

# Rough timings of the device kernels (not a test): per-task time of a chain in one block,
# and the bandwidth of element-wise kernels over 16M elements; `build/devbench lnlean` compares
# the lean layernorm row with the block-wide one byte for byte (and times both); `build/devbench mm` times the
# tiny MLP's narrow matmul tile alone (plain, with its epilogue, its layernorm prologue, both),
# then the same as a row tile (and the whole product both ways, compared byte for byte); `mm3`
# runs only the fused narrow case, `mm7` the fused row tile, for ncu; `mmlean` compares the
# lean narrow tile with the general one on the same plans, byte for byte.
# Built as the persistent kernel's module is (relocatable code, 128 registers): out-of-line
# device functions then cost what they cost there (callee-saved registers, ABI calls).
$(BUILD)/devbench: tests/gpu/devbench.cu src/generated/gpuos_device.cu $(BUILD)/gpuos.o | $(BUILD)
	$(NVCC) -arch=$(GPU_ARCH) $(NVCCFLAGS) -rdc=true -maxrregcount=128 -I. $< $(BUILD)/gpuos.o -o $@ -ldl -lpthread

.PHONY: bench-gpu-dev
bench-gpu-dev: $(BUILD)/devbench
	./$(BUILD)/devbench

# The smallest GPU run (one add, one download), for a first look and for compute-sanitizer.
$(BUILD)/smoke: tests/gpu/smoke.c gpuos.h $(BUILD)/gpuos.o | $(BUILD)
	$(CC) -std=c99 $(WARN) $(CFLAGS) -I. $< $(BUILD)/gpuos.o -o $@ $(LDLIBS)

# Program order on the GPU: a dependent operator sequence without waits, bit for bit against the host.
$(BUILD)/order_check: tests/gpu/order_check.c gpuos.h $(BUILD)/gpuos.o | $(BUILD)
	$(CC) -std=c99 $(WARN) $(CFLAGS) -I. $< $(BUILD)/gpuos.o -o $@ $(LDLIBS)

# What a kernel-generation swap costs (not a test): NVRTC and nvJitLink times, module load.
$(BUILD)/probe_swap: tests/gpu/probe_swap.c gpuos.c gpuos.h | $(BUILD)
	$(CC) -std=gnu99 -O2 -I. -Isrc tests/gpu/probe_swap.c -o $@ $(LDLIBS)

# Where one small task's round trip goes (not a test; device timestamps, GPUOS_CUDA_TIMESTAMPS).
$(BUILD)/probe_latency: tests/gpu/probe_latency.c tests/gpu/probe_prof.h gpuos.c gpuos.h | $(BUILD)
	$(CC) -std=gnu99 -O2 -I. -Isrc tests/gpu/probe_latency.c -o $@ $(LDLIBS)

# express tasks on and off: a task and a small download of its result, stage by stage
$(BUILD)/probe_express: tests/gpu/probe_express.c tests/gpu/probe_prof.h gpuos.c gpuos.h | $(BUILD)
	$(CC) -std=gnu99 -O2 -I. -Isrc tests/gpu/probe_express.c -o $@ $(LDLIBS)

# Where a submission's time goes on the host CPU (not a test; device 0).
$(BUILD)/probe_submit: tests/gpu/probe_submit.c gpuos.h $(BUILD)/gpuos.o | $(BUILD)
	$(CC) -std=gnu99 -O2 -I. $< $(BUILD)/gpuos.o -o $@ $(LDLIBS)

# Submission cost against the number of distinct repeated tasks (the repeat table's reach; not a test).
$(BUILD)/probe_pool: tests/gpu/probe_pool.c gpuos.h $(BUILD)/gpuos.o | $(BUILD)
	$(CC) -std=gnu99 -O2 -I. $< $(BUILD)/gpuos.o -o $@ $(LDLIBS)

# A fresh process's CUDA start, phase by phase, with and without NVRTC loading beside it (not a test).
$(BUILD)/probe_start: tests/gpu/probe_start.c | $(BUILD)
	$(CC) -std=gnu99 -O2 $< -o $@ -ldl -lpthread

# The same probe on a diagnostic build of gpuos.c (-DGPUOS__PROF_HOST): cycles per phase of a
# submission (gpuos__prof_host).
$(BUILD)/probe_submit_prof: tests/gpu/probe_submit.c gpuos.h gpuos.c | $(BUILD)
	$(CC) -std=c99 $(WARN) $(CFLAGS) -DGPUOS__PROF_HOST -I. tests/gpu/probe_submit.c gpuos.c -o $@ $(LDLIBS)

# Where a chain's and independent tasks' time goes in the worker blocks (not a test; device
# cycle counters, GPUOS_CUDA_TIMESTAMPS).
$(BUILD)/probe_chain: tests/gpu/probe_chain.c tests/gpu/probe_prof.h gpuos.c gpuos.h | $(BUILD)
	$(CC) -std=gnu99 -O2 -I. -Isrc tests/gpu/probe_chain.c -o $@ $(LDLIBS)

# a fused few-row layer, whole row tiles against 64-column slices (not a test)
$(BUILD)/probe_rowslice: tests/gpu/probe_rowslice.c $(BUILD)/gpuos.o gpuos.h | $(BUILD)
	$(CC) -std=c99 -O2 -I. tests/gpu/probe_rowslice.c $(BUILD)/gpuos.o -o $@ $(LDLIBS)

# what each kind of tiny_mlp task costs (not a test)
$(BUILD)/probe_mlp: tests/gpu/probe_mlp.c gpuos.c gpuos.h | $(BUILD)
	$(CC) -std=gnu99 -O2 -I. -Isrc tests/gpu/probe_mlp.c -o $@ $(LDLIBS)

$(BUILD)/probe_prio: tests/gpu/probe_prio.c gpuos.c gpuos.h | $(BUILD)
	$(CC) -std=gnu99 -O2 -I. -Isrc tests/gpu/probe_prio.c -o $@ $(LDLIBS)

# A run-time operator on a transposed view, for compute-sanitizer (not a test).
$(BUILD)/probe_rtview: tests/gpu/probe_rtview.c gpuos.c gpuos.h | $(BUILD)
	$(CC) -std=gnu99 -O2 -I. -Isrc tests/gpu/probe_rtview.c -o $@ $(LDLIBS)

# Where gpuos_create's time goes (warm_start; not a test).
$(BUILD)/probe_create: tests/gpu/probe_create.c gpuos.c gpuos.h | $(BUILD)
	$(CC) -std=gnu99 -O2 -I. -Isrc tests/gpu/probe_create.c -o $@ $(LDLIBS)

# Where a branchy graph launch spends its time in the workers (not a test; GPUOS_CUDA_TIMESTAMPS).
$(BUILD)/probe_graph: tests/gpu/probe_graph.c tests/gpu/probe_prof.h gpuos.c gpuos.h | $(BUILD)
	$(CC) -std=gnu99 -O2 -I. -Isrc tests/gpu/probe_graph.c -o $@ $(LDLIBS)

# What one poll of the host ring costs a block, by width and load (not a test; nvcc).
$(BUILD)/probe_poll: tests/gpu/probe_poll.cu | $(BUILD)
	$(NVCC) -arch=$(GPU_ARCH) $(NVCCFLAGS) $< -o $@

# How fast one block streams an L2-resident buffer, by loads in flight and threads (not a test; nvcc).
$(BUILD)/probe_l2stream: tests/gpu/probe_l2stream.cu | $(BUILD)
	$(NVCC) -arch=$(GPU_ARCH) $(NVCCFLAGS) $< -o $@

# A hand-written persistent kernel of bench's tiny_mlp, columns split over blocks (not a test; nvcc).
$(BUILD)/probe_mlp_ideal: tests/gpu/probe_mlp_ideal.cu | $(BUILD)
	$(NVCC) -arch=$(GPU_ARCH) $(NVCCFLAGS) $< -o $@

# The CPU cost of a repeated task's encoding, no GPU needed (not a test).
$(BUILD)/probe_encode: tests/gpu/probe_encode.c gpuos.c gpuos.h | $(BUILD)
	$(CC) -std=gnu99 -O2 -I. -Isrc tests/gpu/probe_encode.c -o $@ $(LDLIBS)
