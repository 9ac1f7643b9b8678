#!/usr/bin/env bash
# Scenario (testbed started with VGPU_SPANK_PLUGIN): the SPANK bridge alone, against
# slurm-spank-bridge/tests/fake_tracker.py, whose replies each check sets, on 127.0.0.1 and on a UNIX
# socket. It checks: a vgpu job's variables, CUDA_VISIBLE_DEVICES unset, the agent's socket directory
# (the job's, 0700, gone after the job), --vgpu-migrate, `assembly` and
# `done` reaching the tracker, no token in the logs; a plain job untouched; per-node assemblies for a
# two-node srun step; a job started by srun alone; `wait` then `ok`; refusal, malformed reply, count
# mismatch, silence, endless `wait` and a stopped tracker each failing the job (FAILED, reason in
# slurmd's log and the job's stderr, no node drained); plain jobs running while the tracker is down;
# auth=munge against a real munged (verified by the fake tracker with unmunge), a missing credential
# refused, munged unreachable; fallback=local-only with enough and too few GPUs; bad plugstack
# arguments and a bad option value refused by sbatch; plugstack.conf broken after submission (the
# command never runs, the node is drained).
# The bridge is tested apart from the site's policy: while it runs, job_submit.lua lets every job
# through as submitted (vgpu jobs are not held, a two-node vgpu job is allowed), as if a tracker had
# released each at once. plugstack.conf and job_submit.lua are restored, its jobs cancelled and a node
# it drained resumed at the end.
# Every check runs and counts, so no `set -e`: the scenario fails at its end if any check failed.
set -uo pipefail
source "$(dirname "$0")/common.sh"

grep -q '^required .*vgpu_spank\.so' "$TESTBED_DIR/etc/plugstack.conf" \
    || die "plugstack.conf loads no SPANK bridge; start the testbed with VGPU_SPANK_PLUGIN=.../vgpu_spank.so"
PLUGIN=$(sed -n 's/^required \([^ ]*vgpu_spank\.so\).*/\1/p' "$TESTBED_DIR/etc/plugstack.conf")
FAKE_TRACKER=$REPO_ROOT/slurm-spank-bridge/tests/fake_tracker.py
command -v python3 >/dev/null || die "python3 is needed for the fake tracker"
T=$TESTBED_DIR/spank-bridge
PLUGSTACK=$TESTBED_DIR/etc/plugstack.conf
JOB_SUBMIT=$TESTBED_DIR/etc/job_submit.lua
mkdir -p "$T"/{log,run,out}
chmod 1777 "$T/out"
cp "$PLUGSTACK" "$T/plugstack.conf.testbed"
cp "$JOB_SUBMIT" "$T/job_submit.lua.testbed"
PIDS=()
# sbatch hands the submitter's environment to the job: the testbed's own settings (VGPU_TESTBED_DIR, ...)
# would pass for variables the bridge set.
unset "${!VGPU_@}"

restore() {
    set +e
    # shellcheck disable=SC2046 # one job id a line
    [ ! -s "$T/jobs" ] || cancel_jobs $(cat "$T/jobs")
    local p
    for p in "${PIDS[@]}"; do
        kill "$p" 2>/dev/null
    done
    cp "$T/plugstack.conf.testbed" "$PLUGSTACK"
    # job_submit/lua loads the script again at each submission when it changed
    cp "$T/job_submit.lua.testbed" "$JOB_SUBMIT"
    slurm scontrol update NodeName="$(IFS=,; echo "${TESTBED_NODES[*]}")" State=RESUME >/dev/null 2>&1
}
trap restore EXIT
let_every_job_through "$JOB_SUBMIT"
mark_slurmd_logs

# ---- fake tracker ----
start_fake_tracker() {
    rm -f "$T/tracker.port"
    python3 "$FAKE_TRACKER" --port-file "$T/tracker.port" --reply-file "$T/tracker.reply" \
        --log "$T/tracker.log" >"$T/log/tracker.out" 2>&1 &
    TRACKER_PID=$!
    PIDS+=("$TRACKER_PID")
    wait_until 5 "the fake tracker listens" test -s "$T/tracker.port" || die "the fake tracker did not start"
    TRACKER_PORT=$(cat "$T/tracker.port")
}
stop_fake_tracker() {
    kill "$TRACKER_PID" 2>/dev/null
    wait "$TRACKER_PID" 2>/dev/null || true
}
tracker_reply() { printf '%s\n' "$@" >"$T/tracker.reply"; }
plugstack() { echo "required $PLUGIN $*" >"$PLUGSTACK"; }

start_fake_tracker
TOKEN=v1.c2Vzc2lvbi1wYXlsb2Fk.bWFjLW1hYy1tYWMtbWFj
tracker_reply "ok vgpus=2 local=1 remote=1@127.0.0.1:7999#$TOKEN window_base=0x100000000000"
plugstack "tracker=127.0.0.1:$TRACKER_PORT" timeout=2 ready_timeout=3

# ---- helpers ----
submit_named() { # submit_named NAME SBATCH-ARGS... ; prints the job id
    local name=$1 job
    shift
    job=$(slurm sbatch --parsable -J "$name" -o "$T/out/$name.out" -e "$T/out/$name.err" "$@" 2>"$T/out/$name.sbatch-err")
    # to a file, as this runs in a command substitution's subshell: restore cancels them
    echo "$job" >>"$T/jobs"
    echo "$job"
}
wait_job() { # wait_job ID: prints the final state, at most 60 s
    wait_until 60 "job $1 has ended" job_has_ended "$1" || true
    job_field "$1" JobState
}
no_node_drained() { ! slurm sinfo -h -N -o '%N %t' | grep -E 'drain|drng|down'; }
exit_code() { job_field "$1" ExitCode; }
has() { grep -q -- "$2" "$1"; }
hasnt() { ! grep -q -- "$2" "$1"; }
tracker_saw() { grep -qx -- "$1" "$T/tracker.log"; }
slurmd_log_has() { new_slurmd_log | grep -q -- "$1"; }
# waits up to 30 s for a line to reach the tracker's log (done is sent after the job's end, later on a loaded machine)
eventually_tracker_saw() { wait_until 30 "the tracker saw '$1'" tracker_saw "$1"; }
show() { echo "---- $1"; sed 's/^/    /' "$1"; }

ENVDUMP='env | grep -E "^(VGPU_|CUDA_VISIBLE_DEVICES=|CUDA_DEVICE_ORDER=)" | sort'
: >"$T/tracker.log"

# 1. a vgpu job gets its assembly; the tracker hears assembly and done
J=$(submit_named vgpu --gres=vgpu:2 --vgpu-migrate=never --wrap "$ENVDUMP; scontrol show job \$SLURM_JOB_ID | grep -o 'TresPerNode=[^ ]*'; stat -c 'agentdir %U %a' \$(dirname \$VGPU_AGENT_SOCKET)")
S=$(wait_job "$J")
O=$T/out/vgpu.out
show "$O"
check "vgpu job $J completed ($S)" [ "$S" = COMPLETED ]
check "VGPU_COUNT=2" has "$O" '^VGPU_COUNT=2$'
check "VGPU_ASSEMBLY maps vGPU 0 to local GPU 1 and vGPU 1 to the worker" has "$O" '^VGPU_ASSEMBLY=0=local:1,1=remote:127.0.0.1:7999$'
check "VGPU_LOCAL_GPUS=1" has "$O" '^VGPU_LOCAL_GPUS=1$'
check "CUDA_DEVICE_ORDER=PCI_BUS_ID" has "$O" '^CUDA_DEVICE_ORDER=PCI_BUS_ID$'
check "CUDA_VISIBLE_DEVICES unset (CUDA enumerates every GPU of the node)" hasnt "$O" '^CUDA_VISIBLE_DEVICES='
check "VGPU_REMOTE carries endpoint and token" has "$O" "^VGPU_REMOTE=1@127.0.0.1:7999#$TOKEN\$"
check "VGPU_AGENT_SOCKET defaults to /run/vgpu/job-<job>/vgpu-<node>.sock" has "$O" "^VGPU_AGENT_SOCKET=/run/vgpu/job-$J/vgpu-n[1-3].sock\$"
check "the bridge made the job's agent directory, the job user's, mode 700" has "$O" '^agentdir root 700$'
check "the job's epilog removed its agent directory" wait_until 20 "/run/vgpu/job-$J is gone" test ! -e "/run/vgpu/job-$J"
check "VGPU_WINDOW_BASE" has "$O" '^VGPU_WINDOW_BASE=0x100000000000$'
check "VGPU_MIGRATE=never from --vgpu-migrate" has "$O" '^VGPU_MIGRATE=never$'
check "VGPU_SOURCE=tracker" has "$O" '^VGPU_SOURCE=tracker$'
check "tracker got 'assembly $J <node>'" grep -qE "^assembly $J n[1-3]\$" "$T/tracker.log"
check "tracker got 'done $J <node> 0' at the job's end" eventually_tracker_saw "$(grep -oE "^assembly $J n[1-3]" "$T/tracker.log" | head -1 | sed 's/^assembly/done/') 0"
check "the token is not in the slurmd logs" bash -c "! cat $TESTBED_DIR/log/slurmd-n*.log | grep -q -- '$TOKEN'"
check "slurmd log shows the token redacted" slurmd_log_has "vGPU 1: worker 127.0.0.1:7999 token v1.c...(44 chars)"
check "slurmd log shows the assembly" slurmd_log_has "vgpu_spank: job $J on n[1-3]: tracker assembly 0=local:1,1=remote:127.0.0.1:7999"

# 2. a plain job is untouched and never reaches the tracker
J=$(submit_named plain --wrap "$ENVDUMP; echo plain-ran")
S=$(wait_job "$J")
O=$T/out/plain.out
show "$O"
check "plain job $J completed ($S)" [ "$S" = COMPLETED ]
check "plain job ran" has "$O" '^plain-ran$'
check "plain job has no VGPU_ variables" hasnt "$O" '^VGPU_'
check "tracker never heard of the plain job" bash -c "! grep -q ' $J ' $T/tracker.log"

# 3. job steps on two nodes each get their own node's assembly
tracker_reply "ok vgpus=1 remote=0@127.0.0.1:7999#tok-for-{node}"
J=$(submit_named twonode -N2 -w n1,n2 --gres=vgpu:1 --wrap "srun -N2 -l bash -c 'echo \$VGPU_NODE \$SLURMD_NODENAME \$VGPU_REMOTE' | sort")
S=$(wait_job "$J")
O=$T/out/twonode.out
show "$O"
check "two-node job $J completed ($S)" [ "$S" = COMPLETED ]
check "step task on n1 got n1's assembly" has "$O" ': n1 n1 0@127.0.0.1:7999#tok-for-n1$'
check "step task on n2 got n2's assembly" has "$O" ': n2 n2 0@127.0.0.1:7999#tok-for-n2$'
check "tracker asked for n1 and n2 by the srun step" bash -c "grep -qx 'assembly $J n1' $T/tracker.log && grep -qx 'assembly $J n2' $T/tracker.log"

# 4. the tracker says "wait", then "ok": the step waits for it
tracker_reply "wait holders not placed yet" "ok vgpus=2 local=0,1"
J=$(submit_named waiting --gres=vgpu:2 --wrap "$ENVDUMP")
S=$(wait_job "$J")
check "job $J waited for the tracker and completed ($S)" [ "$S" = COMPLETED ]
check "after wait: VGPU_LOCAL_GPUS=0,1" has "$T/out/waiting.out" '^VGPU_LOCAL_GPUS=0,1$'

# 4a. the tracker on a UNIX socket
python3 "$FAKE_TRACKER" --unix "$T/run/tracker.sock" --reply-file "$T/tracker.reply" \
    --log "$T/tracker-unix.log" >"$T/log/tracker-unix.out" 2>&1 &
PIDS+=("$!")
wait_until 5 "the UNIX-socket fake tracker listens" test -S "$T/run/tracker.sock" || die "the UNIX-socket fake tracker did not start"
plugstack "tracker=unix:$T/run/tracker.sock"
tracker_reply "ok vgpus=1 local=0"
J=$(submit_named unix --gres=vgpu:1 --wrap "$ENVDUMP")
S=$(wait_job "$J")
check "job $J with a UNIX-socket tracker completed ($S)" [ "$S" = COMPLETED ]
check "UNIX-socket tracker: VGPU_TRACKER=unix:..." has "$T/out/unix.out" "^VGPU_TRACKER=unix:$T/run/tracker.sock\$"
check "UNIX-socket tracker got assembly and done" bash -c "grep -qE '^assembly $J n[1-3]\$' $T/tracker-unix.log && for _ in \$(seq 40); do grep -qE '^done $J n[1-3] 0\$' $T/tracker-unix.log && exit 0; sleep 0.25; done; exit 1"
plugstack "tracker=127.0.0.1:$TRACKER_PORT" timeout=2 ready_timeout=3

# 4b. a job started by srun alone (no batch step): the step gets its assembly
tracker_reply "ok vgpus=1 local=1"
status=0
timeout 60 srun -N1 -w n2 --gres=vgpu:1 bash -c 'printenv VGPU_NODE VGPU_LOCAL_GPUS; echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset}"' >"$T/out/srun.out" 2>"$T/out/srun.err" || status=$?
check "srun job exits 0 ($status)" [ "$status" = 0 ]
show "$T/out/srun.out"
check "srun job: VGPU_NODE=n2" has "$T/out/srun.out" '^n2$'
check "srun job: VGPU_LOCAL_GPUS=1" has "$T/out/srun.out" '^1$'
check "srun job: CUDA_VISIBLE_DEVICES unset" has "$T/out/srun.out" '^CUDA_VISIBLE_DEVICES=unset$'

# 5. tracker refuses, answers garbage, stays silent: the job fails closed, with the reason in slurmd's log
expect_fail() { # expect_fail NAME LOG-PATTERN SBATCH-ARGS...
    local name=$1 pattern=$2
    shift 2
    J=$(submit_named "$name" "$@" --wrap "echo should-not-run")
    S=$(wait_job "$J")
    check "$name: job $J failed ($S, exit code $(exit_code "$J"))" [ "$S" = FAILED ]
    check "$name: the job's command never ran" bash -c "! grep -qs should-not-run $T/out/$name.out"
    check "$name: slurmd log says why" slurmd_log_has "$pattern"
    check "$name: the job's stderr says why" grep -q "vgpu_spank: .*$pattern" "$T/out/$name.err"
    check "$name: no node drained" no_node_drained
    new_slurmd_log | grep "vgpu_spank: .*job $J" | sed 's/^/    log: /' | head -3 || true
}
tracker_reply "error job {jobid} has no assembly"
expect_fail refused "tracker refused the assembly: job [0-9]* has no assembly" --gres=vgpu:2
tracker_reply "ok vgpus=2 local=0,0"
expect_fail garbage "malformed reply from the tracker: local: GPU 0 listed twice" --gres=vgpu:2
tracker_reply "ok vgpus=3 local=0,1,2"
expect_fail mismatch "asked for 2 vGPU(s) per node, the tracker's assembly has 3" --gres=vgpu:2
tracker_reply "!silent"
expect_fail silent "timed out waiting for the reply" --gres=vgpu:2
tracker_reply "wait still placing"
expect_fail notready "tracker still not ready after 3s (ready_timeout): still placing" --gres=vgpu:2

# 6. tracker down
stop_fake_tracker
expect_fail down "needs 2 vGPU(s) and has no assembly, failing it (fallback=none): tracker 127.0.0.1:$TRACKER_PORT (timeout 2s): connect: Connection refused" --gres=vgpu:2
status=0
timeout 60 srun -N1 --gres=vgpu:1 printenv VGPU_NODE >"$T/out/srun-down.out" 2>"$T/out/srun-down.err" || status=$?
check "srun job fails while the tracker is down ($status)" [ "$status" != 0 ]
show "$T/out/srun-down.err"
check "srun's stderr says why" has "$T/out/srun-down.err" "vgpu_spank: job [0-9]* on n[1-3] needs 1 vGPU(s) and has no assembly"
J=$(submit_named plain-down --wrap "echo plain-ran")
S=$(wait_job "$J")
check "plain job $J runs while the tracker is down ($S)" [ "$S" = COMPLETED ]

# 7. fallback=local-only: enough GPUs of its own -> runs local-only; too few -> fails
plugstack "tracker=127.0.0.1:$TRACKER_PORT" timeout=2 fallback=local-only
J=$(submit_named fallback --gres=gpu:2,vgpu:2 --wrap "$ENVDUMP")
S=$(wait_job "$J")
show "$T/out/fallback.out"
check "fallback job $J completed ($S)" [ "$S" = COMPLETED ]
check "fallback: VGPU_SOURCE=local-only-fallback" has "$T/out/fallback.out" '^VGPU_SOURCE=local-only-fallback$'
check "fallback: VGPU_ASSEMBLY all local" grep -qE '^VGPU_ASSEMBLY=0=local:[0-9],1=local:[0-9]$' "$T/out/fallback.out"
check "fallback: slurmd log warns" slurmd_log_has "warning: job $J on n[1-3] runs local-only on its own 2 GPU(s)"
expect_fail fallback-short "and fallback=local-only impossible: the job's allocation has 1 local GPU(s), it needs 2" --gres=gpu:1,vgpu:2

# 8. bad plugstack.conf arguments: sbatch refuses (fail closed), with the argument quoted
plugstack "tracker=127.0.0.1:$TRACKER_PORT" timeout=soon
if slurm sbatch --parsable --gres=vgpu:2 --wrap true >/dev/null 2>"$T/out/badargs.err"; then
    not_ok "sbatch accepted a job with bad plugstack arguments"
else
    ok "sbatch refuses jobs with bad plugstack arguments"
fi
show "$T/out/badargs.err"
check "the error quotes the argument" has "$T/out/badargs.err" 'bad argument "timeout=soon": expected whole seconds'
plugstack "tracker=127.0.0.1:$TRACKER_PORT"
if slurm sbatch --parsable --vgpu-migrate=sometimes --wrap true >/dev/null 2>"$T/out/badopt.err"; then
    not_ok "sbatch accepted --vgpu-migrate=sometimes"
else
    ok "sbatch refuses --vgpu-migrate=sometimes"
fi
check "the option error says what is expected" has "$T/out/badopt.err" 'expected auto or never'

# 10. auth=munge: the tracker gets a MUNGE credential over each request line
if start_munged "$T/munge"; then
    PIDS+=("$(cat "$T/munge/sock/munged.pid")")
    python3 "$FAKE_TRACKER" --port-file "$T/tracker-munge.port" --reply-file "$T/tracker.reply" \
        --log "$T/tracker-munge.log" --munge-socket "$T/munge/sock/munge.socket" >"$T/log/tracker-munge.out" 2>&1 &
    PIDS+=("$!")
    wait_until 5 "the MUNGE fake tracker listens" test -s "$T/tracker-munge.port" || die "the MUNGE fake tracker did not start"
    MPORT=$(cat "$T/tracker-munge.port")
    tracker_reply "ok vgpus=1 local=0"
    plugstack "tracker=127.0.0.1:$MPORT" auth=munge "munge_socket=$T/munge/sock/munge.socket"
    J=$(submit_named munge --gres=vgpu:1 --wrap "$ENVDUMP")
    S=$(wait_job "$J")
    check "auth=munge: job $J completed ($S)" [ "$S" = COMPLETED ]
    check "auth=munge: tracker verified the assembly request (uid 0)" grep -qE "^assembly $J n[1-3] uid=0\$" "$T/tracker-munge.log"
    check "auth=munge: tracker verified done" wait_until 30 "the MUNGE tracker saw done" grep -qE "^done $J n[1-3] 0 uid=0\$" "$T/tracker-munge.log"
    plugstack "tracker=127.0.0.1:$MPORT"
    expect_fail munge-missing "tracker refused the assembly: unauthenticated request" --gres=vgpu:1
    plugstack "tracker=127.0.0.1:$MPORT" auth=munge "munge_socket=$T/munge/sock/nothing.socket"
    expect_fail munge-down "auth=munge: cannot get a credential from munged at $T/munge/sock/nothing.socket" --gres=vgpu:1
else
    not_ok "auth=munge: cannot start munged (apt-get install munge)"
fi

# 9. plugstack.conf broken on the node after submission: slurmstepd's init fails, the
# command never runs, and Slurm drains the node (a misconfigured node takes no more jobs)
plugstack "tracker=127.0.0.1:$TRACKER_PORT"
J=$(submit_named late-bad -H -w n2 --wrap "echo should-not-run")
plugstack "tracker=127.0.0.1:$TRACKER_PORT" fallback=sometimes
slurm scontrol release "$J"
released_at=$SECONDS
# slurmctld drains the node when the job's launch fails. 22.05 then ends the job; 24.11 requeues it instead (PENDING,
# Reason=BeginTime), so "the job has ended" never comes there: the drain is what is waited for, up to three minutes
# after the release (more than a minute has been seen on a loaded machine). The listing is read whole first: grep -q
# ending the pipe early would fail it under pipefail (SIGPIPE).
n2_drained_by_batch_failure() {
    local states
    states=$(timeout 5 sinfo -h -N -n n2 -o '%t %E') && grep -qE '(drain|drng).*batch job complete failure' <<<"$states"
}
check "late-bad: n2 drained" wait_until 180 "n2 is drained" n2_drained_by_batch_failure
echo "    n2 drained $((SECONDS - released_at))s after the job's release; job $J: $(job_field "$J" JobState), reason $(job_field "$J" Reason)"
check "late-bad: the command never ran" bash -c "! grep -qs should-not-run $T/out/late-bad.out"
check "late-bad: slurmd log quotes the argument" slurmd_log_has 'bad argument "fallback=sometimes": expected local-only or none'
slurm sinfo -N -o '%N %t %E' | sed 's/^/    /'
grep -E "JobId=$J[^0-9]|n2" "$TESTBED_DIR/log/slurmctld.log" | tail -n 8 | sed 's/^/    slurmctld: /'

[ "$FAILED" -eq 0 ] || die "spank-bridge: $FAILED of $((PASSED + FAILED)) checks failed"
pass "spank-bridge: all $PASSED checks passed"
