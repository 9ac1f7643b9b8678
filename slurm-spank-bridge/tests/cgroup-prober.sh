# Probers for the cgroup tests (sourced): a long-lived process in a cgroup answers each probe (a
# device file to open) on a FIFO pair with "opened" or the open's error text; the caller's $tmp
# holds the FIFOs, and prober_stop_all ends them all (call it before removing the cgroups).
prober_pids=()

# prober_start NAME CGROUP_DIR: starts prober NAME inside CGROUP_DIR and waits until it is there.
prober_start() {
    local name=$1 cg=$2 pid
    mkfifo "$tmp/$name.ask" "$tmp/$name.answer"
    (
        echo "$BASHPID" >"$cg/cgroup.procs"
        exec 4<>"$tmp/$name.ask" 5<>"$tmp/$name.answer"
        while read -r file <&4; do
            if out=$( (exec 3<"$file") 2>&1); then echo "opened" >&5; else echo "${out##*: }" >&5; fi
        done
    ) &
    pid=$!
    prober_pids+=("$pid")
    for _ in $(seq 50); do
        grep -qx "$pid" "$cg/cgroup.procs" && break
        sleep 0.1
    done
    grep -qx "$pid" "$cg/cgroup.procs" || { echo "the probe process $pid is not in $cg" >&2; return 1; }
    eval "prober_pid_$name=$pid"
}

# probe NAME FILE: what opening FILE inside prober NAME's cgroup gives.
probe() {
    local answer
    echo "$2" >"$tmp/$1.ask"
    read -r answer <"$tmp/$1.answer"
    echo "$answer"
}

prober_stop_all() {
    local pid
    for pid in "${prober_pids[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    prober_pids=()
}
