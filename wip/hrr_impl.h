/* hrr module: implementation (fragment of gaia.h's implementation section). */
static void gaia__hrr_release(gaia_ctx *ctx) { (void)ctx; }
