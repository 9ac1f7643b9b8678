# Shared by the testbed scripts (sourced, not run): where the testbed lives, its ports, and
# bounded wrappers around Slurm's client commands.
# shellcheck shell=bash disable=SC2034 # settings here are used by the scripts that source this file

# Which Slurm (VGPU_TESTBED_SLURM): with 24.11 the script that sourced this file continues inside Debian 13's root.
# shellcheck source=testbed/slurm/slurm-root.sh
source "$(dirname "${BASH_SOURCE[0]}")/slurm-root.sh"

TESTBED_DIR=${VGPU_TESTBED_DIR:-/tmp/vgpu-testbed}
# slurmctld listens on the base port, node nK's slurmd on base+K. Not Slurm's defaults (6817/6818),
# so the testbed never talks to, or collides with, another Slurm on the machine.
TESTBED_PORT_BASE=${VGPU_TESTBED_PORT_BASE:-17900}
# The nodes, each node's GPUs and what those are: 3 nodes of 4 emulated GPUs (fake device files for Slurm, the GPU
# work on the CPU) unless a script that brings real GPUs says otherwise (testbed/gpu/story-on-gpus.sh: 2 nodes of 1
# GPU, native: node nK owns /dev/nvidia(K-1), its workers and jobs drive it through the NVIDIA driver).
read -r -a TESTBED_NODES <<<"${VGPU_TESTBED_NODES:-n1 n2 n3}"
TESTBED_GPUS_PER_NODE=${VGPU_TESTBED_GPUS_PER_NODE:-4}
TESTBED_GPUS=${VGPU_TESTBED_GPUS:-emulated}
case $TESTBED_GPUS in
    emulated | native) ;;
    *) echo "testbed: VGPU_TESTBED_GPUS is emulated or native, not $TESTBED_GPUS" >&2; exit 2 ;;
esac
# More CPUs than the machine has (SlurmdParameters=config_overrides); user jobs may take all but one
# per GPU (MaxCPUsPerNode), which stay free for holder jobs.
TESTBED_CPUS_PER_NODE=8
TESTBED_VGPUS_PER_NODE=8
# Each node's RealMemory (the site configuration's real_memory), in MiB.
TESTBED_REAL_MEMORY_MIB=4096
# Where the testbed's Slurm lines come from (up.sh): whole (the rendered whole slurm.conf lines, gres.conf and
# plugstack.conf) or pieces (a site's own files that take vgpu's rendered pieces; scenario site-files).
TESTBED_SLURM_FILES=${VGPU_TESTBED_SLURM_FILES:-whole}
case $TESTBED_SLURM_FILES in
    whole | pieces) ;;
    *) echo "testbed: VGPU_TESTBED_SLURM_FILES is whole or pieces, not $TESTBED_SLURM_FILES" >&2; exit 2 ;;
esac
# Seconds any one Slurm client call may take: while slurmctld is down they would block for minutes.
SLURM_CALL_TIMEOUT=${VGPU_SLURM_CALL_TIMEOUT:-20}
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VGPU=${VGPU:-$REPO_ROOT/job-wrapper/bin/vgpu}

export SLURM_CONF=$TESTBED_DIR/etc/slurm.conf

# How Slurm writes a GRES of a job's TRES request (scontrol's TresPerNode, job_submit.lua's tres_per_node):
# gres:gpu:1 in 22.05, gres/gpu:1 in 24.11.
case $TESTBED_SLURM in
    22.05) TRES_GRES=gres: ;;
    *) TRES_GRES=gres/ ;;
esac

# lender_port NODE: where NODE's lender listens (base+50+K for node nK).
lender_port() {
    echo $((TESTBED_PORT_BASE + 50 + ${1#n}))
}

# line_request PORT REQUEST: sends one request line to the line server on 127.0.0.1:PORT (a lender's
# control socket, the tracker) and prints its reply: every line up to the first that starts with
# `ok` or `error`, which ends every reply of both. The server keeps the connection open, so reading
# stops there rather than at its idle timeout.
line_request() {
    timeout "$SLURM_CALL_TIMEOUT" bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf "%s\n" "$2" >&3 &&
        while IFS= read -r line <&3; do printf "%s\n" "$line"; case $line in ok* | error*) exit 0 ;; esac; done; exit 1' \
        line-request "$1" "$2"
}

# lender_request NODE REQUEST: sends one request line to NODE's lender (`open DEVICE`, `status`),
# signed with the testbed's site key as the lender requires of every request (README, "What the
# lender is for": HMAC-SHA256 of `vgpu-lender-control`, a newline, `REQUEST expires=SECONDS nonce=HEX`), and
# prints its reply.
lender_request() {
    local signed key_hex mac
    signed="$2 expires=$(($(date +%s) + 30)) nonce=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
    key_hex=$(base64 -d "$TESTBED_DIR/etc/site.key" | od -An -tx1 | tr -d ' \n')
    mac=$(printf 'vgpu-lender-control\n%s' "$signed" \
        | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$key_hex" -r | cut -d ' ' -f 1)
    line_request "$(lender_port "$1")" "$signed mac=$mac"
}

say() {
    echo "testbed: $*"
}

die() {
    echo "testbed: $*" >&2
    exit 1
}

# Runs one Slurm client command (sbatch, squeue, scontrol, sinfo, scancel) with a time limit.
slurm() {
    local status=0
    timeout "$SLURM_CALL_TIMEOUT" "$@" || status=$?
    if [ "$status" -eq 124 ]; then
        echo "testbed: '$*' did not answer within ${SLURM_CALL_TIMEOUT}s; is slurmctld up? (see $TESTBED_DIR/log)" >&2
    fi
    return "$status"
}

# wait_until SECONDS DESCRIPTION COMMAND...: polls COMMAND every half second until it succeeds;
# fails with DESCRIPTION after SECONDS.
wait_until() {
    local limit=$1 description=$2
    shift 2
    local deadline=$((SECONDS + limit))
    until "$@" >/dev/null 2>&1; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "testbed: timed out after ${limit}s waiting until $description" >&2
            return 1
        fi
        sleep 0.5
    done
}

# The value of KEY in `scontrol show job -d ID` (e.g. JobState, Reason).
job_field() {
    local job=$1 key=$2
    slurm scontrol show job -d "$job" | tr ' ' '\n' | sed -n "s/^$key=//p" | head -n 1
}

job_state_is() {
    [ "$(job_field "$1" JobState)" = "$2" ]
}

# submit SBATCH_ARGS...: submits a batch job whose output goes to $TESTBED_DIR/out/JOBID.out and
# prints its id. sbatch's messages (job_submit.lua's among them) go to $TESTBED_DIR/out/sbatch.err.
submit() {
    slurm sbatch --parsable -o "$TESTBED_DIR/out/%j.out" "$@" 2>>"$TESTBED_DIR/out/sbatch.err" | cut -d ';' -f 1
}

# expect_state JOB STATE SECONDS: waits until the job is in STATE; fails naming the state it is in,
# at once when the job has ended in another state.
expect_state() {
    local job=$1 state=$2 limit=$3
    wait_until "$limit" "job $job is $state" job_state_is_or_ended "$job" "$state" || true
    job_state_is "$job" "$state" \
        || die "job $job is $(job_field "$job" JobState) (reason $(job_field "$job" Reason)), expected $state"
}

job_state_is_or_ended() {
    job_state_is "$1" "$2" || job_has_ended "$1"
}

# cancel_jobs JOB...: a scenario's cleanup; waits (bounded) until their GPUs are free again.
cancel_jobs() {
    [ "$#" -gt 0 ] || return 0
    slurm scancel "$@" || true
    local job
    for job in "$@"; do
        wait_until 30 "job $job has ended" job_has_ended "$job" || say "warning: job $job has not ended"
    done
}

job_has_ended() {
    case "$(job_field "$1" JobState)" in
        PENDING | RUNNING | CONFIGURING | COMPLETING | SUSPENDED) return 1 ;;
        *) return 0 ;;
    esac
}

pass() {
    say "PASS $*"
}

# fill_leaving_one_idle_gpu [CPUS]: one job per node that takes all GPUs but one, and all CPUs user jobs
# may take but CPUS (default 1), for a job that gets the idle GPU; their ids go to FILL_JOBS.
fill_leaving_one_idle_gpu() {
    local node job left_cpus=${1:-1}
    FILL_JOBS=()
    for node in "${TESTBED_NODES[@]}"; do
        FILL_JOBS+=("$(submit --gres=gpu:$((TESTBED_GPUS_PER_NODE - 1)) -c $((TESTBED_CPUS_PER_NODE - TESTBED_GPUS_PER_NODE - left_cpus)) \
            -w "$node" -J "fill-$node" --wrap 'sleep 600')")
    done
    for job in "${FILL_JOBS[@]}"; do
        expect_state "$job" RUNNING 30
    done
}

# end_fill_beside NODE LENDER: cancels the filler (of fill_leaving_one_idle_gpu) of the node that is neither
# NODE nor LENDER, so that it can lend again, and prints that node's name.
end_fill_beside() {
    local fill fill_node
    for fill in "${FILL_JOBS[@]}"; do
        fill_node=$(job_field "$fill" NodeList)
        if [ "$fill_node" != "$1" ] && [ "$fill_node" != "$2" ]; then
            slurm scancel "$fill"
            echo "$fill_node"
        fi
    done
}

# capture_slurm_views DIR: what the tracker parses, as Slurm prints it now, and the version that printed it
# (slurm-version.txt). 24.11 also has `scontrol show node/job -d --json` (scontrol-show-node-d.json,
# scontrol-show-job-d.json), which 22.05 lacks.
capture_slurm_views() {
    local dir=$1
    mkdir -p "$dir"
    slurm scontrol --version >"$dir/slurm-version.txt"
    slurm scontrol show node -d >"$dir/scontrol-show-node-d.txt"
    slurm scontrol show job -d >"$dir/scontrol-show-job-d.txt"
    slurm squeue --json >"$dir/squeue.json"
    slurm sinfo --json >"$dir/sinfo.json"
    if [ "$TESTBED_SLURM" != 22.05 ]; then
        slurm scontrol show node -d --json >"$dir/scontrol-show-node-d.json"
        slurm scontrol show job -d --json >"$dir/scontrol-show-job-d.json"
    fi
}

# expect_gres_used NODE PREFIX: the node's GresUsed starts with PREFIX (e.g. gpu:3).
expect_gres_used() {
    local node=$1 prefix=$2 used
    used=$(slurm scontrol show node -d "$node" | tr ' ' '\n' | sed -n 's/^GresUsed=//p')
    [[ "$used" == "$prefix"* ]] || die "node $node has GresUsed=$used, expected $prefix..."
}

# The tracker's socket (the site configuration's `tracker`): base+99.
tracker_port() {
    echo $((TESTBED_PORT_BASE + 99))
}

# Where the tracker serves Prometheus' /metrics (the site configuration's [tracker] metrics): base+98.
metrics_port() {
    echo $((TESTBED_PORT_BASE + 98))
}

# scrape_metrics: prints the tracker's /metrics as Prometheus reads it; fails unless the answer is
# HTTP 200. Plain HTTP/1.0 through bash's /dev/tcp (the server then neither chunks nor keeps the
# connection), so a fresh Debian without curl runs it too.
scrape_metrics() {
    local response
    response=$(timeout "$SLURM_CALL_TIMEOUT" bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" &&
        printf "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" >&3 && cat <&3' scrape-metrics "$(metrics_port)") \
        || return 1
    [[ "$response" =~ ^HTTP/1\.[01]\ 200 ]] || return 1
    # The body: what follows the first empty line (headers end with CR LF).
    tr -d '\r' <<<"$response" | sed '1,/^$/d'
}

# start_tracker [CONFIG]: starts `vgpu tracker` (polling every second, ledger in the testbed's state
# directory, holder jobs' workers on the testbed's GPUs ($TESTBED_GPUS), their output in out/holder-JOB.out) in the background, its log in $TESTBED_DIR/log/tracker.log (appended, so a restart
# keeps the earlier run's lines), its pid in $TESTBED_DIR/run/tracker.pid; waits until it listens.
start_tracker() {
    start_tracker_with --config "${1:-$TESTBED_DIR/etc/vgpu.conf}"
}

# start_tracker_with OPTION...: start_tracker with more `vgpu tracker` options (the testbed's
# configuration unless a --config is among them).
start_tracker_with() {
    local log=$TESTBED_DIR/log/tracker.log before
    before=$(grep -c '^vgpu tracker listening' "$log" 2>/dev/null || true)
    [[ " $* " == *" --config "* ]] || set -- --config "$TESTBED_DIR/etc/vgpu.conf" "$@"
    "$VGPU" tracker "$@" --ledger "$TESTBED_DIR/state/tracker.ledger" --poll 1 --worker-backend "$TESTBED_GPUS" \
        --holder-output "$TESTBED_DIR/out/holder-%j.out" </dev/null >>"$log" 2>&1 &
    echo $! >"$TESTBED_DIR/run/tracker.pid"
    # Not the shell's job any more: a scenario that kills it on purpose gets no "Killed" line.
    disown
    # Long enough for User-Mode Linux on a busy machine (in-uml.sh), where its JVM alone may take a minute to start.
    wait_until 180 "the tracker listens" tracker_listening_more_than "${before:-0}" \
        || die "the tracker did not start: $(tail -n 5 "$log")"
}

tracker_listening_more_than() {
    [ "$(grep -c '^vgpu tracker listening' "$TESTBED_DIR/log/tracker.log")" -gt "$1" ]
}

# stop_tracker [SIGNAL]: stops the tracker (default TERM; KILL to crash it) and waits until it is gone.
stop_tracker() {
    local signal=${1:-TERM} pid
    [ -f "$TESTBED_DIR/run/tracker.pid" ] || return 0
    pid=$(cat "$TESTBED_DIR/run/tracker.pid")
    kill -"$signal" "$pid" 2>/dev/null || true
    wait_until 30 "tracker $pid has exited" process_gone "$pid" || die "tracker $pid did not exit on SIG$signal"
    rm -f "$TESTBED_DIR/run/tracker.pid"
}

process_gone() {
    ! kill -0 "$1" 2>/dev/null
}

# tracker_request LINE: sends one line to the tracker and prints its reply (all lines); prints what
# came, and succeeds, also when the tracker answered nothing.
tracker_request() {
    line_request "$(tracker_port)" "$1" || true
}

# holders_of JOB: the ids of the job's active holder jobs (lend partition, named vgpu-holder-JOB-v*).
holders_of() {
    slurm squeue -h -p vgpu-lend -t PENDING,RUNNING,CONFIGURING -o '%i %j' | awk -v prefix="vgpu-holder-$1-v" 'index($2, prefix) == 1 { print $1 }'
}

no_holders_of() {
    [ -z "$(holders_of "$1")" ]
}

# The batch script of a vgpu job: prints the assembly the SPANK bridge exported, then runs the check
# workloads on every vGPU with `vgpu run` (local GPUs on the testbed's GPUs: the CPU emulation where they are
# fake device files). Extra arguments go to `vgpu run` (e.g. --hold 20).
vgpu_job_script() {
    printf '%s\n' 'echo "VGPU_NODE=$VGPU_NODE"; echo "VGPU_ASSEMBLY=$VGPU_ASSEMBLY"' \
        'echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-<unset>}"; echo "VGPU_SOURCE=$VGPU_SOURCE"' \
        "exec $VGPU run --local-backend $TESTBED_GPUS $*"
}

# check_vgpu_job_output FILE NODE LOCAL REMOTE: the job ran on NODE with LOCAL local and REMOTE
# borrowed vGPUs (as the bridge exported them, CUDA_VISIBLE_DEVICES unset), and `vgpu run` passed its
# checks on all of them.
check_vgpu_job_output() {
    local output=$1 node=$2 local_count=$3 remote_count=$4 assembly visible
    [ -f "$output" ] || die "no job output $output"
    grep -qx "VGPU_NODE=$node" "$output" || die "the job's VGPU_NODE is not $node: $(cat "$output")"
    assembly=$(sed -n 's/^VGPU_ASSEMBLY=//p' "$output")
    [ "$(tr ',' '\n' <<<"$assembly" | grep -c '=local:')" -eq "$local_count" ] \
        || die "VGPU_ASSEMBLY=$assembly does not have $local_count local vGPU(s)"
    [ "$(tr ',' '\n' <<<"$assembly" | grep -c '=remote:')" -eq "$remote_count" ] \
        || die "VGPU_ASSEMBLY=$assembly does not have $remote_count remote vGPU(s)"
    # The bridge unsets it in vgpu jobs, so that CUDA enumerates every GPU of the node, also one
    # granted later (slurm-spank-bridge/README.md, "CUDA_VISIBLE_DEVICES of a vgpu job").
    visible=$(sed -n 's/^CUDA_VISIBLE_DEVICES=//p' "$output")
    [ "$visible" = "<unset>" ] || die "CUDA_VISIBLE_DEVICES=$visible in a vgpu job; the bridge leaves it unset"
    grep -Eq "^PASS: $((local_count + remote_count)) of $((local_count + remote_count)) vGPUs \($local_count local, $remote_count remote\)" "$output" \
        || die "vgpu run did not pass on all vGPUs; the job's output: $(cat "$output")"
}

# tracker_forgot JOB: the tracker's status names no live assembly of JOB.
tracker_forgot() {
    ! tracker_request status | grep -q "^assembly job=$1 "
}

# job_comment_mentions JOB TEXT: the job's Slurm comment contains TEXT.
job_comment_mentions() {
    slurm scontrol show job "$1" | grep -q "^ *Comment=.*$2"
}

# start_munged DIR: starts a munged of the testbed's own with a fresh key, its socket at
# DIR/sock/munge.socket and its pid in DIR/sock/munged.pid; fails when MUNGE is not installed or
# munged does not start. The caller stops it (kill the pid).
start_munged() {
    local dir=$1
    command -v munged >/dev/null && command -v unmunge >/dev/null && id munge >/dev/null 2>&1 || return 1
    mkdir -p "$dir"/{sock,key,lib}
    dd if=/dev/urandom of="$dir/key/munge.key" bs=1024 count=1 2>/dev/null
    chown -R munge:munge "$dir"/{sock,key,lib}
    # munged insists on a socket directory others may enter and a private key directory.
    chmod 755 "$dir" "$dir/sock"
    chmod 700 "$dir/key" "$dir/lib"
    chmod 400 "$dir/key/munge.key"
    su -s /bin/sh munge -c "munged --socket=$dir/sock/munge.socket --key-file=$dir/key/munge.key \
        --pid-file=$dir/sock/munged.pid --seed-file=$dir/lib/seed --log-file=$dir/lib/munged.log" || return 1
    wait_until 10 "munged has started" test -s "$dir/sock/munged.pid"
}

# remove_slurm_cgroups: the testbed nodes' cgroups that Slurm's cgroup plugins leave in every v1
# controller (slurm_n1...) or in the v2 hierarchy; a cgroup that still holds a process stays (rmdir refuses), so this never
# disturbs a running job. Fails when one is left.
remove_slurm_cgroups() {
    local node dir left=0
    for node in "${TESTBED_NODES[@]}"; do
        # v1: slurm_n1 in every controller; v2 (cgroup/v2 with IgnoreSystemd=yes): system.slice/n1_slurmstepd.scope
        for dir in /sys/fs/cgroup/*/slurm_"$node" /sys/fs/cgroup/system.slice/"$node"_slurmstepd.scope; do
            [ -d "$dir" ] || continue
            find "$dir" -depth -type d -exec rmdir {} \; 2>/dev/null || true
            [ ! -d "$dir" ] || left=1
        done
    done
    return "$left"
}

# migrate_home CONFIG JOB VGPU: `vgpu migrate JOB VGPU` right after a GPU of the job's node was freed: asked again
# while the tracker has not seen the freed GPU yet (it looks at Slurm every second here); fails unless it moved.
# Prints the migration's line.
migrate_home() {
    local config=$1 job=$2 vgpu=$3 moved
    for _ in $(seq 10); do
        if moved=$("$VGPU" migrate --config "$config" "$job" "$vgpu" 2>&1); then break; fi
        grep -q "has no free GPU" <<<"$moved" || die "vgpu migrate $job $vgpu failed: $moved"
        sleep 1
    done
    grep -q "^moved: " <<<"$moved" || die "vgpu migrate $job $vgpu did not move it: $moved"
    tail -n 1 <<<"$moved"
}

# ---- The SPANK bridge's scenarios (spank-bridge, constrain-devices): the bridge apart from the
# site's policy, and checks that all run and count.

# let_every_job_through FILE: a job_submit.lua that takes every job as submitted (vgpu jobs are not
# held, a two-node vgpu job is allowed), as if a tracker had released each at once. The scenario
# restores the testbed's own afterwards.
let_every_job_through() {
    cat >"$1" <<'LUA'
-- written by a testbed scenario of the SPANK bridge while it runs: every job as submitted
function slurm_job_submit(job_desc, part_list, submit_uid)
   return slurm.SUCCESS
end
function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
   return slurm.SUCCESS
end
LUA
}

# mark_slurmd_logs, then new_slurmd_log: what the testbed's slurmd logged since the mark (earlier
# scenarios of this testbed logged too, and only what comes after counts).
declare -A SLURMD_LOG_MARK
mark_slurmd_logs() {
    local log
    for log in "$TESTBED_DIR"/log/slurmd-n*.log; do
        SLURMD_LOG_MARK[$log]=$(wc -l <"$log")
    done
}
new_slurmd_log() {
    local log
    for log in "$TESTBED_DIR"/log/slurmd-n*.log; do
        tail -n "+$((${SLURMD_LOG_MARK[$log]:-0} + 1))" "$log"
    done
}

# check DESCRIPTION COMMAND...: PASS or FAIL with the description, counted in PASSED and FAILED;
# every check runs, and the scenario fails at its end if one failed.
PASSED=0
FAILED=0
ok() { PASSED=$((PASSED + 1)); echo "PASS $*"; }
not_ok() { FAILED=$((FAILED + 1)); echo "FAIL $*"; }
check() {
    local what=$1
    shift
    if "$@"; then ok "$what"; else not_ok "$what"; fi
}

# ---- The hook brings borrowed vGPUs home: the steps of scenario hook-home, which testbed/story.sh
# tells with what an admin sees between them.

# start_borrowing_job HOLD [NAME [SBATCH_OPTION...]]: fills every node to 1 idle GPU (FILL_JOBS), then
# submits a vgpu:3 job NAME (default hook-home, with the sbatch options given, e.g. an --export) whose
# `vgpu run --hold HOLD` checks its results on every vGPU, keeps them open HOLD seconds with its
# migration agent polling the tracker, and checks them again; waits until it runs on 1 local + 2
# borrowed GPUs and has passed its first check and begun to hold (a move home before that would land
# in the check, whose line then counts 2 local + 1 remote: the wait is for the job's own line, never a
# sleep). Sets BORROWER (the job), BORROWER_NODE and LENDER_HOLDERS (its 2 holder jobs).
start_borrowing_job() {
    local hold=$1 name=${2:-hook-home}
    shift $(($# < 2 ? $# : 2))
    fill_leaving_one_idle_gpu
    BORROWER=$(submit --gres=vgpu:3 -J "$name" "$@" --wrap "$(vgpu_job_script --hold "$hold")")
    expect_state "$BORROWER" RUNNING 60
    BORROWER_NODE=$(job_field "$BORROWER" NodeList)
    mapfile -t LENDER_HOLDERS < <(holders_of "$BORROWER")
    [ "${#LENDER_HOLDERS[@]}" -eq 2 ] || die "job $BORROWER has ${#LENDER_HOLDERS[@]} holders, expected 2"
    wait_until 180 "job $BORROWER has checked its vGPUs and holds them" \
        grep -q '^holding the vGPUs' "$TESTBED_DIR/out/$BORROWER.out" \
        || die "job $BORROWER does not hold its vGPUs: $(cat "$TESTBED_DIR/out/$BORROWER.out" 2>/dev/null)"
}

# free_borrower_node: cancels the fillers on the borrower's node (as if they had finished) and waits
# until the hook starts a migration. Sets RELEASE_TO_MIGRATION: seconds from the cancel to the
# tracker's log line, an upper bound (the log is polled every half second).
free_borrower_node() {
    local before fill freed_at=
    before=$(started_migrations)
    for fill in "${FILL_JOBS[@]}"; do
        if [ "$(job_field "$fill" NodeList)" = "$BORROWER_NODE" ]; then
            slurm scancel "$fill"
            freed_at=$(date +%s.%N)
        fi
    done
    [ -n "$freed_at" ] || die "no filler ran on $BORROWER_NODE"
    wait_until 30 "the hook starts a migration" migrations_started_more_than "$before" \
        || die "no migration: $(tail -n 20 "$TESTBED_DIR/log/tracker.log")"
    RELEASE_TO_MIGRATION=$(awk -v from="$freed_at" -v to="$(date +%s.%N)" 'BEGIN { printf "%.2f", to - from }')
}

started_migrations() {
    grep -Ec 'migration [0-9]+: vGPU .* submitted' "$TESTBED_DIR/log/tracker.log" || true
}

migrations_started_more_than() {
    [ "$(started_migrations)" -gt "$1" ]
}

# wait_borrower_home: waits until the tracker has every borrowed vGPU of the borrower (one per holder in
# LENDER_HOLDERS) home and the lenders' holders have ended.
wait_borrower_home() {
    local holder
    wait_until 90 "the borrowed vGPUs of job $BORROWER are home" borrower_home \
        || die "not home: $(tracker_request status | head -n 3); $(grep -E 'migration [0-9]+:' "$TESTBED_DIR/log/tracker.log" | tail -n 8)"
    for holder in "${LENDER_HOLDERS[@]}"; do
        wait_until 30 "lender holder $holder has ended" job_has_ended "$holder" || die "holder $holder still runs"
    done
}

borrower_home() {
    [ "$(tracker_request status | grep "^assembly job=$BORROWER " | grep -o "/home/" | wc -l)" -eq "${#LENDER_HOLDERS[@]}" ]
}

# check_borrower_migrations FILE: `vgpu report --format json`, written to FILE, lists a migration of
# the borrower for each of its lenders' holders; prints each, one JSON object a line.
check_borrower_migrations() {
    local report=$1
    "$VGPU" report --config "$TESTBED_DIR/etc/vgpu.conf" --format json >"$report"
    python3 - "$report" "$BORROWER" "${#LENDER_HOLDERS[@]}" <<'CHECK' || die "report: $(cat "$report")"
import json, sys
report = json.load(open(sys.argv[1]))
job = int(sys.argv[2])
moves = [m for m in report["migrations"] if m["job"] == job]
assert len(moves) == int(sys.argv[3]), moves
for m in moves:
    print(json.dumps(m))
CHECK
}

# finish_borrower: waits until the borrower has completed and checks its output: it ran on its node
# with 1 local and 2 borrowed vGPUs and passed its checks, before and after the hold.
finish_borrower() {
    expect_state "$BORROWER" COMPLETED 120
    check_vgpu_job_output "$TESTBED_DIR/out/$BORROWER.out" "$BORROWER_NODE" 1 2
}

# ---- The frame of a story (testbed/story.sh, README's first command; testbed/gpu/story-on-gpus.sh): root, a
# testbed directory of its own, Slurm and the SPANK bridge, the cluster and the tracker, and a teardown that runs
# on every end.

section() {
    printf '\n== %s ==\n' "$*"
}

indent() {
    sed 's/^/  /'
}

# The lines of a `vgpu report` table from the one starting with HEADING to the next empty line.
report_section() {
    sed -n "/^$1/,/^\$/p" | sed '/^$/d'
}

# story_begin NAME: refuses to run without root or where a testbed is up in TESTBED_DIR, and sets the teardown
# on every end of the story (Ctrl-C included). STORY_STARTED: $SECONDS at the start.
story_begin() {
    STORY_STARTED=$SECONDS
    [ "$(id -u)" -eq 0 ] || die "$1 needs root: it installs Slurm when missing and runs Slurm's daemons (sudo -E $0)"
    [ ! -e "$TESTBED_DIR" ] || die "$TESTBED_DIR exists: another story or testbed runs there; tear it down with" \
        "VGPU_TESTBED_DIR=$TESTBED_DIR $REPO_ROOT/testbed/slurm/down.sh, or choose another VGPU_TESTBED_DIR"
    trap story_tear_down EXIT
    trap 'exit 130' INT TERM
}

# Every job of the cluster first (their steps would outlive slurmd), then the tracker and the daemons
# (down.sh). Ctrl-C ends the story through here too, and a second one does not cut the teardown short.
story_tear_down() {
    local status=$?
    trap '' INT TERM
    section "Teardown"
    local jobs=()
    if [ -e "$SLURM_CONF" ] && timeout 5 scontrol ping >/dev/null 2>&1; then
        mapfile -t jobs < <(slurm squeue -h -o %i)
        cancel_jobs "${jobs[@]}"
    fi
    if [ "$status" -ne 0 ] && [ -d "$TESTBED_DIR/log" ]; then
        # down.sh removes the testbed's directory: the daemons' logs and the jobs' output stay for a look.
        rm -rf "$TESTBED_DIR.failed"
        mkdir -p "$TESTBED_DIR.failed"
        cp -r "$TESTBED_DIR/log" "$TESTBED_DIR/out" "$TESTBED_DIR.failed/" 2>/dev/null || true
        echo "  logs and job output kept in $TESTBED_DIR.failed"
    fi
    if "$REPO_ROOT/testbed/slurm/down.sh" >"$TESTBED_DIR.down.log" 2>&1; then
        echo "  cluster stopped, $TESTBED_DIR removed"
        rm -f "$TESTBED_DIR.down.log"
    else
        echo "  down.sh failed: $(cat "$TESTBED_DIR.down.log")"
    fi
    if [ "$status" -eq 0 ]; then
        printf '\nThe story ran in %d s.\n' $((SECONDS - STORY_STARTED))
    elif [ "$status" -eq 130 ]; then
        printf '\nThe story was interrupted after %d s.\n' $((SECONDS - STORY_STARTED))
    else
        printf '\nThe story FAILED (exit %d) after %d s; the error is above.\n' "$status" $((SECONDS - STORY_STARTED))
    fi
}

# story_slurm_and_bridge: Debian's Slurm (installed where missing) and the SPANK bridge, built as the user who ran
# sudo, so that the checkout's build files stay theirs. STORY_BRIDGE: the plugin.
story_slurm_and_bridge() {
    section "Slurm"
    "$REPO_ROOT/testbed/slurm/install-slurm.sh" | indent
    echo "  $(slurmctld -V) from Debian's packages"
    STORY_BRIDGE=$REPO_ROOT/slurm-spank-bridge/vgpu_spank.so
    if [ "$TESTBED_SLURM" != 22.05 ]; then
        # up.sh builds it against this Slurm's headers into the testbed's directory; a build here would leave the
        # checkout's plugin one that 22.05 does not load.
        echo "  SPANK plugin: up.sh builds it from $(dirname "$STORY_BRIDGE") against $(slurmctld -V)'s headers"
        return
    fi
    local make_as_user=()
    [ -z "${SUDO_USER:-}" ] || make_as_user=(setpriv --reuid="$SUDO_UID" --regid="$SUDO_GID" --init-groups)
    "${make_as_user[@]}" make -s -C "$REPO_ROOT/slurm-spank-bridge" all >/dev/null \
        || die "building the SPANK bridge failed (make -C slurm-spank-bridge all)"
    echo "  SPANK plugin $STORY_BRIDGE built"
}

# story_cluster, story_tracker: the testbed (up.sh, with the bridge) and the tracker, each with what it is.
story_cluster() {
    section "The cluster (testbed/slurm/up.sh)"
    VGPU_SPANK_PLUGIN=$STORY_BRIDGE VGPU_TESTBED_CGROUPS=no "$REPO_ROOT/testbed/slurm/up.sh" >"$TESTBED_DIR.up.log" 2>&1 \
        || die "up.sh failed: $(tail -n 5 "$TESTBED_DIR.up.log")"
    mv "$TESTBED_DIR.up.log" "$TESTBED_DIR/log/up.log"
    local lent="EMULATED GPUs"
    [ "$TESTBED_GPUS" = emulated ] || lent="the node's real GPUs, natively"
    echo "  slurmctld and slurmd -N ${TESTBED_NODES[*]} on 127.0.0.1:$TESTBED_PORT_BASE.., the SPANK bridge in plugstack.conf,"
    echo "  a vgpu lender on each node (lending $lent); configuration, logs and job output in $TESTBED_DIR"
    slurm sinfo -N -p gpu -o '%N %T %G' | indent
}

story_tracker() {
    section "The tracker"
    start_tracker
    echo "  vgpu tracker: polls Slurm every second, its socket on 127.0.0.1:$(tracker_port)," \
        "Prometheus metrics on http://127.0.0.1:$(metrics_port)/metrics"
}

# story_moves_home: lets the workload run 5 s on its borrowed vGPUs (so that the agent has counters to report), ends
# the filler on the borrower's node, waits until the hook has every borrowed vGPU home and the lenders' holders have
# ended, and prints the tracker's lines of the moves and the release-to-migration time.
story_moves_home() {
    local log_lines
    sleep 5
    log_lines=$(wc -l <"$TESTBED_DIR/log/tracker.log")
    free_borrower_node
    wait_borrower_home
    tail -n +$((log_lines + 1)) "$TESTBED_DIR/log/tracker.log" | grep -E 'migration [0-9]+: vGPU' \
        | sed -E 's/^.*(migration [0-9]+:)/\1/' | indent
    echo "  release -> first migration start: $RELEASE_TO_MIGRATION s (upper bound: the tracker's log, read every 0.5 s)"
    echo "  the lenders' holders ${LENDER_HOLDERS[*]} have ended: their GPUs are back in Slurm"
}

# story_report_and_metrics: `vgpu report` (its JSON checked to list the borrower's moves, their blocked times
# printed) and the tracker's Prometheus figures of borrowing and migration.
story_report_and_metrics() {
    local migrations metrics
    section "vgpu report"
    migrations=$(check_borrower_migrations "$TESTBED_DIR/out/report-$BORROWER.json")
    "$VGPU" report --config "$TESTBED_DIR/etc/vgpu.conf" | indent
    echo "  (vgpu report --format json lists the ${#LENDER_HOLDERS[@]} migration(s) of job $BORROWER, blocked ms:" \
        "$(grep -o '"blocked_ms": [0-9]*' <<<"$migrations" | cut -d ' ' -f 2 | paste -sd ' ' -))"

    section "Prometheus /metrics (excerpt)"
    metrics=$(scrape_metrics) || die "the tracker serves no /metrics on port $(metrics_port)"
    grep -E '^vgpu_(borrowed_gpus|migrations_total|migration_blocked_seconds_(count|sum)|held_jobs|idle_gpus)' \
        <<<"$metrics" | indent
}
