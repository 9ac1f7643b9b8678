#!/bin/sh
# Called by `mvn verify` (slurm-spank-bridge/pom.xml): checks the plugin's C code with cppcheck,
# unit-tests it, and builds vgpu_spank.so where Slurm's headers are installed. Skips, saying why,
# on machines without a C toolchain (and the static check on a developer's machine without
# cppcheck; CI, CI=true, installs it and fails without it); a failing check, build or test fails
# the Maven build.
set -eu
cd "$(dirname "$0")/.."
for tool in make cc; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "slurm-spank-bridge: SKIPPED: no $tool here (Debian: apt-get install build-essential)"
		exit 0
	fi
done
if command -v cppcheck >/dev/null 2>&1 || [ "${CI:-}" = true ]; then
	make -s check-static
else
	echo "slurm-spank-bridge: static check SKIPPED: no cppcheck here (Debian: apt-get install cppcheck)"
fi
make -s test
if [ -r "${SLURM_INCLUDE:-/usr/include}/slurm/spank.h" ]; then
	make -s all
	echo "slurm-spank-bridge: built vgpu_spank.so"
else
	echo "slurm-spank-bridge: vgpu_spank.so NOT built: no slurm/spank.h (Debian: apt-get install libslurm-dev)"
fi
