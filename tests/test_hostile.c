/* Hostile input: one regression test per defect an audit found (files
   crafted to overflow counts, truncated headers, absurd sizes, outputs of
   another context), each named for the behaviour it pins down. The fuzzers
   in tests/fuzz/ and the out-of-memory sweep in test_oom.c cover the same
   ground at random; these are the cases that once went wrong. */
#include "gaia_test.h"
#include <stdlib.h>
#include <stdio.h>

/* ---- a brain image written by hand (format version 1, see gaia.h) ---- */
typedef struct img {
    unsigned char b[1 << 16];
    size_t n;
} img;

static void img_bytes(img *m, const void *p, size_t n) {
    if (m->n + n <= sizeof m->b) memcpy(m->b + m->n, p, n);
    m->n += n;
}
static void img_u32(img *m, uint32_t v) {
    unsigned char c[4];
    int i;
    for (i = 0; i < 4; i++) c[i] = (unsigned char)(v >> (8 * i));
    img_bytes(m, c, 4);
}
static void img_u64(img *m, uint64_t v) {
    img_u32(m, (uint32_t)v);
    img_u32(m, (uint32_t)(v >> 32));
}
static void img_f32(img *m, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    img_u32(m, u);
}
static void img_f64(img *m, double f) {
    uint64_t u;
    memcpy(&u, &f, 8);
    img_u64(m, u);
}
static void img_name(img *m, const char *s) {
    img_u32(m, (uint32_t)strlen(s));
    img_bytes(m, s, strlen(s));
}
/* Header and the brain's scalars: p, seed, steps, lazy stream, plastic. */
static void img_begin(img *m, double p) {
    m->n = 0;
    img_bytes(m, "GAIABRN", 8);
    img_u32(m, 1);
    img_u32(m, 0);
    img_u64(m, 0); /* payload length, filled by img_end */
    img_u64(m, 0); /* checksum */
    img_f64(m, p);
    img_u64(m, 42);
    img_u64(m, 0);
    img_u64(m, 0);
    img_u32(m, 1);
}
/* An area record up to and including its winners (none). */
static void img_area_head(img *m, const char *name, uint32_t n, uint32_t k, uint32_t mode) {
    img_name(m, name);
    img_u32(m, n);
    img_u32(m, k);
    img_f32(m, 0.1f);
    img_u32(m, mode);
    img_u32(m, 0);  /* fixed */
    img_u64(m, 0);  /* support */
    img_u32(m, 0);  /* winners */
}
/* Payload length and FNV-1a checksum, so only the parser can object. */
static void img_end(img *m) {
    uint64_t len = m->n - 32, h = 0xCBF29CE484222325ull;
    size_t i;
    for (i = 32; i < m->n; i++) h = (h ^ m->b[i]) * 0x100000001B3ull;
    for (i = 0; i < 8; i++) {
        m->b[16 + i] = (unsigned char)(len >> (8 * i));
        m->b[24 + i] = (unsigned char)(h >> (8 * i));
    }
}

/* The image loaded from an exactly-sized heap copy (so a sanitizer sees any
   read past its end); returns the status, frees what was loaded. */
static gaia_status load_exact(gt *t, const img *m) {
    unsigned char *copy = (unsigned char *)malloc(m->n);
    gaia_brain *b = NULL;
    gaia_status st;
    memcpy(copy, m->b, m->n);
    st = gaia_brain_load_image(t->ctx, copy, m->n, GAIA_DEVICE_CPU, &b);
    free(copy);
    gaia_brain_destroy(b);
    return st;
}

static void brain_image_counts_that_wrap_when_multiplied_are_rejected(gt *t) {
    img *m = (img *)malloc(sizeof *m);
    int which;
    GT_CHECK(t, m != NULL, "no memory");
    for (which = 0; which < 4; which++) {
        gaia_status st;
        img_begin(m, 0.1);
        img_u32(m, 0); /* stimuli */
        img_u32(m, 1); /* areas */
        img_area_head(m, "A", 64, 4, GAIA_AREA_EXPLICIT);
        /* history count: 2^61 + 1 entries of 8 bytes wrap to 8 */
        img_u64(m, which == 0 ? ((uint64_t)1 << 61) + 1 : 0);
        if (which == 0) img_u64(m, 0);
        /* stored assemblies: 2^62 + 1 of >= 4 bytes wrap to 4 */
        img_u64(m, which == 1 ? ((uint64_t)1 << 62) + 1 : 0);
        if (which == 1) img_u32(m, 0);
        img_u32(m, 0);
        img_u32(m, 0); /* the 64 support bits */
        img_u32(m, which >= 2 ? 1 : 0);
        if (which >= 2) {
            /* a learned-weight count whose 12-byte records wrap to 8, or
               whose doubled table size wraps (the capacity x 8 product) */
            uint64_t count = which == 2 ? 0x1555555555555556ull : ((uint64_t)1 << 63) + 1;
            img_u32(m, 0);
            img_u32(m, 0);
            img_u32(m, 0);
            img_f32(m, 0.0f);
            img_u64(m, count);
            img_u64(m, 1);
            img_u32(m, 0);
        }
        img_end(m);
        st = load_exact(t, m);
        GT_CHECK(t, st == GAIA_ERR_FORMAT, "case %d: %s (%s)", which, gaia_status_str(st), gaia_last_error(t->ctx));
    }
    free(m);
}

static void brain_image_too_short_for_its_area_allocates_nothing_large(gt *t) {
    img *m = (img *)malloc(sizeof *m);
    gt_heap h;
    gaia_ctx *ctx = NULL;
    gaia_brain *b = NULL;
    GT_CHECK(t, m != NULL, "no memory");
    img_begin(m, 0.1);
    img_u32(m, 0);
    img_u32(m, 1);
    img_area_head(m, "A", 2147483647u, 1, GAIA_AREA_EXPLICIT); /* 256 MiB of support bits promised */
    img_u64(m, 0);
    img_u64(m, 0);
    img_end(m);
    GT_OK(t, gt_heap_ctx(&h, GAIA_DEVICE_CPU, &ctx));
    GT_STATUS(t, GAIA_ERR_FORMAT, gaia_brain_load_image(ctx, m->b, m->n, GAIA_DEVICE_CPU, &b));
    GT_CHECK(t, b == NULL, "no brain on failure");
    GT_CHECK(t, h.peak < ((size_t)8 << 20), "a %zu-byte image made gaia hold %zu bytes", m->n, h.peak);
    gaia_ctx_destroy(ctx);
    GT_CHECK(t, h.live == 0, "%ld blocks leaked", h.live);
    free(m);
}

static void loaded_brain_stays_within_the_load_limit(gt *t) {
    gaia_brain *b = NULL, *c = NULL, *keep;
    gaia_ctx_desc desc;
    gaia_ctx *small = NULL;
    void *im = NULL;
    size_t size = 0, host = 0;
    GT_OK(t, gaia_brain_create(t->ctx, 0.05, t->seed, GAIA_DEVICE_CPU, &b));
    GT_OK(t, gaia_brain_add_stimulus(b, "s", 40));
    GT_OK(t, gaia_brain_add_area(b, "A", 200000, 40, 0.1f, GAIA_AREA_EXPLICIT)); /* ~2 MB of inputs */
    GT_OK(t, gaia_brain_project_spec(b, "s>A"));
    GT_OK(t, gaia_brain_save_image(b, &im, &size));
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CPU;
    desc.load_limit = 1 << 20;
    desc.logger.func = gt_log_capture;
    GT_OK(t, gaia_ctx_create(&desc, &small));
    keep = c = b; /* an existing handle must survive the failure */
    GT_STATUS(t, GAIA_ERR_OUT_OF_MEMORY, gaia_brain_load_image(small, im, size, GAIA_DEVICE_CPU, &c));
    GT_CHECK(t, c == keep, "a failed load overwrote *out");
    GT_CHECK(t, strstr(gaia_last_error(small), "1048576"), "the message names the limit: %s", gaia_last_error(small));
    c = NULL;
    GT_OK(t, gaia_brain_load_image(t->ctx, im, size, GAIA_DEVICE_CPU, &c));
    /* a brain's own limit: the next step would pass it */
    GT_OK(t, gaia_brain_memory(c, &host, NULL));
    GT_OK(t, gaia_brain_set_memory_limit(c, host));
    GT_STATUS(t, GAIA_ERR_OUT_OF_MEMORY, gaia_brain_project_spec(c, "s>A A>A"));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "memory limit"), "message: %s", gaia_last_error(t->ctx));
    GT_OK(t, gaia_brain_set_memory_limit(c, 0));
    GT_OK(t, gaia_brain_project_spec(c, "s>A A>A"));
    gaia_brain_free_image(t->ctx, im);
    gaia_brain_destroy(b);
    gaia_brain_destroy(c);
    gaia_ctx_destroy(small);
}

static void brain_load_out_of_memory_is_never_a_format_error(gt *t) {
    gaia_brain *b = NULL;
    void *im = NULL;
    size_t size = 0;
    long k, calls;
    gt_heap h;
    gaia_ctx *ctx = NULL;
    int m, oom = 0;
    for (m = 0; m < 2; m++) {
        GT_OK(t, gaia_brain_create(t->ctx, 0.05, t->seed, GAIA_DEVICE_CPU, &b));
        GT_OK(t, gaia_brain_add_stimulus(b, "s", 30));
        GT_OK(t, gaia_brain_add_area(b, "A", 3000, 30, 0.1f, m ? GAIA_AREA_LAZY : GAIA_AREA_EXPLICIT));
        GT_OK(t, gaia_brain_add_area(b, "B", 3000, 30, 0.1f, m ? GAIA_AREA_LAZY : GAIA_AREA_EXPLICIT));
        GT_OK(t, gaia_brain_project_spec(b, "s>A"));
        GT_OK(t, gaia_brain_project_spec(b, "s>A A>A A>B"));
        GT_OK(t, gaia_brain_store_assembly(b, "A", NULL));
        GT_OK(t, gaia_brain_save_image(b, &im, &size));
        gaia_brain_destroy(b);
        b = NULL;
        GT_OK(t, gt_heap_ctx(&h, GAIA_DEVICE_CPU, &ctx));
        GT_OK(t, gaia_brain_load_image(ctx, im, size, GAIA_DEVICE_CPU, &b));
        calls = h.calls;
        gaia_brain_destroy(b);
        for (k = 1; k <= calls; k++) {
            gaia_brain *c = NULL, *d = NULL;
            gaia_status st;
            h.calls = 0;
            gt_heap_fail_in(&h, k);
            st = gaia_brain_load_image(ctx, im, size, GAIA_DEVICE_CPU, &c);
            gt_heap_fail_in(&h, 0);
            GT_CHECK(t, st == GAIA_OK || st == GAIA_ERR_OUT_OF_MEMORY, "mode %d, allocation %ld of %ld: %s (%s)", m, k,
                     calls, gaia_status_str(st), gaia_last_error(ctx));
            oom += st != GAIA_OK;
            if (c) {
                /* a clone short of memory says so too */
                gt_heap_fail_in(&h, 1 + (long)(gt_u64(t) % 40));
                st = gaia_brain_clone(c, &d);
                gt_heap_fail_in(&h, 0);
                GT_CHECK(t, st == GAIA_OK || st == GAIA_ERR_OUT_OF_MEMORY, "clone: %s (%s)", gaia_status_str(st),
                         gaia_last_error(ctx));
            }
            gaia_brain_destroy(c);
            gaia_brain_destroy(d);
        }
        gaia_ctx_destroy(ctx);
        GT_CHECK(t, h.live == 0, "mode %d: %ld blocks leaked", m, h.live);
        gaia_brain_free_image(t->ctx, im);
    }
    GT_CHECK(t, oom > 0, "no allocation failed");
}

static void connection_probability_below_2_to_minus_32_is_rejected(gt *t) {
    gaia_brain *b = NULL;
    img *m = (img *)malloc(sizeof *m);
    GT_CHECK(t, m != NULL, "no memory");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_create(t->ctx, 1e-12, 1, GAIA_DEVICE_CPU, &b));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "1e-12"), "the message names p: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_create(t->ctx, 1e-300, 1, GAIA_DEVICE_CPU, &b));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_create(t->ctx, NAN, 1, GAIA_DEVICE_CPU, &b));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_create(t->ctx, 0.0, 1, GAIA_DEVICE_CPU, &b));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_brain_create(t->ctx, 1.0000001, 1, GAIA_DEVICE_CPU, &b));
    img_begin(m, 1e-20);
    img_u32(m, 0);
    img_u32(m, 0);
    img_u32(m, 0);
    img_end(m);
    GT_STATUS(t, GAIA_ERR_FORMAT, load_exact(t, m));
    free(m);
}

/* At the smallest p a base synapse is a one-in-4e9 event, yet every source
   still walks every target segment: the walk must stop at each segment's
   end instead of drawing the whole (astronomical) skip. */
static void smallest_connection_probability_steps_in_bounded_time(gt *t) {
    gaia_brain *b = NULL;
    size_t s0 = 0, n = 0;
    uint32_t w[64];
    double t0 = gaia_time_s();
    int mode;
    for (mode = 0; mode < 2; mode++) {
        GT_OK(t, gaia_brain_create(t->ctx, GAIA_BRAIN_P_MIN, t->seed, GAIA_DEVICE_CPU, &b));
        GT_OK(t, gaia_brain_add_stimulus(b, "s", 64));
        GT_OK(t, gaia_brain_add_area(b, "A", 1000000, 64, 0.1f, mode ? GAIA_AREA_LAZY : GAIA_AREA_EXPLICIT));
        GT_OK(t, gaia_brain_project_spec(b, "s>A"));
        GT_OK(t, gaia_brain_project_spec(b, "s>A A>A"));
        GT_OK(t, gaia_brain_project_spec(b, "s>A A>A"));
        GT_OK(t, gaia_brain_support(b, "A", &s0));
        GT_OK(t, gaia_brain_winners(b, "A", w, 64, &n));
        GT_CHECK(t, n == 64 && s0 >= 64, "mode %d: %zu winners, support %zu", mode, n, s0);
        gaia_brain_destroy(b);
        b = NULL;
    }
    /* a hang shows up here as minutes; a healthy run takes well under one */
    GT_CHECK(t, gaia_time_s() - t0 < 120.0, "six steps at p = 2^-32 took %.1f s", gaia_time_s() - t0);
}

static void npy_header_ending_inside_the_shape_is_rejected_without_overread(gt *t) {
    static const char *heads[] = {
        "{'descr': '<f4', 'fortran_order': False, 'shape':",
        "{'descr': '<f4', 'fortran_order': False, 'shape': ",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3,",
    };
    size_t i;
    for (i = 0; i < sizeof heads / sizeof heads[0]; i++) {
        size_t hl = strlen(heads[i]), n = 10 + hl;
        unsigned char *buf = (unsigned char *)malloc(n); /* exactly: nothing to read past */
        gaia_tensor *x = NULL;
        memcpy(buf, "\x93NUMPY\x01\x00", 8);
        buf[8] = (unsigned char)hl;
        buf[9] = 0;
        memcpy(buf + 10, heads[i], hl);
        GT_STATUS(t, GAIA_ERR_FORMAT, gaia_npy_parse(t->ctx, buf, n, &x));
        GT_CHECK(t, x == NULL, "no tensor on failure");
        free(buf);
    }
}

static void sgemm_rejects_matrices_past_the_address_space(gt *t) {
    float A[4] = {1, 2, 3, 4}, C[4] = {0, 0, 0, 0};
    size_t big = (size_t)-1 / 2;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_sgemm(t->ctx, 0, 0, big, 2, 2, 1.0f, A, 2, A, 2, 0.0f, C, 2));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_sgemm"), "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_sgemm(t->ctx, 0, 0, 2, 2, 2, 1.0f, A, big, A, 2, 0.0f, C, 2));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_sgemm(t->ctx, 1, 1, 2, big, 2, 1.0f, A, 2, A, 2, 0.0f, C, big));
    GT_CHECK(t, C[0] == 0 && C[3] == 0, "C was written");
}

static void absurd_thread_counts_are_rejected(gt *t) {
    gaia_ctx_desc desc;
    gaia_ctx *ctx = NULL;
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CPU;
    desc.cpu_threads = 100000;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_ctx_create(&desc, &ctx));
    GT_CHECK(t, ctx == NULL && strstr(gaia_last_error(NULL), "100000"), "message: %s", gaia_last_error(NULL));
    desc.cpu_threads = GAIA_MAX_THREADS + 1;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_ctx_create(&desc, &ctx));
    desc.cpu_threads = -1;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_ctx_create(&desc, &ctx));
    desc.cpu_threads = 2;
    GT_OK(t, gaia_ctx_create(&desc, &ctx));
    gaia_ctx_destroy(ctx);
}

/* The one message outside any context (why a creation failed) is written
   only by a failing gaia_ctx_create: a successful one in another thread
   must not race with a reader. */
static void successful_context_creation_writes_no_shared_state(gt *t) {
    gaia_ctx_desc desc;
    gaia_ctx *ctx = NULL;
    char before[512];
    memset(&desc, 0, sizeof desc);
    desc.device = (gaia_device)77;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_ctx_create(&desc, &ctx));
    snprintf(before, sizeof before, "%s", gaia_last_error(NULL));
    GT_CHECK(t, strstr(before, "77"), "message: %s", before);
    desc.device = GAIA_DEVICE_CPU;
    GT_OK(t, gaia_ctx_create(&desc, &ctx));
    GT_CHECK(t, strcmp(before, gaia_last_error(NULL)) == 0, "a successful creation rewrote the message");
    gaia_ctx_destroy(ctx);
}

static void output_tensor_of_another_context_is_rejected_untouched(gt *t) {
    gaia_ctx_desc desc;
    gaia_ctx *other = NULL;
    gaia_tensor *a = NULL, *theirs = NULL;
    size_t shape[1] = {8};
    float v[8] = {0};
    memset(&desc, 0, sizeof desc);
    desc.device = GAIA_DEVICE_CPU;
    GT_OK(t, gaia_ctx_create(&desc, &other));
    GT_OK(t, gaia_device_push(t->ctx, GAIA_DEVICE_CPU));
    GT_OK(t, gaia_tensor_full(t->ctx, 1, shape, 2.0f, &a));
    GT_OK(t, gaia_tensor_full(other, 1, shape, 7.0f, &theirs));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_add(t->ctx, a, a, &theirs));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "another context"), "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_full(t->ctx, 1, shape, 1.0f, &theirs));
    GT_OK(t, gaia_tensor_to_host(other, theirs, v, 8));
    GT_CHECK(t, v[0] == 7.0f && v[7] == 7.0f, "the other context's tensor now holds %g", (double)v[0]);
    gaia_tensor_free(a);
    gaia_tensor_free(theirs);
    gaia_ctx_destroy(other);
}

static void codebook_names_with_nul_or_control_bytes_are_rejected(gt *t) {
    static const char good[] = "red\ngreen\nblue\n";
    static const char nul[] = "red\ngre\0en\nblue\n";
    static const char ctrl[] = "red\ngr\x01en\nblue\n";
    static const char empty[] = "red\n\nblue\n";
    static const char extra[] = "red\ngreen\nblue\nviolet\n";
    gaia_tensor *v = NULL;
    gaia_hrr_codebook *cb = NULL;
    void *npy = NULL;
    size_t size = 0;
    GT_OK(t, gaia_hrr_random(t->ctx, 3, 16, 0, &v));
    GT_OK(t, gaia_npy_image(t->ctx, v, &npy, &size));
    GT_OK(t, gaia_hrr_codebook_parse(t->ctx, npy, size, good, sizeof good - 1, &cb));
    GT_CHECK(t, gaia_hrr_codebook_size(cb) == 3 && strcmp(gaia_hrr_codebook_name(cb, 1), "green") == 0, "parsed");
    gaia_hrr_codebook_free(cb);
    cb = NULL;
    GT_OK(t, gaia_hrr_codebook_parse(t->ctx, npy, size, good, sizeof good - 2, &cb)); /* no final newline */
    gaia_hrr_codebook_free(cb);
    cb = NULL;
    GT_STATUS(t, GAIA_ERR_FORMAT, gaia_hrr_codebook_parse(t->ctx, npy, size, nul, sizeof nul - 1, &cb));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "NUL") && strstr(gaia_last_error(t->ctx), "line 2"), "message: %s",
             gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_FORMAT, gaia_hrr_codebook_parse(t->ctx, npy, size, ctrl, sizeof ctrl - 1, &cb));
    GT_STATUS(t, GAIA_ERR_FORMAT, gaia_hrr_codebook_parse(t->ctx, npy, size, empty, sizeof empty - 1, &cb));
    GT_STATUS(t, GAIA_ERR_FORMAT, gaia_hrr_codebook_parse(t->ctx, npy, size, extra, sizeof extra - 1, &cb));
    GT_STATUS(t, GAIA_ERR_FORMAT, gaia_hrr_codebook_parse(t->ctx, npy, size, good, 6, &cb));
    GT_CHECK(t, cb == NULL, "no codebook on failure");
    gaia_image_free(t->ctx, npy);
    gaia_tensor_free(v);
}

static void unknown_flags_and_oversized_dimensions_are_invalid_arguments(gt *t) {
    gaia_hebbian_desc hd;
    gaia_layer *L = NULL;
    gaia_tensor *x = NULL, *y = NULL;
    size_t shape[2] = {1, ((size_t)1 << 24) + 1};
    memset(&hd, 0, sizeof hd);
    hd.flags = 0x80u;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_layer_hebbian_create(t->ctx, 4, 4, &hd, &L));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "0x80"), "message: %s", gaia_last_error(t->ctx));
    hd.flags = GAIA_HEBB_NO_DECAY | GAIA_HEBB_NO_NORMALIZE;
    GT_OK(t, gaia_layer_hebbian_create(t->ctx, 4, 4, &hd, &L));
    gaia_layer_free(L);
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_hrr_random(t->ctx, 1, (size_t)1 << 31, 0, &x));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_hrr_identity(t->ctx, 1, (size_t)1 << 31, &x));
    /* indices travel as floats: argmax over more than 2^24 is refused */
    GT_OK(t, gaia_tensor_zeros(t->ctx, 2, shape, &x));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_argmax(t->ctx, x, 1, &y));
    gaia_tensor_free(x);
}

/* GAIA_ERR_* never leaves half an output: a failed hierarchy run keeps the
   output tensors the caller passed in (they once were freed). */
static void hierarchy_run_short_of_memory_keeps_the_callers_outputs(gt *t) {
    gt_heap h;
    gaia_ctx *ctx = NULL;
    gaia_hierarchy *hier = NULL;
    gaia_level *lv = NULL;
    gaia_layer *L = NULL;
    gaia_tensor *X = NULL, *outs[1] = {NULL};
    size_t xs[2] = {6, 5}, os[2] = {6, 3};
    long k;
    float probe[18];
    GT_OK(t, gt_heap_ctx(&h, GAIA_DEVICE_CPU, &ctx));
    GT_OK(t, gaia_hierarchy_create(ctx, &hier));
    GT_OK(t, gaia_level_create(ctx, 0, 5, 3, 1, &lv));
    GT_OK(t, gaia_layer_reactive_create(ctx, 5, 3, NULL, &L));
    GT_OK(t, gaia_level_add_layer(ctx, lv, L));
    GT_OK(t, gaia_hierarchy_add_level(ctx, hier, lv));
    GT_OK(t, gaia_tensor_randn(ctx, 2, xs, 0.0f, 1.0f, &X));
    GT_OK(t, gaia_tensor_full(ctx, 2, os, 9.0f, &outs[0]));
    for (k = 1; k <= 3; k++) {
        gaia_tensor *mine = outs[0];
        gaia_status st;
        gt_heap_fail_in(&h, k);
        st = gaia_hierarchy_process(ctx, hier, X, 6, NULL, outs);
        gt_heap_fail_in(&h, 0);
        GT_CHECK(t, st == GAIA_ERR_OUT_OF_MEMORY, "allocation %ld: %s", k, gaia_status_str(st));
        GT_CHECK(t, outs[0] == mine, "allocation %ld: the output handle changed", k);
        GT_OK(t, gaia_tensor_to_host(ctx, outs[0], probe, 18)); /* still a live tensor */
        GT_CHECK(t, probe[0] == 9.0f && probe[17] == 9.0f, "allocation %ld: the output was written", k);
    }
    GT_OK(t, gaia_hierarchy_process(ctx, hier, X, 6, NULL, outs));
    gaia_tensor_free(outs[0]);
    gaia_tensor_free(X);
    gaia_hierarchy_free(hier);
    gaia_ctx_destroy(ctx);
    GT_CHECK(t, h.live == 0, "%ld blocks leaked", h.live);
}

const gt_case gt_hostile_cases[] = {
    {"brain_image_counts_that_wrap_when_multiplied_are_rejected", brain_image_counts_that_wrap_when_multiplied_are_rejected},
    {"brain_image_too_short_for_its_area_allocates_nothing_large", brain_image_too_short_for_its_area_allocates_nothing_large},
    {"loaded_brain_stays_within_the_load_limit", loaded_brain_stays_within_the_load_limit},
    {"brain_load_out_of_memory_is_never_a_format_error", brain_load_out_of_memory_is_never_a_format_error},
    {"connection_probability_below_2_to_minus_32_is_rejected", connection_probability_below_2_to_minus_32_is_rejected},
    {"smallest_connection_probability_steps_in_bounded_time", smallest_connection_probability_steps_in_bounded_time},
    {"npy_header_ending_inside_the_shape_is_rejected_without_overread",
     npy_header_ending_inside_the_shape_is_rejected_without_overread},
    {"sgemm_rejects_matrices_past_the_address_space", sgemm_rejects_matrices_past_the_address_space},
    {"absurd_thread_counts_are_rejected", absurd_thread_counts_are_rejected},
    {"successful_context_creation_writes_no_shared_state", successful_context_creation_writes_no_shared_state},
    {"output_tensor_of_another_context_is_rejected_untouched", output_tensor_of_another_context_is_rejected_untouched},
    {"codebook_names_with_nul_or_control_bytes_are_rejected", codebook_names_with_nul_or_control_bytes_are_rejected},
    {"unknown_flags_and_oversized_dimensions_are_invalid_arguments",
     unknown_flags_and_oversized_dimensions_are_invalid_arguments},
    {"hierarchy_run_short_of_memory_keeps_the_callers_outputs", hierarchy_run_short_of_memory_keeps_the_callers_outputs},
    {NULL, NULL},
};
