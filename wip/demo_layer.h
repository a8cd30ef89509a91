/* placeholder until the layer module lands */
static int demo_layer(gaia_ctx *ctx) {
    (void)ctx;
    return 0;
}
