# gaia - GNU Make build. `make` builds examples, tests and benchmarks for the CPU;
# `make CUDA=1` adds the CUDA backend (needs nvcc; runs on the CPU without a GPU).
#   make test | demo | bench | install PREFIX=/usr/local DESTDIR= | clean
#   SANITIZE=1  builds with -fsanitize=address,undefined (into build-san/)
#   OMP=0       builds without OpenMP;  NATIVE=0 without -march=native

CC       ?= cc
CXX      ?= c++
NVCC     ?= nvcc
CUDA     ?= 0
OMP      ?= 1
NATIVE   ?= 1
SANITIZE ?= 0
PREFIX   ?= /usr/local
# The CUDA toolkit: from nvcc's location unless given.
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(shell command -v $(NVCC) 2>/dev/null))

# Every core unless -j was given: each program compiles the whole header-only
# library, so a serial build takes minutes (GNU Make >= 4.3 honours this).
ifeq ($(filter -j%,$(MAKEFLAGS)),)
  MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif

WARN     := -Wall -Wextra -pedantic -Werror
CFLAGS   := -std=c99 $(WARN) -O3 -D_POSIX_C_SOURCE=200809L
CXXFLAGS := -std=c++11 $(WARN) -O2
LDLIBS   := -lm
BUILD    := build

ifeq ($(NATIVE),1)
  CFLAGS   += -march=native
  CXXFLAGS += -march=native
else
  BUILD    := $(BUILD)-generic
endif
ifeq ($(OMP),1)
  CFLAGS   += -fopenmp
  CXXFLAGS += -fopenmp
  LDLIBS   += -fopenmp
else
  BUILD    := $(BUILD)-serial
endif
ifeq ($(SANITIZE),1)
  BUILD    := $(BUILD)-san
  CFLAGS   += -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
  CXXFLAGS += -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
  LDLIBS   += -fsanitize=address,undefined
endif

# sm_90 code for Hopper plus compute_90 PTX that newer GPUs JIT-compile.
NVCCFLAGS := -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
             -Xcompiler -Wall,-Wextra -Werror all-warnings
KERNELS_O :=
ifeq ($(CUDA),1)
  BUILD    := $(BUILD)-cuda
  CFLAGS   += -DGAIA_USE_CUDA -isystem $(CUDA_HOME)/include
  CXXFLAGS += -DGAIA_USE_CUDA -isystem $(CUDA_HOME)/include
  KERNELS_O := $(BUILD)/gaia_kernels.o
  LDLIBS   += $(KERNELS_O) -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 \
              -lcublasLt -lcublas -lcufft -lcurand -lcudart -lstdc++
endif

HEADERS  := gaia.h gaia_cpu.h gaia_cuda.h $(wildcard examples/*.h)
EXAMPLES := $(patsubst examples/%.c,$(BUILD)/examples/%,$(wildcard examples/*.c))
BENCHES  := $(patsubst bench/%.c,$(BUILD)/bench/%,$(wildcard bench/*.c))
TEST_C   := $(wildcard tests/*.c)
TEST_CXX := $(wildcard tests/*.cpp)
TEST_OBJ := $(patsubst tests/%.c,$(BUILD)/tests/%.o,$(TEST_C)) $(patsubst tests/%.cpp,$(BUILD)/tests/%.o,$(TEST_CXX))
RUNNER   := $(BUILD)/tests/run_tests

.PHONY: all test demo bench install uninstall clean cxx-check print-runner
all: $(EXAMPLES) $(BENCHES) $(RUNNER) cxx-check

$(BUILD)/gaia_kernels.o: gaia_kernels.cu gaia.h gaia_cpu.h gaia_cuda.h
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(BUILD)/examples/%: examples/%.c $(HEADERS) $(KERNELS_O)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -I. $< -o $@ $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(HEADERS) $(wildcard bench/*.h) $(KERNELS_O)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -I. $< -o $@ $(LDLIBS) -ldl

$(BUILD)/tests/%.o: tests/%.c $(HEADERS) tests/gaia_test.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -I. -c $< -o $@

$(BUILD)/tests/%.o: tests/%.cpp $(HEADERS) tests/gaia_test.h
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) -I. -c $< -o $@

$(RUNNER): $(TEST_OBJ) $(KERNELS_O)
	$(CXX) $(TEST_OBJ) -o $@ $(LDLIBS)

# The whole implementation, CUDA backend included, must also compile as C++.
cxx-check: $(BUILD)/cxx-check.stamp
$(BUILD)/cxx-check.stamp: $(HEADERS)
	@mkdir -p $(@D)
	printf '#define GAIA_IMPLEMENTATION\n#include "gaia.h"\n' | $(CXX) $(CXXFLAGS) -UGAIA_USE_CUDA -I. -x c++ -fsyntax-only -
	@if [ -n "$(CUDA_HOME)" ]; then \
	  echo "cxx-check: the CUDA backend as C++"; \
	  printf '#define GAIA_IMPLEMENTATION\n#include "gaia.h"\n' | \
	  $(CXX) $(CXXFLAGS) -UGAIA_USE_CUDA -DGAIA_USE_CUDA -I. -isystem $(CUDA_HOME)/include -x c++ -fsyntax-only -; \
	else echo "cxx-check: no CUDA toolkit, CUDA part skipped"; fi
	@touch $@

test: $(RUNNER) cxx-check
	$(RUNNER) $(T)

print-runner:
	@echo $(RUNNER)

# The tour, then the hrr module's two example programs (a short capacity sweep).
demo: $(BUILD)/examples/demo $(BUILD)/examples/hrr_roles $(BUILD)/examples/hrr_capacity
	$(BUILD)/examples/demo
	@echo; echo "== examples/hrr_roles: role-filler records, queries and cleanup"
	$(BUILD)/examples/hrr_roles
	@echo; echo "== examples/hrr_capacity: retrieval accuracy against D and pairs (300 queries a cell)"
	$(BUILD)/examples/hrr_capacity 300

# Peers run in the same process; OpenBLAS gets its best kernels on AVX-512 CPUs.
bench: $(BENCHES)
	@set -e; for b in $(BENCHES); do echo "== $$b"; \
	  if grep -q avx512f /proc/cpuinfo 2>/dev/null; then OPENBLAS_CORETYPE=$${OPENBLAS_CORETYPE:-SkylakeX} $$b; else $$b; fi; done

install:
	install -d $(DESTDIR)$(PREFIX)/include/gaia $(DESTDIR)$(PREFIX)/share/gaia $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 gaia.h gaia_cpu.h gaia_cuda.h $(DESTDIR)$(PREFIX)/include/gaia/
	install -m 644 gaia_kernels.cu $(DESTDIR)$(PREFIX)/share/gaia/
	printf 'prefix=%s\nincludedir=$${prefix}/include/gaia\n\nName: gaia\nDescription: header-only GPU-accelerated neural computation for C\nVersion: %s\nCflags: -I$${includedir}\nLibs: -lm\n' \
	  "$(PREFIX)" "$$(sed -n 's/^#define GAIA_VERSION_STRING "\(.*\)"/\1/p' gaia.h)" > $(DESTDIR)$(PREFIX)/lib/pkgconfig/gaia.pc

uninstall:
	rm -rf $(DESTDIR)$(PREFIX)/include/gaia $(DESTDIR)$(PREFIX)/share/gaia $(DESTDIR)$(PREFIX)/lib/pkgconfig/gaia.pc

clean:
	rm -rf build build-*

# make fuzz / make fuzz-corpus
include tests/fuzz/fuzz.mk

# make tsan
include tests/tsan/tsan.mk

# make timer-check (also run by make test)
include tests/timer/timer.mk
