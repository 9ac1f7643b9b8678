#!/usr/bin/env bash
# Run ON the GPU machine, from the repository root, after testbed/gpu/prepare.sh staged .gpu/ here.
# What a call costs on a native vGPU served in the program's own process (VGPU_LIBCUDA_SERVING=in-process: vgpu's
# Java runtime in a JVM inside the program, one JNI call a request) against served by the launcher over its socket,
# both against plain CUDA, and in process with direct driver calls (VGPU_LIBCUDA_DIRECT=on, "direct" below): builds
# vgpu's libcuda.so.1 and the programs (as cuda-programs.sh does), then
#   1. serving_floor under vgpu run on the native backend: each way's microseconds per synchronize round trip,
#      4-byte memset round trip and asynchronous memset, and the ratio in-process/socket (one run, both ways);
#   2. latency_bench (an empty kernel's launch, launch + synchronize, a 4 KiB copy, 256 MiB pinned copies) plainly,
#      through vgpu run over the socket, in process and direct, alternately, ROUNDS times (default 3), and the medians
#      with the ratios to plain CUDA (the goal: launch_us, launch_sync_us and copy_4k_us <= 1.05);
#   3. the PyTorch training script (rcuda-runtime/vgpu-libcuda/tests/programs/torch_training.py) plainly, over the
#      socket, in process and direct, alternately, TORCH_ROUNDS times (default 2; 0 skips it): its losses compared line by line
#      with plain PyTorch's, and each model's milliseconds per step after the first 50 with the ratios to plain, and the
#      median ratio of each way over the rounds (the goal: <= 1.05 on a native vGPU, direct); TORCH_WAYS picks the ways
#      (default "socket in-process direct"); then one direct run with VGPU_LIBCUDA_REPORT, and the entry points that took
#      the most time there, beside the same entry points in a plain run through the library outside vgpu run (every
#      call passed to the driver, timed by the same report).
# Logs in $OUT (default .gpu/out): in-process-costs.log (what is printed), in-process-costs.err (vgpu's own lines).
# Java: $JAVA when set, else the runtime in .gpu/jre.tar.xz unpacked to /tmp/jre.
set -uo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$top"
out=${OUT:-$top/.gpu/out}
mkdir -p "$out"
log=$out/in-process-costs.log
errors=$out/in-process-costs.err
: >"$errors"
script_name=in-process-costs
source "$top/testbed/gpu/libcuda-build.sh"
# vgpu_run WAY COMMAND...: COMMAND through vgpu run on the native backend, its calls served WAY's way: socket, in-process,
# or direct (in process, with VGPU_LIBCUDA_DIRECT=on: launches, copies and synchronizations to the driver itself)
vgpu_run() {
    local way=$1 serving=$1 direct=off
    shift
    if [ "$way" = direct ]; then
        serving=in-process direct=on
    fi
    env "${job_environment[@]}" VGPU_LIBCUDA_SERVING="$serving" VGPU_LIBCUDA_DIRECT="$direct" timeout 300 "$JAVA" \
        --enable-native-access=ALL-UNNAMED -cp '.gpu/lib/*' org.vgpu.cli.Vgpu run --local-backend native -- "$@"
}

failed=0
{
    echo "# serving_floor on a native vGPU (GPU 0): us per call, the launcher's socket against in process"
    vgpu_run socket "$top/$lib/build/programs/serving_floor" 20000 2>>"$errors" || failed=1

    source "$top/testbed/gpu/latency-ratios.sh"
    for round in $(seq 1 "${ROUNDS:-3}"); do
        "$lib/build/programs/latency_bench" >"$work/bench.plain.$round" || failed=1
        vgpu_run socket "$top/$lib/build/programs/latency_bench" >"$work/bench.socket.$round" 2>>"$errors" || failed=1
        vgpu_run in-process "$top/$lib/build/programs/latency_bench" >"$work/bench.in-process.$round" 2>>"$errors" \
            || failed=1
        vgpu_run direct "$top/$lib/build/programs/latency_bench" >"$work/bench.direct.$round" 2>>"$errors" || failed=1
    done
    echo "# latency_bench plainly and through vgpu run over the launcher's socket (a native vGPU on GPU 0), medians"
    latency_ratios "$work/bench.plain" "$work/bench.socket"
    echo "# latency_bench plainly and through vgpu run in the program's process (a native vGPU on GPU 0), medians"
    latency_ratios "$work/bench.plain" "$work/bench.in-process"
    echo "# latency_bench plainly and in process with direct calls (VGPU_LIBCUDA_DIRECT=on), medians"
    latency_ratios "$work/bench.plain" "$work/bench.direct"
    for way in in-process direct; do
        echo "# the goal, $way: launch_us, launch_sync_us and copy_4k_us ratio <= 1.05"
        latency_ratios "$work/bench.plain" "$work/bench.$way" \
            | awk '$1 ~ /^(launch_us|launch_sync_us|copy_4k_us)$/ {print "goal", $1, $7, ($7 <= 1.05 ? "met" : "NOT met")}'
    done

    torch_script=$top/$lib/tests/programs/torch_training.py
    torch_ways=${TORCH_WAYS:-socket in-process direct}
    for round in $(seq 1 "${TORCH_ROUNDS:-2}"); do
        timeout 300 python3 "$torch_script" >"$work/torch.plain.$round" 2>"$work/torch.plain.$round.err" || failed=1
        for serving in $torch_ways; do
            vgpu_run "$serving" python3 "$torch_script" >"$work/torch.$serving.$round" 2>"$work/torch.$serving.$round.err" \
                || failed=1
            if cmp -s "$work/torch.plain.$round" "$work/torch.$serving.$round"; then
                echo "torch_training round $round $serving: losses equal to plain PyTorch's"
            else
                failed=1
                echo "torch_training round $round $serving: DIFFERENT from plain PyTorch's"
                diff "$work/torch.plain.$round" "$work/torch.$serving.$round" | head -n 20
                grep -v '^timing:' "$work/torch.$serving.$round.err" | tail -n 20
            fi
        done
    done
    if [ "${TORCH_ROUNDS:-2}" -gt 0 ]; then
        echo "# torch_training, ms per step after the first 50 (each round: plain, then $torch_ways; each way's ratio to" \
            "plain in brackets), and the median of each way's ratios over the rounds"
        # ms_per_step WAY MODEL ROUND: that way's figure for the model in that round
        ms_per_step() { sed -n "s/^timing: $2 .*, \([0-9.]*\) ms per step.*/\1/p" "$work/torch.$1.$3.err"; }
        for model in mlp cnn; do
            for round in $(seq 1 "${TORCH_ROUNDS:-2}"); do
                plain=$(ms_per_step plain "$model" "$round") line="torch $model round $round plain $plain"
                for way in $torch_ways; do
                    figure=$(ms_per_step "$way" "$model" "$round")
                    line="$line $way $figure ($(awk -v a="$figure" -v b="$plain" 'BEGIN {
                        if (a == "" || b == "") print "missing"; else printf "%.3f", a / b }'))"
                done
                echo "$line"
            done | tee "$work/torch.$model.rounds"
            for way in $torch_ways; do
                sed -n "s/.* $way [0-9.]* (\([0-9.]*\)).*/\1/p" "$work/torch.$model.rounds" | sort -g \
                    | awk -v m="$model" -v w="$way" '{v[NR] = $1} END { if (NR == 0) exit
                        median = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                        printf "torch %s %s median ratio over %d rounds %.3f%s\n", m, w, NR, median,
                            (w == "direct" ? (median <= 1.05 ? " goal met" : " goal NOT met") : "") }'
            done
        done
    fi
    if [ "${TORCH_ROUNDS:-2}" -gt 0 ]; then
        # where a direct step's time goes in vgpu: the report's microseconds per entry point, the largest first, beside
        # the same entry point's in a plain run through the library outside vgpu run (every call passed to the driver)
        vgpu_run direct env VGPU_LIBCUDA_REPORT="$work/torch-report.%p" python3 "$torch_script" >/dev/null 2>&1 || failed=1
        LD_LIBRARY_PATH="$top/$lib/build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" VGPU_LIBCUDA_REPORT="$work/torch-plain-report.%p" \
            timeout 300 python3 "$torch_script" >/dev/null 2>&1 || failed=1
        echo "# torch_training direct, the entry points that took the most time: us in all, calls, us a call, calls made" \
            "to the driver directly, the median call's us; then plainly (the library passing every call to the driver): us" \
            "in all, calls, us a call, the median call's us"
        cat "$work"/torch-plain-report.* 2>/dev/null | awk -F '\t' 'NF >= 6 {print $1, $4, $2, $6}' >"$work/torch-plain-figures"
        cat "$work"/torch-report.* 2>/dev/null \
            | awk -F '\t' 'NF >= 6 && $4 > 0 {printf "%s %.0f %d %.2f %d %.2f\n", $1, $4, $2, $4 / $2, $5, $6}' \
            | sort -k2 -g -r | head -n 10 \
            | awk -v plain="$work/torch-plain-figures" 'BEGIN { while ((getline line < plain) > 0) { split(line, f, " ");
                  us[f[1]] = f[2]; calls[f[1]] = f[3]; median[f[1]] = f[4] } }
                { printf "%s | plain %.0f %d %.2f %.2f\n", $0, us[$1], calls[$1], (calls[$1] > 0 ? us[$1] / calls[$1] : 0),
                  median[$1] }'
    fi
    exit "$failed" # the group runs in a subshell of the pipe: its status carries the failures out
} 2>&1 | tee "$log"
failed=${PIPESTATUS[0]}
grep -h "vgpu libcuda" "$errors" | sort | uniq -c | head -n 20
exit "$failed"
