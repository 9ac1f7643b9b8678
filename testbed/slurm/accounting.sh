# Slurm's accounting in the testbed (sourced by up.sh, not run), with VGPU_TESTBED_ACCOUNTING=yes: a MariaDB of the
# testbed's own (its files in $TESTBED_DIR/mysql, on 127.0.0.1:base+97), slurmdbd on 127.0.0.1:base+96 storing into
# it, and the associations the scenarios submit under: root in account root, user nobody in account physics (its
# default), and root in physics too: the tracker (root) charges a holder job to the borrowing job's account, which
# Slurm allows a user with an association to it (docs/admin/accounting.md). slurm.conf then sends every job to slurmdbd and enforces associations, as a site with accounting does.
# Needs slurmdbd and mariadb-server (Debian's packages: make-trixie-root.sh puts them into the 24.11 root,
# install-slurm.sh installs them here for 22.05 when VGPU_TESTBED_ACCOUNTING=yes).
# shellcheck shell=bash

ACCOUNTING=${VGPU_TESTBED_ACCOUNTING:-no}
case $ACCOUNTING in
    yes | no) ;;
    *) die "VGPU_TESTBED_ACCOUNTING is yes or no, not $ACCOUNTING" ;;
esac
# The account a user's job is charged to unless it names another (sacctmgr's DefaultAccount of user nobody).
ACCOUNTING_USER_ACCOUNT=physics

mariadb_port() {
    echo $((TESTBED_PORT_BASE + 97))
}

slurmdbd_port() {
    echo $((TESTBED_PORT_BASE + 96))
}

# accounting_ports: the ports accounting listens on (none without it), for up.sh's check that they are free.
accounting_ports() {
    [ "$ACCOUNTING" = no ] || echo "$(mariadb_port) $(slurmdbd_port)"
}

# accounting_slurm_conf: slurm.conf's accounting lines.
accounting_slurm_conf() {
    if [ "$ACCOUNTING" = no ]; then
        printf '%s\n' JobAcctGatherType=jobacct_gather/none AccountingStorageType=accounting_storage/none
        return
    fi
    # jobacct_gather/linux samples each step's processes every 5 s: sacct's MaxRSS of a holder is what it used.
    printf '%s\n' JobAcctGatherType=jobacct_gather/linux JobAcctGatherFrequency=task=5 \
        AccountingStorageType=accounting_storage/slurmdbd AccountingStorageHost=127.0.0.1 \
        "AccountingStoragePort=$(slurmdbd_port)" AccountingStorageTRES=gres/gpu,gres/vgpu \
        AccountingStorageEnforce=associations AccountingStoreFlags=job_comment JobCompType=jobcomp/none
}

# start_accounting: MariaDB, its database user for slurmdbd, slurmdbd, and the cluster's accounts. Before slurmctld:
# it registers with slurmdbd when it starts.
start_accounting() {
    [ "$ACCOUNTING" = yes ] || return 0
    local etc=$TESTBED_DIR/etc data=$TESTBED_DIR/mysql password
    command -v mariadbd >/dev/null && command -v slurmdbd >/dev/null && command -v sacctmgr >/dev/null \
        || die "VGPU_TESTBED_ACCOUNTING=yes needs slurmdbd and mariadb-server (Debian's packages)"
    mkdir -p "$data"
    # The command line names the testbed's etc/ (down.sh stops only daemons whose command line does).
    cat >"$etc/mariadb.cnf" <<CONFIG
# MariaDB of the vgpu testbed's accounting (written by testbed/slurm/accounting.sh)
[mariadbd]
datadir = $data
socket = $TESTBED_DIR/run/mariadb.sock
pid-file = $TESTBED_DIR/run/mariadb.pid
log-error = $TESTBED_DIR/log/mariadb.log
bind-address = 127.0.0.1
port = $(mariadb_port)
skip-name-resolve
user = root
innodb_buffer_pool_size = 64M
innodb_log_file_size = 16M
CONFIG
    mariadb-install-db --defaults-file="$etc/mariadb.cnf" --auth-root-authentication-method=socket --skip-test-db \
        >"$TESTBED_DIR/log/mariadb-install.log" 2>&1 \
        || die "mariadb-install-db failed: $(tail -n 5 "$TESTBED_DIR/log/mariadb-install.log")"
    say "starting MariaDB on 127.0.0.1:$(mariadb_port) and slurmdbd on 127.0.0.1:$(slurmdbd_port)"
    mariadbd --defaults-file="$etc/mariadb.cnf" </dev/null >>"$TESTBED_DIR/log/mariadb.log" 2>&1 &
    wait_until 60 "MariaDB answers" mariadb-admin --no-defaults --socket="$TESTBED_DIR/run/mariadb.sock" ping \
        || die "MariaDB did not start: $(tail -n 5 "$TESTBED_DIR/log/mariadb.log")"
    password=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
    mariadb --no-defaults --socket="$TESTBED_DIR/run/mariadb.sock" -e \
        "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$password';
         GRANT ALL ON vgpu_testbed_acct.* TO 'slurm'@'127.0.0.1';" \
        || die "could not give slurmdbd a MariaDB user"
    # slurmdbd reads slurmdbd.conf beside slurm.conf (SLURM_CONF) and refuses one that others may read.
    (umask 077; cat >"$etc/slurmdbd.conf" <<CONFIG
# slurmdbd of the vgpu testbed (written by testbed/slurm/accounting.sh)
AuthType=auth/none
DbdAddr=127.0.0.1
DbdHost=localhost
DbdPort=$(slurmdbd_port)
SlurmUser=root
LogFile=$TESTBED_DIR/log/slurmdbd.log
PidFile=$TESTBED_DIR/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$(mariadb_port)
StorageUser=slurm
StoragePass=$password
StorageLoc=vgpu_testbed_acct
CONFIG
    )
    start_slurmdbd
    slurm sacctmgr -i add cluster vgpu-testbed >/dev/null || die "sacctmgr could not add the cluster"
    slurm sacctmgr -i add account "$ACCOUNTING_USER_ACCOUNT" Cluster=vgpu-testbed \
        Description="the testbed's users" Organization=testbed >/dev/null \
        || die "sacctmgr could not add account $ACCOUNTING_USER_ACCOUNT"
    slurm sacctmgr -i add user nobody Account="$ACCOUNTING_USER_ACCOUNT" DefaultAccount="$ACCOUNTING_USER_ACCOUNT" \
        Cluster=vgpu-testbed >/dev/null || die "sacctmgr could not add user nobody"
    slurm sacctmgr -i add user root Account="$ACCOUNTING_USER_ACCOUNT" Cluster=vgpu-testbed >/dev/null \
        || die "sacctmgr could not give root an association with account $ACCOUNTING_USER_ACCOUNT"
}

# start_slurmdbd: starts slurmdbd and waits until it answers. Debian 13's slurmdbd 24.11.5 on its MariaDB 11.8 at times
# ends at once on its first query ("mysql_query failed: 5027 Number of columns in result (=1) set execeeds maxmimum
# allowed number of columns (=0)", then "fatal: _check_mysql_concat_is_sane"); started again, it runs. Three tries.
start_slurmdbd() {
    local attempt
    for attempt in 1 2 3; do
        slurmdbd || die "slurmdbd did not start; see $TESTBED_DIR/log/slurmdbd.log"
        if wait_until 30 "slurmdbd answers or has ended" slurmdbd_answers_or_ended && slurmdbd_answers; then
            [ "$attempt" -eq 1 ] || say "slurmdbd answers at its start number $attempt"
            return 0
        fi
        stop_slurmdbd
    done
    die "slurmdbd does not answer: $(tail -n 5 "$TESTBED_DIR/log/slurmdbd.log")"
}

slurmdbd_answers() {
    timeout 10 sacctmgr -n list cluster >/dev/null 2>&1
}

# slurmdbd_answers_or_ended: sacctmgr reaches slurmdbd, or slurmdbd has ended (its pid file, which it writes before
# it connects to MariaDB, names no process).
slurmdbd_answers_or_ended() {
    local pid
    if pid=$(cat "$TESTBED_DIR/run/slurmdbd.pid" 2>/dev/null) && [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
        return 0
    fi
    slurmdbd_answers
}

stop_slurmdbd() {
    local pid
    pid=$(cat "$TESTBED_DIR/run/slurmdbd.pid" 2>/dev/null) || return 0
    kill "$pid" 2>/dev/null || true
    wait_until 15 "slurmdbd $pid has ended" process_gone "$pid" || kill -KILL "$pid" 2>/dev/null || true
    rm -f "$TESTBED_DIR/run/slurmdbd.pid"
}
