# Thin wrapper: the real build is CMake. Every target bootstraps first
# (idempotent, cached: seconds after the first run).
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
HOST ?= 127.0.0.1
PORT ?= 8080
CMAKE_FLAGS ?=

.PHONY: all bootstrap build run test unit asan tsan fuzz check bench format format-check clean image

all: build

bootstrap:
	scripts/bootstrap

build: bootstrap
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(BUILD_DIR) --parallel $(JOBS)

# Serve the default model on $(HOST):$(PORT); prints a curl example when ready.
run: build
	$(BUILD_DIR)/outpost serve --model .deps/models/default.gguf --host $(HOST) --port $(PORT)

# A minimal OCI image (buildah, from scratch: the binary, its libraries, a
# non-root user); IMAGE_TAG to name it. docs/deploy.md.
IMAGE_TAG ?= localhost/outpost:latest
image: build
	scripts/build_image $(IMAGE_TAG)

# Unit, integration (real model over HTTP) and end-to-end (official openai client) tests.
# TEST_FLAGS: more ctest flags (CI's `-LE ^unit$$`: the unit tests ran in the lane before, on the same build).
TEST_FLAGS ?=
test: build
	cd $(BUILD_DIR) && ctest --output-on-failure --timeout 1800 -j $(JOBS) $(TEST_FLAGS)

# The fast lane: unit tests only (seconds; the fake engine and the real model).
unit: build
	cd $(BUILD_DIR) && ctest --output-on-failure -L unit -j $(JOBS)

# The unit, integration and end-to-end suites with Outpost's code under
# AddressSanitizer and UBSan (preset asan): every server a test starts is the
# sanitized one, and its log must show no report (leaks included). Left out:
# the 10-minute soak, and the tests that measure the release build's memory,
# size or speed (they skip themselves under OUTPOST_SANITIZED).
# ASAN_TESTS=asan-ci is CI's short lane (CMakePresets.json: less the tests whose
# time goes to outside tools or to generation the others already drive).
ASAN_TESTS ?= asan
asan: bootstrap
	cmake --preset asan
	cmake --build --preset asan --parallel $(JOBS)
	ctest --preset $(ASAN_TESTS) -j $(JOBS)

# The threaded code's unit tests (scheduler, router, HTTP front) under
# ThreadSanitizer (preset tsan).
tsan: bootstrap
	cmake --preset tsan
	cmake --build --preset tsan --parallel $(JOBS)
	ctest --preset tsan -j $(JOBS)

# libFuzzer on every parser of outside input (preset fuzz: clang, ASan +
# UBSan), FUZZ_SECONDS per target (default 60; CI runs a short pass).
FUZZ_SECONDS ?= 60
fuzz: bootstrap
	cmake --preset fuzz
	cmake --build --preset fuzz --parallel $(JOBS)
	scripts/fuzz $(FUZZ_SECONDS)

# Static checks: formatting and the layering of includes.
check: format-check
	scripts/check_layers
	scripts/check_fuzz_targets

# Benchmarks against llama.cpp's own tools (not part of `make test`).
bench: build
	bench/run_all.sh

format:
	clang-format -i $$(git ls-files --cached --others --exclude-standard '*.cc' '*.h')

format-check:
	clang-format --dry-run -Werror $$(git ls-files --cached --others --exclude-standard '*.cc' '*.h')

clean:
	rm -rf $(BUILD_DIR) build-asan build-fuzz
