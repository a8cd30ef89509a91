/* Files on disk: every save is all or nothing (a failed or killed save
   leaves the old file byte for byte, and no temporary file that nothing
   removes), gaia's safetensors files carry a checksum that catches a
   flipped bit, and the loaders' messages say what is wrong with a path. */
#include "gaia_test.h"
#include <stdlib.h>
#include <stdio.h>
#include <errno.h>
#include <signal.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/resource.h>

/* The whole file at path (malloc'd, NULL when it cannot be read). */
static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    unsigned char *b;
    long n;
    *len = 0;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return NULL;
    }
    b = (unsigned char *)malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) *len = (size_t)n;
    return b;
}

static int spill(const char *path, const void *bytes, size_t len) {
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(bytes, 1, len, f) == len;
    if (f) ok &= fclose(f) == 0;
    return ok;
}

/* How many "<base>.tmp-..." files the run's scratch directory holds. */
static int temps_of(const char *base) {
    char dir[600], prefix[300];
    DIR *d;
    struct dirent *e;
    int n = 0;
    gt_tmp_path(dir, sizeof dir, "");
    snprintf(prefix, sizeof prefix, "%s.tmp-", base);
    if (!(d = opendir(dir))) return -1;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) n++;
    closedir(d);
    return n;
}

/* ---- one object of each kind gaia saves, in an old and a new state ---- */
enum { K_NPY, K_SAFETENSORS, K_BRAIN, K_CODEBOOK, K_OPTIM, K_COUNT };
static const char *const kind_file[K_COUNT] = {"x.npy", "x.safetensors", "brain.bin", "codebook.npy", "optim.safetensors"};

#define FX_N 4096 /* floats in a tensor: every new file is well over the size limit below */
#define FX_LIMIT 4096 /* bytes a child may write to one file */

typedef struct fx {
    gt *t;
    gaia_tensor *x[2], *p[2];
    gaia_brain *b[2];
    gaia_hrr_codebook *cb[2];
    gaia_optim *opt[2];
} fx;

static void fx_close(fx *f) {
    int i;
    for (i = 0; i < 2; i++) {
        gaia_optim_destroy(f->opt[i]);
        gaia_tensor_free(f->x[i]);
        gaia_tensor_free(f->p[i]);
        gaia_brain_destroy(f->b[i]);
        gaia_hrr_codebook_free(f->cb[i]);
    }
}

/* Everything on the CPU: the size-limit tests save from a forked child,
   and CUDA does not survive a fork. */
static void fx_open(gt *t, fx *f) {
    size_t n = FX_N;
    int i, k;
    memset(f, 0, sizeof *f);
    f->t = t;
    gaia_device_push(t->ctx, GAIA_DEVICE_CPU); /* the context is the test's: no pop needed after a failure */
    for (i = 0; i < 2; i++) {
        float *h = gt_alloc_floats(FX_N);
        gaia_optim_desc od;
        gt_fill_normal(t, h, FX_N);
        GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &n, h, &f->x[i]));
        free(h);
        GT_OK(t, gaia_tensor_full(t->ctx, 1, &n, i ? 2.0f : 1.0f, &f->p[i]));
        GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, f->p[i], 1));
        memset(&od, 0, sizeof od);
        od.kind = GAIA_OPTIM_ADAMW;
        od.lr = 0.01f;
        GT_OK(t, gaia_optim_create(t->ctx, &od, &f->p[i], 1, &f->opt[i]));
        GT_OK(t, gaia_brain_create(t->ctx, 0.05, t->seed + (uint64_t)i, GAIA_DEVICE_CPU, &f->b[i]));
        GT_OK(t, gaia_brain_add_stimulus(f->b[i], "s", 40));
        GT_OK(t, gaia_brain_add_area(f->b[i], "A", 2000, 40, 0.1f, GAIA_AREA_EXPLICIT));
        GT_OK(t, gaia_brain_project_spec(f->b[i], "s>A"));
        for (k = 0; k < 2 * i; k++) GT_OK(t, gaia_brain_project_spec(f->b[i], "s>A, A>A"));
        GT_OK(t, gaia_hrr_codebook_create(t->ctx, 512, &f->cb[i]));
        for (k = 0; k < 4 + 4 * i; k++) {
            char name[16];
            snprintf(name, sizeof name, "sym%d", k);
            GT_OK(t, gaia_hrr_codebook_add(t->ctx, f->cb[i], name, NULL, NULL));
        }
    }
    gaia_device_pop(t->ctx);
}

/* Saves state `fresh` (0 old, 1 new) of kind k to path. */
static gaia_status fx_save(fx *f, int k, int fresh, const char *path) {
    gaia_named_tensor item;
    switch (k) {
    case K_NPY: return gaia_tensor_save_npy(f->t->ctx, f->x[fresh], path);
    case K_SAFETENSORS:
        item.name = "x";
        item.tensor = f->x[fresh];
        return gaia_safetensors_save(f->t->ctx, path, &item, 1, NULL);
    case K_BRAIN: return gaia_brain_save(f->b[fresh], path);
    case K_CODEBOOK: return gaia_hrr_codebook_save(f->t->ctx, f->cb[fresh], path);
    default: return gaia_optim_save(f->opt[fresh], path);
    }
}

/* Runs the save of the new state in a child limited to FX_LIMIT bytes a
   file: with SIGXFSZ ignored (the write fails with EFBIG) or not (the
   kernel kills the child mid-write). *why gets the child's message. */
static int limited_child(fx *f, int k, const char *path, int ignore, char *why, size_t why_size) {
    int fds[2], status = 0;
    pid_t pid;
    ssize_t got;
    why[0] = 0;
    if (pipe(fds) != 0) return -1;
    fflush(NULL);
    pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        struct rlimit rl;
        gaia_status st;
        const char *msg;
        int ok;
        close(fds[0]);
        rl.rlim_cur = rl.rlim_max = FX_LIMIT;
        signal(SIGXFSZ, ignore ? SIG_IGN : SIG_DFL);
        alarm(60); /* never hang the suite */
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(4);
        st = fx_save(f, k, 1, path);
        msg = gaia_last_error(f->t->ctx);
        ok = st == GAIA_ERR_IO && strstr(msg, path) && strstr(msg, strerror(EFBIG)) && strstr(msg, "unchanged");
        if (write(fds[1], msg, strlen(msg)) < 0) _exit(5);
        _exit(ok ? 0 : st == GAIA_OK ? 2 : 3);
    }
    close(fds[1]);
    got = read(fds[0], why, why_size - 1);
    why[got > 0 ? got : 0] = 0;
    close(fds[0]);
    if (waitpid(pid, &status, 0) != pid) return -1;
    return status;
}

static void size_limit_body(gt *t, fx *f, int k) {
    char path[600], names[600], why[600];
    const char *base = kind_file[k];
    unsigned char *old = NULL, *old_names = NULL, *now = NULL, *now_names = NULL;
    size_t old_len = 0, old_names_len = 0, now_len = 0, now_names_len = 0;
    int ignore;
    gt_tmp_path(path, sizeof path, base);
    gt_tmp_path(names, sizeof names, "codebook.names.txt");
    GT_OK(t, fx_save(f, k, 0, path));
    old = slurp(path, &old_len);
    if (k == K_CODEBOOK) old_names = slurp(names, &old_names_len);
    GT_CHECK(t, old && old_len > 0 && (k != K_CODEBOOK || old_names), "%s: cannot read the old file", base);
    for (ignore = 1; ignore >= 0; ignore--) {
        int status = limited_child(f, k, path, ignore, why, sizeof why), same;
        GT_CHECK(t, status != -1, "%s: cannot fork", base);
        /* first what is on the disk: the old file, byte for byte */
        now = slurp(path, &now_len);
        same = now && now_len == old_len && memcmp(now, old, old_len) == 0;
        free(now);
        GT_CHECK(t, same, "%s, SIGXFSZ %s: the old file changed (%zu bytes, was %zu)", base,
                 ignore ? "ignored" : "killed the saver", now_len, old_len);
        if (k == K_CODEBOOK) {
            now_names = slurp(names, &now_names_len);
            same = now_names && now_names_len == old_names_len && memcmp(now_names, old_names, old_names_len) == 0;
            free(now_names);
            GT_CHECK(t, same, "codebook, SIGXFSZ %s: the names file changed", ignore ? "ignored" : "killed");
        }
        if (ignore) {
            GT_CHECK(t, temps_of(base) == 0, "%s: a failed save left %d temporary files", base, temps_of(base));
            GT_CHECK(t, WIFEXITED(status) && WEXITSTATUS(status) == 0,
                     "%s, SIGXFSZ ignored: the save %s (exit %d): %s", base,
                     WIFEXITED(status) && WEXITSTATUS(status) == 2 ? "succeeded over the limit"
                                                                   : "did not fail with EFBIG naming the path",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1, why);
        } else {
            GT_CHECK(t, WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ,
                     "%s: the child was not killed by SIGXFSZ (status %d): %s", base, status, why);
            GT_CHECK(t, temps_of(base) == 1, "%s: the killed save left %d temporary files, not its own one", base,
                     temps_of(base));
        }
    }
    /* the next save replaces the file and removes the dead child's temporary file */
    GT_OK(t, fx_save(f, k, 1, path));
    GT_CHECK(t, temps_of(base) == 0, "%s: the next save left %d stale temporary files", base, temps_of(base));
    now = slurp(path, &now_len);
    GT_CHECK(t, now && (now_len != old_len || memcmp(now, old, old_len) != 0), "%s: the save changed nothing", base);
    free(now);
    free(old);
    free(old_names);
    if (k == K_NPY) {
        /* a temporary file of a process that runs (pid 1) is kept: it may be a save in progress */
        char live[600];
        gt_tmp_path(live, sizeof live, "x.npy.tmp-1-7");
        GT_CHECK(t, spill(live, "partial", 7), "cannot write %s", live);
        GT_OK(t, fx_save(f, K_NPY, 0, path));
        GT_CHECK(t, temps_of("x.npy") == 1, "the temporary file of a live process was removed");
        remove(live);
    }
}

/* Each kind of file (npy, safetensors, brain image, codebook, optimizer
   checkpoint) saved under RLIMIT_FSIZE: a write that fails with EFBIG
   returns GAIA_ERR_IO naming the path and the reason, and a saver killed
   by SIGXFSZ mid-write, like one that fails, leaves the old file byte for
   byte; the dead saver's temporary file goes with the next save. (Brain
   shards, MPI builds only, go through the same writer.) */
static void size_limit(gt *t, int k) {
    fx f;
    fx_open(t, &f);
    if (!t->failed) size_limit_body(t, &f, k);
    fx_close(&f);
}
static void npy_save_survives_a_file_size_limit(gt *t) { size_limit(t, K_NPY); }
static void safetensors_save_survives_a_file_size_limit(gt *t) { size_limit(t, K_SAFETENSORS); }
static void brain_save_survives_a_file_size_limit(gt *t) { size_limit(t, K_BRAIN); }
static void codebook_save_survives_a_file_size_limit(gt *t) { size_limit(t, K_CODEBOOK); }
static void optim_save_survives_a_file_size_limit(gt *t) { size_limit(t, K_OPTIM); }

/* A saved file keeps the permission bits of the one it replaces. */
static void saves_keep_the_permissions(gt *t) {
    char path[600];
    struct stat sb;
    gaia_tensor *x = NULL;
    size_t n = 3;
    gt_tmp_path(path, sizeof path, "private.npy");
    GT_OK(t, gaia_tensor_zeros(t->ctx, 1, &n, &x));
    GT_OK(t, gaia_tensor_save_npy(t->ctx, x, path));
    GT_CHECK(t, chmod(path, 0600) == 0, "cannot chmod");
    GT_OK(t, gaia_tensor_save_npy(t->ctx, x, path));
    gaia_tensor_free(x);
    GT_CHECK(t, stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600, "mode %o after the save, was 600",
             (unsigned)(sb.st_mode & 0777));
}

/* ---- the safetensors checksum ---- */

/* Every bit of an optimizer checkpoint flipped in turn: no flip loads. A
   flip in the data (every tensor, optim.hyper's lr, betas and eps) or one
   that leaves the header well-formed is a checksum mismatch; the file
   loader names the file. */
static void safetensors_checksum_catches_every_flipped_bit(gt *t) {
    gaia_tensor *p = NULL, *x = NULL, *loss = NULL;
    gaia_optim *opt = NULL;
    gaia_optim_desc od;
    gaia_safetensors *f = NULL;
    size_t n = 5, len = 0, i, hlen = 0, checksum_msgs = 0;
    unsigned char *img = NULL;
    char path[600], flipped[600];
    float h[5];
    int bit;
    gt_tmp_path(path, sizeof path, "flip.safetensors");
    gt_tmp_path(flipped, sizeof flipped, "flipped.safetensors");
    gt_fill_normal(t, h, 5);
    GT_OK(t, gaia_tensor_from_host(t->ctx, 1, &n, h, &p));
    GT_OK(t, gaia_tensor_set_requires_grad(t->ctx, p, 1));
    memset(&od, 0, sizeof od);
    od.kind = GAIA_OPTIM_ADAMW;
    od.lr = 0.01f;
    GT_OK(t, gaia_optim_create(t->ctx, &od, &p, 1, &opt));
    GT_OK(t, gaia_tensor_randn(t->ctx, 1, &n, 0.0f, 1.0f, &x));
    GT_OK(t, gaia_loss_mse(t->ctx, p, x, &loss));
    GT_OK(t, gaia_backward(t->ctx, loss));
    GT_OK(t, gaia_optim_step(opt)); /* param, m, v and optim.hyper all in the file */
    GT_OK(t, gaia_optim_save(opt, path));
    img = slurp(path, &len);
    GT_CHECK(t, img && len > 8, "cannot read %s", path);
    for (i = 0; i < 8; i++) hlen |= (size_t)img[i] << (8 * i);
    GT_CHECK(t, 8 + hlen < len, "header length %zu of %zu bytes", hlen, len);
    GT_OK(t, gaia_safetensors_parse(t->ctx, img, len, &f)); /* the intact file loads */
    gaia_safetensors_free(f);
    f = NULL;
    for (i = 0; i < len; i++)
        for (bit = 0; bit < 8; bit++) {
            gaia_status st;
            const char *msg;
            img[i] ^= (unsigned char)(1u << bit);
            st = gaia_safetensors_parse(t->ctx, img, len, &f);
            img[i] ^= (unsigned char)(1u << bit);
            msg = gaia_last_error(t->ctx);
            gaia_safetensors_free(f);
            GT_CHECK(t, st == GAIA_ERR_FORMAT, "byte %zu bit %d (%s): %s", i, bit,
                     i < 8 ? "length" : i < 8 + hlen ? "header" : "data", gaia_status_str(st));
            if (strstr(msg, "checksum")) checksum_msgs++;
            else
                GT_CHECK(t, i < 8 + hlen, "byte %zu bit %d of the data: '%s' does not say checksum", i, bit,
                         msg);
        }
    GT_CHECK(t, checksum_msgs >= 8 * (len - 8 - hlen), "%zu of the flips said checksum", checksum_msgs);
    /* through the file loaders: the last 4 bytes are optim.hyper's last value (last_lr), the first data byte
       param.0's first; then lr, the first value of optim.hyper (written last) */
    {
        size_t at[3];
        int s;
        at[0] = 8 + hlen;
        at[1] = len - 4 * 8 + 1; /* optim.hyper[0], lr: the tensor is the last 8 floats */
        at[2] = len - 1;
        for (s = 0; s < 3; s++) {
            gaia_status st;
            img[at[s]] ^= 0x10;
            GT_CHECK(t, spill(flipped, img, len), "cannot write %s", flipped);
            img[at[s]] ^= 0x10;
            st = gaia_safetensors_load(t->ctx, flipped, &f);
            GT_CHECK(t, st == GAIA_ERR_FORMAT && strstr(gaia_last_error(t->ctx), flipped) &&
                            strstr(gaia_last_error(t->ctx), "checksum"),
                     "byte %zu: %s: %s", at[s], gaia_status_str(st), gaia_last_error(t->ctx));
            st = gaia_optim_load(opt, flipped);
            GT_CHECK(t, st == GAIA_ERR_FORMAT && strstr(gaia_last_error(t->ctx), "checksum"), "optim_load, byte %zu: %s",
                     at[s], gaia_last_error(t->ctx));
        }
    }
    GT_OK(t, gaia_optim_load(opt, path));
    gaia_optim_destroy(opt);
    gaia_tensor_free(p);
    gaia_tensor_free(x);
    gaia_tensor_free(loss);
    free(img);
}

/* The checksum is gaia's business: it is not in the loaded metadata, a
   loaded file re-saves byte for byte, and a file without one (another
   writer's, as Python's safetensors writes it) still loads. */
static void safetensors_checksum_is_optional_and_hidden(gt *t) {
    static const char *meta[] = {"epoch", "4", NULL};
    static const char foreign[] = "{\"__metadata__\":{\"from\":\"python\"},\"w\":{\"dtype\":\"F32\",\"shape\":[2],"
                                  "\"data_offsets\":[0,8]}}";
    gaia_tensor *x = NULL;
    gaia_named_tensor item;
    gaia_safetensors *f = NULL;
    size_t n = 3, s1 = 0, s2 = 0, k;
    void *i1 = NULL, *i2 = NULL;
    unsigned char buf[256];
    float two[2] = {1.5f, -2.0f}, got[2];
    GT_OK(t, gaia_tensor_randn(t->ctx, 1, &n, 0.0f, 1.0f, &x));
    item.name = "x";
    item.tensor = x;
    GT_OK(t, gaia_safetensors_image(t->ctx, &item, 1, meta, &i1, &s1));
    GT_CHECK(t, strstr((const char *)i1 + 8, "\"gaia.fnv1a64\":\"") != NULL, "no checksum in the header");
    GT_OK(t, gaia_safetensors_parse(t->ctx, i1, s1, &f));
    GT_CHECK(t, gaia_safetensors_meta(f, "gaia.fnv1a64") == NULL && strcmp(gaia_safetensors_meta(f, "epoch"), "4") == 0,
             "the metadata shows the checksum");
    GT_OK(t, gaia_safetensors_image(t->ctx, gaia_safetensors_entries(f), 1, gaia_safetensors_metadata(f), &i2, &s2));
    GT_CHECK(t, s1 == s2 && memcmp(i1, i2, s1) == 0, "a loaded file does not re-save as it was");
    gaia_safetensors_free(f);
    f = NULL;
    gaia_image_free(t->ctx, i1);
    gaia_image_free(t->ctx, i2);
    gaia_tensor_free(x);
    /* another writer's file: no checksum, loads */
    n = strlen(foreign);
    for (k = 0; k < 8; k++) buf[k] = (unsigned char)((uint64_t)n >> (8 * k));
    memcpy(buf + 8, foreign, n);
    memcpy(buf + 8 + n, two, 8);
    GT_OK(t, gaia_safetensors_parse(t->ctx, buf, 8 + n + 8, &f));
    GT_OK(t, gaia_tensor_to_host(t->ctx, gaia_safetensors_get(f, "w"), got, 2));
    GT_CHECK(t, got[0] == 1.5f && got[1] == -2.0f, "the foreign file's values %g %g", got[0], got[1]);
    gaia_safetensors_free(f);
}

/* ---- what the loaders and savers say about a path ---- */
static void file_errors_say_what_is_wrong(gt *t) {
    char dir[600], missing[600], text[600], nodir[600], big[600];
    gaia_tensor *x = NULL;
    gaia_safetensors *f = NULL;
    gaia_brain *b = NULL;
    gaia_hrr_codebook *cb = NULL;
    gaia_named_tensor item;
    gaia_status st;
    const char *msg;
    size_t n = 4;
    int k;
    gt_tmp_path(dir, sizeof dir, "a_directory");
    gt_tmp_path(missing, sizeof missing, "no_such_file.npy");
    gt_tmp_path(text, sizeof text, "notes.txt");
    gt_tmp_path(nodir, sizeof nodir, "no_such_dir/model.safetensors");
    gt_tmp_path(big, sizeof big, "big.bin");
    GT_CHECK(t, mkdir(dir, 0700) == 0, "cannot make %s", dir);
    /* a directory: every loader says so (not a 9.2 EB file of bad data) */
    for (k = 0; k < 4; k++) {
        st = k == 0   ? gaia_tensor_load_npy(t->ctx, dir, &x)
             : k == 1 ? gaia_safetensors_load(t->ctx, dir, &f)
             : k == 2 ? gaia_brain_load(t->ctx, dir, GAIA_DEVICE_CPU, &b)
                      : gaia_hrr_codebook_load(t->ctx, dir, &cb);
        msg = gaia_last_error(t->ctx);
        GT_CHECK(t, st == GAIA_ERR_IO && strstr(msg, dir) && strstr(msg, "is a directory"), "loader %d: %s: %s", k,
                 gaia_status_str(st), msg);
    }
    /* a missing file: the system's reason */
    st = gaia_tensor_load_npy(t->ctx, missing, &x);
    msg = gaia_last_error(t->ctx);
    GT_CHECK(t, st == GAIA_ERR_IO && strstr(msg, missing) && strstr(msg, strerror(ENOENT)), "%s", msg);
    /* a save into a missing directory: the user's path and the reason, not a temporary name */
    GT_OK(t, gaia_tensor_zeros(t->ctx, 1, &n, &x));
    item.name = "x";
    item.tensor = x;
    st = gaia_safetensors_save(t->ctx, nodir, &item, 1, NULL);
    msg = gaia_last_error(t->ctx);
    GT_CHECK(t, st == GAIA_ERR_IO && strstr(msg, nodir) && strstr(msg, strerror(ENOENT)) && !strstr(msg, ".tmp"),
             "%s", msg);
    gaia_tensor_free(x);
    x = NULL;
    /* a text file given to the safetensors loader */
    GT_CHECK(t, spill(text, "Hello, this is a text file and not a checkpoint.\n", 49), "cannot write %s", text);
    st = gaia_safetensors_load(t->ctx, text, &f);
    msg = gaia_last_error(t->ctx);
    GT_CHECK(t, st == GAIA_ERR_FORMAT && strstr(msg, text) && strstr(msg, "not a safetensors file"), "%s", msg);
    /* a file over what a loader reads: the message names the context's load_limit.
       The brain loader reads up to 2 * load_limit + 4096 bytes: a file of
       exactly that size is read (and refused as no brain image), one byte
       more is not read at all. */
    {
        gaia_ctx *small = NULL;
        gaia_ctx_desc d;
        static unsigned char junk[8192];
        const size_t most = 2 * 1024 + 4096;
        memset(&d, 0, sizeof d);
        d.load_limit = 1024;
        GT_OK(t, gaia_ctx_create(&d, &small));
        GT_CHECK(t, spill(big, junk, sizeof junk), "cannot write %s", big);
        st = gaia_brain_load(small, big, GAIA_DEVICE_CPU, &b);
        msg = gaia_last_error(small);
        k = st == GAIA_ERR_FORMAT && strstr(msg, "load_limit of 1024") != NULL;
        if (!k) snprintf(text, sizeof text, "%s", msg);
        if (k) {
            GT_CHECK(t, spill(big, junk, most + 1), "cannot write %s", big);
            st = gaia_brain_load(small, big, GAIA_DEVICE_CPU, &b);
            msg = gaia_last_error(small);
            k = st == GAIA_ERR_FORMAT && strstr(msg, "is 6145 bytes, more than this loader reads") != NULL &&
                strstr(msg, "(at most 6144)") != NULL;
            if (!k) snprintf(text, sizeof text, "one byte over: %s", msg);
        }
        if (k) {
            GT_CHECK(t, spill(big, junk, most), "cannot write %s", big);
            st = gaia_brain_load(small, big, GAIA_DEVICE_CPU, &b);
            msg = gaia_last_error(small);
            k = st != GAIA_OK && b == NULL && strstr(msg, "more than this loader reads") == NULL &&
                strstr(msg, "load_limit") == NULL;
            if (!k) snprintf(text, sizeof text, "exactly at the limit (%s): %s", gaia_status_str(st), msg);
        }
        gaia_ctx_destroy(small);
        GT_CHECK(t, k, "over the limit: %s", text);
    }
    GT_CHECK(t, rmdir(dir) == 0, "the directory changed");
}

const gt_case gt_files_cases[] = {
    {"npy_save_survives_a_file_size_limit", npy_save_survives_a_file_size_limit},
    {"safetensors_save_survives_a_file_size_limit", safetensors_save_survives_a_file_size_limit},
    {"brain_save_survives_a_file_size_limit", brain_save_survives_a_file_size_limit},
    {"codebook_save_survives_a_file_size_limit", codebook_save_survives_a_file_size_limit},
    {"optim_save_survives_a_file_size_limit", optim_save_survives_a_file_size_limit},
    {"saves_keep_the_permissions", saves_keep_the_permissions},
    {"safetensors_checksum_catches_every_flipped_bit", safetensors_checksum_catches_every_flipped_bit},
    {"safetensors_checksum_is_optional_and_hidden", safetensors_checksum_is_optional_and_hidden},
    {"file_errors_say_what_is_wrong", file_errors_say_what_is_wrong},
    {NULL, NULL},
};
