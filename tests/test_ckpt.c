/* Checkpoints: safetensors files (round trips, every dtype the loader
   converts, hostile headers, atomic saves, Python's safetensors both ways
   when it is installed) and optimizer state (a resumed run is bit for bit
   the uninterrupted one). */
#include "gaia_test.h"
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

/* A safetensors image from a header text and data bytes, in a malloc'd
   block of exactly its size (so a read past the end is caught by ASan). */
static unsigned char *st_file(const char *header, const void *data, size_t dlen, size_t *size) {
    size_t h = strlen(header), k;
    unsigned char *b = (unsigned char *)malloc(8 + h + dlen + 1);
    for (k = 0; k < 8; k++) b[k] = (unsigned char)((uint64_t)h >> (8 * k));
    memcpy(b + 8, header, h);
    if (dlen) memcpy(b + 8 + h, data, dlen);
    *size = 8 + h + dlen;
    return b;
}

static int bits_equal(gt *t, const gaia_tensor *a, const gaia_tensor *b) {
    float *x, *y;
    int same;
    if (gaia_tensor_ndim(a) != gaia_tensor_ndim(b) || gaia_tensor_numel(a) != gaia_tensor_numel(b)) return 0;
    x = gt_host(t, a);
    y = gt_host(t, b);
    same = x && y && memcmp(x, y, gaia_tensor_numel(a) * sizeof(float)) == 0;
    free(x);
    free(y);
    return same;
}

static void safetensors_round_trips_tensors_and_metadata(gt *t) {
    static const size_t shapes[4][4] = {{7}, {3, 5}, {2, 3, 4}, {2, 1, 3, 2}};
    static const char *names[4] = {"layer.0.weight", "quote\" back\\slash", "new\nline \xc3\xa9t\xc3\xa9", ""};
    static const char *meta[] = {"epoch", "3", "note", "caf\xc3\xa9 \"x\"\t", NULL};
    gaia_tensor *x[4] = {NULL, NULL, NULL, NULL};
    gaia_named_tensor items[4];
    gaia_safetensors *f = NULL, *g = NULL;
    void *img1 = NULL, *img2 = NULL;
    size_t n1, n2;
    char path[600];
    int r;
    gt_tmp_path(path, sizeof path, "round.safetensors");
    for (r = 0; r < 4; r++) {
        GT_OK(t, gaia_tensor_randn(t->ctx, r + 1, shapes[r], 0.0f, 1.0f, &x[r]));
        items[r].name = names[r];
        items[r].tensor = x[r];
    }
    GT_OK(t, gaia_safetensors_save(t->ctx, path, items, 4, meta));
    GT_OK(t, gaia_safetensors_load(t->ctx, path, &f));
    GT_CHECK(t, gaia_safetensors_count(f) == 4, "count %zu", gaia_safetensors_count(f));
    for (r = 0; r < 4; r++) {
        const gaia_named_tensor *e = &gaia_safetensors_entries(f)[r];
        GT_CHECK(t, strcmp(e->name, names[r]) == 0, "entry %d is '%s'", r, e->name);
        GT_CHECK(t, bits_equal(t, e->tensor, x[r]), "tensor %d changed", r);
        GT_CHECK(t, gaia_safetensors_get(f, names[r]) == e->tensor, "get %d", r);
        GT_CHECK(t, gaia_tensor_device(e->tensor) == gaia_ctx_device(t->ctx), "device");
    }
    GT_CHECK(t, gaia_safetensors_get(f, "absent") == NULL, "an absent name was found");
    GT_CHECK(t, strcmp(gaia_safetensors_meta(f, "epoch"), "3") == 0, "epoch");
    GT_CHECK(t, strcmp(gaia_safetensors_meta(f, "note"), meta[3]) == 0, "note '%s'", gaia_safetensors_meta(f, "note"));
    GT_CHECK(t, gaia_safetensors_meta(f, "absent") == NULL, "an absent key was found");
    /* what was loaded saves to the same bytes again */
    GT_OK(t, gaia_safetensors_image(t->ctx, items, 4, meta, &img1, &n1));
    GT_OK(t, gaia_safetensors_image(t->ctx, gaia_safetensors_entries(f), gaia_safetensors_count(f),
                                    gaia_safetensors_metadata(f), &img2, &n2));
    GT_CHECK(t, n1 == n2 && memcmp(img1, img2, n1) == 0, "the re-saved image differs (%zu vs %zu bytes)", n1, n2);
    GT_CHECK(t, (((unsigned char *)img1)[0] | (((unsigned char *)img1)[1] << 8)) % 8 == 0, "header not padded to 8");
    GT_OK(t, gaia_safetensors_parse(t->ctx, img1, n1, &g));
    GT_CHECK(t, gaia_safetensors_count(g) == 4, "parse count");
    /* an empty file: no tensors, no metadata */
    gaia_image_free(t->ctx, img2);
    img2 = NULL;
    gaia_safetensors_free(g);
    g = NULL;
    GT_OK(t, gaia_safetensors_image(t->ctx, NULL, 0, NULL, &img2, &n2));
    GT_OK(t, gaia_safetensors_parse(t->ctx, img2, n2, &g));
    GT_CHECK(t, gaia_safetensors_count(g) == 0 && gaia_safetensors_metadata(g)[0] == NULL, "empty file");
    gaia_safetensors_free(g);
    gaia_safetensors_free(f);
    gaia_image_free(t->ctx, img1);
    gaia_image_free(t->ctx, img2);
    for (r = 0; r < 4; r++) gaia_tensor_free(x[r]);
}

/* Every dtype the loader converts, written by hand little-endian. */
static void safetensors_reads_every_listed_dtype(gt *t) {
    unsigned char data[256];
    size_t at = 0, size, k;
    unsigned char *file;
    gaia_safetensors *f = NULL;
    char header[1024];
    float got[8];
    static const double f64[3] = {1.0 / 3.0, -1e30, 2.5};
    static const uint16_t f16[6] = {0x3c00, 0xc000, 0x0001, 0x7c00, 0x3555, 0x8000}; /* 1 -2 2^-24 inf 0.333 -0 */
    static const uint16_t bf16[2] = {0x3f80, 0xc0a0};                                 /* 1 -5 */
    static const int64_t i64[2] = {-3, 1099511627776};
    static const int32_t i32[2] = {-7, 123456};
    static const int16_t i16[2] = {-300, 300};
    static const int8_t i8[2] = {-128, 127};
    static const uint8_t u8[2] = {0, 255}, bl[2] = {0, 1};
    static const float f32[1] = {6.5f};
#define PUT_LE(arr, sz)                                                                     \
    for (k = 0; k < sizeof arr / sz; k++) {                                                 \
        uint64_t u = 0;                                                                     \
        size_t b;                                                                           \
        memcpy(&u, (const unsigned char *)arr + k * sz, sz); /* little-endian test host */  \
        for (b = 0; b < sz; b++) data[at++] = (unsigned char)(u >> (8 * b));                \
    }
    PUT_LE(f64, 8)
    PUT_LE(f16, 2)
    PUT_LE(bf16, 2)
    PUT_LE(i64, 8)
    PUT_LE(i32, 4)
    PUT_LE(i16, 2)
    PUT_LE(i8, 1)
    PUT_LE(u8, 1)
    PUT_LE(bl, 1)
    PUT_LE(f32, 4)
#undef PUT_LE
    snprintf(header, sizeof header,
             "{\"f64\":{\"dtype\":\"F64\",\"shape\":[3],\"data_offsets\":[0,24]},"
             " \"f16\" : {\"shape\":[2,3],\"dtype\":\"F16\",\"data_offsets\":[24,36]},"
             "\"bf16\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[36,40]},"
             "\"i64\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[40,56]},"
             "\"i32\":{\"dtype\":\"I32\",\"shape\":[1,2],\"data_offsets\":[56,64]},"
             "\"i16\":{\"dtype\":\"I16\",\"shape\":[2],\"data_offsets\":[64,68]},"
             "\"i8\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[68,70]},"
             "\"u8\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[70,72]},"
             "\"bool\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[72,74]},"
             "\"scalar\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[74,78]},"
             "\"__metadata__\":{\"format\":\"pt\"}}   ");
    GT_CHECK(t, at == 78, "test data of %zu bytes", at);
    file = st_file(header, data, at, &size);
    GT_OK(t, gaia_safetensors_parse(t->ctx, file, size, &f));
    free(file);
    GT_CHECK(t, gaia_safetensors_count(f) == 10, "count %zu", gaia_safetensors_count(f));
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_safetensors_get(f, "f64"), got, 8));
    GT_CHECK(t, got[0] == (float)(1.0 / 3.0) && got[1] == -1e30f && got[2] == 2.5f, "f64 %g %g %g", got[0], got[1], got[2]);
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_safetensors_get(f, "f16"), got, 8));
    GT_CHECK(t, got[0] == 1.0f && got[1] == -2.0f && got[2] == ldexpf(1.0f, -24) && isinf(got[3]) && got[3] > 0 &&
                    fabsf(got[4] - 0.33325195f) < 1e-7f && got[5] == 0.0f && signbit(got[5]),
             "f16 %g %g %g %g %g %g", got[0], got[1], got[2], got[3], got[4], got[5]);
    GT_CHECK(t, gaia_tensor_ndim(gaia_safetensors_get(f, "f16")) == 2, "f16 rank");
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_safetensors_get(f, "bf16"), got, 8));
    GT_CHECK(t, got[0] == 1.0f && got[1] == -5.0f, "bf16 %g %g", got[0], got[1]);
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_safetensors_get(f, "i64"), got, 8));
    GT_CHECK(t, got[0] == -3.0f && got[1] == 1099511627776.0f, "i64 %g %g", got[0], got[1]);
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_safetensors_get(f, "i32"), got, 8));
    GT_CHECK(t, got[0] == -7.0f && got[1] == 123456.0f, "i32 %g %g", got[0], got[1]);
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_safetensors_get(f, "i16"), got, 8));
    GT_CHECK(t, got[0] == -300.0f && got[1] == 300.0f, "i16");
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_safetensors_get(f, "i8"), got, 8));
    GT_CHECK(t, got[0] == -128.0f && got[1] == 127.0f, "i8");
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_safetensors_get(f, "u8"), got, 8));
    GT_CHECK(t, got[0] == 0.0f && got[1] == 255.0f, "u8");
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_safetensors_get(f, "bool"), got, 8));
    GT_CHECK(t, got[0] == 0.0f && got[1] == 1.0f, "bool");
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_safetensors_get(f, "scalar"), got, 8));
    GT_CHECK(t, got[0] == 6.5f && gaia_tensor_ndim(gaia_safetensors_get(f, "scalar")) == 1, "0-dim scalar");
    GT_CHECK(t, strcmp(gaia_safetensors_meta(f, "format"), "pt") == 0, "metadata");
    gaia_safetensors_free(f);
}

/* \u escapes in names become UTF-8 of each length: 2 bytes (U+00E9), 3
   (U+20AC) and 4 (U+1F600, written as a surrogate pair); metadata too. */
static void safetensors_unicode_escapes_decode_to_utf8(gt *t) {
    static const char *header =
        "{\"__metadata__\":{\"k\\u00e9y\":\"\\ud83d\\ude00\"},"
        "\"\\u00e9\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"\\u20ac\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]},"
        "\"\\ud83d\\ude00\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}";
    static const float data[3] = {1.0f, 2.0f, 3.0f};
    static const char *names[3] = {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};
    size_t size, i;
    unsigned char *file = st_file(header, (const unsigned char *)data, sizeof data, &size);
    gaia_safetensors *f = NULL;
    const char *meta;
    GT_OK(t, gaia_safetensors_parse(t->ctx, file, size, &f));
    for (i = 0; f && i < 3; i++) {
        const gaia_tensor *x = gaia_safetensors_get(f, names[i]);
        float v = 0.0f;
        GT_CHECK(t, x != NULL, "no tensor named by the %zu-byte UTF-8 sequence", i + 2);
        if (x) GT_OK(t, gaia_tensor_to_host(t->ctx, x, &v, 1));
        GT_CHECK(t, v == data[i], "tensor %zu holds %g", i, (double)v);
    }
    meta = f ? gaia_safetensors_meta(f, "k\xc3\xa9y") : NULL;
    GT_CHECK(t, meta && strcmp(meta, "\xf0\x9f\x98\x80") == 0, "metadata value '%s'", meta ? meta : "(none)");
    gaia_safetensors_free(f);
    free(file);
}

/* Each header here is wrong in one way: a FORMAT error with a message,
   nothing made, nothing read past the end of the exact-size buffer. */
static void safetensors_hostile_headers_are_format_errors(gt *t) {
    static const struct {
        const char *header;
        size_t data; /* bytes of data after the header */
        const char *says;
    } cases[] = {
        {"", 0, "too short"},
        {"[]", 0, "start with '{'"},
        {"{", 0, "too short"},
        {"{ ", 0, "expected a string"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},}", 4, "expected a string"},
        {"{\"a\" {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "':'"},
        {"{\"a:{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "':'"},
        {"{\"a\\q\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "unknown escape"},
        {"{\"a\\ud800\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "surrogate"},
        {"{\"a\\udc00\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "surrogate"},
        {"{\"a\\u00\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "\\u escape"},
        {"{\"a\\u0000\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "NUL"},
        {"{\"a\tb\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "control byte"},
        {"{\"a\xc3\x28\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "UTF-8"},
        {"{\"a\xed\xa0\x80\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "UTF-8"},
        {"{\"a\":[1]}", 4, "must be an object"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "lacks data_offsets"},
        {"{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "lacks a dtype"},
        {"{\"a\":{}}", 0, "lacks a dtype"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", 4, "unknown or repeated field"},
        {"{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "repeated"},
        {"{\"a\":{\"dtype\":\"U32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype 'U32' not supported"},
        {"{\"a\":{\"dtype\":\"F8_E4M3\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4, "not supported"},
        {"{\"a\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "expected a string"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, "more than 4"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}", 0, "zero"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,4]}}", 4,
         "overflows"},
        {"{\"a\":{\"dtype\":\"F64\",\"shape\":[2305843009213693952,4],\"data_offsets\":[0,4]}}", 4, "overflows"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999999],\"data_offsets\":[0,4]}}", 4, "overflows"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, "unsigned integer"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", 4, "fraction"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 8, "[begin, end]"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4]}}", 4, "[begin, end]"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4, "do not hold"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "do not hold"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, "truncated"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[18446744073709551612,0]}}", 4, "do not hold"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],"
         "\"data_offsets\":[4,8]}}",
         8, "overlaps"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "a hole"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8, "after the last tensor"},
        {"{}", 4, "no tensors"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
         "\"data_offsets\":[4,8]}}",
         8, "appears twice"},
        {"{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, "appears twice"},
        {"{\"__metadata__\":{},\"__metadata__\":{}}", 0, "second __metadata__"},
        {"{\"__metadata__\":{\"k\":1}}", 0, "must be strings"},
        {"{\"__metadata__\":[]}", 0, "must be an object"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}} x", 4, "after the header's closing"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}", 4, "expected ',' or '}'"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]", 4, "expected ',' or '}'"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1", 4, "expected ',' or ']'"},
        {"{\"a\":{\"dtype\":\"F3", 4, "unterminated string"},
    };
    static const unsigned char zeros[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t size;
        unsigned char *file = st_file(cases[i].header, zeros, cases[i].data, &size);
        gaia_safetensors *f = NULL;
        gaia_status st = gaia_safetensors_parse(t->ctx, file, size, &f);
        free(file);
        GT_CHECK(t, st == GAIA_ERR_FORMAT, "case %zu (%s): %s", i, cases[i].header, gaia_status_str(st));
        GT_CHECK(t, f == NULL, "case %zu made a file object", i);
        GT_CHECK(t, strstr(gaia_last_error(t->ctx), cases[i].says) != NULL, "case %zu says '%s', not '%s'", i,
                 gaia_last_error(t->ctx), cases[i].says);
    }
}

/* The header length itself against its limits: a file shorter than the
   length's 8 bytes, a length under 2 (no room for {}), one past the end of
   the file, one over the reference implementation's limit of 10^8 bytes;
   and a header of exactly 10^8 bytes ({} and spaces) loads, empty. */
static void safetensors_header_length_is_checked(gt *t) {
    static const struct {
        uint64_t hlen;
        size_t size;
        const char *says;
    } cases[] = {{0, 7, "7 bytes, too short for the header length"},
                 {1, 9, "header length 1 is too short for {}"},
                 {12, 19, "header length 12 runs past the end (19 bytes)"},
                 {100000001u, 16, "header length of 100000001, over the limit 100000000"},
                 {UINT64_MAX, 16, "header length of 18446744073709551615, over the limit"}};
    const size_t big = 100000000u;
    unsigned char *file = (unsigned char *)malloc(8 + big);
    size_t i, k;
    gaia_safetensors *f = NULL;
    GT_CHECK(t, file != NULL, "no memory for a 100 MB header");
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gaia_status st;
        for (k = 0; k < 8; k++) file[k] = (unsigned char)(cases[i].hlen >> (8 * k));
        memcpy(file + 8, "{}      ", 8);
        f = NULL;
        st = gaia_safetensors_parse(t->ctx, file, cases[i].size, &f);
        GT_CHECK(t, st == GAIA_ERR_FORMAT && f == NULL, "case %zu: %s", i, gaia_status_str(st));
        GT_CHECK(t, strstr(gaia_last_error(t->ctx), cases[i].says) != NULL, "case %zu says '%s', not '%s'", i,
                 gaia_last_error(t->ctx), cases[i].says);
    }
    for (k = 0; k < 8; k++) file[k] = (unsigned char)((uint64_t)big >> (8 * k));
    memset(file + 8, ' ', big);
    file[8] = '{';
    file[9] = '}';
    GT_OK(t, gaia_safetensors_parse(t->ctx, file, 8 + big, &f));
    GT_CHECK(t, f && gaia_safetensors_count(f) == 0, "a header of exactly the limit: %zu tensors",
             f ? gaia_safetensors_count(f) : (size_t)-1);
    gaia_safetensors_free(f);
    free(file);
}

/* The end-of-data bound against a direct reference: a tensor whose
   data_offsets end at exactly the data's last byte loads with its values;
   one that ends 1 to 5 bytes past it (a file cut short) is a format error
   that says so, whichever tensor of two it is. */
static void safetensors_end_of_data_bound_is_exact(gt *t) {
    float vals[6];
    unsigned char data[64];
    char header[512];
    size_t n, cut, size;
    int second;
    gt_fill_normal(t, vals, 6);
    memcpy(data, vals, sizeof vals); /* little-endian test host */
    for (second = 0; second < 2; second++)
        for (n = 1; n <= 4; n++)
            for (cut = 0; cut <= 5; cut++) {
                gaia_safetensors *f = NULL;
                unsigned char *file;
                size_t dlen = (second ? 8 : 0) + 4 * n, have = dlen - cut;
                gaia_status st;
                if (second)
                    snprintf(header, sizeof header, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                             "\"b\":{\"dtype\":\"F32\",\"shape\":[%zu],\"data_offsets\":[8,%zu]}}", n, dlen);
                else
                    snprintf(header, sizeof header, "{\"b\":{\"dtype\":\"F32\",\"shape\":[%zu],\"data_offsets\":[0,%zu]}}",
                             n, dlen);
                if (cut > dlen - (second ? 8 : 0)) continue; /* the cut would reach into the first tensor */
                /* the file holds exactly `have` data bytes: a longer read would leave the buffer */
                file = st_file(header, data, have, &size);
                st = gaia_safetensors_parse(t->ctx, file, size, &f);
                free(file);
                if (cut == 0) {
                    float got[4];
                    GT_CHECK(t, st == GAIA_OK, "n=%zu, data ends at the tensor's end: %s", n, gaia_last_error(t->ctx));
                    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_safetensors_get(f, "b"), got, n));
                    gaia_safetensors_free(f);
                    GT_CHECK(t, memcmp(got, data + (second ? 8 : 0), 4 * n) == 0, "n=%zu: values differ", n);
                } else {
                    gaia_safetensors_free(f);
                    GT_CHECK(t, st == GAIA_ERR_FORMAT && strstr(gaia_last_error(t->ctx), "past the data"),
                             "n=%zu, %zu bytes cut: %s (%s)", n, cut, gaia_status_str(st), gaia_last_error(t->ctx));
                }
            }
}

static void safetensors_corrupt_header_lengths_are_format_errors(gt *t) {
    static const uint64_t lengths[] = {200, 100000001, (uint64_t)1 << 63, UINT64_MAX, 0, 1};
    unsigned char buf[64];
    size_t i, k;
    memset(buf, ' ', sizeof buf);
    for (i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        gaia_safetensors *f = NULL;
        for (k = 0; k < 8; k++) buf[k] = (unsigned char)(lengths[i] >> (8 * k));
        buf[8] = '{';
        buf[9] = '}';
        GT_STATUS(t, GAIA_ERR_FORMAT, gaia_safetensors_parse(t->ctx, buf, sizeof buf, &f));
        GT_CHECK(t, f == NULL, "length %llu made a file object", (unsigned long long)lengths[i]);
    }
    for (k = 0; k < 8; k++) { /* shorter than the length field */
        gaia_safetensors *f = NULL;
        GT_STATUS(t, GAIA_ERR_FORMAT, gaia_safetensors_parse(t->ctx, buf, k, &f));
    }
}

/* A valid file cut at every length, and with single bytes changed: never
   a crash, only OK or FORMAT (a cut file is always FORMAT). */
static void safetensors_truncated_or_flipped_files_never_crash(gt *t) {
    gaia_tensor *a = NULL, *b = NULL;
    size_t sa[2] = {2, 3}, sb = 5, n, cut, i;
    gaia_named_tensor items[2];
    static const char *meta[] = {"k", "v", NULL};
    void *img = NULL;
    GT_OK(t, gaia_tensor_randn(t->ctx, 2, sa, 0.0f, 1.0f, &a));
    GT_OK(t, gaia_tensor_randn(t->ctx, 1, &sb, 0.0f, 1.0f, &b));
    items[0].name = "a", items[0].tensor = a;
    items[1].name = "b", items[1].tensor = b;
    GT_OK(t, gaia_safetensors_image(t->ctx, items, 2, meta, &img, &n));
    for (cut = 0; cut < n; cut++) {
        unsigned char *part = (unsigned char *)malloc(cut ? cut : 1);
        gaia_safetensors *f = NULL;
        memcpy(part, img, cut);
        GT_STATUS(t, GAIA_ERR_FORMAT, gaia_safetensors_parse(t->ctx, part, cut, &f));
        free(part);
    }
    for (i = 0; i < n; i++) {
        static const unsigned char values[] = {0, '"', '\\', '{', '}', ',', '9', 0xff};
        size_t v;
        for (v = 0; v < sizeof values; v++) {
            unsigned char *copy = (unsigned char *)malloc(n);
            gaia_safetensors *f = NULL;
            gaia_status st;
            memcpy(copy, img, n);
            copy[i] = values[v];
            st = gaia_safetensors_parse(t->ctx, copy, n, &f);
            free(copy);
            GT_CHECK(t, st == GAIA_OK || st == GAIA_ERR_FORMAT, "byte %zu = %u: %s", i, values[v], gaia_status_str(st));
            GT_CHECK(t, (st == GAIA_OK) == (f != NULL), "byte %zu: status and object disagree", i);
            gaia_safetensors_free(f);
        }
    }
    gaia_image_free(t->ctx, img);
    gaia_tensor_free(a);
    gaia_tensor_free(b);
}

static void safetensors_respects_the_load_limit(gt *t) {
    gaia_ctx *small = NULL;
    gaia_ctx_desc d;
    gaia_tensor *x = NULL;
    gaia_named_tensor item;
    gaia_safetensors *f = NULL;
    size_t n = 300, size;
    void *img = NULL;
    memset(&d, 0, sizeof d);
    d.load_limit = 1000; /* bytes: 250 floats */
    GT_OK(t, gaia_ctx_create(&d, &small));
    GT_OK(t, gaia_tensor_randn(small, 1, &n, 0.0f, 1.0f, &x));
    item.name = "x";
    item.tensor = x;
    GT_OK(t, gaia_safetensors_image(small, &item, 1, NULL, &img, &size));
    GT_STATUS(t, GAIA_ERR_OUT_OF_MEMORY, gaia_safetensors_parse(small, img, size, &f));
    GT_CHECK(t, f == NULL && strstr(gaia_last_error(small), "load_limit") != NULL, "%s", gaia_last_error(small));
    gaia_image_free(small, img);
    gaia_tensor_free(x);
    gaia_ctx_destroy(small);
}

/* Whether dir holds a leftover temporary file of a save to `base`. */
static int tmp_left_over(const char *dir, const char *base) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int found = 0;
    char prefix[256];
    if (!d) return 0;
    snprintf(prefix, sizeof prefix, "%s.tmp", base);
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) found = 1;
    closedir(d);
    return found;
}

/* A save that fails (out of memory at any allocation, a target it cannot
   replace, a directory that does not exist) leaves the old file as it was
   and no temporary file behind; a save that succeeds replaces it. */
static void safetensors_save_is_atomic(gt *t) {
    gt_heap h;
    gaia_ctx *ctx = NULL;
    gaia_tensor *old = NULL, *fresh = NULL;
    gaia_named_tensor item;
    gaia_safetensors *f = NULL;
    size_t n = 64;
    char path[600], dir[600], sub[600];
    long k;
    gt_tmp_path(dir, sizeof dir, "");
    gt_tmp_path(path, sizeof path, "atomic.safetensors");
    GT_OK(t, gt_heap_ctx(&h, GAIA_DEVICE_CPU, &ctx));
    GT_OK(t, gaia_tensor_full(ctx, 1, &n, 1.0f, &old));
    GT_OK(t, gaia_tensor_full(ctx, 1, &n, 2.0f, &fresh));
    item.name = "x";
    item.tensor = old;
    GT_OK(t, gaia_safetensors_save(ctx, path, &item, 1, NULL));
    item.tensor = fresh;
    for (k = 1; k < 40; k++) {
        gaia_status st;
        float v[64];
        gt_heap_fail_in(&h, k);
        st = gaia_safetensors_save(ctx, path, &item, 1, NULL);
        gt_heap_fail_in(&h, 0);
        if (st == GAIA_OK) break;
        GT_CHECK(t, st == GAIA_ERR_OUT_OF_MEMORY, "allocation %ld: %s", k, gaia_status_str(st));
        GT_OK(t, gaia_safetensors_load(ctx, path, &f));
        GT_OK(t, gaia_tensor_to_host(ctx, gaia_safetensors_get(f, "x"), v, 64));
        GT_CHECK(t, v[0] == 1.0f && v[63] == 1.0f, "allocation %ld: the old file changed", k);
        gaia_safetensors_free(f);
        f = NULL;
        GT_CHECK(t, !tmp_left_over(dir, "atomic.safetensors"), "allocation %ld left a temporary file", k);
    }
    GT_CHECK(t, k > 1 && k < 40, "the save never succeeded (%ld)", k);
    GT_OK(t, gaia_safetensors_load(ctx, path, &f));
    {
        float v[64];
        GT_OK(t, gaia_tensor_to_host(ctx, gaia_safetensors_get(f, "x"), v, 64));
        GT_CHECK(t, v[0] == 2.0f && v[63] == 2.0f, "the successful save did not replace the file");
    }
    gaia_safetensors_free(f);
    /* a directory in the way: the rename fails, the directory stays */
    gt_tmp_path(sub, sizeof sub, "in_the_way");
    GT_CHECK(t, mkdir(sub, 0700) == 0, "cannot make %s", sub);
    GT_STATUS(t, GAIA_ERR_IO, gaia_safetensors_save(ctx, sub, &item, 1, NULL));
    GT_CHECK(t, strstr(gaia_last_error(ctx), "unchanged") != NULL, "%s", gaia_last_error(ctx));
    GT_CHECK(t, !tmp_left_over(dir, "in_the_way"), "a temporary file was left beside the directory");
    GT_CHECK(t, rmdir(sub) == 0, "the directory was changed");
    /* nowhere to write */
    gt_tmp_path(sub, sizeof sub, "no/such/dir.safetensors");
    GT_STATUS(t, GAIA_ERR_IO, gaia_safetensors_save(ctx, sub, &item, 1, NULL));
    gaia_tensor_free(old);
    gaia_tensor_free(fresh);
    gaia_ctx_destroy(ctx);
    GT_CHECK(t, h.live == 0, "%ld blocks leaked", h.live);
}

/* ---- optimizer checkpoints ---- */
#define NPARAM 4
typedef struct run {
    gaia_ctx *ctx;
    gaia_tensor *p[NPARAM]; /* W1 [4,8], b1 [8], W2 [8,3], unused [2] (never gets a gradient) */
    gaia_optim *opt;
    gaia_lr_cosine sched;
} run;

static const size_t run_shapes[NPARAM][2] = {{4, 8}, {8, 0}, {8, 3}, {2, 0}};

/* Fresh parameters from the given host values, and an optimizer of kind k:
   0 SGD with momentum, 1 Nesterov with weight decay, 2 AdamW with clipping
   and a schedule; with parameter groups, 3 the same AdamW over the decay
   split, 4 Nesterov over two groups of their own rates and decays (W1 and
   W2, then b1 and the unused one: param.I in that order). */
static gaia_status run_open(run *r, uint64_t seed, int k, const float *init) {
    gaia_ctx_desc d;
    gaia_optim_desc od;
    gaia_status st;
    size_t off = 0;
    int i;
    memset(r, 0, sizeof *r);
    memset(&d, 0, sizeof d);
    d.seed = seed;
    if ((st = gaia_ctx_create(&d, &r->ctx)) != GAIA_OK) return st;
    for (i = 0; i < NPARAM; i++) {
        int nd = run_shapes[i][1] ? 2 : 1;
        size_t n = run_shapes[i][0] * (nd == 2 ? run_shapes[i][1] : 1);
        if ((st = gaia_tensor_from_host(r->ctx, nd, run_shapes[i], init + off, &r->p[i])) != GAIA_OK) return st;
        if ((st = gaia_tensor_set_requires_grad(r->ctx, r->p[i], 1)) != GAIA_OK) return st;
        off += n;
    }
    memset(&od, 0, sizeof od);
    od.lr = 0.05f;
    if (k == 0) {
        od.kind = GAIA_OPTIM_SGD;
        od.momentum = 0.9f;
    } else if (k == 1) {
        od.kind = GAIA_OPTIM_SGD;
        od.momentum = 0.8f;
        od.nesterov = 1;
        od.weight_decay = 0.01f;
    } else if (k == 4) {
        gaia_optim_group g[2];
        gaia_tensor *g0[2], *g1[2];
        od.kind = GAIA_OPTIM_SGD;
        od.momentum = 0.8f;
        od.nesterov = 1;
        od.weight_decay = 0.01f;
        memset(g, 0, sizeof g);
        g0[0] = r->p[0], g0[1] = r->p[2], g1[0] = r->p[1], g1[1] = r->p[3];
        g[0].params = g0, g[0].n = 2, g[0].lr = 0.03f, g[0].weight_decay = 0.02f, g[0].own_weight_decay = 1;
        g[1].params = g1, g[1].n = 2; /* desc's lr and decay */
        return gaia_optim_create_groups(r->ctx, &od, g, 2, &r->opt);
    } else {
        od.kind = GAIA_OPTIM_ADAMW;
        od.weight_decay = 0.02f;
        od.clip_norm = 0.5f;
        r->sched.warmup = 3;
        r->sched.total = 12;
        r->sched.min_lr = 0.001f;
        od.schedule = gaia_lr_warmup_cosine;
        od.schedule_user = &r->sched;
        if (k == 3) return gaia_optim_create_decay_split(r->ctx, &od, r->p, NPARAM, &r->opt);
    }
    return gaia_optim_create(r->ctx, &od, r->p, NPARAM, &r->opt);
}

/* One step on a fresh random batch (drawn from the context's stream). */
static gaia_status run_step(run *r) {
    gaia_tensor *x = NULL, *h = NULL, *y = NULL, *target = NULL, *loss = NULL;
    size_t sx[2] = {5, 4}, sy[2] = {5, 3};
    gaia_status st = gaia_tensor_randn(r->ctx, 2, sx, 0.0f, 1.0f, &x);
    if (st == GAIA_OK) st = gaia_tensor_uniform(r->ctx, 2, sy, -1.0f, 1.0f, &target);
    if (st == GAIA_OK) st = gaia_tensor_matmul(r->ctx, x, r->p[0], 0, 0, &h);
    if (st == GAIA_OK) st = gaia_tensor_add(r->ctx, h, r->p[1], &h);
    if (st == GAIA_OK) st = gaia_tensor_tanh(r->ctx, h, &h);
    if (st == GAIA_OK) st = gaia_tensor_matmul(r->ctx, h, r->p[2], 0, 0, &y);
    if (st == GAIA_OK) st = gaia_loss_mse(r->ctx, y, target, &loss);
    if (st == GAIA_OK) {
        gaia_optim_zero_grad(r->opt);
        st = gaia_backward(r->ctx, loss);
    }
    if (st == GAIA_OK) st = gaia_optim_step(r->opt);
    gaia_tensor_free(x);
    gaia_tensor_free(h);
    gaia_tensor_free(y);
    gaia_tensor_free(target);
    gaia_tensor_free(loss);
    return st;
}

static void run_close(run *r) {
    int i;
    gaia_optim_destroy(r->opt);
    for (i = 0; i < NPARAM; i++) gaia_tensor_free(r->p[i]);
    gaia_ctx_destroy(r->ctx);
}

#define RUN_FLOATS (32 + 8 + 24 + 2)

/* N steps straight vs k steps, save, destroy everything, a new context
   with another seed and other initial values, load, N - k steps: the
   parameters agree bit for bit, for SGD with momentum, Nesterov with
   weight decay, and AdamW with clipping and a warm-up cosine schedule,
   and with parameter groups (kinds 3 and 4 of run_open). */
static void optim_resumed_training_is_bit_identical(gt *t) {
    float init[RUN_FLOATS], other[RUN_FLOATS], a[RUN_FLOATS], b[RUN_FLOATS];
    char path[600];
    int kind;
    const int N = 12, K = 5;
    gt_fill_normal(t, init, RUN_FLOATS);
    gt_fill_normal(t, other, RUN_FLOATS);
    gt_tmp_path(path, sizeof path, "optim.safetensors");
    for (kind = 0; kind < 5; kind++) {
        run straight, first, second;
        int s, i;
        size_t off;
        float lr_straight, lr_first;
        uint64_t steps_straight;
        GT_OK(t, run_open(&straight, 99, kind, init));
        for (s = 0; s < N; s++) GT_OK(t, run_step(&straight));
        lr_straight = gaia_optim_lr(straight.opt);
        steps_straight = gaia_optim_steps(straight.opt);
        for (off = 0, i = 0; i < NPARAM; off += gaia_tensor_numel(straight.p[i]), i++)
            GT_OK(t, gaia_tensor_to_host(straight.ctx, straight.p[i], a + off, RUN_FLOATS - off));
        run_close(&straight);

        GT_OK(t, run_open(&first, 99, kind, init));
        for (s = 0; s < K; s++) GT_OK(t, run_step(&first));
        GT_OK(t, gaia_optim_save(first.opt, path));
        lr_first = gaia_optim_lr(first.opt);
        run_close(&first);

        GT_OK(t, run_open(&second, 12345, kind, other));
        GT_OK(t, gaia_optim_load(second.opt, path));
        GT_CHECK(t, gaia_optim_steps(second.opt) == (uint64_t)K, "kind %d: steps %llu after load", kind,
                 (unsigned long long)gaia_optim_steps(second.opt));
        GT_CHECK(t, gaia_ctx_seed(second.ctx) == 99, "kind %d: the seed was not restored", kind);
        /* the rate of the last step before the save, before any step here */
        GT_CHECK(t, gaia_optim_lr(second.opt) == lr_first, "kind %d: lr %g after load, %g at the save", kind,
                 (double)gaia_optim_lr(second.opt), (double)lr_first);
        for (s = K; s < N; s++) GT_OK(t, run_step(&second));
        for (off = 0, i = 0; i < NPARAM; off += gaia_tensor_numel(second.p[i]), i++)
            GT_OK(t, gaia_tensor_to_host(second.ctx, second.p[i], b + off, RUN_FLOATS - off));
        GT_CHECK(t, gaia_optim_steps(second.opt) == steps_straight && gaia_optim_lr(second.opt) == lr_straight,
                 "kind %d: steps %llu lr %g vs %llu %g", kind, (unsigned long long)gaia_optim_steps(second.opt),
                 (double)gaia_optim_lr(second.opt), (unsigned long long)steps_straight, (double)lr_straight);
        run_close(&second);
        for (i = 0; i < RUN_FLOATS; i++)
            GT_CHECK(t, memcmp(&a[i], &b[i], 4) == 0, "kind %d: value %d differs: %.9g vs %.9g", kind, i, a[i], b[i]);
        GT_CHECK(t, memcmp(a, init, sizeof a) != 0, "kind %d: training changed nothing", kind);
        /* the unused parameter has no gradient: never moved, no moments saved */
        GT_CHECK(t, memcmp(a + RUN_FLOATS - 2, init + RUN_FLOATS - 2, 8) == 0, "kind %d: the unused parameter moved", kind);
    }
}

/* Loading into the wrong optimizer, or a wrong file: an error, and the
   parameters, step count and moments as they were. */
static void optim_load_mismatches_change_nothing(gt *t) {
    float init[RUN_FLOATS], before[32], after[32];
    char path[600], plain[600], sgdpath[600];
    run r, other;
    gaia_tensor *x = NULL, *extra = NULL;
    gaia_named_tensor item;
    size_t n3 = 3;
    gt_fill_normal(t, init, RUN_FLOATS);
    gt_tmp_path(path, sizeof path, "adamw.safetensors");
    gt_tmp_path(sgdpath, sizeof sgdpath, "sgd.safetensors");
    gt_tmp_path(plain, sizeof plain, "plain.safetensors");
    GT_OK(t, run_open(&other, 1, 0, init)); /* an SGD checkpoint */
    GT_OK(t, run_step(&other));
    GT_OK(t, gaia_optim_save(other.opt, sgdpath));
    run_close(&other);
    GT_OK(t, run_open(&r, 7, 2, init));
    GT_OK(t, run_step(&r));
    GT_OK(t, run_step(&r));
    GT_OK(t, gaia_optim_save(r.opt, path));
    GT_OK(t, gaia_tensor_randn(r.ctx, 1, &n3, 0.0f, 1.0f, &x));
    item.name = "x";
    item.tensor = x;
    GT_OK(t, gaia_safetensors_save(r.ctx, plain, &item, 1, NULL));
    GT_OK(t, gaia_tensor_to_host(r.ctx, r.p[0], before, 32));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_load(r.opt, sgdpath)); /* kind */
    GT_CHECK(t, strstr(gaia_last_error(r.ctx), "sgd optimizer, this one is adamw") != NULL, "%s", gaia_last_error(r.ctx));
    GT_STATUS(t, GAIA_ERR_FORMAT, gaia_optim_load(r.opt, plain)); /* not an optimizer's file */
    GT_STATUS(t, GAIA_ERR_IO, gaia_optim_load(r.opt, "no such file.safetensors"));
    {
        FILE *f = fopen(plain, "wb"); /* corrupt */
        GT_CHECK(t, f && fwrite("\x10\0\0\0\0\0\0\0{\"a\":", 1, 13, f) == 13 && fclose(f) == 0, "cannot write");
    }
    GT_STATUS(t, GAIA_ERR_FORMAT, gaia_optim_load(r.opt, plain));
    GT_CHECK(t, gaia_optim_steps(r.opt) == 2, "a failed load changed the step count");
    GT_OK(t, gaia_tensor_to_host(r.ctx, r.p[0], after, 32));
    GT_CHECK(t, memcmp(before, after, sizeof before) == 0, "a failed load changed a parameter");
    gaia_tensor_free(x); /* before its context goes */
    x = NULL;
    run_close(&r);
    /* another shape, another parameter count */
    init[0] += 1.0f;
    GT_OK(t, run_open(&r, 7, 2, init));
    GT_OK(t, gaia_tensor_to_host(r.ctx, r.p[0], before, 32));
    {
        gaia_optim *fewer = NULL, *wrong = NULL;
        gaia_optim_desc od;
        gaia_tensor *ps[NPARAM];
        size_t s2[2] = {4, 9};
        memset(&od, 0, sizeof od);
        od.kind = GAIA_OPTIM_ADAMW;
        od.lr = 0.1f;
        GT_OK(t, gaia_optim_create(r.ctx, &od, r.p, NPARAM - 1, &fewer));
        GT_STATUS(t, GAIA_ERR_SHAPE, gaia_optim_load(fewer, path));
        GT_CHECK(t, strstr(gaia_last_error(r.ctx), "holds 4 parameters, this optimizer has 3") != NULL, "%s",
                 gaia_last_error(r.ctx));
        GT_OK(t, gaia_tensor_zeros(r.ctx, 2, s2, &extra));
        GT_OK(t, gaia_tensor_set_requires_grad(r.ctx, extra, 1)); /* an optimizer trains only such tensors */
        memcpy(ps, r.p, sizeof ps);
        ps[0] = extra;
        GT_OK(t, gaia_optim_create(r.ctx, &od, ps, NPARAM, &wrong));
        GT_STATUS(t, GAIA_ERR_SHAPE, gaia_optim_load(wrong, path));
        GT_CHECK(t, strstr(gaia_last_error(r.ctx), "param.0 has shape (4x8), parameter 0 has (4x9)") != NULL, "%s",
                 gaia_last_error(r.ctx));
        gaia_optim_destroy(fewer);
        gaia_optim_destroy(wrong);
    }
    GT_OK(t, gaia_tensor_to_host(r.ctx, r.p[0], after, 32));
    GT_CHECK(t, memcmp(before, after, sizeof before) == 0, "a failed load changed a parameter");
    GT_CHECK(t, gaia_optim_steps(r.opt) == 0, "a failed load changed the step count");
    gaia_tensor_free(x);
    gaia_tensor_free(extra);
    run_close(&r);
}

/* Files and groups: an optimizer without groups still writes the format
   gaia.optim/1; a file in that format, built here by hand as the code
   before groups wrote it, loads into such an optimizer (its lr and decay
   become group 0's) and is refused by one with two groups; a grouped file
   is refused by an optimizer of one group or of another membership, and
   its groups' settings replace the optimizer's. */
static void optim_groups_in_files(gt *t) {
    float init[RUN_FLOATS], filevals[RUN_FLOATS], got[RUN_FLOATS];
    char oldpath[600], grouped[600], plainpath[600];
    run r;
    gaia_safetensors *f = NULL;
    gt_fill_normal(t, init, RUN_FLOATS);
    gt_fill_normal(t, filevals, RUN_FLOATS);
    gt_tmp_path(oldpath, sizeof oldpath, "old_format.safetensors");
    gt_tmp_path(grouped, sizeof grouped, "grouped.safetensors");
    gt_tmp_path(plainpath, sizeof plainpath, "plain_optim.safetensors");
    /* the format an optimizer without groups writes: unchanged */
    GT_OK(t, run_open(&r, 3, 1, init));
    GT_OK(t, run_step(&r));
    GT_OK(t, gaia_optim_save(r.opt, plainpath));
    GT_OK(t, gaia_safetensors_load(r.ctx, plainpath, &f));
    GT_CHECK(t, strcmp(gaia_safetensors_meta(f, "format"), "gaia.optim/1") == 0 &&
                    gaia_safetensors_meta(f, "groups") == NULL && gaia_safetensors_get(f, "optim.groups") == NULL &&
                    gaia_safetensors_count(f) == 8, /* 4 values, 3 momentum buffers (p3 has no gradient), hyper */
             "format %s, %zu tensors", gaia_safetensors_meta(f, "format"), gaia_safetensors_count(f));
    gaia_safetensors_free(f);
    f = NULL;
    run_close(&r);
    { /* an old file: SGD, lr 0.07, decay 0.003, 3 steps, no momentum buffers yet */
        static const float hyper[8] = {0.07f, 0.9f, 0.9f, 0.999f, 1e-8f, 0.003f, 0.0f, 0.07f};
        static const char *meta[] = {"format", "gaia.optim/1", "kind", "sgd", "nesterov", "0", "params", "4",
                                     "steps", "3", "seed", "5", "rng_stream", "0", NULL};
        gaia_named_tensor items[NPARAM + 1];
        gaia_tensor *vals[NPARAM + 1];
        char names[NPARAM][24]; /* room for any int: -O1 cannot bound i */
        size_t off = 0, h8 = 8;
        int i;
        GT_OK(t, run_open(&r, 3, 0, init));
        for (i = 0; i < NPARAM; i++) {
            int nd = run_shapes[i][1] ? 2 : 1;
            snprintf(names[i], sizeof names[i], "param.%d", i);
            vals[i] = NULL;
            GT_OK(t, gaia_tensor_from_host(r.ctx, nd, run_shapes[i], filevals + off, &vals[i]));
            items[i].name = names[i];
            items[i].tensor = vals[i];
            off += gaia_tensor_numel(vals[i]);
        }
        vals[NPARAM] = NULL;
        GT_OK(t, gaia_tensor_from_host(r.ctx, 1, &h8, hyper, &vals[NPARAM]));
        items[NPARAM].name = "optim.hyper";
        items[NPARAM].tensor = vals[NPARAM];
        GT_OK(t, gaia_safetensors_save(r.ctx, oldpath, items, NPARAM + 1, meta));
        for (i = 0; i <= NPARAM; i++) gaia_tensor_free(vals[i]);
    }
    GT_OK(t, gaia_optim_load(r.opt, oldpath));
    GT_CHECK(t, gaia_optim_steps(r.opt) == 3 && gaia_optim_group_count(r.opt) == 1 && gaia_optim_lr(r.opt) == 0.07f &&
                    gaia_optim_group_lr(r.opt, 0) == 0.07f,
             "old file: steps %llu, %zu groups, lr %g, group 0's %g", (unsigned long long)gaia_optim_steps(r.opt),
             gaia_optim_group_count(r.opt), (double)gaia_optim_lr(r.opt), (double)gaia_optim_group_lr(r.opt, 0));
    GT_OK(t, gaia_tensor_to_host(r.ctx, r.p[0], got, 32));
    GT_CHECK(t, memcmp(got, filevals, 32 * sizeof *got) == 0, "old file: values not loaded");
    GT_OK(t, run_step(&r)); /* the file's rate (0.07), not run_open's (0.05) */
    GT_CHECK(t, gaia_optim_group_lr(r.opt, 0) == 0.07f && gaia_optim_steps(r.opt) == 4, "old file: stepped at lr %g",
             (double)gaia_optim_group_lr(r.opt, 0));
    run_close(&r);
    GT_OK(t, run_open(&r, 3, 4, init)); /* two groups: the old file is one */
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_optim_load(r.opt, oldpath));
    GT_CHECK(t, strstr(gaia_last_error(r.ctx), "holds 1 parameter group, this optimizer has 2") != NULL, "%s",
             gaia_last_error(r.ctx));
    GT_OK(t, run_step(&r));
    GT_OK(t, gaia_optim_save(r.opt, grouped));
    GT_OK(t, gaia_safetensors_load(r.ctx, grouped, &f));
    GT_CHECK(t, strcmp(gaia_safetensors_meta(f, "format"), "gaia.optim/2") == 0 &&
                    strcmp(gaia_safetensors_meta(f, "groups"), "2") == 0,
             "grouped file: format %s", gaia_safetensors_meta(f, "format"));
    gaia_safetensors_free(f);
    run_close(&r);
    GT_OK(t, run_open(&r, 3, 1, init)); /* one group: the file has two */
    GT_STATUS(t, GAIA_ERR_SHAPE, gaia_optim_load(r.opt, grouped));
    GT_CHECK(t, strstr(gaia_last_error(r.ctx), "holds 2 parameter groups, this optimizer has 1") != NULL, "%s",
             gaia_last_error(r.ctx));
    { /* other groups over the same tensors: another membership, then other settings */
        gaia_optim *other = NULL;
        gaia_optim_desc od;
        gaia_optim_group g[2];
        gaia_tensor *g0[3], *g1[2];
        memset(&od, 0, sizeof od);
        od.kind = GAIA_OPTIM_SGD;
        od.lr = 0.05f;
        od.momentum = 0.8f;
        od.nesterov = 1;
        memset(g, 0, sizeof g);
        g0[0] = r.p[0], g0[1] = r.p[2], g0[2] = r.p[1], g1[0] = r.p[3];
        g[0].params = g0, g[0].n = 3, g[1].params = g1, g[1].n = 1;
        GT_OK(t, gaia_optim_create_groups(r.ctx, &od, g, 2, &other));
        GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_load(other, grouped));
        GT_CHECK(t, strstr(gaia_last_error(r.ctx), "parameter 2 is in group 1 there, in group 0 in this") != NULL, "%s",
                 gaia_last_error(r.ctx));
        GT_CHECK(t, gaia_optim_steps(other) == 0, "a refused load changed the step count");
        gaia_optim_destroy(other);
        other = NULL;
        g0[2] = NULL, g1[0] = r.p[1], g1[1] = r.p[3];
        g[0].n = 2, g[0].lr = 0.5f, g[1].n = 2, g[1].weight_decay = 0.4f, g[1].own_weight_decay = 1;
        GT_OK(t, gaia_optim_create_groups(r.ctx, &od, g, 2, &other));
        GT_OK(t, gaia_optim_load(other, grouped));
        /* the file's: group 0 at 0.03, group 1 at desc's 0.05 */
        GT_CHECK(t, gaia_optim_group_lr(other, 0) == 0.03f && gaia_optim_group_lr(other, 1) == 0.05f,
                 "group rates %g %g after the load", (double)gaia_optim_group_lr(other, 0),
                 (double)gaia_optim_group_lr(other, 1));
        gaia_optim_destroy(other);
    }
    run_close(&r);
}

/* Out of memory at each allocation of a load: OUT_OF_MEMORY and nothing
   changed, then the same load succeeds. */
/* The optimizer file's counters are decimal digits and nothing else: a
   count with a letter, a sign, a space, nothing, or one past 2^64 - 1 is a
   format error naming the file's metadata, and the optimizer keeps its
   state (its steps); 2^64 - 1 itself loads. The file is the format without
   groups, written by hand (SGD, no momentum buffers). */
static gaia_status write_optim_file(run *r, const char *path, const char *steps) {
    static const float hyper[8] = {0.07f, 0.9f, 0.9f, 0.999f, 1e-8f, 0.003f, 0.0f, 0.07f};
    const char *meta[] = {"format", "gaia.optim/1", "kind", "sgd", "nesterov", "0", "params", "4",
                          "steps", steps, "seed", "5", "rng_stream", "0", NULL};
    gaia_named_tensor items[NPARAM + 1];
    gaia_tensor *h = NULL;
    char names[NPARAM][24];
    size_t h8 = 8;
    gaia_status st;
    int i;
    for (i = 0; i < NPARAM; i++) {
        snprintf(names[i], sizeof names[i], "param.%d", i);
        items[i].name = names[i];
        items[i].tensor = r->p[i];
    }
    st = gaia_tensor_from_host(r->ctx, 1, &h8, hyper, &h);
    items[NPARAM].name = "optim.hyper";
    items[NPARAM].tensor = h;
    if (st == GAIA_OK) st = gaia_safetensors_save(r->ctx, path, items, NPARAM + 1, meta);
    gaia_tensor_free(h);
    return st;
}
static void optim_load_refuses_counters_that_are_not_digits(gt *t) {
    static const char *bad[] = {"3x", "x3", "-3", "+3", " 3", "", "18446744073709551616", "99999999999999999999"};
    float init[RUN_FLOATS];
    char path[600];
    run r;
    size_t i;
    gt_fill_normal(t, init, RUN_FLOATS);
    gt_tmp_path(path, sizeof path, "counters.safetensors");
    GT_OK(t, run_open(&r, 3, 0, init));
    GT_OK(t, run_step(&r));
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        GT_OK(t, write_optim_file(&r, path, bad[i]));
        GT_STATUS(t, GAIA_ERR_FORMAT, gaia_optim_load(r.opt, path));
        GT_CHECK(t, gaia_optim_steps(r.opt) == 1, "steps '%s': the optimizer's steps became %llu", bad[i],
                 (unsigned long long)gaia_optim_steps(r.opt));
    }
    GT_OK(t, write_optim_file(&r, path, "18446744073709551615"));
    GT_OK(t, gaia_optim_load(r.opt, path));
    GT_CHECK(t, gaia_optim_steps(r.opt) == UINT64_MAX, "steps 2^64 - 1 loaded as %llu",
             (unsigned long long)gaia_optim_steps(r.opt));
    run_close(&r);
}

static void optim_load_out_of_memory_changes_nothing(gt *t) {
    float init[RUN_FLOATS], before[32], after[32];
    char path[600];
    run r;
    gt_heap h;
    gaia_ctx *ctx = NULL;
    gaia_optim *opt = NULL;
    gaia_optim_desc od;
    gaia_tensor *p[NPARAM] = {NULL, NULL, NULL, NULL};
    size_t off = 0;
    long k;
    int i;
    gt_fill_normal(t, init, RUN_FLOATS);
    gt_tmp_path(path, sizeof path, "oom.safetensors");
    GT_OK(t, run_open(&r, 3, 2, init));
    GT_OK(t, run_step(&r));
    GT_OK(t, gaia_optim_save(r.opt, path));
    run_close(&r);
    GT_OK(t, gt_heap_ctx(&h, GAIA_DEVICE_CPU, &ctx));
    for (i = 0; i < NPARAM; i++) {
        int nd = run_shapes[i][1] ? 2 : 1;
        GT_OK(t, gaia_tensor_from_host(ctx, nd, run_shapes[i], init + off, &p[i]));
        GT_OK(t, gaia_tensor_set_requires_grad(ctx, p[i], 1));
        off += gaia_tensor_numel(p[i]);
    }
    memset(&od, 0, sizeof od);
    od.kind = GAIA_OPTIM_ADAMW;
    od.lr = 0.5f;
    GT_OK(t, gaia_optim_create(ctx, &od, p, NPARAM, &opt));
    GT_OK(t, gaia_tensor_to_host(ctx, p[0], before, 32));
    for (k = 1; k < 400; k++) {
        gaia_status st;
        gt_heap_fail_in(&h, k);
        st = gaia_optim_load(opt, path);
        gt_heap_fail_in(&h, 0);
        if (st == GAIA_OK) break;
        GT_CHECK(t, st == GAIA_ERR_OUT_OF_MEMORY, "allocation %ld: %s (%s)", k, gaia_status_str(st), gaia_last_error(ctx));
        GT_CHECK(t, gaia_optim_steps(opt) == 0, "allocation %ld: the step count changed", k);
        GT_OK(t, gaia_tensor_to_host(ctx, p[0], after, 32));
        GT_CHECK(t, memcmp(before, after, sizeof before) == 0, "allocation %ld: a parameter changed", k);
    }
    GT_CHECK(t, k > 1 && k < 400, "the load never succeeded (%ld)", k);
    GT_CHECK(t, gaia_optim_steps(opt) == 1, "steps %llu after the load", (unsigned long long)gaia_optim_steps(opt));
    gaia_optim_destroy(opt);
    for (i = 0; i < NPARAM; i++) gaia_tensor_free(p[i]);
    gaia_ctx_destroy(ctx);
    GT_CHECK(t, h.live == 0, "%ld blocks leaked", h.live);
}

/* A save gives back every block it took: the context allocator's live
   count is the same before and after gaia_optim_save (an SGD with momentum
   and an AdamW after one step, so that moment buffers are written too),
   and nothing is left once everything is destroyed. */
static void optim_save_frees_every_block(gt *t) {
    static const gaia_optim_kind kinds[2] = {GAIA_OPTIM_SGD, GAIA_OPTIM_ADAMW};
    char path[600];
    int c;
    gt_tmp_path(path, sizeof path, "leak.safetensors");
    for (c = 0; c < 2 && !t->failed; c++) {
        gt_heap h;
        gaia_ctx *ctx = NULL;
        gaia_optim *opt = NULL;
        gaia_optim_desc od;
        gaia_tensor *p[2] = {NULL, NULL}, *target = NULL, *y = NULL, *loss = NULL;
        size_t s[2] = {3, 4};
        long live, calls;
        gaia_status st;
        int i;
        if (gt_heap_ctx(&h, GAIA_DEVICE_CPU, &ctx) != GAIA_OK) {
            gt_fail_at(t, __FILE__, __LINE__, "no context");
            return;
        }
        gaia_ctx_set_seed(ctx, t->seed);
        memset(&od, 0, sizeof od);
        od.kind = kinds[c];
        od.lr = 0.1f;
        od.momentum = kinds[c] == GAIA_OPTIM_SGD ? 0.9f : 0.0f;
        st = GAIA_OK;
        for (i = 0; i < 2 && st == GAIA_OK; i++) {
            st = gaia_tensor_randn(ctx, 2 - i, s + i, 0.0f, 1.0f, &p[i]);
            if (st == GAIA_OK) st = gaia_tensor_set_requires_grad(ctx, p[i], 1);
        }
        if (st == GAIA_OK) st = gaia_optim_create(ctx, &od, p, 2, &opt);
        if (st == GAIA_OK) st = gaia_tensor_randn(ctx, 2, s, 0.0f, 1.0f, &target);
        if (st == GAIA_OK) st = gaia_tensor_add(ctx, p[0], p[1], &y);
        if (st == GAIA_OK) st = gaia_loss_mse(ctx, y, target, &loss);
        if (st == GAIA_OK) st = gaia_backward(ctx, loss);
        if (st == GAIA_OK) st = gaia_optim_step(opt);
        if (st != GAIA_OK) gt_fail_at(t, __FILE__, __LINE__, "setup: %s", gaia_last_error(ctx));
        live = h.live;
        calls = h.calls;
        if (!t->failed && (st = gaia_optim_save(opt, path)) != GAIA_OK)
            gt_fail_at(t, __FILE__, __LINE__, "save: %s", gaia_last_error(ctx));
        if (!t->failed && h.calls == calls) gt_fail_at(t, __FILE__, __LINE__, "the save allocated nothing");
        if (!t->failed && h.live != live)
            gt_fail_at(t, __FILE__, __LINE__, "%s: the save left %ld blocks allocated", c ? "AdamW" : "SGD",
                       h.live - live);
        gaia_optim_destroy(opt);
        gaia_tensor_free(p[0]), gaia_tensor_free(p[1]), gaia_tensor_free(target), gaia_tensor_free(y);
        gaia_tensor_free(loss);
        gaia_ctx_destroy(ctx);
        if (!t->failed && h.live) gt_fail_at(t, __FILE__, __LINE__, "%ld blocks leaked", h.live);
    }
    remove(path);
}

/* ---- Python's safetensors, both ways (skipped when it is not installed) ---- */
static void safetensors_files_agree_with_python(gt *t) {
    char cmd[2400], script[600], ours[600], theirs[600];
    const char *py = gt_python(cmd, sizeof cmd, "safetensors.numpy, numpy");
    static const float w[6] = {0.5f, -1.25f, 3.0e-8f, 1e30f, -0.0f, 7.0f};
    static const char *meta[] = {"epoch", "4", "who", "gaia", NULL};
    gaia_tensor *x = NULL, *s = NULL;
    gaia_named_tensor items[2];
    gaia_safetensors *f = NULL;
    size_t sw[2] = {2, 3}, one = 1;
    float scalar = 42.0f, got[6];
    FILE *out;
    if (!py) GT_SKIP(t, "no python with safetensors and numpy (set GAIA_TEST_PYTHON)");
    gt_tmp_path(script, sizeof script, "interop.py");
    gt_tmp_path(ours, sizeof ours, "from_gaia.safetensors");
    gt_tmp_path(theirs, sizeof theirs, "from_python.safetensors");
    GT_OK(t, gaia_tensor_from_host(t->ctx, 2, sw, w, &x));
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &one, &scalar, &s));
    items[0].name = "layer.weight";
    items[0].tensor = x;
    items[1].name = "step";
    items[1].tensor = s;
    GT_OK(t, gaia_safetensors_save(t->ctx, ours, items, 2, meta));
    /* Python checks gaia's file, then writes one of every numpy dtype */
    out = fopen(script, "w");
    GT_CHECK(t, out != NULL, "cannot write %s", script);
    fprintf(out,
            "import sys, numpy as np\n"
            "from safetensors import safe_open\n"
            "from safetensors.numpy import load_file, save_file\n"
            "d = load_file(sys.argv[1])\n"
            "w = np.array([[0.5, -1.25, 3.0e-8], [1e30, -0.0, 7.0]], dtype=np.float32)\n"
            "assert d['layer.weight'].dtype == np.float32 and d['layer.weight'].shape == (2, 3)\n"
            "assert d['layer.weight'].tobytes() == w.tobytes(), d['layer.weight']\n"
            "assert d['step'].tolist() == [42.0]\n"
            "with safe_open(sys.argv[1], framework='np') as f:\n"
            "    m = dict(f.metadata())\n"
            "    s = m.pop('gaia.fnv1a64')\n"  /* gaia's checksum of the file */
            "    assert len(s) == 16 and all(c in '0123456789abcdef' for c in s), s\n"
            "    assert m == {'epoch': '4', 'who': 'gaia'}, f.metadata()\n"
            "save_file({'f64': np.array([1/3, -2.5e100], dtype=np.float64),\n"
            "           'f16': np.array([[1.5, -0.25], [65504, 6e-8]], dtype=np.float16),\n"
            "           'i64': np.array([-5, 2**40], dtype=np.int64),\n"
            "           'i32': np.array([[[7]]], dtype=np.int32),\n"
            "           'u8': np.array([255, 0, 3], dtype=np.uint8),\n"
            "           'b': np.array([True, False]),\n"
            "           'f32': w}, sys.argv[2], metadata={'from': 'python'})\n");
    GT_CHECK(t, fclose(out) == 0, "cannot write %s", script);
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' '%s'", py, script, ours, theirs);
    GT_CHECK(t, system(cmd) == 0, "python rejected gaia's file or could not write its own: %s", cmd);
    GT_OK(t, gaia_safetensors_load(t->ctx, theirs, &f));
    GT_CHECK(t, gaia_safetensors_count(f) == 7, "count %zu", gaia_safetensors_count(f));
    GT_CHECK(t, strcmp(gaia_safetensors_meta(f, "from"), "python") == 0, "metadata");
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_safetensors_get(f, "f64"), got, 6));
    GT_CHECK(t, got[0] == (float)(1.0 / 3.0) && isinf(got[1]) && got[1] < 0, "f64 %g %g", got[0], got[1]);
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_safetensors_get(f, "f16"), got, 6));
    GT_CHECK(t, got[0] == 1.5f && got[1] == -0.25f && got[2] == 65504.0f && fabsf(got[3] - 5.96e-8f) < 1e-9f,
             "f16 %g %g %g %g", got[0], got[1], got[2], got[3]);
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_safetensors_get(f, "i64"), got, 6));
    GT_CHECK(t, got[0] == -5.0f && got[1] == 1099511627776.0f, "i64");
    GT_CHECK(t, gaia_tensor_ndim(gaia_safetensors_get(f, "i32")) == 3, "i32 rank");
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_safetensors_get(f, "u8"), got, 6));
    GT_CHECK(t, got[0] == 255.0f && got[1] == 0.0f && got[2] == 3.0f, "u8");
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_safetensors_get(f, "b"), got, 6));
    GT_CHECK(t, got[0] == 1.0f && got[1] == 0.0f, "bool");
    GT_CHECK(t, bits_equal(t, gaia_safetensors_get(f, "f32"), x), "f32 changed");
    gaia_safetensors_free(f);
    gaia_tensor_free(x);
    gaia_tensor_free(s);
}

/* ---- examples/train_mlp: a run cut in two by --until/--save and --resume
   ends with the parameters of one straight run (the printed fingerprint) ---- */
extern char gt_exe_dir[4096];

/* The "parameter fingerprint ..." line of a train_mlp run into fp (empty
   when it printed none). */
static void train_mlp_fingerprint(const char *args, char *fp, size_t size) {
    char cmd[6000], line[512];
    FILE *p;
    fp[0] = '\0';
    snprintf(cmd, sizeof cmd, "'%s/../examples/train_mlp' %s 2>/dev/null", gt_exe_dir, args);
    p = popen(cmd, "r");
    if (!p) return;
    while (fgets(line, sizeof line, p))
        if (strncmp(line, "parameter fingerprint ", 22) == 0) {
            size_t len = strcspn(line + 22, "\n");
            if (len >= size) len = size - 1;
            memcpy(fp, line + 22, len);
            fp[len] = '\0';
        }
    pclose(p); /* 1 when a short run is below 100% accuracy: only the fingerprint matters here */
}

static void train_mlp_resumed_run_matches_a_straight_one(gt *t) {
    char path[600], args[1400], straight[64], cut[64], resumed[64], prog[4200];
    snprintf(prog, sizeof prog, "%s/../examples/train_mlp", gt_exe_dir);
    /* A missing example is a build problem, not a training one: name it. */
    GT_CHECK(t, access(prog, X_OK) == 0, "cannot run the example '%s' (make examples builds it)", prog);
    gt_tmp_path(path, sizeof path, "train_mlp.safetensors");
    train_mlp_fingerprint("40", straight, sizeof straight);
    snprintf(args, sizeof args, "40 --until 15 --save '%s'", path);
    train_mlp_fingerprint(args, cut, sizeof cut);
    snprintf(args, sizeof args, "40 --resume '%s'", path);
    train_mlp_fingerprint(args, resumed, sizeof resumed);
    GT_CHECK(t, straight[0] && cut[0] && resumed[0], "a run of '%s' printed no fingerprint: straight '%s', cut '%s', resumed '%s'",
             prog, straight, cut, resumed);
    GT_CHECK(t, strcmp(straight, resumed) == 0 && strcmp(straight, cut) != 0, "fingerprints: straight %s, cut %s, resumed %s",
             straight, cut, resumed);
}

/* The digits example on scikit-learn's digits, exported by the script the
   example names: at least 95% of the 450 test images right (skipped without
   a Python that has scikit-learn). */
static void train_digits_reaches_95_percent_on_the_test_images(gt *t) {
    char cmd[9000], prog[4200], script[4200], dir[600], line[512];
    const char *py = gt_python(cmd, sizeof cmd, "numpy, sklearn");
    double acc = -1.0;
    unsigned long right = 0, total = 0;
    FILE *p;
    int rc;
    if (!py) GT_SKIP(t, "no python with numpy and scikit-learn (set GAIA_TEST_PYTHON)");
    snprintf(prog, sizeof prog, "%s/../examples/train_digits", gt_exe_dir);
    snprintf(script, sizeof script, "%s/../../tools/digits_to_npy.py", gt_exe_dir);
    GT_CHECK(t, access(prog, X_OK) == 0, "cannot run the example '%s' (make examples builds it)", prog);
    GT_CHECK(t, access(script, R_OK) == 0, "cannot read the export script '%s'", script);
    gt_tmp_path(dir, sizeof dir, "digits");
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' > /dev/null", py, script, dir);
    GT_CHECK(t, system(cmd) == 0, "'%s' failed", cmd);
    snprintf(cmd, sizeof cmd, "'%s' '%s' 2>&1", prog, dir);
    p = popen(cmd, "r");
    GT_CHECK(t, p != NULL, "cannot run '%s'", prog);
    while (fgets(line, sizeof line, p))
        if (sscanf(line, "test accuracy: %lu / %lu (%lf%%)", &right, &total, &acc) == 3) break;
    while (fgets(line, sizeof line, p)) {
    }
    rc = pclose(p);
    GT_CHECK(t, total == 450 && acc >= 95.0 && rc == 0, "'%s': test accuracy %.2f%% of %lu images (exit %d)", prog, acc,
             total, rc);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) GT_CHECK(t, 0, "cannot remove %s", dir);
}

/* ---- bad arguments to every public function of the module ---- */
static void checkpoint_functions_reject_bad_arguments(gt *t) {
    gaia_tensor *x = NULL;
    gaia_ctx *other = NULL;
    gaia_tensor *y = NULL;
    gaia_named_tensor items[2];
    gaia_safetensors *f = NULL;
    gaia_optim *opt = NULL;
    gaia_optim_desc od;
    void *img = NULL;
    size_t n = 3, size = 0;
    static const char *nullval[] = {"k", NULL, NULL}, *dupkey[] = {"k", "1", "k", "2", NULL},
                      *badutf[] = {"k", "\xff", NULL};
    char path[600];
    gt_tmp_path(path, sizeof path, "bad.safetensors");
    GT_OK(t, gaia_tensor_randn(t->ctx, 1, &n, 0.0f, 1.0f, &x));
    items[0].name = "a", items[0].tensor = x;
    items[1].name = "b", items[1].tensor = x;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_safetensors_save(NULL, path, items, 1, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_safetensors_save(t->ctx, NULL, items, 1, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_safetensors_save(t->ctx, path, NULL, 1, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_safetensors_image(t->ctx, items, 1, NULL, NULL, &size));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_safetensors_image(t->ctx, items, 1, NULL, &img, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_safetensors_image(NULL, items, 1, NULL, &img, &size));
    items[1].name = "a"; /* a name twice */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_safetensors_image(t->ctx, items, 2, NULL, &img, &size));
    items[1].name = NULL;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_safetensors_image(t->ctx, items, 2, NULL, &img, &size));
    items[1].name = "__metadata__";
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_safetensors_image(t->ctx, items, 2, NULL, &img, &size));
    items[1].name = "bad \xc0\x80 utf-8";
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_safetensors_image(t->ctx, items, 2, NULL, &img, &size));
    items[1].name = "b";
    items[1].tensor = NULL;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_safetensors_image(t->ctx, items, 2, NULL, &img, &size));
    GT_OK(t, gaia_ctx_create(NULL, &other));
    GT_OK(t, gaia_tensor_zeros(other, 1, &n, &y));
    items[1].tensor = y; /* another context's tensor */
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_safetensors_image(t->ctx, items, 2, NULL, &img, &size));
    items[1].tensor = x;
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_safetensors_image(t->ctx, items, 2, nullval, &img, &size));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_safetensors_image(t->ctx, items, 2, dupkey, &img, &size));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_safetensors_image(t->ctx, items, 2, badutf, &img, &size));
    GT_CHECK(t, img == NULL && size == 0, "a refused image was written");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_safetensors_save(t->ctx, path, items, 2, dupkey));
    GT_CHECK(t, fopen(path, "rb") == NULL, "a refused save made a file");
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_safetensors_parse(NULL, "x", 1, &f));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_safetensors_parse(t->ctx, NULL, 1, &f));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_safetensors_parse(t->ctx, "x", 1, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_safetensors_load(NULL, path, &f));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_safetensors_load(t->ctx, NULL, &f));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_safetensors_load(t->ctx, path, NULL));
    GT_STATUS(t, GAIA_ERR_IO, gaia_safetensors_load(t->ctx, "no such file.safetensors", &f));
    GT_CHECK(t, f == NULL, "a failed load wrote its output");
    GT_CHECK(t, gaia_safetensors_count(NULL) == 0 && gaia_safetensors_entries(NULL) == NULL &&
                    gaia_safetensors_get(NULL, "a") == NULL && gaia_safetensors_meta(NULL, "k") == NULL &&
                    gaia_safetensors_metadata(NULL) == NULL,
             "the getters must answer 0 or NULL for a NULL file");
    gaia_safetensors_free(NULL);
    GT_OK(t, gaia_safetensors_image(t->ctx, items, 1, NULL, &img, &size));
    GT_OK(t, gaia_safetensors_parse(t->ctx, img, size, &f));
    GT_CHECK(t, gaia_safetensors_get(f, NULL) == NULL && gaia_safetensors_meta(f, NULL) == NULL, "NULL names");
    gaia_safetensors_free(f);
    gaia_image_free(t->ctx, img);
    memset(&od, 0, sizeof od);
    od.kind = GAIA_OPTIM_SGD;
    od.lr = 0.1f;
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, x, 1));
    GT_OK(t, gaia_optim_create(t->ctx, &od, &x, 1, &opt));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_save(NULL, path));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_save(opt, NULL));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_load(NULL, path));
    GT_STATUS(t, GAIA_ERR_INVALID_ARG, gaia_optim_load(opt, NULL));
    GT_STATUS(t, GAIA_ERR_IO, gaia_optim_save(opt, "no/such/dir/x.safetensors"));
    gaia_optim_destroy(opt);
    gaia_tensor_free(x);
    gaia_tensor_free(y);
    gaia_ctx_destroy(other);
}

const gt_case gt_ckpt_cases[] = {
    {"safetensors_round_trips_tensors_and_metadata", safetensors_round_trips_tensors_and_metadata},
    {"safetensors_reads_every_listed_dtype", safetensors_reads_every_listed_dtype},
    {"safetensors_hostile_headers_are_format_errors", safetensors_hostile_headers_are_format_errors},
    {"safetensors_unicode_escapes_decode_to_utf8", safetensors_unicode_escapes_decode_to_utf8},
    {"safetensors_corrupt_header_lengths_are_format_errors", safetensors_corrupt_header_lengths_are_format_errors},
    {"safetensors_end_of_data_bound_is_exact", safetensors_end_of_data_bound_is_exact},
    {"safetensors_header_length_is_checked", safetensors_header_length_is_checked},
    {"safetensors_truncated_or_flipped_files_never_crash", safetensors_truncated_or_flipped_files_never_crash},
    {"safetensors_respects_the_load_limit", safetensors_respects_the_load_limit},
    {"safetensors_save_is_atomic", safetensors_save_is_atomic},
    {"safetensors_files_agree_with_python", safetensors_files_agree_with_python},
    {"optim_resumed_training_is_bit_identical", optim_resumed_training_is_bit_identical},
    {"optim_load_mismatches_change_nothing", optim_load_mismatches_change_nothing},
    {"optim_load_out_of_memory_changes_nothing", optim_load_out_of_memory_changes_nothing},
    {"optim_load_refuses_counters_that_are_not_digits", optim_load_refuses_counters_that_are_not_digits},
    {"optim_groups_in_files", optim_groups_in_files},
    {"optim_save_frees_every_block", optim_save_frees_every_block},
    {"checkpoint_functions_reject_bad_arguments", checkpoint_functions_reject_bad_arguments},
    {"train_mlp_resumed_run_matches_a_straight_one", train_mlp_resumed_run_matches_a_straight_one},
    {"train_digits_reaches_95_percent_on_the_test_images", train_digits_reaches_95_percent_on_the_test_images},
    {NULL, NULL},
};
