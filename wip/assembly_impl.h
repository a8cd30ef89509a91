/* assembly module: implementation (fragment of gaia.h's implementation section). */
static void gaia__assembly_release(gaia_ctx *ctx) { (void)ctx; }
