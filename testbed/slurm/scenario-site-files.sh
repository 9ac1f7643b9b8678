#!/usr/bin/env bash
# Scenario (testbed started with VGPU_SPANK_PLUGIN and VGPU_TESTBED_SLURM_FILES=pieces): Slurm's daemons read what
# `vgpu config render` gives a site that has files of its own. slurm.conf has the site's own node and partition lines
# (with what the piece's comments ask added) and `Include`s the rendered vgpu.slurm.conf, which alone defines the lend
# partition; plugstack.conf only includes its folder, where the rendered plugstack.conf.d/vgpu.conf lies; the
# rendered job_submit.lua calls the rendered vgpu_job_submit.lua. slurmctld has the lend partition as the piece says,
# a vgpu job is held at submission with the module's comment, and with the tracker started with its rendered unit's
# options a vgpu:3 job runs on 1 local and 2 borrowed GPUs through the included bridge, holders in the included
# partition. Then the same with MUNGE on, as a site's rendered files have it by default: a munged of the testbed's
# own, the folder's vgpu.conf rendered again from the configuration with auth = munge, the tracker with the unit's
# MUNGE options, and a vgpu:2 job gets its assembly and completes. The folder's vgpu.conf is restored at the end.
set -euo pipefail
source "$(dirname "$0")/common.sh"

etc=$TESTBED_DIR/etc
[ "$TESTBED_SLURM_FILES" = pieces ] && [ -f "$etc/plugstack.conf.d/vgpu.conf" ] \
    || die "scenario site-files needs a testbed brought up with VGPU_TESTBED_SLURM_FILES=pieces and VGPU_SPANK_PLUGIN"
piece=$etc/plugstack.conf.d/vgpu.conf
munge_dir=$etc/munge
FILL_JOBS=()
jobs=()
restore() {
    set +e
    cancel_jobs "${FILL_JOBS[@]}" "${jobs[@]}"
    stop_tracker
    [ -f "$piece.auth-none" ] && mv "$piece.auth-none" "$piece"
    [ -s "$munge_dir/sock/munged.pid" ] && kill "$(cat "$munge_dir/sock/munged.pid")"
}
trap restore EXIT

# The site's files take the pieces, and define nothing of vgpu's themselves.
grep -qx "Include $etc/vgpu.slurm.conf" "$etc/slurm.conf" || die "slurm.conf does not include vgpu.slurm.conf"
! grep -q '^PartitionName=vgpu-lend' "$etc/slurm.conf" || die "slurm.conf defines the lend partition itself"
grep -q '^PartitionName=vgpu-lend ' "$etc/vgpu.slurm.conf" || die "the rendered vgpu.slurm.conf has no lend partition"
grep -qx "include $etc/plugstack.conf.d/\*.conf" "$etc/plugstack.conf" && ! grep -q '^required' "$etc/plugstack.conf" \
    || die "plugstack.conf does not only include its folder: $(cat "$etc/plugstack.conf")"
# What the piece's comments ask of the site's own lines is what the site's lines have.
grep -qx "#   NodeName=n\[1-3\] ... Gres=gpu:$TESTBED_GPUS_PER_NODE,vgpu:$TESTBED_VGPUS_PER_NODE" "$etc/vgpu.slurm.conf" \
    || die "the piece does not ask Gres=gpu:$TESTBED_GPUS_PER_NODE,vgpu:$TESTBED_VGPUS_PER_NODE of n[1-3]: $(grep NodeName "$etc/vgpu.slurm.conf")"
max_cpus=$(sed -n 's/.*give it MaxCPUsPerNode=\([0-9]*\)\..*/\1/p' "$etc/vgpu.slurm.conf")
grep -q "^PartitionName=gpu .*MaxCPUsPerNode=$max_cpus " "$etc/slurm.conf" \
    || die "the piece asks MaxCPUsPerNode=$max_cpus of the job partition, which the site's line does not have"

# slurmctld read the included piece: the lend partition as it defines it.
lend=$(slurm scontrol --all show partition vgpu-lend) || die "slurmctld has no partition vgpu-lend"
for setting in Nodes=n\[1-3\] Hidden=YES AllowGroups=ALL PriorityTier=65533; do
    tr -s ' \n' '\n' <<<"$lend" | grep -qxF "$setting" || die "partition vgpu-lend lacks $setting: $lend"
done
say "slurmctld's vgpu-lend, from the included vgpu.slurm.conf: $(tr -s ' \n' '\n' <<<"$lend" \
    | grep -E '^(Nodes|Hidden|AllowGroups|PriorityTier)=' | paste -sd ' ' -)"

# The rendered wrapper job_submit.lua applies the module: a vgpu job is held with its comment.
jobs+=("$(submit --gres=vgpu:1 -J site-held --wrap true)")
expect_state "${jobs[-1]}" PENDING 10
[ "$(job_field "${jobs[-1]}" Priority)" = 0 ] || die "job ${jobs[-1]} is not held: priority $(job_field "${jobs[-1]}" Priority)"
job_comment_mentions "${jobs[-1]}" "vgpu: held until the vgpu tracker" \
    || die "job ${jobs[-1]} has not the module's comment: $(slurm scontrol show job "${jobs[-1]}" | grep Comment)"
say "job ${jobs[-1]} held at submission by the rendered job_submit.lua and vgpu_job_submit.lua"
cancel_jobs "${jobs[-1]}"

# tracker_auth CONFIG: the tracker's authentication options as its rendered unit starts it.
tracker_auth() {
    "$VGPU" config render --what vgpu-tracker.service "$1" | sed -n 's/^ExecStart=.* --holder-output [^ ]* //p'
}

read -r -a auth <<<"$(tracker_auth "$etc/vgpu.conf")"
start_tracker_with --config "$etc/vgpu.conf" "${auth[@]}"
fill_leaving_one_idle_gpu
jobs+=("$(submit --gres=vgpu:3 -J site-borrow --wrap "$(vgpu_job_script)")")
borrower=${jobs[-1]}
expect_state "$borrower" RUNNING 60
mapfile -t holders < <(holders_of "$borrower")
[ "${#holders[@]}" -eq 2 ] || die "job $borrower runs with ${#holders[@]} holder job(s) in vgpu-lend, expected 2"
expect_state "$borrower" COMPLETED 120
node=$(job_field "$borrower" NodeList)
check_vgpu_job_output "$TESTBED_DIR/out/$borrower.out" "$node" 1 2
wait_until 30 "job $borrower's holders are gone" no_holders_of "$borrower" || die "holders of job $borrower are left"
say "job $borrower ran on $node with 1 local + 2 borrowed vGPUs through the included bridge, holders ${holders[*]} in vgpu-lend"
cancel_jobs "${FILL_JOBS[@]}"
FILL_JOBS=()
stop_tracker

# MUNGE on, as a site's rendered files have it by default: the folder's piece rendered again.
start_munged "$munge_dir" || die "munged did not start (MUNGE needs munged, munge, unmunge and the munge user)"
socket=$munge_dir/sock/munge.socket
munge_config=$etc/vgpu-munge.conf
sed -e '/^auth = none$/d' -e "s|^slurm_user = root\$|slurm_user = root\nmunge_socket = $socket|" \
    "$etc/vgpu.conf" >"$munge_config"
"$VGPU" config check "$munge_config" >/dev/null || die "the testbed's configuration with MUNGE is invalid"
cp "$piece" "$piece.auth-none"
"$VGPU" config render --what plugstack.conf.d/vgpu.conf "$munge_config" >"$piece"
grep -q "^required .* auth=munge munge_socket=$socket\$" "$piece" \
    || die "the rendered plugstack.conf.d/vgpu.conf has no auth=munge: $(grep '^required' "$piece")"
read -r -a auth <<<"$(tracker_auth "$munge_config")"
start_tracker_with --config "$munge_config" "${auth[@]}"
jobs+=("$(submit --gres=vgpu:2 -J site-munge --wrap "$(vgpu_job_script)")")
expect_state "${jobs[-1]}" COMPLETED 90
check_vgpu_job_output "$TESTBED_DIR/out/${jobs[-1]}.out" "$(job_field "${jobs[-1]}" NodeList)" 2 0
grep '^vgpu tracker listening' "$TESTBED_DIR/log/tracker.log" | tail -n 1 | grep -q ', auth munge' \
    || die "the tracker did not start with MUNGE: $(grep '^vgpu tracker listening' "$TESTBED_DIR/log/tracker.log" | tail -n 1)"
pass "site-files: slurm.conf's Include of the rendered vgpu.slurm.conf gave slurmctld the lend partition," \
    "plugstack.conf's include folder the bridge, job_submit.lua the module's hold; job $borrower ran on 1 local +" \
    "2 borrowed vGPUs, job ${jobs[-1]} over the piece rendered with auth=munge (tracker ${auth[*]})"
