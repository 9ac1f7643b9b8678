# Probers for the cgroup tests (sourced; testbed/gpu/cgroup-v2-grant.sh too): a long-lived process
# in a cgroup answers each probe, one line, with one line on a FIFO pair; by default it opens the
# device file named and answers "opened" or the open's error text. The caller's $tmp holds the FIFOs,
# and prober_stop_all ends them all (call it before removing the cgroups).
prober_pids=()

# prober_start NAME CGROUP_DIR [COMMAND...]: starts prober NAME inside CGROUP_DIR (COMMAND, reading
# probes on stdin and answering on stdout, instead of the device opener) and waits until it is there.
prober_start() {
    local name=$1 cg=$2 pid
    shift 2
    mkfifo "$tmp/$name.ask" "$tmp/$name.answer"
    (
        echo "$BASHPID" >"$cg/cgroup.procs"
        # read and write ends both, so that neither side's open waits and no probe's close ends it
        exec 4<>"$tmp/$name.ask" 5<>"$tmp/$name.answer"
        [ "$#" -eq 0 ] || exec "$@" <&4 >&5
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

# probe NAME LINE: prober NAME's answer to LINE (by default a device file to open). Both FIFOs are
# opened for reading and writing, so a prober that has died makes this answer so within 30 s
# instead of hanging.
probe() {
    local answer ask reply
    exec {ask}<>"$tmp/$1.ask" {reply}<>"$tmp/$1.answer"
    echo "$2" >&"$ask"
    read -r -t 30 answer <&"$reply" || answer="(no answer within 30 s: prober $1 has ended)"
    exec {ask}>&- {reply}>&-
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
