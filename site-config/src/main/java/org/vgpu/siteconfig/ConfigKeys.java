package org.vgpu.siteconfig;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.net.Endpoint;

/**
 * Every key of the site configuration, once: section, name, values, default and meaning. {@link SiteConfigReader}
 * parses and checks a file by this table, the records' defaults ({@link Policy}, {@link MigrationPolicy},
 * {@link SlurmSettings}) are read from it, and site-config/README.md's key reference is this table written out (its
 * tests compare the two). {@code [distance]} has no fixed keys (its lines name pairs of nodes) and is not here.
 */
final class ConfigKeys {
    static final String CLUSTER = "cluster";
    static final String POLICY = "policy";
    static final String SLURM = "slurm";
    static final String TRACKER = "tracker";
    static final String NODE = "node";

    private static final ConfigKey.Type<String> NAME = ConfigKey.Type.verbatim("name", ConfigValues::name);
    private static final ConfigKey.Type<String> HOST = ConfigKey.Type.verbatim("name or address", ConfigValues::host);
    private static final ConfigKey.Type<Endpoint> ENDPOINT =
            new ConfigKey.Type<>("`HOST:PORT` (IPv6 as `[ADDR]:PORT`)", ConfigValues::endpoint, Endpoint::toString);
    private static final ConfigKey.Type<Endpoint> LISTEN_ADDRESS = new ConfigKey.Type<>(
            "`HOST:PORT` (IPv6 as `[ADDR]:PORT`)", ConfigValues::listenAddress, Endpoint::toString);
    private static final ConfigKey.Type<Path> ABSOLUTE_PATH =
            new ConfigKey.Type<>("absolute path", ConfigValues::absolutePath, Path::toString);
    private static final ConfigKey.Type<Path> AGENT_SOCKET_DIRECTORY = new ConfigKey.Type<>(
            "absolute path, at most " + BridgeContract.AGENT_SOCKET_DIR_BYTES + " letters, digits and `"
                    + BridgeContract.SOCKET_PATH_CHARS + "`, no `.`/`..`",
            ConfigValues::agentSocketDir,
            Path::toString);
    private static final ConfigKey.Type<Boolean> SWITCH = new ConfigKey.Type<>(
            "`on`/`off` (also `yes`/`no`, `true`/`false`)", ConfigValues::onOff, ConfigValues::formatSwitch);
    private static final ConfigKey.Type<Boolean> AUTH = new ConfigKey.Type<>(
            "`" + BridgeContract.AUTH_MUNGE_WORD + "` or `" + BridgeContract.AUTH_NONE_WORD + "`",
            ConfigValues::munge,
            ConfigValues::formatMunge);
    private static final ConfigKey.Type<Duration> DURATION = new ConfigKey.Type<>(
            "duration: whole number + `ms`, `s`, `m`, `h`, `d`", ConfigValues::duration, ConfigValues::formatDuration);
    private static final ConfigKey.Type<Long> SIZE = new ConfigKey.Type<>(
            "size: whole number + `KiB MiB GiB TiB` or `KB MB GB TB`", ConfigValues::bytes, ConfigValues::formatBytes);
    private static final ConfigKey.Type<Long> BANDWIDTH = new ConfigKey.Type<>(
            "size per second (`10GB/s`, `12GiB/s`)", ConfigValues::bandwidth, ConfigValues::formatBandwidth);
    private static final ConfigKey.Type<String> DEVICE_FILES =
            ConfigKey.Type.verbatim("gres.conf `File=` syntax", value -> {
                GpuDeviceFiles.count(value);
                return value;
            });

    // [cluster]
    static final ConfigKey<String> CLUSTER_NAME =
            ConfigKey.required(CLUSTER, "name", NAME, "", "a name for logs and rendered files");
    static final ConfigKey<Endpoint> TRACKER_ADDRESS = ConfigKey.required(
            CLUSTER,
            "tracker",
            ENDPOINT,
            "a fixed port on a reachable address, not `0.0.0.0`",
            "host:port where the tracker listens");
    static final ConfigKey<Path> TOKEN_KEY_FILE = ConfigKey.required(
            CLUSTER,
            "token_key_file",
            ABSOLUTE_PATH,
            "the site key (`SiteKey`: one base64 line, ≥ 32 bytes, mode 600); `vgpu config check` loads it",
            "absolute path of the site key file");
    static final ConfigKey<String> LEND_PARTITION = ConfigKey.required(
            CLUSTER,
            "lend_partition",
            NAME,
            "must differ from `job_partition`",
            "the partition of the tracker's holder jobs");
    static final ConfigKey<String> LEND_QOS = ConfigKey.optional(
            CLUSTER, "lend_qos", NAME, "QOS needs slurmdbd", "none", "the QOS of the tracker's holder jobs");
    static final ConfigKey<Boolean> WORKER_TLS = ConfigKey.defaulted(
            CLUSTER,
            "worker_tls",
            SWITCH,
            "`off` only on a network no job process or user can reach or watch",
            "on",
            "a job's traffic with a borrowed GPU's worker uses TLS 1.3, each holder's worker with a fresh self-signed"
                    + " certificate that the job's session token pins; off: plain TCP, the program's GPU data and its"
                    + " session token readable on the wire (docs/admin/security.md#tls-between-jobs-and-workers)");

    static final ConfigKey<Boolean> HOLDERS_AS_BORROWER = ConfigKey.defaulted(
            CLUSTER,
            "holders_as_borrower",
            SWITCH,
            "on needs the rendered lend partition (open to users) and `vgpu_job_submit.lua` (refuses it to all but root)",
            "on",
            "the tracker submits each holder job as the borrowing job's user (root's `sbatch --uid`), so Slurm charges"
                    + " the borrowed GPU to that user and account, its worker holding only the key of its one lend;"
                    + " off: holders are the tracker's user's, charged to the borrower's account only"
                    + " (docs/admin/accounting.md)");

    // [policy]
    static final ConfigKey<Duration> IDLE_GRACE = ConfigKey.defaulted(
            POLICY,
            "idle_grace",
            DURATION,
            "",
            "30s",
            "a GPU is lent only after this long idle, so Slurm's own scheduler gets the first pick");
    static final ConfigKey<Integer> MAX_BORROWED_PER_JOB = ConfigKey.defaulted(
            POLICY,
            "max_borrowed_per_job",
            range(0, 1024),
            "",
            "4",
            "the most GPUs one job may borrow from other nodes");
    static final ConfigKey<Boolean> BORROWING =
            ConfigKey.defaulted(POLICY, "borrowing", SWITCH, "", "on", "off: vgpu jobs wait for local GPUs only");
    static final ConfigKey<Boolean> FALLBACK_LOCAL_ONLY = ConfigKey.defaulted(
            POLICY,
            "fallback_local_only",
            SWITCH,
            "",
            "off",
            "on: when the tracker gives no assembly, a vgpu job whose node has enough idle GPUs starts on them"
                    + " (the SPANK bridge's `" + BridgeContract.PLUGSTACK_FALLBACK + "="
                    + BridgeContract.FALLBACK_LOCAL_ONLY_WORD + "`)");
    static final ConfigKey<Boolean> MIGRATE_HOME = ConfigKey.defaulted(
            POLICY,
            "migrate_home",
            SWITCH,
            "",
            "on",
            "the tracker's hook moves a borrowed vGPU onto a GPU freed on its job's node when the move pays (below);"
                    + " off: only admins move vGPUs (`vgpu migrate`, `vgpu drain`)");
    static final ConfigKey<Duration> MIGRATION_COOLDOWN = ConfigKey.defaulted(
            POLICY,
            "migration_cooldown",
            DURATION,
            "",
            "5m",
            "no second migration of a vGPU within this time of its last (hysteresis)");
    static final ConfigKey<Duration> MIGRATION_END_GUARD = ConfigKey.defaulted(
            POLICY,
            "migration_end_guard",
            DURATION,
            "",
            "5m",
            "no migration when a job has less than this left before its end (time limit, or the user's hinted end"
                    + " if that comes first)");
    static final ConfigKey<Long> MEM_SYNC_BANDWIDTH = ConfigKey.defaulted(
            POLICY, "mem_sync_bandwidth", BANDWIDTH, "", "10GB/s", "the rate assumed for copying a vGPU's live memory");
    static final ConfigKey<Duration> REPLAY_COST = ConfigKey.defaulted(
            POLICY,
            "replay_cost",
            DURATION,
            "",
            "1s",
            "what a move blocks the app besides the copy (the lock, draining the source, the replay's catch-up"
                    + " with what changed since it ran ahead of the lock)");

    // [slurm]
    static final ConfigKey<String> JOB_PARTITION = ConfigKey.defaulted(
            SLURM,
            "job_partition",
            NAME,
            "",
            "gpu",
            "the partition user jobs (vgpu ones included) run in; rendered as the default partition");
    static final ConfigKey<Path> SPANK_PLUGIN = ConfigKey.defaulted(
            SLURM,
            "spank_plugin",
            ABSOLUTE_PATH,
            "",
            "/usr/lib/x86_64-linux-gnu/slurm-wlm/vgpu_spank.so",
            "the SPANK bridge's shared object, as plugstack.conf loads it on every node");
    static final ConfigKey<Path> VGPU_COMMAND = ConfigKey.defaulted(
            SLURM,
            "vgpu_command",
            ABSOLUTE_PATH,
            "a path, not a command line",
            "/usr/bin/vgpu",
            "the `vgpu` launcher on every node, which the tracker's unit and holder jobs start (the vgpu package's)");
    static final ConfigKey<Path> AGENT_SOCKET_DIR = ConfigKey.defaulted(
            SLURM,
            "agent_socket_dir",
            AGENT_SOCKET_DIRECTORY,
            "",
            "/run/vgpu",
            "rendered into plugstack.conf; the SPANK bridge creates it (root's, 0755) and each vgpu job's directory"
                    + " in it for the migration agent's socket");

    static final ConfigKey<Boolean> MUNGE = ConfigKey.defaulted(
            SLURM,
            "auth",
            AUTH,
            "",
            BridgeContract.AUTH_MUNGE_WORD,
            "how the tracker knows who asks: `munge`: every request of the SPANK bridge and of admins' commands carries"
                    + " a MUNGE credential (rendered as plugstack.conf's `auth=munge` and the tracker unit's `--auth"
                    + " munge --trusted-user`); `none`: the tracker believes whoever reaches its port, and job"
                    + " processes reach it (each job's migration agent polls it), so any user could ask for another"
                    + " job's assembly and its session tokens: for a test cluster whose users are all trusted only");
    static final ConfigKey<String> SLURM_USER = ConfigKey.defaulted(
            SLURM,
            "slurm_user",
            NAME,
            "slurm.conf's `SlurmUser`",
            "slurm",
            "the user slurmctld runs as; with `auth = munge` the tracker trusts it to ask for any job's assembly"
                    + " (the unit's `--trusted-user`)");
    static final ConfigKey<Path> MUNGE_SOCKET = ConfigKey.optional(
            SLURM,
            "munge_socket",
            ABSOLUTE_PATH,
            "with `auth = munge` only",
            "libmunge's",
            "munged's socket, where it is not libmunge's default: rendered as plugstack.conf's `munge_socket=` and the"
                    + " tracker unit's `--munge-socket`");

    // [tracker]
    static final ConfigKey<Endpoint> METRICS = ConfigKey.optional(
            TRACKER,
            "metrics",
            LISTEN_ADDRESS,
            "a wildcard such as `0.0.0.0` for every interface; a fixed port, not the tracker's",
            "none: the tracker serves no `/metrics`",
            "where `vgpu tracker` serves Prometheus' `/metrics`");

    // [node NAME]
    static final ConfigKey<Integer> GPUS =
            ConfigKey.required(NODE, "gpus", range(1, 64), "Slurm's `gpu` GRES", "the number of physical GPUs");
    static final ConfigKey<Long> GPU_MEMORY =
            ConfigKey.required(NODE, "gpu_memory", SIZE, "", "each GPU's memory, e.g. 80GiB");
    static final ConfigKey<Integer> VGPUS = ConfigKey.required(
            NODE,
            "vgpus",
            range(1, 4096),
            "the count-only `vgpu` GRES",
            "how many vGPUs jobs on this node may ask for in all");
    static final ConfigKey<Integer> LENDER_PORT = ConfigKey.required(
            NODE, "lender_port", range(1, 65535), "unique per host", "the TCP port of this node's lender");
    static final ConfigKey<String> GPU_DEVICES = ConfigKey.optional(
            NODE,
            "gpu_devices",
            DEVICE_FILES,
            "must name `gpus` files",
            "`/dev/nvidia[0-(gpus-1)]`",
            "the GPUs' device files");
    static final ConfigKey<String> ADDRESS = ConfigKey.optional(
            NODE,
            "address",
            HOST,
            "",
            "none",
            "Slurm's `NodeAddr`; the lender listens on the address, else the host name, else the node's name");
    static final ConfigKey<String> HOSTNAME =
            ConfigKey.optional(NODE, "hostname", HOST, "", "none", "Slurm's `NodeHostname`");
    static final ConfigKey<Integer> SLURMD_PORT = ConfigKey.optional(
            NODE, "slurmd_port", range(1, 65535), "unique per host", "Slurm's default", "Slurm's `Port`");
    static final ConfigKey<Integer> CPUS = ConfigKey.optional(
            NODE,
            "cpus",
            range(1, 100_000),
            "more than `gpus`",
            "none",
            "Slurm's `CPUs`; when every node states it, the job partition gets `MaxCPUsPerNode` = the smallest"
                    + " `cpus - gpus`, so one CPU per GPU stays free for holder jobs (a GPU on a node without a free"
                    + " CPU cannot be lent)");
    static final ConfigKey<Long> REAL_MEMORY =
            ConfigKey.optional(NODE, "real_memory", SIZE, "", "none", "Slurm's `RealMemory` (rendered in MiB)");

    /** The table, section by section, each section's keys in the order README and messages list them. */
    static final List<ConfigKey<?>> ALL = List.of(
            CLUSTER_NAME,
            TRACKER_ADDRESS,
            TOKEN_KEY_FILE,
            LEND_PARTITION,
            LEND_QOS,
            WORKER_TLS,
            HOLDERS_AS_BORROWER,
            IDLE_GRACE,
            MAX_BORROWED_PER_JOB,
            BORROWING,
            FALLBACK_LOCAL_ONLY,
            MIGRATE_HOME,
            MIGRATION_COOLDOWN,
            MIGRATION_END_GUARD,
            MEM_SYNC_BANDWIDTH,
            REPLAY_COST,
            JOB_PARTITION,
            SPANK_PLUGIN,
            VGPU_COMMAND,
            AGENT_SOCKET_DIR,
            MUNGE,
            SLURM_USER,
            MUNGE_SOCKET,
            METRICS,
            GPUS,
            GPU_MEMORY,
            VGPUS,
            LENDER_PORT,
            GPU_DEVICES,
            ADDRESS,
            HOSTNAME,
            SLURMD_PORT,
            CPUS,
            REAL_MEMORY);

    private ConfigKeys() {}

    /** The keys of one section kind, in table order. */
    static List<ConfigKey<?>> of(String section) {
        return ALL.stream().filter(key -> key.section().equals(section)).toList();
    }

    private static ConfigKey.Type<Integer> range(int min, int max) {
        return new ConfigKey.Type<>(
                min + ".." + max, value -> ConfigValues.integer(value, min, max), value -> Integer.toString(value));
    }
}
