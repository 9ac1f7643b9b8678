package org.vgpu.siteconfig;

import java.io.IOException;
import java.nio.charset.MalformedInputException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Set;
import java.util.function.UnaryOperator;

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
    private static final String CLUSTER = ConfigKeys.CLUSTER;
    private static final String POLICY = ConfigKeys.POLICY;
    private static final String NODE = ConfigKeys.NODE;
    static final String DISTANCE = "distance";
    private static final String SLURM = ConfigKeys.SLURM;
    private static final String TRACKER = ConfigKeys.TRACKER;
    private static final List<String> SECTION_KINDS = List.of(CLUSTER, POLICY, NODE, DISTANCE, SLURM, TRACKER);

    private final Path file;
    private final FileProblems problems;

    private SiteConfigReader(Path file) {
        this.file = file.toAbsolutePath().normalize();
        this.problems = new FileProblems(this.file);
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
        if (Files.isDirectory(file)) {
            throw new SiteConfigException(
                    List.of(new ConfigProblem(file, 0, "is a directory, not a configuration file")));
        }
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
        IniFile ini = IniFile.parse(file, text, problems.list());
        Map<String, IniFile.Section> singletons = new HashMap<>();
        List<IniFile.Section> nodeSections = new ArrayList<>();
        for (IniFile.Section section : ini.sections()) {
            sortSection(section, singletons, nodeSections);
        }

        Settings cluster = new Settings(singletons.get(CLUSTER), CLUSTER);
        Optional<String> clusterName = cluster.required(ConfigKeys.CLUSTER_NAME);
        Optional<Endpoint> tracker = cluster.required(ConfigKeys.TRACKER_ADDRESS);
        Optional<Path> tokenKeyFile = cluster.required(ConfigKeys.TOKEN_KEY_FILE);
        Optional<String> lendPartition = cluster.required(ConfigKeys.LEND_PARTITION);
        Optional<String> lendQos = cluster.optional(ConfigKeys.LEND_QOS);
        boolean workerTls = cluster.valueOrDefault(ConfigKeys.WORKER_TLS);
        boolean holdersAsBorrower = cluster.valueOrDefault(ConfigKeys.HOLDERS_AS_BORROWER);

        Policy policy = readPolicy(singletons.get(POLICY));
        Map<IniFile.Section, List<String>> namesBySection = nodeNames(nodeSections);
        List<NodeConfig> nodes = readNodes(nodeSections, namesBySection);
        SlurmSettings slurm = readSlurm(singletons.get(SLURM), lendPartition);
        Distances distances = new DistanceSection(problems)
                .read(
                        singletons.get(DISTANCE),
                        namesBySection.values().stream().flatMap(List::stream).toList());
        Optional<Endpoint> metrics = readMetrics(singletons.get(TRACKER), tracker);

        if (checkFiles && tokenKeyFile.isPresent()) {
            try {
                SiteKey.load(tokenKeyFile.get());
            } catch (ConfigException e) {
                problems.add(cluster.lineOf(ConfigKeys.TOKEN_KEY_FILE), e.getMessage());
            }
        }
        problems.throwIfAny();
        return new SiteConfig(
                file,
                clusterName.orElseThrow(),
                tracker.orElseThrow(),
                tokenKeyFile.orElseThrow(),
                lendPartition.orElseThrow(),
                lendQos,
                workerTls,
                holdersAsBorrower,
                policy,
                nodes,
                distances,
                slurm,
                metrics);
    }

    private void sortSection(
            IniFile.Section section, Map<String, IniFile.Section> singletons, List<IniFile.Section> nodeSections) {
        if (!SECTION_KINDS.contains(section.kind())) {
            problems.add(
                    section.line(),
                    "unknown section " + section.title() + "; expected one of "
                            + String.join(
                                    ", ",
                                    SECTION_KINDS.stream()
                                            .map(kind -> "[" + kind + "]")
                                            .toList()));
        } else if (section.kind().equals(NODE)) {
            if (section.label().isEmpty()) {
                problems.add(section.line(), "[node] needs the node's Slurm name, e.g. [node n1]");
            } else {
                nodeSections.add(section);
            }
        } else if (!section.label().isEmpty()) {
            problems.add(section.line(), section.title() + ": [" + section.kind() + "] takes no label");
        } else {
            IniFile.Section first = singletons.putIfAbsent(section.kind(), section);
            if (first != null) {
                problems.add(
                        section.line(),
                        section.title() + " appears again (first at line " + first.line()
                                + "); write each of its settings once, in one section");
            }
        }
    }

    private Policy readPolicy(IniFile.Section section) {
        Settings policy = new Settings(section, POLICY);
        return new Policy(
                policy.valueOrDefault(ConfigKeys.IDLE_GRACE),
                policy.valueOrDefault(ConfigKeys.MAX_BORROWED_PER_JOB),
                policy.valueOrDefault(ConfigKeys.BORROWING),
                policy.valueOrDefault(ConfigKeys.FALLBACK_LOCAL_ONLY),
                new MigrationPolicy(
                        policy.valueOrDefault(ConfigKeys.MIGRATE_HOME),
                        policy.valueOrDefault(ConfigKeys.MIGRATION_COOLDOWN),
                        policy.valueOrDefault(ConfigKeys.MIGRATION_END_GUARD),
                        policy.valueOrDefault(ConfigKeys.MEM_SYNC_BANDWIDTH),
                        policy.valueOrDefault(ConfigKeys.REPLAY_COST)));
    }

    /**
     * The nodes each [node ...] section describes, its label read as a Slurm host list ({@code [node gpu[001-128]]});
     * a node described twice is reported at the second section and kept in the first only, so every node has one
     * section. A section whose label is malformed describes none.
     */
    private Map<IniFile.Section, List<String>> nodeNames(List<IniFile.Section> sections) {
        Map<IniFile.Section, List<String>> namesBySection = new LinkedHashMap<>();
        Map<String, Integer> firstLineOfNode = new HashMap<>();
        for (IniFile.Section section : sections) {
            List<String> expanded;
            try {
                expanded = HostList.expand(section.label());
            } catch (IllegalArgumentException e) {
                problems.add(section.line(), "node name: " + e.getMessage());
                continue;
            }
            List<String> names = new ArrayList<>(expanded.size());
            // Each name described before, with the line where it was first; reported once per section.
            Map<String, Integer> again = new LinkedHashMap<>();
            for (String name : expanded) {
                Integer firstLine = firstLineOfNode.putIfAbsent(name, section.line());
                if (firstLine == null) {
                    names.add(name);
                } else {
                    again.putIfAbsent(name, firstLine);
                }
            }
            if (!again.isEmpty()) {
                Map.Entry<String, Integer> first = again.entrySet().iterator().next();
                String where = first.getValue() == section.line()
                        ? "named twice in " + section.title()
                        : "described again (" + (again.size() == 1 ? "" : first.getKey() + " ") + "first at line "
                                + first.getValue() + ")";
                problems.add(
                        section.line(),
                        (again.size() == 1
                                        ? "node '" + first.getKey() + "' is "
                                        : again.size() + " nodes (" + FileProblems.listed(List.copyOf(again.keySet()))
                                                + ") are ")
                                + where + "; node names must be unique");
            }
            namesBySection.put(section, names);
        }
        return namesBySection;
    }

    private List<NodeConfig> readNodes(
            List<IniFile.Section> sections, Map<IniFile.Section, List<String>> namesBySection) {
        if (sections.isEmpty()) {
            problems.add(
                    0, "no [node NAME] section; describe each GPU node, e.g. [node n1] with " + requiredKeys(NODE));
            return List.of();
        }
        Map<String, Integer> firstLineOfPort = new HashMap<>();
        List<NodeConfig> nodes = new ArrayList<>();
        for (IniFile.Section section : sections) {
            // A section whose label is malformed has its keys checked all the same.
            List<String> names = namesBySection.getOrDefault(section, List.of());
            Settings node = new Settings(section, NODE);
            Optional<Integer> gpus = node.required(ConfigKeys.GPUS);
            Optional<Long> gpuMemory = node.required(ConfigKeys.GPU_MEMORY);
            Optional<Integer> vgpus = node.required(ConfigKeys.VGPUS);
            Optional<Integer> lenderPort = node.required(ConfigKeys.LENDER_PORT);
            Optional<String> gpuDevices = node.optional(ConfigKeys.GPU_DEVICES, value -> {
                int count = GpuDeviceFiles.count(value);
                if (gpus.isPresent() && count != gpus.get()) {
                    throw new IllegalArgumentException("'" + value + "' names " + count + " device file"
                            + (count == 1 ? "" : "s") + " but " + ConfigKeys.GPUS.name() + " = " + gpus.get()
                            + "; expected one file per GPU");
                }
                return value;
            });
            Optional<String> address = node.optional(ConfigKeys.ADDRESS);
            Optional<String> hostname = node.optional(ConfigKeys.HOSTNAME);
            Optional<Integer> slurmdPort = node.optional(ConfigKeys.SLURMD_PORT);
            Optional<Integer> cpus = node.optional(ConfigKeys.CPUS, count -> {
                if (gpus.isPresent() && count <= gpus.get()) {
                    throw new IllegalArgumentException(count + " CPUs leave none for user jobs once each of the "
                            + gpus.get() + " GPUs keeps one for its holder job; expected more than "
                            + ConfigKeys.GPUS.name());
                }
                return count;
            });
            Optional<Long> realMemory = node.optional(ConfigKeys.REAL_MEMORY);
            if (gpus.isEmpty() || gpuMemory.isEmpty() || vgpus.isEmpty() || lenderPort.isEmpty()) {
                continue;
            }
            // A range section gives each of its nodes the same settings; a port clash among them is reported once.
            Set<ConfigKey<Integer>> clashReported = new HashSet<>();
            for (String name : names) {
                NodeConfig config = new NodeConfig(
                        name,
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
                for (ConfigKey<Integer> port : List.of(ConfigKeys.LENDER_PORT, ConfigKeys.SLURMD_PORT)) {
                    Optional<Integer> value = port == ConfigKeys.LENDER_PORT ? lenderPort : slurmdPort;
                    if (value.isPresent()) {
                        String endpoint = config.reachableAs() + ":" + value.get();
                        Integer clash = firstLineOfPort.putIfAbsent(endpoint, node.lineOf(port));
                        if (clash != null && clashReported.add(port)) {
                            problems.add(
                                    node.lineOf(port),
                                    port.name() + " " + value.get() + " on host " + config.reachableAs()
                                            + " is already used at line " + clash
                                            + (clash == node.lineOf(port)
                                                    ? " by another node of " + section.title()
                                                    : "")
                                            + "; each daemon on one host needs its own port");
                        }
                    }
                }
                nodes.add(config);
            }
        }
        return nodes;
    }

    private SlurmSettings readSlurm(IniFile.Section section, Optional<String> lendPartition) {
        Settings slurm = new Settings(section, SLURM);
        String jobPartition = slurm.valueOrDefault(ConfigKeys.JOB_PARTITION);
        if (lendPartition.isPresent() && lendPartition.get().equals(jobPartition)) {
            problems.add(
                    slurm.lineOf(ConfigKeys.JOB_PARTITION),
                    ConfigKeys.JOB_PARTITION.name() + " and " + ConfigKeys.LEND_PARTITION.name() + " are both '"
                            + jobPartition
                            + "'; holder jobs need a partition of their own, so users cannot take lent GPUs");
        }
        boolean munge = slurm.valueOrDefault(ConfigKeys.MUNGE);
        Optional<Path> mungeSocket = slurm.optional(ConfigKeys.MUNGE_SOCKET);
        if (mungeSocket.isPresent() && !munge) {
            problems.add(
                    slurm.lineOf(ConfigKeys.MUNGE_SOCKET),
                    ConfigKeys.MUNGE_SOCKET.name() + " is set but " + ConfigKeys.MUNGE.name() + " = "
                            + ConfigKeys.MUNGE.format(false) + "; set it with " + ConfigKeys.MUNGE.name() + " = "
                            + ConfigKeys.MUNGE.format(true) + " only");
            mungeSocket = Optional.empty();
        }
        return new SlurmSettings(
                jobPartition,
                slurm.valueOrDefault(ConfigKeys.SPANK_PLUGIN),
                slurm.valueOrDefault(ConfigKeys.VGPU_COMMAND),
                slurm.valueOrDefault(ConfigKeys.AGENT_SOCKET_DIR),
                munge,
                slurm.valueOrDefault(ConfigKeys.SLURM_USER),
                mungeSocket);
    }

    /**
     * {@code [tracker] metrics = HOST:PORT}: where the tracker serves Prometheus' {@code /metrics};
     * absent, it serves none. A wildcard host (all interfaces) is allowed, port 0 is not: Prometheus
     * must be told the port.
     */
    private Optional<Endpoint> readMetrics(IniFile.Section section, Optional<Endpoint> tracker) {
        Settings settings = new Settings(section, TRACKER);
        Optional<Endpoint> metrics = settings.optional(ConfigKeys.METRICS);
        if (metrics.isPresent()
                && tracker.isPresent()
                && metrics.get().port() == tracker.get().port()
                && (metrics.get().isWildcard()
                        || metrics.get().host().equals(tracker.get().host()))) {
            problems.add(
                    settings.lineOf(ConfigKeys.METRICS),
                    "metrics: " + metrics.get() + " is where the tracker's socket listens ([cluster] tracker = "
                            + tracker.get() + "); give /metrics a port of its own, e.g. 9464");
        }
        return metrics;
    }

    /** "a, b, c and d": the keys a section of this kind must set. */
    private static String requiredKeys(String kind) {
        List<String> required = ConfigKeys.of(kind).stream()
                .filter(ConfigKey::isRequired)
                .map(ConfigKey::name)
                .toList();
        return String.join(", ", required.subList(0, required.size() - 1)) + " and " + required.getLast();
    }

    /**
     * The entries of one section (possibly absent) by key, read as {@link ConfigKeys} describes its keys: unknown and
     * repeated keys are reported when it is made, missing required keys when they are asked for.
     */
    private final class Settings {
        private final IniFile.Section section;
        private final String kind;
        private final Map<String, IniFile.Entry> entries = new HashMap<>();
        private boolean missingSectionReported;

        Settings(IniFile.Section section, String kind) {
            this.section = section;
            this.kind = kind;
            if (section == null) {
                return;
            }
            List<String> knownKeys =
                    ConfigKeys.of(kind).stream().map(ConfigKey::name).toList();
            for (IniFile.Entry entry : section.entries()) {
                if (!knownKeys.contains(entry.key())) {
                    problems.add(
                            entry.line(),
                            "unknown key '" + entry.key() + "' in " + section.title() + "; expected one of "
                                    + String.join(", ", knownKeys));
                    continue;
                }
                IniFile.Entry first = entries.putIfAbsent(entry.key(), entry);
                if (first != null) {
                    problems.add(
                            entry.line(),
                            "'" + entry.key() + "' is set again in " + section.title() + " (first at line "
                                    + first.line() + "); set each key once");
                }
            }
        }

        <T> Optional<T> optional(ConfigKey<T> key) {
            return optional(key, value -> value);
        }

        /** The key's value, which {@code check} may still refuse (with an {@link IllegalArgumentException}). */
        <T> Optional<T> optional(ConfigKey<T> key, UnaryOperator<T> check) {
            IniFile.Entry entry = entries.get(checked(key).name());
            return entry == null ? Optional.empty() : problems.parse(entry, value -> check.apply(key.parse(value)));
        }

        /** The key's value; its default when the file does not set it or sets it wrong (that is reported). */
        <T> T valueOrDefault(ConfigKey<T> key) {
            return optional(key).orElseGet(key::defaultValue);
        }

        <T> Optional<T> required(ConfigKey<T> key) {
            if (!entries.containsKey(checked(key).name())) {
                if (section == null) {
                    reportMissingSectionOnce();
                } else {
                    problems.add(
                            section.line(), section.title() + " lacks '" + key.name() + "' (" + key.meaning() + ")");
                }
                return Optional.empty();
            }
            return optional(key);
        }

        int lineOf(ConfigKey<?> key) {
            IniFile.Entry entry = entries.get(checked(key).name());
            return entry != null ? entry.line() : section != null ? section.line() : 0;
        }

        private <K extends ConfigKey<?>> K checked(K key) {
            if (!key.section().equals(kind)) {
                throw new IllegalArgumentException(key + " asked of a [" + kind + "] section");
            }
            return key;
        }

        private void reportMissingSectionOnce() {
            if (!missingSectionReported) {
                missingSectionReported = true;
                problems.add(0, "no [" + kind + "] section; it is required (see site-config/README.md for its keys)");
            }
        }
    }
}
