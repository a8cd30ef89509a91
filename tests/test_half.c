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

const gt_case gt_half_cases[] = {
    {"half_bf16_exhaustive", half_bf16_exhaustive},
    {"half_f16_exhaustive", half_f16_exhaustive},
    {"half_bf16_round", half_bf16_round},
    {"half_f16_round", half_f16_round},
    {"half_bad_input", half_bad_input},
    {"half_tensor_transfer", half_tensor_transfer},
    {"half_safetensors_save", half_safetensors_save},
    {"half_safetensors_bad_input", half_safetensors_bad_input},
    {NULL, NULL},
};
