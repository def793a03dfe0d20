# The two commands a user needs: `make demo` (the main job) and `make test`.
BUILD_DIR ?= build
ASAN_BUILD_DIR ?= build-asan
JOBS ?= $(shell nproc)

# The sanitizer build runs the GoogleTest suites, the fuzz replays and the Python package's
# tests under ASan + UBSan (docs/robustness.md); only these targets are built there. The Python
# tests compare the module with the release build's CLI, built first if need be.
SANITIZED_TARGETS = attngeom_unit_tests attngeom_robustness_tests attngeom_resources_tests attngeom_geometry_tests attngeom_report_tests \
  fuzz_replay_safetensors fuzz_replay_config fuzz_replay_tokenizer fuzz_replay_corpus _attngeom
# Where `make python` points Debian's python3 at the package (a .pth file naming the build folder).
PYTHON_SITE ?= $(shell /usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')
SANITIZER_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitize/lsan.supp:print_suppressions=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

.PHONY: all bootstrap build python test test-sanitize test-cuda fuzz demo organism clean

all: build

bootstrap:
	bash scripts/bootstrap.sh build

build: bootstrap
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD_DIR) -j $(JOBS)

# `import attngeom` in Debian's python3: builds the package into $(BUILD_DIR)/python and adds
# that folder to python3's path with a .pth file (docs/python.md).
python: build
	mkdir -p $(PYTHON_SITE)
	echo "$(abspath $(BUILD_DIR))/python" > $(PYTHON_SITE)/attngeom.pth
	/usr/bin/python3 -c "import attngeom; print('attngeom', attngeom.__version__, 'from', attngeom.__file__)"

test:
	bash scripts/bootstrap.sh test
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNGEOM_TESTS=ON
	cmake --build $(BUILD_DIR) -j $(JOBS)
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)
	$(MAKE) test-sanitize

test-sanitize:
	test -f $(BUILD_DIR)/build.ninja || cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD_DIR) -j $(JOBS) --target attngeom
	cmake -S . -B $(ASAN_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNGEOM_TESTS=ON -DATTNGEOM_BENCH=OFF \
	  -DATTNGEOM_SANITIZE=ON -DATTNGEOM_CUDA=OFF -DATTNGEOM_REFERENCE_CLI=$(abspath $(BUILD_DIR))/src/attngeom
	$(SANITIZER_ENV) cmake --build $(ASAN_BUILD_DIR) -j $(JOBS) --target $(SANITIZED_TARGETS)
	cd $(ASAN_BUILD_DIR) && $(SANITIZER_ENV) ctest --output-on-failure -j $(JOBS)

# On a machine with an NVIDIA GPU and the CUDA toolkit: the CUDA build and the GPU tests
# (ctest label cuda) in build-cuda/ (docs/gpu.md). Not part of `make test`, where they skip.
test-cuda:
	bash scripts/test-cuda.sh

# Opt-in: the libFuzzer targets (clang), each run for 1M executions or 10 minutes
# (docs/robustness.md). Not part of `make test`, which replays their seed corpora.
FUZZ_BUILD_DIR ?= build-fuzz
fuzz:
	bash scripts/bootstrap.sh fuzz
	CXX=clang++-14 CC=clang-14 cmake -S . -B $(FUZZ_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNGEOM_FUZZ=ON \
	  -DATTNGEOM_TESTS=OFF -DATTNGEOM_BENCH=OFF
	cmake --build $(FUZZ_BUILD_DIR) -j $(JOBS) --target fuzz_safetensors fuzz_config fuzz_tokenizer fuzz_corpus
	bash fuzz/run.sh $(FUZZ_BUILD_DIR)

# The main job on the embedded default: analyze the bundled model organism and the planted
# model; demo-out/report.html shows both side by side.
demo: build
	$(BUILD_DIR)/src/attngeom demo --out demo-out

# Opt-in: retrain models/organism from scratch (tools/organism/README.md; about 1.5 hours on one core).
organism:
	bash tools/organism/build.sh

# Applies .clang-format to every C++ file (ctest's style.clang_format checks it).
format:
	git ls-files -- '*.cc' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR) $(ASAN_BUILD_DIR) $(FUZZ_BUILD_DIR)
