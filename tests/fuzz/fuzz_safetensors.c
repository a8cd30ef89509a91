/* libFuzzer harness: safetensors images. Checks, beyond "no crash":
   - the status is OK, FORMAT, or OUT_OF_MEMORY (the context's load limit);
   - the object exists exactly when the status is OK;
   - an accepted image re-saves (float32) to an image that parses to the
     same names, bits and metadata, and re-saves identically. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gaia_ctx *ctx = fuzz_ctx();
    gaia_safetensors *f = NULL, *g = NULL;
    void *img1 = NULL, *img2 = NULL;
    size_t n1 = 0, n2 = 0, i, k;
    gaia_status st = gaia_safetensors_parse(ctx, data, size, &f);
    fuzz_status_allowed(st, 0);
    if ((st == GAIA_OK) != (f != NULL)) fuzz_fail("the output does not match the status", st);
    if (f) {
        const gaia_named_tensor *a, *b;
        const char *const *ma, *const *mb;
        if (gaia_safetensors_image(ctx, gaia_safetensors_entries(f), gaia_safetensors_count(f),
                                   gaia_safetensors_metadata(f), &img1, &n1) != GAIA_OK)
            fuzz_fail("cannot save what was loaded", GAIA_OK);
        st = gaia_safetensors_parse(ctx, img1, n1, &g);
        if (st != GAIA_OK) fuzz_fail("the re-saved image does not parse", st);
        if (gaia_safetensors_count(g) != gaia_safetensors_count(f)) fuzz_fail("the tensor count changed", st);
        a = gaia_safetensors_entries(f);
        b = gaia_safetensors_entries(g);
        for (i = 0; i < gaia_safetensors_count(f); i++) {
            size_t n = gaia_tensor_numel(a[i].tensor);
            const float *x = gaia_tensor_cdata(a[i].tensor), *y = gaia_tensor_cdata(b[i].tensor);
            if (strcmp(a[i].name, b[i].name) != 0) fuzz_fail("a name changed", st);
            if (gaia_tensor_ndim(a[i].tensor) != gaia_tensor_ndim(b[i].tensor) || gaia_tensor_numel(b[i].tensor) != n)
                fuzz_fail("a shape changed", st);
            for (k = 0; k < n; k++)
                if (memcmp(&x[k], &y[k], 4) != 0) fuzz_fail("an element changed in the round trip", st);
        }
        ma = gaia_safetensors_metadata(f);
        mb = gaia_safetensors_metadata(g);
        for (i = 0; ma[i] || mb[i]; i++)
            if (!ma[i] || !mb[i] || strcmp(ma[i], mb[i]) != 0) fuzz_fail("the metadata changed", st);
        if (gaia_safetensors_image(ctx, b, gaia_safetensors_count(g), mb, &img2, &n2) != GAIA_OK)
            fuzz_fail("cannot save twice", GAIA_OK);
        if (n1 != n2 || memcmp(img1, img2, n1) != 0) fuzz_fail("the second save differs from the first", GAIA_OK);
    }
    gaia_image_free(ctx, img1);
    gaia_image_free(ctx, img2);
    gaia_safetensors_free(f);
    gaia_safetensors_free(g);
    return 0;
}
