//! src/formats.h - file formats: NumPy .npy, safetensors checkpoints and
//! optimizer state (when the autograd module is in); the crash-safe save
//! (temporary file, fsync, rename) and the bounded file reader that the
//! modules' own formats use too.
//! uses: core tensor
//! optional: autograd
//! switch: GAIA_NO_FORMATS
//@ part formats-api
/* ---------------------------------------------------------------------
   Checkpoints: safetensors files (named tensors + string metadata) and
   optimizer state. Format: an 8-byte little-endian header length N, N
   bytes of JSON {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets":
   [begin, end]}, ..., "__metadata__": {"key": "value"}}, then the data.
   --------------------------------------------------------------------- */
/* A tensor with its name (UTF-8, unique within a file). */
typedef struct gaia_named_tensor {
    const char *name;
    const gaia_tensor *tensor;
} gaia_named_tensor;
/* Writes n named tensors (float32, "F32") and metadata (NULL, or a list
   key, value, key, value, ..., NULL of UTF-8 strings) to path atomically:
   the bytes go to a temporary file beside path, which then replaces path,
   so a failed save leaves whatever path held. */
GAIA_API gaia_status gaia_safetensors_save(gaia_ctx *ctx, const char *path, const gaia_named_tensor *tensors, size_t n,
                                           const char *const *metadata);
/* The same file as an image in memory (release it with gaia_image_free). */
GAIA_API gaia_status gaia_safetensors_image(gaia_ctx *ctx, const gaia_named_tensor *tensors, size_t n,
                                            const char *const *metadata, void **bytes, size_t *size);
/* As gaia_safetensors_save and _image, with every tensor stored in the
   precision prec: GAIA_PREC_F32 ("F32", the same file as _save),
   GAIA_PREC_BF16 ("BF16") or GAIA_PREC_F16 ("F16"), each element rounded
   by gaia_f32_to_bf16 / gaia_f32_to_f16 (nearest even; past 65504 an f16
   is infinite). A value the format holds comes back exactly through
   gaia_safetensors_load; PyTorch's and NumPy's readers see the same bits. */
GAIA_API gaia_status gaia_safetensors_save_prec(gaia_ctx *ctx, const char *path, const gaia_named_tensor *tensors,
                                                size_t n, const char *const *metadata, gaia_precision prec);
GAIA_API gaia_status gaia_safetensors_image_prec(gaia_ctx *ctx, const gaia_named_tensor *tensors, size_t n,
                                                 const char *const *metadata, gaia_precision prec, void **bytes,
                                                 size_t *size);
/* A loaded file: its tensors (float32, on the context's default device,
   owned by the file object) and its metadata. */
typedef struct gaia_safetensors gaia_safetensors;
/* Reads a file. Every dtype F32 F64 F16 BF16 I64 I32 I16 I8 U8 BOOL is
   converted to float32; a 0-dim tensor becomes shape [1]; anything else
   (another dtype, more than 4 dimensions, a zero-size dimension) is
   GAIA_ERR_FORMAT with a message, as is every malformed header. */
GAIA_API gaia_status gaia_safetensors_load(gaia_ctx *ctx, const char *path, gaia_safetensors **out);
/* The loader's core, on an image in memory. */
GAIA_API gaia_status gaia_safetensors_parse(gaia_ctx *ctx, const void *bytes, size_t size, gaia_safetensors **out);
/* The number of tensors, and the tensors themselves (count entries, in the
   order of the file's header; the array and its names live as long as f). */
GAIA_API size_t gaia_safetensors_count(const gaia_safetensors *f);
GAIA_API const gaia_named_tensor *gaia_safetensors_entries(const gaia_safetensors *f);
/* The tensor called name, or NULL (owned by f: copy it to keep it). */
GAIA_API gaia_tensor *gaia_safetensors_get(const gaia_safetensors *f, const char *name);
/* The metadata value of key, or NULL; and all of it as the list that
   gaia_safetensors_save takes (key, value, ..., NULL). */
GAIA_API const char *gaia_safetensors_meta(const gaia_safetensors *f, const char *key);
GAIA_API const char *const *gaia_safetensors_metadata(const gaia_safetensors *f);
GAIA_API void gaia_safetensors_free(gaia_safetensors *f);
#ifndef GAIA_NO_AUTOGRAD /* (optimizers are the autograd module's) */
/* An optimizer's whole state - its parameters' values, moment buffers,
   step count, hyper-parameters and the context's random stream (seed and
   position) - as a safetensors file (atomically, as above). Tensors
   "param.I", "m.I", "v.I" (I = 0 .. n-1, the moments once they exist) and
   "optim.hyper" = [lr, momentum, beta1, beta2, eps, weight_decay,
   clip_norm, last lr]; metadata format ("gaia.optim/1"), kind, nesterov,
   params, steps, seed, rng_stream. An optimizer whose groups are not the
   one group of desc's settings (gaia_optim_create_groups) writes format
   "gaia.optim/2", adding metadata groups (G), "optim.groups" [G, 2] (each
   group's base lr and weight decay) and "optim.group_of" [n] (each
   parameter's group). */
GAIA_API gaia_status gaia_optim_save(gaia_optim *opt, const char *path);
/* Restores such a file into an optimizer of the same kind over parameters
   of the same count and shapes (the schedule is opt's own): the parameters
   are overwritten in place, and the steps that follow are bit for bit
   those that training without the interruption would have made. The
   hyper-parameters are the file's, each group's lr and weight decay too;
   the groups' membership must match (a "gaia.optim/1" file is one group).
   Anything wrong with the file or the match changes nothing. */
GAIA_API gaia_status gaia_optim_load(gaia_optim *opt, const char *path);
#endif

//@ part formats-impl
/* ---------------------------------------------------------------------
   NumPy .npy files. Format v1/v2/v3: magic "\x93NUMPY", major, minor,
   header length (u16 for v1, u32 for v2/v3), then a Python dict literal
   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with
   spaces and a newline so the data starts on a 64-byte boundary.
   --------------------------------------------------------------------- */
static const char *gaia__npy_skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* Finds the value after 'key': in the header dict; NULL when absent. */
static const char *gaia__npy_find_key(const char *h, const char *end, const char *key) {
    size_t klen = strlen(key);
    const char *p;
    for (p = h; p + klen + 2 < end; p++) {
        if ((*p == '\'' || *p == '"') && p[klen + 1] == *p && memcmp(p + 1, key, klen) == 0) {
            p = gaia__npy_skip_ws(p + klen + 2, end);
            if (p < end && *p == ':') return gaia__npy_skip_ws(p + 1, end);
            return NULL;
        }
    }
    return NULL;
}

GAIA_API gaia_status gaia_npy_parse(gaia_ctx *ctx, const void *bytes, size_t size, gaia_tensor **out) {
    static const char *fn = "gaia_npy_parse";
    const unsigned char *b = (const unsigned char *)bytes;
    const char *h, *end, *p;
    size_t hlen, pre, shape[GAIA_MAX_DIMS], numel = 1, elem, payload;
    int ndim = 0, is_f64, created;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!bytes || !out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "bytes or out is NULL");
    if (size < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "not a .npy image (%zu bytes, bad magic)", size);
    if (b[6] == 1) {
        hlen = (size_t)b[8] | ((size_t)b[9] << 8);
        pre = 10;
    } else if (b[6] == 2 || b[6] == 3) {
        if (size < 12) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "truncated v%d header", b[6]);
        hlen = (size_t)b[8] | ((size_t)b[9] << 8) | ((size_t)b[10] << 16) | ((size_t)b[11] << 24);
        pre = 12;
    } else {
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "unsupported .npy version %d.%d", b[6], b[7]);
    }
    if (hlen > GAIA_NPY_MAX_HEADER)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "header of %zu bytes exceeds the limit %d", hlen, GAIA_NPY_MAX_HEADER);
    if (hlen > size - pre)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "header of %zu bytes runs past the end (%zu bytes)", hlen, size);
    h = (const char *)b + pre;
    end = h + hlen;
    p = gaia__npy_skip_ws(h, end);
    if (p >= end || *p != '{') return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "header is not a dict");
    /* descr */
    p = gaia__npy_find_key(h, end, "descr");
    if (!p || end - p < 5) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "header has no 'descr'");
    if ((p[0] != '\'' && p[0] != '"') || p[4] != p[0])
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "malformed 'descr'");
    if ((p[1] == '<' || p[1] == '|' || p[1] == '=') && p[2] == 'f' && p[3] == '4') is_f64 = 0;
    else if ((p[1] == '<' || p[1] == '=') && p[2] == 'f' && p[3] == '8') is_f64 = 1;
    else return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "dtype '%.3s' not supported (need little-endian f4 or f8)", p + 1);
    /* fortran_order */
    p = gaia__npy_find_key(h, end, "fortran_order");
    if (!p) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "header has no 'fortran_order'");
    if (end - p >= 4 && memcmp(p, "True", 4) == 0)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "Fortran-ordered arrays are not supported");
    if (end - p < 5 || memcmp(p, "False", 5) != 0) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "malformed 'fortran_order'");
    /* shape: ( d0, d1, ... ) */
    p = gaia__npy_find_key(h, end, "shape");
    if (!p || p >= end || *p != '(') return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "header has no 'shape' tuple");
    p++;
    for (;;) {
        size_t v = 0;
        int digits = 0;
        p = gaia__npy_skip_ws(p, end);
        if (p >= end) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "unterminated 'shape'");
        if (*p == ')') break;
        while (p < end && *p >= '0' && *p <= '9') {
            if (v > (SIZE_MAX - 9) / 10) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "dimension overflows");
            v = v * 10 + (size_t)(*p - '0');
            p++;
            digits++;
        }
        if (!digits) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "malformed 'shape'");
        if (ndim == GAIA_MAX_DIMS) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "more than %d dimensions", GAIA_MAX_DIMS);
        if (v == 0) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "dimension %d is zero", ndim);
        if (gaia__mul_overflows(numel, v, &numel)) return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "shape overflows");
        shape[ndim++] = v;
        p = gaia__npy_skip_ws(p, end);
        if (p < end && *p == ',') p++;
        else if (p < end && *p == ')') break;
        else return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "malformed 'shape'");
    }
    if (ndim == 0) { /* a NumPy scalar becomes a one-element vector */
        shape[0] = 1;
        ndim = 1;
    }
    elem = is_f64 ? 8 : 4;
    if (gaia__mul_overflows(numel, elem, &payload) || (uint64_t)payload > GAIA_NPY_MAX_BYTES)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "payload of %zu elements exceeds the limit", numel);
    if (payload > size - pre - hlen)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "truncated data: need %zu bytes, have %zu", payload,
                          size - pre - hlen);
    if (numel > ctx->load_limit / sizeof(float))
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "%zu elements exceed the context's load_limit of %zu bytes",
                          numel, ctx->load_limit);
    {
        /* Decode on the host (byte by byte, so alignment and host endianness do not
           matter), then move to the default device. */
        float *tmp = (float *)gaia__host_alloc(ctx, numel * sizeof(float));
        const unsigned char *d = b + pre + hlen;
        size_t i;
        if (!tmp) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", numel * 4);
        for (i = 0; i < numel; i++) {
            if (is_f64) {
                uint64_t u = 0;
                double v;
                int k;
                for (k = 7; k >= 0; k--) u = (u << 8) | d[i * 8 + (size_t)k];
                memcpy(&v, &u, 8);
                tmp[i] = (float)v;
            } else {
                uint32_t u = (uint32_t)d[i * 4] | ((uint32_t)d[i * 4 + 1] << 8) | ((uint32_t)d[i * 4 + 2] << 16) |
                             ((uint32_t)d[i * 4 + 3] << 24);
                memcpy(&tmp[i], &u, 4);
            }
        }
        st = gaia__prepare_out(ctx, fn, gaia_ctx_device(ctx), ndim, shape, out, &created);
        if (st == GAIA_OK) {
            st = gaia__be(ctx, GAIA__DEV(*out))->upload(ctx, GAIA__PTR(*out), tmp, numel * sizeof(float));
            st = gaia__finish_out(st, out, created);
        }
        gaia__host_free(ctx, tmp);
    }
    return st;
}

/* ---- saving files: every file gaia writes goes through gaia__save_* ----
   The bytes go to a temporary file beside the target, named
   "<path>.tmp-<pid>-<n>" (the same directory, so the rename stays on one
   file system; n keeps apart saves of one path from threads of one
   process), are flushed to the disk (fsync where POSIX allows) and only
   then renamed over the target. Any failure (no space, a file-size limit,
   a missing directory) removes the temporary file and leaves the target as
   it was, byte for byte. A process killed mid-save leaves its temporary
   file behind; the next save of the same path (POSIX) removes those whose
   process no longer runs on this machine. A target that existed keeps its
   permission bits. */
typedef struct gaia__save {
    const char *path;
    char *tmp; /* the temporary file, written and flushed; NULL when none is pending */
} gaia__save;

#ifdef GAIA__POSIX_IO
/* Removes "<path>.tmp-<pid>-<n>" files whose process is gone. A pid that
   is alive (or that this process may not signal) keeps its file: it may
   be a save in progress. */
static void gaia__save_sweep(gaia_ctx *ctx, const char *path) {
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    size_t dlen = slash ? (size_t)(slash - path) : 1, blen = strlen(base);
    char *dir = (char *)gaia__host_alloc(ctx, dlen + 2), *full;
    DIR *d;
    struct dirent *e;
    if (!dir) return;
    if (!slash) dir[0] = '.';
    else if (dlen == 0) dir[0] = '/', dlen = 1;
    else memcpy(dir, path, dlen);
    dir[dlen] = 0;
    d = opendir(dir);
    while (d && (e = readdir(d)) != NULL) {
        const char *s = e->d_name;
        long pid = 0;
        int digits = 0, ndigits = 0;
        if (strncmp(s, base, blen) != 0 || strncmp(s + blen, ".tmp-", 5) != 0) continue;
        for (s += blen + 5; *s >= '0' && *s <= '9' && digits < 9; s++, digits++) pid = pid * 10 + (*s - '0');
        if (!digits || *s++ != '-') continue;
        for (; *s >= '0' && *s <= '9'; s++) ndigits++;
        if (!ndigits || *s || pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        full = (char *)gaia__host_alloc(ctx, dlen + strlen(e->d_name) + 2);
        if (!full) break;
        snprintf(full, dlen + strlen(e->d_name) + 2, "%s/%s", dir, e->d_name);
        remove(full);
        gaia__host_free(ctx, full);
    }
    if (d) closedir(d);
    gaia__host_free(ctx, dir);
}
#endif

/* Writes bytes to a new temporary file beside path (s->tmp), flushed to
   the disk. On failure nothing is left and path is untouched. */
static gaia_status gaia__save_begin(gaia_ctx *ctx, const char *fn, const char *path, const void *bytes, size_t size,
                                    gaia__save *s) {
    size_t cap = strlen(path) + 64;
    unsigned long n = (unsigned long)((uintptr_t)s % 1000000007u); /* differs between threads' stacks */
    FILE *f = NULL;
    int err = 0, tries;
    s->path = path;
    s->tmp = (char *)gaia__host_alloc(ctx, cap);
    if (!s->tmp) return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate a file name for '%s'", path);
#ifdef GAIA__POSIX_IO
    gaia__save_sweep(ctx, path);
#endif
    for (tries = 0; tries < 100 && !f; tries++) {
#if !defined(_WIN32)
        snprintf(s->tmp, cap, "%s.tmp-%ld-%lu", path, (long)getpid(), n + (unsigned long)tries);
#else
        snprintf(s->tmp, cap, "%s.tmp-%ld-%lu", path, (long)_getpid(), n + (unsigned long)tries);
#endif
        errno = 0;
        f = fopen(s->tmp, "wbx"); /* x: never another save's file */
        if (!f && errno != EEXIST) break;
    }
    if (!f) {
        err = errno;
        gaia__host_free(ctx, s->tmp);
        s->tmp = NULL;
        return gaia__fail(ctx, GAIA_ERR_IO, fn, "cannot create '%s': %s", path,
                          err ? strerror(err) : "no free temporary name beside it");
    }
    errno = 0;
    if (fwrite(bytes, 1, size, f) != size) err = errno ? errno : EIO;
    if (!err && fflush(f) != 0) err = errno ? errno : EIO;
#ifdef GAIA__POSIX_IO
    if (!err && fsync(fileno(f)) != 0) err = errno ? errno : EIO; /* on the disk before the name points at it */
    if (!err) {
        struct stat old;
        if (stat(path, &old) == 0) (void)!fchmod(fileno(f), old.st_mode & 07777); /* best effort */
    }
#endif
    if (fclose(f) != 0 && !err) err = errno ? errno : EIO;
    if (err) {
        remove(s->tmp);
        gaia__host_free(ctx, s->tmp);
        s->tmp = NULL;
        return gaia__fail(ctx, GAIA_ERR_IO, fn, "cannot write '%s': %s; it is unchanged", path, strerror(err));
    }
    return GAIA_OK;
}

/* Drops a pending temporary file (path stays as it was). */
static void gaia__save_abort(gaia_ctx *ctx, gaia__save *s) {
    if (!s->tmp) return;
    remove(s->tmp);
    gaia__host_free(ctx, s->tmp);
    s->tmp = NULL;
}

/* Renames the temporary file over path. */
static gaia_status gaia__save_commit(gaia_ctx *ctx, const char *fn, gaia__save *s) {
    int err = 0;
    errno = 0;
#if defined(_WIN32)
    if (!MoveFileExA(s->tmp, s->path, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) err = EACCES;
#else
    if (rename(s->tmp, s->path) != 0) err = errno ? errno : EIO;
#endif
    if (err) {
        gaia__save_abort(ctx, s);
        return gaia__fail(ctx, GAIA_ERR_IO, fn, "cannot replace '%s': %s; it is unchanged", s->path,
                          strerror(err));
    }
    gaia__host_free(ctx, s->tmp);
    s->tmp = NULL;
    return GAIA_OK;
}

/* Writes bytes to path all or nothing (see gaia__save). */
static gaia_status gaia__save_file(gaia_ctx *ctx, const char *fn, const char *path, const void *bytes, size_t size) {
    gaia__save s;
    gaia_status st = gaia__save_begin(ctx, fn, path, bytes, size, &s);
    return st == GAIA_OK ? gaia__save_commit(ctx, fn, &s) : st;
}

/* What limits the size of a file a loader reads (for its message). */
enum { GAIA__LIMIT_LOAD, GAIA__LIMIT_NPY, GAIA__LIMIT_NAMES };

/* Reads a whole file into memory from the context's allocator (at most max
   bytes: a larger one is GAIA_ERR_FORMAT before anything is allocated;
   limit says where max came from). */
static gaia_status gaia__read_file(gaia_ctx *ctx, const char *fn, const char *path, uint64_t max, int limit,
                                   unsigned char **buf, size_t *len) {
    FILE *f;
    long n;
    int err;
    *buf = NULL;
    *len = 0;
    errno = 0;
    f = fopen(path, "rb");
    if (!f) {
        err = errno;
        return gaia__fail(ctx, GAIA_ERR_IO, fn, "cannot open '%s': %s", path,
                          err ? strerror(err) : "the C library gives no reason");
    }
#ifdef GAIA__POSIX_IO
    { /* a directory opens for reading on some systems and "sizes" as 2^63 - 1 bytes */
        struct stat sb;
        if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
            fclose(f);
            return gaia__fail(ctx, GAIA_ERR_IO, fn, "'%s' is a directory, not a file", path);
        }
    }
#endif
    errno = 0;
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        err = errno;
        fclose(f);
        return gaia__fail(ctx, GAIA_ERR_IO, fn, "cannot size '%s': %s", path,
                          err ? strerror(err) : "it is not a regular file");
    }
    if ((uint64_t)n > max || (uint64_t)n >= SIZE_MAX) {
        fclose(f);
        if (limit == GAIA__LIMIT_LOAD)
            return gaia__fail(ctx, GAIA_ERR_FORMAT, fn,
                              "'%s' is %ld bytes, more than this loader reads under the context's load_limit of %zu "
                              "bytes (at most %llu)",
                              path, n, ctx->load_limit, (unsigned long long)max);
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "'%s' is %ld bytes, over the limit of %llu (%s)", path, n,
                          (unsigned long long)max,
                          limit == GAIA__LIMIT_NPY ? "GAIA_NPY_MAX_BYTES and a header"
                                                   : "the names of the vectors beside it may take");
    }
    *buf = (unsigned char *)gaia__host_alloc(ctx, (size_t)n + 1);
    if (!*buf) {
        fclose(f);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %ld bytes for '%s'", n, path);
    }
    errno = 0;
    if (fread(*buf, 1, (size_t)n, f) != (size_t)n) {
        err = errno;
        fclose(f);
        gaia__host_free(ctx, *buf);
        *buf = NULL;
        return gaia__fail(ctx, GAIA_ERR_IO, fn, "cannot read '%s': %s", path,
                          err ? strerror(err) : "it ended early (changed while read?)");
    }
    fclose(f);
    *len = (size_t)n;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_tensor_load_npy(gaia_ctx *ctx, const char *path, gaia_tensor **out) {
    static const char *fn = "gaia_tensor_load_npy";
    unsigned char *buf;
    size_t len;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!path || !out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path or out is NULL");
    st = gaia__read_file(ctx, fn, path, GAIA_NPY_MAX_BYTES + GAIA_NPY_MAX_HEADER + 16, GAIA__LIMIT_NPY, &buf, &len);
    if (st != GAIA_OK) return st;
    st = gaia_npy_parse(ctx, buf, len, out);
    if (st != GAIA_OK) {
        /* Say which file was bad, keeping the parser's reason. */
        char reason[GAIA__ERR_LEN];
        memcpy(reason, ctx->last_error, sizeof reason);
        gaia__fail(ctx, st, fn, "'%s': %s", path, reason);
    }
    gaia__host_free(ctx, buf);
    return st;
}

GAIA_API void gaia_image_free(gaia_ctx *ctx, void *bytes) {
    if (ctx) gaia__host_free(ctx, bytes);
}

GAIA_API gaia_status gaia_npy_image(gaia_ctx *ctx, const gaia_tensor *t, void **bytes, size_t *size) {
    static const char *fn = "gaia_npy_image";
    char header[256];
    int n, i, pad;
    unsigned char *img;
    float *host;
    size_t k, total;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!bytes || !size) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "bytes or size is NULL");
    if ((st = gaia__check_tensor(ctx, fn, "t", t)) != GAIA_OK) return st;
    n = snprintf(header, sizeof header, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    /* NumPy's spelling: (7,) for one dimension, (2, 3) for more. */
    for (i = 0; i < t->ndim; i++)
        n += snprintf(header + n, sizeof header - (size_t)n, i ? ", %zu" : "%zu", t->shape[i]);
    n += snprintf(header + n, sizeof header - (size_t)n, t->ndim == 1 ? ",), }" : "), }");
    pad = 64 - (10 + n + 1) % 64; /* the data starts on a 64-byte boundary */
    if (pad == 64) pad = 0;
    memset(header + n, ' ', (size_t)pad);
    n += pad;
    header[n++] = '\n';
    if (t->numel > (SIZE_MAX - 10 - (size_t)n) / 8)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "%zu elements are too many for an image", t->numel);
    total = 10 + (size_t)n + t->numel * 4;
    img = (unsigned char *)gaia__host_alloc(ctx, total);
    host = (float *)gaia__host_alloc(ctx, t->numel * sizeof(float));
    if (!img || !host) {
        gaia__host_free(ctx, img);
        gaia__host_free(ctx, host);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu bytes", total + t->numel * 4);
    }
    st = gaia_tensor_to_host(ctx, t, host, t->numel);
    if (st != GAIA_OK) {
        gaia__host_free(ctx, img);
        gaia__host_free(ctx, host);
        return st;
    }
    memcpy(img, "\x93NUMPY\x01\x00", 8);
    img[8] = (unsigned char)(n & 0xff);
    img[9] = (unsigned char)(n >> 8);
    memcpy(img + 10, header, (size_t)n);
    for (k = 0; k < t->numel; k++) { /* little-endian regardless of the host */
        uint32_t u;
        unsigned char *le = img + 10 + n + 4 * k;
        memcpy(&u, &host[k], 4);
        le[0] = (unsigned char)u;
        le[1] = (unsigned char)(u >> 8);
        le[2] = (unsigned char)(u >> 16);
        le[3] = (unsigned char)(u >> 24);
    }
    gaia__host_free(ctx, host);
    *bytes = img;
    *size = total;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_tensor_save_npy(gaia_ctx *ctx, const gaia_tensor *t, const char *path) {
    static const char *fn = "gaia_tensor_save_npy";
    void *img;
    size_t size;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((st = gaia__check_tensor(ctx, fn, "t", t)) != GAIA_OK) return st;
    if (!path) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
    if ((st = gaia_npy_image(ctx, t, &img, &size)) != GAIA_OK) return st;
    st = gaia__save_file(ctx, fn, path, img, size);
    gaia__host_free(ctx, img);
    return st;
}

/* ---------------------------------------------------------------------
   Checkpoints: safetensors files. The header is JSON; the parser below
   reads exactly the subset the format uses (an object of objects with
   strings, arrays of unsigned integers and a string-to-string metadata
   object) and refuses everything else. Nothing is trusted: every count is
   checked before it is used, every offset against the buffer, and the
   tensors must tile the data buffer exactly (no overlap, no hole), as the
   format requires.
   --------------------------------------------------------------------- */
#ifndef GAIA_SAFETENSORS_MAX_HEADER
#define GAIA_SAFETENSORS_MAX_HEADER 100000000 /* bytes of JSON, the reference implementation's limit */
#endif

/* gaia's files carry a checksum in their metadata: "gaia.fnv1a64", 16
   lowercase hex digits of the FNV-1a 64 hash of the whole file (length,
   header, data) with those 16 digits read as '0'. The loader checks it
   wherever it is in the metadata and then drops it from the list (a re-save
   writes a fresh one); a file without it (another writer's) loads as
   before. */
#define GAIA__ST_SUM_KEY "gaia.fnv1a64"

/* The checksum of the n bytes at b, the 16 at b + at taken as '0'. */
static uint64_t gaia__st_sum(const unsigned char *b, size_t n, size_t at) {
    uint64_t h = 0xCBF29CE484222325ull;
    size_t i;
    for (i = 0; i < at && i < n; i++) h = (h ^ b[i]) * 0x100000001B3ull;
    for (; i < at + 16 && i < n; i++) h = (h ^ (unsigned char)'0') * 0x100000001B3ull;
    for (; i < n; i++) h = (h ^ b[i]) * 0x100000001B3ull;
    return h;
}
static void gaia__st_sum_put(unsigned char *p, uint64_t h) {
    int i;
    for (i = 15; i >= 0; i--, h >>= 4) p[i] = (unsigned char)"0123456789abcdef"[h & 15];
}

struct gaia_safetensors {
    gaia_ctx *ctx;
    size_t n;
    gaia_named_tensor *items; /* names and tensors owned here */
    gaia_tensor **tensors;    /* the same tensors, writable handles */
    char **meta;              /* key, value, ..., NULL */
};

/* dtypes the loader converts to float32, with their element sizes */
static const struct gaia__st_dtype {
    const char *name;
    size_t size;
} gaia__st_dtypes[] = {{"F32", 4}, {"F64", 8}, {"F16", 2}, {"BF16", 2}, {"I64", 8},
                       {"I32", 4}, {"I16", 2}, {"I8", 1},  {"U8", 1},   {"BOOL", 1}};
#define GAIA__ST_NDTYPES ((int)(sizeof gaia__st_dtypes / sizeof gaia__st_dtypes[0]))

typedef struct gaia__st_entry {
    char *name;
    int dtype;
    int ndim;
    size_t shape[GAIA_MAX_DIMS];
    size_t numel;
    uint64_t begin, end;
} gaia__st_entry;

typedef struct gaia__stj {
    gaia_ctx *ctx;
    const char *fn;
    const unsigned char *start, *p, *end;
} gaia__stj;

static gaia_status gaia__stj_fail(gaia__stj *j, const char *what) {
    return gaia__fail(j->ctx, GAIA_ERR_FORMAT, j->fn, "header byte %zu: %s", (size_t)(j->p - j->start), what);
}

static void gaia__stj_ws(gaia__stj *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

/* Consumes c (after white space) or fails saying what was expected. */
static gaia_status gaia__stj_expect(gaia__stj *j, char c, const char *what) {
    gaia__stj_ws(j);
    if (j->p >= j->end || *j->p != (unsigned char)c) return gaia__stj_fail(j, what);
    j->p++;
    return GAIA_OK;
}

/* Whether s[0..n) is well-formed UTF-8 (no overlong forms, no surrogates,
   nothing past U+10FFFF). */
static int gaia__utf8_valid(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len, k;
        uint32_t cp, min;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) len = 2, cp = c & 0x1f, min = 0x80;
        else if (c >= 0xe0 && c <= 0xef) len = 3, cp = c & 0x0f, min = 0x800;
        else if (c >= 0xf0 && c <= 0xf4) len = 4, cp = c & 0x07, min = 0x10000;
        else return 0;
        if (n - i < len) return 0;
        for (k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return 0;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
        i += len;
    }
    return 1;
}

static int gaia__hex4(const unsigned char *q, uint32_t *v) {
    int k;
    *v = 0;
    for (k = 0; k < 4; k++) {
        unsigned c = q[k];
        uint32_t d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return 0;
        *v = (*v << 4) | d;
    }
    return 1;
}

/* A JSON string -> a NUL-terminated UTF-8 copy from the context's allocator
   (escapes decoded; a NUL, a raw control byte or invalid UTF-8 is refused). */
static gaia_status gaia__stj_string(gaia__stj *j, char **out) {
    const unsigned char *q, *close;
    unsigned char *w;
    char *s;
    *out = NULL;
    gaia__stj_ws(j);
    if (j->p >= j->end || *j->p != '"') return gaia__stj_fail(j, "expected a string");
    for (q = j->p + 1; q < j->end && *q != '"'; q++)
        if (*q == '\\') q++; /* the escaped byte cannot close the string */
    if (q >= j->end) return gaia__stj_fail(j, "unterminated string");
    close = q;
    s = (char *)gaia__host_alloc(j->ctx, (size_t)(close - j->p)); /* decoding never lengthens */
    if (!s) return gaia__fail(j->ctx, GAIA_ERR_OUT_OF_MEMORY, j->fn, "cannot allocate a string of %zu bytes",
                              (size_t)(close - j->p));
    w = (unsigned char *)s;
    for (q = j->p + 1; q < close;) {
        unsigned c = *q++;
        uint32_t cp, lo;
        const char *bad = NULL;
        if (c < 0x20) bad = "control byte in a string";
        else if (c != '\\') *w++ = (unsigned char)c;
        else {
            c = *q++; /* q < close: the scan above skipped it */
            switch (c) {
            case '"': case '\\': case '/': *w++ = (unsigned char)c; break;
            case 'b': *w++ = '\b'; break;
            case 'f': *w++ = '\f'; break;
            case 'n': *w++ = '\n'; break;
            case 'r': *w++ = '\r'; break;
            case 't': *w++ = '\t'; break;
            case 'u':
                if (close - q < 4 || !gaia__hex4(q, &cp)) {
                    bad = "malformed \\u escape";
                    break;
                }
                q += 4;
                if (cp >= 0xd800 && cp <= 0xdbff) { /* a high surrogate wants its low half */
                    if (close - q < 6 || q[0] != '\\' || q[1] != 'u' || !gaia__hex4(q + 2, &lo) || lo < 0xdc00 ||
                        lo > 0xdfff) {
                        bad = "unpaired surrogate in a \\u escape";
                        break;
                    }
                    q += 6;
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                    bad = "unpaired surrogate in a \\u escape";
                    break;
                }
                if (cp == 0) bad = "NUL in a string";
                else if (cp < 0x80) *w++ = (unsigned char)cp;
                else if (cp < 0x800) {
                    *w++ = (unsigned char)(0xc0 | (cp >> 6));
                    *w++ = (unsigned char)(0x80 | (cp & 0x3f));
                } else if (cp < 0x10000) {
                    *w++ = (unsigned char)(0xe0 | (cp >> 12));
                    *w++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
                    *w++ = (unsigned char)(0x80 | (cp & 0x3f));
                } else {
                    *w++ = (unsigned char)(0xf0 | (cp >> 18));
                    *w++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
                    *w++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
                    *w++ = (unsigned char)(0x80 | (cp & 0x3f));
                }
                break;
            default: bad = "unknown escape in a string";
            }
        }
        if (bad) {
            gaia__host_free(j->ctx, s);
            j->p = q - 1;
            return gaia__stj_fail(j, bad);
        }
    }
    *w = 0;
    if (!gaia__utf8_valid((const unsigned char *)s, (size_t)(w - (unsigned char *)s))) {
        gaia__host_free(j->ctx, s);
        return gaia__stj_fail(j, "string is not valid UTF-8");
    }
    j->p = close + 1;
    *out = s;
    return GAIA_OK;
}

/* An unsigned integer (no sign, fraction or exponent; checked for overflow). */
static gaia_status gaia__stj_uint(gaia__stj *j, uint64_t *v) {
    int digits = 0;
    gaia__stj_ws(j);
    *v = 0;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
        unsigned d = (unsigned)(*j->p - '0');
        if (*v > (UINT64_MAX - d) / 10) return gaia__stj_fail(j, "integer overflows 64 bits");
        *v = *v * 10 + d;
        j->p++;
        digits++;
    }
    if (!digits) return gaia__stj_fail(j, "expected an unsigned integer");
    if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E'))
        return gaia__stj_fail(j, "expected an integer, found a fraction or exponent");
    return GAIA_OK;
}

/* [u, u, ...] into v (at most cap values; *n gets the count). */
static gaia_status gaia__stj_uints(gaia__stj *j, uint64_t *v, int cap, int *n, const char *what) {
    gaia_status st;
    *n = 0;
    if ((st = gaia__stj_expect(j, '[', what)) != GAIA_OK) return st;
    gaia__stj_ws(j);
    if (j->p < j->end && *j->p == ']') {
        j->p++;
        return GAIA_OK;
    }
    for (;;) {
        uint64_t x;
        if ((st = gaia__stj_uint(j, &x)) != GAIA_OK) return st;
        if (*n == cap) return gaia__stj_fail(j, what);
        v[(*n)++] = x;
        gaia__stj_ws(j);
        if (j->p < j->end && *j->p == ',') j->p++;
        else if (j->p < j->end && *j->p == ']') {
            j->p++;
            return GAIA_OK;
        } else return gaia__stj_fail(j, "expected ',' or ']' in an array");
    }
}

/* {"dtype": "F32", "shape": [..], "data_offsets": [b, e]} into e (name set by the caller). */
static gaia_status gaia__stj_tensor(gaia__stj *j, gaia__st_entry *e) {
    int seen_dtype = 0, seen_shape = 0, seen_offsets = 0, first = 1, k;
    gaia_status st;
    if ((st = gaia__stj_expect(j, '{', "a tensor's entry must be an object")) != GAIA_OK) return st;
    for (;;) {
        char *key = NULL;
        gaia__stj_ws(j);
        if (first && j->p < j->end && *j->p == '}') break; /* {} : caught below as missing fields */
        first = 0;
        if ((st = gaia__stj_string(j, &key)) != GAIA_OK) return st;
        st = gaia__stj_expect(j, ':', "expected ':' after a key");
        if (st == GAIA_OK && strcmp(key, "dtype") == 0 && !seen_dtype) {
            char *dt = NULL;
            seen_dtype = 1;
            st = gaia__stj_string(j, &dt);
            if (st == GAIA_OK) {
                for (e->dtype = -1, k = 0; k < GAIA__ST_NDTYPES; k++)
                    if (strcmp(dt, gaia__st_dtypes[k].name) == 0) e->dtype = k;
                if (e->dtype < 0)
                    st = gaia__fail(j->ctx, GAIA_ERR_FORMAT, j->fn,
                                    "tensor '%.64s': dtype '%.16s' not supported (gaia reads F32 F64 F16 BF16 I64 I32 "
                                    "I16 I8 U8 BOOL)",
                                    e->name, dt);
                gaia__host_free(j->ctx, dt);
            }
        } else if (st == GAIA_OK && strcmp(key, "shape") == 0 && !seen_shape) {
            uint64_t dims[GAIA_MAX_DIMS];
            int nd;
            seen_shape = 1;
            st = gaia__stj_uints(j, dims, GAIA_MAX_DIMS, &nd, "a shape of more than 4 dimensions");
            e->numel = 1;
            for (k = 0; st == GAIA_OK && k < nd; k++) {
                if (dims[k] == 0)
                    st = gaia__fail(j->ctx, GAIA_ERR_FORMAT, j->fn,
                                    "tensor '%.64s': dimension %d is zero (gaia tensors have no empty dimension)",
                                    e->name, k);
                else if (dims[k] > SIZE_MAX || gaia__mul_overflows(e->numel, (size_t)dims[k], &e->numel))
                    st = gaia__fail(j->ctx, GAIA_ERR_FORMAT, j->fn, "tensor '%.64s': the shape overflows", e->name);
                else e->shape[k] = (size_t)dims[k];
            }
            e->ndim = nd;
            if (nd == 0) { /* a 0-dim scalar becomes a one-element vector */
                e->ndim = 1;
                e->shape[0] = 1;
            }
        } else if (st == GAIA_OK && strcmp(key, "data_offsets") == 0 && !seen_offsets) {
            uint64_t off[2];
            int no;
            seen_offsets = 1;
            st = gaia__stj_uints(j, off, 2, &no, "data_offsets must be [begin, end]");
            if (st == GAIA_OK && no != 2) st = gaia__stj_fail(j, "data_offsets must be [begin, end]");
            if (st == GAIA_OK) e->begin = off[0], e->end = off[1];
        } else if (st == GAIA_OK) {
            st = gaia__fail(j->ctx, GAIA_ERR_FORMAT, j->fn, "tensor '%.64s': unknown or repeated field '%.32s'",
                            e->name, key);
        }
        gaia__host_free(j->ctx, key);
        if (st != GAIA_OK) return st;
        gaia__stj_ws(j);
        if (j->p < j->end && *j->p == ',') j->p++;
        else if (j->p < j->end && *j->p == '}') break;
        else return gaia__stj_fail(j, "expected ',' or '}' in a tensor's entry");
    }
    j->p++;
    if (!seen_dtype || !seen_shape || !seen_offsets)
        return gaia__fail(j->ctx, GAIA_ERR_FORMAT, j->fn, "tensor '%.64s' lacks %s", e->name,
                          !seen_dtype ? "a dtype" : !seen_shape ? "a shape" : "data_offsets");
    return GAIA_OK;
}

/* Grows an array of elem-byte items from the context's allocator to hold
   at least need items. */
static int gaia__st_grow(gaia_ctx *ctx, void **arr, size_t *cap, size_t need, size_t elem) {
    size_t ncap = *cap ? *cap : 8;
    void *p;
    if (need <= *cap) return 1;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / elem) return 0;
        ncap *= 2;
    }
    p = gaia__host_alloc(ctx, ncap * elem);
    if (!p) return 0;
    if (*arr) memcpy(p, *arr, *cap * elem);
    gaia__host_free(ctx, *arr);
    *arr = p;
    *cap = ncap;
    return 1;
}

static int gaia__st_cmp_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}
static int gaia__st_cmp_begin(const void *a, const void *b) {
    const gaia__st_entry *x = *(const gaia__st_entry *const *)a, *y = *(const gaia__st_entry *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : 0;
}

/* A repeated string among n (sorted copies of the pointers), or NULL. */
static const char *gaia__st_duplicate(gaia_ctx *ctx, char **names, size_t n, int *oom) {
    char **sorted;
    const char *dup = NULL;
    size_t i;
    *oom = 0;
    if (n < 2) return NULL;
    sorted = (char **)gaia__host_alloc(ctx, n * sizeof *sorted);
    if (!sorted) {
        *oom = 1;
        return NULL;
    }
    memcpy(sorted, names, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, gaia__st_cmp_name);
    for (i = 1; i < n && !dup; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0) dup = sorted[i];
    gaia__host_free(ctx, sorted);
    return dup;
}

/* Little-endian element i of a dtype as float (byte by byte: any host, any alignment). */
static float gaia__st_decode(const unsigned char *d, int dtype, size_t i) {
    size_t sz = gaia__st_dtypes[dtype].size, k;
    uint64_t u = 0;
    const unsigned char *q = d + i * sz;
    for (k = sz; k-- > 0;) u = (u << 8) | q[k];
    switch (dtype) {
    case 0: { uint32_t b = (uint32_t)u; float f; memcpy(&f, &b, 4); return f; }
    case 1: { double v; memcpy(&v, &u, 8); return (float)v; }
    case 2: return gaia__f16_to_f32_1((uint16_t)u);
    case 3: return gaia__bf16_to_f32_1((uint16_t)u);
    case 4: return (float)(int64_t)u;
    case 5: return (float)(int32_t)(uint32_t)u;
    case 6: return (float)(int16_t)(uint16_t)u;
    case 7: return (float)(int8_t)(uint8_t)u;
    case 8: return (float)u;
    default: return u ? 1.0f : 0.0f;
    }
}

GAIA_API void gaia_safetensors_free(gaia_safetensors *f) {
    size_t i;
    if (!f) return;
    for (i = 0; f->items && i < f->n; i++) gaia__host_free(f->ctx, (void *)(uintptr_t)f->items[i].name);
    for (i = 0; f->tensors && i < f->n; i++) gaia_tensor_free(f->tensors[i]);
    for (i = 0; f->meta && f->meta[i]; i++) gaia__host_free(f->ctx, f->meta[i]);
    gaia__host_free(f->ctx, f->items);
    gaia__host_free(f->ctx, f->tensors);
    gaia__host_free(f->ctx, f->meta);
    gaia__host_free(f->ctx, f);
}

/* One metadata entry, its value's bytes at [vat, end) with the closing
   quote: for the checksum key, *sum_at = vat after checking that the value
   is written as 16 lowercase hex digits (and is the only one); a key one
   bit away from it is a damaged file, not another writer's key. */
static gaia_status gaia__st_sum_entry(gaia_ctx *ctx, const char *fn, const char *key, const char *val, size_t vat,
                                      size_t end, size_t *sum_at) {
    static const char want[] = GAIA__ST_SUM_KEY;
    size_t k, bits = 0;
    if (strlen(key) == sizeof want - 1) {
        for (k = 0; k < sizeof want - 1; k++) {
            unsigned d = (unsigned char)key[k] ^ (unsigned char)want[k];
            for (; d; d &= d - 1) bits++;
        }
        if (bits == 1)
            return gaia__fail(ctx, GAIA_ERR_FORMAT, fn,
                              "metadata key '%s' is one bit from the checksum key " GAIA__ST_SUM_KEY " (a damaged file)",
                              key);
    }
    if (strcmp(key, want) != 0) return GAIA_OK;
    if (*sum_at != (size_t)-1)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "a second checksum " GAIA__ST_SUM_KEY " in the metadata");
    for (k = 0; k < 16 && ((val[k] >= '0' && val[k] <= '9') || (val[k] >= 'a' && val[k] <= 'f')); k++) {
    }
    if (k != 16 || val[16] || end - vat != 17)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "the checksum " GAIA__ST_SUM_KEY " '%.40s' is not 16 lowercase hex digits",
                          val);
    *sum_at = vat;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_safetensors_parse(gaia_ctx *ctx, const void *bytes, size_t size, gaia_safetensors **out) {
    static const char *fn = "gaia_safetensors_parse";
    const unsigned char *b = (const unsigned char *)bytes, *data;
    uint64_t hlen = 0, dlen;
    gaia__stj j;
    gaia__st_entry *ents = NULL, **order = NULL;
    char **meta = NULL, **names = NULL;
    size_t ne = 0, ecap = 0, nm = 0, mcap = 0, i, total = 0, biggest = 0, sum_at = (size_t)-1;
    int seen_meta = 0, oom;
    float *tmp = NULL;
    gaia_safetensors *f = NULL;
    gaia_status st = GAIA_OK;
    const char *dup;
    GAIA__NEED_CTX(ctx);
    if (!bytes || !out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "bytes or out is NULL");
    /* the first checks say "not a safetensors file" first: a text file or
       another format fails here, and its numbers mean nothing to the user */
    if (size < 8)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "not a safetensors file: %zu bytes, too short for the header length",
                          size);
    for (i = 8; i-- > 0;) hlen = (hlen << 8) | b[i];
    if (hlen > GAIA_SAFETENSORS_MAX_HEADER)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn,
                          "not a safetensors file: its first 8 bytes give a header length of %llu, over the limit %d",
                          (unsigned long long)hlen, GAIA_SAFETENSORS_MAX_HEADER);
    if (hlen > (uint64_t)(size - 8))
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn,
                          "not a safetensors file, or a truncated one: header length %llu runs past the end (%zu bytes)",
                          (unsigned long long)hlen, size);
    if (hlen < 2)
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "not a safetensors file: header length %llu is too short for {}",
                          (unsigned long long)hlen);
    data = b + 8 + hlen;
    dlen = (uint64_t)(size - 8 - (size_t)hlen);
    j.ctx = ctx;
    j.fn = fn;
    j.start = j.p = b + 8;
    j.end = b + 8 + hlen;
    if (*j.p != '{')
        return gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "not a safetensors file: the header does not start with '{' (byte 8 is %u)",
                          (unsigned)*j.p);
    j.p++;
    gaia__stj_ws(&j);
    if (j.p < j.end && *j.p == '}') j.p++; /* no tensors, no metadata */
    else
        for (;;) {
            char *key = NULL;
            if ((st = gaia__stj_string(&j, &key)) != GAIA_OK) goto done;
            if ((st = gaia__stj_expect(&j, ':', "expected ':' after a key")) != GAIA_OK) {
                gaia__host_free(ctx, key);
                goto done;
            }
            if (strcmp(key, "__metadata__") == 0) {
                gaia__host_free(ctx, key);
                if (seen_meta) {
                    st = gaia__stj_fail(&j, "a second __metadata__");
                    goto done;
                }
                seen_meta = 1;
                if ((st = gaia__stj_expect(&j, '{', "__metadata__ must be an object")) != GAIA_OK) goto done;
                gaia__stj_ws(&j);
                if (j.p < j.end && *j.p == '}') j.p++;
                else
                    for (;;) {
                        if (!gaia__st_grow(ctx, (void **)&meta, &mcap, nm + 3, sizeof *meta)) {
                            st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu metadata entries",
                                            nm / 2 + 1);
                            goto done;
                        }
                        size_t vat;
                        meta[nm] = meta[nm + 1] = NULL;
                        if ((st = gaia__stj_string(&j, &meta[nm])) != GAIA_OK) goto done;
                        nm++;
                        if ((st = gaia__stj_expect(&j, ':', "expected ':' after a key")) != GAIA_OK) goto done;
                        gaia__stj_ws(&j);
                        if (j.p >= j.end || *j.p != '"') {
                            st = gaia__stj_fail(&j, "metadata values must be strings");
                            goto done;
                        }
                        vat = (size_t)(j.p - b) + 1;
                        if ((st = gaia__stj_string(&j, &meta[nm])) != GAIA_OK) goto done;
                        nm++;
                        if ((st = gaia__st_sum_entry(ctx, fn, meta[nm - 2], meta[nm - 1], vat, (size_t)(j.p - b),
                                                     &sum_at)) != GAIA_OK)
                            goto done;
                        if (sum_at == vat) { /* the checksum: checked below, not part of the list */
                            gaia__host_free(ctx, meta[--nm]);
                            gaia__host_free(ctx, meta[--nm]);
                            meta[nm] = NULL;
                        }
                        gaia__stj_ws(&j);
                        if (j.p < j.end && *j.p == ',') j.p++;
                        else if (j.p < j.end && *j.p == '}') {
                            j.p++;
                            break;
                        } else {
                            st = gaia__stj_fail(&j, "expected ',' or '}' in __metadata__");
                            goto done;
                        }
                    }
            } else {
                gaia__st_entry *e;
                if (!gaia__st_grow(ctx, (void **)&ents, &ecap, ne + 1, sizeof *ents)) {
                    gaia__host_free(ctx, key);
                    st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu tensor entries", ne + 1);
                    goto done;
                }
                e = &ents[ne++];
                memset(e, 0, sizeof *e);
                e->name = key;
                if ((st = gaia__stj_tensor(&j, e)) != GAIA_OK) goto done;
            }
            gaia__stj_ws(&j);
            if (j.p < j.end && *j.p == ',') j.p++;
            else if (j.p < j.end && *j.p == '}') {
                j.p++;
                break;
            } else {
                st = gaia__stj_fail(&j, "expected ',' or '}' after an entry");
                goto done;
            }
        }
    gaia__stj_ws(&j); /* the writer pads with spaces */
    if (j.p != j.end) {
        st = gaia__stj_fail(&j, "bytes after the header's closing '}'");
        goto done;
    }
    /* before anything the header says is used: a flipped bit anywhere
       (length, header, data) is a checksum mismatch, not a wrong value */
    if (sum_at != (size_t)-1) {
        unsigned char want[16];
        gaia__st_sum_put(want, gaia__st_sum(b, size, sum_at));
        if (memcmp(want, b + sum_at, 16) != 0) {
            st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn,
                            "checksum mismatch: " GAIA__ST_SUM_KEY " says %.16s, the bytes give %.16s (a damaged "
                            "file, or one another program rewrote keeping gaia's checksum)",
                            (const char *)(b + sum_at), (const char *)want);
            goto done;
        }
    }
    /* names and keys unique */
    if (ne) {
        names = (char **)gaia__host_alloc(ctx, ne * sizeof *names);
        if (!names) {
            st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu names", ne);
            goto done;
        }
        for (i = 0; i < ne; i++) names[i] = ents[i].name;
        dup = gaia__st_duplicate(ctx, names, ne, &oom);
        if (oom || dup) {
            st = oom ? gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu names", ne)
                     : gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "tensor '%.64s' appears twice", dup);
            goto done;
        }
    }
    if (nm) {
        char **keys = (char **)gaia__host_alloc(ctx, (nm / 2) * sizeof *keys);
        if (!keys) {
            st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu keys", nm / 2);
            goto done;
        }
        for (i = 0; i < nm / 2; i++) keys[i] = meta[2 * i];
        dup = gaia__st_duplicate(ctx, keys, nm / 2, &oom);
        gaia__host_free(ctx, keys);
        if (oom || dup) {
            st = oom ? gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu keys", nm / 2)
                     : gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "metadata key '%.64s' appears twice", dup);
            goto done;
        }
    }
    /* every tensor's bytes: the right size, inside the buffer, tiling it */
    for (i = 0; i < ne; i++) {
        gaia__st_entry *e = &ents[i];
        uint64_t need;
        if (e->numel > UINT64_MAX / gaia__st_dtypes[e->dtype].size) {
            st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "tensor '%.64s': the shape overflows", e->name);
            goto done;
        }
        need = (uint64_t)e->numel * gaia__st_dtypes[e->dtype].size;
        if (e->end < e->begin || e->end - e->begin != need) {
            st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn,
                            "tensor '%.64s': data_offsets [%llu, %llu] do not hold %zu %s elements (%llu bytes)",
                            e->name, (unsigned long long)e->begin, (unsigned long long)e->end, e->numel,
                            gaia__st_dtypes[e->dtype].name, (unsigned long long)need);
            goto done;
        }
        if (e->end > dlen) {
            st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn,
                            "tensor '%.64s': data_offsets end %llu is past the data's %llu bytes (truncated file?)",
                            e->name, (unsigned long long)e->end, (unsigned long long)dlen);
            goto done;
        }
        if (e->numel > biggest) biggest = e->numel;
        if (total > SIZE_MAX - e->numel) total = SIZE_MAX; /* cannot happen within dlen, but stay safe */
        else total += e->numel;
    }
    if (ne) {
        uint64_t at = 0;
        order = (gaia__st_entry **)gaia__host_alloc(ctx, ne * sizeof *order);
        if (!order) {
            st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu entries", ne);
            goto done;
        }
        for (i = 0; i < ne; i++) order[i] = &ents[i];
        qsort(order, ne, sizeof *order, gaia__st_cmp_begin);
        for (i = 0; i < ne; i++) {
            if (order[i]->begin != at) {
                st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "tensor '%.64s' starts at byte %llu: %s at %llu",
                                order[i]->name, (unsigned long long)order[i]->begin,
                                order[i]->begin < at ? "it overlaps the tensor that ends" : "a hole from",
                                (unsigned long long)at);
                goto done;
            }
            at = order[i]->end;
        }
        if (at != dlen) {
            st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "%llu bytes after the last tensor's data",
                            (unsigned long long)(dlen - at));
            goto done;
        }
    } else if (dlen) {
        st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "%llu data bytes but no tensors", (unsigned long long)dlen);
        goto done;
    }
    if (total > ctx->load_limit / sizeof(float)) {
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn,
                        "%zu elements exceed the context's load_limit of %zu bytes", total, ctx->load_limit);
        goto done;
    }
    /* the object, then its tensors */
    f = (gaia_safetensors *)gaia__host_alloc(ctx, sizeof *f);
    if (f) {
        memset(f, 0, sizeof *f);
        f->ctx = ctx;
        f->items = (gaia_named_tensor *)gaia__host_alloc(ctx, (ne ? ne : 1) * sizeof *f->items);
        f->tensors = (gaia_tensor **)gaia__host_alloc(ctx, (ne ? ne : 1) * sizeof *f->tensors);
        f->meta = (char **)gaia__host_alloc(ctx, (nm + 1) * sizeof *f->meta);
        tmp = (float *)gaia__host_alloc(ctx, (biggest ? biggest : 1) * sizeof(float));
    }
    if (!f || !f->items || !f->tensors || !f->meta || !tmp) {
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu tensors of %zu elements in all", ne, total);
        goto done;
    }
    memset(f->tensors, 0, (ne ? ne : 1) * sizeof *f->tensors);
    for (i = 0; i < ne; i++) { /* the names move into f as each tensor is made */
        gaia__st_entry *e = &ents[i];
        size_t k;
        int created;
        for (k = 0; k < e->numel; k++) tmp[k] = gaia__st_decode(data + e->begin, e->dtype, k);
        st = gaia__prepare_out(ctx, fn, gaia_ctx_device(ctx), e->ndim, e->shape, &f->tensors[i], &created);
        if (st == GAIA_OK) {
            st = gaia__be(ctx, GAIA__DEV(f->tensors[i]))->upload(ctx, GAIA__PTR(f->tensors[i]), tmp, e->numel * sizeof(float));
            st = gaia__finish_out(st, &f->tensors[i], created);
        }
        if (st != GAIA_OK) goto done;
        f->items[i].name = e->name;
        f->items[i].tensor = f->tensors[i];
        e->name = NULL;
        f->n = i + 1;
    }
    if (nm) memcpy(f->meta, meta, nm * sizeof *meta);
    f->meta[nm] = NULL;
    nm = 0; /* owned by f now */
    *out = f;
    f = NULL;
done:
    if (f) { /* a failure after f was made: f owns the first f->n names and tensors, the metadata is still ours */
        if (f->meta) f->meta[0] = NULL;
        gaia_safetensors_free(f);
    }
    for (i = 0; i < ne; i++) gaia__host_free(ctx, ents[i].name);
    for (i = 0; i < nm; i++) gaia__host_free(ctx, meta[i]);
    gaia__host_free(ctx, ents);
    gaia__host_free(ctx, meta);
    gaia__host_free(ctx, names);
    gaia__host_free(ctx, order);
    gaia__host_free(ctx, tmp);
    return st;
}

GAIA_API gaia_status gaia_safetensors_load(gaia_ctx *ctx, const char *path, gaia_safetensors **out) {
    static const char *fn = "gaia_safetensors_load";
    unsigned char *buf;
    size_t len;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!path || !out) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path or out is NULL");
    /* the data may be float64: up to twice the floats the load limit allows */
    st = gaia__read_file(ctx, fn, path, 8 + (uint64_t)GAIA_SAFETENSORS_MAX_HEADER + 2 * (uint64_t)ctx->load_limit,
                         GAIA__LIMIT_LOAD, &buf, &len);
    if (st != GAIA_OK) return st;
    st = gaia_safetensors_parse(ctx, buf, len, out);
    if (st != GAIA_OK) { /* say which file, keeping the parser's reason */
        char reason[GAIA__ERR_LEN];
        memcpy(reason, ctx->last_error, sizeof reason);
        gaia__fail(ctx, st, fn, "'%s': %s", path, reason);
    }
    gaia__host_free(ctx, buf);
    return st;
}

GAIA_API size_t gaia_safetensors_count(const gaia_safetensors *f) { return f ? f->n : 0; }
GAIA_API const gaia_named_tensor *gaia_safetensors_entries(const gaia_safetensors *f) { return f ? f->items : NULL; }
GAIA_API gaia_tensor *gaia_safetensors_get(const gaia_safetensors *f, const char *name) {
    size_t i;
    if (!f || !name) return NULL;
    for (i = 0; i < f->n; i++)
        if (strcmp(f->items[i].name, name) == 0) return f->tensors[i];
    return NULL;
}
GAIA_API const char *gaia_safetensors_meta(const gaia_safetensors *f, const char *key) {
    size_t i;
    if (!f || !key) return NULL;
    for (i = 0; f->meta[i]; i += 2)
        if (strcmp(f->meta[i], key) == 0) return f->meta[i + 1];
    return NULL;
}
GAIA_API const char *const *gaia_safetensors_metadata(const gaia_safetensors *f) {
    return f ? (const char *const *)f->meta : NULL;
}

/* A growing text buffer for the header (a failed allocation sticks). */
typedef struct gaia__sb {
    gaia_ctx *ctx;
    char *p;
    size_t len, cap;
    int oom;
} gaia__sb;

static void gaia__sb_put(gaia__sb *b, const char *s, size_t n) {
    if (b->oom) return;
    if (n > SIZE_MAX - b->len - 1 || !gaia__st_grow(b->ctx, (void **)&b->p, &b->cap, b->len + n + 1, 1)) {
        b->oom = 1;
        return;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}
static void gaia__sb_cstr(gaia__sb *b, const char *s) { gaia__sb_put(b, s, strlen(s)); }
/* s as a JSON string: quotes, backslashes and control bytes escaped. */
static void gaia__sb_json(gaia__sb *b, const char *s) {
    gaia__sb_put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            gaia__sb_put(b, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            gaia__sb_put(b, esc, 6);
        } else {
            gaia__sb_put(b, s, 1);
        }
    }
    gaia__sb_put(b, "\"", 1);
}
static void gaia__sb_u64(gaia__sb *b, uint64_t v) {
    char num[24];
    snprintf(num, sizeof num, "%llu", (unsigned long long)v);
    gaia__sb_cstr(b, num);
}

/* Checks a metadata list (key, value, ..., NULL); *pairs gets its length. */
static gaia_status gaia__st_check_meta(gaia_ctx *ctx, const char *fn, const char *const *meta, size_t *pairs) {
    size_t i, k;
    *pairs = 0;
    if (!meta) return GAIA_OK;
    for (i = 0; meta[2 * i]; i++) {
        const char *key = meta[2 * i], *val = meta[2 * i + 1];
        if (!val) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "metadata key '%.64s' has a NULL value", key);
        if (!gaia__utf8_valid((const unsigned char *)key, strlen(key)) ||
            !gaia__utf8_valid((const unsigned char *)val, strlen(val)))
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "metadata entry %zu is not valid UTF-8", i);
        for (k = 0; k < i; k++)
            if (strcmp(meta[2 * k], key) == 0)
                return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "metadata key '%.64s' appears twice", key);
    }
    *pairs = i;
    return GAIA_OK;
}

/* The image in precision prec: es bytes an element, dtype name in the header. */
static gaia_status gaia__st_image(gaia_ctx *ctx, const char *fn, const gaia_named_tensor *tensors, size_t n,
                                  const char *const *metadata, gaia_precision prec, void **bytes, size_t *size) {
    gaia__sb h;
    size_t i, k, pairs, data = 0, total, sum_at, es;
    uint64_t at = 0;
    unsigned char *img = NULL;
    float *host = NULL;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if ((int)prec < 0 || prec >= GAIA_PREC_COUNT)
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "unknown precision %d (GAIA_PREC_F32, _BF16 or _F16)",
                          (int)prec);
    es = prec == GAIA_PREC_F32 ? 4 : 2;
    if (!bytes || !size || (!tensors && n)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "tensors, bytes or size is NULL");
    for (i = 0; i < n; i++) {
        const char *name = tensors[i].name;
        if (!name) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "tensor %zu has a NULL name", i);
        if ((st = gaia__check_tensor(ctx, fn, "a tensor", tensors[i].tensor)) != GAIA_OK)
            return gaia__fail(ctx, st, fn, "tensor %zu ('%.64s'): %s", i, name,
                              tensors[i].tensor ? "belongs to another context or an unavailable device" : "is NULL");
        if (strcmp(name, "__metadata__") == 0 || !gaia__utf8_valid((const unsigned char *)name, strlen(name)))
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "tensor %zu: the name '%.64s' is %s", i, name,
                              strcmp(name, "__metadata__") == 0 ? "reserved" : "not valid UTF-8");
        for (k = 0; k < i; k++)
            if (strcmp(tensors[k].name, name) == 0)
                return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the name '%.64s' appears twice", name);
        if (tensors[i].tensor->numel > (SIZE_MAX - data) / 8)
            return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "the tensors are too large for an image");
        data += tensors[i].tensor->numel * es;
    }
    if ((st = gaia__st_check_meta(ctx, fn, metadata, &pairs)) != GAIA_OK) return st;
    memset(&h, 0, sizeof h);
    h.ctx = ctx;
    /* the checksum first, as 16 '0' digits while the file is hashed, then
       the caller's metadata (a checksum key in it, from a loaded file, is
       replaced by this file's) */
    gaia__sb_cstr(&h, "{\"__metadata__\":{\"" GAIA__ST_SUM_KEY "\":\"");
    sum_at = h.len;
    gaia__sb_cstr(&h, "0000000000000000\"");
    for (i = 0; i < pairs; i++) {
        if (strcmp(metadata[2 * i], GAIA__ST_SUM_KEY) == 0) continue;
        gaia__sb_cstr(&h, ",");
        gaia__sb_json(&h, metadata[2 * i]);
        gaia__sb_cstr(&h, ":");
        gaia__sb_json(&h, metadata[2 * i + 1]);
    }
    gaia__sb_cstr(&h, "}");
    for (i = 0; i < n; i++) {
        const gaia_tensor *t = tensors[i].tensor;
        gaia__sb_cstr(&h, ",");
        gaia__sb_json(&h, tensors[i].name);
        gaia__sb_cstr(&h, prec == GAIA_PREC_F32    ? ":{\"dtype\":\"F32\",\"shape\":["
                          : prec == GAIA_PREC_BF16 ? ":{\"dtype\":\"BF16\",\"shape\":["
                                                   : ":{\"dtype\":\"F16\",\"shape\":[");
        for (k = 0; k < (size_t)t->ndim; k++) {
            if (k) gaia__sb_cstr(&h, ",");
            gaia__sb_u64(&h, t->shape[k]);
        }
        gaia__sb_cstr(&h, "],\"data_offsets\":[");
        gaia__sb_u64(&h, at);
        gaia__sb_cstr(&h, ",");
        at += (uint64_t)t->numel * es;
        gaia__sb_u64(&h, at);
        gaia__sb_cstr(&h, "]}");
    }
    gaia__sb_cstr(&h, "}");
    while (!h.oom && h.len % 8) gaia__sb_cstr(&h, " "); /* the data starts 8-byte aligned */
    if (!h.oom && h.len > (size_t)GAIA_SAFETENSORS_MAX_HEADER) {
        gaia__host_free(ctx, h.p);
        return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "a header of %zu bytes is over the format's limit %d", h.len,
                          GAIA_SAFETENSORS_MAX_HEADER);
    }
    if (h.oom || h.len > SIZE_MAX - 8 - data ||
        !(img = (unsigned char *)gaia__host_alloc(ctx, (total = 8 + h.len + data)))) {
        gaia__host_free(ctx, h.p);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate an image of %zu tensors (%zu data bytes)", n,
                          data);
    }
    for (k = 0; k < 8; k++) img[k] = (unsigned char)((uint64_t)h.len >> (8 * k));
    memcpy(img + 8, h.p, h.len);
    gaia__host_free(ctx, h.p);
    at = 8 + h.len;
    for (i = 0; i < n; i++) {
        const gaia_tensor *t = tensors[i].tensor;
        host = (float *)gaia__host_alloc(ctx, t->numel * sizeof(float));
        if (!host) {
            gaia__host_free(ctx, img);
            return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu floats for '%.64s'", t->numel,
                              tensors[i].name);
        }
        if ((st = gaia_tensor_to_host(ctx, t, host, t->numel)) != GAIA_OK) {
            gaia__host_free(ctx, host);
            gaia__host_free(ctx, img);
            return st;
        }
        for (k = 0; k < t->numel; k++) { /* little-endian regardless of the host */
            uint32_t u;
            unsigned char *le = img + at + es * k;
            if (es == 4) {
                memcpy(&u, &host[k], 4);
                le[2] = (unsigned char)(u >> 16);
                le[3] = (unsigned char)(u >> 24);
            } else
                u = prec == GAIA_PREC_BF16 ? gaia__f32_to_bf16_1(host[k]) : gaia__f32_to_f16_1(host[k]);
            le[0] = (unsigned char)u;
            le[1] = (unsigned char)(u >> 8);
        }
        at += (uint64_t)t->numel * es;
        gaia__host_free(ctx, host);
    }
    gaia__st_sum_put(img + 8 + sum_at, gaia__st_sum(img, total, 8 + sum_at));
    *bytes = img;
    *size = total;
    return GAIA_OK;
}

GAIA_API gaia_status gaia_safetensors_image(gaia_ctx *ctx, const gaia_named_tensor *tensors, size_t n,
                                            const char *const *metadata, void **bytes, size_t *size) {
    return gaia__st_image(ctx, "gaia_safetensors_image", tensors, n, metadata, GAIA_PREC_F32, bytes, size);
}
GAIA_API gaia_status gaia_safetensors_image_prec(gaia_ctx *ctx, const gaia_named_tensor *tensors, size_t n,
                                                 const char *const *metadata, gaia_precision prec, void **bytes,
                                                 size_t *size) {
    return gaia__st_image(ctx, "gaia_safetensors_image_prec", tensors, n, metadata, prec, bytes, size);
}

static gaia_status gaia__st_save(gaia_ctx *ctx, const char *fn, const char *path, const gaia_named_tensor *tensors,
                                 size_t n, const char *const *metadata, gaia_precision prec) {
    void *img;
    size_t size;
    gaia_status st;
    GAIA__NEED_CTX(ctx);
    if (!path) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
    if ((st = gaia__st_image(ctx, fn, tensors, n, metadata, prec, &img, &size)) != GAIA_OK) return st;
    st = gaia__save_file(ctx, fn, path, img, size);
    gaia__host_free(ctx, img);
    return st;
}
GAIA_API gaia_status gaia_safetensors_save(gaia_ctx *ctx, const char *path, const gaia_named_tensor *tensors, size_t n,
                                           const char *const *metadata) {
    return gaia__st_save(ctx, "gaia_safetensors_save", path, tensors, n, metadata, GAIA_PREC_F32);
}
GAIA_API gaia_status gaia_safetensors_save_prec(gaia_ctx *ctx, const char *path, const gaia_named_tensor *tensors,
                                                size_t n, const char *const *metadata, gaia_precision prec) {
    return gaia__st_save(ctx, "gaia_safetensors_save_prec", path, tensors, n, metadata, prec);
}

/* ---- optimizer checkpoints (optimizers are the autograd module's) ---- */
#ifndef GAIA_NO_AUTOGRAD
#define GAIA__OPTIM_FORMAT "gaia.optim/1"
#define GAIA__OPTIM_FORMAT_GROUPS "gaia.optim/2"
#define GAIA__OPTIM_NHYPER 8

/* A decimal uint64 written by gaia_optim_save (digits only, checked). */
static int gaia__st_parse_u64(const char *s, uint64_t *v) {
    *v = 0;
    if (!s || !*s) return 0;
    for (; *s; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (*s < '0' || *s > '9' || *v > (UINT64_MAX - d) / 10) return 0;
        *v = *v * 10 + d;
    }
    return 1;
}

GAIA_API gaia_status gaia_optim_save(gaia_optim *o, const char *path) {
    static const char *fn = "gaia_optim_save";
    gaia_ctx *ctx;
    gaia_named_tensor *items = NULL;
    char(*names)[32] = NULL;
    char steps[24], seed[24], stream[24], nparams[24], ngroups[24];
    const char *meta[17];
    gaia_tensor *hyper = NULL, *gset = NULL, *gof = NULL;
    float hv[GAIA__OPTIM_NHYPER];
    size_t i, count = 0, hn = GAIA__OPTIM_NHYPER;
    /* one group of desc's settings: the file of an optimizer without groups */
    int plain = o && o->ngroups == 1 && o->glr[0] == o->d.lr && o->gwd[0] == o->d.weight_decay;
    gaia_status st;
    if (!o) return GAIA_ERR_INVALID_ARG;
    ctx = o->ctx;
    if (!path) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
    if (o->n > (SIZE_MAX - 3) / 3 / sizeof *names || o->ngroups > SIZE_MAX / 2 / sizeof(float)) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "too many parameters");
    items = (gaia_named_tensor *)gaia__host_alloc(ctx, (3 * o->n + 3) * sizeof *items);
    names = (char(*)[32])gaia__host_alloc(ctx, (3 * o->n + 1) * sizeof *names);
    if (!items || !names) {
        gaia__host_free(ctx, items);
        gaia__host_free(ctx, names);
        return gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu entries", 3 * o->n + 3);
    }
    for (i = 0; i < o->n; i++) {
        snprintf(names[count], sizeof *names, "param.%zu", i);
        items[count].name = names[count];
        items[count++].tensor = o->params[i];
        if (o->m[i]) {
            snprintf(names[count], sizeof *names, "m.%zu", i);
            items[count].name = names[count];
            items[count++].tensor = o->m[i];
        }
        if (o->v[i]) {
            snprintf(names[count], sizeof *names, "v.%zu", i);
            items[count].name = names[count];
            items[count++].tensor = o->v[i];
        }
    }
    hv[0] = o->d.lr, hv[1] = o->d.momentum, hv[2] = o->d.beta1, hv[3] = o->d.beta2;
    hv[4] = o->d.eps, hv[5] = o->d.weight_decay, hv[6] = o->d.clip_norm, hv[7] = o->last_lr;
    /* on the CPU whatever the default device: 8 floats only go to the file */
    st = gaia__tensor_new(ctx, fn, GAIA_DEVICE_CPU, 1, &hn, &hyper);
    if (st == GAIA_OK) memcpy(GAIA__PTR(hyper), hv, sizeof hv);
    if (st == GAIA_OK && !plain) { /* the groups: [lr, weight decay] each, and each parameter's */
        size_t gs[2];
        gs[0] = o->ngroups, gs[1] = 2;
        st = gaia__tensor_new(ctx, fn, GAIA_DEVICE_CPU, 2, gs, &gset);
        if (st == GAIA_OK) st = gaia__tensor_new(ctx, fn, GAIA_DEVICE_CPU, 1, &o->n, &gof);
        if (st == GAIA_OK) {
            float *gv = GAIA__PTR(gset), *ov = GAIA__PTR(gof);
            for (i = 0; i < o->ngroups; i++) gv[2 * i] = o->glr[i], gv[2 * i + 1] = o->gwd[i];
            for (i = 0; i < o->n; i++) ov[i] = (float)o->group_of[i];
            items[count].name = "optim.groups";
            items[count++].tensor = gset;
            items[count].name = "optim.group_of";
            items[count++].tensor = gof;
        }
    }
    if (st == GAIA_OK) {
        items[count].name = "optim.hyper";
        items[count++].tensor = hyper;
        snprintf(steps, sizeof steps, "%llu", (unsigned long long)o->steps);
        snprintf(seed, sizeof seed, "%llu", (unsigned long long)ctx->seed);
        snprintf(stream, sizeof stream, "%llu", (unsigned long long)ctx->rng_stream);
        snprintf(nparams, sizeof nparams, "%zu", o->n);
        snprintf(ngroups, sizeof ngroups, "%zu", o->ngroups);
        meta[0] = "format", meta[1] = plain ? GAIA__OPTIM_FORMAT : GAIA__OPTIM_FORMAT_GROUPS;
        meta[2] = "kind", meta[3] = o->d.kind == GAIA_OPTIM_SGD ? "sgd" : "adamw";
        meta[4] = "nesterov", meta[5] = o->d.nesterov ? "1" : "0";
        meta[6] = "params", meta[7] = nparams;
        meta[8] = "steps", meta[9] = steps;
        meta[10] = "seed", meta[11] = seed;
        meta[12] = "rng_stream", meta[13] = stream;
        meta[14] = plain ? NULL : "groups", meta[15] = ngroups;
        meta[16] = NULL;
        st = gaia_safetensors_save(ctx, path, items, count, meta);
        if (st != GAIA_OK) {
            char reason[GAIA__ERR_LEN];
            memcpy(reason, ctx->last_error, sizeof reason);
            gaia__fail(ctx, st, fn, "%s", reason);
        }
    }
    gaia_tensor_free(hyper);
    gaia_tensor_free(gset);
    gaia_tensor_free(gof);
    gaia__host_free(ctx, items);
    gaia__host_free(ctx, names);
    return st;
}

static int gaia__same_shape(const gaia_tensor *a, const gaia_tensor *b) {
    int k;
    if (a->ndim != b->ndim) return 0;
    for (k = 0; k < a->ndim; k++)
        if (a->shape[k] != b->shape[k]) return 0;
    return 1;
}

GAIA_API gaia_status gaia_optim_load(gaia_optim *o, const char *path) {
    static const char *fn = "gaia_optim_load";
    gaia_ctx *ctx;
    gaia_safetensors *f = NULL;
    gaia_tensor **staged = NULL; /* per parameter: its value, m, v on its device */
    const char *fmt, *kind, *nest;
    uint64_t steps, seed, stream, nparams;
    float hv[GAIA__OPTIM_NHYPER];
    float *gv = NULL; /* the groups' [lr, weight decay] pairs, then each parameter's group */
    size_t i, expect = 1;
    gaia_optim_desc d;
    gaia_status st;
    int was, grouped;
    uint64_t ngroups = 1;
    if (!o) return GAIA_ERR_INVALID_ARG;
    ctx = o->ctx;
    if (!path) return gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "path is NULL");
    if ((st = gaia_safetensors_load(ctx, path, &f)) != GAIA_OK) {
        char reason[GAIA__ERR_LEN];
        memcpy(reason, ctx->last_error, sizeof reason);
        return gaia__fail(ctx, st, fn, "%s", reason);
    }
    was = gaia_grad_set_enabled(ctx, 0);
    /* 1. the file describes an optimizer like this one */
    fmt = gaia_safetensors_meta(f, "format");
    kind = gaia_safetensors_meta(f, "kind");
    nest = gaia_safetensors_meta(f, "nesterov");
    grouped = fmt && strcmp(fmt, GAIA__OPTIM_FORMAT_GROUPS) == 0;
    if (!fmt || (strcmp(fmt, GAIA__OPTIM_FORMAT) != 0 && !grouped) || !kind || !nest ||
        (strcmp(nest, "0") && strcmp(nest, "1")) ||
        (grouped && !gaia__st_parse_u64(gaia_safetensors_meta(f, "groups"), &ngroups)) ||
        !gaia__st_parse_u64(gaia_safetensors_meta(f, "params"), &nparams) ||
        !gaia__st_parse_u64(gaia_safetensors_meta(f, "steps"), &steps) ||
        !gaia__st_parse_u64(gaia_safetensors_meta(f, "seed"), &seed) ||
        !gaia__st_parse_u64(gaia_safetensors_meta(f, "rng_stream"), &stream)) {
        st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn,
                        "'%s' is not a gaia optimizer checkpoint (metadata format \"%s\" with kind, nesterov, params, "
                        "steps, seed and rng_stream, or \"%s\" with groups too)",
                        path, GAIA__OPTIM_FORMAT, GAIA__OPTIM_FORMAT_GROUPS);
        goto done;
    }
    if (strcmp(kind, o->d.kind == GAIA_OPTIM_SGD ? "sgd" : "adamw") != 0) {
        st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn, "'%s' holds a%s %.16s optimizer, this one is %s", path,
                        kind[0] == 'a' ? "n" : "", kind, o->d.kind == GAIA_OPTIM_SGD ? "sgd" : "adamw");
        goto done;
    }
    if (nparams != o->n) {
        st = gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "'%s' holds %llu parameters, this optimizer has %zu", path,
                        (unsigned long long)nparams, o->n);
        goto done;
    }
    if (ngroups != o->ngroups) {
        st = gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "'%s' holds %llu parameter group%s, this optimizer has %zu", path,
                        (unsigned long long)ngroups, ngroups == 1 ? "" : "s", o->ngroups);
        goto done;
    }
    if (grouped) { /* the groups' settings, and the same membership as o's */
        gaia_tensor *gs = gaia_safetensors_get(f, "optim.groups"), *go = gaia_safetensors_get(f, "optim.group_of");
        size_t g;
        gv = (float *)gaia__host_alloc(ctx, (2 * o->ngroups + o->n) * sizeof *gv);
        if (!gv) {
            st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu entries", 2 * o->ngroups + o->n);
            goto done;
        }
        if (!gs || !go || gs->numel != 2 * o->ngroups || go->numel != o->n) {
            st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "'%s' has no optim.groups of %zu values and optim.group_of of %zu",
                            path, 2 * o->ngroups, o->n);
            goto done;
        }
        if ((st = gaia_tensor_to_host(ctx, gs, gv, 2 * o->ngroups)) != GAIA_OK ||
            (st = gaia_tensor_to_host(ctx, go, gv + 2 * o->ngroups, o->n)) != GAIA_OK)
            goto done;
        expect += 2;
        for (g = 0; g < o->ngroups; g++)
            if (!(gv[2 * g] > 0.0f) || gv[2 * g] > FLT_MAX || !(gv[2 * g + 1] >= 0.0f) || gv[2 * g + 1] > FLT_MAX) {
                st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "'%s': group %zu has lr %g and weight_decay %g", path, g,
                                (double)gv[2 * g], (double)gv[2 * g + 1]);
                goto done;
            }
        for (i = 0; i < o->n; i++)
            if (gv[2 * o->ngroups + i] != (float)o->group_of[i]) {
                st = gaia__fail(ctx, GAIA_ERR_INVALID_ARG, fn,
                                "'%s': parameter %zu is in group %g there, in group %zu in this optimizer", path, i,
                                (double)gv[2 * o->ngroups + i], o->group_of[i]);
                goto done;
            }
    }
    {
        gaia_tensor *h = gaia_safetensors_get(f, "optim.hyper");
        if (!h || h->numel != GAIA__OPTIM_NHYPER || (st = gaia_tensor_to_host(ctx, h, hv, GAIA__OPTIM_NHYPER)) != GAIA_OK) {
            if (st == GAIA_OK)
                st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "'%s' has no optim.hyper of %d values", path, GAIA__OPTIM_NHYPER);
            goto done;
        }
    }
    d = o->d;
    d.lr = hv[0], d.momentum = hv[1], d.beta1 = hv[2], d.beta2 = hv[3];
    d.eps = hv[4], d.weight_decay = hv[5], d.clip_norm = hv[6], d.nesterov = nest[0] == '1';
    if (!(d.lr > 0.0f) || d.lr > FLT_MAX || !(d.momentum >= 0.0f && d.momentum < 1.0f) || !(d.weight_decay >= 0.0f) ||
        d.weight_decay > FLT_MAX || !(d.beta1 > 0.0f && d.beta1 < 1.0f) || !(d.beta2 > 0.0f && d.beta2 < 1.0f) ||
        !(d.eps > 0.0f) || !(d.clip_norm >= 0.0f) || (d.nesterov && d.momentum == 0.0f) || !(hv[7] >= 0.0f) ||
        hv[7] > FLT_MAX) {
        st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "'%s' has hyper-parameters no optimizer can have (lr %g, momentum %g)",
                        path, (double)d.lr, (double)d.momentum);
        goto done;
    }
    /* 2. every parameter's tensors: present, the right shape, staged on its device */
    staged = (gaia_tensor **)gaia__host_alloc(ctx, 3 * o->n * sizeof *staged);
    if (!staged) {
        st = gaia__fail(ctx, GAIA_ERR_OUT_OF_MEMORY, fn, "cannot allocate %zu entries", 3 * o->n);
        goto done;
    }
    memset(staged, 0, 3 * o->n * sizeof *staged);
    for (i = 0; i < o->n; i++) {
        gaia_tensor *p = o->params[i], *src[3];
        char name[3][32];
        int k;
        snprintf(name[0], sizeof name[0], "param.%zu", i);
        snprintf(name[1], sizeof name[1], "m.%zu", i);
        snprintf(name[2], sizeof name[2], "v.%zu", i);
        for (k = 0; k < 3; k++) src[k] = gaia_safetensors_get(f, name[k]);
        if (!src[0] || (src[2] && o->d.kind == GAIA_OPTIM_SGD) ||
            (o->d.kind == GAIA_OPTIM_ADAMW && !src[1] != !src[2])) {
            st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "'%s': parameter %zu has %s", path, i,
                            !src[0] ? "no value" : "moment buffers its kind does not have");
            goto done;
        }
        for (k = 0; k < 3; k++) {
            if (!src[k]) continue;
            expect++;
            if (!gaia__same_shape(src[k], p)) {
                char have[64], want[64];
                gaia__shape_str(src[k], have, sizeof have);
                gaia__shape_str(p, want, sizeof want);
                st = gaia__fail(ctx, GAIA_ERR_SHAPE, fn, "'%s': %s has shape (%s), parameter %zu has (%s)", path,
                                name[k], have, i, want);
                goto done;
            }
            if ((st = gaia_tensor_to(ctx, src[k], GAIA__DEV(p), &staged[3 * i + (size_t)k])) != GAIA_OK) goto done;
        }
    }
    if (expect != gaia_safetensors_count(f)) {
        st = gaia__fail(ctx, GAIA_ERR_FORMAT, fn, "'%s' holds %zu tensors besides the optimizer's %zu", path,
                        gaia_safetensors_count(f) - expect, expect);
        goto done;
    }
    /* 3. commit: nothing below allocates */
    for (i = 0; st == GAIA_OK && i < o->n; i++) st = gaia_tensor_copy(ctx, staged[3 * i], &o->params[i]);
    if (st != GAIA_OK) goto done;
    for (i = 0; i < o->n; i++) {
        gaia_tensor_free(o->m[i]);
        gaia_tensor_free(o->v[i]);
        o->m[i] = staged[3 * i + 1];
        o->v[i] = staged[3 * i + 2];
        staged[3 * i + 1] = staged[3 * i + 2] = NULL;
    }
    o->d = d;
    if (grouped) {
        for (i = 0; i < o->ngroups; i++) o->glr[i] = gv[2 * i], o->gwd[i] = gv[2 * i + 1];
    } else { /* one group: the file's desc settings */
        o->glr[0] = d.lr;
        o->gwd[0] = d.weight_decay;
    }
    o->steps = steps;
    o->last_lr = hv[7];
    ctx->seed = seed;
    ctx->rng_stream = stream;
done:
    for (i = 0; staged && i < 3 * o->n; i++) gaia_tensor_free(staged[i]);
    gaia__host_free(ctx, staged);
    gaia__host_free(ctx, gv);
    gaia_safetensors_free(f);
    gaia_grad_set_enabled(ctx, was);
    return st;
}
#endif /* GAIA_NO_AUTOGRAD */

