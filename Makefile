# SPDX-License-Identifier: Apache-2.0
# Thin wrapper over CMake. `make run` and `make test` are the two commands a
# new user needs; both install missing Debian packages first.

BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
JOBS       ?= $(shell nproc)
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 10
# LONG_TESTS=1 also runs the tests labelled long (see tests/integration/CMakeLists.txt).
LONG_TESTS ?= 0
CTEST_SKIP := $(if $(filter 1,$(LONG_TESTS)),,-LE long)
RUN_DIR    ?= run
PREFIX     ?= /usr/local

.PHONY: all build deps install run stop test test-gates unit-test asan-test format format-check lint bench fuzz fuzz-smoke clean

all: build

deps:
	@scripts/install-deps

$(BUILD)/Makefile:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCAIRN_WERROR=ON

build: $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

# The daemons, clusterctl, libcairn.so.1, cairn/cairn.h and cairn.pc under
# PREFIX (DESTDIR=... for a staging root).
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

run: deps build
	@scripts/run-local start $(RUN_DIR)

stop:
	@scripts/run-local stop $(RUN_DIR)

# Every gate, in the order that fails fastest; the last line says how long it took.
test:
	@start=$$(date +%s); $(MAKE) --no-print-directory test-gates; rc=$$?; \
	t=$$(( $$(date +%s) - start )); \
	if [ $$rc -eq 0 ]; then echo "make test: all gates passed in $$t s ($$((t / 60)) min $$((t % 60)) s)"; \
	else echo "make test: FAILED after $$t s ($$((t / 60)) min $$((t % 60)) s)"; fi; exit $$rc

test-gates: deps format-check build lint unit-test asan-test fuzz-smoke

unit-test: build
	cd $(BUILD) && ctest --output-on-failure --timeout 900 -j 2 $(CTEST_SKIP)

$(ASAN_BUILD)/Makefile:
	CC=clang cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCAIRN_WERROR=ON \
		-DCAIRN_ASAN=ON -DCAIRN_UBSAN=ON

asan-test: $(ASAN_BUILD)/Makefile
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --output-on-failure --timeout 1800 -j 2 -LE "bench|epoll_daemons|normal_only|long"

format:
	@scripts/format apply

format-check:
	@scripts/format check

lint:
	@scripts/lint.sh

bench: build
	@scripts/bench $(BUILD)

$(FUZZ_BUILD)/Makefile:
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCAIRN_FUZZ=ON \
		-DCAIRN_ASAN=ON -DCAIRN_UBSAN=ON

# Every fuzz target for FUZZ_SECONDS each (make fuzz FUZZ_SECONDS=600 for longer).
fuzz: $(FUZZ_BUILD)/Makefile
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_targets
	@scripts/fuzz $(FUZZ_BUILD) $(FUZZ_SECONDS)

# The short pass make test runs: FUZZ_SMOKE_SECONDS (10) per target from the
# committed seeds, two at a time.
fuzz-smoke:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(FUZZ_SMOKE_SECONDS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
