# Sourced by the *_build.sh scripts: CPU_LIBS, the link line of the CPU reference kernels the
# emulated CUDA kernels are compared with. They come from the CMake build in $BUILD (its static
# runtime libraries, built by `make build` before ctest runs these checks), so the emulation checks
# compile only the CUDA kernels and their harness, not a second copy of the CPU runtime.
for lib in precis_cpu precis_kernels precis_exec precis_plan precis_base; do
  if [ ! -f "$BUILD/lib$lib.a" ]; then
    echo "emulation: $BUILD/lib$lib.a not found: build the project first (make build, or BUILD=<build dir>)" >&2
    exit 1
  fi
done
CPU_LIBS="-Wl,--start-group $BUILD/libprecis_cpu.a $BUILD/libprecis_kernels.a $BUILD/libprecis_exec.a $BUILD/libprecis_plan.a $BUILD/libprecis_base.a -Wl,--end-group -ldnnl -lgomp -lpthread"
