/* assembly module's part of the `make demo` tour: projection in both modes
   (the support curve), then association and merge with their overlaps. */
static int demo_assembly__fail(gaia_ctx *ctx, gaia_brain *b, const char *what) {
    printf("  assembly: %s failed: %s\n", what, gaia_last_error(ctx));
    gaia_brain_destroy(b);
    return 1;
}

static int demo_assembly(gaia_ctx *ctx) {
    static uint32_t wa[1024], wb[1024];
    gaia_brain *b = NULL;
    size_t hist[16], nh = 0, t, na = 0, nb = 0, ov = 0, sa = 0, sb = 0, sc = 0;
    int m;
    double t0;
    printf("assembly: brains of n = 100000 neurons, k = 317, p = 0.01, beta = 0.05\n");
    for (m = 0; m < 2; m++) {
        gaia_area_mode mode = m ? GAIA_AREA_LAZY : GAIA_AREA_EXPLICIT;
        if (gaia_brain_create(ctx, 0.01, 1, GAIA_DEVICE_AUTO, &b) != GAIA_OK) return demo_assembly__fail(ctx, b, "create");
        if (gaia_brain_add_stimulus(b, "stim", 317) != GAIA_OK || gaia_brain_add_area(b, "A", 100000, 317, 0.05f, mode) != GAIA_OK)
            return demo_assembly__fail(ctx, b, "setup");
        t0 = gaia_time_s();
        if (gaia_brain_op_projection(b, "stim", "A", 14) != GAIA_OK) return demo_assembly__fail(ctx, b, "projection");
        t0 = gaia_time_s() - t0;
        gaia_brain_support_history(b, "A", hist, 16, &nh);
        printf("  projection, %-8s support:", m ? "lazy" : "explicit");
        for (t = 0; t < nh; t++) printf(" %zu", hist[t]);
        printf("  (%.2f ms/step)\n", t0 * 1e3 / 14);
        gaia_brain_destroy(b);
        b = NULL;
    }
    /* association and merge, lazy */
    t0 = gaia_time_s();
    if (gaia_brain_create(ctx, 0.05, 2, GAIA_DEVICE_AUTO, &b) != GAIA_OK) return demo_assembly__fail(ctx, b, "create");
    if (gaia_brain_add_stimulus(b, "sa", 317) != GAIA_OK || gaia_brain_add_stimulus(b, "sb", 317) != GAIA_OK ||
        gaia_brain_add_area(b, "A", 100000, 317, 0.1f, GAIA_AREA_LAZY) != GAIA_OK ||
        gaia_brain_add_area(b, "B", 100000, 317, 0.1f, GAIA_AREA_LAZY) != GAIA_OK ||
        gaia_brain_add_area(b, "C", 100000, 317, 0.1f, GAIA_AREA_LAZY) != GAIA_OK)
        return demo_assembly__fail(ctx, b, "setup");
    if (gaia_brain_project_spec(b, "sa>A sb>B") != GAIA_OK) return demo_assembly__fail(ctx, b, "project");
    for (t = 0; t < 9; t++)
        if (gaia_brain_project_spec(b, "sa>A sb>B A>A B>B") != GAIA_OK) return demo_assembly__fail(ctx, b, "project");
    if (gaia_brain_op_associate(b, "sa", "A", "sb", "B", "C", 10) != GAIA_OK) return demo_assembly__fail(ctx, b, "associate");
    if (gaia_brain_project_spec(b, "sa>A A>A A>C") != GAIA_OK) return demo_assembly__fail(ctx, b, "project");
    gaia_brain_winners(b, "C", wa, 1024, &na);
    if (gaia_brain_project_spec(b, "sb>B B>B B>C") != GAIA_OK) return demo_assembly__fail(ctx, b, "project");
    gaia_brain_winners(b, "C", wb, 1024, &nb);
    gaia_assembly_overlap(ctx, wa, na, wb, nb, &ov);
    printf("  association (lazy, p = 0.05, beta = 0.1): C's assemblies for A and for B share %zu of 317\n", ov);
    gaia_brain_destroy(b);
    b = NULL;
    if (gaia_brain_create(ctx, 0.01, 3, GAIA_DEVICE_AUTO, &b) != GAIA_OK) return demo_assembly__fail(ctx, b, "create");
    if (gaia_brain_add_stimulus(b, "sa", 317) != GAIA_OK || gaia_brain_add_stimulus(b, "sb", 317) != GAIA_OK ||
        gaia_brain_add_area(b, "A", 100000, 317, 0.05f, GAIA_AREA_LAZY) != GAIA_OK ||
        gaia_brain_add_area(b, "B", 100000, 317, 0.05f, GAIA_AREA_LAZY) != GAIA_OK ||
        gaia_brain_add_area(b, "C", 100000, 317, 0.05f, GAIA_AREA_LAZY) != GAIA_OK)
        return demo_assembly__fail(ctx, b, "setup");
    if (gaia_brain_op_merge(b, "sa", "A", "sb", "B", "C", 50) != GAIA_OK) return demo_assembly__fail(ctx, b, "merge");
    gaia_brain_support(b, "A", &sa);
    gaia_brain_support(b, "B", &sb);
    gaia_brain_support(b, "C", &sc);
    printf("  merge (lazy, 50 steps): supports A %zu, B %zu, C %zu (limits 3200, 3200, 6400)  [%.0f ms with association]\n",
           sa, sb, sc, (gaia_time_s() - t0) * 1e3);
    gaia_brain_destroy(b);
    return 0;
}
