// gaia_kernels.cu - gaia's custom CUDA kernels, each next to its extern "C"
// launcher. Compiled only by nvcc (make CUDA=1).
#include <cuda_runtime.h>

extern "C" int gaia_cuda_kernels_version(void) { return 1; }

// The modules' kernels.
#include "wip/kernels_layer.cu"
#include "wip/kernels_assembly.cu"
#include "wip/kernels_hrr.cu"
