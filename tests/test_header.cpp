// test_header.cpp - gpuos.h compiles as C++ (-Wall -Wextra -Werror), links with the library built
// as C (extern "C"), and runs: an f32 fma through a convenience function and through gpuos_submit.
#include "gpuos.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

static int passed, failed;

static void check(bool ok, const char *what) {
    if (ok) {
        passed++;
    } else {
        failed++;
        std::fprintf(stderr, "FAIL test_header.cpp: %s\n", what);
    }
}

// $GPUOS_TEST_DEVICE: host (default), auto, gpu or a CUDA ordinal
static int test_device() {
    const char *v = std::getenv("GPUOS_TEST_DEVICE");
    if (!v || !*v || std::strcmp(v, "host") == 0) return GPUOS_DEVICE_HOST;
    if (std::strcmp(v, "auto") == 0) return GPUOS_DEVICE_AUTO;
    if (std::strcmp(v, "gpu") == 0 || std::strcmp(v, "cuda") == 0) return 0;
    return std::atoi(v);
}

int main() {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_task task = GPUOS_TASK_INIT;
    check(cfg.struct_size == sizeof(gpuos_config), "GPUOS_CONFIG_INIT");
    check(task.op == GPUOS_OP_COUNT && task.axes == GPUOS_AXES_ALL, "GPUOS_TASK_INIT");
    check(gpuos_version() == GPUOS_VERSION_NUMBER, "gpuos_version");
    check(std::strcmp(gpuos_op_name(GPUOS_OP_LAYERNORM), "layernorm") == 0, "gpuos_op_name");
    check(gpuos_status_string(static_cast<gpuos_status>(999)) != nullptr, "gpuos_status_string of an unknown code");

    cfg.device = test_device();
    gpuos_context *ctx = nullptr;
    gpuos_status st = gpuos_create(&cfg, &ctx);
    check(st == GPUOS_OK, "gpuos_create");
    if (st == GPUOS_OK) {
        const int64_t shape[1] = {5};
        gpuos_tensor *x = nullptr, *v = nullptr, *dt = nullptr;
        check(gpuos_tensor_new(ctx, GPUOS_F32, 1, shape, &x) == GPUOS_OK, "new x");
        check(gpuos_tensor_new(ctx, GPUOS_F32, 1, shape, &v) == GPUOS_OK, "new v");
        check(gpuos_tensor_scalar(ctx, GPUOS_F32, 0.5, &dt) == GPUOS_OK, "scalar");
        float hx[5] = {1, 2, 3, 4, 5}, hv[5] = {2, 4, 6, 8, 10};
        check(gpuos_upload(ctx, x, hx, sizeof hx) == GPUOS_OK, "upload x");
        check(gpuos_upload(ctx, v, hv, sizeof hv) == GPUOS_OK, "upload v");
        check(gpuos_fma(ctx, x, v, dt, x) == GPUOS_OK, "gpuos_fma");  // x = v * 0.5 + x
        task.op = GPUOS_OP_FMA;
        task.out = x;
        task.in[0] = v;
        task.in[1] = dt;
        task.in[2] = x;
        uint64_t seq = 0;
        check(gpuos_submit(ctx, &task, &seq) == GPUOS_OK && seq > 0, "gpuos_submit");
        check(gpuos_wait_fence(ctx, seq, 5000) == GPUOS_OK, "gpuos_wait_fence");
        float got[5] = {0};
        check(gpuos_download(ctx, x, got, sizeof got) == GPUOS_OK, "download");
        for (int i = 0; i < 5; i++) check(got[i] == hx[i] + hv[i], "x = x + v (two fmas with 0.5)");
        gpuos_tensor_release(x);
        gpuos_tensor_release(v);
        gpuos_tensor_release(dt);
        gpuos_destroy(ctx);
    }
    std::printf("test_header_cpp: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
