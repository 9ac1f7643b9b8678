#!/bin/sh
# The test programs, built as users build them, run with vgpu's libcuda.so.1 on a machine without a
# CUDA driver: each must fail with vgpu's message naming the missing driver (not crash), and the
# report must show how the program reached the driver (cudart: every entry point through
# cuGetProcAddress, then an export table; -lcuda: the exported symbols).
set -eu
cd "$(dirname "$0")/.."
build=build
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
fail() {
	echo "FAIL: $*" >&2
	failed=1
}
run() { # name: runs build/programs/name, leaves its stderr and report in $work
	status=0
	LD_LIBRARY_PATH="$build" VGPU_LIBCUDA_REPORT="$work/$1.report" "$build/programs/$1" \
		>"$work/$1.out" 2>"$work/$1.err" || status=$?
	if [ "$status" -eq 0 ] || [ "$status" -gt 128 ]; then
		fail "$1 exited $status without a driver (expected a plain failure)"
	fi
	grep -q "^vgpu libcuda: .*no CUDA driver to pass it to" "$work/$1.err" || fail "$1: no vgpu message on stderr: $(cat "$work/$1.err")"
	[ -s "$work/$1.report" ] || fail "$1: no report written"
}
for program in runtime_tour runtime_tour_shared launch_tour; do
	run "$program"
	lookups=$(awk -F '\t' '$1 == "cuGetProcAddress" {print $2}' "$work/$program.report")
	[ "${lookups:-0}" -ge 300 ] || fail "$program: cudart looked up ${lookups:-0} entry points, expected hundreds"
	grep -q "^export-table [0-9a-f-]*	1	refused" "$work/$program.report" || fail "$program: no export table in the report"
done
run driver_tour
grep -q "^cuInit	1	" "$work/driver_tour.report" || fail "driver_tour: cuInit not counted"
if [ "$failed" -ne 0 ]; then
	exit 1
fi
echo "vgpu-libcuda: programs without a driver: runtime_tour (static and shared cudart), launch_tour and driver_tour fail as expected, reports written"
