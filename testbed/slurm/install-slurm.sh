#!/usr/bin/env bash
# Installs Debian's Slurm (22.05 on Debian 12) where it is missing: the daemons and clients the
# testbed runs, the plugins it loads (job_submit/lua, auth/none, cred/none), the headers and the C
# toolchain a SPANK plugin is built with, python3 (scenarios check JSON with it), ss (iproute2: up.sh
# checks its ports with it) and openssl (common.sh signs the lender's control requests with it), which a
# minimal Debian may lack. With VGPU_TESTBED_ACCOUNTING=yes also slurmdbd and mariadb-server (accounting.sh). No
# service is started (the testbed starts its own daemons). Needs root.
set -euo pipefail

plugins=/usr/lib/x86_64-linux-gnu/slurm-wlm
accounting=()
if [ "${VGPU_TESTBED_ACCOUNTING:-no}" = yes ] && ! { command -v slurmdbd >/dev/null && command -v mariadbd >/dev/null; }; then
    accounting=(slurmdbd mariadb-server)
fi
if [ "${#accounting[@]}" -eq 0 ] && command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null \
    && [ -e "$plugins/job_submit_lua.so" ] && [ -e /usr/include/slurm/spank.h ] && command -v munged >/dev/null \
    && command -v cc >/dev/null && command -v make >/dev/null && command -v python3 >/dev/null && command -v ss >/dev/null \
    && command -v openssl >/dev/null; then
    exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "install-slurm: Slurm is missing and installing it needs root" >&2; exit 1; }
echo "install-slurm: installing Debian's Slurm packages"
timeout 600 apt-get update -q
# A package's maintainer script would start its service (MariaDB, slurmdbd, munge); policy-rc.d refuses every start
# while apt-get runs, unless the machine has a policy of its own.
policy=
if [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    trap 'rm -f "$policy"' EXIT
fi
DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -q \
    slurmctld slurmd slurm-client slurm-wlm-basic-plugins libslurm-dev slurm-wlm-basic-plugins-dev munge \
    gcc make libc6-dev python3 iproute2 openssl "${accounting[@]}"
expected=${VGPU_TESTBED_SLURM:-22.05}
slurmctld -V | grep -qF " $expected." || echo "install-slurm: warning: $(slurmctld -V) is not the $expected the testbed runs" >&2
