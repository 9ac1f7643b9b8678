#!/usr/bin/env bash
# Brings up a real Slurm cluster (Debian's packages: 22.05 of this machine's Debian 12, or 24.11 of Debian 13 in a
# root of its own with VGPU_TESTBED_SLURM=24.11, slurm-root.sh) on this one machine: slurmctld and
# slurmd -N n1..n3, each node with 4 fake GPUs (character devices, so Slurm sets
# CUDA_VISIBLE_DEVICES) and a count-only vgpu GRES of 8, auth/none, the job partition and the lend
# partition, and each node's vgpu lender lending emulated GPUs (other nodes and real GPUs: common.sh's
# VGPU_TESTBED_NODES, VGPU_TESTBED_GPUS_PER_NODE, VGPU_TESTBED_GPUS=native). Slurm's node, partition and GRES
# lines, job_submit.lua and the lenders' command lines are rendered from a site configuration by
# `vgpu config render`, as an admin would. Needs root.
# Environment: VGPU_TESTBED_DIR (default /tmp/vgpu-testbed), VGPU_TESTBED_PORT_BASE (17900),
# VGPU_SPANK_PLUGIN (a built SPANK bridge to load; without it plugstack.conf stays empty; on another Slurm than
# 22.05 the bridge is built anew from the source beside it, against that Slurm's headers),
# VGPU_TESTBED_CGROUPS=yes (task/cgroup and proctrack/cgroup with ConstrainDevices=yes on cgroup v1; v2: on Slurm's
# cgroup/v2 plugin, 24.11 only; default: none),
# VGPU_TESTBED_ACCOUNTING=yes (slurmdbd and a MariaDB of the testbed's own: accounting.sh; default: none),
# VGPU_TESTBED_MEMORY=yes (memory a consumable resource: CR_Core_Memory, so that with VGPU_TESTBED_CGROUPS=yes or v2 each
# job is confined to its --mem; default: cores only),
# VGPU_TESTBED_SLURM_FILES=pieces (slurm.conf, gres.conf and plugstack.conf as a site's own that take vgpu's rendered
# pieces: Include of vgpu.slurm.conf, plugstack.conf.d/vgpu.conf; default whole: the rendered whole files).
set -euo pipefail
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/accounting.sh"

[ "$(id -u)" -eq 0 ] || die "up.sh needs root (it creates device files and runs Slurm's daemons as root)"
[ -x "$VGPU" ] || die "no vgpu launcher at $VGPU"
launcher_check=$("$VGPU" --help 2>&1) \
    || die "the vgpu launcher does not run (build it with mvn -DskipTests package; it needs JAVA_HOME set to a JDK 25): $launcher_check"
if [ -e "$TESTBED_DIR" ]; then
    die "$TESTBED_DIR exists: a testbed is up or was not torn down; run $(dirname "$0")/down.sh first"
fi

refuse_busy_ports() {
    local port
    local node
    for port in $(seq "$TESTBED_PORT_BASE" $((TESTBED_PORT_BASE + ${#TESTBED_NODES[@]}))) \
        $(for node in "${TESTBED_NODES[@]}"; do lender_port "$node"; done) "$(tracker_port)" "$(metrics_port)" \
        $(accounting_ports); do
        if ss -Hltn "sport = :$port" | grep -q .; then
            die "port $port is in use; choose other ports with VGPU_TESTBED_PORT_BASE"
        fi
    done
}

# node_gpu_devices NODE: gres.conf's File= for NODE's GPUs: fake ones in the testbed's directory, or the real
# /dev/nvidiaN that node nK owns (N from (K-1) x GPUs per node).
node_gpu_devices() {
    local node=$1 first
    if [ "$TESTBED_GPUS" = emulated ]; then
        echo "$TESTBED_DIR/dev/$node/nvidia[0-$((TESTBED_GPUS_PER_NODE - 1))]"
        return
    fi
    first=$(((${node#n} - 1) * TESTBED_GPUS_PER_NODE))
    if [ "$TESTBED_GPUS_PER_NODE" -eq 1 ]; then
        echo "/dev/nvidia$first"
    else
        echo "/dev/nvidia[$first-$((first + TESTBED_GPUS_PER_NODE - 1))]"
    fi
}

# Fake GPUs for the emulation; real ones must be there.
make_fake_gpus() {
    local node index
    if [ "$TESTBED_GPUS" = native ]; then
        for index in $(seq 0 $((${#TESTBED_NODES[@]} * TESTBED_GPUS_PER_NODE - 1))); do
            [ -c "/dev/nvidia$index" ] || die "VGPU_TESTBED_GPUS=native: no /dev/nvidia$index for the testbed's nodes"
        done
        return
    fi
    for node in "${TESTBED_NODES[@]}"; do
        mkdir -p "$TESTBED_DIR/dev/$node"
        for index in $(seq 0 $((TESTBED_GPUS_PER_NODE - 1))); do
            # 195 is NVIDIA's major number; a plain file would make Slurm drop CUDA_VISIBLE_DEVICES.
            mknod "$TESTBED_DIR/dev/$node/nvidia$index" c 195 "$index"
        done
    done
}

write_site_config() {
    local config=$TESTBED_DIR/etc/vgpu.conf host
    host=$(hostname)
    (umask 077; head -c 32 /dev/urandom | base64 >"$TESTBED_DIR/etc/site.key")
    cat >"$config" <<CONFIG
# vgpu site configuration of the one-machine testbed (written by testbed/slurm/up.sh)
[cluster]
name = testbed
tracker = 127.0.0.1:$((TESTBED_PORT_BASE + 99))
token_key_file = $TESTBED_DIR/etc/site.key
lend_partition = vgpu-lend

[policy]
idle_grace = 2s
max_borrowed_per_job = 4

[tracker]
# Prometheus scrapes http://127.0.0.1:$(metrics_port)/metrics
metrics = 127.0.0.1:$(metrics_port)

[slurm]
job_partition = gpu
spank_plugin = ${VGPU_SPANK_PLUGIN:-/usr/lib/x86_64-linux-gnu/slurm-wlm/vgpu_spank.so}
vgpu_command = $VGPU
# No MUNGE between the SPANK bridge and the tracker: the testbed runs no munged (Slurm itself has auth/none),
# and its only users are its scenarios. Scenario tracker-munge renders the files with auth = munge.
auth = none
slurm_user = root
CONFIG
    local k=0 node
    for node in "${TESTBED_NODES[@]}"; do
        k=$((k + 1))
        cat >>"$config" <<CONFIG

[node $node]
gpus = $TESTBED_GPUS_PER_NODE
gpu_memory = 80GiB
vgpus = $TESTBED_VGPUS_PER_NODE
lender_port = $(lender_port "$node")
gpu_devices = $(node_gpu_devices "$node")
# All nodes are slurmd -N instances on this machine: one host name, one address, own ports.
hostname = $host
address = 127.0.0.1
slurmd_port = $((TESTBED_PORT_BASE + k))
cpus = $TESTBED_CPUS_PER_NODE
# Slurm's RealMemory: holder jobs ask memory (sbatch --mem), which a node must state to take them.
real_memory = ${TESTBED_REAL_MEMORY_MIB}MiB
CONFIG
    done
    # Nodes nI and nJ are |I - J| apart (n1 n2 = 1, n2 n3 = 1, n1 n3 = 2 for three).
    local i j
    printf '\n[distance]\n' >>"$config"
    for ((i = 1; i <= ${#TESTBED_NODES[@]}; i++)); do
        for ((j = i + 1; j <= ${#TESTBED_NODES[@]}; j++)); do
            echo "n$i n$j = $((j - i))" >>"$config"
        done
    done
    "$VGPU" config check "$config" >"$TESTBED_DIR/log/config-check.txt" 2>&1 \
        || die "the testbed's site configuration is invalid: $(cat "$TESTBED_DIR/log/config-check.txt")"
}

# VGPU_TESTBED_CGROUPS=yes: Slurm's cgroup plugins with ConstrainDevices=yes on cgroup v1 (as this machine kind
# has); v2: the same on Slurm's cgroup/v2 plugin (24.11 only: slurm-root.sh gives its root a cgroup2 hierarchy), for
# scenario constrain-devices; otherwise no cgroups at all.
process_tracking() {
    if [ "${VGPU_TESTBED_CGROUPS:-no}" != no ]; then
        printf '%s\n' ProctrackType=proctrack/cgroup TaskPlugin=task/cgroup
    else
        printf '%s\n' ProctrackType=proctrack/linuxproc TaskPlugin=task/none
    fi
}

# VGPU_TESTBED_MEMORY=yes: Slurm schedules memory too (CR_Core_Memory) and, with ConstrainRAMSpace=yes, confines each
# job to its --mem; a job that asks none gets its CPUs' share of the node's (DefMemPerCPU: the node's
# real_memory over its CPUs). Otherwise cores only, and a job's memory cgroup is limited by the node's memory.
select_type_parameters() {
    case ${VGPU_TESTBED_MEMORY:-no} in
        no) echo SelectTypeParameters=CR_Core ;;
        yes) printf '%s\n' SelectTypeParameters=CR_Core_Memory "DefMemPerCPU=$((TESTBED_REAL_MEMORY_MIB / TESTBED_CPUS_PER_NODE))" ;;
        *) die "VGPU_TESTBED_MEMORY is yes or no, not ${VGPU_TESTBED_MEMORY}" ;;
    esac
}

# The lend partition (AllowGroups=root) refuses a user's job at submission: 22.05 does so by itself, 24.11 only
# with EnforcePartLimits=ALL (without it the job is accepted and stays PENDING, reason
# uid_N_not_in_group_permitted_to_use_this_partition).
enforce_partition_access() {
    [ "$TESTBED_SLURM" = 22.05 ] || echo EnforcePartLimits=ALL
}

write_cgroup_config() {
    case ${VGPU_TESTBED_CGROUPS:-no} in
        no) return 0 ;;
        yes)
            cat >"$TESTBED_DIR/etc/cgroup.conf" <<CONFIG
# written by testbed/slurm/up.sh (VGPU_TESTBED_CGROUPS=yes): jobs see only the devices of their GRES, and use no
# more memory than they asked (holder jobs ask --mem)
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
ConstrainDevices=yes
ConstrainRAMSpace=yes
CONFIG
            ;;
        v2)
            [ "$TESTBED_SLURM" != 22.05 ] \
                || die "VGPU_TESTBED_CGROUPS=v2 needs VGPU_TESTBED_SLURM=24.11 (22.05's cgroup/v2 refuses a host with v1 hierarchies)"
            # Slurm reads /proc/self/cgroup, which lists every v1 hierarchy the kernel has mounted anywhere; a mount
            # or cgroup namespace cannot hide them. A kernel of its own can (in-uml.sh).
            ! grep -qv '^0::' /proc/self/cgroup \
                || die "VGPU_TESTBED_CGROUPS=v2: this machine has cgroup v1 hierarchies ($(grep -v '^0::' /proc/self/cgroup \
                    | cut -d : -f 2 | paste -sd ' ' -)), and slurmd's cgroup/v2 plugin stops on them: 'fatal: Hybrid mode is not supported';" \
                    "run the testbed under a kernel with cgroup v2 only: testbed/slurm/in-uml.sh testbed/slurm/run-scenarios.sh ..."
            # No systemd here: Slurm makes its slurmstepd scope itself.
            cat >"$TESTBED_DIR/etc/cgroup.conf" <<CONFIG
# written by testbed/slurm/up.sh (VGPU_TESTBED_CGROUPS=v2): jobs see only the devices of their GRES, through
# Slurm's cgroup v2 device programs, and use no more memory than they asked (holder jobs ask --mem)
CgroupPlugin=cgroup/v2
CgroupMountpoint=/sys/fs/cgroup
IgnoreSystemd=yes
ConstrainDevices=yes
ConstrainRAMSpace=yes
CONFIG
            ;;
        *) die "VGPU_TESTBED_CGROUPS is no, yes (cgroup v1) or v2, not ${VGPU_TESTBED_CGROUPS}" ;;
    esac
}

write_slurm_config() {
    local etc=$TESTBED_DIR/etc host
    host=$(hostname)
    cat >"$etc/slurm.conf" <<CONFIG
# Slurm configuration of the vgpu testbed (written by testbed/slurm/up.sh). The daemon settings
# are the testbed's; the node, partition and GRES lines below them come from vgpu config render
# (VGPU_TESTBED_SLURM_FILES=pieces: they are the site's own, and vgpu's piece is included).
ClusterName=vgpu-testbed
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$TESTBED_PORT_BASE
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
StateSaveLocation=$TESTBED_DIR/state
SlurmdSpoolDir=$TESTBED_DIR/spool/%n
SlurmctldPidFile=$TESTBED_DIR/run/slurmctld.pid
SlurmdPidFile=$TESTBED_DIR/run/slurmd-%n.pid
SlurmctldLogFile=$TESTBED_DIR/log/slurmctld.log
SlurmdLogFile=$TESTBED_DIR/log/slurmd-%n.log
# The SPANK bridge logs each vGPU's worker (token redacted) at verbose level; scenario spank-bridge checks it.
SlurmdDebug=verbose
PlugStackConfig=$etc/plugstack.conf
SlurmdParameters=config_overrides
$(process_tracking)
$(accounting_slurm_conf)
SelectType=select/cons_tres
$(select_type_parameters)
MpiDefault=none
ReturnToService=2
# Schedule released and finished jobs promptly; the default cycle is a minute.
SchedulerParameters=sched_interval=2
$(enforce_partition_access)
CONFIG
    case $TESTBED_SLURM_FILES in
        whole)
            "$VGPU" config render --what slurm.conf "$etc/vgpu.conf" >>"$etc/slurm.conf"
            "$VGPU" config render --what gres.conf "$etc/vgpu.conf" >"$etc/gres.conf"
            ;;
        pieces) write_site_own_slurm_lines ;;
    esac
    # job_submit/lua reads job_submit.lua from slurm.conf's directory; it loads vgpu's module from beside itself.
    "$VGPU" config render --what job_submit.lua "$etc/vgpu.conf" >"$etc/job_submit.lua"
    "$VGPU" config render --what vgpu_job_submit.lua "$etc/vgpu.conf" >"$etc/vgpu_job_submit.lua"
    if [ -n "${VGPU_SPANK_PLUGIN:-}" ]; then
        [ -f "$VGPU_SPANK_PLUGIN" ] || die "VGPU_SPANK_PLUGIN=$VGPU_SPANK_PLUGIN does not exist"
        case $TESTBED_SLURM_FILES in
            whole) "$VGPU" config render --what plugstack.conf "$etc/vgpu.conf" >"$etc/plugstack.conf" ;;
            pieces)
                mkdir -p "$etc/plugstack.conf.d"
                "$VGPU" config render --what plugstack.conf.d/vgpu.conf "$etc/vgpu.conf" >"$etc/plugstack.conf.d/vgpu.conf"
                printf '%s\n' "# the site's plugstack.conf (written by testbed/slurm/up.sh): its plugins' lines, then the folder" \
                    "include $etc/plugstack.conf.d/*.conf" >"$etc/plugstack.conf"
                ;;
        esac
    else
        echo "# no SPANK plugin: set VGPU_SPANK_PLUGIN when running up.sh to load the vgpu bridge" >"$etc/plugstack.conf"
    fi
}

# VGPU_TESTBED_SLURM_FILES=pieces: slurm.conf's node, partition and GRES lines as a site of its own writes them, with
# what the comments of vgpu's piece ask added by hand (vgpu in GresTypes, lua in JobSubmitPlugins, vgpu:V in the
# nodes' Gres=, MaxCPUsPerNode in the job partition), then `Include` of the rendered vgpu.slurm.conf, which defines the
# lend partition; gres.conf the site's Name=gpu lines and the rendered piece's Name=vgpu lines.
write_site_own_slurm_lines() {
    local etc=$TESTBED_DIR/etc node k=0 nodes
    nodes=$(IFS=,; echo "${TESTBED_NODES[*]}")
    {
        echo
        echo "# The site's own lines, with vgpu's additions (scenario site-files)"
        echo "GresTypes=gpu,vgpu"
        echo "JobSubmitPlugins=lua"
        for node in "${TESTBED_NODES[@]}"; do
            k=$((k + 1))
            echo "NodeName=$node NodeHostname=$(hostname) NodeAddr=127.0.0.1 Port=$((TESTBED_PORT_BASE + k))" \
                "CPUs=$TESTBED_CPUS_PER_NODE RealMemory=$TESTBED_REAL_MEMORY_MIB" \
                "Gres=gpu:$TESTBED_GPUS_PER_NODE,vgpu:$TESTBED_VGPUS_PER_NODE State=UNKNOWN"
        done
        echo "PartitionName=gpu Nodes=$nodes MaxCPUsPerNode=$((TESTBED_CPUS_PER_NODE - TESTBED_GPUS_PER_NODE))" \
            "Default=YES MaxTime=INFINITE State=UP"
        echo "Include $etc/vgpu.slurm.conf"
    } >>"$etc/slurm.conf"
    "$VGPU" config render --what vgpu.slurm.conf "$etc/vgpu.conf" >"$etc/vgpu.slurm.conf"
    {
        echo "# the site's gres.conf (written by testbed/slurm/up.sh), with the Name=vgpu lines of vgpu's piece"
        for node in "${TESTBED_NODES[@]}"; do
            echo "NodeName=$node Name=gpu File=$(node_gpu_devices "$node")"
        done
        "$VGPU" config render --what gres.conf "$etc/vgpu.conf" | grep '^NodeName=.* Name=vgpu '
    } >"$etc/gres.conf"
}

# Each node's lender, started with the command line of its rendered systemd unit, lending the testbed's GPUs
# (emulated ones where they are fake device files) and starting each worker on request (--pool 0: 2 cores are not
# enough for a warm worker per GPU, and no lender holds a CUDA context on a real GPU it does not lend).
start_lenders() {
    local node command
    for node in "${TESTBED_NODES[@]}"; do
        command=$("$VGPU" config render --what vgpu-lender.service --node "$node" "$TESTBED_DIR/etc/vgpu.conf" \
            | sed -n 's/^ExecStart=//p')
        [ -n "$command" ] || die "the rendered vgpu-lender.service of $node has no ExecStart line"
        # shellcheck disable=SC2086 # the unit's command line: words without spaces, split as systemd would
        $command --backend "$TESTBED_GPUS" --pool 0 </dev/null >"$TESTBED_DIR/log/lender-$node.log" 2>&1 &
        echo $! >"$TESTBED_DIR/run/lender-$node.pid"
    done
    for node in "${TESTBED_NODES[@]}"; do
        wait_until 60 "the lender of $node listens" grep -q '^vgpu lender listening' "$TESTBED_DIR/log/lender-$node.log" \
            || die "the lender of $node did not start: $(tail -n 5 "$TESTBED_DIR/log/lender-$node.log")"
    done
}

# A plugin built against another Slurm's headers does not load (Slurm refuses a plugin of another version): on
# another Slurm than the machine's 22.05, the bridge is built from the source beside VGPU_SPANK_PLUGIN (its
# Makefile's directory) against this Slurm's headers, into $TESTBED_DIR/bridge, and that one is loaded.
build_bridge_for_this_slurm() {
    [ -n "${VGPU_SPANK_PLUGIN:-}" ] && [ "$TESTBED_SLURM" != 22.05 ] || return 0
    local source build=$TESTBED_DIR/bridge
    source=$(dirname "$VGPU_SPANK_PLUGIN")
    # An installed bridge (a vgpu-spank-slurmXX.YY package's, testbed/packages) was built for its Slurm already.
    [ "$source" != /usr/lib/x86_64-linux-gnu/slurm-wlm ] || return 0
    [ -f "$source/Makefile" ] && [ -d "$source/src" ] \
        || die "VGPU_SPANK_PLUGIN=$VGPU_SPANK_PLUGIN: on Slurm $TESTBED_SLURM the bridge is built from its source," \
            "but $source has no Makefile and src/ (point it at slurm-spank-bridge/vgpu_spank.so)"
    mkdir -p "$build"
    cp -r "$source"/{Makefile,vgpu_spank.map,src,contract,check} "$build/"
    make -s -C "$build" vgpu_spank.so >"$TESTBED_DIR/log/bridge-build.log" 2>&1 \
        || die "building the SPANK bridge against Slurm $TESTBED_SLURM's headers failed: $(tail -n 5 "$TESTBED_DIR/log/bridge-build.log")"
    VGPU_SPANK_PLUGIN=$build/vgpu_spank.so
    say "SPANK bridge built against the headers of $(slurmctld -V): $VGPU_SPANK_PLUGIN"
}

nodes_idle() {
    local states
    states=$(slurm sinfo -h -N -p gpu -o '%N %t' | sort -u)
    [ "$(grep -c ' idle$' <<<"$states")" -eq "${#TESTBED_NODES[@]}" ]
}

"$(dirname "$0")/install-slurm.sh"
refuse_busy_ports
# Slurm names its cgroups by node and job (slurm_n1/uid_0/job_1): two testbeds with cgroups on one
# machine would share them.
if [ "${VGPU_TESTBED_CGROUPS:-no}" != no ] && ! remove_slurm_cgroups; then
    die "another testbed with VGPU_TESTBED_CGROUPS=yes runs here (its slurm_n* cgroups hold processes); tear it down first"
fi
# A failed start leaves the directory and any started daemon for inspection; down.sh clears both.
trap 'echo "testbed: up.sh failed; logs are in $TESTBED_DIR/log; clean up with $(dirname "$0")/down.sh" >&2' ERR
mkdir -p "$TESTBED_DIR"/{etc,state,run,log,out,capture}
# Jobs of other users (a scenario submits as nobody) write their output here too.
chmod 1777 "$TESTBED_DIR/out"
for node in "${TESTBED_NODES[@]}"; do
    mkdir -p "$TESTBED_DIR/spool/$node"
done
make_fake_gpus
build_bridge_for_this_slurm
write_site_config
write_slurm_config
write_cgroup_config
start_accounting

say "starting slurmctld on 127.0.0.1:$TESTBED_PORT_BASE"
slurmctld -f "$SLURM_CONF" || die "slurmctld did not start; see $TESTBED_DIR/log/slurmctld.log"
wait_until 30 "slurmctld answers ping" slurm scontrol ping \
    || die "slurmctld does not answer; see $TESTBED_DIR/log/slurmctld.log"
for node in "${TESTBED_NODES[@]}"; do
    slurmd -f "$SLURM_CONF" -N "$node" || die "slurmd -N $node did not start; see $TESTBED_DIR/log/slurmd-$node.log"
done
wait_until 60 "nodes ${TESTBED_NODES[*]} are idle" nodes_idle \
    || die "nodes are not idle: $(slurm sinfo -N -o '%N %t %E' 2>&1); see $TESTBED_DIR/log"
start_lenders
say "up in $TESTBED_DIR: nodes ${TESTBED_NODES[*]} idle, each gpu:$TESTBED_GPUS_PER_NODE,vgpu:$TESTBED_VGPUS_PER_NODE" \
    "and a lender of $TESTBED_GPUS GPUs on 127.0.0.1:$(lender_port n1)..$(lender_port "${TESTBED_NODES[-1]}")"
say "use it with: export SLURM_CONF=$SLURM_CONF"
