#!/usr/bin/env bash
# Scenario (testbed started with VGPU_SPANK_PLUGIN, VGPU_TESTBED_MEMORY=yes and VGPU_TESTBED_CGROUPS=yes or v2: each
# job confined to its --mem by ConstrainRAMSpace=yes on cgroup v1, or on Slurm's cgroup/v2 plugin, e.g. under
# testbed/slurm/in-uml.sh): what a lending holder's memory cgroup holds while its worker serves a large buffer. For
# each size in VGPU_TESTBED_HOLDER_BUFFERS (MiB, default "1 256"), a vgpu:3 job on 1 local + 2 borrowed GPUs runs a
# program under `vgpu run -- java` that allocates that many MiB on each borrowed vGPU, copies a pattern there and
# back through the remote copy path, checks it and holds the memory; the scenario then reads each holder's cgroup
# (its limit; its peak, v1's `memory.max_usage_in_bytes`, v2's `memory.peak`; how often it reached the limit, v1's
# `failcnt`, v2's `max` of `memory.events`; v1's rss and cache of `memory.stat`, v2's anon and file) and its
# worker's peak resident size (VmHWM) and heap limit (jcmd). The worker's emulated GPU memory is host memory (the
# CPU emulation allocates each device allocation off the heap), so the figures count the buffer once on top of the
# worker's own use. Every size must come through with the holders' limit intact; the figures go to
# out/holder-memory.txt.
set -euo pipefail
source "$(dirname "$0")/common.sh"

case ${VGPU_TESTBED_CGROUPS:-no} in yes | v2) ;; *) false ;; esac && [ "${VGPU_TESTBED_MEMORY:-no}" = yes ] \
    || die "holder-memory needs a testbed started with VGPU_TESTBED_CGROUPS=yes (or v2) and VGPU_TESTBED_MEMORY=yes"
read -r -a sizes <<<"${VGPU_TESTBED_HOLDER_BUFFERS:-1 256}"
FILL_JOBS=()
job=
trap 'cancel_jobs "${FILL_JOBS[@]}" ${job:+"$job"}; stop_tracker' EXIT
# Holders' workers start in seconds on a machine of its own, in minutes under User-Mode Linux (in-uml.sh): the
# tracker waits for them that long before giving the assembly up.
start_tracker_with --holder-timeout 300
"$VGPU" hook pause --config "$TESTBED_DIR/etc/vgpu.conf"
fill_leaving_one_idle_gpu

jdk=${JAVA_HOME:+$JAVA_HOME/bin/}
programs=$TESTBED_DIR/out/holder-memory
rm -rf "$programs" && mkdir -p "$programs"
cat >"$programs/BigCopy.java" <<'JAVA'
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import org.vgpu.api.VirtualGpus;
import org.vgpu.runtime.api.VirtualGpu;

/** BigCopy MIB SECONDS VGPU...: MIB MiB to each VGPU and back, checked; then holds them SECONDS. */
public class BigCopy {
    public static void main(String[] args) throws InterruptedException {
        long bytes = Long.parseLong(args[0]) << 20;
        try (VirtualGpus gpus = VirtualGpus.fromEnvironment(); Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(bytes, 64);
            for (int a = 2; a < args.length; a++) {
                int k = Integer.parseInt(args[a]);
                VirtualGpu gpu = gpus.gpu(k);
                for (long i = 0; i < bytes; i += 8) {
                    host.set(ValueLayout.JAVA_LONG, i, (i + k) * 0x9E3779B97F4A7C15L);
                }
                long device = gpu.memAlloc(bytes);
                gpu.memcpyHtoD(device, host, bytes);
                host.fill((byte) 0);
                gpu.memcpyDtoH(host, device, bytes);
                long wrong = -1;
                for (long i = 0; i < bytes && wrong < 0; i += 8) {
                    if (host.get(ValueLayout.JAVA_LONG, i) != (i + k) * 0x9E3779B97F4A7C15L) {
                        wrong = i;
                    }
                }
                System.out.println("vgpu " + k + ": " + args[0] + " MiB there and back, "
                        + (wrong < 0 ? "unchanged" : "WRONG at byte " + wrong));
            }
            System.out.println("holding " + args[1] + " s");
            System.out.flush();
            Thread.sleep(Long.parseLong(args[1]) * 1000);
        }
    }
}
JAVA
"${jdk}javac" -cp "$REPO_ROOT/job-wrapper/target/vgpu.jar" -d "$programs" "$programs/BigCopy.java" \
    || die "BigCopy does not compile against vgpu.jar"

# holder_figures HOLDER: one line of the holder's memory cgroup and its worker, read while it holds the buffer.
holder_figures() {
    local holder=$1 cgroup pid limit peak failcnt rss cache hwm heap at_limit=failcnt
    if [ "$VGPU_TESTBED_CGROUPS" = v2 ]; then
        # cgroup/v2 without systemd: system.slice/n1_slurmstepd.scope/job_N, one hierarchy for every controller
        cgroup=$(find /sys/fs/cgroup/system.slice/*slurmstepd.scope/ -maxdepth 1 -name "job_$holder" 2>/dev/null | head -n 1)
        [ -n "$cgroup" ] && [ -r "$cgroup/memory.peak" ] || die "holder $holder has no memory cgroup with memory.peak" \
            "(is ConstrainRAMSpace on, the memory controller enabled, the kernel 5.19 or later?)"
        limit=$(($(cat "$cgroup/memory.max") >> 20))
        peak=$(($(cat "$cgroup/memory.peak") >> 20))
        failcnt=$(sed -n 's/^max //p' "$cgroup/memory.events") at_limit='memory.events max'
        rss=$(($(sed -n 's/^anon //p' "$cgroup/memory.stat") >> 20))
        cache=$(($(sed -n 's/^file //p' "$cgroup/memory.stat") >> 20))
    else
        cgroup=$(find /sys/fs/cgroup/memory/slurm_*/uid_*/ -maxdepth 1 -name "job_$holder" 2>/dev/null | head -n 1)
        [ -n "$cgroup" ] || die "holder $holder has no memory cgroup (is ConstrainRAMSpace on?)"
        limit=$(($(cat "$cgroup/memory.limit_in_bytes") >> 20))
        peak=$(($(cat "$cgroup/memory.max_usage_in_bytes") >> 20))
        failcnt=$(cat "$cgroup/memory.failcnt")
        rss=$(($(sed -n 's/^total_rss //p' "$cgroup/memory.stat") >> 20))
        cache=$(($(sed -n 's/^total_cache //p' "$cgroup/memory.stat") >> 20))
    fi
    pid=$(pgrep -f -- "--worker-id [^ ]*-holder-$holder( |$)" | head -n 1 || true)
    hwm=$( [ -n "$pid" ] && sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pid/status" || echo 0)
    heap=$( [ -n "$pid" ] && "${jdk}jcmd" "$pid" VM.flags 2>/dev/null | grep -o 'MaxHeapSize=[0-9]*' | head -n 1 | cut -d = -f 2 || true)
    printf 'holder %s on %s: limit %d MiB, cgroup peak %d MiB (%s %s), now rss %d MiB + cache %d MiB;' \
        "$holder" "$(job_field "$holder" NodeList)" "$limit" "$peak" "$at_limit" "$failcnt" "$rss" "$cache"
    printf ' worker VmHWM %d MiB, MaxHeapSize %s MiB\n' "$((hwm >> 10))" "$(( ${heap:-0} >> 20 ))"
}

figures=$TESTBED_DIR/out/holder-memory.txt
: >"$figures"
for mib in "${sizes[@]}"; do
    run="$VGPU run --local-backend $TESTBED_GPUS -- ${jdk}java -cp $programs BigCopy $mib 15 1 2"
    # The job's own JVM holds the buffer once, and its share of the node's memory is what the filler leaves.
    job=$(submit --gres=vgpu:3 --mem=$((TESTBED_REAL_MEMORY_MIB / 2))M -J holder-memory \
        --wrap "$(printf '%s\n' 'echo "VGPU_ASSEMBLY=$VGPU_ASSEMBLY"' "$run; echo \"program status=\$?\"")")
    # The waits are long enough for User-Mode Linux (in-uml.sh), where the tracker's holders and their workers' JVMs
    # take minutes to start; elsewhere they end as soon as the state is reached.
    expect_state "$job" RUNNING 600
    output=$TESTBED_DIR/out/$job.out
    holding() { grep -q '^holding ' "$output"; }
    holding_or_ended() { holding || job_has_ended "$job"; }
    mapfile -t holders < <(holders_of "$job")
    [ "${#holders[@]}" -eq 2 ] || die "job $job has ${#holders[@]} holders, expected 2: $(cat "$output")"
    wait_until 480 "job $job holds $mib MiB on each borrowed vGPU" holding_or_ended || true
    holding || die "job $job did not copy $mib MiB through its holders (holders' states:" \
        "$(for holder in "${holders[@]}"; do echo "$holder $(job_field "$holder" JobState)"; done | paste -sd ' ' -)):" \
        "$(grep -m 1 -i 'exception' "$output")"
    for holder in "${holders[@]}"; do
        line="$mib MiB: $(holder_figures "$holder")"
        say "$line"
        echo "$line" >>"$figures"
    done
    expect_state "$job" COMPLETED 240
    for k in 1 2; do
        grep -qx "vgpu $k: $mib MiB there and back, unchanged" "$output" || die "vGPU $k's $mib MiB did not come back: $(cat "$output")"
    done
    grep -qx 'program status=0' "$output" || die "the program of job $job failed: $(cat "$output")"
    wait_until 90 "job $job's holders are gone" no_holders_of "$job" || die "holders of job $job outlived it"
    for holder in "${holders[@]}"; do
        [ "$(job_field "$holder" JobState)" != OUT_OF_MEMORY ] || die "holder $holder ran out of memory with $mib MiB"
    done
    job=
done
pass "holder-memory: holders served $(printf '%s MiB, ' "${sizes[@]}")each within their --mem; figures:" \
    "$(tr '\n' '|' <"$figures")"
