/* devcheck_kernels.cu - the generated device source compiled by nvcc, and a launcher for
   tests/gpu/devcheck.cu. A translation unit of its own: the device source defines
   device functions (gpuos__f16_to_f32, ...) under the names the host library uses. */
#include "../../src/generated/gpuos_device.cu"

/* Launches gpuos__d_test_kernel; returns the cudaError_t of the launch. */
extern "C" int devcheck_launch(int kernel_id, const void *dplan, int64_t n_items, int64_t items_per_block,
                               int grid, int block) {
    gpuos__d_test_kernel<<<grid, block>>>(kernel_id, dplan, n_items, items_per_block);
    return (int)cudaGetLastError();
}

/* The largest block gpuos__d_test_kernel can be launched with (its registers decide);
   *regs: its registers per thread. */
extern "C" int devcheck_max_threads(int *regs) {
    cudaFuncAttributes a;
    if (cudaFuncGetAttributes(&a, gpuos__d_test_kernel) != cudaSuccess) return 0;
    *regs = a.numRegs;
    return a.maxThreadsPerBlock;
}
