/* gaussian_filter - blur a batch of noisy images through gaia_map.
   Each image (H x W) is smoothed by a Gaussian of width sigma. The filter is
   separable, and a 1-D filter with zero padding is a banded matrix, so one
   image's blur is two matrix products:  out = G_H . img . G_W^T
   (G_H is H x H with G[i][j] = g(i - j), the normalised Gaussian taps).
   gaia_map runs one image per item on its workers; the items read the
   images and filters from the caller's tensors and write their result
   rows in place, so the whole batch costs no copies.

   It checks one image against a direct float64 convolution, reports how
   much closer to the clean images the blurred ones are (PSNR), and times
   the map like with like: on W workers (the context's W threads, one item
   per worker at a time), on one worker (one thread: the speed-up is the
   ratio), and a plain loop over the items on the context, whose W threads
   share each item's products instead. Each time is the best of 3 runs.

       ./gaussian_filter [IMAGES] [SIZE] [SIGMA]   (default 64 images of
                                                    256 x 256, sigma 2) */
#define GAIA_IMPLEMENTATION
#include "gaia.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "example_check.h"

typedef struct batch {
    size_t n, size;
    gaia_tensor *images;  /* [n*size, size]: image i is rows i*size .. */
    gaia_tensor *blurred; /* same shape */
    gaia_tensor *g;       /* [size, size] banded Gaussian */
} batch;

/* The normalised taps g(-r..r), r = ceil(3 sigma), into G's bands. */
static float *gaussian_matrix(size_t size, double sigma, int *radius) {
    int r = (int)ceil(3.0 * sigma), d;
    double sum = 0, *tap = (double *)malloc((size_t)(2 * r + 1) * sizeof *tap);
    float *G = (float *)calloc(size * size, sizeof *G);
    size_t i;
    if (!tap || !G) exit(1);
    for (d = -r; d <= r; d++) sum += tap[d + r] = exp(-0.5 * d * d / (sigma * sigma));
    for (i = 0; i < size; i++)
        for (d = -r; d <= r; d++) {
            long j = (long)i + d;
            if (j >= 0 && j < (long)size) G[i * size + (size_t)j] = (float)(tap[d + r] / sum);
        }
    free(tap);
    *radius = r;
    return G;
}

/* Synthetic scenes: a few bright discs and bars on a gradient, then noise. */
static void make_images(float *clean, float *noisy, size_t n, size_t size, unsigned seed) {
    size_t i, y, x;
    srand(seed);
    for (i = 0; i < n; i++) {
        float *c = clean + i * size * size;
        double cx = (double)(rand() % (int)size), cy = (double)(rand() % (int)size);
        double rad = size / 8.0 + rand() % (int)(size / 8 + 1);
        size_t bar = (size_t)(rand() % (int)size);
        for (y = 0; y < size; y++)
            for (x = 0; x < size; x++) {
                double v = 0.2 + 0.3 * (double)x / (double)size;
                if ((x - cx) * (x - cx) + (y - cy) * (y - cy) < rad * rad) v += 0.5;
                if (y >= bar && y < bar + size / 16) v += 0.3;
                c[y * size + x] = (float)v;
            }
    }
    for (i = 0; i < n * size * size; i++) { /* Gaussian noise, sd 0.2 (Box-Muller) */
        double u1 = (rand() + 1.0) / (RAND_MAX + 2.0), u2 = (rand() + 1.0) / (RAND_MAX + 2.0);
        noisy[i] = clean[i] + (float)(0.2 * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
    }
}

/* The best of 3 runs of the whole batch: through gaia_map on `workers`
   workers, or (workers 0) a loop of the items on ctx itself. */
static double time_batch(gaia_ctx *ctx, batch *b, int workers);

/* One item: blurred_i = G . image_i . G^T. */
static gaia_status blur_item(gaia_ctx *worker, size_t i, void *user) {
    batch *b = (batch *)user;
    gaia_tensor *img = NULL, *tmp = NULL, *out = NULL;
    gaia_status st = gaia_tensor_slice_rows(worker, b->images, i * b->size, b->size, &img);
    if (st == GAIA_OK) st = gaia_tensor_matmul(worker, b->g, img, 0, 0, &tmp); /* columns */
    if (st == GAIA_OK) st = gaia_tensor_slice_rows(worker, b->blurred, i * b->size, b->size, &out);
    if (st == GAIA_OK) st = gaia_tensor_matmul(worker, tmp, b->g, 0, 1, &out); /* rows */
    gaia_tensor_free(img);
    gaia_tensor_free(tmp);
    gaia_tensor_free(out);
    return st;
}

static double time_batch(gaia_ctx *ctx, batch *b, int workers) {
    gaia_map_desc md;
    double best = 0;
    size_t i;
    int rep;
    memset(&md, 0, sizeof md);
    md.workers = workers;
    for (rep = 0; rep < 3; rep++) {
        double t = gaia_time_s();
        if (workers) CHECK(gaia_map(ctx, b->n, blur_item, b, &md));
        else
            for (i = 0; i < b->n; i++) CHECK(blur_item(ctx, i, b));
        gaia_synchronize(ctx);
        t = gaia_time_s() - t;
        if (rep == 0 || t < best) best = t;
    }
    return best;
}

static double psnr(const float *a, const float *b, size_t n) {
    double se = 0;
    size_t i;
    for (i = 0; i < n; i++) se += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    return 10.0 * log10(1.0 / (se / (double)n));
}

static void usage(FILE *f) {
    fprintf(f, "usage: gaussian_filter [--help] [IMAGES] [SIZE] [SIGMA]\n"
               "  blurs IMAGES (default 64) noisy SIZE x SIZE images (default 256, at least 8)\n"
               "  with a Gaussian of width SIGMA (default 2, below SIZE), one image per\n"
               "  gaia_map item, and checks the result against a direct convolution. Times (best of 3):\n"
               "  the map on W workers (W = the context's threads; on a GPU, W = 4 streams), the map on\n"
               "  one worker (the speed-up is the ratio), and a plain loop whose W threads share each\n"
               "  item's products instead (same thread count)\n");
}

int main(int argc, char **argv) {
    size_t n = 64, size = 256, i, y, x;
    double sigma = 2.0, t_map, t_one, t_loop, worst = 0, before = 0, after = 0;
    gaia_device_info info;
    gaia_ctx *ctx;
    batch b;
    float *clean, *noisy, *out, *G;
    size_t shape[2];
    int r, d, e, workers;
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc > 1) n = (size_t)strtoul(argv[1], NULL, 10);
    if (argc > 2) size = (size_t)strtoul(argv[2], NULL, 10);
    if (argc > 3) sigma = atof(argv[3]);
    if (argc > 4 || (argc > 1 && argv[1][0] == '-') || n < 1 || size < 8 || size > 65536 ||
        !(sigma > 0 && sigma < (double)size)) {
        usage(stderr);
        return 2;
    }
    if (gaia_ctx_create(NULL, &ctx) != GAIA_OK) {
        fprintf(stderr, "%s\n", gaia_last_error(NULL));
        return 1;
    }
    clean = (float *)malloc(n * size * size * sizeof *clean);
    noisy = (float *)malloc(n * size * size * sizeof *noisy);
    out = (float *)malloc(n * size * size * sizeof *out);
    if (!clean || !noisy || !out) return 1;
    make_images(clean, noisy, n, size, 7u);
    G = gaussian_matrix(size, sigma, &r);

    memset(&b, 0, sizeof b);
    b.n = n;
    b.size = size;
    shape[0] = n * size;
    shape[1] = size;
    CHECK(gaia_tensor_from_host(ctx, 2, shape, noisy, &b.images));
    CHECK(gaia_tensor_zeros(ctx, 2, shape, &b.blurred));
    shape[0] = size;
    CHECK(gaia_tensor_from_host(ctx, 2, shape, G, &b.g));
    printf("%zu images of %zu x %zu, sigma %.2f (radius %d), on %s\n", n, size, size, sigma, r,
           gaia_device_str(gaia_ctx_device(ctx)));

    /* the map's workers: the context's threads on the CPU, 4 streams on a GPU */
    memset(&info, 0, sizeof info);
    CHECK(gaia_device_query(ctx, gaia_ctx_device(ctx), &info));
    workers = gaia_ctx_device(ctx) == GAIA_DEVICE_CPU ? (info.threads > 0 ? info.threads : 1) : 4;
    CHECK(gaia_map(ctx, n, blur_item, &b, NULL)); /* warm-up: makes the workers */
    t_map = time_batch(ctx, &b, workers);
    t_one = time_batch(ctx, &b, 1);
    t_loop = time_batch(ctx, &b, 0);
    CHECK(gaia_tensor_to_host(ctx, b.blurred, out, n * size * size));

    /* image 0 against a direct float64 convolution with zero padding */
    for (y = 0; y < size; y++)
        for (x = 0; x < size; x++) {
            double s = 0, norm = 0;
            for (d = -r; d <= r; d++) norm += exp(-0.5 * d * d / (sigma * sigma));
            for (d = -r; d <= r; d++)
                for (e = -r; e <= r; e++) {
                    long yy = (long)y + d, xx = (long)x + e;
                    if (yy < 0 || yy >= (long)size || xx < 0 || xx >= (long)size) continue;
                    s += exp(-0.5 * (d * d + e * e) / (sigma * sigma)) / (norm * norm) * noisy[yy * (long)size + xx];
                }
            if (fabs(s - out[y * size + x]) > worst) worst = fabs(s - out[y * size + x]);
        }
    for (i = 0; i < n; i++) {
        /* PSNR on the inside (the zero padding darkens a border of width r) */
        for (y = (size_t)r; y + (size_t)r < size; y++) {
            size_t off = i * size * size + y * size + (size_t)r, len = size - 2 * (size_t)r;
            before += psnr(clean + off, noisy + off, len);
            after += psnr(clean + off, out + off, len);
        }
    }
    before /= (double)(n * (size - 2 * (size_t)r));
    after /= (double)(n * (size - 2 * (size_t)r));
    printf("image 0 vs direct float64 convolution: max |error| %.2e\n", worst);
    printf("PSNR against the clean images (inside the border): noisy %.1f dB, blurred %.1f dB\n", before, after);
    printf("gaia_map: %.1f ms on %d workers (%.0f images/s), %.1f ms on 1 worker: %.2fx from %d %s\n", t_map * 1e3,
           workers, (double)n / t_map, t_one * 1e3, t_one / t_map, workers,
           gaia_ctx_device(ctx) == GAIA_DEVICE_CPU ? "threads" : "streams");
    if (gaia_ctx_device(ctx) == GAIA_DEVICE_CPU)
        printf("a loop of the items on the context (its %d threads share each item's products): %.1f ms\n", workers,
               t_loop * 1e3);
    else
        printf("a loop of the items on the context (one stream): %.1f ms\n", t_loop * 1e3);
    gaia_tensor_free(b.images);
    gaia_tensor_free(b.blurred);
    gaia_tensor_free(b.g);
    gaia_ctx_destroy(ctx);
    free(clean);
    free(noisy);
    free(out);
    free(G);
    if (worst > 1e-4 || after <= before) {
        fprintf(stderr, "gaussian_filter: the blur is wrong (error %.2e, PSNR %.1f -> %.1f dB)\n", worst, before, after);
        return 1;
    }
    return 0;
}
