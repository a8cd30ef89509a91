/* placeholder until the cuda module lands */
static int demo_cuda(gaia_ctx *ctx) {
    (void)ctx;
    return 0;
}
