/* libFuzzer harness: codebooks (gaia_hrr_codebook_parse). The input is a
   4-byte little-endian length L, L bytes of .npy image (the vectors), and
   the rest as the names file. Checks:
   - the status is OK, FORMAT, NUMERIC (a non-finite vector) or
     OUT_OF_MEMORY (the context's load limit);
   - a failed parse leaves the caller's handle as it was;
   - an accepted codebook written back (vectors as .npy, one name a line)
     parses to a codebook that writes back to the same bytes. */
#include "fuzz_common.h"

/* The codebook's two files, in memory: vectors (.npy) and names. */
static void write_back(gaia_ctx *ctx, const gaia_hrr_codebook *cb, void **npy, size_t *nnpy, char **names,
                       size_t *nnames) {
    gaia_tensor *v = NULL;
    size_t i, len = 0, m = gaia_hrr_codebook_size(cb);
    if (gaia_hrr_codebook_vectors(ctx, cb, &v) != GAIA_OK || gaia_npy_image(ctx, v, npy, nnpy) != GAIA_OK)
        fuzz_fail("cannot write a parsed codebook back", GAIA_OK);
    gaia_tensor_free(v);
    for (i = 0; i < m; i++) len += strlen(gaia_hrr_codebook_name(cb, i)) + 1;
    *names = (char *)malloc(len + 1);
    for (i = 0, len = 0; i < m; i++) {
        size_t k = strlen(gaia_hrr_codebook_name(cb, i));
        memcpy(*names + len, gaia_hrr_codebook_name(cb, i), k);
        (*names)[len + k] = '\n';
        len += k + 1;
    }
    *nnames = len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gaia_ctx *ctx = fuzz_ctx();
    static gaia_hrr_codebook *existing;
    gaia_hrr_codebook *cb, *cb2 = NULL;
    size_t L, n1, n2, m1, m2;
    void *npy1 = NULL, *npy2 = NULL;
    char *names1 = NULL, *names2 = NULL;
    gaia_status st;
    if (size < 4) return 0;
    L = (size_t)data[0] | ((size_t)data[1] << 8) | ((size_t)data[2] << 16) | ((size_t)data[3] << 24);
    if (L > size - 4) return 0;
    if (!existing && gaia_hrr_codebook_create(ctx, 4, &existing) != GAIA_OK) abort();
    cb = existing;
    st = gaia_hrr_codebook_parse(ctx, data + 4, L, data + 4 + L, size - 4 - L, &cb);
    fuzz_status_allowed(st, 1);
    if (st != GAIA_OK) {
        if (cb != existing) fuzz_fail("a failed parse changed the caller's handle", st);
        return 0;
    }
    write_back(ctx, cb, &npy1, &n1, &names1, &m1);
    st = gaia_hrr_codebook_parse(ctx, npy1, n1, names1, m1, &cb2);
    if (st != GAIA_OK) fuzz_fail("a written-back codebook does not parse", st);
    write_back(ctx, cb2, &npy2, &n2, &names2, &m2);
    if (n1 != n2 || m1 != m2 || memcmp(npy1, npy2, n1) != 0 || memcmp(names1, names2, m1) != 0)
        fuzz_fail("the round trip changed the codebook", GAIA_OK);
    gaia_image_free(ctx, npy1);
    gaia_image_free(ctx, npy2);
    free(names1);
    free(names2);
    gaia_hrr_codebook_free(cb);
    gaia_hrr_codebook_free(cb2);
    return 0;
}
