/* placeholder until the assembly module lands */
static int demo_assembly(gaia_ctx *ctx) {
    (void)ctx;
    return 0;
}
