# The two commands a user needs: `make demo` (the main job) and `make test`.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)

.PHONY: all bootstrap build test demo clean

all: build

bootstrap:
	bash scripts/bootstrap.sh build

build: bootstrap
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD_DIR) -j $(JOBS)

test:
	bash scripts/bootstrap.sh test
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNGEOM_TESTS=ON
	cmake --build $(BUILD_DIR) -j $(JOBS)
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

# The main job on the embedded default: analyze the bundled model organism.
demo: build
	$(BUILD_DIR)/src/attngeom demo --out demo-out

clean:
	rm -rf $(BUILD_DIR)
