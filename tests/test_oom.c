/* Out of memory, swept: for every public operation that allocates, the k-th
   host allocation of the call fails, for k = 1, 2, ... until the call no
   longer reaches a k-th allocation. Each time:
     - the status is GAIA_ERR_OUT_OF_MEMORY with a message (or GAIA_OK when
       the allocation was optional, e.g. a cache, and then the result is the
       reference one);
     - a new output is still NULL, an existing output and the inputs are
       unchanged (compared byte for byte, brains through their images);
     - calling again gives the reference result;
     - no block leaks (the context's allocator is back to zero blocks).
   The reference is the same call in a fresh context with the same seed.
   An optimizer's state counts as an input: its parameters' values and
   gradients, its moment buffers and step count (through gaia_optim_save).
   Saves to a file have their own sweep (sweep_save): the old file at the
   target stays byte for byte, no temporary file is left, and the retry
   writes the bytes of a save that never failed. */
#include "gaia_test.h"
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>

#define OOM_MAX_CALLS 4000 /* a sweep longer than this is a test bug */
#define OOM_IN 5

typedef struct oom_env {
    gaia_ctx *ctx;
    uint64_t seed;
    gaia_tensor *in[OOM_IN];
    gaia_optim *opt;               /* the optimizer worked on (over in[0 .. 3]) */
    gaia_tensor *out;              /* the tensor result (NULL: made by the call) */
    gaia_brain *brain, *brain_out; /* the brain worked on; a brain made by the call */
    gaia_hrr_codebook *cb, *cb_out;
    gaia_hrr_spectrum *spec, *spec_out;
    gaia_layer *layer;
    gaia_hierarchy *hier;
    gaia_tensor *outs[3];
    void *bytes;                   /* an image made by the call */
    size_t nbytes;
    float host[512];               /* host-array results */
    long idx[16];
    char path[600];
} oom_env;

typedef int (*oom_setup_fn)(oom_env *e);         /* 0 on success */
typedef gaia_status (*oom_run_fn)(oom_env *e);

/* A growing byte string: the observable state of an environment. */
typedef struct oom_buf {
    unsigned char *p;
    size_t n, cap;
} oom_buf;

static void buf_put(oom_buf *b, const void *p, size_t n) {
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 1024;
        while (nc < b->n + n) nc *= 2;
        b->p = (unsigned char *)realloc(b->p, nc);
        b->cap = nc;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

/* The rest of f appended to b; f is closed. */
static void buf_put_file(oom_buf *b, FILE *f) {
    for (;;) {
        unsigned char chunk[4096];
        size_t got = fread(chunk, 1, sizeof chunk, f);
        if (!got) break;
        buf_put(b, chunk, got);
    }
    fclose(f);
}

static void buf_tensor(oom_env *e, oom_buf *b, const gaia_tensor *x) {
    size_t n, k;
    float *h;
    int nd;
    if (!x) {
        buf_put(b, "-", 1);
        return;
    }
    nd = gaia_tensor_ndim(x);
    buf_put(b, &nd, sizeof nd);
    for (k = 0; k < (size_t)nd; k++) {
        size_t d = gaia_tensor_dim(x, (int)k);
        buf_put(b, &d, sizeof d);
    }
    n = gaia_tensor_numel(x);
    h = (float *)malloc(n * sizeof(float));
    if (h && gaia_tensor_to_host(e->ctx, x, h, n) == GAIA_OK) buf_put(b, h, n * sizeof(float));
    else buf_put(b, "?", 1);
    free(h);
}

static void buf_brain(oom_env *e, oom_buf *b, gaia_brain *br) {
    void *im = NULL;
    size_t n = 0;
    if (!br) {
        buf_put(b, "-", 1);
        return;
    }
    if (gaia_brain_save_image(br, &im, &n) == GAIA_OK) buf_put(b, im, n);
    else buf_put(b, "?", 1);
    gaia_brain_free_image(e->ctx, im);
}

static void buf_codebook(oom_env *e, oom_buf *b, const gaia_hrr_codebook *cb) {
    gaia_tensor *v = NULL;
    size_t i;
    if (!cb) {
        buf_put(b, "-", 1);
        return;
    }
    for (i = 0; i < gaia_hrr_codebook_size(cb); i++) {
        const char *nm = gaia_hrr_codebook_name(cb, i);
        buf_put(b, nm, strlen(nm) + 1);
    }
    if (gaia_hrr_codebook_size(cb) && gaia_hrr_codebook_vectors(e->ctx, cb, &v) == GAIA_OK) buf_tensor(e, b, v);
    gaia_tensor_free(v);
}

static void buf_layer(oom_env *e, oom_buf *b, const gaia_layer *L) {
    int p;
    if (!L) return;
    for (p = 0; p < GAIA_LAYER_PARAM_COUNT; p++) buf_tensor(e, b, gaia_layer_get(L, (gaia_layer_param)p));
}

/* An optimizer's whole state: its parameters' gradients, and the file
   gaia_optim_save writes (values, moments, step count, last lr). */
static void buf_optim(oom_env *e, oom_buf *b) {
    char path[600];
    FILE *f;
    int i;
    if (!e->opt) return;
    for (i = 0; i < OOM_IN; i++)
        if (e->in[i]) buf_tensor(e, b, gaia_tensor_grad(e->in[i]));
    gt_tmp_path(path, sizeof path, "oom_optim.safetensors");
    f = gaia_optim_save(e->opt, path) == GAIA_OK ? fopen(path, "rb") : NULL;
    if (!f) {
        buf_put(b, "?", 1);
        return;
    }
    buf_put_file(b, f);
}

/* The inputs (and a preset output) or everything, as bytes. */
static oom_buf snapshot(oom_env *e, int everything) {
    oom_buf b = {NULL, 0, 0};
    int i;
    for (i = 0; i < OOM_IN; i++) buf_tensor(e, &b, e->in[i]);
    buf_optim(e, &b);
    buf_tensor(e, &b, e->out);
    buf_brain(e, &b, e->brain);
    buf_codebook(e, &b, e->cb);
    buf_layer(e, &b, e->layer);
    if (e->hier) {
        size_t l, k;
        for (l = 0; l < gaia_hierarchy_level_count(e->hier); l++) {
            gaia_level *lv = gaia_hierarchy_level(e->hier, l);
            for (k = 0; k < gaia_level_layer_count(lv); k++) buf_layer(e, &b, gaia_level_layer(lv, k));
        }
    }
    if (everything) {
        buf_brain(e, &b, e->brain_out);
        buf_codebook(e, &b, e->cb_out);
        buf_tensor(e, &b, e->outs[0]);
        buf_tensor(e, &b, e->outs[1]);
        buf_tensor(e, &b, e->outs[2]);
        if (e->bytes) buf_put(&b, e->bytes, e->nbytes);
        buf_put(&b, e->host, sizeof e->host);
        buf_put(&b, e->idx, sizeof e->idx);
        if (e->spec_out) {
            size_t r = gaia_hrr_spectrum_rows(e->spec_out), d = gaia_hrr_spectrum_dim(e->spec_out);
            buf_put(&b, &r, sizeof r);
            buf_put(&b, &d, sizeof d);
        }
    }
    return b;
}

static size_t first_difference(const oom_buf *a, const oom_buf *b) {
    size_t i, n = a->n < b->n ? a->n : b->n;
    for (i = 0; i < n && a->p[i] == b->p[i]; i++) {
    }
    return i;
}

static void teardown(oom_env *e) {
    int i;
    gaia_optim_destroy(e->opt);
    for (i = 0; i < OOM_IN; i++) gaia_tensor_free(e->in[i]);
    gaia_tensor_free(e->out);
    gaia_tensor_free(e->outs[0]);
    gaia_tensor_free(e->outs[1]);
    gaia_tensor_free(e->outs[2]);
    gaia_brain_destroy(e->brain);
    gaia_brain_destroy(e->brain_out);
    gaia_hrr_codebook_free(e->cb);
    gaia_hrr_codebook_free(e->cb_out);
    gaia_hrr_spectrum_free(e->spec);
    gaia_hrr_spectrum_free(e->spec_out);
    gaia_layer_free(e->layer);
    gaia_hierarchy_free(e->hier);
    if (e->bytes) gaia_image_free(e->ctx, e->bytes);
    gaia_ctx_destroy(e->ctx);
    memset(e, 0, sizeof *e);
}

static int env_open(gt *t, oom_env *e, gt_heap *h, oom_setup_fn setup) {
    memset(e, 0, sizeof *e);
    if (gt_heap_ctx(h, GAIA_DEVICE_CPU, &e->ctx) != GAIA_OK) return 1;
    gaia_ctx_set_seed(e->ctx, t->seed);
    e->seed = t->seed;
    gt_tmp_path(e->path, sizeof e->path, "oom.npy");
    return setup(e);
}

/* The sweep described at the top, for one operation; `preset` runs it with
   an existing output made by the setup (e->out), else with a new one. */
static void sweep(gt *t, const char *what, oom_setup_fn setup, oom_run_fn run) {
    gt_heap h;
    oom_env e;
    oom_buf ref, before, after;
    long k, failures = 0;
    gaia_status st;
    if (env_open(t, &e, &h, setup)) {
        gt_fail_at(t, __FILE__, __LINE__, "%s: setup failed (%s)", what, gaia_last_error(e.ctx));
        teardown(&e);
        return;
    }
    st = run(&e);
    if (st != GAIA_OK) {
        gt_fail_at(t, __FILE__, __LINE__, "%s: the reference call failed: %s", what, gaia_last_error(e.ctx));
        teardown(&e);
        return;
    }
    ref = snapshot(&e, 1);
    teardown(&e);
    if (h.live) {
        gt_fail_at(t, __FILE__, __LINE__, "%s: %ld blocks leaked by a successful call", what, h.live);
        free(ref.p);
        return;
    }
    for (k = 1; k <= OOM_MAX_CALLS; k++) {
        long calls0;
        int reached;
        gaia_tensor *out_before;
        int setup_bytes;
        if (env_open(t, &e, &h, setup)) {
            gt_fail_at(t, __FILE__, __LINE__, "%s: setup failed", what);
            break;
        }
        before = snapshot(&e, 0);
        out_before = e.out;
        setup_bytes = e.bytes != NULL;
        calls0 = h.calls;
        gt_heap_fail_in(&h, k);
        st = run(&e);
        reached = h.calls - calls0 >= k;
        gt_heap_fail_in(&h, 0);
        if (st == GAIA_OK) {
            after = snapshot(&e, 1);
            if (after.n != ref.n || memcmp(after.p, ref.p, ref.n) != 0)
                gt_fail_at(t, __FILE__, __LINE__, "%s: allocation %ld failed, the call said OK, the result differs", what,
                           k);
            free(after.p);
        } else {
            failures++;
            if (st != GAIA_ERR_OUT_OF_MEMORY || !gaia_last_error(e.ctx)[0])
                gt_fail_at(t, __FILE__, __LINE__, "%s: allocation %ld: %s (%s)", what, k, gaia_status_str(st),
                           gaia_last_error(e.ctx));
            else if (e.out != out_before || e.brain_out || e.cb_out || e.spec_out || e.outs[0] || e.outs[1] || e.outs[2] ||
                     (e.bytes && !setup_bytes))
                gt_fail_at(t, __FILE__, __LINE__, "%s: allocation %ld: an output was made or replaced", what, k);
            else {
                after = snapshot(&e, 0);
                if (after.n != before.n || memcmp(after.p, before.p, before.n) != 0)
                    gt_fail_at(t, __FILE__, __LINE__, "%s: allocation %ld: the inputs or the output changed", what, k);
                free(after.p);
                st = run(&e); /* memory is back: the call succeeds as if nothing happened */
                after = snapshot(&e, 1);
                if (st != GAIA_OK)
                    gt_fail_at(t, __FILE__, __LINE__, "%s: allocation %ld: the retry failed: %s", what, k,
                               gaia_last_error(e.ctx));
                else if (after.n != ref.n || memcmp(after.p, ref.p, ref.n) != 0)
                    gt_fail_at(t, __FILE__, __LINE__, "%s: allocation %ld: the retry differs from the reference "
                               "(%zu vs %zu bytes, first difference at %zu)", what, k, after.n, ref.n,
                               first_difference(&after, &ref));
                free(after.p);
            }
        }
        free(before.p);
        teardown(&e);
        if (h.live && !t->failed)
            gt_fail_at(t, __FILE__, __LINE__, "%s: allocation %ld: %ld blocks leaked", what, k, h.live);
        if (t->failed || !reached) break;
    }
    free(ref.p);
    if (!t->failed && k > OOM_MAX_CALLS) gt_fail_at(t, __FILE__, __LINE__, "%s: more than %d allocations", what, OOM_MAX_CALLS);
    if (!t->failed && failures == 0) gt_fail_at(t, __FILE__, __LINE__, "%s: allocates nothing that can fail", what);
}

/* ---- setups ---- */
static int mk(oom_env *e, int i, int nd, size_t d0, size_t d1, size_t d2) {
    size_t shape[3];
    shape[0] = d0;
    shape[1] = d1;
    shape[2] = d2;
    return gaia_tensor_randn(e->ctx, nd, shape, 0.0f, 1.0f, &e->in[i]) != GAIA_OK;
}
static int set_mat(oom_env *e) { return mk(e, 0, 2, 33, 20, 0) || mk(e, 1, 2, 20, 17, 0) || mk(e, 2, 1, 17, 0, 0); }
static int set_mat_out(oom_env *e) {
    size_t s[2] = {33, 17};
    return set_mat(e) || gaia_tensor_full(e->ctx, 2, s, 5.0f, &e->out) != GAIA_OK;
}
static int set_rows(oom_env *e) { return mk(e, 0, 2, 6, 100, 0) || mk(e, 1, 2, 6, 100, 0) || mk(e, 2, 2, 9, 100, 0); }
static int set_rows_out(oom_env *e) {
    size_t s[2] = {6, 100};
    return set_rows(e) || gaia_tensor_full(e->ctx, 2, s, 5.0f, &e->out) != GAIA_OK;
}
static int set_none(oom_env *e) {
    (void)e;
    return 0;
}
static int set_attention(oom_env *e) {
    size_t s[4] = {1, 2, 40, 16};
    return gaia_tensor_randn(e->ctx, 4, s, 0, 1, &e->in[0]) || gaia_tensor_randn(e->ctx, 4, s, 0, 1, &e->in[1]) ||
           gaia_tensor_randn(e->ctx, 4, s, 0, 1, &e->in[2]);
}
static int set_ln(oom_env *e) { return mk(e, 0, 2, 7, 48, 0) || mk(e, 1, 1, 48, 0, 0) || mk(e, 2, 1, 48, 0, 0); }
static int set_codebook(oom_env *e) {
    int i;
    char name[16];
    if (gaia_hrr_codebook_create(e->ctx, 64, &e->cb) != GAIA_OK) return 1;
    for (i = 0; i < 12; i++) {
        snprintf(name, sizeof name, "item%d", i);
        if (gaia_hrr_codebook_add(e->ctx, e->cb, name, NULL, NULL) != GAIA_OK) return 1;
    }
    return mk(e, 0, 2, 3, 64, 0);
}
static int set_codebook_file(oom_env *e) {
    return set_codebook(e) || gaia_hrr_codebook_save(e->ctx, e->cb, e->path) != GAIA_OK;
}
static int set_hebbian(oom_env *e) {
    gaia_hebbian_desc d;
    memset(&d, 0, sizeof d);
    d.rule = GAIA_HEBB_OJA;
    return gaia_layer_hebbian_create(e->ctx, 24, 12, &d, &e->layer) != GAIA_OK || mk(e, 0, 2, 3, 24, 0);
}
static int set_temporal(oom_env *e) {
    return gaia_layer_temporal_create(e->ctx, 24, 12, NULL, &e->layer) != GAIA_OK || mk(e, 0, 2, 1, 24, 0);
}
static int set_hierarchy(oom_env *e) {
    gaia_level *lv = NULL;
    gaia_layer *L = NULL;
    int i;
    if (gaia_hierarchy_create(e->ctx, &e->hier) != GAIA_OK) return 1;
    /* three levels: an output made before a failing one is given back too */
    for (i = 0; i < 3; i++) {
        static const size_t width[4] = {10, 16, 20, 12};
        size_t in = width[i], out = width[i + 1];
        if (gaia_level_create(e->ctx, i, in, out, (unsigned)i + 1u, &lv) != GAIA_OK) return 1;
        if ((i == 1 ? gaia_layer_hebbian_create(e->ctx, in, out, NULL, &L)
                    : gaia_layer_reactive_create(e->ctx, in, out, NULL, &L)) !=
                GAIA_OK ||
            gaia_level_add_layer(e->ctx, lv, L) != GAIA_OK || gaia_hierarchy_add_level(e->ctx, e->hier, lv) != GAIA_OK)
            return 1;
    }
    return mk(e, 0, 2, 8, 10, 0);
}
/* A brain of two areas after a few steps, in either mode. */
static int brain_setup(oom_env *e, gaia_area_mode mode) {
    gaia_brain *b;
    if (gaia_brain_create(e->ctx, 0.05, e->seed, GAIA_DEVICE_CPU, &e->brain) != GAIA_OK) return 1;
    b = e->brain;
    return gaia_brain_add_stimulus(b, "s", 30) || gaia_brain_add_area(b, "A", 1200, 30, 0.1f, mode) ||
           gaia_brain_add_area(b, "B", 1200, 30, 0.1f, mode) || gaia_brain_project_spec(b, "s>A") ||
           gaia_brain_project_spec(b, "s>A A>A A>B") || gaia_brain_project_spec(b, "s>A A>A A>B B>B");
}
static int set_brain_explicit(oom_env *e) { return brain_setup(e, GAIA_AREA_EXPLICIT); }
static int set_brain_lazy(oom_env *e) { return brain_setup(e, GAIA_AREA_LAZY); }
/* The lazy brain with B -> A (which first fires in r_project) at its own p:
   that step's A then sums binomials of two p (the mixed tables and split). */
static int set_brain_lazy_mixed(oom_env *e) {
    return set_brain_lazy(e) || gaia_brain_set_p(e->brain, "B", "A", 0.09) != GAIA_OK;
}
static int set_brain_lazy_image(oom_env *e) {
    return set_brain_lazy(e) || gaia_brain_save_image(e->brain, &e->bytes, &e->nbytes) != GAIA_OK;
}
static int set_brain_explicit_image(oom_env *e) {
    return set_brain_explicit(e) || gaia_brain_save_image(e->brain, &e->bytes, &e->nbytes) != GAIA_OK;
}

/* ---- the calls ---- */
static gaia_status r_randn(oom_env *e) {
    size_t s[2] = {7, 9};
    return gaia_tensor_randn(e->ctx, 2, s, 0.0f, 1.0f, &e->out);
}
static gaia_status r_from_host(oom_env *e) {
    size_t s[1] = {64};
    int i;
    for (i = 0; i < 64; i++) e->host[i] = (float)i;
    return gaia_tensor_from_host(e->ctx, 1, s, e->host, &e->out);
}
static gaia_status r_arange(oom_env *e) { return gaia_tensor_arange(e->ctx, 0.0f, 10.0f, 0.5f, &e->out); }
static gaia_status r_matmul(oom_env *e) { return gaia_tensor_matmul(e->ctx, e->in[0], e->in[1], 0, 0, &e->out); }
static gaia_status r_add_bcast(oom_env *e) { return gaia_tensor_add(e->ctx, e->in[1], e->in[2], &e->out); }
static gaia_status r_exp(oom_env *e) { return gaia_tensor_exp(e->ctx, e->in[0], &e->out); }
static gaia_status r_std(oom_env *e) { return gaia_tensor_std(e->ctx, e->in[0], 0, &e->out); }
static gaia_status r_argmax(oom_env *e) { return gaia_tensor_argmax(e->ctx, e->in[0], GAIA_AXIS_ALL, &e->out); }
static gaia_status r_transpose(oom_env *e) { return gaia_tensor_transpose(e->ctx, e->in[0], &e->out); }
static gaia_status r_copy(oom_env *e) { return gaia_tensor_copy(e->ctx, e->in[0], &e->out); }
static gaia_status r_to(oom_env *e) { return gaia_tensor_to(e->ctx, e->in[0], GAIA_DEVICE_CPU, &e->out); }
static gaia_status r_outer(oom_env *e) { return gaia_tensor_outer(e->ctx, e->in[2], e->in[2], &e->out); }
static gaia_status r_reshape(oom_env *e) {
    size_t s[1] = {660};
    return gaia_tensor_reshape(e->ctx, e->in[0], 1, s, &e->out);
}
static gaia_status r_slice(oom_env *e) { return gaia_tensor_slice_rows(e->ctx, e->in[0], 3, 4, &e->out); }
static gaia_status r_npy_image(oom_env *e) { return gaia_npy_image(e->ctx, e->in[0], &e->bytes, &e->nbytes); }
static gaia_status r_save_npy(oom_env *e) { return gaia_tensor_save_npy(e->ctx, e->in[0], e->path); }
static int set_npy_file(oom_env *e) { return set_mat(e) || gaia_tensor_save_npy(e->ctx, e->in[0], e->path) != GAIA_OK; }
static gaia_status r_load_npy(oom_env *e) { return gaia_tensor_load_npy(e->ctx, e->path, &e->out); }
static gaia_status r_sgemm(oom_env *e) {
    float A[6 * 5], B[5 * 4];
    int i;
    for (i = 0; i < 30; i++) A[i] = (float)(i % 7) - 3.0f;
    for (i = 0; i < 20; i++) B[i] = (float)(i % 5) - 2.0f;
    for (i = 0; i < 24; i++) e->host[i] = 1.0f;
    return gaia_sgemm(e->ctx, 0, 0, 6, 4, 5, 1.0f, A, 5, B, 4, 0.5f, e->host, 4);
}
static gaia_status r_hrr_random(oom_env *e) { return gaia_hrr_random(e->ctx, 3, 100, 1, &e->out); }
static gaia_status r_hrr_unitary(oom_env *e) { return gaia_hrr_unitary(e->ctx, 2, 90, &e->out); }
static gaia_status r_bind(oom_env *e) { return gaia_hrr_bind(e->ctx, e->in[0], e->in[1], &e->out); }
static gaia_status r_unbind(oom_env *e) { return gaia_hrr_unbind(e->ctx, e->in[0], e->in[1], &e->out); }
static gaia_status r_bind_normalize(oom_env *e) { return gaia_hrr_bind_normalize(e->ctx, e->in[0], e->in[1], &e->out); }
static gaia_status r_inverse(oom_env *e) { return gaia_hrr_inverse(e->ctx, e->in[0], 1e-3f, &e->out); }
static gaia_status r_power(oom_env *e) { return gaia_hrr_power(e->ctx, e->in[0], 3.0f, &e->out); }
static gaia_status r_permute(oom_env *e) { return gaia_hrr_permute(e->ctx, e->in[0], -7, &e->out); }
static gaia_status r_superpose(oom_env *e) { return gaia_hrr_superpose(e->ctx, e->in[0], NULL, 1, &e->out); }
static gaia_status r_cosine(oom_env *e) { return gaia_hrr_cosine(e->ctx, e->in[0], e->in[2], &e->out); }
static gaia_status r_cleanup(oom_env *e) {
    return gaia_hrr_cleanup(e->ctx, e->in[0], e->in[2], 0.1f, e->idx, e->host);
}
static gaia_status r_spectrum(oom_env *e) { return gaia_hrr_spectrum_create(e->ctx, e->in[1], &e->spec_out); }
static int set_rows_spectrum(oom_env *e) { return set_rows(e) || gaia_hrr_spectrum_create(e->ctx, e->in[1], &e->spec); }
static gaia_status r_bind_spectrum(oom_env *e) { return gaia_hrr_bind_spectrum(e->ctx, e->in[0], e->spec, 1, &e->out); }
static gaia_status r_bind_host(oom_env *e) {
    float a[2 * 60], b[2 * 60];
    int i;
    for (i = 0; i < 120; i++) {
        a[i] = (float)((i * 7) % 13) - 6.0f;
        b[i] = (float)((i * 5) % 11) - 5.0f;
    }
    return gaia_hrr_bind_host(e->ctx, a, b, e->host, 2, 60);
}
static gaia_status r_codebook_add(oom_env *e) { return gaia_hrr_codebook_add(e->ctx, e->cb, "new one", NULL, NULL); }
static gaia_status r_codebook_cleanup(oom_env *e) {
    const char *names[3];
    gaia_status st = gaia_hrr_codebook_cleanup(e->ctx, e->cb, e->in[0], -1.0f, e->idx, e->host, names);
    return st;
}
static gaia_status r_codebook_lookup(oom_env *e) { return gaia_hrr_codebook_lookup(e->ctx, e->cb, "item3", &e->out); }
static gaia_status r_codebook_load(oom_env *e) { return gaia_hrr_codebook_load(e->ctx, e->path, &e->cb_out); }
static gaia_status r_gelu(oom_env *e) { return gaia_layer_activation(e->ctx, GAIA_LAYER_ACT_GELU, e->in[0], &e->out); }
static int set_linear(oom_env *e) { return mk(e, 0, 2, 33, 20, 0) || mk(e, 1, 2, 17, 20, 0) || mk(e, 2, 1, 17, 0, 0); }
static gaia_status r_linear(oom_env *e) {
    return gaia_layer_linear(e->ctx, e->in[0], e->in[1], e->in[2], GAIA_LAYER_ACT_GELU, &e->out);
}
static gaia_status r_layernorm(oom_env *e) {
    return gaia_layer_layernorm(e->ctx, e->in[0], e->in[1], e->in[2], 1e-5f, &e->out);
}
static gaia_status r_attention(oom_env *e) {
    return gaia_layer_attention(e->ctx, e->in[0], e->in[1], e->in[2], 0.0f, 1, GAIA_LAYER_PREC_F32, &e->out);
}
static gaia_status r_layer_forward(oom_env *e) { return gaia_layer_forward(e->ctx, e->layer, e->in[0], &e->out); }
/* A recorded intermediate (out = 2 x, x a parameter) overwritten in place:
   the backward's copy of the input is the allocation that can fail. */
static int set_recorded(oom_env *e) {
    return mk(e, 0, 2, 33, 20, 0) || gaia_tensor_set_requires_grad(e->ctx, e->in[0], 1) != GAIA_OK ||
           gaia_tensor_scale(e->ctx, e->in[0], 2.0f, &e->out) != GAIA_OK;
}
static gaia_status r_gelu_in_place(oom_env *e) {
    return gaia_layer_activation(e->ctx, GAIA_LAYER_ACT_GELU, e->out, &e->out);
}
static gaia_status r_layernorm_in_place(oom_env *e) {
    return gaia_layer_layernorm(e->ctx, e->out, NULL, NULL, 1e-5f, &e->out);
}

static gaia_status r_reactive_create(oom_env *e) { return gaia_layer_reactive_create(e->ctx, 30, 20, NULL, &e->layer); }
static gaia_status r_hierarchy(oom_env *e) {
    gaia_hierarchy_run_desc d;
    memset(&d, 0, sizeof d);
    d.learn = 1;
    return gaia_hierarchy_process(e->ctx, e->hier, e->in[0], 8, &d, e->outs);
}
static gaia_status r_project(oom_env *e) { return gaia_brain_project_spec(e->brain, "s>A A>A A>B B>B B>A"); }
static gaia_status r_set_winners(oom_env *e) {
    uint32_t w[40];
    int i;
    for (i = 0; i < 30; i++) w[i] = 150u + 2u * (uint32_t)i; /* beyond a lazy area's support: it grows */
    return gaia_brain_set_winners(e->brain, "B", w, 30);
}
static gaia_status r_store(oom_env *e) { return gaia_brain_store_assembly(e->brain, "A", NULL); }
static gaia_status r_save_image(oom_env *e) { return gaia_brain_save_image(e->brain, &e->bytes, &e->nbytes); }
static gaia_status r_load_image(oom_env *e) {
    return gaia_brain_load_image(e->ctx, e->bytes, e->nbytes, GAIA_DEVICE_CPU, &e->brain_out);
}
static gaia_status r_clone(oom_env *e) { return gaia_brain_clone(e->brain, &e->brain_out); }
static gaia_status r_brain_create(oom_env *e) {
    gaia_status st = gaia_brain_create(e->ctx, 0.02, 7, GAIA_DEVICE_CPU, &e->brain_out);
    if (st == GAIA_OK) st = gaia_brain_add_stimulus(e->brain_out, "s", 20);
    if (st == GAIA_OK) st = gaia_brain_add_area(e->brain_out, "A", 5000, 20, 0.1f, GAIA_AREA_EXPLICIT);
    if (st != GAIA_OK) { /* the construction is the unit here */
        gaia_brain_destroy(e->brain_out);
        e->brain_out = NULL;
    }
    return st;
}

static gaia_status r_zeros(oom_env *e) {
    size_t s[3] = {3, 4, 5};
    return gaia_tensor_zeros(e->ctx, 3, s, &e->out);
}
static gaia_status r_bernoulli(oom_env *e) {
    size_t s[1] = {300};
    return gaia_tensor_bernoulli(e->ctx, 1, s, 0.3f, &e->out);
}
static gaia_status r_uniform(oom_env *e) {
    size_t s[2] = {30, 3};
    return gaia_tensor_uniform(e->ctx, 2, s, -2.0f, 5.0f, &e->out);
}
static gaia_status r_mul(oom_env *e) { return gaia_tensor_mul(e->ctx, e->in[0], e->in[0], &e->out); }
static gaia_status r_sum_all(oom_env *e) { return gaia_tensor_sum(e->ctx, e->in[0], GAIA_AXIS_ALL, &e->out); }
static gaia_status r_dot(oom_env *e) { return gaia_tensor_dot(e->ctx, e->in[2], e->in[2], &e->out); }
static gaia_status r_batched(oom_env *e) { return gaia_tensor_matmul(e->ctx, e->in[3], e->in[1], 0, 1, &e->out); }
static int set_batched(oom_env *e) { return set_mat(e) || mk(e, 3, 3, 4, 9, 17); }
static gaia_status r_npy_parse(oom_env *e) { return gaia_npy_parse(e->ctx, e->bytes, e->nbytes, &e->out); }
static int set_npy_bytes(oom_env *e) { return set_mat(e) || gaia_npy_image(e->ctx, e->in[0], &e->bytes, &e->nbytes); }

static void oom_tensor_operations(gt *t) {
    sweep(t, "zeros", set_none, r_zeros);
    sweep(t, "bernoulli", set_none, r_bernoulli);
    sweep(t, "uniform", set_none, r_uniform);
    sweep(t, "mul", set_mat, r_mul);
    sweep(t, "sum over everything", set_mat, r_sum_all);
    sweep(t, "dot", set_mat, r_dot);
    sweep(t, "batched matmul, transposed", set_batched, r_batched);
    sweep(t, "npy_parse", set_npy_bytes, r_npy_parse);
    sweep(t, "randn", set_none, r_randn);
    sweep(t, "from_host", set_none, r_from_host);
    sweep(t, "arange", set_none, r_arange);
    sweep(t, "matmul", set_mat, r_matmul);
    sweep(t, "matmul into an existing output", set_mat_out, r_matmul);
    sweep(t, "add with broadcasting", set_mat, r_add_bcast);
    sweep(t, "exp", set_mat, r_exp);
    sweep(t, "std", set_mat, r_std);
    sweep(t, "argmax", set_mat, r_argmax);
    sweep(t, "transpose", set_mat, r_transpose);
    sweep(t, "copy", set_mat, r_copy);
    sweep(t, "to", set_mat, r_to);
    sweep(t, "outer", set_mat, r_outer);
    sweep(t, "reshape", set_mat, r_reshape);
    sweep(t, "slice_rows", set_mat, r_slice);
    sweep(t, "npy_image", set_mat, r_npy_image);
    sweep(t, "load_npy", set_npy_file, r_load_npy);
    sweep(t, "sgemm", set_none, r_sgemm);
}

static gaia_status r_identity(oom_env *e) { return gaia_hrr_identity(e->ctx, 2, 50, &e->out); }
static gaia_status r_involution(oom_env *e) { return gaia_hrr_involution(e->ctx, e->in[0], &e->out); }
static gaia_status r_make_unitary(oom_env *e) { return gaia_hrr_make_unitary(e->ctx, e->in[0], &e->out); }
static gaia_status r_negate(oom_env *e) { return gaia_hrr_negate(e->ctx, e->in[0], &e->out); }
static gaia_status r_normalize(oom_env *e) { return gaia_hrr_normalize(e->ctx, e->in[0], &e->out); }
static gaia_status r_hrr_dot(oom_env *e) { return gaia_hrr_dot(e->ctx, e->in[0], e->in[2], &e->out); }
static gaia_status r_unbind_host(oom_env *e) {
    float a[3 * 40], b[3 * 40]; /* B rows of each */
    int i;
    for (i = 0; i < 120; i++) a[i] = (float)((i * 3) % 17) - 8.0f;
    for (i = 0; i < 120; i++) b[i] = (float)((i * 11) % 7) - 3.0f;
    return gaia_hrr_unbind_host(e->ctx, a, b, e->host, 3, 40);
}
static gaia_status r_codebook_create(oom_env *e) {
    gaia_status st = gaia_hrr_codebook_create(e->ctx, 32, &e->cb_out);
    if (st == GAIA_OK) st = gaia_hrr_codebook_add(e->ctx, e->cb_out, "x", NULL, NULL);
    if (st != GAIA_OK) { /* the construction is the unit here */
        gaia_hrr_codebook_free(e->cb_out);
        e->cb_out = NULL;
    }
    return st;
}
static gaia_status r_codebook_vectors(oom_env *e) { return gaia_hrr_codebook_vectors(e->ctx, e->cb, &e->out); }
static gaia_status r_codebook_save(oom_env *e) { return gaia_hrr_codebook_save(e->ctx, e->cb, e->path); }

static void oom_hrr_operations(gt *t) {
    sweep(t, "hrr_identity", set_none, r_identity);
    sweep(t, "hrr_involution", set_rows, r_involution);
    sweep(t, "hrr_make_unitary", set_rows, r_make_unitary);
    sweep(t, "hrr_negate", set_rows, r_negate);
    sweep(t, "hrr_normalize", set_rows, r_normalize);
    sweep(t, "hrr_dot", set_rows, r_hrr_dot);
    sweep(t, "hrr_unbind_host", set_none, r_unbind_host);
    sweep(t, "codebook_create + add", set_none, r_codebook_create);
    sweep(t, "codebook_vectors", set_codebook, r_codebook_vectors);
    sweep(t, "hrr_random", set_none, r_hrr_random);
    sweep(t, "hrr_unitary", set_none, r_hrr_unitary);
    sweep(t, "hrr_bind", set_rows, r_bind);
    sweep(t, "hrr_bind into an existing output", set_rows_out, r_bind);
    sweep(t, "hrr_unbind", set_rows, r_unbind);
    sweep(t, "hrr_bind_normalize", set_rows, r_bind_normalize);
    sweep(t, "hrr_inverse", set_rows, r_inverse);
    sweep(t, "hrr_power", set_rows, r_power);
    sweep(t, "hrr_permute", set_rows, r_permute);
    sweep(t, "hrr_superpose", set_rows, r_superpose);
    sweep(t, "hrr_cosine", set_rows, r_cosine);
    sweep(t, "hrr_cleanup", set_rows, r_cleanup);
    sweep(t, "hrr_spectrum_create", set_rows, r_spectrum);
    sweep(t, "hrr_bind_spectrum", set_rows_spectrum, r_bind_spectrum);
    sweep(t, "hrr_bind_host", set_none, r_bind_host);
    sweep(t, "codebook_add", set_codebook, r_codebook_add);
    sweep(t, "codebook_cleanup", set_codebook, r_codebook_cleanup);
    sweep(t, "codebook_lookup", set_codebook, r_codebook_lookup);
    sweep(t, "codebook_load", set_codebook_file, r_codebook_load);
}

static gaia_status r_level_step(oom_env *e) {
    gaia_level *lv = gaia_hierarchy_level(e->hier, 0);
    gaia_tensor *row = NULL;
    gaia_status st = gaia_tensor_slice_rows(e->ctx, e->in[0], 0, 1, &row);
    if (st == GAIA_OK) st = gaia_level_step(e->ctx, lv, row, 0, 1, &e->out);
    gaia_tensor_free(row);
    return st;
}
static gaia_status r_hebbian_create(oom_env *e) { return gaia_layer_hebbian_create(e->ctx, 12, 9, NULL, &e->layer); }
static gaia_status r_temporal_create(oom_env *e) { return gaia_layer_temporal_create(e->ctx, 12, 9, NULL, &e->layer); }

static void oom_layer_operations(gt *t) {
    sweep(t, "level_step", set_hierarchy, r_level_step);
    sweep(t, "hebbian_create", set_none, r_hebbian_create);
    sweep(t, "temporal_create", set_none, r_temporal_create);
    sweep(t, "activation", set_mat, r_gelu);
    sweep(t, "linear + GELU", set_linear, r_linear);
    sweep(t, "layernorm", set_ln, r_layernorm);
    sweep(t, "attention", set_attention, r_attention);
    sweep(t, "GELU in place, recorded", set_recorded, r_gelu_in_place);
    sweep(t, "layernorm in place, recorded", set_recorded, r_layernorm_in_place);
    sweep(t, "hebbian forward", set_hebbian, r_layer_forward);
    sweep(t, "temporal forward", set_temporal, r_layer_forward);
    sweep(t, "reactive_create", set_none, r_reactive_create);
    sweep(t, "hierarchy_process with learning", set_hierarchy, r_hierarchy);
}

static gaia_status r_activate(oom_env *e) { return gaia_brain_activate(e->brain, "B", 3); }
static gaia_status r_fibre_stats(oom_env *e) {
    gaia_fibre_stats fs;
    gaia_status st = gaia_brain_fibre_stats(e->brain, "A", "B", &fs);
    if (st == GAIA_OK) {
        e->host[0] = (float)fs.synapses;
        e->host[1] = (float)fs.plastic;
        e->host[2] = (float)fs.mean_weight;
    }
    return st;
}
static gaia_status r_fibre_edges(oom_env *e) {
    uint32_t w[400];
    size_t n = 0, i;
    gaia_status st = gaia_brain_fibre_edges(e->brain, "A", "B", 17, w, 400, &n);
    for (i = 0; st == GAIA_OK && i < n && i < 400; i++) e->idx[i % 16] += (long)w[i];
    return st;
}
static gaia_status r_overlap(oom_env *e) {
    uint32_t a[5] = {9, 3, 7, 1, 5}, b[4] = {7, 2, 9, 4};
    size_t ov = 0;
    gaia_status st = gaia_assembly_overlap(e->ctx, a, 5, b, 4, &ov);
    e->idx[0] = (long)ov;
    return st;
}

static void oom_brain_operations(gt *t) {
    sweep(t, "activate (lazy growth)", set_brain_lazy, r_activate);
    sweep(t, "fibre_stats", set_brain_explicit, r_fibre_stats);
    sweep(t, "fibre_edges", set_brain_explicit, r_fibre_edges);
    sweep(t, "assembly_overlap", set_none, r_overlap);
    sweep(t, "brain create + add", set_none, r_brain_create);
    sweep(t, "explicit project", set_brain_explicit, r_project);
    sweep(t, "lazy project", set_brain_lazy, r_project);
    sweep(t, "lazy project, sources of different p", set_brain_lazy_mixed, r_project);
    sweep(t, "explicit set_winners", set_brain_explicit, r_set_winners);
    sweep(t, "lazy set_winners (growth)", set_brain_lazy, r_set_winners);
    sweep(t, "store_assembly", set_brain_lazy, r_store);
    sweep(t, "save_image", set_brain_explicit, r_save_image);
    sweep(t, "explicit load_image", set_brain_explicit_image, r_load_image);
    sweep(t, "lazy load_image", set_brain_lazy_image, r_load_image);
    sweep(t, "explicit clone", set_brain_explicit, r_clone);
    sweep(t, "lazy clone", set_brain_lazy, r_clone);
}

/* A multi-step operation short of memory keeps the steps before the one
   that failed: its brain equals the reference after j < steps steps. */
typedef gaia_status (*oom_op_fn)(gaia_brain *b, int steps);
static gaia_status op_projection(gaia_brain *b, int steps) { return gaia_brain_op_projection(b, "s", "A", steps); }
static gaia_status op_reciprocal(gaia_brain *b, int steps) { return gaia_brain_op_reciprocal(b, "s", "A", "B", steps); }
static gaia_status op_associate(gaia_brain *b, int steps) {
    return gaia_brain_op_associate(b, "s", "A", "t", "B", "C", steps);
}
static gaia_status op_merge(gaia_brain *b, int steps) { return gaia_brain_op_merge(b, "s", "A", "t", "B", "C", steps); }
static int set_brain_three(oom_env *e) {
    return set_brain_lazy(e) || gaia_brain_add_stimulus(e->brain, "t", 30) ||
           gaia_brain_add_area(e->brain, "C", 1200, 30, 0.1f, GAIA_AREA_LAZY) || gaia_brain_project_spec(e->brain, "t>B");
}

static void sweep_op(gt *t, const char *what, oom_op_fn op) {
    enum { STEPS = 3 };
    gt_heap h;
    oom_env e;
    oom_buf ref[STEPS + 1];
    long k;
    int j, failures = 0;
    memset(ref, 0, sizeof ref);
    if (env_open(t, &e, &h, set_brain_three)) gt_fail_at(t, __FILE__, __LINE__, "%s: setup failed", what);
    for (j = 0; j <= STEPS && !t->failed; j++) {
        ref[j] = snapshot(&e, 1);
        if (j < STEPS && op(e.brain, 1) != GAIA_OK)
            gt_fail_at(t, __FILE__, __LINE__, "%s: reference step %d failed: %s", what, j, gaia_last_error(e.ctx));
    }
    teardown(&e);
    for (k = 1; k <= OOM_MAX_CALLS && !t->failed; k++) {
        long calls0;
        gaia_status st;
        int reached, match = -1;
        oom_buf now;
        if (env_open(t, &e, &h, set_brain_three)) break;
        calls0 = h.calls;
        gt_heap_fail_in(&h, k);
        st = op(e.brain, STEPS);
        reached = h.calls - calls0 >= k;
        gt_heap_fail_in(&h, 0);
        now = snapshot(&e, 1);
        for (j = 0; j <= STEPS; j++)
            if (now.n == ref[j].n && memcmp(now.p, ref[j].p, now.n) == 0) match = j;
        if (st == GAIA_OK ? match != STEPS : st != GAIA_ERR_OUT_OF_MEMORY || match < 0 || match == STEPS)
            gt_fail_at(t, __FILE__, __LINE__, "%s: allocation %ld: %s, the brain matches step %d of the reference (%s)",
                       what, k, gaia_status_str(st), match, gaia_last_error(e.ctx));
        failures += st != GAIA_OK;
        free(now.p);
        teardown(&e);
        if (h.live && !t->failed) gt_fail_at(t, __FILE__, __LINE__, "%s: allocation %ld: %ld blocks leaked", what, k, h.live);
        if (!reached) break;
    }
    if (!t->failed && failures == 0) gt_fail_at(t, __FILE__, __LINE__, "%s: nothing failed", what);
    for (j = 0; j <= STEPS; j++) free(ref[j].p);
}

static void oom_brain_operations_keep_whole_steps(gt *t) {
    sweep_op(t, "op_projection", op_projection);
    sweep_op(t, "op_reciprocal", op_reciprocal);
    sweep_op(t, "op_associate", op_associate);
    sweep_op(t, "op_merge", op_merge);
}

/* ---- optimizer steps: a failed step changes nothing, its retry is the step ---- */
/* The optimizer the setup makes, and how many steps it takes before the swept one. */
static gaia_optim_desc oom_od;
static int oom_warm, oom_groups; /* oom_groups: two groups of their own lr and decay */
static gaia_lr_cosine oom_cosine = {2, 10, 0.001f};

/* One forward and backward of mse(x W + b (+ c), a random target): c joins
   only the swept step's forward, so that on a later step one parameter is
   updated for the first time; u never has a gradient. */
static int optim_forward(oom_env *e, int with_c) {
    gaia_tensor *y = NULL, *target = NULL, *loss = NULL;
    size_t ts[2] = {4, 5};
    gaia_status st = gaia_tensor_matmul(e->ctx, e->in[4], e->in[0], 0, 0, &y);
    if (st == GAIA_OK) st = gaia_tensor_add(e->ctx, y, e->in[1], &y);
    if (st == GAIA_OK && with_c) st = gaia_tensor_add(e->ctx, y, e->in[2], &y);
    if (st == GAIA_OK) st = gaia_tensor_randn(e->ctx, 2, ts, 0.0f, 1.0f, &target);
    if (st == GAIA_OK) st = gaia_loss_mse(e->ctx, y, target, &loss);
    if (st == GAIA_OK) st = gaia_backward(e->ctx, loss);
    gaia_tensor_free(y);
    gaia_tensor_free(target);
    gaia_tensor_free(loss);
    return st != GAIA_OK;
}

static int set_optim(oom_env *e) {
    int i, s;
    if (mk(e, 0, 2, 6, 5, 0) || mk(e, 1, 1, 5, 0, 0) || mk(e, 2, 1, 5, 0, 0) || mk(e, 3, 1, 3, 0, 0) ||
        mk(e, 4, 2, 4, 6, 0))
        return 1;
    for (i = 0; i < 4; i++)
        if (gaia_tensor_set_requires_grad(e->ctx, e->in[i], 1) != GAIA_OK) return 1;
    if (oom_groups) { /* W and b at their own rate and decay; c and u at desc's */
        gaia_optim_group g[2];
        memset(g, 0, sizeof g);
        g[0].params = e->in, g[0].n = 2, g[0].lr = 0.02f, g[0].weight_decay = 0.03f, g[0].own_weight_decay = 1;
        g[1].params = e->in + 2, g[1].n = 2;
        if (gaia_optim_create_groups(e->ctx, &oom_od, g, 2, &e->opt) != GAIA_OK) return 1;
    } else if (gaia_optim_create(e->ctx, &oom_od, e->in, 4, &e->opt) != GAIA_OK) {
        return 1;
    }
    for (s = 0; s < oom_warm; s++) {
        gaia_optim_zero_grad(e->opt);
        if (optim_forward(e, 0) || gaia_optim_step(e->opt) != GAIA_OK) return 1;
    }
    gaia_optim_zero_grad(e->opt);
    return optim_forward(e, 1);
}
static gaia_status r_optim_step(oom_env *e) { return gaia_optim_step(e->opt); }

static void oom_optimizer_steps(gt *t, gaia_optim_kind kind) {
    static const struct {
        const char *what;
        gaia_optim_kind kind;
        float momentum;
        int nesterov;
        float weight_decay, clip_norm;
        int schedule, groups;
    } cfg[] = {
        {"SGD", GAIA_OPTIM_SGD, 0, 0, 0, 0, 0, 0},
        {"SGD, momentum", GAIA_OPTIM_SGD, 0.9f, 0, 0, 0, 0, 0},
        {"SGD, Nesterov", GAIA_OPTIM_SGD, 0.9f, 1, 0, 0, 0, 0},
        {"SGD, weight decay", GAIA_OPTIM_SGD, 0, 0, 0.01f, 0, 0, 0},
        {"SGD, clipping", GAIA_OPTIM_SGD, 0, 0, 0, 0.5f, 0, 0},
        {"SGD, everything", GAIA_OPTIM_SGD, 0.8f, 1, 0.05f, 0.5f, 1, 0},
        {"SGD, groups (one decayed)", GAIA_OPTIM_SGD, 0.9f, 0, 0, 0.5f, 1, 1},
        {"AdamW", GAIA_OPTIM_ADAMW, 0, 0, 0, 0, 0, 0},
        {"AdamW, clipping that does not bite", GAIA_OPTIM_ADAMW, 0, 0, 0, 1e6f, 0, 0},
        {"AdamW, everything", GAIA_OPTIM_ADAMW, 0, 0, 0.1f, 0.5f, 1, 0},
        {"AdamW, groups", GAIA_OPTIM_ADAMW, 0, 0, 0.1f, 0.5f, 1, 1},
    };
    size_t c;
    for (c = 0; c < sizeof cfg / sizeof cfg[0] && !t->failed; c++) {
        char what[128];
        if (cfg[c].kind != kind) continue;
        memset(&oom_od, 0, sizeof oom_od);
        oom_od.kind = cfg[c].kind;
        oom_od.lr = 0.05f;
        oom_od.momentum = cfg[c].momentum;
        oom_od.nesterov = cfg[c].nesterov;
        oom_od.weight_decay = cfg[c].weight_decay;
        oom_od.clip_norm = cfg[c].clip_norm;
        oom_od.schedule = cfg[c].schedule ? gaia_lr_warmup_cosine : NULL;
        oom_od.schedule_user = cfg[c].schedule ? &oom_cosine : NULL;
        oom_groups = cfg[c].groups;
        for (oom_warm = 0; oom_warm <= 3 && !t->failed; oom_warm += 3) {
            snprintf(what, sizeof what, "%s, %s step", cfg[c].what, oom_warm ? "a later" : "the first");
            sweep(t, what, set_optim, r_optim_step);
        }
    }
}
static void oom_sgd_steps(gt *t) { oom_optimizer_steps(t, GAIA_OPTIM_SGD); }
static void oom_adamw_steps(gt *t) { oom_optimizer_steps(t, GAIA_OPTIM_ADAMW); }

/* ---- saves: a failed save keeps the old file ----
   Every save that writes a file, swept like the rest, with more checks on
   the disk: before each call the target path holds a good file of the same
   kind (an older object's), and after a failed call that file is still
   there byte for byte, with no "<path>.tmp-*" file left beside it; the
   retry (and a call that said OK) writes the same bytes as a save that
   never ran short of memory. */
#define OOM_SAVE_PATHS 2 /* a codebook writes two files */

typedef struct oom_save {
    const char *what;
    oom_setup_fn setup, old_setup; /* old_setup makes the object of the file already there */
    oom_run_fn run;
    const char *file;              /* the target's name in the scratch directory */
    const char *second;            /* another file the save writes (NULL: none) */
} oom_save;

/* The whole file at path into b (b->p NULL when there is no file). */
static void oom_slurp(const char *path, oom_buf *b) {
    FILE *f = fopen(path, "rb");
    memset(b, 0, sizeof *b);
    if (!f) return;
    b->p = (unsigned char *)malloc(1); /* an empty file: p set, n 0 */
    buf_put_file(b, f);
}

static int oom_spill(const char *path, const oom_buf *b) {
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(b->p, 1, b->n, f) == b->n;
    if (f) ok &= fclose(f) == 0;
    return ok;
}

static int oom_same(const oom_buf *a, const oom_buf *b) {
    return a->p && b->p && a->n == b->n && memcmp(a->p, b->p, a->n) == 0;
}

/* How many "<path>.tmp-" files lie beside path (-1: the directory cannot be read). */
static int oom_temps(const char *path) {
    char dir[600];
    const char *base = strrchr(path, '/');
    size_t blen;
    DIR *d;
    struct dirent *de;
    int n = 0;
    if (base) {
        snprintf(dir, sizeof dir, "%.*s", (int)(base - path), path);
        base++;
    } else {
        snprintf(dir, sizeof dir, ".");
        base = path;
    }
    blen = strlen(base);
    if (!(d = opendir(dir[0] ? dir : "/"))) return -1;
    while ((de = readdir(d)) != NULL)
        if (strncmp(de->d_name, base, blen) == 0 && strncmp(de->d_name + blen, ".tmp-", 5) == 0) n++;
    closedir(d);
    return n;
}

/* The target paths of a save: e->path and the second file, if any. */
static int oom_save_paths(const oom_save *sv, char path[OOM_SAVE_PATHS][600]) {
    gt_tmp_path(path[0], 600, sv->file);
    if (!sv->second) return 1;
    gt_tmp_path(path[1], 600, sv->second);
    return 2;
}

/* Runs setup and the save in a fresh context seeded with seed, and reads
   the files it wrote into out[]. 0 on success. */
static int oom_save_files(gt *t, const oom_save *sv, oom_setup_fn setup, uint64_t seed, oom_buf *out) {
    gt_heap h;
    oom_env e;
    char path[OOM_SAVE_PATHS][600];
    int np = oom_save_paths(sv, path), i, bad;
    gt run = *t;
    run.seed = seed;
    for (i = 0; i < np; i++) remove(path[i]);
    bad = env_open(&run, &e, &h, setup);
    if (!bad) {
        snprintf(e.path, sizeof e.path, "%s", path[0]);
        bad = sv->run(&e) != GAIA_OK;
        if (bad)
            gt_fail_at(t, __FILE__, __LINE__, "%s: the save that does not run short failed: %s", sv->what,
                       gaia_last_error(e.ctx));
    } else
        gt_fail_at(t, __FILE__, __LINE__, "%s: setup failed", sv->what);
    teardown(&e);
    if (!bad && h.live) {
        gt_fail_at(t, __FILE__, __LINE__, "%s: %ld blocks leaked by a successful save", sv->what, h.live);
        bad = 1;
    }
    for (i = 0; i < np; i++) {
        oom_slurp(path[i], &out[i]);
        remove(path[i]);
        if (!bad && !out[i].p) {
            gt_fail_at(t, __FILE__, __LINE__, "%s: the save wrote no %s", sv->what, path[i]);
            bad = 1;
        }
    }
    return bad;
}

/* Each path holds want[] (the old file or the reference) and no temporary file lies beside it. */
static int oom_disk_is(gt *t, const oom_save *sv, long k, const char *when, char path[OOM_SAVE_PATHS][600], int np,
                       const oom_buf *want) {
    int i;
    for (i = 0; i < np; i++) {
        oom_buf now;
        int temps = oom_temps(path[i]), same;
        oom_slurp(path[i], &now);
        same = oom_same(&now, &want[i]);
        if (!same)
            gt_fail_at(t, __FILE__, __LINE__, "%s: allocation %ld: %s, %s is %s (%zu bytes, want %zu)", sv->what, k,
                       when, path[i], !now.p ? "gone" : "not the file it should be", now.n, want[i].n);
        else if (temps != 0)
            gt_fail_at(t, __FILE__, __LINE__, "%s: allocation %ld: %s, %d temporary files beside %s", sv->what, k, when,
                       temps, path[i]);
        free(now.p);
        if (!same || temps != 0) return 0;
    }
    return 1;
}

static void sweep_save(gt *t, const oom_save *sv) {
    gt_heap h;
    oom_env e;
    oom_buf ref[OOM_SAVE_PATHS], old[OOM_SAVE_PATHS], before, after;
    char path[OOM_SAVE_PATHS][600];
    int np = oom_save_paths(sv, path), i;
    long k, failures = 0;
    gaia_status st;
    memset(ref, 0, sizeof ref);
    memset(old, 0, sizeof old);
    if (oom_save_files(t, sv, sv->setup, t->seed, ref) || oom_save_files(t, sv, sv->old_setup, t->seed + 1, old))
        goto done;
    for (i = 0; i < np; i++)
        if (oom_same(&ref[i], &old[i])) {
            gt_fail_at(t, __FILE__, __LINE__, "%s: the old %s equals the new one: the test could not tell them apart",
                       sv->what, path[i]);
            goto done;
        }
    for (k = 1; k <= OOM_MAX_CALLS; k++) {
        long calls0;
        int reached;
        for (i = 0; i < np; i++)
            if (!oom_spill(path[i], &old[i])) gt_fail_at(t, __FILE__, __LINE__, "%s: cannot write %s", sv->what, path[i]);
        if (t->failed || env_open(t, &e, &h, sv->setup)) {
            if (!t->failed) gt_fail_at(t, __FILE__, __LINE__, "%s: setup failed", sv->what);
            teardown(&e);
            break;
        }
        snprintf(e.path, sizeof e.path, "%s", path[0]);
        before = snapshot(&e, 0);
        calls0 = h.calls;
        gt_heap_fail_in(&h, k);
        st = sv->run(&e);
        reached = h.calls - calls0 >= k;
        gt_heap_fail_in(&h, 0);
        if (st == GAIA_OK) /* an optional allocation failed: the save is whole */
            oom_disk_is(t, sv, k, "the save said OK", path, np, ref);
        else {
            failures++;
            if (st != GAIA_ERR_OUT_OF_MEMORY || !gaia_last_error(e.ctx)[0])
                gt_fail_at(t, __FILE__, __LINE__, "%s: allocation %ld: %s (%s)", sv->what, k, gaia_status_str(st),
                           gaia_last_error(e.ctx));
            else if (oom_disk_is(t, sv, k, "the save failed", path, np, old)) {
                after = snapshot(&e, 0);
                if (after.n != before.n || memcmp(after.p, before.p, before.n) != 0)
                    gt_fail_at(t, __FILE__, __LINE__, "%s: allocation %ld: the saved object changed", sv->what, k);
                free(after.p);
                st = sv->run(&e); /* memory is back: the same bytes as a save that never failed */
                if (st != GAIA_OK)
                    gt_fail_at(t, __FILE__, __LINE__, "%s: allocation %ld: the retry failed: %s", sv->what, k,
                               gaia_last_error(e.ctx));
                else
                    oom_disk_is(t, sv, k, "after the retry", path, np, ref);
            }
        }
        free(before.p);
        teardown(&e);
        if (h.live && !t->failed)
            gt_fail_at(t, __FILE__, __LINE__, "%s: allocation %ld: %ld blocks leaked", sv->what, k, h.live);
        if (t->failed || !reached) break;
    }
    if (!t->failed && k > OOM_MAX_CALLS) gt_fail_at(t, __FILE__, __LINE__, "%s: more than %d allocations", sv->what, OOM_MAX_CALLS);
    if (!t->failed && failures == 0) gt_fail_at(t, __FILE__, __LINE__, "%s: allocates nothing that can fail", sv->what);
done:
    for (i = 0; i < np; i++) {
        remove(path[i]);
        free(ref[i].p);
        free(old[i].p);
    }
}

static gaia_status r_safetensors_save(oom_env *e) {
    static const char *const meta[] = {"note", "swept", NULL};
    gaia_named_tensor items[3];
    items[0].name = "w", items[0].tensor = e->in[0];
    items[1].name = "b", items[1].tensor = e->in[1];
    items[2].name = "x", items[2].tensor = e->in[2];
    return gaia_safetensors_save(e->ctx, e->path, items, 3, meta);
}
static gaia_status r_optim_save(oom_env *e) { return gaia_optim_save(e->opt, e->path); }
static gaia_status r_brain_save(oom_env *e) { return gaia_brain_save(e->brain, e->path); }
/* A codebook with other names: the old names file differs from the new one. */
static int set_codebook_old(oom_env *e) {
    return set_codebook(e) || gaia_hrr_codebook_add(e->ctx, e->cb, "only in the old file", NULL, NULL) != GAIA_OK;
}

static void oom_saves(gt *t) {
    static const oom_save saves[] = {
        {"save_npy", set_mat, set_mat, r_save_npy, "oom_save.npy", NULL},
        {"safetensors_save", set_mat, set_mat, r_safetensors_save, "oom_save.safetensors", NULL},
        {"optim_save (AdamW)", set_optim, set_optim, r_optim_save, "oom_save_optim.safetensors", NULL},
        {"codebook_save", set_codebook, set_codebook_old, r_codebook_save, "oom_save_cb.npy", "oom_save_cb.names.txt"},
        {"brain_save (explicit)", set_brain_explicit, set_brain_explicit, r_brain_save, "oom_save_brain.bin", NULL},
        {"brain_save (lazy)", set_brain_lazy, set_brain_lazy, r_brain_save, "oom_save_brain.bin", NULL},
    };
    size_t i;
    memset(&oom_od, 0, sizeof oom_od);
    oom_od.kind = GAIA_OPTIM_ADAMW;
    oom_od.lr = 0.05f;
    oom_od.weight_decay = 0.01f;
    oom_warm = 2; /* moments and a step count to save */
    for (i = 0; i < sizeof saves / sizeof saves[0] && !t->failed; i++) sweep_save(t, &saves[i]);
}

/* ---- 2-D convolution, pooling and eigenvalues ---- */
static int set_conv(oom_env *e) {
    size_t xs[4] = {2, 4, 9, 9}, ws[4] = {8, 4, 3, 3}, bs[1] = {8}, ds[4] = {4, 1, 3, 3};
    return gaia_tensor_randn(e->ctx, 4, xs, 0, 1, &e->in[0]) || gaia_tensor_randn(e->ctx, 4, ws, 0, 1, &e->in[1]) ||
           gaia_tensor_randn(e->ctx, 1, bs, 0, 1, &e->in[2]) || gaia_tensor_randn(e->ctx, 4, ds, 0, 1, &e->in[3]);
}
static int set_conv_out(oom_env *e) {
    size_t s[4] = {2, 8, 9, 9};
    return set_conv(e) || gaia_tensor_full(e->ctx, 4, s, 5.0f, &e->out) != GAIA_OK;
}
static gaia_status r_conv(oom_env *e) { /* im2col + GEMM on the CPU */
    size_t pad[2] = {1, 1};
    return gaia_tensor_conv2d(e->ctx, e->in[0], e->in[1], e->in[2], NULL, pad, NULL, 1, &e->out);
}
static gaia_status r_conv_depthwise(oom_env *e) { /* the direct loop */
    size_t pad[2] = {1, 1};
    return gaia_tensor_conv2d(e->ctx, e->in[0], e->in[3], NULL, NULL, pad, NULL, 4, &e->out);
}
static gaia_status r_max_pool(oom_env *e) {
    size_t k[2] = {3, 3}, st[2] = {2, 2}, pad[2] = {1, 1};
    return gaia_tensor_max_pool2d(e->ctx, e->in[0], k, st, pad, &e->out);
}
static gaia_status r_eigh(oom_env *e) { return gaia_tensor_eigh(e->ctx, e->in[0], &e->outs[0], &e->outs[1]); }
static int set_sym(oom_env *e) { return mk(e, 0, 3, 5, 6, 6); }

static void oom_conv_and_eigh_operations(gt *t) {
    sweep(t, "conv2d", set_conv, r_conv);
    sweep(t, "conv2d into an existing output", set_conv_out, r_conv);
    sweep(t, "conv2d depthwise", set_conv, r_conv_depthwise);
    sweep(t, "max_pool2d", set_conv, r_max_pool);
    sweep(t, "eigh with vectors", set_sym, r_eigh);
}
/* ---- end of convolution, pooling and eigenvalues ---- */

const gt_case gt_oom_cases[] = {
    {"oom_multi_step_brain_operations_keep_whole_steps", oom_brain_operations_keep_whole_steps},
    {"oom_tensor_operations_fail_cleanly_and_retry", oom_tensor_operations},
    {"oom_hrr_operations_fail_cleanly_and_retry", oom_hrr_operations},
    {"oom_layer_operations_fail_cleanly_and_retry", oom_layer_operations},
    {"oom_brain_operations_fail_cleanly_and_retry", oom_brain_operations},
    {"oom_conv_and_eigh_operations_fail_cleanly_and_retry", oom_conv_and_eigh_operations},
    {"oom_optim_sgd_steps_change_nothing_when_they_fail_and_retry_exactly", oom_sgd_steps},
    {"oom_optim_adamw_steps_change_nothing_when_they_fail_and_retry_exactly", oom_adamw_steps},
    {"oom_saves_keep_the_old_file_and_leave_no_temporary_file", oom_saves},
    {NULL, NULL},
};
