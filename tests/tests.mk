# tests/tests.mk - the test suite, included by the Makefile.
#   make test      every part below; the last line is "N passed, N failed"; exits nonzero on a failure
#   make test-c    the C parts: gpuos.h as strict C99 and as C++, the 8-thread test
#   make test-py   the pytest suite (operators against NumPy, errors, queue, NVRTC)
# Knobs: PYTEST_ARGS="-k add -x" narrows pytest; GPUOS_TEST_SEED=N reruns with the same inputs;
# GPUOS_TEST_DEVICE=0 runs on a GPU; GPUOS_TEST_ALLOW_NO_NVRTC=1 turns a missing NVRTC into a skip.
TEST_BUILD     := $(BUILD)/tests
TEST_C_STRICT  := -std=c99 -Wall -Wextra -Werror -pedantic
TEST_CXX_STRICT := -Wall -Wextra -Werror
TEST_BINS      := $(TEST_BUILD)/test_header_c $(TEST_BUILD)/test_header_cpp $(TEST_BUILD)/test_threads \
                  $(TEST_BUILD)/test_order_stress $(TEST_BUILD)/test_expr $(TEST_BUILD)/test_rtops \
                  $(TEST_BUILD)/test_graph $(TEST_BUILD)/test_priority $(TEST_BUILD)/test_runs \
                  $(TEST_BUILD)/test_repeat $(TEST_BUILD)/test_fuse $(TEST_BUILD)/test_cudalog $(TEST_BUILD)/test_rtlink $(TEST_BUILD)/test_gate $(TEST_BUILD)/test_contexts $(TEST_BUILD)/test_slices $(TEST_BUILD)/test_semantics \
                  $(TEST_BUILD)/test_express
PYTEST_ARGS    ?=

$(TEST_BUILD):
	mkdir -p $(TEST_BUILD)

# gpuos.h compiled as strict C99 and as C++, then linked with the library and run.
$(TEST_BUILD)/test_header_c: tests/test_header.c tests/ctest.h gpuos.h $(BUILD)/gpuos.o | $(TEST_BUILD)
	$(CC) $(TEST_C_STRICT) $(CFLAGS) -I. tests/test_header.c $(BUILD)/gpuos.o -o $@ $(LDLIBS)

$(TEST_BUILD)/test_header_cpp: tests/test_header.cpp gpuos.h $(BUILD)/gpuos.o | $(TEST_BUILD)
	$(CXX) $(TEST_CXX_STRICT) $(CFLAGS) -I. tests/test_header.cpp $(BUILD)/gpuos.o -o $@ $(LDLIBS)

$(TEST_BUILD)/test_threads: tests/test_threads.c tests/ctest.h gpuos.h $(BUILD)/gpuos.o | $(TEST_BUILD)
	$(CC) -std=c99 $(WARN) -Werror $(CFLAGS) -I. tests/test_threads.c $(BUILD)/gpuos.o -o $@ $(LDLIBS)

$(TEST_BUILD)/test_order_stress: tests/test_order_stress.c tests/ctest.h gpuos.h $(BUILD)/gpuos.o | $(TEST_BUILD)
	$(CC) -std=c99 $(WARN) -Werror $(CFLAGS) -I. tests/test_order_stress.c $(BUILD)/gpuos.o -o $@ $(LDLIBS)

# Run-time operators: define, redefine, remove, on the device the tests run on.
$(TEST_BUILD)/test_rtops: tests/test_rtops.c tests/ctest.h gpuos.h src/generated/gpuos_dtypes.h $(BUILD)/gpuos.o | $(TEST_BUILD)
	$(CC) -std=c99 $(WARN) -Werror $(CFLAGS) -I. tests/test_rtops.c $(BUILD)/gpuos.o -o $@ $(LDLIBS)

# Recorded graphs: launches against eager submission, bindings, dependencies.
$(TEST_BUILD)/test_graph: tests/test_graph.c tests/ctest.h gpuos.h $(BUILD)/gpuos.o | $(TEST_BUILD)
	$(CC) -std=c99 $(WARN) -Werror $(CFLAGS) -I. tests/test_graph.c $(BUILD)/gpuos.o -o $@ $(LDLIBS) -lm

# Priorities: high-priority work overtakes normal work, program order kept, random programs.
$(TEST_BUILD)/test_priority: tests/test_priority.c tests/ctest.h gpuos.h $(BUILD)/gpuos.o | $(TEST_BUILD)
	$(CC) -std=c99 $(WARN) -Werror $(CFLAGS) -I. tests/test_priority.c $(BUILD)/gpuos.o -o $@ $(LDLIBS)

# Runs of identical in-place tasks: one task at a time, back to back and as a graph agree bit for bit.
$(TEST_BUILD)/test_runs: tests/test_runs.c tests/ctest.h gpuos.h $(BUILD)/gpuos.o | $(TEST_BUILD)
	$(CC) -std=c99 $(WARN) -Werror $(CFLAGS) -I. tests/test_runs.c $(BUILD)/gpuos.o -o $@ $(LDLIBS) -lm

# Repeated submissions (the job of an identical recent task copied): every change is seen.
$(TEST_BUILD)/test_repeat: tests/test_repeat.c tests/ctest.h gpuos.h $(BUILD)/gpuos.o | $(TEST_BUILD)
	$(CC) -std=c99 $(WARN) -Werror $(CFLAGS) -I. tests/test_repeat.c $(BUILD)/gpuos.o -o $@ $(LDLIBS)

# The interpreter of element-wise bodies (src/expr.c, on its own) against the C compiler.
$(TEST_BUILD)/test_expr: tests/test_expr.c tests/ctest.h src/expr.c src/expr.h | $(TEST_BUILD)
	$(CC) -std=c99 $(WARN) -Werror $(CFLAGS) -I. -Isrc tests/test_expr.c src/expr.c -o $@ -lm

# tests/run_tests.py builds each part with $(MAKE) (a part that does not build counts as failed),
# runs it, prints one line per part and then the total.
test:
	@$(PYTHON) tests/run_tests.py --make "$(MAKE)" --build "$(BUILD)" c py -- $(PYTEST_ARGS)

test-c:
	@$(PYTHON) tests/run_tests.py --make "$(MAKE)" --build "$(BUILD)" c

test-py:
	@$(PYTHON) tests/run_tests.py --make "$(MAKE)" --build "$(BUILD)" py -- $(PYTEST_ARGS)

# Matmul epilogues fused by recorded graphs: fused launches equal eager tasks bit for bit.
$(TEST_BUILD)/test_fuse: tests/test_fuse.c tests/ctest.h gpuos.h $(BUILD)/gpuos.o | $(TEST_BUILD)
	$(CC) -std=c99 $(WARN) -Werror $(CFLAGS) -I. tests/test_fuse.c $(BUILD)/gpuos.o -o $@ $(LDLIBS)

# The CUDA backend's storage logs and repeated encodings, on the host (gpuos.c included: no GPU).
$(TEST_BUILD)/test_cudalog: tests/test_cudalog.c tests/ctest.h gpuos.h gpuos.c | $(TEST_BUILD)
	$(CC) -std=c99 $(WARN) $(CFLAGS) -I. tests/test_cudalog.c -o $@ $(LDLIBS)

# the run-time module's link with NVRTC and nvJitLink, no GPU (includes gpuos.c)
$(TEST_BUILD)/test_rtlink: tests/test_rtlink.c tests/ctest.h gpuos.h gpuos.c | $(TEST_BUILD)
	$(CC) -std=c99 $(WARN) $(CFLAGS) -I. tests/test_rtlink.c -o $@ $(LDLIBS)

$(TEST_BUILD)/test_gate: tests/test_gate.c tests/ctest.h gpuos.h gpuos.c | $(TEST_BUILD)
	$(CC) -std=c99 $(WARN) $(CFLAGS) -I. tests/test_gate.c -o $@ $(LDLIBS)

# Several contexts on one device at once, each on its own thread (the device gate on a GPU).
$(TEST_BUILD)/test_contexts: tests/test_contexts.c tests/ctest.h gpuos.h $(BUILD)/gpuos.o | $(TEST_BUILD)
	$(CC) -std=c99 $(WARN) -Werror $(CFLAGS) -I. tests/test_contexts.c $(BUILD)/gpuos.o -o $@ $(LDLIBS)

# Small tasks on parts of what a large task just wrote (on a GPU: one-tile tasks placed on the
# worker of the producer's tile).
# Express tasks: small tasks sent while the device is idle, and what follows them.
$(TEST_BUILD)/test_express: tests/test_express.c tests/ctest.h gpuos.h $(BUILD)/gpuos.o | $(TEST_BUILD)
	$(CC) -std=c99 $(WARN) -Werror $(CFLAGS) -I. tests/test_express.c $(BUILD)/gpuos.o -o $@ $(LDLIBS)

$(TEST_BUILD)/test_slices: tests/test_slices.c tests/ctest.h gpuos.h $(BUILD)/gpuos.o | $(TEST_BUILD)
	$(CC) -std=c99 $(WARN) -Werror $(CFLAGS) -I. tests/test_slices.c $(BUILD)/gpuos.o -o $@ $(LDLIBS)

# Promises of the manual a new user's programs found broken: interleaved views, a
# high-priority graph launch as one unit, node deadlines, calls after gpuos_destroy.
$(TEST_BUILD)/test_semantics: tests/test_semantics.c tests/ctest.h gpuos.h $(BUILD)/gpuos.o | $(TEST_BUILD)
	$(CC) -std=c99 $(WARN) -Werror $(CFLAGS) -I. tests/test_semantics.c $(BUILD)/gpuos.o -o $@ $(LDLIBS)
