# make tsan: the thread contract under ThreadSanitizer - two threads, each
# with its own context, run tensor, hrr, layer and assembly work at once
# (tests/tsan/two_contexts.c). Built without OpenMP: libgomp is not built for
# TSan, so its own barriers would be reported as races.
TSAN_CC  ?= $(CC)
TSAN_DIR := build-tsan

.PHONY: tsan
$(TSAN_DIR)/two_contexts: tests/tsan/two_contexts.c gaia.h gaia_cpu.h
	@mkdir -p $(@D)
	$(TSAN_CC) -std=c99 -Wall -Wextra -pedantic -Werror -D_POSIX_C_SOURCE=200809L -g -O1 -fsanitize=thread -pthread \
	    -I. $< -o $@ -lm

tsan: $(TSAN_DIR)/two_contexts
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" $(TSAN_DIR)/two_contexts
