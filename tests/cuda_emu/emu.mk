# The kernels of gaia_kernels.cu on the CPU: the file compiled as host C++
# through tests/cuda_emu/cuda_emu.h (fibres for the threads of a block, real
# barriers, warp shuffles and votes among 32 lanes, per-block shared memory
# on the heap), each launcher compared with its CPU twin. `make test` runs it
# before the test runner (T=emu... selects its cases; other T names go to the
# runner), and SANITIZE=1 builds it with ASan + UBSan like everything else.
# Configurations whose library holds the real kernels (CUDA=1) or MPI leave
# it to the plain ones.
EMU_BIN :=
ifneq ($(CUDA),1)
ifneq ($(MPI),1)
EMU_BIN  := $(BUILD)/cuda_emu/test_kernels
endif
endif
EMU_SRC  := tests/cuda_emu
EMU_HDRS := $(wildcard $(EMU_SRC)/*.h)
# C++17 (the kernels' nvcc dialect); no FMA contraction, so __fmul_rn and
# friends round as on the GPU; the kernels' #pragma unroll means nothing here.
# A grid of at most 7 blocks: every grid-stride loop goes round several times.
EMU_CXXFLAGS = $(CXXFLAGS) -std=c++17 -ffp-contract=off -fno-strict-aliasing -Wno-unknown-pragmas -I$(EMU_SRC) -I. \
               -DGAIA__K_MAX_BLOCKS=7u

$(BUILD)/cuda_emu/kernels.o: gaia_kernels.cu $(EMU_HDRS) $(HEADERS) $(CONFIG)
	@mkdir -p $(@D)
	$(CXX) $(EMU_CXXFLAGS) -include cuda_emu.h -include launchers.h -x c++ -c $< -o $@
$(BUILD)/cuda_emu/%.o: $(EMU_SRC)/%.cpp $(EMU_HDRS) $(HEADERS) $(CONFIG)
	@mkdir -p $(@D)
	$(CXX) $(EMU_CXXFLAGS) -DGAIA_NO_IMPLEMENTATION -c $< -o $@
$(BUILD)/cuda_emu/test_kernels: $(BUILD)/cuda_emu/kernels.o $(BUILD)/cuda_emu/cuda_emu.o \
                                $(BUILD)/cuda_emu/test_kernels.o $(LIB)
	$(CXX) $^ -o $@ $(LDLIBS) -lpthread

EMU_T    := $(filter emu%,$(T))
RUNNER_T := $(filter-out emu%,$(T))
