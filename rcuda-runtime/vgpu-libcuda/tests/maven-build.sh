#!/bin/sh
# Called by `mvn verify` (rcuda-runtime/vgpu-libcuda/pom.xml): checks the library's C with cppcheck,
# unit-tests it under sanitizers, builds libcuda.so.1 and, where nvcc is, the test programs, and runs
# them without a driver. Skips, saying why, on a machine without a C toolchain, python3 or the CUDA
# toolkit; CI (CI=true) has them all and fails without them.
set -eu
cd "$(dirname "$0")/.."
missing=""
for tool in make cc python3; do
	command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
# the toolkit: CUDA_HOME, else the one whose nvcc is on PATH (nvcc reports its own home), else /usr/local/cuda
if [ -z "${CUDA_HOME:-}" ]; then
	if command -v nvcc >/dev/null 2>&1; then
		CUDA_HOME=$(nvcc --dryrun -x cu -c /dev/null -o /dev/null 2>&1 | sed -n 's/^#\$ TOP=\(.*\)\/bin\/\.\.$/\1/p' | head -n 1)
	fi
	CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
fi
[ -r "$CUDA_HOME/include/cudaTypedefs.h" ] || missing="$missing CUDA-toolkit-headers($CUDA_HOME)"
if [ -n "$missing" ]; then
	if [ "${CI:-}" = true ]; then
		echo "vgpu-libcuda: missing on CI:$missing" >&2
		exit 1
	fi
	echo "vgpu-libcuda: SKIPPED: missing here:$missing"
	exit 0
fi
export CUDA_HOME
if command -v cppcheck >/dev/null 2>&1 || [ "${CI:-}" = true ]; then
	make -s check-static
else
	echo "vgpu-libcuda: static check SKIPPED: no cppcheck here (Debian: apt-get install cppcheck)"
fi
make -s test
make -s all
echo "vgpu-libcuda: built build/libcuda.so.1"
if [ -x "$CUDA_HOME/bin/nvcc" ]; then
	make -s programs
	if [ -e /usr/lib/x86_64-linux-gnu/libcuda.so.1 ] || [ -e /usr/lib64/libcuda.so.1 ]; then
		echo "vgpu-libcuda: programs built; this machine has a CUDA driver, so they run in testbed/gpu, not here"
	else
		sh tests/programs_without_driver.sh
	fi
else
	echo "vgpu-libcuda: test programs SKIPPED: no nvcc in $CUDA_HOME/bin"
fi
