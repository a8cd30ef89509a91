/* Writes the fuzzers' seed corpus (small valid inputs of every kind) into
   <dir>/npy, <dir>/brain, <dir>/codebook and <dir>/safetensors. The committed corpus under
   tests/fuzz/corpus/ was made by it; run it again when a format changes:
       make fuzz-corpus                                                   */
#define GAIA_IMPLEMENTATION
#include "../../gaia.h"
#include <stdlib.h>
#include <string.h>

static gaia_ctx *ctx;

static void put(const char *dir, const char *kind, const char *name, const void *p, size_t n) {
    char path[1024];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s/%s", dir, kind, name);
    f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "make_corpus: cannot write %s\n", path);
        exit(1);
    }
}

static void check(gaia_status st) {
    if (st != GAIA_OK) {
        fprintf(stderr, "make_corpus: %s\n", gaia_last_error(ctx));
        exit(1);
    }
}

static void npy_seed(const char *dir, const char *name, int ndim, const size_t *shape) {
    gaia_tensor *t = NULL;
    void *img;
    size_t n;
    check(gaia_tensor_randn(ctx, ndim, shape, 0.0f, 1.0f, &t));
    check(gaia_npy_image(ctx, t, &img, &n));
    put(dir, "npy", name, img, n);
    gaia_image_free(ctx, img);
    gaia_tensor_free(t);
}

/* A hand-written header: float64, or a version 2 header, as NumPy writes them. */
static void npy_raw(const char *dir, const char *name, int version, const char *header, const void *data, size_t n) {
    unsigned char buf[512];
    size_t h = strlen(header), pre = version == 1 ? 10 : 12;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)version;
    buf[7] = 0;
    buf[8] = (unsigned char)h;
    buf[9] = 0;
    if (version > 1) buf[10] = buf[11] = 0;
    memcpy(buf + pre, header, h);
    memcpy(buf + pre + h, data, n);
    put(dir, "npy", name, buf, pre + h + n);
}

static void brain_seed(const char *dir, const char *name, gaia_area_mode mode) {
    gaia_brain *b = NULL;
    void *img;
    size_t n;
    check(gaia_brain_create(ctx, 0.1, 7, GAIA_DEVICE_CPU, &b));
    check(gaia_brain_add_stimulus(b, "s", 8));
    check(gaia_brain_add_area(b, "A", 120, 8, 0.2f, mode));
    check(gaia_brain_add_area(b, "B", 90, 6, 0.1f, mode));
    check(gaia_brain_set_beta(b, "A", "B", 0.3f));
    /* version 2's fields: a fibre's own p, the weight cap, a winner history */
    check(gaia_brain_set_p(b, "A", "B", 0.2));
    check(gaia_brain_set_p(b, "B", "B", 0.2)); /* a lazy B takes one p per step */
    check(gaia_brain_set_max_weight(b, 1.5f));
    check(gaia_brain_set_winner_history(b, "A", 2));
    check(gaia_brain_project_spec(b, "s>A"));
    check(gaia_brain_project_spec(b, "s>A A>A A>B"));
    check(gaia_brain_project_spec(b, "s>A A>A A>B B>B"));
    check(gaia_brain_store_assembly(b, "A", NULL));
    /* version 3's: inhibited areas and fibres (the fires are counted) */
    check(gaia_brain_inhibit_fibre(b, "A", "B", 1));
    check(gaia_brain_inhibit_fibre(b, "s", "A", 0));
    check(gaia_brain_inhibit_fibre(b, "s", "A", 5));
    check(gaia_brain_inhibit_area(b, "B", 2));
    /* version 4's: the lazy sampler */
    if (mode == GAIA_AREA_LAZY) check(gaia_brain_set_sampler(b, GAIA_SAMPLER_TRUNCNORM));
    check(gaia_brain_save_image(b, &img, &n));
    put(dir, "brain", name, img, n);
    gaia_brain_free_image(ctx, img);
    gaia_brain_destroy(b);
}

static void codebook_seed(const char *dir, const char *name, size_t M, size_t D, const char *names) {
    gaia_tensor *v = NULL;
    void *img;
    size_t n, len = strlen(names);
    unsigned char *buf;
    check(gaia_hrr_random(ctx, M, D, 0, &v));
    check(gaia_npy_image(ctx, v, &img, &n));
    buf = (unsigned char *)malloc(4 + n + len);
    buf[0] = (unsigned char)n;
    buf[1] = (unsigned char)(n >> 8);
    buf[2] = (unsigned char)(n >> 16);
    buf[3] = (unsigned char)(n >> 24);
    memcpy(buf + 4, img, n);
    memcpy(buf + 4 + n, names, len);
    put(dir, "codebook", name, buf, 4 + n + len);
    free(buf);
    gaia_image_free(ctx, img);
    gaia_tensor_free(v);
}

static void safetensors_seed(const char *dir, const char *name, size_t n, const char *const *meta) {
    static const size_t shapes[3][4] = {{5}, {2, 3}, {1, 2, 2, 1}};
    static const char *names[3] = {"w", "layer.0.bias", "caf\xc3\xa9 \"q\""};
    gaia_tensor *t[3] = {NULL, NULL, NULL};
    gaia_named_tensor items[3];
    void *img;
    size_t size, i;
    for (i = 0; i < n; i++) {
        check(gaia_tensor_randn(ctx, (int)i + (i == 2 ? 2 : 1), shapes[i], 0.0f, 1.0f, &t[i]));
        items[i].name = names[i];
        items[i].tensor = t[i];
    }
    check(gaia_safetensors_image(ctx, items, n, meta, &img, &size));
    put(dir, "safetensors", name, img, size);
    gaia_image_free(ctx, img);
    for (i = 0; i < n; i++) gaia_tensor_free(t[i]);
}

/* A hand-written header over raw data: the dtypes gaia converts. */
static void safetensors_raw(const char *dir, const char *name, const char *header, const void *data, size_t n) {
    unsigned char buf[1024];
    size_t h = strlen(header), k;
    for (k = 0; k < 8; k++) buf[k] = (unsigned char)((uint64_t)h >> (8 * k));
    memcpy(buf + 8, header, h);
    memcpy(buf + 8 + h, data, n);
    put(dir, "safetensors", name, buf, 8 + h + n);
}

int main(int argc, char **argv) {
    static const size_t s1[1] = {7}, s2[2] = {3, 5}, s4[4] = {2, 1, 3, 2};
    static const double f8[6] = {1.0, -2.0, 0.5, 1e300, -1e-300, 3.0};
    static const float f4[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    gaia_ctx_desc d;
    if (argc != 2) {
        fprintf(stderr, "usage: make_corpus DIR (DIR/npy, DIR/brain, DIR/codebook, DIR/safetensors must exist)\n");
        return 2;
    }
    memset(&d, 0, sizeof d);
    d.device = GAIA_DEVICE_CPU;
    d.seed = 20261124;
    if (gaia_ctx_create(&d, &ctx) != GAIA_OK) return 1;
    npy_seed(argv[1], "f4_1d", 1, s1);
    npy_seed(argv[1], "f4_2d", 2, s2);
    npy_seed(argv[1], "f4_4d", 4, s4);
    npy_raw(argv[1], "f8_2x3", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }\n", f8, sizeof f8);
    npy_raw(argv[1], "f4_v2", 2, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\n", f4, sizeof f4);
    npy_raw(argv[1], "f4_scalar", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }\n", f4, 4);
    brain_seed(argv[1], "explicit", GAIA_AREA_EXPLICIT);
    brain_seed(argv[1], "lazy", GAIA_AREA_LAZY);
    codebook_seed(argv[1], "three", 3, 8, "red\ngreen\nblue\n");
    codebook_seed(argv[1], "crlf", 2, 5, "left side\r\nright\r\n");
    codebook_seed(argv[1], "one", 1, 3, "x");
    {
        static const char *meta[] = {"format", "pt", "epoch", "3", NULL};
        static const unsigned char raw[48] = {0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0x3c, 0x80, 0x3f, 0xfd, 0xff, 0xff, 0xff,
                                              0xff, 0xff, 0xff, 0xff, 7, 0, 0, 0, 1, 0, 0xff, 0x80, 0x00, 0x00, 0x28, 0x40};
        safetensors_seed(argv[1], "three", 3, meta);
        safetensors_seed(argv[1], "one", 1, NULL);
        safetensors_seed(argv[1], "metadata_only", 0, meta);
        safetensors_raw(argv[1], "dtypes",
                        "{\"d\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[0,8]},"
                        "\"h\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[8,10]},"
                        "\"b\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[10,12]},"
                        "\"l\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[12,20]},"
                        "\"i\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[20,24]},"
                        "\"s\":{\"dtype\":\"I16\",\"shape\":[1],\"data_offsets\":[24,26]},"
                        "\"c\":{\"dtype\":\"I8\",\"shape\":[1],\"data_offsets\":[26,27]},"
                        "\"u\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[27,28]},"
                        "\"f\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[28,32]},"
                        "\"__metadata__\":{\"k\\u00e9\":\"v\\n\"}}    ",
                        raw, 32);
    }
    gaia_ctx_destroy(ctx);
    return 0;
}
