/* libFuzzer harness: .npy images. Checks, beyond "no crash":
   - the status is OK, FORMAT, or OUT_OF_MEMORY (the context's load limit);
   - a failed parse into an existing tensor leaves it as it was;
   - an accepted image re-saves to an image that parses to the same bits and
     re-saves identically (the round trip is byte for byte after the first
     save, which writes the canonical '<f4' v1 form). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gaia_ctx *ctx = fuzz_ctx();
    gaia_tensor *t = NULL, *u = NULL, *keep = NULL;
    static const float sentinel[3] = {1.5f, -2.5f, 3.25f};
    size_t three = 3;
    float now[3];
    void *img1 = NULL, *img2 = NULL;
    size_t n1 = 0, n2 = 0;
    gaia_status st = gaia_npy_parse(ctx, data, size, &t);
    fuzz_status_allowed(st, 0);
    if ((st == GAIA_OK) != (t != NULL)) fuzz_fail("the output does not match the status", st);
    /* into an existing [3] tensor */
    if (gaia_tensor_from_host(ctx, 1, &three, sentinel, &keep) != GAIA_OK) abort();
    st = gaia_npy_parse(ctx, data, size, &keep);
    if (st != GAIA_OK) {
        if (st != GAIA_ERR_SHAPE) fuzz_status_allowed(st, 0);
        if (gaia_tensor_to_host(ctx, keep, now, 3) != GAIA_OK || memcmp(now, sentinel, sizeof now) != 0)
            fuzz_fail("a failed parse changed the existing output", st);
    }
    gaia_tensor_free(keep);
    if (t) {
        size_t k, n = gaia_tensor_numel(t);
        const float *a, *b;
        if (gaia_npy_image(ctx, t, &img1, &n1) != GAIA_OK) fuzz_fail("cannot save what was loaded", GAIA_OK);
        st = gaia_npy_parse(ctx, img1, n1, &u);
        if (st != GAIA_OK) fuzz_fail("the re-saved image does not parse", st);
        if (gaia_tensor_ndim(u) != gaia_tensor_ndim(t) || gaia_tensor_numel(u) != n) fuzz_fail("shape changed", st);
        a = gaia_tensor_cdata(t);
        b = gaia_tensor_cdata(u);
        for (k = 0; k < n; k++)
            if (memcmp(&a[k], &b[k], 4) != 0) fuzz_fail("an element changed in the round trip", st);
        if (gaia_npy_image(ctx, u, &img2, &n2) != GAIA_OK) fuzz_fail("cannot save twice", GAIA_OK);
        if (n1 != n2 || memcmp(img1, img2, n1) != 0) fuzz_fail("the second save differs from the first", GAIA_OK);
    }
    gaia_image_free(ctx, img1);
    gaia_image_free(ctx, img2);
    gaia_tensor_free(t);
    gaia_tensor_free(u);
    return 0;
}
