/* test_rtlink.c - the run-time module's link, on the host: no GPU is needed, only NVRTC and
   nvJitLink (the library's own compile and link functions: gpuos.c is included). Every
   run-time operator version that holds a code slot is linked into one module with the
   run-time worker code (gpuos__cuda_rt_install). Full device functions
   (GPUOS_OPDEF_FUNCTION) whose sources define one external name - a helper `sq` in two
   operators, a __device__ variable K changed by a redefinition while the first version
   still holds its slot - collided there: nvJitLink printed "Multiple definition" and kept
   one definition without failing (an operator ran another's helper, a redefinition read
   the old K). Each source now has a namespace of its own (gpuos__rtns_<hash>): the link
   must keep both definitions of each name. extern "C" names escape namespaces: two
   objects that define one are found before the link (cuda_elf_dup; gpuos_op_define then
   fails with GPUOS_ERR_COMPILE), and objects without such a name are not. Where NVRTC or
   nvJitLink cannot be loaded the test says so and checks nothing (the GPU tests,
   test_rtops, run the operators). */
#include "../gpuos.c"

#include "ctest.h"

static struct gpuos__cuda C;
static gpuos_context *ctx;

static gpuos__rt_version *version(const char *name, const char *src) {
    gpuos__rt_version *v = (gpuos__rt_version *)calloc(1, sizeof *v);
    if (!v) return NULL;
    v->source = strdup(src);
    snprintf(v->name, sizeof v->name, "%s", name);
    v->kind = GPUOS_OPDEF_FUNCTION;
    v->n_in = 1;
    v->out_dtype = GPUOS_F32;
    v->in_dtype[0] = GPUOS_F32;
    strcpy(v->var[0], "out");
    strcpy(v->var[1], "a");
    v->ctx = ctx;
    if (cuda_rt_compile(ctx, &C, v, "") != GPUOS_OK) {
        CHECK(0, "compiling %s: %s", name, gpuos_last_error(ctx));
        return NULL;
    }
    return v;
}

/* Does the image hold the string s (a symbol name)? */
static int holds(const void *img, size_t n, const char *s) {
    const size_t L = strlen(s);
    const char *p = (const char *)img;
    size_t i;
    for (i = 0; i + L <= n; i++)
        if (p[i] == s[0] && memcmp(p + i, s, L) == 0) return 1;
    return 0;
}

static void freev(gpuos__rt_version *v) {
    if (!v) return;
    free((void *)v->source);
    free(v->obj);
    free(v);
}

/* Links the worker code with versions a and b, as gpuos__cuda_rt_install does, and checks
   that each keeps its own definition of `what` (its mangled name in namespace
   gpuos__rtns_<hash>: mangled_tail after the namespace). */
static void link_two(const char *case_name, gpuos__rt_version *a, gpuos__rt_version *b, const char *mangled_tail) {
    const void *im[3];
    size_t sz[3];
    int ty[3] = {GPUOS__NVJITLINK_INPUT_CUBIN, GPUOS__NVJITLINK_INPUT_CUBIN, GPUOS__NVJITLINK_INPUT_CUBIN};
    const char *lo[1];
    char larch[32], sym[128];
    void *cubin = NULL;
    size_t cs = 0;
    char *log = NULL;
    gpuos_status st;
    int k;
    if (!a || !b) return;
    CHECK(a->hash != b->hash, "%s: two sources, two hashes", case_name);
    im[0] = C.rtw_img, sz[0] = C.rtw_size;
    im[1] = a->obj, sz[1] = a->obj_size;
    im[2] = b->obj, sz[2] = b->obj_size;
    snprintf(larch, sizeof larch, "-arch=sm_%d%d", C.cc_major, C.cc_minor);
    lo[0] = larch;
    st = gpuos__nvjitlink_link(ctx, lo, 1, im, sz, ty, 3, &cubin, &cs, &log);
    CHECK(st == GPUOS_OK, "%s: link: %s %s", case_name, gpuos_status_string(st), log ? log : "");
    for (k = 1; k < 3; k++) { /* no name defined twice: what gpuos__cuda_rt_install checks first */
        int j;
        for (j = 0; j < k; j++)
            CHECK(!cuda_elf_dup(im[j], sz[j], im[k], sz[k], sym, sizeof sym), "%s: objects %d and %d both define %s",
                  case_name, j, k, sym);
    }
    for (k = 0; k < 2 && cubin; k++) {
        const gpuos__rt_version *v = k ? b : a;
        snprintf(sym, sizeof sym, "_ZN28gpuos__rtns_%016llx%s", (unsigned long long)v->hash, mangled_tail);
        CHECK(holds(cubin, cs, sym), "%s: version %d's own definition (%s) is in the module", case_name, k + 1, sym);
    }
    free(cubin);
    free(log);
}

/* Objects a and b both define the extern "C" name want: cuda_elf_dup must find it (before any
   link: gpuos__cuda_rt_install refuses the definition), and the worker code shares no name
   with b. */
static void expect_dup(const char *case_name, gpuos__rt_version *a, gpuos__rt_version *b, const char *want) {
    char sym[128] = "";
    if (!a || !b) return;
    CHECK(cuda_elf_dup(a->obj, a->obj_size, b->obj, b->obj_size, sym, sizeof sym) && strcmp(sym, want) == 0,
          "%s in two objects is found ('%s')", case_name, sym);
    CHECK(!cuda_elf_dup(C.rtw_img, C.rtw_size, b->obj, b->obj_size, sym, sizeof sym),
          "the worker code shares no name with an operator (%s)", sym);
}

#define RT_FN(name, expr)                                                         \
    "__device__ void " name "(const gpuos_tile &t) {\n"                           \
    "    for (long long i = t.begin + threadIdx.x; i < t.end; i += blockDim.x)\n" \
    "        *(float *)t.ptr(0, i) = " expr ";\n}\n"

int main(void) {
    gpuos_config cfg = GPUOS_CONFIG_INIT;
    static const char *opts[] = {"--gpu-architecture=sm_90", "-default-device", "--std=c++17", "-rdc=true",
                                 "--maxrregcount=128"};
    char why[512];
    int i;
    gpuos__rt_version *a, *b;
    (void)ctest_device; /* (ctest.h's; this test runs no executor) */
    if (!gpuos__nvrtc_load(why, sizeof why) || !gpuos__nvjitlink_load(why, sizeof why)) {
        printf("test_rtlink: SKIPPED, nothing checked: %s\n", why);
        return ctest_summary("test_rtlink");
    }
    cfg.device = GPUOS_DEVICE_HOST;
    if (gpuos_create(&cfg, &ctx) != GPUOS_OK) {
        fprintf(stderr, "test_rtlink: %s\n", gpuos_last_error(NULL));
        return 1;
    }
    /* the state gpuos__cuda_rt_install finds after gpuos_create on an H100 (cuda_build_module) */
    C.cc_major = 9, C.cc_minor = 0, C.n_parts = 8, C.base_key = 0x7465737472746c6bull;
    for (i = 0; i < 5; i++) C.opt_store[C.n_opt_store++] = strdup(opts[i]);
    CHECK(cuda_rt_worker(ctx, &C, "") == GPUOS_OK, "the run-time worker code: %s", gpuos_last_error(ctx));
    if (C.rtw_img) {
        /* two operators, a helper of one name each */
        a = version("fsq", "__device__ __noinline__ float sq(float x) { return x * x; }\n" RT_FN("fsq", "sq(3.0f)"));
        b = version("gsq", "__device__ __noinline__ float sq(float x) { return x * x + 1.0f; }\n" RT_FN("gsq", "sq(3.0f)"));
        link_two("helper sq in two operators", a, b, "2sqEf");
        freev(a), freev(b);
        /* an operator and its redefinition, both in slots: a variable of one name */
        a = version("kvar", "__device__ float K = 1.5f;\n" RT_FN("kvar", "K"));
        b = version("kvar", "__device__ float K = 7.5f;\n" RT_FN("kvar", "K"));
        link_two("__device__ K across a redefinition", a, b, "1KE");
        freev(a), freev(b);
        /* the function itself, redefined (both versions in slots) */
        a = version("f", "__noinline__ " RT_FN("f", "1.0f"));
        b = version("f", "__noinline__ " RT_FN("f", "2.0f"));
        link_two("the function f across a redefinition", a, b, "1fERK10gpuos_tile");
        freev(a), freev(b);
        /* an extern "C" name in two sources: found before any link */
        a = version("xa", "extern \"C\" __device__ float gpuos_test_shared = 1.5f;\n" RT_FN("xa", "gpuos_test_shared"));
        b = version("xb", "extern \"C\" __device__ float gpuos_test_shared = 7.5f;\n" RT_FN("xb", "gpuos_test_shared"));
        expect_dup("an extern \"C\" variable", a, b, "gpuos_test_shared");
        freev(a), freev(b);
        /* an extern "C" inline function in two sources: a weak symbol in each, found too */
        a = version("wa", "extern \"C\" __device__ __noinline__ inline float gpuos_test_hw(float x) { return x; }\n"
                          RT_FN("wa", "gpuos_test_hw(1.0f)"));
        b = version("wb", "extern \"C\" __device__ __noinline__ inline float gpuos_test_hw(float x) { return x + 1.0f; }\n"
                          RT_FN("wb", "gpuos_test_hw(1.0f)"));
        expect_dup("an extern \"C\" inline function", a, b, "gpuos_test_hw");
        freev(a), freev(b);
    }
    for (i = 0; i < C.n_opt_store; i++) free(C.opt_store[i]);
    free(C.rtw_img);
    gpuos_destroy(ctx);
    return ctest_summary("test_rtlink");
}
