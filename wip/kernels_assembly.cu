// assembly module: CUDA kernels + extern "C" launchers (fragment of gaia_kernels.cu).
