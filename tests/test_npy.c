/* Tests of NumPy .npy save and load; the loader treats every file as hostile. */
#include "gaia_test.h"
#include <stdlib.h>

/* Builds a .npy image: version 1 or 2, the given header text (padded to 64
   bytes), and `payload` bytes. Returns its size. */
static size_t make_image(unsigned char *buf, int version, const char *header, const void *payload, size_t payload_len) {
    size_t pre = version == 1 ? 10 : 12, hlen = strlen(header), total;
    size_t padded = ((pre + hlen + 1 + 63) / 64) * 64 - pre;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)version;
    buf[7] = 0;
    if (version == 1) {
        buf[8] = (unsigned char)(padded & 0xff);
        buf[9] = (unsigned char)(padded >> 8);
    } else {
        buf[8] = (unsigned char)(padded & 0xff);
        buf[9] = (unsigned char)(padded >> 8);
        buf[10] = buf[11] = 0;
    }
    memcpy(buf + pre, header, hlen);
    memset(buf + pre + hlen, ' ', padded - hlen - 1);
    buf[pre + padded - 1] = '\n';
    total = pre + padded;
    if (payload_len) memcpy(buf + total, payload, payload_len);
    return total + payload_len;
}

static void npy_round_trips_every_rank(gt *t) {
    static const size_t shapes[4][4] = {{7}, {3, 5}, {2, 3, 4}, {2, 1, 3, 2}};
    char path[600];
    int r;
    gt_tmp_path(path, sizeof path, "round_trip.npy");
    for (r = 0; r < 4; r++) {
        size_t n = 1, i;
        float *host, *back;
        gaia_tensor *x = NULL, *y = NULL;
        int k;
        for (k = 0; k <= r; k++) n *= shapes[r][k];
        host = gt_alloc_floats(n);
        gt_fill_normal(t, host, n);
        GT_OK(t, gaia_tensor_from_host(t->ctx, r + 1, shapes[r], host, &x));
        GT_OK(t, gaia_tensor_save_npy(t->ctx, x, path));
        GT_OK(t, gaia_tensor_load_npy(t->ctx, path, &y));
        GT_CHECK(t, gaia_tensor_ndim(y) == r + 1, "rank %d came back as %d", r + 1, gaia_tensor_ndim(y));
        for (k = 0; k <= r; k++) GT_CHECK(t, gaia_tensor_dim(y, k) == shapes[r][k], "dim %d", k);
        back = gt_host(t, y);
        for (i = 0; i < n && back[i] == host[i]; i++) {
        }
        free(back);
        free(host);
        gaia_tensor_free(x);
        gaia_tensor_free(y);
        GT_CHECK(t, i == n, "rank %d element %zu changed", r + 1, i);
    }
    {
        /* the header is what NumPy writes: 64-byte aligned, v1.0 */
        FILE *f = fopen(path, "rb");
        unsigned char head[128];
        size_t got = f ? fread(head, 1, sizeof head, f) : 0;
        if (f) fclose(f);
        GT_CHECK(t, got == 128 && head[6] == 1 && (10 + head[8] + 256 * head[9]) % 64 == 0, "header layout");
        const char *want = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1, 3, 2), }";
        GT_CHECK(t, memcmp(head + 10, want, strlen(want)) == 0, "header text: %.66s", head + 10);
    }
    remove(path);
}

static void npy_reads_float64_and_version_2_headers(gt *t) {
    unsigned char buf[512];
    double d[6] = {1.5, -2.25, 3e10, 1e-3, 0, -7};
    float back[6];
    gaia_tensor *x = NULL;
    size_t len = make_image(buf, 2, "{ \"shape\":(2,3) , \"fortran_order\" : False,'descr':'<f8' }", d, sizeof d);
    int i;
    GT_OK(t, gaia_npy_parse(t->ctx, buf, len, &x));
    GT_CHECK(t, gaia_tensor_ndim(x) == 2 && gaia_tensor_dim(x, 0) == 2 && gaia_tensor_dim(x, 1) == 3, "shape");
    GT_OK(t, gaia_tensor_to_host(t->ctx, x, back, 6));
    for (i = 0; i < 6; i++) GT_CHECK(t, back[i] == (float)d[i], "element %d: %g", i, (double)back[i]);
    gaia_tensor_free(x);
    x = NULL;
    /* a NumPy scalar () becomes one element */
    len = make_image(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", back, 4);
    GT_OK(t, gaia_npy_parse(t->ctx, buf, len, &x));
    GT_CHECK(t, gaia_tensor_numel(x) == 1, "scalar");
    gaia_tensor_free(x);
}

static void npy_rejects_every_malformed_header(gt *t) {
    static const char *bad_headers[] = {
        "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }",   /* big-endian */
        "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }",   /* integers */
        "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }",    /* Fortran order */
        "{'descr': '<f4', 'fortran_order': False, }",                  /* no shape */
        "{'fortran_order': False, 'shape': (2,), }",                   /* no descr */
        "{'descr': '<f4', 'shape': (2,), }",                           /* no fortran_order */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,2), }", /* 5 dims */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,0), }",  /* zero dim */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296,4294967296,), }", /* overflow */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,x), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, ",
        "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }",
        "['descr', '<f4']",
        "{'descr': 'f', 'fortran_order': False, 'shape': (2,), }",
    };
    unsigned char buf[512];
    float payload[2] = {1, 2};
    size_t i;
    for (i = 0; i < sizeof bad_headers / sizeof bad_headers[0]; i++) {
        gaia_tensor *x = NULL;
        size_t len = make_image(buf, 1, bad_headers[i], payload, sizeof payload);
        gaia_status st = gaia_npy_parse(t->ctx, buf, len, &x);
        GT_CHECK(t, st == GAIA_ERR_FORMAT && x == NULL, "header %zu accepted (%s): %s", i, gaia_status_str(st),
                 bad_headers[i]);
        GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_npy_parse: ") != NULL, "message");
    }
}

static void npy_rejects_truncated_and_corrupt_images(gt *t) {
    unsigned char buf[512];
    float payload[6] = {1, 2, 3, 4, 5, 6};
    gaia_tensor *x = NULL;
    size_t len = make_image(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", payload, 24);
    size_t cut;
    GT_OK(t, gaia_npy_parse(t->ctx, buf, len, &x));
    gaia_tensor_free(x);
    x = NULL;
    /* every truncation point fails cleanly */
    for (cut = 0; cut < len; cut++) {
        GT_STATUS(t, GAIA_ERR_FORMAT, gaia_npy_parse(t->ctx, buf, cut, &x));
        GT_CHECK(t, x == NULL, "output after a failed parse");
    }
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "truncated data: need 24 bytes, have 23"), "message: %s",
             gaia_last_error(t->ctx));
    buf[0] = 'X';
    GT_STATUS(t, GAIA_ERR_FORMAT, gaia_npy_parse(t->ctx, buf, len, &x));
    buf[0] = 0x93;
    buf[6] = 9; /* unknown version */
    GT_STATUS(t, GAIA_ERR_FORMAT, gaia_npy_parse(t->ctx, buf, len, &x));
    buf[6] = 1;
    buf[8] = 0xff; /* header length past the end */
    buf[9] = 0x7f;
    GT_STATUS(t, GAIA_ERR_FORMAT, gaia_npy_parse(t->ctx, buf, len, &x));
    buf[6] = 2; /* v2: a 4 GiB header length is over the limit */
    buf[8] = buf[9] = buf[10] = buf[11] = 0xff;
    GT_STATUS(t, GAIA_ERR_FORMAT, gaia_npy_parse(t->ctx, buf, len, &x));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "exceeds the limit"), "message: %s", gaia_last_error(t->ctx));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_npy_parse(t->ctx, NULL, len, &x));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_npy_parse(t->ctx, buf, len, NULL));
}

/* Random corruption of a valid image: only OK or FORMAT, never a crash (ASan). */
static void npy_survives_random_corruption(gt *t) {
    unsigned char good[512], buf[512];
    float payload[12];
    size_t len, iter;
    int ok = 0, bad = 0;
    gt_fill_normal(t, payload, 12);
    len = make_image(good, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", payload, 48);
    for (iter = 0; iter < 3000; iter++) {
        gaia_tensor *x = NULL;
        gaia_status st;
        int flips = 1 + (int)(gt_u64(t) % 4), f;
        memcpy(buf, good, len);
        for (f = 0; f < flips; f++) buf[gt_u64(t) % 74] = (unsigned char)gt_u64(t);
        st = gaia_npy_parse(t->ctx, buf, len - (gt_u64(t) % 3 == 0 ? gt_u64(t) % len : 0), &x);
        GT_CHECK(t, st == GAIA_OK || st == GAIA_ERR_FORMAT, "status %s", gaia_status_str(st));
        GT_CHECK(t, (st == GAIA_OK) == (x != NULL), "output iff success");
        if (x && gaia_tensor_numel(x) > 12) {
            gaia_tensor_free(x);
            GT_CHECK(t, 0, "accepted more elements than the data holds");
        }
        gaia_tensor_free(x);
        if (st == GAIA_OK) ok++;
        else bad++;
    }
    GT_CHECK(t, ok > 0 && bad > 0, "fuzz saw %d good and %d bad images", ok, bad);
}

static void npy_file_errors_are_io_statuses(gt *t) {
    gaia_tensor *x = NULL, *y = NULL;
    size_t n = 3;
    GT_STATUS(t, GAIA_ERR_IO, gaia_tensor_load_npy(t->ctx, "no/such/dir/file.npy", &x));
    GT_CHECK(t, strstr(gaia_last_error(t->ctx), "no/such/dir/file.npy"), "message names the path");
    GT_OK(t, gaia_tensor_ones(t->ctx, 1, &n, &y));
    GT_STATUS(t, GAIA_ERR_IO, gaia_tensor_save_npy(t->ctx, y, "no/such/dir/file.npy"));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_save_npy(t->ctx, y, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_save_npy(t->ctx, NULL, "x.npy"));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_load_npy(t->ctx, NULL, &x));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_tensor_load_npy(NULL, "x.npy", &x));
    {
        /* a corrupt file on disk names the file and the reason */
        char path[600];
        FILE *f;
        gt_tmp_path(path, sizeof path, "gaia_bad.npy");
        f = fopen(path, "wb");
        GT_CHECK(t, f != NULL, "cannot create %s", path);
        fputs("\x93NUMPY\x01", f);
        fclose(f);
        GT_STATUS(t, GAIA_ERR_FORMAT, gaia_tensor_load_npy(t->ctx, path, &x));
        remove(path);
        GT_CHECK(t, strstr(gaia_last_error(t->ctx), "gaia_tensor_load_npy: '") &&
                        strstr(gaia_last_error(t->ctx), "gaia_bad.npy") &&
                        strstr(gaia_last_error(t->ctx), "bad magic"),
                 "message: %s", gaia_last_error(t->ctx));
    }
    GT_CHECK(t, x == NULL, "no output on failure");
    gaia_tensor_free(y);
}

const gt_case gt_npy_cases[] = {
    {"npy_round_trips_every_rank", npy_round_trips_every_rank},
    {"npy_reads_float64_and_version_2_headers", npy_reads_float64_and_version_2_headers},
    {"npy_rejects_every_malformed_header", npy_rejects_every_malformed_header},
    {"npy_rejects_truncated_and_corrupt_images", npy_rejects_truncated_and_corrupt_images},
    {"npy_survives_random_corruption", npy_survives_random_corruption},
    {"npy_file_errors_are_io_statuses", npy_file_errors_are_io_statuses},
    {NULL, NULL},
};
