/* assembly module: CUDA host code (fragment of gaia_cuda.h's implementation section). Define GAIA__CUDA_ASSEMBLY_OPS as the address of this backend's ops table. */
