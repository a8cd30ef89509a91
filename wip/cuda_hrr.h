/* hrr module: CUDA host code (fragment of gaia_cuda.h's implementation section). Define GAIA__CUDA_HRR_OPS as the address of this backend's ops table. */
