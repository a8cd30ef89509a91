/* Tests of the half-precision conversions (bfloat16 and IEEE binary16) and
   the tensor transfers built on them. The reference decodes and rounds in
   float64 from the formats' definitions, independently of gaia's bit
   manipulation. */
#include "gaia_test.h"
#include <stdlib.h>

/* A half format: p mantissa bits, exponent bits, bias. */
typedef struct hfmt {
    const char *name;
    int p, ebits, bias;
} hfmt;
static const hfmt BF16 = {"bf16", 7, 8, 127};
static const hfmt F16 = {"f16", 10, 5, 15};

static int h_isnan(const hfmt *f, unsigned h) {
    unsigned emax = (1u << f->ebits) - 1u, e = (h >> f->p) & emax, m = h & ((1u << f->p) - 1u);
    return e == emax && m != 0;
}
/* The value of a half bit pattern from the definition (NaN for NaNs). */
static double h_value(const hfmt *f, unsigned h) {
    unsigned emax = (1u << f->ebits) - 1u, e = (h >> f->p) & emax, m = h & ((1u << f->p) - 1u);
    double s = (h >> (f->p + f->ebits)) & 1u ? -1.0 : 1.0;
    if (e == emax) return m ? NAN : s * HUGE_VAL;
    if (e == 0) return s * ldexp((double)m, 1 - f->bias - f->p);
    return s * ldexp((double)(m | (1u << f->p)), (int)e - f->bias - f->p);
}
/* x rounded to the format: nearest, ties to even (rint in the default
   mode), past the largest finite value to infinity. */
static double h_round(const hfmt *f, double x) {
    int emin = 1 - f->bias, e;
    double a = fabs(x), q, r, maxf;
    if (x != x) return NAN;
    if (a == 0.0 || isinf(a)) return x;
    maxf = ldexp(2.0 - ldexp(1.0, -f->p), f->bias);
    frexp(a, &e);
    e -= 1; /* a in [2^e, 2^(e+1)) */
    if (e < emin) e = emin;
    q = ldexp(1.0, e - f->p);
    r = rint(a / q) * q;
    if (r > maxf) r = HUGE_VAL;
    return x < 0 ? -r : r;
}
static unsigned h_to(const hfmt *f, gaia_ctx *ctx, float x) {
    uint16_t h = 0;
    if (f->p == 7) gaia_f32_to_bf16(ctx, &x, &h, 1);
    else gaia_f32_to_f16(ctx, &x, &h, 1);
    return h;
}
static unsigned f_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

/* Every one of the 65536 patterns: decoded to its exact value, and back to
   the same pattern (a NaN to a quiet NaN of the same sign). Whole arrays go
   through the array entry points. */
static void half_exhaustive(gt *t, const hfmt *f) {
    uint16_t *h = (uint16_t *)malloc(65536 * sizeof *h), *back = (uint16_t *)malloc(65536 * sizeof *back);
    float *x = gt_alloc_floats(65536);
    unsigned i, quiet = 1u << (f->p - 1);
    GT_CHECK_OR_DONE(t, h && back && x, "out of memory");
    for (i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    if (f->p == 7) {
        GT_CHECK_OR_DONE(t, gaia_bf16_to_f32(t->ctx, h, x, 65536) == GAIA_OK, "%s", gaia_last_error(t->ctx));
        GT_CHECK_OR_DONE(t, gaia_f32_to_bf16(t->ctx, x, back, 65536) == GAIA_OK, "%s", gaia_last_error(t->ctx));
    } else {
        GT_CHECK_OR_DONE(t, gaia_f16_to_f32(t->ctx, h, x, 65536) == GAIA_OK, "%s", gaia_last_error(t->ctx));
        GT_CHECK_OR_DONE(t, gaia_f32_to_f16(t->ctx, x, back, 65536) == GAIA_OK, "%s", gaia_last_error(t->ctx));
    }
    for (i = 0; i < 65536; i++) {
        double v = h_value(f, i);
        unsigned sign = i >> 15;
        if (h_isnan(f, i)) {
            GT_CHECK_OR_DONE(t, x[i] != x[i] && (f_bits(x[i]) & 0x00400000u) && (f_bits(x[i]) >> 31) == sign,
                             "%s 0x%04x: float 0x%08x is no quiet NaN of its sign", f->name, i, f_bits(x[i]));
            GT_CHECK_OR_DONE(t, h_isnan(f, back[i]) && (back[i] & quiet) && (unsigned)(back[i] >> 15) == sign,
                             "%s 0x%04x came back as 0x%04x", f->name, i, back[i]);
        } else {
            GT_CHECK_OR_DONE(t, (double)x[i] == v && (f_bits(x[i]) >> 31) == sign,
                             "%s 0x%04x decoded to %.9g, definition says %.9g", f->name, i, (double)x[i], v);
            GT_CHECK_OR_DONE(t, back[i] == i, "%s 0x%04x -> %.9g -> 0x%04x", f->name, i, (double)x[i], back[i]);
        }
    }
done:
    free(h);
    free(back);
    free(x);
}
static void half_bf16_exhaustive(gt *t) { half_exhaustive(t, &BF16); }
static void half_f16_exhaustive(gt *t) { half_exhaustive(t, &F16); }

/* One float32 against the float64 reference rounding. */
static int half_one(gt *t, const hfmt *f, float x) {
    unsigned h = h_to(f, t->ctx, x);
    double ref = h_round(f, (double)x), got = h_value(f, h);
    if (x != x) {
        if (h_isnan(f, h) && (h & (1u << (f->p - 1))) && (h >> 15) == (f_bits(x) >> 31)) return 1;
        gt_fail_at(t, __FILE__, __LINE__, "%s: NaN 0x%08x became 0x%04x", f->name, f_bits(x), h);
        return 0;
    }
    if (got == ref && (h >> 15) == (f_bits(x) >> 31)) return 1;
    gt_fail_at(t, __FILE__, __LINE__, "%s: %.9g (0x%08x) became 0x%04x = %.9g, reference %.9g", f->name, (double)x,
               f_bits(x), h, got, ref);
    return 0;
}

/* Random float32 bit patterns (every class: NaNs, infinities, subnormals,
   the whole exponent range), random values in the format's own range, the
   exact midpoints between neighbours (ties go to the even one), and the
   special values. */
static void half_round(gt *t, const hfmt *f) {
    static const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.996f, 65520.0f, -65520.0f,
                                     65536.0f, 3.3895314e38f, 3.3961e38f, 3.4028235e38f, -3.4028235e38f,
                                     5.9604645e-08f /* 2^-24 */, 2.9802322e-08f /* 2^-25 */,
                                     2.9802326e-08f /* just above 2^-25 */, 8.940697e-08f /* 1.5 * 2^-24 */,
                                     6.1035156e-05f /* 2^-14 */, 6.1031e-05f, 1.1754944e-38f, 1.4e-45f, -1.4e-45f,
                                     9.1835e-41f /* a bf16 subnormal */, 1.00390625f /* 1 + 2^-8 */,
                                     1.01171875f /* 1 + 3 * 2^-8 */, 1.00048828125f /* 1 + 2^-11 */};
    float x;
    uint32_t u;
    int i;
    for (i = 0; i < (int)(sizeof specials / sizeof specials[0]); i++)
        if (!half_one(t, f, specials[i])) return;
    x = HUGE_VALF;
    if (!half_one(t, f, x) || !half_one(t, f, -x)) return;
    for (i = 0; i < 4000; i++) {
        /* NaNs: signalling and quiet, small and large payloads, both signs */
        uint32_t v = 0x7f800001u + (uint32_t)(gt_u64(t) % 0x7fffffu);
        if (i & 1) v |= 0x80000000u;
        if (i < 64) v = 0x7f800000u | (1u << (i % 23)) | (i & 1 ? 0x80000000u : 0u);
        memcpy(&x, &v, 4);
        if (!half_one(t, f, x)) return;
    }
    for (i = 0; i < 200000; i++) {
        u = (uint32_t)gt_u64(t);
        memcpy(&x, &u, 4);
        if (!half_one(t, f, x)) return;
    }
    for (i = 0; i < 100000; i++) {
        /* inside the format's range, subnormals included */
        double e = gt_uniform(t, -(double)(f->bias + f->p + 2), (double)f->bias + 1.0);
        x = (float)(ldexp(1.0, 0) * pow(2.0, e) * (gt_u64(t) & 1 ? -1.0 : 1.0));
        if (!half_one(t, f, x)) return;
    }
    for (i = 0; i < 100000; i++) {
        /* the midpoint of two neighbours (exact in float32), and a float32 step either side */
        unsigned h = (unsigned)(gt_u64(t) & 0x7fffu), emax = (1u << f->ebits) - 1u;
        double lo, hi, mid;
        float xm;
        if ((h >> f->p & emax) == emax || ((h + 1) >> f->p & emax) == emax) continue; /* both finite */
        lo = h_value(f, h);
        hi = h_value(f, h + 1);
        mid = 0.5 * (lo + hi);
        xm = (float)mid;
        GT_CHECK(t, (double)xm == mid, "%s midpoint %.17g is not a float", f->name, mid);
        if (!half_one(t, f, xm) || !half_one(t, f, -xm)) return;
        GT_CHECK(t, (h_to(f, t->ctx, xm) & 1u) == 0, "%s: the tie %.9g went to odd 0x%04x", f->name, (double)xm,
                 h_to(f, t->ctx, xm));
        if (!half_one(t, f, nextafterf(xm, 0.0f)) || !half_one(t, f, nextafterf(xm, HUGE_VALF))) return;
    }
}
static void half_bf16_round(gt *t) { half_round(t, &BF16); }
static void half_f16_round(gt *t) { half_round(t, &F16); }

/* Bad input: a status and a message naming the function, nothing written. */
static void half_bad_input(gt *t) {
    float x[4] = {1.5f, -2.25f, 3.0f, 4.0f};
    uint16_t h[8] = {0};
    size_t shape[2] = {2, 2};
    gaia_tensor *a = NULL, *b = NULL;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_f32_to_bf16(NULL, x, h, 4));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_f32_to_bf16(t->ctx, NULL, h, 4));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_f32_to_bf16") && strstr(gaia_last_error(t->ctx), "src is NULL"),
             "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_f32_to_f16(t->ctx, x, NULL, 4));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_f32_to_f16") && strstr(gaia_last_error(t->ctx), "dst is NULL"),
             "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_bf16_to_f32(t->ctx, NULL, x, 1));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_bf16_to_f32"), "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_f16_to_f32(t->ctx, h, NULL, 3));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_f16_to_f32"), "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_f16_to_f32(t->ctx, h, (float *)(void *)h, 2)); /* overlap */
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "overlap"), "message: %s", gaia_last_error(t->ctx));
    GT_OK(t, gaia_f32_to_bf16(t->ctx, NULL, NULL, 0)); /* nothing to do */
    GT_CHECK(t, h[0] == 0, "a failed call wrote");
    GT_OK(t, gaia_tensor_from_host(t->ctx, 2, shape, x, &a));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_to_host_bf16(t->ctx, a, NULL, 4));
    GT_CHECK_OR_DONE(t, strstr(gaia_last_error(t->ctx), "gaia_tensor_to_host_bf16"), "message: %s",
                     gaia_last_error(t->ctx));
    GT_CHECK_OR_DONE(t, gaia_tensor_to_host_f16(t->ctx, a, h, 3) == GAIA_ERR_SHAPE, "capacity 3 < 4 accepted");
    GT_CHECK_OR_DONE(t, strstr(gaia_last_error(t->ctx), "gaia_tensor_to_host_f16") &&
                            strstr(gaia_last_error(t->ctx), "3") && strstr(gaia_last_error(t->ctx), "4"),
                     "message: %s", gaia_last_error(t->ctx));
    GT_CHECK_OR_DONE(t, gaia_tensor_to_host_bf16(t->ctx, NULL, h, 4) == GAIA_ERR_INVALID_ARG, "NULL tensor accepted");
    GT_CHECK_OR_DONE(t, gaia_tensor_from_host_bf16(t->ctx, 2, shape, NULL, &b) == GAIA_ERR_INVALID_ARG && !b,
                     "NULL data accepted");
    GT_CHECK_OR_DONE(t, strstr(gaia_last_error(t->ctx), "gaia_tensor_from_host_bf16"), "message: %s",
                     gaia_last_error(t->ctx));
    GT_CHECK_OR_DONE(t, gaia_tensor_from_host_f16(t->ctx, 0, shape, h, &b) != GAIA_OK && !b, "0-D shape accepted");
    GT_CHECK_OR_DONE(t, gaia_tensor_from_host_f16(NULL, 2, shape, h, &b) == GAIA_ERR_INVALID_ARG, "NULL ctx accepted");
done:
    gaia_tensor_free(a);
    gaia_tensor_free(b);
}

/* Tensors to and from half buffers on the context's device: to_host rounds
   as the reference does, from_host is exact, and filling an existing
   tensor works. */
static void half_tensor_transfer(gt *t) {
    size_t shape[2] = {37, 29}, n = 37 * 29, i;
    float *x = gt_alloc_floats(n), *back = NULL;
    uint16_t *hb = (uint16_t *)malloc(n * sizeof *hb), *hf = (uint16_t *)malloc(n * sizeof *hf);
    gaia_tensor *a = NULL, *b = NULL, *c = NULL;
    GT_CHECK_OR_DONE(t, x && hb && hf, "out of memory");
    gt_fill_normal(t, x, n);
    for (i = 0; i < n; i++) x[i] *= (float)ldexp(1.0, (int)(gt_u64(t) % 40) - 20); /* spread the exponents */
    GT_CHECK_OR_DONE(t, gaia_tensor_from_host(t->ctx, 2, shape, x, &a) == GAIA_OK, "%s", gaia_last_error(t->ctx));
    GT_CHECK_OR_DONE(t, gaia_tensor_to_host_bf16(t->ctx, a, hb, n) == GAIA_OK, "%s", gaia_last_error(t->ctx));
    GT_CHECK_OR_DONE(t, gaia_tensor_to_host_f16(t->ctx, a, hf, n) == GAIA_OK, "%s", gaia_last_error(t->ctx));
    for (i = 0; i < n; i++) {
        GT_CHECK_OR_DONE(t, h_value(&BF16, hb[i]) == h_round(&BF16, x[i]), "bf16 element %zu: %.9g -> %.9g, ref %.9g",
                         i, (double)x[i], h_value(&BF16, hb[i]), h_round(&BF16, x[i]));
        GT_CHECK_OR_DONE(t, h_value(&F16, hf[i]) == h_round(&F16, x[i]), "f16 element %zu: %.9g -> %.9g, ref %.9g", i,
                         (double)x[i], h_value(&F16, hf[i]), h_round(&F16, x[i]));
    }
    GT_CHECK_OR_DONE(t, gaia_tensor_from_host_bf16(t->ctx, 2, shape, hb, &b) == GAIA_OK, "%s",
                     gaia_last_error(t->ctx));
    GT_CHECK_OR_DONE(t, gaia_tensor_device(b) == gaia_ctx_device(t->ctx), "wrong device");
    back = gt_host(t, b);
    GT_CHECK_OR_DONE(t, back != NULL, "download failed");
    for (i = 0; i < n; i++)
        GT_CHECK_OR_DONE(t, (double)back[i] == h_value(&BF16, hb[i]), "bf16 element %zu: %.9g, want %.9g", i,
                         (double)back[i], h_value(&BF16, hb[i]));
    free(back);
    back = NULL;
    /* an existing tensor is filled in place (f16 this time) */
    GT_CHECK_OR_DONE(t, gaia_tensor_zeros(t->ctx, 2, shape, &c) == GAIA_OK, "%s", gaia_last_error(t->ctx));
    GT_CHECK_OR_DONE(t, gaia_tensor_from_host_f16(t->ctx, 2, shape, hf, &c) == GAIA_OK, "%s", gaia_last_error(t->ctx));
    back = gt_host(t, c);
    GT_CHECK_OR_DONE(t, back != NULL, "download failed");
    for (i = 0; i < n; i++)
        GT_CHECK_OR_DONE(t, (double)back[i] == h_value(&F16, hf[i]), "f16 element %zu: %.9g, want %.9g", i,
                         (double)back[i], h_value(&F16, hf[i]));
done:
    free(x);
    free(back);
    free(hb);
    free(hf);
    gaia_tensor_free(a);
    gaia_tensor_free(b);
    gaia_tensor_free(c);
}


/* safetensors in BF16 and F16: gaia's loader reads back the reference
   rounding of every element; a file of representable values saves again
   to the same bytes; Python (NumPy parsing the format by hand, no
   safetensors package needed) reads the same values. */
static void half_safetensors_save(gt *t) {
    static const char *meta[] = {"k", "v", NULL};
    static const gaia_precision precs[2] = {GAIA_PREC_BF16, GAIA_PREC_F16};
    static const char *const dtypes[2] = {"BF16", "F16"};
    size_t shape[2] = {13, 7}, n = 13 * 7, one = 1, i;
    int p;
    float *x = gt_alloc_floats(n), *back = NULL, *ref = gt_alloc_floats(n);
    gaia_tensor *a = NULL, *s = NULL, *r = NULL;
    gaia_safetensors *f = NULL, *g = NULL;
    void *img1 = NULL, *img2 = NULL;
    size_t size1 = 0, size2 = 0;
    char path[600], refpath[600], script[600], cmd[2400];
    const char *py;
    float scalar = 3.0f;
    FILE *out;
    GT_CHECK_OR_DONE(t, x && ref, "out of memory");
    gt_fill_normal(t, x, n);
    for (i = 0; i < n; i++) x[i] *= (float)ldexp(1.0, (int)(gt_u64(t) % 48) - 30);
    x[0] = 70000.0f;      /* past the largest f16: Inf there */
    x[1] = -HUGE_VALF;
    x[2] = 1.0e-7f;       /* an f16 subnormal */
    x[3] = 1.00390625f;   /* a bf16 tie: to even (1) */
    GT_OK(t, gaia_tensor_from_host(t->ctx, 2, shape, x, &a));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &one, &scalar, &s));
    for (p = 0; p < 2; p++) {
        const hfmt *fm = p == 0 ? &BF16 : &F16;
        gaia_named_tensor items[2];
        items[0].name = "w";
        items[0].tensor = a;
        items[1].name = "step";
        items[1].tensor = s;
        snprintf(cmd, sizeof cmd, "saved_%s.safetensors", dtypes[p]);
        gt_tmp_path(path, sizeof path, cmd);
        GT_CHECK_OR_DONE(t, gaia_safetensors_save_prec(t->ctx, path, items, 2, meta, precs[p]) == GAIA_OK, "%s",
                         gaia_last_error(t->ctx));
        GT_CHECK_OR_DONE(t, gaia_safetensors_load(t->ctx, path, &f) == GAIA_OK, "%s", gaia_last_error(t->ctx));
        GT_CHECK_OR_DONE(t, strcmp(gaia_safetensors_meta(f, "k"), "v") == 0, "metadata lost");
        back = gt_host(t, gaia_safetensors_get(f, "w"));
        GT_CHECK_OR_DONE(t, back != NULL, "no tensor w");
        for (i = 0; i < n; i++) {
            ref[i] = (float)h_round(fm, x[i]);
            GT_CHECK_OR_DONE(t, (double)back[i] == h_round(fm, x[i]), "%s element %zu: %.9g saved as %.9g, ref %.9g",
                             dtypes[p], i, (double)x[i], (double)back[i], h_round(fm, x[i]));
        }
        GT_CHECK_OR_DONE(t, p == 0 ? back[3] == 1.0f : isinf(back[0]), "%s: the planted value went wrong", dtypes[p]);
        free(back);
        back = NULL;
        /* representable values: saving again gives the same image */
        items[0].tensor = gaia_safetensors_get(f, "w");
        items[1].tensor = gaia_safetensors_get(f, "step");
        GT_CHECK_OR_DONE(t, gaia_safetensors_image_prec(t->ctx, items, 2, meta, precs[p], &img1, &size1) == GAIA_OK,
                         "%s", gaia_last_error(t->ctx));
        GT_CHECK_OR_DONE(t, gaia_safetensors_parse(t->ctx, img1, size1, &g) == GAIA_OK, "%s", gaia_last_error(t->ctx));
        items[0].tensor = gaia_safetensors_get(g, "w");
        items[1].tensor = gaia_safetensors_get(g, "step");
        GT_CHECK_OR_DONE(t, gaia_safetensors_image_prec(t->ctx, items, 2, meta, precs[p], &img2, &size2) == GAIA_OK,
                         "%s", gaia_last_error(t->ctx));
        GT_CHECK_OR_DONE(t, size1 == size2 && memcmp(img1, img2, size1) == 0, "%s: a second save changed the bytes",
                         dtypes[p]);
        {
            const unsigned char *b = (const unsigned char *)img1;
            size_t hl = 0;
            int k;
            for (k = 7; k >= 0; k--) hl = (hl << 8) | b[k];
            GT_CHECK_OR_DONE(t, size1 == 8 + hl + (n + 1) * 2, "%s image: %zu bytes, header %zu, not 2 bytes an element",
                             dtypes[p], size1, hl);
        }
        gaia_image_free(t->ctx, img1);
        gaia_image_free(t->ctx, img2);
        img1 = img2 = NULL;
        gaia_safetensors_free(g);
        g = NULL;
        gaia_safetensors_free(f);
        f = NULL;
        /* the reference values, as float32, for Python to compare with */
        GT_OK(t, gaia_tensor_from_host(t->ctx, 2, shape, ref, &r));
        items[0].tensor = r;
        snprintf(cmd, sizeof cmd, "ref_%s.safetensors", dtypes[p]);
        gt_tmp_path(refpath, sizeof refpath, cmd);
        GT_CHECK_OR_DONE(t, gaia_safetensors_save(t->ctx, refpath, items, 1, NULL) == GAIA_OK, "%s",
                         gaia_last_error(t->ctx));
        gaia_tensor_free(r);
        r = NULL;
    }
    py = gt_python(cmd, sizeof cmd, "numpy, json");
    if (!py) {
        gt_skip_because(t, "gaia's round trips passed; no python with numpy for the interop half");
        goto done;
    }
    gt_tmp_path(script, sizeof script, "half_interop.py");
    out = fopen(script, "w");
    GT_CHECK_OR_DONE(t, out != NULL, "cannot write %s", script);
    fprintf(out,
            "import sys, json, struct, numpy as np\n"
            "def read(path):\n"
            "    b = open(path, 'rb').read()\n"
            "    n = struct.unpack('<Q', b[:8])[0]\n"
            "    h = json.loads(b[8:8 + n]); h.pop('__metadata__', None); out = {}\n"
            "    for k, e in h.items():\n"
            "        s, t = e['data_offsets']; raw = b[8 + n + s:8 + n + t]\n"
            "        if e['dtype'] == 'BF16':\n"
            "            v = (np.frombuffer(raw, '<u2').astype(np.uint32) << 16).view(np.float32)\n"
            "        elif e['dtype'] == 'F16': v = np.frombuffer(raw, '<f2').astype(np.float32)\n"
            "        else: v = np.frombuffer(raw, '<f4')\n"
            "        out[k] = (e['dtype'], v.reshape(e['shape']))\n"
            "    return out\n"
            "for dt in ('BF16', 'F16'):\n"
            "    d = read(sys.argv[1] + '/saved_' + dt + '.safetensors')\n"
            "    r = read(sys.argv[1] + '/ref_' + dt + '.safetensors')\n"
            "    assert d['w'][0] == dt and d['w'][1].shape == (13, 7), d['w']\n"
            "    assert np.array_equal(d['w'][1], r['w'][1]), (dt, d['w'][1] - r['w'][1])\n"
            "    assert d['step'][1].tolist() == [3.0]\n"
            "    try:\n"
            "        from safetensors.numpy import load_file\n"
            "        if dt == 'F16': assert np.array_equal(load_file(sys.argv[1] + '/saved_F16.safetensors')['w'], r['w'][1])\n"
            "    except ImportError: pass\n");
    GT_CHECK_OR_DONE(t, fclose(out) == 0, "cannot write %s", script);
    {
        char dir[600];
        char *slash;
        snprintf(dir, sizeof dir, "%s", path);
        slash = strrchr(dir, '/');
        if (slash) *slash = '\0';
        else snprintf(dir, sizeof dir, ".");
        snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", py, script, dir);
    }
    GT_CHECK_OR_DONE(t, system(cmd) == 0, "python read other values: %s", cmd);
done:
    free(x);
    free(ref);
    free(back);
    gaia_image_free(t->ctx, img1);
    gaia_image_free(t->ctx, img2);
    gaia_safetensors_free(f);
    gaia_safetensors_free(g);
    gaia_tensor_free(a);
    gaia_tensor_free(s);
    gaia_tensor_free(r);
}

static void half_safetensors_bad_input(gt *t) {
    size_t one = 1;
    float v = 1.0f;
    gaia_tensor *a = NULL;
    gaia_named_tensor item;
    void *img = NULL;
    size_t size = 0;
    char path[600];
    gt_tmp_path(path, sizeof path, "bad_prec.safetensors");
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &one, &v, &a));
    item.name = "x";
    item.tensor = a;
    GT_CHECK_OR_DONE(t, gaia_safetensors_save_prec(t->ctx, path, &item, 1, NULL, (gaia_precision)7) ==
                            GAIA_ERR_INVALID_ARG, "precision 7 accepted");
    GT_CHECK_OR_DONE(t, strstr(gaia_last_error(t->ctx), "gaia_safetensors_save_prec") &&
                            strstr(gaia_last_error(t->ctx), "7"), "message: %s", gaia_last_error(t->ctx));
    GT_CHECK_OR_DONE(t, gaia_safetensors_image_prec(t->ctx, &item, 1, NULL, (gaia_precision)-1, &img, &size) ==
                            GAIA_ERR_INVALID_ARG && !img, "precision -1 accepted");
    GT_CHECK_OR_DONE(t, strstr(gaia_last_error(t->ctx), "gaia_safetensors_image_prec"), "message: %s",
                     gaia_last_error(t->ctx));
    GT_CHECK_OR_DONE(t, gaia_safetensors_save_prec(t->ctx, NULL, &item, 1, NULL, GAIA_PREC_BF16) == GAIA_ERR_INVALID_ARG,
                     "NULL path accepted");
    GT_CHECK_OR_DONE(t, gaia_safetensors_image_prec(t->ctx, NULL, 1, NULL, GAIA_PREC_F16, &img, &size) ==
                            GAIA_ERR_INVALID_ARG, "NULL tensors accepted");
    GT_CHECK_OR_DONE(t, fopen(path, "rb") == NULL, "a failed save left a file");
done:
    gaia_tensor_free(a);
}

/* ---- the reduced-precision matmul ---- */

/* ref = sum_k round(op(A))(i,k) round(op(B))(k,j) in float64 over the
   rounded operands, and mag = sum |products| (the float32 sums' scale). */
static void mm_ref(const hfmt *f, int ta, int tb, size_t M, size_t N, size_t K, const float *A, const float *B,
                   double *ref, double *mag) {
    size_t i, j, k;
    double *ra = (double *)malloc(M * K * sizeof(double)), *rb = (double *)malloc(K * N * sizeof(double));
    if (!ra || !rb) { /* the caller's check fails on the NaNs */
        for (i = 0; i < M * N; i++) ref[i] = mag[i] = NAN;
        free(ra), free(rb);
        return;
    }
    for (i = 0; i < M; i++) /* ra[i][k] = round(op(A))(i, k), rb[j][k] = round(op(B))(k, j) */
        for (k = 0; k < K; k++) ra[i * K + k] = h_round(f, ta ? A[k * M + i] : A[i * K + k]);
    for (j = 0; j < N; j++)
        for (k = 0; k < K; k++) rb[j * K + k] = h_round(f, tb ? B[j * K + k] : B[k * N + j]);
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) {
            double sum = 0.0, m = 0.0;
            for (k = 0; k < K; k++) {
                double p = ra[i * K + k] * rb[j * K + k];
                sum += p;
                m += fabs(p);
            }
            ref[i * N + j] = sum;
            mag[i * N + j] = m;
        }
    free(ra), free(rb);
}
/* The float32 sums of K products: within 2e-6 of their magnitude sum (a
   float32 rounding is 6e-8; an unrounded operand is off by ~4e-3 a product). */
static long mm_mismatch(const double *ref, const double *mag, const float *got, size_t n) {
    size_t i;
    for (i = 0; i < n; i++)
        if (!(fabs((double)got[i] - ref[i]) <= 2e-6 * mag[i] + 1e-30)) return (long)i;
    return -1;
}

/* gaia_tensor_matmul_prec against the float64 reference on rounded inputs:
   ragged shapes (edges of the 12 x 32 register tile, odd K, K past one
   1024-deep block), every transpose pair, 1 and 2 threads, bf16 and f16,
   2-D, batched 3-D x 3-D and 3-D x 2-D. */
static void half_matmul_prec_reference(gt *t) {
    static const size_t shapes[][3] = {{1, 1, 1},   {5, 3, 7},     {13, 33, 17},  {37, 65, 129},
                                       {2, 200, 9}, {100, 70, 1031}, {97, 131, 2}, {64, 64, 64}};
    size_t s, maxe = 131 * 1031 * 3, i;
    float *A = gt_alloc_floats(maxe), *B = gt_alloc_floats(maxe), *got = NULL;
    double *ref = (double *)malloc(maxe * sizeof(double)), *mag = (double *)malloc(maxe * sizeof(double));
    int nt, tr, p;
    gaia_ctx *ctx = NULL;
    gaia_tensor *a = NULL, *b = NULL, *y = NULL;
    GT_CHECK_OR_DONE(t, A && B && ref && mag, "out of memory");
    for (nt = 1; nt <= 2; nt++) {
        gaia_ctx_desc d;
        memset(&d, 0, sizeof d);
        d.device = gaia_ctx_device(t->ctx);
        d.cpu_threads = nt;
        GT_CHECK_OR_DONE(t, gaia_ctx_create(&d, &ctx) == GAIA_OK, "context with %d threads", nt);
        for (p = 0; p < 2; p++) {
            const hfmt *f = p ? &F16 : &BF16;
            gaia_precision prec = p ? GAIA_PREC_F16 : GAIA_PREC_BF16;
            for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                for (tr = 0; tr < 4; tr++) {
                    size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
                    size_t sa[2], sb[2];
                    int ta = tr & 1, tb = tr >> 1;
                    long bad;
                    gt_fill_normal(t, A, M * K); /* fresh inputs each time */
                    gt_fill_normal(t, B, K * N);
                    sa[0] = ta ? K : M, sa[1] = ta ? M : K;
                    sb[0] = tb ? N : K, sb[1] = tb ? K : N;
                    GT_CHECK_OR_DONE(t, gaia_tensor_from_host(ctx, 2, sa, A, &a) == GAIA_OK, "upload a");
                    GT_CHECK_OR_DONE(t, gaia_tensor_from_host(ctx, 2, sb, B, &b) == GAIA_OK, "upload b");
                    GT_CHECK_OR_DONE(t, gaia_tensor_matmul_prec(ctx, a, b, ta, tb, prec, &y) == GAIA_OK, "%s",
                                     gaia_last_error(ctx));
                    GT_CHECK_OR_DONE(t, gaia_tensor_dim(y, 0) == M && gaia_tensor_dim(y, 1) == N, "shape");
                    got = gt_alloc_floats(M * N);
                    GT_CHECK_OR_DONE(t, gaia_tensor_to_host(ctx, y, got, M * N) == GAIA_OK, "download");
                    mm_ref(f, ta, tb, M, N, K, A, B, ref, mag);
                    bad = mm_mismatch(ref, mag, got, M * N);
                    GT_CHECK_OR_DONE(t, bad < 0, "%s %zux%zux%zu ta=%d tb=%d, %d threads: (%ld,%ld) ref %.9g got %.9g",
                                     f->name, M, N, K, ta, tb, nt, bad / (long)N, bad % (long)N, ref[bad],
                                     (double)got[bad]);
                    free(got);
                    got = NULL;
                    gaia_tensor_free(a), gaia_tensor_free(b), gaia_tensor_free(y);
                    a = b = y = NULL;
                }
            /* batched: 3 x [M, K] . [K, N] (each its own B), then one shared 2-D B */
            for (tr = 0; tr < 8; tr++) {
                size_t M = 19, N = 45, K = 33, batch = 3, bi, sa[3], sb[3];
                int ta = tr & 1, tb = (tr >> 1) & 1, shared = tr >> 2;
                long bad;
                gt_fill_normal(t, A, batch * M * K);
                gt_fill_normal(t, B, batch * K * N);
                sa[0] = batch, sa[1] = ta ? K : M, sa[2] = ta ? M : K;
                sb[0] = batch, sb[1] = tb ? N : K, sb[2] = tb ? K : N;
                GT_CHECK_OR_DONE(t, gaia_tensor_from_host(ctx, 3, sa, A, &a) == GAIA_OK, "upload a");
                GT_CHECK_OR_DONE(t, gaia_tensor_from_host(ctx, shared ? 2 : 3, shared ? sb + 1 : sb, B, &b) == GAIA_OK,
                                 "upload b");
                GT_CHECK_OR_DONE(t, gaia_tensor_matmul_prec(ctx, a, b, ta, tb, prec, &y) == GAIA_OK, "%s",
                                 gaia_last_error(ctx));
                got = gt_alloc_floats(batch * M * N);
                GT_CHECK_OR_DONE(t, gaia_tensor_to_host(ctx, y, got, batch * M * N) == GAIA_OK, "download");
                for (bi = 0; bi < batch; bi++) {
                    mm_ref(f, ta, tb, M, N, K, A + bi * M * K, B + (shared ? 0 : bi * K * N), ref, mag);
                    bad = mm_mismatch(ref, mag, got + bi * M * N, M * N);
                    GT_CHECK_OR_DONE(t, bad < 0, "%s batch %zu of 3 (%s B) ta=%d tb=%d, %d threads: (%ld,%ld) ref %.9g got %.9g",
                                     f->name, bi, shared ? "shared" : "own", ta, tb, nt, bad / (long)N, bad % (long)N,
                                     ref[bad], (double)got[bi * M * N + (size_t)bad]);
                }
                free(got);
                got = NULL;
                gaia_tensor_free(a), gaia_tensor_free(b), gaia_tensor_free(y);
                a = b = y = NULL;
            }
        }
        gaia_ctx_destroy(ctx);
        ctx = NULL;
    }
    (void)i;
done:
    free(A);
    free(B);
    free(got);
    free(ref);
    free(mag);
    gaia_tensor_free(a), gaia_tensor_free(b), gaia_tensor_free(y);
    gaia_ctx_destroy(ctx);
}

/* gaia_cpu_gemm_bf16 on host arrays: alpha, beta, leading dimensions wider
   than the matrix (the padding untouched), 1 and 2 threads. */
static void half_cpu_gemm_bf16(gt *t) {
    static const size_t shapes[][3] = {{7, 9, 5}, {40, 70, 301}, {130, 33, 1100}, {300, 300, 96}};
    size_t s, i, j, maxe = 330 * 1100;
    float *A = gt_alloc_floats(maxe), *B = gt_alloc_floats(maxe), *C = gt_alloc_floats(maxe), *C0 = gt_alloc_floats(maxe);
    double *ref = (double *)malloc(maxe * sizeof(double)), *mag = (double *)malloc(maxe * sizeof(double));
    void *work = NULL;
    int nt, tr;
    GT_CHECK_OR_DONE(t, A && B && C && C0 && ref && mag, "out of memory");
    work = malloc(gaia_cpu_sgemm_work_size(2) + 64);
    GT_CHECK_OR_DONE(t, work != NULL, "out of memory");
    for (nt = 1; nt <= 2; nt++)
        for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (tr = 0; tr < 4; tr++) {
                size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], ldc = N + 3;
                int ta = tr & 1, tb = tr >> 1;
                float *w = (float *)(((uintptr_t)work + 63) & ~(uintptr_t)63);
                /* first fill the packing buffers with NaN (a product over every
                   slot): the zero padding of the next product must hide it */
                for (i = 0; i < 320 * 1024; i++) A[i] = B[i] = NAN;
                gaia_cpu_gemm_bf16(ta, tb, 300, 320, 1024, 1.0f, A, ta ? 300 : 1024, B, tb ? 1024 : 320, 0.0f, C, 320,
                                   nt, w);
                gt_fill_normal(t, A, M * K);
                gt_fill_normal(t, B, K * N);
                gt_fill_normal(t, C0, M * ldc);
                memcpy(C, C0, M * ldc * sizeof(float));
                gaia_cpu_gemm_bf16(ta, tb, M, N, K, 0.75f, A, ta ? M : K, B, tb ? K : N, -1.5f, C, ldc, nt, w);
                mm_ref(&BF16, ta, tb, M, N, K, A, B, ref, mag);
                for (i = 0; i < M; i++) {
                    for (j = 0; j < N; j++) {
                        double want = 0.75 * ref[i * N + j] - 1.5 * (double)C0[i * ldc + j];
                        double tol = 2e-6 * (0.75 * mag[i * N + j] + 1.5 * fabs((double)C0[i * ldc + j])) + 1e-30;
                        GT_CHECK_OR_DONE(t, fabs((double)C[i * ldc + j] - want) <= tol,
                                         "%zux%zux%zu ta=%d tb=%d %d threads: (%zu,%zu) want %.9g got %.9g", M, N, K, ta,
                                         tb, nt, i, j, want, (double)C[i * ldc + j]);
                    }
                    for (; j < ldc; j++)
                        GT_CHECK_OR_DONE(t, memcmp(&C[i * ldc + j], &C0[i * ldc + j], 4) == 0,
                                         "padding (%zu,%zu) written", i, j);
                }
            }
done:
    free(A), free(B), free(C), free(C0), free(ref), free(mag), free(work);
}

/* The gradients through matmul_prec: loss = sum(y * w) with y = op(a) op(b)
   in bf16 gives da = w op(round(b))^T and db = op(round(a))^T w in float32
   (the incoming gradient w not rounded), for every transpose pair and for
   a shared 2-D b under a 3-D a. */
static void half_matmul_prec_grad(gt *t) {
    size_t M = 11, N = 37, K = 23, batch = 2, i, j, k, bi;
    float *A = gt_alloc_floats(batch * M * K), *B = gt_alloc_floats(batch * K * N), *W = gt_alloc_floats(batch * M * N);
    float *ga = gt_alloc_floats(batch * M * K), *gb = gt_alloc_floats(batch * K * N);
    double *rga = (double *)calloc(batch * M * K, sizeof(double)), *rgb = (double *)calloc(batch * K * N, sizeof(double));
    gaia_tensor *a = NULL, *b = NULL, *w = NULL, *y = NULL, *yw = NULL, *loss = NULL;
    int tr;
    GT_CHECK_OR_DONE(t, A && B && W && ga && gb && rga && rgb, "out of memory");
    for (tr = 0; tr < 8; tr++) {
        int ta = tr & 1, tb = (tr >> 1) & 1, shared = tr >> 2;
        size_t nb = shared ? 1 : batch, sa[3], sb[3], sw[3];
        gt_fill_normal(t, A, batch * M * K);
        gt_fill_normal(t, B, nb * K * N);
        gt_fill_normal(t, W, batch * M * N);
        sa[0] = batch, sa[1] = ta ? K : M, sa[2] = ta ? M : K;
        sb[0] = nb, sb[1] = tb ? N : K, sb[2] = tb ? K : N;
        sw[0] = batch, sw[1] = M, sw[2] = N;
        GT_CHECK_OR_DONE(t, gaia_tensor_from_host(t->ctx, 3, sa, A, &a) == GAIA_OK, "a");
        GT_CHECK_OR_DONE(t, gaia_tensor_from_host(t->ctx, shared ? 2 : 3, shared ? sb + 1 : sb, B, &b) == GAIA_OK, "b");
        GT_CHECK_OR_DONE(t, gaia_tensor_from_host(t->ctx, 3, sw, W, &w) == GAIA_OK, "w");
        GT_CHECK_OR_DONE(t, gaia_tensor_set_requires_grad(t->ctx, a, 1) == GAIA_OK, "grad a");
        GT_CHECK_OR_DONE(t, gaia_tensor_set_requires_grad(t->ctx, b, 1) == GAIA_OK, "grad b");
        GT_CHECK_OR_DONE(t, gaia_tensor_matmul_prec(t->ctx, a, b, ta, tb, GAIA_PREC_BF16, &y) == GAIA_OK, "%s",
                         gaia_last_error(t->ctx));
        GT_CHECK_OR_DONE(t, gaia_tensor_mul(t->ctx, y, w, &yw) == GAIA_OK, "mul");
        GT_CHECK_OR_DONE(t, gaia_tensor_sum(t->ctx, yw, GAIA_AXIS_ALL, &loss) == GAIA_OK, "sum");
        GT_CHECK_OR_DONE(t, gaia_backward(t->ctx, loss) == GAIA_OK, "%s", gaia_last_error(t->ctx));
        GT_CHECK_OR_DONE(t, gaia_tensor_to_host(t->ctx, gaia_tensor_grad(a), ga, batch * M * K) == GAIA_OK, "ga");
        GT_CHECK_OR_DONE(t, gaia_tensor_to_host(t->ctx, gaia_tensor_grad(b), gb, nb * K * N) == GAIA_OK, "gb");
        memset(rga, 0, batch * M * K * sizeof(double));
        memset(rgb, 0, batch * K * N * sizeof(double));
        for (bi = 0; bi < batch; bi++) {
            const float *Ab = A + bi * M * K, *Bb = B + (shared ? 0 : bi * K * N), *Wb = W + bi * M * N;
            double *ra = rga + bi * M * K, *rb = rgb + (shared ? 0 : bi * K * N);
            for (i = 0; i < M; i++)
                for (k = 0; k < K; k++)
                    for (j = 0; j < N; j++) {
                        size_t ia = ta ? k * M + i : i * K + k, ib = tb ? j * K + k : k * N + j;
                        ra[ia] += (double)Wb[i * N + j] * h_round(&BF16, Bb[ib]);
                        rb[ib] += h_round(&BF16, Ab[ia]) * (double)Wb[i * N + j];
                    }
        }
        for (i = 0; i < batch * M * K; i++)
            GT_CHECK_OR_DONE(t, fabs((double)ga[i] - rga[i]) <= 1e-5 * (1.0 + fabs(rga[i])),
                             "ta=%d tb=%d shared=%d: da[%zu] = %.9g, ref %.9g", ta, tb, shared, i, (double)ga[i], rga[i]);
        for (i = 0; i < nb * K * N; i++)
            GT_CHECK_OR_DONE(t, fabs((double)gb[i] - rgb[i]) <= 1e-5 * (1.0 + fabs(rgb[i])),
                             "ta=%d tb=%d shared=%d: db[%zu] = %.9g, ref %.9g", ta, tb, shared, i, (double)gb[i], rgb[i]);
        gaia_tape_clear(t->ctx);
        gaia_tensor_free(a), gaia_tensor_free(b), gaia_tensor_free(w), gaia_tensor_free(y), gaia_tensor_free(yw),
            gaia_tensor_free(loss);
        a = b = w = y = yw = loss = NULL;
    }
done:
    free(A), free(B), free(W), free(ga), free(gb), free(rga), free(rgb);
    gaia_tensor_free(a), gaia_tensor_free(b), gaia_tensor_free(w), gaia_tensor_free(y), gaia_tensor_free(yw),
        gaia_tensor_free(loss);
}

static void half_matmul_prec_bad_input(gt *t) {
    size_t s23[2] = {2, 3}, s43[2] = {4, 3};
    float v[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    gaia_tensor *a = NULL, *b = NULL, *y = NULL;
    GT_OK(t, gaia_tensor_from_host(t->ctx, 2, s23, v, &a));
    GT_CHECK_OR_DONE(t, gaia_tensor_from_host(t->ctx, 2, s43, v, &b) == GAIA_OK, "b");
    GT_CHECK_OR_DONE(t, gaia_tensor_matmul_prec(t->ctx, a, b, 0, 0, GAIA_PREC_BF16, &y) == GAIA_ERR_SHAPE && !y,
                     "[2,3] . [4,3] accepted");
    GT_CHECK_OR_DONE(t, strstr(gaia_last_error(t->ctx), "gaia_tensor_matmul_prec"), "message: %s",
                     gaia_last_error(t->ctx));
    GT_CHECK_OR_DONE(t, gaia_tensor_matmul_prec(t->ctx, a, b, 0, 1, (gaia_precision)5, &y) == GAIA_ERR_INVALID_ARG &&
                            !y, "precision 5 accepted");
    GT_CHECK_OR_DONE(t, strstr(gaia_last_error(t->ctx), "gaia_tensor_matmul_prec") &&
                            strstr(gaia_last_error(t->ctx), "5"), "message: %s", gaia_last_error(t->ctx));
    GT_CHECK_OR_DONE(t, gaia_tensor_matmul_prec(t->ctx, NULL, b, 0, 1, GAIA_PREC_BF16, &y) == GAIA_ERR_INVALID_ARG,
                     "NULL a accepted");
    GT_CHECK_OR_DONE(t, gaia_tensor_matmul_prec(NULL, a, b, 0, 1, GAIA_PREC_BF16, &y) == GAIA_ERR_INVALID_ARG,
                     "NULL ctx accepted");
    /* float32 is the plain matmul, bit for bit */
    GT_CHECK_OR_DONE(t, gaia_tensor_matmul_prec(t->ctx, a, b, 0, 1, GAIA_PREC_F32, &y) == GAIA_OK, "f32");
    {
        gaia_tensor *z = NULL;
        float fy[8], fz[8];
        GT_CHECK_OR_DONE(t, gaia_tensor_matmul(t->ctx, a, b, 0, 1, &z) == GAIA_OK, "matmul");
        gaia_tensor_to_host(t->ctx, y, fy, 8);
        gaia_tensor_to_host(t->ctx, z, fz, 8);
        gaia_tensor_free(z);
        GT_CHECK_OR_DONE(t, memcmp(fy, fz, sizeof fy) == 0, "GAIA_PREC_F32 differs from gaia_tensor_matmul");
    }
done:
    gaia_tensor_free(a), gaia_tensor_free(b), gaia_tensor_free(y);
}

/* The same two on the AVX512-BF16 kernel where the AMX tiles would run
   (GAIA_NO_AMX turns them off; elsewhere these repeat the tests above). */
static void half_matmul_prec_reference_no_amx(gt *t) {
    setenv("GAIA_NO_AMX", "1", 1);
    half_matmul_prec_reference(t);
    unsetenv("GAIA_NO_AMX");
}
static void half_cpu_gemm_bf16_no_amx(gt *t) {
    setenv("GAIA_NO_AMX", "1", 1);
    half_cpu_gemm_bf16(t);
    unsetenv("GAIA_NO_AMX");
}

const gt_case gt_half_cases[] = {
    {"half_bf16_exhaustive", half_bf16_exhaustive},
    {"half_f16_exhaustive", half_f16_exhaustive},
    {"half_bf16_round", half_bf16_round},
    {"half_f16_round", half_f16_round},
    {"half_bad_input", half_bad_input},
    {"half_tensor_transfer", half_tensor_transfer},
    {"half_safetensors_save", half_safetensors_save},
    {"half_safetensors_bad_input", half_safetensors_bad_input},
    {"half_matmul_prec_reference", half_matmul_prec_reference},
    {"half_cpu_gemm_bf16", half_cpu_gemm_bf16},
    {"half_matmul_prec_reference_no_amx", half_matmul_prec_reference_no_amx},
    {"half_cpu_gemm_bf16_no_amx", half_cpu_gemm_bf16_no_amx},
    {"half_matmul_prec_grad", half_matmul_prec_grad},
    {"half_matmul_prec_bad_input", half_matmul_prec_bad_input},
    {NULL, NULL},
};
