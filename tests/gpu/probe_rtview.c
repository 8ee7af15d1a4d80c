/* probe_rtview.c - a run-time operator on a transposed view, for compute-sanitizer (not a test).
   Every tensor is allocated before the first task launches the persistent kernel: memcheck
   only knows the allocations that existed when a kernel was launched, so memory allocated
   while the persistent kernel runs is reported as out of bounds (seen with test_rtops). */
#include "../../gpuos.c"
#include <stdio.h>
int main(void) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    gpuos_context *ctx;
    gpuos_op_def d = GPUOS_OP_DEF_INIT;
    gpuos_op op;
    gpuos_task t = GPUOS_TASK_INIT;
    int64_t s2[2] = {37, 53}, st[2] = {53, 37}, s1[1] = {53};
    static float h[37 * 53], o[37 * 53];
    gpuos_tensor *at, *atv, *b, *out;
    int i;
    cfg.device = 0;
    if (gpuos_create(&cfg, &ctx)) { printf("%s\n", gpuos_last_error(NULL)); return 1; }
    d.name = "saxpy_relu";
    d.source = "float t = a * (float)s0 + b;\nout = t > 0.f ? t : 0.f;";
    d.n_inputs = 2;
    d.n_scalars = 1;
    if (gpuos_op_define(ctx, &d, &op)) { printf("%s\n", gpuos_last_error(ctx)); return 1; }
    for (i = 0; i < 37 * 53; i++) h[i] = (float)i;
    gpuos_tensor_new(ctx, GPUOS_F32, 2, st, &at);
    gpuos_upload(ctx, at, h, sizeof h);
    gpuos_tensor_new(ctx, GPUOS_F32, 1, s1, &b);
    gpuos_tensor_new(ctx, GPUOS_F32, 2, s2, &out);
    gpuos_fill(ctx, b, 1.0);
    gpuos_view_transpose(at, 0, 1, &atv);
    printf("at data %p bytes %zu; out %p; b %p\n", at->st->data, at->st->bytes, out->st->data, b->st->data);
    t.op = op; t.out = out; t.in[0] = atv; t.in[1] = b; t.scalar[0] = 1.0;
    gpuos_debug_pause(ctx, 1);
    printf("submit: %s\n", gpuos_status_string(gpuos_submit(ctx, &t, NULL)));
    {
        gpuos__job *j = ctx->ring[ctx->ring_head];
        const gpuos__ew_plan *p = &j->plan.ew;
        int q, k;
        printf("plan rank %d n_ptr %d numel %lld kernel %d\n", p->rank, p->n_ptr, (long long)p->numel, j->dev_kernel);
        for (q = 0; q < p->n_ptr; q++) {
            printf("  ptr[%d] %p strides", q, (void *)p->ptr[q]);
            for (k = 0; k < p->rank; k++) printf(" %lld", (long long)p->stride[q][k]);
            printf("\n");
        }
        for (k = 0; k < p->rank; k++) printf("  shape[%d] %lld\n", k, (long long)p->shape[k]);
    }
    gpuos_debug_pause(ctx, 0);
    printf("download: %s %s\n", gpuos_status_string(gpuos_download(ctx, out, o, sizeof o)), gpuos_last_error(ctx));
    printf("out[1][0] = %g (want %g)\n", o[53], h[1] + 1.0f);
    gpuos_destroy(ctx);
    return 0;
}
