package org.vgpu.siteconfig;

import java.io.IOException;
import java.nio.charset.MalformedInputException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;

import org.vgpu.common.error.ConfigException;
import org.vgpu.common.error.IoReasons;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.SiteKey;

/**
 * Reads and validates a site configuration file (format: site-config/README.md). Every problem is
 * collected with its line; the file is rejected with all of them at once, so an admin fixes a file
 * in one round.
 */
public final class SiteConfigReader {
    private static final String CLUSTER = "cluster";
    private static final String POLICY = "policy";
    private static final String NODE = "node";
    private static final String DISTANCE = "distance";
    private static final String SLURM = "slurm";
    private static final String TRACKER = "tracker";
    private static final List<String> SECTION_KINDS = List.of(CLUSTER, POLICY, NODE, DISTANCE, SLURM, TRACKER);
    private static final String DEFAULT_DISTANCE_KEY = "default";
    /** How many names or pairs a message lists before it says how many more there are. */
    private static final int SHOWN_AT_MOST = 10;

    private final Path file;
    private final List<ConfigProblem> problems = new ArrayList<>();

    private SiteConfigReader(Path file) {
        this.file = file.toAbsolutePath().normalize();
    }

    /**
     * Reads the file and validates its content.
     *
     * @throws SiteConfigException with every problem found
     */
    public static SiteConfig read(Path file) {
        return new SiteConfigReader(file).readValidated(false);
    }

    /**
     * As {@link #read}, and also checks the files the configuration refers to on this machine: the
     * token key file must be a valid, private {@link SiteKey}. For the tracker's and lenders' machines;
     * rendering Slurm files does not need it.
     */
    public static SiteConfig readAndCheckFiles(Path file) {
        return new SiteConfigReader(file).readValidated(true);
    }

    private SiteConfig readValidated(boolean checkFiles) {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            throw new SiteConfigException(List.of(new ConfigProblem(file, 0, "no such file")));
        } catch (MalformedInputException e) {
            throw new SiteConfigException(List.of(new ConfigProblem(file, 0, "is not UTF-8 text")));
        } catch (IOException e) {
            throw new SiteConfigException(List.of(new ConfigProblem(file, 0, "cannot be read: " + IoReasons.of(e))));
        }
        IniFile ini = IniFile.parse(file, text, problems);
        Map<String, IniFile.Section> singletons = new HashMap<>();
        List<IniFile.Section> nodeSections = new ArrayList<>();
        for (IniFile.Section section : ini.sections()) {
            sortSection(section, singletons, nodeSections);
        }

        Settings cluster = settings(
                singletons.get(CLUSTER),
                CLUSTER,
                List.of("name", "tracker", "token_key_file", "lend_partition", "lend_qos"));
        Optional<String> clusterName =
                cluster.required("name", "a name for logs and rendered files", ConfigValues::name);
        Optional<Endpoint> tracker =
                cluster.required("tracker", "host:port where the tracker listens", ConfigValues::endpoint);
        Optional<Path> tokenKeyFile =
                cluster.required("token_key_file", "absolute path of the site key file", ConfigValues::absolutePath);
        Optional<String> lendPartition =
                cluster.required("lend_partition", "the partition of the tracker's holder jobs", ConfigValues::name);
        Optional<String> lendQos = cluster.optional("lend_qos", ConfigValues::name);

        Policy policy = readPolicy(singletons.get(POLICY));
        List<NodeConfig> nodes = readNodes(nodeSections);
        SlurmSettings slurm = readSlurm(singletons.get(SLURM), lendPartition);
        Distances distances = readDistances(
                singletons.get(DISTANCE),
                nodeSections.stream().map(IniFile.Section::label).distinct().toList());
        Optional<Endpoint> metrics = readMetrics(singletons.get(TRACKER), tracker);

        if (checkFiles && tokenKeyFile.isPresent()) {
            try {
                SiteKey.load(tokenKeyFile.get());
            } catch (ConfigException e) {
                problems.add(new ConfigProblem(file, cluster.lineOf("token_key_file"), e.getMessage()));
            }
        }
        if (!problems.isEmpty()) {
            problems.sort(Comparator.comparingInt(ConfigProblem::line));
            throw new SiteConfigException(problems);
        }
        return new SiteConfig(
                file,
                clusterName.orElseThrow(),
                tracker.orElseThrow(),
                tokenKeyFile.orElseThrow(),
                lendPartition.orElseThrow(),
                lendQos,
                policy,
                nodes,
                distances,
                slurm,
                metrics);
    }

    private void sortSection(
            IniFile.Section section, Map<String, IniFile.Section> singletons, List<IniFile.Section> nodeSections) {
        if (!SECTION_KINDS.contains(section.kind())) {
            problem(
                    section.line(),
                    "unknown section " + section.title() + "; expected one of "
                            + String.join(
                                    ", ",
                                    SECTION_KINDS.stream()
                                            .map(kind -> "[" + kind + "]")
                                            .toList()));
        } else if (section.kind().equals(NODE)) {
            if (section.label().isEmpty()) {
                problem(section.line(), "[node] needs the node's Slurm name, e.g. [node n1]");
            } else {
                nodeSections.add(section);
            }
        } else if (!section.label().isEmpty()) {
            problem(section.line(), section.title() + ": [" + section.kind() + "] takes no label");
        } else {
            IniFile.Section first = singletons.putIfAbsent(section.kind(), section);
            if (first != null) {
                problem(
                        section.line(),
                        section.title() + " appears again (first at line " + first.line()
                                + "); write each of its settings once, in one section");
            }
        }
    }

    private Policy readPolicy(IniFile.Section section) {
        Settings policy = settings(
                section,
                POLICY,
                List.of(
                        "idle_grace",
                        "max_borrowed_per_job",
                        "borrowing",
                        "fallback_local_only",
                        "migrate_home",
                        "migration_cooldown",
                        "migration_end_guard",
                        "mem_sync_bandwidth",
                        "replay_cost"));
        Policy defaults = Policy.defaults();
        MigrationPolicy moves = defaults.migration();
        return new Policy(
                policy.optional("idle_grace", ConfigValues::duration).orElse(defaults.idleGrace()),
                policy.optional("max_borrowed_per_job", value -> ConfigValues.integer(value, 0, 1024))
                        .orElse(defaults.maxBorrowedPerJob()),
                policy.optional("borrowing", ConfigValues::onOff).orElse(defaults.borrowing()),
                policy.optional("fallback_local_only", ConfigValues::onOff).orElse(defaults.fallbackLocalOnly()),
                new MigrationPolicy(
                        policy.optional("migrate_home", ConfigValues::onOff).orElse(moves.migrateHome()),
                        policy.optional("migration_cooldown", ConfigValues::duration)
                                .orElse(moves.cooldown()),
                        policy.optional("migration_end_guard", ConfigValues::duration)
                                .orElse(moves.endGuard()),
                        policy.optional("mem_sync_bandwidth", ConfigValues::bandwidth)
                                .orElse(moves.memSyncBytesPerSecond()),
                        policy.optional("replay_cost", ConfigValues::duration).orElse(moves.replayCost())));
    }

    private List<NodeConfig> readNodes(List<IniFile.Section> sections) {
        if (sections.isEmpty()) {
            problem(
                    0,
                    "no [node NAME] section; describe each GPU node, e.g. [node n1] with gpus, gpu_memory,"
                            + " vgpus and lender_port");
            return List.of();
        }
        Map<String, Integer> firstLineOfNode = new HashMap<>();
        Map<String, Integer> firstLineOfPort = new HashMap<>();
        List<NodeConfig> nodes = new ArrayList<>();
        for (IniFile.Section section : sections) {
            Optional<String> name = validNodeName(section);
            if (name.isPresent()) {
                Integer firstLine = firstLineOfNode.putIfAbsent(name.get(), section.line());
                if (firstLine != null) {
                    problem(
                            section.line(),
                            "node '" + name.get() + "' is described again (first at line " + firstLine
                                    + "); node names must be unique");
                    continue;
                }
            }
            Settings node = settings(
                    section,
                    NODE,
                    List.of(
                            "gpus",
                            "gpu_memory",
                            "vgpus",
                            "lender_port",
                            "gpu_devices",
                            "address",
                            "hostname",
                            "slurmd_port",
                            "cpus",
                            "real_memory"));
            Optional<Integer> gpus =
                    node.required("gpus", "the number of physical GPUs", value -> ConfigValues.integer(value, 1, 64));
            Optional<Long> gpuMemory =
                    node.required("gpu_memory", "each GPU's memory, e.g. 80GiB", ConfigValues::bytes);
            Optional<Integer> vgpus = node.required(
                    "vgpus",
                    "how many vGPUs jobs on this node may ask for in all",
                    value -> ConfigValues.integer(value, 1, 4096));
            Optional<Integer> lenderPort = node.required(
                    "lender_port",
                    "the TCP port of this node's lender",
                    value -> ConfigValues.integer(value, 1, 65535));
            Optional<String> gpuDevices = node.optional("gpu_devices", value -> {
                int count = GpuDeviceFiles.count(value);
                if (gpus.isPresent() && count != gpus.get()) {
                    throw new IllegalArgumentException("'" + value + "' names " + count + " device file"
                            + (count == 1 ? "" : "s") + " but gpus = " + gpus.get() + "; expected one file per GPU");
                }
                return value;
            });
            Optional<String> address = node.optional("address", ConfigValues::host);
            Optional<String> hostname = node.optional("hostname", ConfigValues::host);
            Optional<Integer> slurmdPort = node.optional("slurmd_port", value -> ConfigValues.integer(value, 1, 65535));
            Optional<Integer> cpus = node.optional("cpus", value -> {
                int count = ConfigValues.integer(value, 1, 100_000);
                if (gpus.isPresent() && count <= gpus.get()) {
                    throw new IllegalArgumentException(count + " CPUs leave none for user jobs once each of the "
                            + gpus.get() + " GPUs keeps one for its holder job; expected more than gpus");
                }
                return count;
            });
            Optional<Long> realMemory = node.optional("real_memory", ConfigValues::bytes);
            if (name.isEmpty()) {
                continue;
            }
            if (gpus.isEmpty() || gpuMemory.isEmpty() || vgpus.isEmpty() || lenderPort.isEmpty()) {
                continue;
            }
            NodeConfig config = new NodeConfig(
                    name.get(),
                    gpus.get(),
                    gpuMemory.get(),
                    vgpus.get(),
                    lenderPort.get(),
                    gpuDevices.orElse(NodeConfig.defaultGpuDevices(gpus.get())),
                    address,
                    hostname,
                    slurmdPort.map(OptionalInt::of).orElse(OptionalInt.empty()),
                    cpus.map(OptionalInt::of).orElse(OptionalInt.empty()),
                    realMemory.map(OptionalLong::of).orElse(OptionalLong.empty()));
            for (String port : List.of("lender_port", "slurmd_port")) {
                Optional<Integer> value = port.equals("lender_port") ? lenderPort : slurmdPort;
                if (value.isPresent()) {
                    String endpoint = config.reachableAs() + ":" + value.get();
                    Integer clash = firstLineOfPort.putIfAbsent(endpoint, node.lineOf(port));
                    if (clash != null) {
                        problem(
                                node.lineOf(port),
                                port + " " + value.get() + " on host " + config.reachableAs()
                                        + " is already used at line " + clash
                                        + "; each daemon on one host needs its own port");
                    }
                }
            }
            nodes.add(config);
        }
        return nodes;
    }

    private SlurmSettings readSlurm(IniFile.Section section, Optional<String> lendPartition) {
        Settings slurm =
                settings(section, SLURM, List.of("job_partition", "spank_plugin", "vgpu_command", "agent_socket_dir"));
        String jobPartition =
                slurm.optional("job_partition", ConfigValues::name).orElse(SlurmSettings.DEFAULT_JOB_PARTITION);
        if (lendPartition.isPresent() && lendPartition.get().equals(jobPartition)) {
            problem(
                    slurm.lineOf("job_partition"),
                    "job_partition and lend_partition are both '" + jobPartition
                            + "'; holder jobs need a partition of their own, so users cannot take lent GPUs");
        }
        return new SlurmSettings(
                jobPartition,
                slurm.optional("spank_plugin", ConfigValues::absolutePath).orElse(SlurmSettings.DEFAULT_SPANK_PLUGIN),
                slurm.optional("vgpu_command", ConfigValues::absolutePath).orElse(SlurmSettings.DEFAULT_VGPU_COMMAND),
                slurm.optional("agent_socket_dir", ConfigValues::agentSocketDir)
                        .orElse(SlurmSettings.DEFAULT_AGENT_SOCKET_DIR));
    }

    /**
     * {@code [tracker] metrics = HOST:PORT}: where the tracker serves Prometheus' {@code /metrics};
     * absent, it serves none. A wildcard host (all interfaces) is allowed, port 0 is not: Prometheus
     * must be told the port.
     */
    private Optional<Endpoint> readMetrics(IniFile.Section section, Optional<Endpoint> tracker) {
        Settings settings = settings(section, TRACKER, List.of("metrics"));
        Optional<Endpoint> metrics = settings.optional("metrics", ConfigValues::listenAddress);
        if (metrics.isPresent()
                && tracker.isPresent()
                && metrics.get().port() == tracker.get().port()
                && (metrics.get().isWildcard()
                        || metrics.get().host().equals(tracker.get().host()))) {
            problem(
                    settings.lineOf("metrics"),
                    "metrics: " + metrics.get() + " is where the tracker's socket listens ([cluster] tracker = "
                            + tracker.get() + "); give /metrics a port of its own, e.g. 9464");
        }
        return metrics;
    }

    /**
     * Without a [distance] section the network is flat: every pair of nodes is 1 apart. Only the listed pairs are
     * kept (see {@link Distances}); completeness without a default is checked by counting, so a large site with a
     * default never walks its n * (n - 1) / 2 pairs.
     */
    private Distances readDistances(IniFile.Section section, List<String> names) {
        Map<Distances.NodePair, Integer> pairs = new HashMap<>();
        Optional<Integer> fallback = section == null ? Optional.of(1) : Optional.empty();
        Map<Distances.NodePair, Integer> lineOfPair = new HashMap<>();
        Set<String> known = new HashSet<>(names);
        for (IniFile.Entry entry : section == null ? List.<IniFile.Entry>of() : section.entries()) {
            Optional<Integer> distance = parse(entry, value -> ConfigValues.integer(value, 1, 1_000_000));
            if (entry.key().equals(DEFAULT_DISTANCE_KEY)) {
                if (fallback.isPresent()) {
                    problem(entry.line(), "'default' is set again in [distance]; set it once");
                }
                fallback = distance;
                continue;
            }
            String[] ends = entry.key().split("\\s+");
            if (ends.length != 2) {
                problem(
                        entry.line(),
                        "'" + entry.key() + "' in [distance] is not a pair of nodes; expected"
                                + " 'NODE NODE = DISTANCE' (e.g. n1 n2 = 1) or 'default = DISTANCE'");
                continue;
            }
            boolean bothKnown = true;
            for (String end : ends) {
                if (!known.contains(end)) {
                    problem(
                            entry.line(),
                            "distance to unknown node '" + end + "'; "
                                    + (names.isEmpty() ? "no node is described" : "the nodes are " + listed(names)));
                    bothKnown = false;
                }
            }
            if (!bothKnown) {
                continue;
            }
            if (ends[0].equals(ends[1])) {
                problem(
                        entry.line(),
                        "distance from '" + ends[0] + "' to itself; a node is 0 from itself, give pairs of"
                                + " different nodes");
                continue;
            }
            Distances.NodePair pair = Distances.NodePair.of(ends[0], ends[1]);
            Integer firstLine = lineOfPair.putIfAbsent(pair, entry.line());
            if (firstLine != null) {
                problem(
                        entry.line(),
                        "distance between '" + pair.first() + "' and '" + pair.second()
                                + "' is given again (first at line " + firstLine
                                + "); distances are symmetric, give each pair once");
                continue;
            }
            distance.ifPresent(value -> pairs.put(pair, value));
        }
        long allPairs = (long) names.size() * (names.size() - 1) / 2;
        if (fallback.isEmpty()
                && lineOfPair.size() < allPairs
                && section != null
                && problemsAt(section.entries()).isEmpty()) {
            problem(
                    section.line(),
                    "[distance] lacks " + missingPairs(names, lineOfPair.keySet(), allPairs)
                            + "; add a line 'NODE NODE = DISTANCE' for each, or 'default = DISTANCE' for all pairs"
                            + " not listed");
        }
        return new Distances(known, pairs, fallback.map(OptionalInt::of).orElse(OptionalInt.empty()));
    }

    /** The first few pairs not given, and how many more: a site of thousands of nodes lacks millions. */
    private static String missingPairs(List<String> names, Set<Distances.NodePair> given, long allPairs) {
        List<String> shown = new ArrayList<>();
        for (int i = 0; i < names.size() && shown.size() < SHOWN_AT_MOST; i++) {
            for (int j = i + 1; j < names.size() && shown.size() < SHOWN_AT_MOST; j++) {
                Distances.NodePair pair = Distances.NodePair.of(names.get(i), names.get(j));
                if (!given.contains(pair)) {
                    shown.add(pair.first() + " " + pair.second());
                }
            }
        }
        long more = allPairs - given.size() - shown.size();
        return more == 0
                ? String.join(", ", shown)
                : String.join(", ", shown) + " and " + more + " more pair" + (more == 1 ? "" : "s");
    }

    /** Names for a message: all of a small site's, the first few of a large one's. */
    private static String listed(List<String> names) {
        return names.size() <= SHOWN_AT_MOST
                ? String.join(", ", names)
                : String.join(", ", names.subList(0, SHOWN_AT_MOST)) + " and " + (names.size() - SHOWN_AT_MOST)
                        + " more";
    }

    /** The problems already reported on these entries; a table with bad lines is not also called incomplete. */
    private List<ConfigProblem> problemsAt(List<IniFile.Entry> entries) {
        Set<Integer> lines = entries.stream().map(IniFile.Entry::line).collect(Collectors.toSet());
        return problems.stream()
                .filter(problem -> lines.contains(problem.line()))
                .toList();
    }

    private Optional<String> validNodeName(IniFile.Section section) {
        try {
            return Optional.of(ConfigValues.name(section.label()));
        } catch (IllegalArgumentException e) {
            problem(section.line(), "node name: " + e.getMessage());
            return Optional.empty();
        }
    }

    private <T> Optional<T> parse(IniFile.Entry entry, Function<String, T> parser) {
        try {
            return Optional.of(parser.apply(entry.value()));
        } catch (IllegalArgumentException e) {
            problem(entry.line(), entry.key() + ": " + e.getMessage());
            return Optional.empty();
        }
    }

    private void problem(int line, String message) {
        problems.add(new ConfigProblem(file, line, message));
    }

    private Settings settings(IniFile.Section section, String kind, List<String> knownKeys) {
        return new Settings(section, kind, knownKeys);
    }

    /**
     * The entries of one section (possibly absent) by key: unknown and repeated keys are reported
     * when it is made, missing required keys when they are asked for.
     */
    private final class Settings {
        private final IniFile.Section section;
        private final String kind;
        private final Map<String, IniFile.Entry> entries = new HashMap<>();
        private boolean missingSectionReported;

        Settings(IniFile.Section section, String kind, List<String> knownKeys) {
            this.section = section;
            this.kind = kind;
            if (section == null) {
                return;
            }
            for (IniFile.Entry entry : section.entries()) {
                if (!knownKeys.contains(entry.key())) {
                    problem(
                            entry.line(),
                            "unknown key '" + entry.key() + "' in " + section.title() + "; expected one of "
                                    + String.join(", ", knownKeys));
                    continue;
                }
                IniFile.Entry first = entries.putIfAbsent(entry.key(), entry);
                if (first != null) {
                    problem(
                            entry.line(),
                            "'" + entry.key() + "' is set again in " + section.title() + " (first at line "
                                    + first.line() + "); set each key once");
                }
            }
        }

        <T> Optional<T> optional(String key, Function<String, T> parser) {
            IniFile.Entry entry = entries.get(key);
            return entry == null ? Optional.empty() : parse(entry, parser);
        }

        <T> Optional<T> required(String key, String meaning, Function<String, T> parser) {
            if (!entries.containsKey(key)) {
                if (section == null) {
                    reportMissingSectionOnce();
                } else {
                    problem(section.line(), section.title() + " lacks '" + key + "' (" + meaning + ")");
                }
                return Optional.empty();
            }
            return optional(key, parser);
        }

        int lineOf(String key) {
            IniFile.Entry entry = entries.get(key);
            return entry != null ? entry.line() : section != null ? section.line() : 0;
        }

        private void reportMissingSectionOnce() {
            if (!missingSectionReported) {
                missingSectionReported = true;
                problem(0, "no [" + kind + "] section; it is required (see site-config/README.md for its keys)");
            }
        }
    }
}
