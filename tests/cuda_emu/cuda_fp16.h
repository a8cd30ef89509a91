// cuda_fp16.h for the host build of gaia_kernels.cu: everything is in cuda_emu.h.
#include "cuda_emu.h"
