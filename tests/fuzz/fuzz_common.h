/* Shared by the fuzz harnesses: one context per process (CPU, a modest load
   limit so a hostile size is refused, not attempted), and the checks every
   harness makes. Each harness is one translation unit with the library. */
#ifndef GAIA_FUZZ_COMMON_H
#define GAIA_FUZZ_COMMON_H
#define GAIA_IMPLEMENTATION
#include "../../gaia.h"
#include <stdlib.h>
#include <string.h>

static gaia_ctx *fuzz_ctx(void) {
    static gaia_ctx *ctx;
    if (!ctx) {
        gaia_ctx_desc d;
        memset(&d, 0, sizeof d);
        d.device = GAIA_DEVICE_CPU;
        d.cpu_threads = 1;
        d.load_limit = (size_t)64 << 20;
        if (gaia_ctx_create(&d, &ctx) != GAIA_OK) abort();
    }
    return ctx;
}

/* A finding: say what and stop (libFuzzer keeps the input). */
static void fuzz_fail(const char *what, gaia_status st) {
    fprintf(stderr, "fuzz: %s (status %s; %s)\n", what, gaia_status_str(st), gaia_last_error(fuzz_ctx()));
    abort();
}

/* A loader's status must be one of those its documentation lists. */
static void fuzz_status_allowed(gaia_status st, int numeric_ok) {
    if (st == GAIA_OK || st == GAIA_ERR_FORMAT || st == GAIA_ERR_OUT_OF_MEMORY || (numeric_ok && st == GAIA_ERR_NUMERIC))
        return;
    fuzz_fail("undocumented status", st);
}
#endif
