# make fuzz: the libFuzzer harnesses (clang, ASan + UBSan) for every parser a
# user can feed a file to (.npy, brain images, codebooks, safetensors), each run for
# FUZZ_SECONDS (60 by default; `make fuzz FUZZ_SECONDS=3600` for a long run)
# from the committed seeds in tests/fuzz/corpus/. What they find lands in
# build-fuzz/ (crash-*, leak-*); the corpus they grow stays there too.
# make fuzz-corpus rewrites the seeds (after a file format changes).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_DIR     := build-fuzz
FUZZERS      := npy brain codebook safetensors
# (-Wno-pass-failed: under the sanitizers clang cannot vectorise the FFT loops
# that ask for it, and says so; the warning is about speed, not correctness.)
FUZZ_FLAGS   := -std=c99 -Wall -Wextra -pedantic -Werror -Wno-pass-failed -g -O1 -D_POSIX_C_SOURCE=200809L \
                -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined

.PHONY: fuzz fuzz-corpus
$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_common.h gaia.h gaia_cpu.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) $< -o $@ -lm

fuzz: $(addprefix $(FUZZ_DIR)/fuzz_,$(FUZZERS))
	@set -e; for f in $(FUZZERS); do \
	  mkdir -p $(FUZZ_DIR)/corpus-$$f; \
	  echo "== fuzz_$$f, $(FUZZ_SECONDS) s"; \
	  $(FUZZ_DIR)/fuzz_$$f -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -max_len=65536 \
	      -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/$$f- \
	      $(FUZZ_DIR)/corpus-$$f tests/fuzz/corpus/$$f > $(FUZZ_DIR)/fuzz_$$f.log 2>&1 \
	    || { tail -n 40 $(FUZZ_DIR)/fuzz_$$f.log; echo "fuzz_$$f found a problem (see $(FUZZ_DIR)/)"; exit 1; }; \
	  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|^Done" $(FUZZ_DIR)/fuzz_$$f.log; \
	done

fuzz-corpus: tests/fuzz/make_corpus.c gaia.h gaia_cpu.h
	@mkdir -p $(FUZZ_DIR) tests/fuzz/corpus/npy tests/fuzz/corpus/brain tests/fuzz/corpus/codebook \
	          tests/fuzz/corpus/safetensors
	$(CC) -std=c99 -O1 -D_POSIX_C_SOURCE=200809L tests/fuzz/make_corpus.c -o $(FUZZ_DIR)/make_corpus -lm
	$(FUZZ_DIR)/make_corpus tests/fuzz/corpus
