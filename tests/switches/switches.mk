# make switches-check: the implementation compiles with each switch that
# leaves a module out (GAIA_NO_LAYER, ...), with all of them, with the set
# of a program of tensors and hrr only and with none, and tests/switches/
# run.c runs in each, under this configuration's compiler and flags
# (tests/switches/check.sh). make test runs it once per change of the
# headers (a stamp, as cxx-check).
.PHONY: switches-check
switches-check: $(BUILD)/switches.stamp
$(BUILD)/switches.stamp: gaia.h gaia_cpu.h tests/switches/check.sh tests/switches/run.c $(CONFIG)
	sh tests/switches/check.sh '$(CC)' '$(CFLAGS)' '$(CXX)' '$(CXXFLAGS)'
	@touch $@
test: switches-check
