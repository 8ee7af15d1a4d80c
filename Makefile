# gpuos - build, generate, test.
#   make            build/libgpuos.so and the examples (from gpuos.c, no nvcc needed)
#   make run        build and run the main example (GPU if there is one, else host)
#   make test       the test suite (needs NumPy, pytest: tests/requirements.txt)
#   make test-gpu   the same suite on the GPU, plus every device kernel against the host ones
#   make bench      benchmarks on the GPU against launches, CUDA graphs, PyTorch (bench/)
#   make gen        regenerate src/generated/, the generated parts of gpuos.h, and gpuos.c
#                   (DTYPES="bool i8 ..." RANKS="0 1 ..." pick the combinations; by default
#                   every dtype of gen/ops.py and ranks 0..8)
#   make check-gen  fail if `make gen` would change the tree
CC      ?= cc
CXX     ?= c++
PYTHON  ?= python3
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra
LDLIBS  := -lpthread -ldl -lm
BUILD   := build

# Empty: gen.py's defaults (every dtype of gen/ops.py; ranks 0..8).
DTYPES  ?=
RANKS   ?=
GEN_ARGS = $(if $(strip $(DTYPES)),--dtypes "$(DTYPES)") $(if $(strip $(RANKS)),--ranks "$(RANKS)")

EXAMPLES := $(BUILD)/particles $(BUILD)/mlp $(BUILD)/rtop

.PHONY: all run gen check-gen test test-c test-py clean
all: $(BUILD)/libgpuos.so $(EXAMPLES)

$(BUILD):
	mkdir -p $(BUILD)

# The drop-in unit: gpuos.c (assembled by `make gen`) + gpuos.h.
$(BUILD)/gpuos.o: gpuos.c gpuos.h | $(BUILD)
	$(CC) -std=c99 $(WARN) $(CFLAGS) -fPIC -c gpuos.c -o $@

$(BUILD)/libgpuos.so: $(BUILD)/gpuos.o
	$(CC) -shared -o $@ $^ $(LDLIBS)

$(BUILD)/%: examples/%.c $(BUILD)/gpuos.o gpuos.h
	$(CC) -std=c99 $(WARN) $(CFLAGS) -I. $< $(BUILD)/gpuos.o -o $@ $(LDLIBS)

run: $(BUILD)/particles
	./$(BUILD)/particles

gen:
	$(PYTHON) gen/gen.py $(GEN_ARGS)

check-gen:
	$(PYTHON) gen/gen.py $(GEN_ARGS)
	git diff --exit-code -- gpuos.h gpuos.c src/generated tests/generated

include tests/tests.mk
include tests/gpu/gpu.mk
include bench/bench.mk

# On a machine with a GPU: the whole suite against the CUDA backend (every op x dtype x rank
# x view case against NumPy, as on the host), then every device kernel against the host kernels.
.PHONY: test-gpu
test-gpu: all
	GPUOS_TEST_DEVICE=0 $(PYTHON) tests/run_tests.py --make "$(MAKE)" --build "$(BUILD)" c py -- $(PYTEST_ARGS)
	$(MAKE) test-gpu-dev

clean:
	rm -rf $(BUILD)
