# Thin wrapper over CMake. `make demo` and `make test` are the README's quick start.
BUILD ?= build
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc)

.PHONY: all deps configure build demo test clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/build.ninja: CMakeLists.txt
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

configure: $(BUILD)/build.ninja

build: deps configure
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	$(BUILD)/bin/precis inspect examples/tiny_convnet.onnx
	$(BUILD)/bin/precis compile examples/tiny_convnet.onnx -o $(BUILD)/tiny_convnet.plan --shape image=1x3x32x32
	$(BUILD)/bin/precis run $(BUILD)/tiny_convnet.plan --random --seed 1 --output-dir $(BUILD)/demo-output
	@for p in fp16 bf16; do \
	  echo; \
	  $(BUILD)/bin/precis compile examples/tiny_convnet.onnx -o $(BUILD)/tiny_convnet.$$p.plan --shape image=1x3x32x32 \
	    --precision $$p --report $(BUILD)/tiny_convnet.$$p.report.json && \
	  $(BUILD)/bin/precis run $(BUILD)/tiny_convnet.$$p.plan --random --seed 1 --compare $(BUILD)/demo-output || exit 1; \
	done

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD)
