/* hrr part of the `make demo` tour: bind / unbind / cleanup at work, with timings. */
static int demo_hrr(gaia_ctx *ctx) {
    const size_t D = 1024, B = 1000, M = 1000, k = 8;
    gaia_tensor *a = NULL, *b = NULL, *c = NULL, *y = NULL, *book = NULL, *roles = NULL, *t = NULL, *v3 = NULL;
    gaia_hrr_spectrum *s = NULL;
    long idx[8];
    float sim[8];
    size_t shape3[3], i, hits = 0;
    double t0, ms_bind, ms_spec, ms_clean;
    int rc = 1;
    /* a batch of binds, and the same with the role's spectrum cached */
    if (gaia_hrr_random(ctx, B, D, 0, &a) || gaia_hrr_random(ctx, 1, D, 0, &b)) goto done;
    if (gaia_hrr_bind(ctx, a, b, &c) || gaia_synchronize(ctx)) goto done;
    t0 = gaia_time_s();
    if (gaia_hrr_bind(ctx, a, b, &c) || gaia_synchronize(ctx)) goto done;
    ms_bind = (gaia_time_s() - t0) * 1e3;
    if (gaia_hrr_spectrum_create(ctx, b, &s)) goto done;
    t0 = gaia_time_s();
    if (gaia_hrr_bind_spectrum(ctx, a, s, 0, &c) || gaia_synchronize(ctx)) goto done;
    ms_spec = (gaia_time_s() - t0) * 1e3;
    printf("   bind %zu pairs at D = %zu: %.2f ms (%.2f us each); cached role spectrum: %.2f ms\n", B, D, ms_bind,
           ms_bind * 1e3 / B, ms_spec);
    /* one record of k pairs with fillers from a codebook, every field cleaned up */
    if (gaia_hrr_random(ctx, M, D, 0, &book) || gaia_hrr_random(ctx, k, D, 0, &roles)) goto done;
    if (gaia_tensor_slice_rows(ctx, book, 0, k, &v3)) goto done; /* fillers: items 0..k-1 */
    gaia_tensor_free(c);
    c = NULL;
    if (gaia_hrr_bind(ctx, roles, v3, &c)) goto done;
    shape3[0] = 1; /* [1, k, D]: one sum of k pairs */
    shape3[1] = k;
    shape3[2] = D;
    if (gaia_tensor_reshape(ctx, c, 3, shape3, &y)) goto done;
    if (gaia_hrr_superpose(ctx, y, NULL, 1, &t)) goto done;
    gaia_tensor_free(y);
    y = NULL;
    if (gaia_hrr_unbind(ctx, t, roles, &y)) goto done; /* k queries against one trace */
    t0 = gaia_time_s();
    if (gaia_hrr_cleanup(ctx, y, book, 0.1f, idx, sim)) goto done;
    ms_clean = (gaia_time_s() - t0) * 1e3;
    for (i = 0; i < k; i++) hits += idx[i] == (long)i;
    printf("   record of %zu role-filler pairs, cleanup against %zu items: %zu/%zu fields right, cosine %.2f "
           "(theory 1/sqrt(k+1) = %.2f), %.2f ms\n",
           k, M, hits, k, sim[0], 1.0 / sqrt((double)k + 1.0), ms_clean);
    rc = hits == k ? 0 : 1;
done:
    gaia_hrr_spectrum_free(s);
    gaia_tensor_free(a);
    gaia_tensor_free(b);
    gaia_tensor_free(c);
    gaia_tensor_free(y);
    gaia_tensor_free(book);
    gaia_tensor_free(roles);
    gaia_tensor_free(t);
    gaia_tensor_free(v3);
    return rc;
}
