/* test_bad_input.c - bad input to the functions the other suites do not feed
   it to. The promise (gaia.h, "Guarantees"): a bad argument gives a status
   code and a message naming the function and the value, never a crash or a
   write; it changes nothing the caller had (objects, outputs, pointers); a
   creator writes its *out only on success. Functions that return no status
   (getters, frees, names) accept NULL and out-of-range values and answer
   with 0, NULL or a name such as "unknown". The backend primitives trust
   their caller, but zero sizes do nothing (NULL pointers allowed then).
   sh tests/bad_input_coverage.sh counts which public functions have such a
   test. */
#include "gaia_test.h"

#include <stdio.h>
#include <stdlib.h>

/* The call fails with `want` and the context's message names the function
   (the text of the call up to its parenthesis) and, when given, `value`. */
static int expect_err(gt *t, const char *file, int line, gaia_ctx *ctx, gaia_status want, gaia_status got,
                      const char *call, const char *value) {
    char fname[96];
    size_t n = strcspn(call, "(");
    const char *msg = ctx ? gaia_last_error(ctx) : "";
    if (n >= sizeof fname) n = sizeof fname - 1;
    memcpy(fname, call, n);
    fname[n] = '\0';
    if (got != want) {
        gt_fail_at(t, file, line, "%s returned %s, expected %s (%s)", call, gaia_status_str(got),
                   gaia_status_str(want), msg);
        return 0;
    }
    if (ctx && !strstr(msg, fname)) {
        gt_fail_at(t, file, line, "the message \"%s\" does not name %s", msg, fname);
        return 0;
    }
    if (ctx && value && !strstr(msg, value)) {
        gt_fail_at(t, file, line, "the message \"%s\" does not name the value %s", msg, value);
        return 0;
    }
    return 1;
}
/* EXPECT_ERR(t, ctx, GAIA_ERR_X, call, value-or-NULL); ctx NULL: no message
   to read (the call had no context to write one into). */
#define EXPECT_ERR(t, ctx, want, call, value)                                         \
    do {                                                                              \
        if (!expect_err((t), __FILE__, __LINE__, (ctx), (want), (call), #call, (value))) \
            return;                                                                   \
    } while (0)

/* A small CPU brain: stimuli s1, s2 (30), explicit areas A, B, C (n 600, k 30). */
static gaia_status small_brain(gaia_ctx *ctx, gaia_brain **out) {
    gaia_brain *b = NULL;
    gaia_status st = gaia_brain_create(ctx, 0.05, 7, GAIA_DEVICE_CPU, &b);
    if (st == GAIA_OK) st = gaia_brain_add_stimulus(b, "s1", 30);
    if (st == GAIA_OK) st = gaia_brain_add_stimulus(b, "s2", 30);
    if (st == GAIA_OK) st = gaia_brain_add_area(b, "A", 600, 30, 0.1f, GAIA_AREA_EXPLICIT);
    if (st == GAIA_OK) st = gaia_brain_add_area(b, "B", 600, 30, 0.1f, GAIA_AREA_EXPLICIT);
    if (st == GAIA_OK) st = gaia_brain_add_area(b, "C", 600, 30, 0.1f, GAIA_AREA_EXPLICIT);
    if (st == GAIA_OK) st = gaia_brain_project_spec(b, "s1>A, s2>B");
    if (st != GAIA_OK) {
        gaia_brain_destroy(b);
        return st;
    }
    *out = b;
    return GAIA_OK;
}

/* The multi-step operations check every name and the step count before the
   first step: a bad call leaves the brain exactly as it was. */
static void brain_operations_reject_unknown_names_and_negative_steps(gt *t) {
    gaia_ctx *ctx = t->ctx;
    gaia_brain *b = NULL;
    void *before = NULL, *after = NULL;
    size_t nbefore = 0, nafter = 0, steps;
    GT_OK(t, small_brain(ctx, &b));
    steps = gaia_brain_steps(b);
    GT_OK(t, gaia_brain_save_image(b, &before, &nbefore));

    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_op_reciprocal(b, "s1", "A", "Nowhere", 3), "Nowhere");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_op_reciprocal(b, "s1", "A", "B", -1), "-1");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_op_reciprocal(b, "A", "A", "B", 2), NULL); /* A is no stimulus */
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_op_associate(b, "s1", "A", "s2", "B", "Cee", 3), "Cee");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_op_associate(b, "s1", "A", "s2", "B", "C", -4), "-4");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_op_associate(b, "s1", "A", NULL, "B", "C", 3), NULL);
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_op_merge(b, "s1", "A", "s9", "B", "C", 3), "s9");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_op_merge(b, "s1", "A", "s2", "B", "C", -2), "-2");
    EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_op_merge(NULL, "s1", "A", "s2", "B", "C", 3), NULL);
    EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_op_reciprocal(NULL, "s1", "A", "B", 3), NULL);
    EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_op_associate(NULL, "s1", "A", "s2", "B", "C", 3), NULL);

    GT_CHECK(t, gaia_brain_steps(b) == steps, "a rejected operation stepped the brain");
    GT_OK(t, gaia_brain_save_image(b, &after, &nafter));
    GT_CHECK(t, nbefore == nafter && memcmp(before, after, nbefore) == 0, "a rejected operation changed the brain");
    gaia_brain_free_image(ctx, before);
    gaia_brain_free_image(ctx, after);
    /* and the same brain still runs every operation */
    GT_OK(t, gaia_brain_op_reciprocal(b, "s1", "A", "B", 2));
    GT_OK(t, gaia_brain_op_associate(b, "s1", "A", "s2", "B", "C", 2));
    GT_OK(t, gaia_brain_op_merge(b, "s1", "A", "s2", "B", "C", 2));
    gaia_brain_destroy(b);
}

static void brain_controls_and_images_reject_bad_arguments(gt *t) {
    gaia_ctx *ctx = t->ctx;
    gaia_brain *b = NULL;
    void *bytes = (void *)&bytes; /* a value the failed call must not touch */
    size_t size = 12345, id = 77, host = 0, dev = 0;
    GT_OK(t, small_brain(ctx, &b));

    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_save_image(b, NULL, &size), NULL);
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_save_image(b, &bytes, NULL), NULL);
    GT_CHECK(t, bytes == (void *)&bytes && size == 12345, "a failed save_image wrote its outputs");
    EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_save_image(NULL, &bytes, &size), NULL);

    EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_set_plasticity(NULL, 1), NULL);
    EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_set_memory_limit(NULL, 1 << 20), NULL);
    /* a limit below what the brain holds already: refused, the old one stays */
    GT_OK(t, gaia_brain_memory(b, &host, &dev));
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_set_memory_limit(b, host / 2), NULL);
    GT_OK(t, gaia_brain_project_spec(b, "s1>A, A>A")); /* still unlimited */

    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_store_assembly(b, "Nowhere", &id), "Nowhere");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_store_assembly(b, "s1", &id), "s1"); /* a stimulus */
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_store_assembly(b, "C", &id), "C"); /* never fired */
    EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_store_assembly(NULL, "A", &id), NULL);
    GT_CHECK(t, id == 77, "a failed store_assembly wrote *id");
    GT_OK(t, gaia_brain_store_assembly(b, "A", &id));
    GT_CHECK(t, id == 0, "the first stored assembly is number %zu, not 0", id);

    GT_CHECK(t, gaia_brain_steps(NULL) == 0, "gaia_brain_steps(NULL) is not 0");
    GT_CHECK(t, gaia_brain_device(NULL) == GAIA_DEVICE_AUTO, "gaia_brain_device(NULL) is a device");
    gaia_brain_free_image(ctx, NULL);
    gaia_image_free(ctx, NULL);
    gaia_image_free(NULL, NULL);
    gaia_brain_destroy(b);
}

/* A creator that fails leaves the caller's pointer as it was: a program that
   passes the address of a live object loses nothing. */
static void failed_creators_keep_the_callers_pointer(gt *t) {
    gaia_ctx *ctx = t->ctx, *ctx2 = (gaia_ctx *)&t->seed;
    gaia_ctx_desc desc;
    gaia_layer *layer = (gaia_layer *)&t->seed;
    gaia_level *level = (gaia_level *)&t->seed;
    gaia_hierarchy *h = (gaia_hierarchy *)&t->seed;
    gaia_brain *brain = (gaia_brain *)&t->seed;
    gaia_hrr_codebook *cb = (gaia_hrr_codebook *)&t->seed;
    gaia_hrr_spectrum *sp = (gaia_hrr_spectrum *)&t->seed;
    gaia_reactive_desc rd;
    const void *sentinel = &t->seed;

    memset(&desc, 0, sizeof desc);
    desc.cpu_threads = -3;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_ctx_create(&desc, &ctx2));
    GT_CHECK(t, (const void *)ctx2 == sentinel, "gaia_ctx_create overwrote *out on failure");

    memset(&rd, 0, sizeof rd);
    rd.activation = (gaia_layer_act)99;
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_layer_reactive_create(ctx, 4, 3, &rd, &layer), "99");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_layer_hebbian_create(ctx, 0, 3, NULL, &layer), NULL);
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_layer_temporal_create(ctx, 4, 0, NULL, &layer), NULL);
    GT_CHECK(t, (const void *)layer == sentinel, "a layer creator overwrote *layer on failure");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_level_create(ctx, 0, 4, 3, 0, &level), NULL);
    GT_CHECK(t, (const void *)level == sentinel, "gaia_level_create overwrote *level on failure");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_hierarchy_create(ctx, NULL), NULL);
    EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_hierarchy_create(NULL, &h), NULL);
    GT_CHECK(t, (const void *)h == sentinel, "gaia_hierarchy_create overwrote *h on failure");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_create(ctx, 1.5, 1, GAIA_DEVICE_CPU, &brain), "1.5");
    GT_CHECK(t, (const void *)brain == sentinel, "gaia_brain_create overwrote *out on failure");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_hrr_codebook_create(ctx, 0, &cb), NULL);
    GT_CHECK(t, (const void *)cb == sentinel, "gaia_hrr_codebook_create overwrote *out on failure");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_hrr_spectrum_create(ctx, NULL, &sp), NULL);
    GT_CHECK(t, (const void *)sp == sentinel, "gaia_hrr_spectrum_create overwrote *out on failure");
}

static void hierarchy_and_level_accessors_answer_null_and_out_of_range(gt *t) {
    gaia_ctx *ctx = t->ctx;
    gaia_hierarchy *h = NULL;
    gaia_level *lv = NULL;
    gaia_layer *L = NULL;
    GT_OK(t, gaia_hierarchy_create(ctx, &h));
    GT_OK(t, gaia_level_create(ctx, 5, 4, 3, 1, &lv));
    GT_OK(t, gaia_layer_reactive_create(ctx, 4, 3, NULL, &L));
    GT_OK(t, gaia_level_add_layer(ctx, lv, L));
    GT_CHECK(t, gaia_level_layer(lv, 0) == L && gaia_level_layer(lv, 1) == NULL && gaia_level_layer(NULL, 0) == NULL,
             "gaia_level_layer: wrong answer for index 0, 1 or a NULL level");
    GT_CHECK(t, gaia_level_layer_count(lv) == 1 && gaia_level_layer_count(NULL) == 0, "gaia_level_layer_count");
    GT_CHECK(t, gaia_level_id(lv) == 5 && gaia_level_id(NULL) == 0, "gaia_level_id: %d / %d", gaia_level_id(lv),
             gaia_level_id(NULL));
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_level_reset(ctx, NULL), NULL);
    EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_level_reset(NULL, lv), NULL);
    GT_OK(t, gaia_hierarchy_add_level(ctx, h, lv));
    GT_CHECK(t, gaia_hierarchy_level_count(h) == 1 && gaia_hierarchy_level_count(NULL) == 0,
             "gaia_hierarchy_level_count");
    GT_CHECK(t, gaia_hierarchy_level(h, 0) == lv && gaia_hierarchy_level(h, 1) == NULL &&
                    gaia_hierarchy_level(NULL, 0) == NULL,
             "gaia_hierarchy_level: wrong answer for index 0, 1 or a NULL hierarchy");
    GT_CHECK(t, gaia_layer_in(NULL) == 0 && gaia_layer_out(NULL) == 0 && gaia_layer_in(L) == 4 &&
                    gaia_layer_out(L) == 3,
             "gaia_layer_in / gaia_layer_out");
    GT_CHECK(t, gaia_layer_kind_of(L) == GAIA_LAYER_REACTIVE && gaia_layer_kind_of(NULL) == GAIA_LAYER_REACTIVE,
             "gaia_layer_kind_of");
    GT_CHECK(t, strcmp(gaia_layer_kernel_str((gaia_layer_kernel)-1), "unknown") == 0 &&
                    strcmp(gaia_layer_kernel_str(GAIA_LAYER_KERNEL_COUNT), "unknown") == 0,
             "gaia_layer_kernel_str of an unknown kernel");
    gaia_hierarchy_free(h); /* frees the level and its layer */
    gaia_hierarchy_free(NULL);
    gaia_level_free(NULL);
    gaia_layer_free(NULL);
}

static void tensor_operations_reject_null_and_bad_axes(gt *t) {
    gaia_ctx *ctx = t->ctx;
    gaia_tensor *x = NULL, *out = NULL, *keep = NULL;
    size_t shape[2] = {3, 5};
    float before[15], after[15];
    GT_OK(t, gaia_tensor_randn(ctx, 2, shape, 0.0f, 1.0f, &x));
    GT_OK(t, gaia_tensor_zeros(ctx, 2, shape, &keep));
    GT_OK(t, gaia_tensor_to_host(ctx, x, before, 15));

    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_scale(ctx, NULL, 2.0f, &out), NULL);
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_add_scalar(ctx, NULL, 2.0f, &out), NULL);
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_log(ctx, NULL, &out), NULL);
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_tanh(ctx, NULL, &out), NULL);
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_sigmoid(ctx, NULL, &out), NULL);
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_relu(ctx, NULL, &out), NULL);
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_gelu(ctx, NULL, &out), NULL);
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_gelu(ctx, x, NULL), NULL);
    GT_CHECK(t, out == NULL, "a failed operation created an output");
    /* an output of the wrong shape is refused and left as it was */
    out = keep;
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_max(ctx, x, 2, &out), "2");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_norm(ctx, x, -3, &out), "-3");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_std(ctx, NULL, 0, &out), NULL);
    EXPECT_ERR(t, ctx, GAIA_ERR_SHAPE, gaia_tensor_std(ctx, x, 0, &out), NULL);
    GT_CHECK(t, out == keep, "a failed reduction replaced the caller's output");
    GT_OK(t, gaia_tensor_to_host(ctx, keep, after, 15));
    GT_CHECK(t, after[0] == 0.0f && after[14] == 0.0f, "a failed reduction wrote the caller's output");
    GT_OK(t, gaia_tensor_to_host(ctx, x, after, 15));
    GT_CHECK(t, memcmp(before, after, sizeof before) == 0, "a failed operation changed its input");

    GT_CHECK(t, gaia_tensor_cdata(NULL) == NULL, "gaia_tensor_cdata(NULL)");
    GT_CHECK(t, gaia_tensor_device(NULL) == GAIA_DEVICE_AUTO, "gaia_tensor_device(NULL)");
    gaia_tensor_free(x);
    gaia_tensor_free(keep);
}

/* NaN is data, as in NumPy: max and argmax find it (they do not skip it),
   std and norm propagate it; they do not fail. */
static void nan_reaches_max_argmax_std_and_norm(gt *t) {
    gaia_ctx *ctx = t->ctx;
    float v[8] = {1.0f, 5.0f, 2.0f, 0.0f, 3.0f, -1.0f, 4.0f, 2.5f};
    size_t shape[1] = {8};
    gaia_tensor *x = NULL, *r = NULL;
    float got = 0.0f;
    int where;
    for (where = 0; where < 8; where += 3) {
        float w[8];
        memcpy(w, v, sizeof w);
        w[where] = NAN;
        GT_OK(t, gaia_tensor_from_host(ctx, 1, shape, w, &x));
        GT_OK(t, gaia_tensor_max(ctx, x, GAIA_AXIS_ALL, &r));
        GT_OK(t, gaia_tensor_item(ctx, r, &got));
        GT_CHECK(t, isnan(got), "max of data with a NaN at %d is %g, not NaN", where, (double)got);
        gaia_tensor_free(r); r = NULL;
        GT_OK(t, gaia_tensor_argmax(ctx, x, GAIA_AXIS_ALL, &r));
        GT_OK(t, gaia_tensor_item(ctx, r, &got));
        GT_CHECK(t, got == (float)where, "argmax of data with a NaN at %d is %g", where, (double)got);
        gaia_tensor_free(r); r = NULL;
        GT_OK(t, gaia_tensor_std(ctx, x, GAIA_AXIS_ALL, &r));
        GT_OK(t, gaia_tensor_item(ctx, r, &got));
        GT_CHECK(t, isnan(got), "std with a NaN is %g", (double)got);
        gaia_tensor_free(r); r = NULL;
        GT_OK(t, gaia_tensor_norm(ctx, x, GAIA_AXIS_ALL, &r));
        GT_OK(t, gaia_tensor_item(ctx, r, &got));
        GT_CHECK(t, isnan(got), "norm with a NaN is %g", (double)got);
        gaia_tensor_free(r); r = NULL;
        gaia_tensor_free(x); x = NULL;
    }
}

static void hrr_shapes_and_images_reject_bad_arguments(gt *t) {
    gaia_ctx *ctx = t->ctx;
    gaia_tensor *a = NULL, *b = NULL, *out = NULL;
    void *bytes = (void *)&bytes;
    size_t size = 9;
    GT_OK(t, gaia_hrr_random(ctx, 2, 64, 0, &a));
    GT_OK(t, gaia_hrr_random(ctx, 2, 32, 0, &b));
    EXPECT_ERR(t, ctx, GAIA_ERR_SHAPE, gaia_hrr_bind_normalize(ctx, a, b, &out), "32");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_hrr_bind_normalize(ctx, a, NULL, &out), NULL);
    EXPECT_ERR(t, ctx, GAIA_ERR_SHAPE, gaia_hrr_cosine(ctx, a, b, &out), "32");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_hrr_cosine(ctx, NULL, b, &out), NULL);
    GT_CHECK(t, out == NULL, "a failed hrr call created an output");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_npy_image(ctx, NULL, &bytes, &size), NULL);
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_npy_image(ctx, a, NULL, &size), NULL);
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_npy_image(ctx, a, &bytes, NULL), NULL);
    GT_CHECK(t, bytes == (void *)&bytes && size == 9, "a failed gaia_npy_image wrote its outputs");
    gaia_tensor_free(a);
    gaia_tensor_free(b);
}

/* Context-level calls that return no status take NULL and unknown values. */
static void context_calls_accept_null_and_unknown_values(gt *t) {
    gaia_profile_entry e;
    FILE *sink = tmpfile();
    gaia_ctx_set_seed(NULL, 5);
    gaia_clear_error(NULL);
    GT_CHECK(t, gaia_ctx_seed(NULL) == 0, "gaia_ctx_seed(NULL)");
    GT_CHECK(t, gaia_ctx_device(NULL) == GAIA_DEVICE_AUTO, "gaia_ctx_device(NULL)");
    GT_CHECK(t, strcmp(gaia_device_str((gaia_device)99), "unknown") == 0, "gaia_device_str(99): %s",
             gaia_device_str((gaia_device)99));
    GT_CHECK(t, strcmp(gaia_status_str((gaia_status)-1), "unknown status") == 0, "gaia_status_str(-1): %s",
             gaia_status_str((gaia_status)-1));
    GT_CHECK(t, strcmp(gaia_profile_op_str(GAIA_PROF_COUNT), "unknown") == 0, "gaia_profile_op_str(count): %s",
             gaia_profile_op_str(GAIA_PROF_COUNT));
    gaia_profile_enable(NULL, 1);
    gaia_profile_reset(NULL);
    e = gaia_profile_get(NULL, (gaia_profile_op)0);
    GT_CHECK(t, e.calls == 0, "gaia_profile_get(NULL) counts calls");
    e = gaia_profile_get(t->ctx, (gaia_profile_op)-1);
    GT_CHECK(t, e.calls == 0, "gaia_profile_get of an unknown op counts calls");
    gaia_profile_print(NULL, sink);
    gaia_profile_print(t->ctx, NULL);
    gaia_device_report(NULL, sink);
    gaia_device_report(t->ctx, NULL);
    if (sink) fclose(sink);
}

/* The backend primitives trust their caller, but a zero size does nothing:
   no read, no write (NULL pointers are allowed then). */
static void backend_primitives_do_nothing_for_zero_sizes(gt *t) {
    float y[2] = {7.0f, 7.0f};
    gaia_layer_plan plan;
    gaia_layer_hebb_args hebb;
    uint32_t winners = 9;
    memset(&plan, 0, sizeof plan);
    memset(&hebb, 0, sizeof hebb);
    gaia_cpu_layer_bias_act(GAIA_LAYER_ACT_GELU, NULL, NULL, NULL, 0, 5, 1);
    gaia_cpu_layer_bias_act(GAIA_LAYER_ACT_GELU, NULL, NULL, NULL, 5, 0, 1);
    gaia_cpu_layer_gemv(GAIA_LAYER_ACT_RELU, NULL, NULL, NULL, NULL, 0, 4, 1);
    gaia_cpu_layer_layernorm(NULL, NULL, NULL, NULL, 0, 8, 1e-5f, 1);
    gaia_cpu_layer_attention(GAIA_LAYER_PREC_F32, NULL, NULL, NULL, NULL, 0, 4, 4, 8, 1.0f, 0, 1);
    {
        size_t zero[4] = {0, 1, 1, 4}, st[4] = {0, 0, 0, 1};
        gaia_cpu_where(NULL, st, NULL, st, NULL, st, NULL, zero, 1); /* no rows */
    }
    gaia_cpu_hrr_cleanup(0, 5, 8, NULL, NULL, NULL, NULL, 1, 0); /* no query */
    gaia_cpu_hrr_cleanup(0, 0, 8, NULL, NULL, NULL, NULL, 1, 1); /* no query, no row */
    gaia_cpu_layer_hebbian_update(&hebb, 1); /* out = in = 0 */
    gaia_cpu_layer_hebbian_update(NULL, 1);
    GT_CHECK(t, gaia_cpu_layer_hierarchy_work(NULL) == 0, "work for no plan");
    gaia_cpu_layer_hierarchy_run(NULL, NULL, 1);
    GT_CHECK(t, gaia_cpu_layer_hierarchy_work(&plan) == 0 || gaia_cpu_layer_hierarchy_work(&plan) < 64,
             "an empty plan asks for %zu floats", gaia_cpu_layer_hierarchy_work(&plan));
    gaia_cpu_layer_hierarchy_run(&plan, NULL, 1);
    gaia_cpu_hrr_spec_mul(0, 8, NULL, 16, NULL, 16, 0, 1.0f, NULL);
    gaia_cpu_hrr_spec_map(0, 8, GAIA_HRR_SPEC_UNITARY, 0.0f, 1.0f, NULL, NULL);
    gaia_cpu_hrr_cyclic(0, 8, NULL, 1, 0, NULL);
    gaia_cpu_hrr_row_norms(0, 8, NULL, NULL);
    gaia_cpu_hrr_normalize(0, 8, NULL, NULL);
    gaia_cpu_hrr_cosine_scale(0, 8, NULL, NULL, NULL);
    gaia_cpu_hrr_argmax_rows(0, 8, NULL, NULL);
    gaia_cpu_hrr_argmax_rows(1, 0, NULL, y); /* no columns: index -1 and NaN, as a row with a NaN */
    GT_CHECK(t, y[0] == -1.0f && y[1] != y[1], "argmax over no columns wrote %g, %g", (double)y[0], (double)y[1]);
    gaia_cpu_assembly_topk(NULL, 0, 0, NULL, &winners);
    GT_CHECK(t, winners == 9, "top-0 of nothing wrote a winner");
    GT_CHECK(t, gaia_cpu_assembly_map_update(NULL, NULL, 0, NULL, 0, 1.5f, 2.0f) == 0, "an update of no keys changed");
    GT_CHECK(t, gaia_cpu_assembly_edges(NULL, 0, NULL, 0) == 0, "edges of no fibre");
    GT_CHECK(t, gaia_cpu_assembly_stim_degree(NULL, 0) == 0, "degree in no fibre");
    GT_CHECK(t, gaia_cpu_assembly_map_get(NULL, NULL, 0, 5) == 0.0f, "a weight from no map");
    gaia_cpu_assembly_accumulate(NULL, NULL, 0, NULL, 1);
}

/* The rule-program features (per-fibre p, the weight cap, ...): a bad
   argument names the function and the value, and changes nothing (the
   brain's image is the same before and after). */
static void brain_rule_features_reject_bad_arguments(gt *t) {
    gaia_ctx *ctx = t->ctx;
    gaia_brain *b = NULL;
    void *before, *after;
    size_t nbefore, nafter;
    GT_OK(t, small_brain(ctx, &b));
    GT_OK(t, gaia_brain_save_image(b, &before, &nbefore));

    EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_set_p(NULL, "A", "B", 0.1), NULL);
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_set_p(b, "Nowhere", "B", 0.1), "Nowhere");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_set_p(b, "A", "s2", 0.1), "s2"); /* a stimulus target */
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_set_p(b, NULL, "B", 0.1), NULL);
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_set_p(b, "A", "B", nan("")), "nan");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_set_p(b, "A", "B", 0.0), "p = 0");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_set_p(b, "A", "B", 1.25), "1.25");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_set_p(b, "A", "B", -0.5), "-0.5");
    /* s1 -> A has learned: its synapses were drawn at the brain's p */
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_set_p(b, "s1", "A", 0.2), "s1");

    EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_set_max_weight(NULL, 2.0f), NULL);
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_set_max_weight(b, 0.5f), "0.5");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_set_max_weight(b, (float)nan("")), "nan");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_set_max_weight(b, 4194304.0f), "4.19");

    {
        uint32_t tg[4] = {7, 7, 7, 7}, w[4] = {9, 9, 9, 9};
        float wt[4] = {5, 5, 5, 5}, wv = 5.0f;
        size_t n = 77;
        EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_synapse_row(NULL, "A", "A", 0, tg, wt, 4, &n), NULL);
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_synapse_row(b, "Nowhere", "A", 0, tg, wt, 4, &n), "Nowhere");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_synapse_row(b, "A", "s1", 0, tg, wt, 4, &n), "s1");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_synapse_row(b, "A", "B", 600, tg, wt, 4, &n), "600");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_synapse_row(b, "A", "B", 0, tg, wt, 4, NULL), NULL);
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_synapse_row(b, "A", "B", 0, NULL, wt, 4, &n), NULL);
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_synapse_row(b, "A", "B", 0, tg, wt, 4, &n), "room for 4");
        EXPECT_ERR(t, ctx, GAIA_ERR_UNSUPPORTED, gaia_brain_synapse_row(b, "s1", "A", 0, tg, wt, 4, &n), "s1");
        EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_synapse_weight(NULL, "A", "B", 0, 1, &wv), NULL);
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_synapse_weight(b, "A", "B", 0, 600, &wv), "600");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_synapse_weight(b, "A", "B", 1000, 0, &wv), "1000");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_synapse_weight(b, "A", "Nowhere", 0, 0, &wv), "Nowhere");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_synapse_weight(b, "A", "B", 0, 0, NULL), NULL);
        EXPECT_ERR(t, ctx, GAIA_ERR_UNSUPPORTED, gaia_brain_synapse_weight(b, "s2", "B", 0, 0, &wv), "s2");
        GT_CHECK(t, tg[0] == 7 && wt[0] == 5 && n == 77 && wv == 5.0f, "a failed synapse read wrote its outputs");

        EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_set_winner_history(NULL, "A", 4), NULL);
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_set_winner_history(b, "Nowhere", 4), "Nowhere");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_set_winner_history(b, "A", SIZE_MAX), "A");
        EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_winner_history(NULL, "A", 0, w, 4, &n), NULL);
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_winner_history(b, "Nowhere", 0, w, 4, &n), "Nowhere");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_winner_history(b, "A", 0, w, 4, &n), "step 0");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_winner_history(b, "A", 0, w, 4, NULL), NULL);
        GT_CHECK(t, w[0] == 9 && n == 77, "a failed winner_history wrote its outputs");
    }
    {
        uint32_t s0[3] = {1, 2, 3}, s1[2] = {4, 600};
        const uint32_t *sets[2] = {s0, s1}, *nullset[1] = {NULL};
        size_t sizes[2] = {3, 2}, best = 77, ov = 77;
        EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_read_assembly(NULL, "A", sets, sizes, 1, &best, &ov), NULL);
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_read_assembly(b, "Nowhere", sets, sizes, 1, &best, &ov),
                   "Nowhere");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_read_assembly(b, "A", sets, sizes, 2, &best, &ov), "600");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_read_assembly(b, "A", sets, sizes, 0, &best, &ov), "0");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_read_assembly(b, "A", nullset, sizes, 1, &best, &ov), "0");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_read_assembly(b, "A", sets, sizes, 1, NULL, &ov), NULL);
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_read_assembly(b, "C", sets, sizes, 1, &best, &ov), "C");
        EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_read_blocks(NULL, "A", 3, &best, &ov), NULL);
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_read_blocks(b, "Nowhere", 3, &best, &ov), "Nowhere");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_read_blocks(b, "A", 0, &best, &ov), "0 blocks");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_read_blocks(b, "A", 21, &best, &ov), "21");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_read_blocks(b, "A", 3, NULL, &ov), NULL);
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_read_blocks(b, "C", 3, &best, &ov), "C");
        GT_CHECK(t, best == 77 && ov == 77, "a failed read-out wrote its outputs");
    }

    {
        static const char *const bad_units[2] = {"A", "Nowhere"};
        uint64_t m = 77;
        size_t fired = 77;
        EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_inhibit_fibre(NULL, "A", "B", 0), NULL);
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_inhibit_fibre(b, "Nowhere", "B", 0), "Nowhere");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_inhibit_fibre(b, "A", "s1", 0), "s1");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_inhibit_fibre(b, "A", "B", 64), "64");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_inhibit_fibre(b, "A", "B", GAIA_BRAIN_ALL_REASONS), "-1");
        EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_disinhibit_fibre(NULL, "A", "B", 0), NULL);
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_disinhibit_fibre(b, "A", NULL, 0), NULL);
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_disinhibit_fibre(b, "A", "B", -2), "-2");
        EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_inhibit_area(NULL, "A", 0), NULL);
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_inhibit_area(b, "s1", 0), "s1"); /* a stimulus */
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_inhibit_area(b, "A", 99), "99");
        EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_disinhibit_area(NULL, "A", 0), NULL);
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_disinhibit_area(b, "Nowhere", 0), "Nowhere");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_disinhibit_area(b, "A", 64), "64");
        EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_fibre_inhibition(NULL, "A", "B", &m), NULL);
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_fibre_inhibition(b, "A", "Nowhere", &m), "Nowhere");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_fibre_inhibition(b, "A", "B", NULL), NULL);
        EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_area_inhibition(NULL, "A", &m), NULL);
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_area_inhibition(b, "s2", &m), "s2");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_area_inhibition(b, "A", NULL), NULL);
        EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_fibre_fires(NULL, "A", "B", &m), NULL);
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_fibre_fires(b, "Nowhere", "B", &m), "Nowhere");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_fibre_fires(b, "A", "B", NULL), NULL);
        GT_CHECK(t, m == 77, "a failed inhibition query wrote its output");
        EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_project_open(NULL, NULL, 0, &fired), NULL);
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_project_open(b, NULL, 2, &fired), "nunits = 2");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_project_open(b, bad_units, 0, &fired), "nunits = 0");
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_project_open(b, bad_units, 2, &fired), "Nowhere");
        GT_CHECK(t, fired == 77, "a failed project_open wrote its output");
        {
            gaia_brain_fire f[1];
            f[0].from = f[0].to = "unchanged";
            EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_open_fires(NULL, NULL, 0, f, 1, &fired), NULL);
            EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_open_fires(b, bad_units, 2, f, 1, &fired), "Nowhere");
            EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_open_fires(b, NULL, 0, NULL, 1, &fired), NULL);
            EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_open_fires(b, NULL, 0, f, 1, NULL), NULL);
            /* A and B have winners and every fibre is open: more than one fires */
            EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_open_fires(b, NULL, 0, f, 1, &fired), "room for 1");
            GT_CHECK(t, fired == 77 && strcmp(f[0].from, "unchanged") == 0, "a failed open_fires wrote its outputs");
        }
        EXPECT_ERR(t, NULL, GAIA_ERR_INVALID_ARG, gaia_brain_clear_winners(NULL, "A"), NULL);
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_clear_winners(b, "s1"), "s1");
    }

    GT_OK(t, gaia_brain_save_image(b, &after, &nafter));
    GT_CHECK(t, nbefore == nafter && memcmp(before, after, nbefore) == 0, "a rejected call changed the brain");
    gaia_brain_free_image(ctx, before);
    gaia_brain_free_image(ctx, after);
    /* a fire the inhibition forbids: refused, naming the fibre or the area */
    GT_OK(t, gaia_brain_inhibit_fibre(b, "A", "B", 7));
    GT_OK(t, gaia_brain_inhibit_area(b, "C", 2));
    GT_OK(t, gaia_brain_save_image(b, &before, &nbefore));
    {
        gaia_brain_fire f[2];
        f[0].from = "s1";
        f[0].to = "A";
        f[1].from = "A";
        f[1].to = "B";
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_project(b, f, 2), "'A' -> 'B' is inhibited (reason 7");
        f[0].from = "s2";
        f[0].to = "C";
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_project(b, f, 1), "area 'C' is inhibited (reason 2");
    }
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_op_reciprocal(b, "s1", "A", "B", 2), "reason 7");
    GT_OK(t, gaia_brain_save_image(b, &after, &nafter));
    GT_CHECK(t, nbefore == nafter && memcmp(before, after, nbefore) == 0, "a refused fire changed the brain");
    gaia_brain_free_image(ctx, before);
    gaia_brain_free_image(ctx, after);
    gaia_brain_destroy(b);
}

/* Tensors for the optimizer's checks: w and top, mid, low (rows 0-2, 2-3
   and 3-5 of one matrix m: row 2 in top and mid) need gradients, v does not. */
typedef struct optim_params {
    gaia_tensor *w, *v, *m, *top, *mid, *low;
} optim_params;
static gaia_status optim_params_open(gaia_ctx *ctx, optim_params *p) {
    size_t sw[2] = {6, 4};
    gaia_status st;
    memset(p, 0, sizeof *p);
    st = gaia_tensor_randn(ctx, 2, sw, 0.0f, 1.0f, &p->w);
    if (st == GAIA_OK) st = gaia_tensor_randn(ctx, 2, sw, 0.0f, 1.0f, &p->v);
    if (st == GAIA_OK) st = gaia_tensor_randn(ctx, 2, sw, 0.0f, 1.0f, &p->m);
    if (st == GAIA_OK) st = gaia_tensor_slice_rows(ctx, p->m, 0, 3, &p->top);
    if (st == GAIA_OK) st = gaia_tensor_slice_rows(ctx, p->m, 2, 2, &p->mid);
    if (st == GAIA_OK) st = gaia_tensor_slice_rows(ctx, p->m, 3, 3, &p->low);
    if (st == GAIA_OK) st = gaia_tensor_set_requires_grad(ctx, p->w, 1);
    if (st == GAIA_OK) st = gaia_tensor_set_requires_grad(ctx, p->top, 1);
    if (st == GAIA_OK) st = gaia_tensor_set_requires_grad(ctx, p->mid, 1);
    if (st == GAIA_OK) st = gaia_tensor_set_requires_grad(ctx, p->low, 1);
    return st;
}
static void optim_params_close(optim_params *p) {
    gaia_tensor_free(p->w);
    gaia_tensor_free(p->v);
    gaia_tensor_free(p->m);
    gaia_tensor_free(p->top);
    gaia_tensor_free(p->mid);
    gaia_tensor_free(p->low);
}

/* A parameter listed twice, or two sharing memory, would be updated twice
   per step: refused, naming both indices. */
static void optim_create_refuses_a_parameter_listed_twice(gt *t) {
    gaia_ctx *ctx = t->ctx;
    optim_params p;
    gaia_tensor *ps[3];
    gaia_optim *opt = NULL;
    gaia_optim_desc d;
    GT_OK(t, optim_params_open(ctx, &p));
    memset(&d, 0, sizeof d);
    d.kind = GAIA_OPTIM_SGD;
    d.lr = 0.1f;
    ps[0] = p.w, ps[1] = p.top, ps[2] = p.w;
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_optim_create(ctx, &d, ps, 3, &opt), "parameters 0 and 2");
    ps[2] = p.mid;
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_optim_create(ctx, &d, ps, 3, &opt), "parameters 1 and 2 share memory");
    GT_CHECK(t, opt == NULL, "a refused optimizer was written");
    ps[0] = p.top, ps[1] = p.low, ps[2] = p.w; /* one matrix's rows 0-2 and 3-5: distinct memory, fine */
    GT_OK(t, gaia_optim_create(ctx, &d, ps, 3, &opt));
    gaia_optim_destroy(opt);
    optim_params_close(&p);
}

/* A parameter that needs no gradient never gets one, so it would silently
   never be trained: refused, naming its index. */
static void optim_create_refuses_a_parameter_without_requires_grad(gt *t) {
    gaia_ctx *ctx = t->ctx;
    optim_params p;
    gaia_tensor *ps[2];
    gaia_optim *opt = NULL;
    gaia_optim_desc d;
    GT_OK(t, optim_params_open(ctx, &p));
    memset(&d, 0, sizeof d);
    d.kind = GAIA_OPTIM_ADAMW;
    d.lr = 0.1f;
    ps[0] = p.w, ps[1] = p.v;
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_optim_create(ctx, &d, ps, 2, &opt), "parameter 1 does not require");
    ps[0] = p.v, ps[1] = p.w; /* the first one is checked too */
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_optim_create(ctx, &d, ps, 2, &opt), "parameter 0 does not require");
    GT_CHECK(t, opt == NULL, "a refused optimizer was written");
    optim_params_close(&p);
}

/* One bad field of the desc: the message names it and its value, and no
   other field. */
static void optim_create_names_only_the_bad_field(gt *t) {
    static const char *fields[] = {"lr", "momentum", "weight_decay", "beta1", "beta2", "eps", "clip_norm", "nesterov"};
    static const float bad[] = {-2.5f, 1.5f, -0.25f, 1.25f, -0.5f, -3.0f, -4.0f, 1.0f};
    gaia_ctx *ctx = t->ctx;
    optim_params p;
    gaia_optim *opt = NULL;
    gaia_optim_desc d;
    size_t i, f;
    GT_OK(t, optim_params_open(ctx, &p));
    for (f = 0; f < sizeof fields / sizeof fields[0]; f++) {
        char value[64];
        const char *msg;
        memset(&d, 0, sizeof d);
        d.kind = GAIA_OPTIM_ADAMW;
        d.lr = 0.1f;
        switch (f) {
        case 0: d.lr = bad[f]; break;
        case 1: d.momentum = bad[f]; break;
        case 2: d.weight_decay = bad[f]; break;
        case 3: d.beta1 = bad[f]; break;
        case 4: d.beta2 = bad[f]; break;
        case 5: d.eps = bad[f]; break;
        case 6: d.clip_norm = bad[f]; break;
        default: d.kind = GAIA_OPTIM_SGD, d.nesterov = 1; break; /* without momentum */
        }
        snprintf(value, sizeof value, "%s %g", fields[f], (double)bad[f]);
        EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_optim_create(ctx, &d, &p.w, 1, &opt), value);
        msg = gaia_last_error(ctx);
        for (i = 0; i < sizeof fields / sizeof fields[0]; i++) /* nesterov's says what it lacks: momentum */
            GT_CHECK(t, i == f || (f == 7 && i == 1) || !strstr(msg, fields[i]),
                     "bad %s: the message \"%s\" also names %s", fields[f], msg, fields[i]);
        GT_CHECK(t, opt == NULL, "a refused optimizer was written");
    }
    optim_params_close(&p);
}

/* One pointer (or one array) cannot hold two results: the second would
   overwrite the first, and a tensor made for the first would leak. */
static void aliased_outputs_are_refused(gt *t) {
    gaia_ctx *ctx = t->ctx;
    gaia_tensor *x = NULL, *v = NULL, *keep = NULL, *q = NULL, *book = NULL;
    gaia_vsa *mem = NULL, *qs = NULL, *s = NULL;
    const gaia_vsa *books[2];
    size_t shape[2] = {4, 6}, kshape[2] = {4, 2}, qshape[2] = {2, 64}, bshape[2] = {3, 64}, it = 0, row = 0;
    float before[8], after[8];
    long idx[4] = {7, 7, 7, 7};
    int conv = 0;
    GT_OK(t, gaia_tensor_randn(ctx, 2, shape, 0.0f, 1.0f, &x));
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_topk(ctx, x, 2, -1, 1, &v, &v), "same pointer");
    GT_CHECK(t, v == NULL, "a refused topk made an output");
    /* an existing output given twice is refused and left as it was */
    GT_OK(t, gaia_tensor_randn(ctx, 2, kshape, 0.0f, 1.0f, &keep));
    GT_OK(t, gaia_tensor_to_host(ctx, keep, before, 8));
    v = keep;
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_topk(ctx, x, 2, 1, 0, &v, &v), "same pointer");
    GT_CHECK(t, v == keep, "a refused topk replaced the caller's output");
    GT_OK(t, gaia_tensor_to_host(ctx, keep, after, 8));
    GT_CHECK(t, memcmp(before, after, sizeof before) == 0, "a refused topk wrote the caller's output");
    v = NULL;
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_eigh(ctx, x, &v, &v), "same pointer");
    /* host arrays of two results that overlap */
    GT_OK(t, gaia_tensor_randn(ctx, 2, qshape, 0.0f, 1.0f, &q));
    GT_OK(t, gaia_tensor_randn(ctx, 2, bshape, 0.0f, 1.0f, &book));
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_hrr_cleanup(ctx, q, book, -2.0f, idx, (float *)(void *)idx), "overlap");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_hrr_cleanup(ctx, q, book, -2.0f, idx, (float *)(void *)&idx[1]),
               "overlap");
    GT_CHECK(t, idx[0] == 7 && idx[1] == 7 && idx[2] == 7, "a refused cleanup wrote index");
    GT_OK(t, gaia_hrr_cleanup(ctx, q, book, -2.0f, idx, (float *)(void *)&idx[2])); /* adjacent, apart */
    GT_OK(t, gaia_vsa_random(ctx, GAIA_VSA_MAP, 3, 64, &mem));
    GT_OK(t, gaia_vsa_random(ctx, GAIA_VSA_MAP, 2, 64, &qs));
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_vsa_cleanup(ctx, mem, qs, 1, idx, (float *)(void *)idx), "overlap");
    GT_OK(t, gaia_vsa_select(ctx, mem, &row, 1, &s));
    books[0] = mem;
    books[1] = mem;
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG,
               gaia_vsa_resonator(ctx, s, books, 2, 10, idx, (size_t *)(void *)&idx[1], &conv), "overlap");
    GT_OK(t, gaia_vsa_resonator(ctx, s, books, 2, 10, idx, &it, &conv));
    gaia_tensor_free(x);
    gaia_tensor_free(keep);
    gaia_tensor_free(q);
    gaia_tensor_free(book);
    gaia_vsa_free(mem);
    gaia_vsa_free(qs);
    gaia_vsa_free(s);
}

static gaia_status count_calls_block(gaia_ctx *ctx, gaia_tensor *const *in, size_t n, void *user, gaia_tensor **out) {
    size_t one = 1;
    (void)in;
    (void)n;
    ++*(int *)user;
    return gaia_tensor_zeros(ctx, 1, &one, out);
}

/* A checkpointed block of no input has nothing to differentiate; it is
   refused before the block runs (it would have got inputs = NULL). */
static void checkpoint_of_no_input_is_refused(gt *t) {
    gaia_tensor *y = NULL;
    int calls = 0;
    EXPECT_ERR(t, t->ctx, GAIA_ERR_INVALID_ARG, gaia_checkpoint(t->ctx, count_calls_block, &calls, NULL, 0, &y), "n = 0");
    GT_CHECK(t, calls == 0 && y == NULL, "the block ran %d times, y %p", calls, (void *)y);
}

/* Writing a parameter in place while the tape records would make the
   backward differentiate at values it no longer holds: refused, naming the
   function and the shape, and the parameter is unchanged. With recording
   off (as the optimizers update) the write goes through. */
static void inplace_write_to_a_parameter_is_refused_while_recording(gt *t) {
    gaia_ctx *ctx = t->ctx;
    gaia_tensor *w = NULL, *x = NULL, *y = NULL, *loss = NULL, *out = NULL;
    size_t shape[2] = {3, 4}, i;
    float hw[12], hx[12], after[12], *g;
    gt_fill_normal(t, hw, 12);
    gt_fill_normal(t, hx, 12);
    GT_OK(t, gaia_tensor_from_host(ctx, 2, shape, hw, &w));
    GT_OK(t, gaia_tensor_from_host(ctx, 2, shape, hx, &x));
    GT_OK(t, gaia_tensor_set_requires_grad(ctx, w, 1));
    GT_OK(t, gaia_tensor_mul(ctx, x, w, &y));
    GT_OK(t, gaia_tensor_sum(ctx, y, -1, &loss));
    out = w;
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_scale(ctx, w, 3.0f, &out), "shape 3x4");
    GT_CHECK(t, strstr(gaia_last_error(ctx), "requires grad") != NULL, "message: %s", gaia_last_error(ctx));
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_add(ctx, w, x, &out), "shape 3x4");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_mul(ctx, x, x, &out), "shape 3x4");
    GT_CHECK(t, out == w, "a refused write replaced the output");
    GT_OK(t, gaia_tensor_to_host(ctx, w, after, 12));
    GT_CHECK(t, memcmp(hw, after, sizeof hw) == 0, "a refused write changed the parameter");
    /* d(sum(x * w))/dw = x, at the values w had */
    {
        gaia_tensor *total = NULL;
        GT_OK(t, gaia_tensor_sum(ctx, loss, -1, &total));
        GT_OK(t, gaia_backward(ctx, total));
        gaia_tensor_free(total);
    }
    g = gt_host(t, gaia_tensor_grad(w));
    GT_CHECK(t, g != NULL, "no gradient");
    for (i = 0; i < 12; i++) GT_CHECK(t, g[i] == hx[i], "grad[%zu] = %g, want %g", i, (double)g[i], (double)hx[i]);
    free(g);
    /* recording off: the update goes through */
    gaia_grad_set_enabled(ctx, 0);
    GT_OK(t, gaia_tensor_scale(ctx, w, 3.0f, &out));
    gaia_grad_set_enabled(ctx, 1);
    GT_OK(t, gaia_tensor_to_host(ctx, w, after, 12));
    for (i = 0; i < 12; i++) GT_CHECK(t, after[i] == 3.0f * hw[i], "w[%zu] = %g, want %g", i, (double)after[i], 3.0 * hw[i]);
    gaia_tensor_free(w);
    gaia_tensor_free(x);
    gaia_tensor_free(y);
    gaia_tensor_free(loss);
}

/* gaia_brain_project_spec's messages name it, not the gaia_brain_project it
   is built on. */
static void brain_project_spec_errors_name_it(gt *t) {
    gaia_ctx *ctx = t->ctx;
    gaia_brain *b = NULL;
    GT_OK(t, small_brain(ctx, &b));
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_project_spec(b, "s1>Nope"), "Nope");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_project_spec(b, "C>A"), "C");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_project_spec(b, "s1>A s1>A"), NULL);
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_project_spec(b, " ,; "), NULL);
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_brain_project_spec(b, "A>s1"), "s1");
    gaia_brain_destroy(b);
}

/* gaia has no empty tensors (the manual, TENSORS): each place a zero-length
   axis could arise refuses it, naming the function and the axis. */
static void empty_axes_are_refused_naming_function_and_axis(gt *t) {
    gaia_ctx *ctx = t->ctx;
    gaia_tensor *x = NULL, *o = NULL;
    size_t shape[3] = {2, 0, 3}, six = 6, flat[2] = {6, 0};
    float data[6] = {0};
    static const char hdr[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,0), }";
    unsigned char img[128];
    size_t hlen = sizeof hdr - 1, total;
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_zeros(ctx, 3, shape, &o), "dimension 1 is zero");
    GT_CHECK(t, strstr(gaia_last_error(ctx), "no empty axis") != NULL, "message: %s", gaia_last_error(ctx));
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_ones(ctx, 3, shape, &o), "dimension 1 is zero");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_full(ctx, 3, shape, 1.0f, &o), "dimension 1 is zero");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_from_host(ctx, 3, shape, data, &o), "dimension 1 is zero");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_randn(ctx, 3, shape, 0.0f, 1.0f, &o), "dimension 1 is zero");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_uniform(ctx, 3, shape, 0.0f, 1.0f, &o), "dimension 1 is zero");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_bernoulli(ctx, 3, shape, 0.5f, &o), "dimension 1 is zero");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_arange(ctx, 1.0f, 1.0f, 1.0f, &o), "empty range");
    GT_OK(t, gaia_tensor_from_host(ctx, 1, &six, data, &x));
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_reshape(ctx, x, 2, flat, &o), "dimension 1 is zero");
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_slice_rows(ctx, x, 2, 0, &o), "count = 0");
    GT_CHECK(t, strstr(gaia_last_error(ctx), "axis 0") != NULL, "message: %s", gaia_last_error(ctx));
    EXPECT_ERR(t, ctx, GAIA_ERR_INVALID_ARG, gaia_tensor_topk(ctx, x, 0, 0, 1, &o, NULL), "axis 0");
    /* a .npy of shape (2, 0), as NumPy writes np.zeros((2, 0), np.float32) */
    memcpy(img, "\x93NUMPY\x01\x00", 8);
    total = 10 + hlen + 1;
    total = (total + 63) / 64 * 64;
    img[8] = (unsigned char)((total - 10) & 0xff);
    img[9] = (unsigned char)((total - 10) >> 8);
    memcpy(img + 10, hdr, hlen);
    memset(img + 10 + hlen, ' ', total - 10 - hlen - 1);
    img[total - 1] = '\n';
    EXPECT_ERR(t, ctx, GAIA_ERR_FORMAT, gaia_npy_parse(ctx, img, total, &o), "dimension 1 is zero");
    GT_CHECK(t, o == NULL, "a refused call made an output");
    gaia_tensor_free(x);
}

const gt_case gt_bad_input_cases[] = {
    {"optim_create_refuses_a_parameter_listed_twice", optim_create_refuses_a_parameter_listed_twice},
    {"optim_create_refuses_a_parameter_without_requires_grad", optim_create_refuses_a_parameter_without_requires_grad},
    {"optim_create_names_only_the_bad_field", optim_create_names_only_the_bad_field},
    {"brain_rule_features_reject_bad_arguments", brain_rule_features_reject_bad_arguments},
    {"brain_operations_reject_unknown_names_and_negative_steps", brain_operations_reject_unknown_names_and_negative_steps},
    {"brain_controls_and_images_reject_bad_arguments", brain_controls_and_images_reject_bad_arguments},
    {"failed_creators_keep_the_callers_pointer", failed_creators_keep_the_callers_pointer},
    {"hierarchy_and_level_accessors_answer_null_and_out_of_range", hierarchy_and_level_accessors_answer_null_and_out_of_range},
    {"tensor_operations_reject_null_and_bad_axes", tensor_operations_reject_null_and_bad_axes},
    {"nan_reaches_max_argmax_std_and_norm", nan_reaches_max_argmax_std_and_norm},
    {"hrr_shapes_and_images_reject_bad_arguments", hrr_shapes_and_images_reject_bad_arguments},
    {"context_calls_accept_null_and_unknown_values", context_calls_accept_null_and_unknown_values},
    {"backend_primitives_do_nothing_for_zero_sizes", backend_primitives_do_nothing_for_zero_sizes},
    {"aliased_outputs_are_refused", aliased_outputs_are_refused},
    {"checkpoint_of_no_input_is_refused", checkpoint_of_no_input_is_refused},
    {"inplace_write_to_a_parameter_is_refused_while_recording", inplace_write_to_a_parameter_is_refused_while_recording},
    {"brain_project_spec_errors_name_it", brain_project_spec_errors_name_it},
    {"empty_axes_are_refused_naming_function_and_axis", empty_axes_are_refused_naming_function_and_axis},
    {NULL, NULL},
};
