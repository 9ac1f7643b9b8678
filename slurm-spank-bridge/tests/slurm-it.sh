#!/bin/bash
# Integration test of vgpu_spank.so in a real Slurm on this machine: slurmctld and
# two `slurmd -N` (n1, n2) with auth/none, count-only vgpu GRES and gpu GRES on
# fake character devices, plugstack.conf loading the plugin, and
# fake_tracker.py answering the tracker protocol on 127.0.0.1.
# Needs root, Debian's slurmctld/slurmd/slurm-client/libslurm-dev, python3.
# Everything lives in a temporary directory that is removed at the end.
# Exit status 0 when every check passed. Set KEEP=1 to keep the directory.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
BRIDGE=$(dirname "$HERE")
PLUGIN=$BRIDGE/vgpu_spank.so
T=$(mktemp -d /tmp/vgpu-spank-it.XXXXXX)
chmod 755 "$T"
export SLURM_CONF=$T/slurm.conf
PIDS=()
PASS=0
FAIL=0

cleanup() {
	local p
	# jobs first, so that no slurmstepd outlives the test
	if [ -n "${CTLD_PID:-}" ]; then
		timeout 10 scancel --quiet --full "--user=$(id -un)" 2>/dev/null
		sleep 1
	fi
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${PIDS[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null
	done
	if [ "${KEEP:-0}" = 1 ]; then
		echo "kept $T"
	else
		rm -rf "$T"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pass() { PASS=$((PASS + 1)); echo "PASS $*"; }
fail() { FAIL=$((FAIL + 1)); echo "FAIL $*"; }
check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}
die() { echo "ERROR $*" >&2; exit 2; }

[ "$(id -u)" = 0 ] || die "run as root (slurmd must start job steps)"
for c in slurmctld slurmd sbatch scontrol python3; do
	command -v "$c" >/dev/null || die "$c missing (apt-get install slurmctld slurmd slurm-client munge libslurm-dev)"
done
make -s -C "$BRIDGE" all >/dev/null || die "cannot build $PLUGIN"

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# ---- fake tracker ----
start_tracker() {
	rm -f "$T/tracker.port"
	python3 "$HERE/fake_tracker.py" --port-file "$T/tracker.port" --reply-file "$T/tracker.reply" \
		--log "$T/tracker.log" >"$T/log/tracker.out" 2>&1 &
	TRACKER_PID=$!
	PIDS+=("$TRACKER_PID")
	for _ in $(seq 50); do [ -s "$T/tracker.port" ] && break; sleep 0.1; done
	[ -s "$T/tracker.port" ] || die "fake tracker did not start"
	TRACKER_PORT=$(cat "$T/tracker.port")
}
stop_tracker() {
	kill "$TRACKER_PID" 2>/dev/null
	wait "$TRACKER_PID" 2>/dev/null
}
tracker_reply() { printf '%s\n' "$@" >"$T/tracker.reply"; }

mkdir -p "$T"/{log,run,state,spool,dev,out}
start_tracker
TOKEN=v1.c2Vzc2lvbi1wYXlsb2Fk.bWFjLW1hYy1tYWMtbWFj
tracker_reply "ok vgpus=2 local=1 remote=1@127.0.0.1:7999#$TOKEN window_base=0x100000000000"

# ---- Slurm ----
for i in 0 1 2 3; do mknod "$T/dev/nvidia$i" c 195 "$i"; done
CTLD_PORT=$(free_port)
N1_PORT=$(free_port)
N2_PORT=$(free_port)
HOST=$(hostname -s)
cat >"$T/slurm.conf" <<CONF
ClusterName=vgpuit
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool/%n
SlurmctldPidFile=$T/run/slurmctld.pid
SlurmdPidFile=$T/run/slurmd-%n.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd-%n.log
SlurmdDebug=verbose
PlugStackConfig=$T/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu,vgpu
MpiDefault=none
ReturnToService=2
SchedulerParameters=sched_interval=1
NodeName=n1 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$N1_PORT CPUs=2 RealMemory=1000 Gres=gpu:2,vgpu:8 State=UNKNOWN
NodeName=n2 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$N2_PORT CPUs=2 RealMemory=1000 Gres=gpu:2,vgpu:8 State=UNKNOWN
PartitionName=it Nodes=n1,n2 Default=YES MaxTime=10 State=UP
CONF
cat >"$T/gres.conf" <<CONF
NodeName=n1 Name=gpu File=$T/dev/nvidia[0-1]
NodeName=n2 Name=gpu File=$T/dev/nvidia[2-3]
NodeName=n[1-2] Name=vgpu Count=8
CONF
plugstack() { echo "required $PLUGIN $*" >"$T/plugstack.conf"; }
plugstack "tracker=127.0.0.1:$TRACKER_PORT" timeout=2 ready_timeout=3

slurmctld -D -f "$SLURM_CONF" >"$T/log/slurmctld.out" 2>&1 &
CTLD_PID=$!
PIDS+=("$CTLD_PID")
for n in n1 n2; do
	slurmd -D -N "$n" -f "$SLURM_CONF" >"$T/log/slurmd-$n.out" 2>&1 &
	PIDS+=("$!")
done
up=0
for _ in $(seq 60); do
	if timeout 5 sinfo -h -o '%t' 2>/dev/null | grep -qx idle && \
	   [ "$(timeout 5 sinfo -h -N -o '%t' 2>/dev/null | grep -cx idle)" = 2 ]; then
		up=1
		break
	fi
	sleep 0.5
done
[ "$up" = 1 ] || { tail -5 "$T"/log/*.log; die "nodes did not become idle"; }
echo "Slurm up in $T (slurmctld port $CTLD_PORT, tracker 127.0.0.1:$TRACKER_PORT)"

# ---- helpers ----
submit() { # submit NAME SBATCH-ARGS... ; prints the job id
	local name=$1
	shift
	timeout 20 sbatch --parsable -J "$name" -o "$T/out/$name.out" -e "$T/out/$name.err" "$@" 2>"$T/out/$name.sbatch-err"
}
job_state() { timeout 5 scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
wait_job() { # wait_job ID: prints the final state, at most 60 s
	local s=""
	for _ in $(seq 120); do
		s=$(job_state "$1")
		case "$s" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE) break ;; esac
		sleep 0.5
	done
	echo "$s"
}
no_node_drained() { ! timeout 5 sinfo -h -N -o '%N %t' | grep -E 'drain|drng|down'; }
exit_code() { timeout 5 scontrol show job "$1" 2>/dev/null | sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p'; }
has() { grep -q -- "$2" "$1"; }
hasnt() { ! grep -q -- "$2" "$1"; }
tracker_saw() { grep -qx -- "$1" "$T/tracker.log"; }
slurmd_log_has() { cat "$T"/log/slurmd-n*.log | grep -q -- "$1"; }
# waits up to 10 s for a line to reach the tracker's log (done is sent after the job's end)
eventually_tracker_saw() {
	for _ in $(seq 40); do tracker_saw "$1" && return 0; sleep 0.25; done
	return 1
}
show() { echo "---- $1"; sed 's/^/    /' "$1"; }

ENVDUMP='env | grep -E "^(VGPU_|CUDA_VISIBLE_DEVICES=|CUDA_DEVICE_ORDER=)" | sort'
: >"$T/tracker.log"

# 1. a vgpu job gets its assembly; the tracker hears assembly and done
J=$(submit vgpu --gres=vgpu:2 --vgpu-migrate=never --wrap "$ENVDUMP; scontrol show job \$SLURM_JOB_ID | grep -o 'TresPerNode=[^ ]*'")
S=$(wait_job "$J")
O=$T/out/vgpu.out
show "$O"
check "vgpu job $J completed ($S)" [ "$S" = COMPLETED ]
check "VGPU_COUNT=2" has "$O" '^VGPU_COUNT=2$'
check "VGPU_ASSEMBLY maps vGPU 0 to local GPU 1 and vGPU 1 to the worker" has "$O" '^VGPU_ASSEMBLY=0=local:1,1=remote:127.0.0.1:7999$'
check "VGPU_LOCAL_GPUS=1" has "$O" '^VGPU_LOCAL_GPUS=1$'
check "CUDA_DEVICE_ORDER=PCI_BUS_ID" has "$O" '^CUDA_DEVICE_ORDER=PCI_BUS_ID$'
check "CUDA_VISIBLE_DEVICES=1 (the assembly's local GPU)" has "$O" '^CUDA_VISIBLE_DEVICES=1$'
check "VGPU_REMOTE carries endpoint and token" has "$O" "^VGPU_REMOTE=1@127.0.0.1:7999#$TOKEN\$"
check "VGPU_AGENT_SOCKET defaults to /run/vgpu/vgpu-<job>-<node>.sock" has "$O" "^VGPU_AGENT_SOCKET=/run/vgpu/vgpu-$J-n[12].sock\$"
check "VGPU_WINDOW_BASE" has "$O" '^VGPU_WINDOW_BASE=0x100000000000$'
check "VGPU_MIGRATE=never from --vgpu-migrate" has "$O" '^VGPU_MIGRATE=never$'
check "VGPU_SOURCE=tracker" has "$O" '^VGPU_SOURCE=tracker$'
check "tracker got 'assembly $J <node>'" grep -qE "^assembly $J n[12]\$" "$T/tracker.log"
check "tracker got 'done $J <node> 0' at the job's end" eventually_tracker_saw "$(grep -oE "^assembly $J n[12]" "$T/tracker.log" | head -1 | sed 's/^assembly/done/') 0"
check "the token is not in the slurmd logs" bash -c "! cat $T/log/slurmd-n*.log | grep -q -- '$TOKEN'"
check "slurmd log shows the token redacted" slurmd_log_has "vGPU 1: worker 127.0.0.1:7999 token v1.c...(44 chars)"
check "slurmd log shows the assembly" slurmd_log_has "vgpu_spank: job $J on n[12]: tracker assembly 0=local:1,1=remote:127.0.0.1:7999"

# 2. a plain job is untouched and never reaches the tracker
J=$(submit plain --wrap "$ENVDUMP; echo plain-ran")
S=$(wait_job "$J")
O=$T/out/plain.out
show "$O"
check "plain job $J completed ($S)" [ "$S" = COMPLETED ]
check "plain job ran" has "$O" '^plain-ran$'
check "plain job has no VGPU_ variables" hasnt "$O" '^VGPU_'
check "tracker never heard of the plain job" bash -c "! grep -q ' $J ' $T/tracker.log"

# 3. job steps on two nodes each get their own node's assembly
tracker_reply "ok vgpus=1 remote=0@127.0.0.1:7999#tok-for-{node}"
J=$(submit twonode -N2 --gres=vgpu:1 --wrap "srun -N2 -l bash -c 'echo \$VGPU_NODE \$SLURMD_NODENAME \$VGPU_REMOTE' | sort")
S=$(wait_job "$J")
O=$T/out/twonode.out
show "$O"
check "two-node job $J completed ($S)" [ "$S" = COMPLETED ]
check "step task on n1 got n1's assembly" has "$O" ': n1 n1 0@127.0.0.1:7999#tok-for-n1$'
check "step task on n2 got n2's assembly" has "$O" ': n2 n2 0@127.0.0.1:7999#tok-for-n2$'
check "tracker asked for n1 and n2 by the srun step" bash -c "grep -qx 'assembly $J n1' $T/tracker.log && grep -qx 'assembly $J n2' $T/tracker.log"

# 4. the tracker says "wait", then "ok": the step waits for it
tracker_reply "wait holders not placed yet" "ok vgpus=2 local=0,1"
J=$(submit waiting --gres=vgpu:2 --wrap "$ENVDUMP")
S=$(wait_job "$J")
check "job $J waited for the tracker and completed ($S)" [ "$S" = COMPLETED ]
check "after wait: CUDA_VISIBLE_DEVICES=0,1" has "$T/out/waiting.out" '^CUDA_VISIBLE_DEVICES=0,1$'

# 4a. the tracker on a UNIX socket
python3 "$HERE/fake_tracker.py" --unix "$T/run/tracker.sock" --reply-file "$T/tracker.reply" \
	--log "$T/tracker-unix.log" >"$T/log/tracker-unix.out" 2>&1 &
PIDS+=("$!")
for _ in $(seq 50); do [ -S "$T/run/tracker.sock" ] && break; sleep 0.1; done
plugstack "tracker=unix:$T/run/tracker.sock"
tracker_reply "ok vgpus=1 local=0"
J=$(submit unix --gres=vgpu:1 --wrap "$ENVDUMP")
S=$(wait_job "$J")
check "job $J with a UNIX-socket tracker completed ($S)" [ "$S" = COMPLETED ]
check "UNIX-socket tracker: VGPU_TRACKER=unix:..." has "$T/out/unix.out" "^VGPU_TRACKER=unix:$T/run/tracker.sock\$"
check "UNIX-socket tracker got assembly and done" bash -c "grep -qE '^assembly $J n[12]\$' $T/tracker-unix.log && for _ in \$(seq 40); do grep -qE '^done $J n[12] 0\$' $T/tracker-unix.log && exit 0; sleep 0.25; done; exit 1"
plugstack "tracker=127.0.0.1:$TRACKER_PORT" timeout=2 ready_timeout=3

# 4b. a job started by srun alone (no batch step): the step gets its assembly
tracker_reply "ok vgpus=1 local=1"
timeout 60 srun -N1 -w n2 --gres=vgpu:1 printenv VGPU_NODE CUDA_VISIBLE_DEVICES >"$T/out/srun.out" 2>"$T/out/srun.err"
check "srun job exits 0 ($?)" [ $? = 0 ]
show "$T/out/srun.out"
check "srun job: VGPU_NODE=n2" has "$T/out/srun.out" '^n2$'
check "srun job: CUDA_VISIBLE_DEVICES=1" has "$T/out/srun.out" '^1$'

# 5. tracker refuses, answers garbage, stays silent: the job fails closed, with the reason in slurmd's log
expect_fail() { # expect_fail NAME LOG-PATTERN SBATCH-ARGS...
	local name=$1 pattern=$2
	shift 2
	J=$(submit "$name" "$@" --wrap "echo should-not-run")
	S=$(wait_job "$J")
	check "$name: job $J failed ($S, exit code $(exit_code "$J"))" [ "$S" = FAILED ]
	check "$name: the job's command never ran" bash -c "! grep -qs should-not-run $T/out/$name.out"
	check "$name: slurmd log says why" slurmd_log_has "$pattern"
	check "$name: the job's stderr says why" grep -q "vgpu_spank: .*$pattern" "$T/out/$name.err"
	check "$name: no node drained" no_node_drained
	cat "$T"/log/slurmd-n*.log | grep "vgpu_spank: .*job $J" | sed 's/^/    log: /' | head -3
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
stop_tracker
expect_fail down "needs 2 vGPU(s) and has no assembly, failing it (fallback=none): tracker 127.0.0.1:$TRACKER_PORT (timeout 2s): connect: Connection refused" --gres=vgpu:2
timeout 60 srun -N1 --gres=vgpu:1 printenv VGPU_NODE >"$T/out/srun-down.out" 2>"$T/out/srun-down.err"
check "srun job fails while the tracker is down ($?)" [ $? != 0 ]
show "$T/out/srun-down.err"
check "srun's stderr says why" has "$T/out/srun-down.err" "vgpu_spank: job [0-9]* on n[12] needs 1 vGPU(s) and has no assembly"
J=$(submit plain-down --wrap "echo plain-ran")
S=$(wait_job "$J")
check "plain job $J runs while the tracker is down ($S)" [ "$S" = COMPLETED ]

# 7. fallback=local-only: enough GPUs of its own -> runs local-only; too few -> fails
plugstack "tracker=127.0.0.1:$TRACKER_PORT" timeout=2 fallback=local-only
J=$(submit fallback --gres=gpu:2,vgpu:2 --wrap "$ENVDUMP")
S=$(wait_job "$J")
show "$T/out/fallback.out"
check "fallback job $J completed ($S)" [ "$S" = COMPLETED ]
check "fallback: VGPU_SOURCE=local-only-fallback" has "$T/out/fallback.out" '^VGPU_SOURCE=local-only-fallback$'
check "fallback: VGPU_ASSEMBLY all local" grep -qE '^VGPU_ASSEMBLY=0=local:[0-9],1=local:[0-9]$' "$T/out/fallback.out"
check "fallback: slurmd log warns" slurmd_log_has "warning: job $J on n[12] runs local-only on its own 2 GPU(s)"
expect_fail fallback-short "and fallback=local-only impossible: the job's allocation has 1 local GPU(s), it needs 2" --gres=gpu:1,vgpu:2

# 8. bad plugstack.conf arguments: sbatch refuses (fail closed), with the argument quoted
plugstack "tracker=127.0.0.1:$TRACKER_PORT" timeout=soon
if timeout 20 sbatch --parsable --gres=vgpu:2 --wrap true >/dev/null 2>"$T/out/badargs.err"; then
	fail "sbatch accepted a job with bad plugstack arguments"
else
	pass "sbatch refuses jobs with bad plugstack arguments"
fi
show "$T/out/badargs.err"
check "the error quotes the argument" has "$T/out/badargs.err" 'bad argument "timeout=soon": expected whole seconds'
plugstack "tracker=127.0.0.1:$TRACKER_PORT"
if timeout 20 sbatch --parsable --vgpu-migrate=sometimes --wrap true >/dev/null 2>"$T/out/badopt.err"; then
	fail "sbatch accepted --vgpu-migrate=sometimes"
else
	pass "sbatch refuses --vgpu-migrate=sometimes"
fi
check "the option error says what is expected" has "$T/out/badopt.err" 'expected auto or never'

# 10. auth=munge: the tracker gets a MUNGE credential over each request line
start_munged() {
	command -v munged >/dev/null && command -v unmunge >/dev/null && id munge >/dev/null 2>&1 || return 1
	mkdir -p "$T/munge/sock" "$T/munge/key" "$T/munge/lib"
	dd if=/dev/urandom of="$T/munge/key/munge.key" bs=1024 count=1 2>/dev/null
	chown -R munge:munge "$T/munge/sock" "$T/munge/key" "$T/munge/lib"
	chmod 755 "$T/munge" "$T/munge/sock"
	chmod 700 "$T/munge/key" "$T/munge/lib"
	chmod 400 "$T/munge/key/munge.key"
	su -s /bin/sh munge -c "munged --socket=$T/munge/sock/munge.socket --key-file=$T/munge/key/munge.key \
		--pid-file=$T/munge/sock/munged.pid --seed-file=$T/munge/lib/seed --log-file=$T/munge/lib/munged.log" || return 1
	for _ in $(seq 50); do [ -s "$T/munge/sock/munged.pid" ] && break; sleep 0.1; done
	[ -s "$T/munge/sock/munged.pid" ] || return 1
	PIDS+=("$(cat "$T/munge/sock/munged.pid")")
}
if start_munged; then
	python3 "$HERE/fake_tracker.py" --port-file "$T/tracker-munge.port" --reply-file "$T/tracker.reply" \
		--log "$T/tracker-munge.log" --munge-socket "$T/munge/sock/munge.socket" >"$T/log/tracker-munge.out" 2>&1 &
	PIDS+=("$!")
	for _ in $(seq 50); do [ -s "$T/tracker-munge.port" ] && break; sleep 0.1; done
	MPORT=$(cat "$T/tracker-munge.port")
	tracker_reply "ok vgpus=1 local=0"
	plugstack "tracker=127.0.0.1:$MPORT" auth=munge "munge_socket=$T/munge/sock/munge.socket"
	J=$(submit munge --gres=vgpu:1 --wrap "$ENVDUMP")
	S=$(wait_job "$J")
	check "auth=munge: job $J completed ($S)" [ "$S" = COMPLETED ]
	check "auth=munge: tracker verified the assembly request (uid 0)" grep -qE "^assembly $J n[12] uid=0\$" "$T/tracker-munge.log"
	check "auth=munge: tracker verified done" bash -c "for _ in \$(seq 40); do grep -qE '^done $J n[12] 0 uid=0\$' $T/tracker-munge.log && exit 0; sleep 0.25; done; exit 1"
	plugstack "tracker=127.0.0.1:$MPORT"
	expect_fail munge-missing "tracker refused the assembly: unauthenticated request" --gres=vgpu:1
	plugstack "tracker=127.0.0.1:$MPORT" auth=munge "munge_socket=$T/munge/sock/nothing.socket"
	expect_fail munge-down "auth=munge: cannot get a credential from munged at $T/munge/sock/nothing.socket" --gres=vgpu:1
else
	echo "SKIP auth=munge tests: cannot start munged (apt-get install munge)"
fi

# 9. plugstack.conf broken on the node after submission: slurmstepd's init fails, the
# command never runs, and Slurm drains the node (a misconfigured node takes no more jobs)
plugstack "tracker=127.0.0.1:$TRACKER_PORT"
J=$(submit late-bad -H -w n2 --wrap "echo should-not-run")
plugstack "tracker=127.0.0.1:$TRACKER_PORT" fallback=sometimes
timeout 5 scontrol release "$J"
S=$(wait_job "$J")
echo "    job $J: $S, exit code $(exit_code "$J")"
check "late-bad: the command never ran" bash -c "! grep -qs should-not-run $T/out/late-bad.out"
check "late-bad: slurmd log quotes the argument" slurmd_log_has 'bad argument "fallback=sometimes": expected local-only or none'
check "late-bad: n2 drained" bash -c "timeout 5 sinfo -h -N -n n2 -o '%t %E' | grep -q 'drain.*batch job complete failure'"
timeout 5 sinfo -N -o '%N %t %E' | sed 's/^/    /'

echo "slurm-it: $PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
