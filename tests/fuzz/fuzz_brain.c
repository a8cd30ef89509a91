/* libFuzzer harness: brain images (gaia_brain_load_image). Each input is
   loaded as it is (the header, length and checksum checks), then again with
   its payload length and FNV-1a checksum repaired, so that mutations reach
   the parser behind the checksum. Checks:
   - the status is OK, FORMAT, or OUT_OF_MEMORY (the context's load limit);
   - a failed load leaves the caller's handle as it was;
   - an accepted image of the current version saves back to exactly the
     same bytes (the loader accepts only canonical images: sorted keys,
     ascending winners, zero reserved bytes); an older version's saves as
     the current version, which must load and save back unchanged. */
#include "fuzz_common.h"

static void load_and_check(const uint8_t *data, size_t size) {
    gaia_ctx *ctx = fuzz_ctx();
    static gaia_brain *existing;
    gaia_brain *b;
    void *img = NULL;
    size_t n = 0;
    gaia_status st;
    if (!existing && gaia_brain_create(ctx, 0.1, 1, GAIA_DEVICE_CPU, &existing) != GAIA_OK) abort();
    b = existing;
    st = gaia_brain_load_image(ctx, data, size, GAIA_DEVICE_CPU, &b);
    fuzz_status_allowed(st, 0);
    if (st != GAIA_OK) {
        if (b != existing) fuzz_fail("a failed load changed the caller's handle", st);
        return;
    }
    if (b == existing || !b) fuzz_fail("a successful load returned no new brain", st);
    st = gaia_brain_save_image(b, &img, &n);
    if (st != GAIA_OK) fuzz_fail("cannot save a loaded brain", st);
    gaia_brain_destroy(b);
    if (data[8] != GAIA__ASM_VERSION) {
        /* an older image: its current-version save is canonical itself */
        if (data[8] > GAIA__ASM_VERSION) fuzz_fail("an image of a future version loaded", st);
        load_and_check((const uint8_t *)img, n);
    } else if (n != size || memcmp(img, data, size) != 0)
        fuzz_fail("the saved image differs from the loaded one", st);
    gaia_brain_free_image(ctx, img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *fixed;
    uint64_t len, h = 0xCBF29CE484222325ull;
    size_t i;
    load_and_check(data, size);
    if (size < 32) return 0;
    fixed = (uint8_t *)malloc(size);
    memcpy(fixed, data, size);
    len = size - 32;
    for (i = 32; i < size; i++) h = (h ^ fixed[i]) * 0x100000001B3ull;
    for (i = 0; i < 8; i++) {
        fixed[16 + i] = (uint8_t)(len >> (8 * i));
        fixed[24 + i] = (uint8_t)(h >> (8 * i));
    }
    load_and_check(fixed, size);
    free(fixed);
    return 0;
}
