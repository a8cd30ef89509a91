// launchers.h - the launchers of gaia_kernels.cu that gaia.h declares only
// inside gaia_cuda.h's implementation (which needs the CUDA headers): the
// layer, assembly and hrr modules'. The host build of gaia_kernels.cu
// force-includes this file too, so the compiler checks every prototype here
// against its definition.
#ifndef GAIA_CUDA_EMU_LAUNCHERS_H
#define GAIA_CUDA_EMU_LAUNCHERS_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int gaia_cuda_layer_bias_act(int act, const float *x, const float *bias, float *y, size_t rows, size_t cols,
                             void *stream);
int gaia_cuda_layer_gemv(int act, const float *W, const float *b, const float *x, float *y, size_t out, size_t in,
                         void *stream);
int gaia_cuda_layer_layernorm(const float *x, const float *w, const float *b, float *y, size_t rows, size_t cols,
                              float eps, void *stream);
int gaia_cuda_layer_attention(int prec, const float *q, const float *k, const float *v, float *o, size_t bh, size_t nq,
                              size_t nk, size_t d, float scale, int causal, void *stream);
int gaia_cuda_layer_hebbian_update(int rule, int textbook, unsigned flags, float eta, float decay, float h, size_t out,
                                   size_t in, float *W, const float *pre, const float *post, float *theta, float *u,
                                   float *stats, void *stream);
int gaia_cuda_layer_gather_row(const float *X, size_t cols, const long long *step, float *dst, void *stream);
int gaia_cuda_layer_store_row(float *rows, size_t cols, const long long *step, const float *src, void *stream);
int gaia_cuda_layer_advance(long long *step, void *stream);
int gaia_cuda_layer_layernorm_train(const float *x, const float *w, const float *b, float *y, float *mean, float *rstd,
                                    size_t rows, size_t cols, float eps, void *stream);
int gaia_cuda_layer_layernorm_backward(const float *x, const float *w, const float *mean, const float *rstd,
                                       const float *dy, float *dx, float *dw, float *db, size_t rows, size_t cols,
                                       void *stream);
int gaia_cuda_layer_act_backward(int act, const float *dy, const float *s, float *dz, float *db, size_t rows,
                                 size_t cols, void *stream);
int gaia_cuda_layer_attention_train(int prec, const float *q, const float *k, const float *v, float *o, float *lse,
                                    size_t bh, size_t nq, size_t nk, size_t d, float scale, int causal, void *stream);
int gaia_cuda_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1, float beta2,
                    float eps, float weight_decay, float bc1, float bc2, void *stream);
int gaia_cuda_layer_attention_backward(int prec, const float *q, const float *k, const float *v, const float *o,
                                       const float *lse, const float *dout, float *dq, float *dk, float *dv, size_t bh,
                                       size_t nq, size_t nk, size_t d, float scale, int causal, void *stream);

int gaia_cuda_assembly_accumulate(unsigned long long fkey, uint32_t n_tgt, const uint32_t *geo, const uint32_t *guide,
                                  uint32_t geo_len, uint32_t geo_r32, const unsigned long long *map_keys,
                                  const float *map_vals, unsigned long long map_mask, const uint32_t *support,
                                  int is_stimulus, const unsigned long long *bin_cdf, const uint32_t *bin_guide,
                                  uint32_t bin_lo, uint32_t bin_len, const uint32_t *src, uint32_t K,
                                  unsigned long long *input, uint32_t tgt_base, void *stream);
int gaia_cuda_assembly_hebb_collect(unsigned long long fkey, uint32_t n_tgt, const uint32_t *geo, const uint32_t *guide,
                                    uint32_t geo_len, uint32_t geo_r32, int is_stimulus,
                                    const unsigned long long *bin_cdf, const uint32_t *bin_guide, uint32_t bin_lo,
                                    uint32_t bin_len, const uint32_t *src, uint32_t K, const uint32_t *bits,
                                    unsigned long long *keys, unsigned long long cap, unsigned long long *count_dev,
                                    uint32_t tgt_base, void *stream);
int gaia_cuda_assembly_edges(unsigned long long fkey, uint32_t n_tgt, const uint32_t *geo, const uint32_t *guide,
                             uint32_t geo_len, uint32_t geo_r32, uint32_t i, uint32_t *out, unsigned long long cap,
                             unsigned long long *count_dev, uint32_t tgt_base, void *stream);
int gaia_cuda_assembly_topk_max(const unsigned long long *x, uint32_t n, unsigned long long *mx_dev, void *stream);
int gaia_cuda_assembly_topk_hist(const unsigned long long *x, uint32_t n, int shift, uint32_t *hist_dev, void *stream);
int gaia_cuda_assembly_topk_compact(const unsigned long long *x, uint32_t n, int shift, unsigned long long d,
                                    uint32_t *above, uint32_t *cand, unsigned long long *counts_dev, void *stream);
int gaia_cuda_assembly_map_update(unsigned long long *mk, float *mv, unsigned long long mask,
                                  const unsigned long long *keys, unsigned long long count, float factor, float wmax,
                                  unsigned long long *inserted_dev, unsigned long long *full_dev, void *stream);
int gaia_cuda_assembly_map_clear(unsigned long long *mk, unsigned long long cap, void *stream);
int gaia_cuda_assembly_map_rehash(const unsigned long long *ok, const float *ov, unsigned long long old_cap,
                                  unsigned long long *nk, float *nv, unsigned long long mask,
                                  unsigned long long *lost_dev, void *stream);
int gaia_cuda_assembly_bits_set(uint32_t *bits, const uint32_t *idx, uint32_t count, int value, void *stream);
int gaia_cuda_assembly_gather(const unsigned long long *x, const uint32_t *idx, uint32_t count, unsigned long long *out,
                              void *stream);

int gaia_cuda_hrr_spec_mul(size_t B, size_t nb, const float *a, size_t a_rs, const float *b, size_t b_rs, int conj_b,
                           float scale, float *out, void *stream);
int gaia_cuda_hrr_spec_map(size_t B, size_t nb, int op, float p, float scale, const float *in, float *out,
                           void *stream);
int gaia_cuda_hrr_cyclic(size_t B, size_t D, const float *x, size_t shift, int reverse, float *out, void *stream);
int gaia_cuda_hrr_row_norms(size_t B, size_t D, const float *x, float *norms, void *stream);
int gaia_cuda_hrr_normalize(size_t B, size_t D, const float *x, float *out, void *stream);
int gaia_cuda_hrr_cosine_scale(size_t B, size_t M, float *sim, const float *na, const float *nb, void *stream);
int gaia_cuda_hrr_argmax_rows(size_t B, size_t M, const float *sim, float *best, void *stream);

#ifdef __cplusplus
}
#endif
#endif
