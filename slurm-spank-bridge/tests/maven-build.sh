#!/bin/sh
# Called by `mvn verify` (slurm-spank-bridge/pom.xml): unit-tests the plugin's C code,
# and builds vgpu_spank.so where Slurm's headers are installed. Skips, saying why,
# on machines without a C toolchain; a failing build or test fails the Maven build.
set -eu
cd "$(dirname "$0")/.."
for tool in make cc; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "slurm-spank-bridge: SKIPPED: no $tool here (Debian: apt-get install build-essential)"
		exit 0
	fi
done
make -s test
if [ -r "${SLURM_INCLUDE:-/usr/include}/slurm/spank.h" ]; then
	make -s all
	echo "slurm-spank-bridge: built vgpu_spank.so"
else
	echo "slurm-spank-bridge: vgpu_spank.so NOT built: no slurm/spank.h (Debian: apt-get install libslurm-dev)"
fi
