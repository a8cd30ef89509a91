/* placeholder until the hrr module lands */
static int demo_hrr(gaia_ctx *ctx) {
    (void)ctx;
    return 0;
}
