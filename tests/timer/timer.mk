# The clock under the flags a user most often has: -std=c99, no POSIX macro,
# no OpenMP, a system header before gaia.h. `make test` runs it first.
TIMER_DIR := build-timer
.PHONY: timer-check
$(TIMER_DIR)/timer_order: tests/timer/timer_order.c gaia.h gaia_cpu.h
	@mkdir -p $(@D)
	$(CC) -std=c99 -Wall -Wextra -pedantic -Werror -O2 -I. $< -o $@ -lm
timer-check: $(TIMER_DIR)/timer_order
	$(TIMER_DIR)/timer_order
test: timer-check
