# The two commands a user needs: `make test` and (with the analysis issue) `make demo`.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)

.PHONY: all bootstrap build test clean

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

clean:
	rm -rf $(BUILD_DIR)
