# gaia - GNU Make build. `make help` lists the targets and options.
#
# Compile once, link many. The implementation (gaia.h with GAIA_IMPLEMENTATION;
# in CUDA builds also gaia_kernels.cu) is compiled once per configuration into
# $(BUILD)/libgaia.a. Every program - examples, benchmarks, the test runner and
# the documentation's snippets - is compiled with -DGAIA_NO_IMPLEMENTATION,
# which makes gaia.h ignore the program's own `#define GAIA_IMPLEMENTATION`,
# and is linked with libgaia.a. So the programs stay single-file programs that
# a user can also build alone (`cc -std=c99 -O3 examples/demo.c -lm`), while
# the library's ~8 s compile happens once, not once per program.
#
# Each configuration has its own build directory: build/ (default), and
# suffixes -generic (NATIVE=0), -serial (OMP=0), -san (SANITIZE=1), -cuda
# (CUDA=1), e.g. build-generic-serial/ or build-san-cuda/.

CC       ?= cc
CXX      ?= c++
NVCC     ?= nvcc
CUDA     ?= 0
OMP      ?= 1
NATIVE   ?= 1
SANITIZE ?= 0
MPI      ?= 0
PREFIX   ?= /usr/local
# The CUDA toolkit: from nvcc's location unless given.
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(shell command -v $(NVCC) 2>/dev/null))

# Every core unless -j was given (GNU Make >= 4.3 honours this).
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
  # every finding stops the program (so fails its test), and a float cast
  # out of range (NaN to an index) counts, which `undefined` leaves out
  SANFLAGS := -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all
  CFLAGS   += -g -O1 $(SANFLAGS) -fno-omit-frame-pointer
  CXXFLAGS += -g -O1 $(SANFLAGS) -fno-omit-frame-pointer
  LDLIBS   += -fsanitize=address,undefined,float-cast-overflow
endif

# MPI=1: brains and hrr codebooks sharded over MPI ranks (GAIA_USE_MPI),
# built with the MPI compiler wrappers; `make MPI=1 test` runs the MPI tests
# under mpirun with 1, 2, 3 and 4 ranks (MPIRUN, MPIRUN_FLAGS to change).
MPICC     ?= mpicc
MPICXX    ?= mpicxx
MPIRUN    ?= mpirun
MPI_NPS   ?= 1 2 3 4
ifeq ($(MPI),1)
  CC       := $(MPICC)
  CXX      := $(MPICXX)
  BUILD    := $(BUILD)-mpi
  CFLAGS   += -DGAIA_USE_MPI
  CXXFLAGS += -DGAIA_USE_MPI
endif

# CUDA architectures. CUDA_ARCH lists compute capabilities ("75 80 90" or
# "75,80,90"): each gets real code (SASS), and the last one also PTX, which
# the driver compiles for GPUs newer than any listed. The default is the
# common GPUs from Volta to Hopper (70 75 80 86 89 90), less those this nvcc
# cannot build (CUDA 13 dropped 70). CUDA_ARCH=native builds for the GPUs of
# this machine; all and all-major are nvcc's own lists.
CUDA_ARCH_COMMON := 70 75 80 86 89 90
# nvcc's flags besides the architectures and warnings; the documentation's
# nvcc lines must use the same (the doc suite checks them against this).
NVCC_BASE := -O3 -std=c++17
KERNELS_O :=
ifeq ($(CUDA),1)
  comma := ,
  CUDA_ARCH ?= $(or $(filter $(patsubst sm_%,%,$(shell $(NVCC) --list-gpu-code 2>/dev/null)),$(CUDA_ARCH_COMMON)),$(CUDA_ARCH_COMMON))
  CUDA_ARCH_LIST := $(subst $(comma), ,$(CUDA_ARCH))
  ifneq ($(filter native all all-major,$(CUDA_ARCH_LIST)),)
    CUDA_GENCODE := -arch=$(firstword $(CUDA_ARCH_LIST))
  else
    CUDA_GENCODE := $(foreach a,$(CUDA_ARCH_LIST),-gencode arch=compute_$(a),code=sm_$(a)) \
                    -gencode arch=compute_$(lastword $(CUDA_ARCH_LIST)),code=compute_$(lastword $(CUDA_ARCH_LIST))
  endif
  # --threads 0: the architectures of the fat binary compile in parallel
  NVCCFLAGS := $(NVCC_BASE) $(CUDA_GENCODE) --threads 0 -Xcompiler -Wall,-Wextra -Werror all-warnings
  CUDA_LIBDIR ?= $(firstword $(wildcard $(CUDA_HOME)/lib64 $(CUDA_HOME)/lib) $(CUDA_HOME)/lib64)
  BUILD    := $(BUILD)-cuda
  CFLAGS   += -DGAIA_USE_CUDA -isystem $(CUDA_HOME)/include
  CXXFLAGS += -DGAIA_USE_CUDA -isystem $(CUDA_HOME)/include
  KERNELS_O := $(BUILD)/gaia_kernels.o
  LDLIBS   += -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) -lcublasLt -lcublas -lcufft -lcurand -lcudart -lstdc++ -ldl
endif

HEADERS  := gaia.h gaia_cpu.h gaia_cuda.h
LIB      := $(BUILD)/libgaia.a
# Compiler, flags and libraries of this configuration: a change rebuilds everything.
CONFIG   := $(BUILD)/config
PROG_CFLAGS   = $(CFLAGS) -DGAIA_NO_IMPLEMENTATION -I.
PROG_CXXFLAGS = $(CXXFLAGS) -DGAIA_NO_IMPLEMENTATION -I.

EXAMPLES := $(patsubst examples/%.c,$(BUILD)/examples/%,$(wildcard examples/*.c))
BENCHES  := $(patsubst bench/%.c,$(BUILD)/bench/%,$(wildcard bench/*.c))
# bench_mpi needs MPI (MPI=1 builds only)
ifneq ($(MPI),1)
  BENCHES := $(filter-out $(BUILD)/bench/bench_mpi,$(BENCHES))
endif
TEST_C   := $(wildcard tests/*.c)
TEST_CXX := $(wildcard tests/*.cpp)
TEST_OBJ := $(patsubst tests/%.c,$(BUILD)/tests/%.o,$(TEST_C)) $(patsubst tests/%.cpp,$(BUILD)/tests/%.o,$(TEST_CXX))
RUNNER   := $(BUILD)/tests/run_tests
# Doc-tests: tests/doctest.sh turns every example of the manual (gaia.h), of
# README.md and of the pages in docs/ into a program in $(DOC); the runner's
# doc suite runs them.
DOC      := $(BUILD)/doc
DOC_SRC  := gaia.h README.md $(sort $(wildcard docs/*.md))

.PHONY: all test demo examples bench plots install uninstall clean cxx-check print-runner help consumer-check FORCE \
        kernel-resources headers check-headers
all: $(LIB) $(EXAMPLES) $(BENCHES) $(RUNNER) cxx-check

help:
	@echo 'make [all]       examples, tests, benchmarks and the C++ compile check'
	@echo 'make test        build and run every test; the last line is "N passed, N failed, N skipped"'
	@echo '                 (first the kernels of gaia_kernels.cu on the CPU, tests/cuda_emu: T=emu...)'
	@echo '                 T=name runs the tests whose name contains name (several: T="hrr fft");'
	@echo '                 a name that matches no test is an error. $(RUNNER) --list names them all'
	@echo 'make demo        the tour of the modules, then the hrr examples'
	@echo 'make examples    build every example into $(BUILD)/examples (each answers --help)'
	@echo 'make bench       every benchmark against its peers (peers are optional packages)'
	@echo 'make plots       the examples'"'"' series as CSV and, with gnuplot, their pictures as PNG in $(BUILD)/plots'
	@echo '                 (BENCH_OUT=file: a make bench output for the benchmark picture);'
	@echo '                 make plots-docs then copies the PNG files over the committed docs/*.png'
	@echo 'make install     PREFIX=$(PREFIX) DESTDIR=: headers, gaia.pc, the CMake package (lib/cmake/gaia,'
	@echo '                 for find_package(gaia)), LICENSE; with CUDA=1 also libgaia_kernels.a and gaia-cuda.pc'
	@echo 'make fuzz | tsan  libFuzzer on the file parsers (clang) | two contexts under ThreadSanitizer'
	@echo 'make mutate      plant bugs one at a time, run the tests that should catch them, list survivors'
	@echo '                 (MUTATE_SAMPLE=100 MUTATE_SEED=1 MUTATE_FILES=gaia_cpu.h,gaia.h MUTATE_FUNCTIONS=regex'
	@echo '                 MUTATE_LINES=file:a-b MUTATE_ONLY=id,... MUTATE_TESTS=filters; tests/mutate/mutate.py)'
	@echo 'make kernel-resources  registers, stack, spills and shared memory of every CUDA kernel'
	@echo '                 (KRES_ARCHS="75 80 90") into docs/kernel-resources.md; fails on a spill (needs nvcc)'
	@echo 'make consumer-check  install to a temp prefix; build tests/consumer via pkg-config,'
	@echo '                 find_package (of make install and cmake --install, which must agree) and'
	@echo '                 add_subdirectory (CUDA variants too when nvcc is found); uninstall leaves nothing'
	@echo 'make headers     gaia.h and gaia_cpu.h from the module files under src/ (tools/amalgamate.py;'
	@echo '                 edit src/, never the two headers: docs/DESIGN.md, "Source layout")'
	@echo 'make check-headers  fails when a module breaks the dependency rules or gaia.h or'
	@echo '                 gaia_cpu.h differ from what src/ makes'
	@echo 'make switches-check  the implementation with each GAIA_NO_<module> switch, all, tensors+hrr,'
	@echo '                 none, each compiled and run (tests/switches/check.sh; make test runs it when the'
	@echo '                 headers change)'
	@echo 'make compile-time  the implementation compiled whole and for tensors+hrr in alternation at -O2'
	@echo '                 (ROUNDS=5 OPT=-O2 MAX_RATIO=; tools/compile_time.sh): medians and their ratio'
	@echo 'make uninstall   PREFIX= DESTDIR=: removes what make install (or cmake --install) put there'
	@echo 'make clean | cxx-check'
	@echo 'options: CUDA=1 (nvcc; CUDA_ARCH="75 80 90" or native), OMP=0, NATIVE=0, SANITIZE=1,'
	@echo '         MPI=1 (mpicc; build-mpi/; make MPI=1 test runs tests/mpi under mpirun -np 1..4)'
	@$(if $(filter 1,$(CUDA)),echo 'CUDA_ARCH of this build: $(CUDA_ARCH) ($(NVCC) $(CUDA_GENCODE))')

$(CONFIG): FORCE
	@mkdir -p $(@D)
	@echo '$(CC) $(CFLAGS) | $(CXX) $(CXXFLAGS) | $(NVCC) $(NVCCFLAGS) | $(LDLIBS)' > $@.new
	@if cmp -s $@.new $@; then rm -f $@.new; else mv -f $@.new $@; fi

# ---------------------------------------------------------------- the library
$(BUILD)/gaia.o: $(HEADERS) $(CONFIG)
	$(CC) $(CFLAGS) -DGAIA_IMPLEMENTATION -x c -c gaia.h -o $@

# ptxas's report of every kernel (registers, stack, spills, shared memory, per
# architecture) comes out of the same compile, for tests/kernel_resources.sh;
# everything else nvcc says still reaches the terminal.
$(BUILD)/gaia_kernels.o: gaia_kernels.cu $(HEADERS) $(CONFIG)
	$(NVCC) $(NVCCFLAGS) --resource-usage -c $< -o $@ 2> $(BUILD)/gaia_kernels.ptxas; rc=$$?; \
	grep -v -e '^ptxas info' -e '^    [0-9]* bytes stack frame' $(BUILD)/gaia_kernels.ptxas >&2; exit $$rc

$(LIB): $(BUILD)/gaia.o $(KERNELS_O)
	rm -f $@
	$(AR) rcs $@ $^

# What `make install CUDA=1` installs for programs that include gaia.h themselves.
$(BUILD)/libgaia_kernels.a: $(KERNELS_O)
	rm -f $@
	$(AR) rcs $@ $^

# ---------------------------------------------------------------- programs
$(BUILD)/examples/%: examples/%.c $(wildcard examples/*.h) $(HEADERS) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) $< -o $@ $(LIB) $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(HEADERS) $(wildcard bench/*.h) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) $< -o $@ $(LIB) $(LDLIBS) -ldl

# Programs that read the implementation's internals (bench_matmul prints the
# GEMM's blocking macros) compile it themselves, as a user's single file does.
STANDALONE := $(BUILD)/bench/bench_matmul
$(STANDALONE): $(BUILD)/bench/%: bench/%.c $(HEADERS) $(wildcard bench/*.h) $(KERNELS_O) $(CONFIG)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -I. $< -o $@ $(KERNELS_O) $(LDLIBS) -ldl

$(BUILD)/tests/%.o: tests/%.c tests/gaia_test.h $(HEADERS) $(CONFIG)
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) -c $< -o $@

$(BUILD)/tests/%.o: tests/%.cpp tests/gaia_test.h $(HEADERS) $(CONFIG)
	@mkdir -p $(@D)
	$(CXX) $(PROG_CXXFLAGS) -c $< -o $@

# The doc suite lists the snippets that doctest.sh found ($(DOC)/doc_cases.h).
$(BUILD)/tests/test_doc.o: $(DOC)/doc_cases.h
$(BUILD)/tests/test_doc.o: PROG_CFLAGS += -I$(DOC)

# The library comes first: its compile is the longest, and make starts
# prerequisites in the order they are listed (3 s less on 2 cores).
$(RUNNER): $(LIB) $(TEST_OBJ) $(DOC)/programs
	$(CXX) $(TEST_OBJ) -o $@ $(LIB) $(LDLIBS)

# ---------------------------------------------------------------- doc-tests
$(DOC)/doc_cases.h: $(DOC_SRC) tests/doctest.sh Makefile
	sh tests/doctest.sh $(DOC) $(if $(filter 1,$(CUDA)),cuda,cpu) $(DOC_SRC)
	@echo 'nvcc $(NVCC_BASE) ' > $(DOC)/nvcc_base

# The doc suite checks that the changelog names the version in gaia.h; a
# changed changelog is copied again (the runner relinks, nothing recompiles).
$(DOC)/CHANGELOG.md: CHANGELOG.md
	@mkdir -p $(@D)
	cp CHANGELOG.md $@
$(RUNNER): $(DOC)/CHANGELOG.md

$(DOC)/programs: $(DOC)/doc_cases.h $(LIB)
	@set -e; for f in $(DOC)/*.c; do \
	  $(if $(findstring s,$(firstword -$(MAKEFLAGS))),,echo "$(CC) ... $$f";) \
	  $(CC) $(PROG_CFLAGS) $$f -o $${f%.c} $(LIB) $(LDLIBS); done
	@touch $@

# ---------------------------------------------------------------- checks
# The whole implementation, CUDA backend included, must also compile as C++.
cxx-check: $(BUILD)/cxx-check.stamp
$(BUILD)/cxx-check.stamp: $(HEADERS) $(CONFIG)
	printf '#define GAIA_IMPLEMENTATION\n#include "gaia.h"\n' | $(CXX) $(CXXFLAGS) -UGAIA_USE_CUDA -I. -x c++ -fsyntax-only -
	@if [ -n "$(CUDA_HOME)" ]; then \
	  echo "cxx-check: the CUDA backend as C++"; \
	  printf '#define GAIA_IMPLEMENTATION\n#include "gaia.h"\n' | \
	  $(CXX) $(CXXFLAGS) -UGAIA_USE_CUDA -DGAIA_USE_CUDA -I. -isystem $(CUDA_HOME)/include -x c++ -fsyntax-only -; \
	else echo "cxx-check: no CUDA toolkit, CUDA part skipped"; fi
	@touch $@

# ---------------------------------------------------------------- the headers
# gaia.h and gaia_cpu.h are generated: the code lives in one file per module
# under src/, and tools/amalgamate.py joins the pieces that src/gaia.h.parts
# and src/gaia_cpu.h.parts list, in order. Edit src/, run make headers and
# commit the result with it; never edit the two headers by hand. Building
# reads only the committed headers, so it needs no Python.
PYTHON ?= python3
headers:
	$(PYTHON) tools/amalgamate.py

# Regenerates into a temporary folder and fails unless both headers match;
# the generator first checks the modules' dependency rules (tools/check_deps.py:
# a module refers only to itself and the modules it lists under "uses:").
check-headers:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(PYTHON) tools/amalgamate.py --out "$$tmp" && \
	for h in gaia.h gaia_cpu.h; do \
	  cmp "$$tmp/$$h" $$h || { echo "check-headers: $$h is not what src/ makes: run make headers"; exit 1; }; done && \
	echo "check-headers: gaia.h and gaia_cpu.h are what src/ makes"

# ---------------------------------------------------------------- running
# make test's emulated kernels (EMU_BIN; empty in CUDA=1 and MPI=1 builds)
include tests/cuda_emu/emu.mk

ifeq ($(MPI),1)
# The MPI configuration's test: the MPI suite under mpirun with 1..4 ranks
# (oversubscribed: more ranks than cores is fine), each run compared bit for
# bit with the single-process library inside the program.
test: mpi-test
else
# The emulated kernels first (tests/cuda_emu/emu.mk), then the runner, whose
# "N passed, N failed, N skipped" stays the last line; either failing fails.
test: $(RUNNER) cxx-check $(EXAMPLES) $(EMU_BIN)
	@rc=0; \
	$(if $(and $(EMU_BIN),$(or $(if $(T),,1),$(EMU_T))),echo "$(EMU_BIN) gaia_kernels.cu $(EMU_T)"; \
	  $(EMU_BIN) gaia_kernels.cu $(EMU_T) || rc=1;) \
	$(if $(or $(if $(T),,1),$(RUNNER_T)),echo "$(RUNNER) $(RUNNER_T)"; $(RUNNER) $(RUNNER_T) || rc=1;) \
	exit $$rc
endif

print-runner:
	@echo $(RUNNER)

# Registers, stack frame, spills and shared memory of every CUDA kernel per
# architecture (ptxas's report), into docs/kernel-resources.md; fails when a
# kernel spills or keeps a stack frame without a listed reason. Needs nvcc.
KRES_ARCHS ?= 75 80 90
kernel-resources:
	sh tests/kernel_resources.sh "$(KRES_ARCHS)" > docs/kernel-resources.md.new; rc=$$?; \
	if [ $$rc -le 1 ]; then mv docs/kernel-resources.md.new docs/kernel-resources.md; \
	else rm -f docs/kernel-resources.md.new; fi; exit $$rc

examples: $(EXAMPLES)

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

# Extra targets (checks, fuzzing, plots) go here, above install.

# make compile-time: how long the implementation takes to compile, whole and
# for a program of tensors and hrr only (the switches of tests/switches/
# check.sh's tensors_and_hrr), ROUNDS rounds in alternation with this
# configuration's compiler and flags at OPT (-O2), medians and their ratio
# (tools/compile_time.sh; MAX_RATIO=0.3333 fails when it is not below).
ROUNDS ?= 5
.PHONY: compile-time
compile-time:
	OPT='$(or $(OPT),-O2)' sh tools/compile_time.sh '$(ROUNDS)' '$(CC)' '$(CFLAGS)'

# make MPI=1 mpi-test: tests/mpi/test_mpi.c under mpirun -np 1, 2, 3, 4, then
# its --leave run on 3 ranks (one rank calls MPI_Finalize while two step on).
# As root (containers, CI) Open MPI needs --allow-run-as-root; every run may
# oversubscribe the cores.
MPI_TEST := $(BUILD)/tests/test_mpi
MPIRUN_FLAGS ?= --oversubscribe $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-run-as-root)
$(MPI_TEST): tests/mpi/test_mpi.c $(HEADERS) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(PROG_CFLAGS) $< -o $@ $(LIB) $(LDLIBS)
.PHONY: mpi-test
mpi-test: $(MPI_TEST) $(if $(filter 1,$(MPI)),cxx-check)
	@test "$(MPI)" = 1 || { echo "mpi-test: build with MPI=1 (make MPI=1 test)"; exit 1; }
	@set -e; for np in $(MPI_NPS); do echo "== $(MPIRUN) -np $$np $(MPI_TEST)"; \
	  $(MPIRUN) $(MPIRUN_FLAGS) -np $$np $(MPI_TEST); done
	@echo "== $(MPIRUN) -np 3 $(MPI_TEST) --leave (a rank destroys its brain and calls MPI_Finalize)"
	@$(MPIRUN) $(MPIRUN_FLAGS) -np 3 $(MPI_TEST) --leave

# make plots: the examples' series as CSV in $(PLOTS)/, and, when gnuplot is
# installed, their pictures as PNG there too. The committed pictures
# docs/*.png (the README shows them) change only on purpose: make plots-docs
# copies the new ones over them. The same CSV gives the same PNG bytes
# (gnuplot's pngcairo writes no date), and the examples' series are the same
# from run to run and on any thread count; but a float series (the training
# loss, the hierarchy's norms) may differ in its last bits on another CPU or
# compiler (vector width, FMA), and the text with other fonts, so another
# machine's pictures may differ a little from the committed ones.
# The benchmark picture reads a `make bench` output: BENCH_OUT=file, by
# default the newest CPU run in bench/results/ (their names end in the date).
PLOTS     := $(BUILD)/plots
GNUPLOT   ?= gnuplot
BENCH_OUT ?= $(shell ls bench/results/cpu-*.txt 2>/dev/null | awk -F- '{print $$NF, $$0}' | sort | tail -n 1 | cut -d' ' -f2)
PLOT_EXAMPLES := $(BUILD)/examples/assembly_projection $(BUILD)/examples/hrr_capacity $(BUILD)/examples/layer_hierarchy \
                 $(BUILD)/examples/train_mlp \
                 $(BUILD)/examples/assembly_sweeps $(BUILD)/examples/vsa_capacity
plots: $(PLOT_EXAMPLES)
	@mkdir -p $(PLOTS)
	$(BUILD)/examples/assembly_projection --csv $(PLOTS)/assembly_support.csv
	$(BUILD)/examples/assembly_sweeps --csv $(PLOTS)/assembly_sweeps > $(PLOTS)/assembly_sweeps.txt
	$(BUILD)/examples/hrr_capacity --csv $(PLOTS)/hrr_capacity.csv 2000
	$(BUILD)/examples/layer_hierarchy --csv $(PLOTS)/hierarchy_outputs.csv
	$(BUILD)/examples/train_mlp --csv $(PLOTS)/train_loss.csv
	$(BUILD)/examples/vsa_capacity --csv $(PLOTS)/vsa_capacity.csv 1000
	sh docs/plots/bench_ratios.sh $(BENCH_OUT) > $(PLOTS)/bench_ratios.csv
	@echo "wrote $(PLOTS)/bench_ratios.csv (from $(BENCH_OUT))"
	@if command -v $(GNUPLOT) >/dev/null 2>&1; then set -e; \
	  for p in assembly_support hrr_capacity hierarchy_outputs train_loss vsa_capacity; do \
	    $(GNUPLOT) -e "csv='$(PLOTS)/$$p.csv'; out='$(PLOTS)/$$p.png'" docs/plots/$$p.gp; echo "wrote $(PLOTS)/$$p.png"; done; \
	  $(GNUPLOT) -e "prefix='$(PLOTS)/assembly_sweeps'; out='$(PLOTS)/assembly_sweeps.png'; what=', sampler exact, n = 10^5, k = 317, p = 0.01, 16 seeds a point'" \
	    docs/plots/assembly_sweeps.gp; echo "wrote $(PLOTS)/assembly_sweeps.png"; \
	  $(GNUPLOT) -e "csv='$(PLOTS)/bench_ratios.csv'; out='$(PLOTS)/bench_ratios.png'; src=': $(notdir $(BENCH_OUT))'" \
	    docs/plots/bench_ratios.gp; echo "wrote $(PLOTS)/bench_ratios.png"; \
	  echo "make plots-docs copies them over docs/*.png"; \
	else echo "make plots: gnuplot is not installed, so no PNG: the CSV files are in $(PLOTS)/ (apt-get install gnuplot)"; fi

# make plots-docs: the pictures of make plots replace the committed ones.
PLOT_PNGS := assembly_support hrr_capacity hierarchy_outputs train_loss vsa_capacity assembly_sweeps bench_ratios
.PHONY: plots-docs
plots-docs: plots
	@command -v $(GNUPLOT) >/dev/null 2>&1 || { echo "make plots-docs: needs gnuplot (apt-get install gnuplot)"; exit 1; }
	@set -e; for p in $(PLOT_PNGS); do \
	  if cmp -s $(PLOTS)/$$p.png docs/$$p.png; then echo "docs/$$p.png unchanged"; \
	  else cp $(PLOTS)/$$p.png docs/$$p.png; echo "docs/$$p.png replaced"; fi; done

# make mutate: plants bugs one at a time in the library (tests/mutate/mutate.py)
# and runs the tests that should catch each; prints the score and every
# surviving mutant. Each mutant rebuilds only the library object (at -O1) and
# relinks the runner's objects. MUTATE_FILES (comma-separated headers),
# MUTATE_FUNCTIONS (a regex on function names), MUTATE_LINES (file:a-b,...),
# MUTATE_SAMPLE, MUTATE_SEED choose the sample; MUTATE_ONLY=ID,... runs those
# mutants, MUTATE_PLANT=tests/mutate/planted.txt the hand-written ones; MUTATE_TESTS="filters" overrides tests/mutate/tests.map. Long
# (a minute or so a mutant on 2 cores): not part of make test or CI.
MUTATE_FILES     ?= gaia_cpu.h,gaia.h
MUTATE_FUNCTIONS ?=
MUTATE_LINES     ?=
MUTATE_SAMPLE    ?= 100
MUTATE_SEED      ?= 1
MUTATE_ONLY      ?=
MUTATE_TESTS     ?=
MUTATE_PLANT     ?=
# MUTATE_SANITIZE=1 builds each mutant with ASan + UBSan (slower): a mutant
# that only reads or writes out of bounds changes no result the tests see.
MUTATE_SANITIZE  ?=
# A mutant that reads a variable before setting it is refused by the build
# (-Wall -Werror warns: may be used uninitialized), so it is stillborn here
# too rather than a survivor whose result depends on a stale register.
MUTATE_WERROR    := -Werror=uninitialized -Werror=maybe-uninitialized
MUTATE_SAN_FLAGS := $(if $(filter 1,$(MUTATE_SANITIZE)),-fsanitize=address -fsanitize=undefined -fsanitize=float-cast-overflow -fno-sanitize-recover=all)
.PHONY: mutate
mutate: $(RUNNER) $(EXAMPLES)
	python3 tests/mutate/mutate.py --files '$(MUTATE_FILES)' --functions '$(MUTATE_FUNCTIONS)' --lines '$(MUTATE_LINES)' \
	  --sample $(MUTATE_SAMPLE) --seed $(MUTATE_SEED) --only '$(MUTATE_ONLY)' --plant '$(MUTATE_PLANT)' --tests '$(MUTATE_TESTS)' \
	  --cc '$(CC)' --cxx '$(CXX)' --cflags '$(filter-out -O3 -O2 -Werror,$(CFLAGS)) -O1 $(MUTATE_WERROR) $(MUTATE_SAN_FLAGS)' \
	  --ldlibs '$(LDLIBS) $(MUTATE_SAN_FLAGS)' \
	  --objs '$(TEST_OBJ)' --runner $(BUILD)/mutate/run_tests --log $(BUILD)/mutate/report.txt

# A user's project built against an installed and a vendored gaia, every way.
consumer-check:
	sh tests/consumer/check.sh

# ---------------------------------------------------------------- install
# Headers into include/gaia, the kernels' source into share/gaia, LICENSE
# into share/doc/gaia, gaia.pc, and the CMake package in lib/cmake/gaia
# (gaiaConfig.cmake, gaiaConfigVersion.cmake, gaiaTargets.cmake): the same
# files and targets as `cmake --install`, written by sed, so find_package(gaia)
# works after either. A CUDA build adds the prebuilt kernels
# (libgaia_kernels.a, the target gaia::kernels) and gaia-cuda.pc. The .pc
# files carry -fopenmp, and the CMake package OpenMP::OpenMP_C, when this
# build uses OpenMP.
LIBDIR     := $(PREFIX)/lib
DOCDIR     := $(PREFIX)/share/doc/gaia
CMAKEDIR    = $(LIBDIR)/cmake/gaia
VERSION     = $(shell sed -n 's/^.define GAIA_VERSION_STRING "\(.*\)"/\1/p' gaia.h)
PC_OPENMP  := $(if $(filter 1,$(OMP)),-fopenmp)
PC_SED     := -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
              -e 's|@VERSION@|$(VERSION)|g' \
              -e 's|@OPENMP@|$(PC_OPENMP)|g' -e 's|@CUDA_HOME@|$(CUDA_HOME)|g' -e 's|@CUDA_LIBDIR@|$(CUDA_LIBDIR)|g' \
              -e 's| *$$||'
# The prefix as gaiaTargets.cmake finds it: relative to its own directory
# when LIBDIR lies under PREFIX (the installed tree may then move), else
# PREFIX itself. The version file checks the compiler's pointer size.
empty :=
space := $(empty) $(empty)
CMAKE_UP_TO_PREFIX = $(subst $(space),,$(foreach d,$(subst /, ,$(patsubst $(PREFIX)/%,%,$(LIBDIR))),/..))
CMAKE_PREFIX_FROM_CONFIG = $(if $(filter $(PREFIX)/%,$(LIBDIR)),$${CMAKE_CURRENT_LIST_DIR}/../..$(CMAKE_UP_TO_PREFIX),$(PREFIX))
SIZEOF_VOID_P = $(shell echo __SIZEOF_POINTER__ | $(CC) -E -P -x c - | tail -n 1)
CMAKE_SED   = -e 's|@VERSION@|$(VERSION)|g' -e 's|@SIZEOF_VOID_P@|$(SIZEOF_VOID_P)|g' \
              -e 's|@GAIA_USE_CUDA@|$(if $(filter 1,$(CUDA)),ON,OFF)|g' \
              -e 's|@GAIA_WITH_OPENMP@|$(if $(filter 1,$(OMP)),ON,OFF)|g' \
              -e 's|@CMAKE_PREFIX_FROM_CONFIG@|$(CMAKE_PREFIX_FROM_CONFIG)|g'
install: $(if $(filter 1,$(CUDA)),$(BUILD)/libgaia_kernels.a)
	install -d $(DESTDIR)$(PREFIX)/include/gaia $(DESTDIR)$(PREFIX)/share/gaia $(DESTDIR)$(DOCDIR) \
	           $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(CMAKEDIR)
	install -m 644 $(HEADERS) $(DESTDIR)$(PREFIX)/include/gaia/
	install -m 644 gaia_kernels.cu $(DESTDIR)$(PREFIX)/share/gaia/
	install -m 644 LICENSE $(DESTDIR)$(DOCDIR)/
	sed $(PC_SED) pkgconfig/gaia.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/gaia.pc
	sed $(CMAKE_SED) cmake/gaiaConfig.cmake.in > $(DESTDIR)$(CMAKEDIR)/gaiaConfig.cmake
	sed $(CMAKE_SED) cmake/gaiaMakeConfigVersion.cmake.in > $(DESTDIR)$(CMAKEDIR)/gaiaConfigVersion.cmake
	sed $(CMAKE_SED) cmake/gaiaMakeTargets.cmake.in > $(DESTDIR)$(CMAKEDIR)/gaiaTargets.cmake
ifeq ($(CUDA),1)
	install -m 644 $(BUILD)/libgaia_kernels.a $(DESTDIR)$(LIBDIR)/
	sed $(PC_SED) pkgconfig/gaia-cuda.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/gaia-cuda.pc
endif

# Removes what either install put there (CPU or CUDA; make's or cmake's, whose
# CUDA export adds gaiaTargets-noconfig.cmake), then the directories it may
# have created that are left empty; never PREFIX itself, nor a directory that
# holds anything else.
uninstall:
	rm -rf $(DESTDIR)$(PREFIX)/include/gaia $(DESTDIR)$(PREFIX)/share/gaia $(DESTDIR)$(DOCDIR) $(DESTDIR)$(CMAKEDIR)
	rm -f $(DESTDIR)$(LIBDIR)/pkgconfig/gaia.pc $(DESTDIR)$(LIBDIR)/pkgconfig/gaia-cuda.pc \
	      $(DESTDIR)$(LIBDIR)/libgaia_kernels.a
	@for d in $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(LIBDIR)/cmake $(DESTDIR)$(LIBDIR) \
	          $(DESTDIR)$(PREFIX)/share/doc $(DESTDIR)$(PREFIX)/share $(DESTDIR)$(PREFIX)/include; do \
	  if [ -d "$$d" ]; then rmdir "$$d" 2>/dev/null || true; fi; done

clean:
	rm -rf build build-*

FORCE:

# make fuzz / make fuzz-corpus
include tests/fuzz/fuzz.mk

# make tsan
include tests/tsan/tsan.mk

# make timer-check (also run by make test)
include tests/timer/timer.mk

# make switches-check (also run by make test)
include tests/switches/switches.mk
