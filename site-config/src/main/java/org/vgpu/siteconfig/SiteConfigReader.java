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
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Set;
import java.util.function.Function;
import java.util.function.UnaryOperator;
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
    private static final String CLUSTER = ConfigKeys.CLUSTER;
    private static final String POLICY = ConfigKeys.POLICY;
    private static final String NODE = ConfigKeys.NODE;
    static final String DISTANCE = "distance";
    private static final String SLURM = ConfigKeys.SLURM;
    private static final String TRACKER = ConfigKeys.TRACKER;
    private static final List<String> SECTION_KINDS = List.of(CLUSTER, POLICY, NODE, DISTANCE, SLURM, TRACKER);
    static final String DEFAULT_DISTANCE_KEY = "default";
    /** How many names or pairs a message lists before it says how many more there are. */
    private static final int SHOWN_AT_MOST = 10;
    /**
     * The most pairs a [distance] section may list, ranges expanded: the tracker keeps each in memory. A 10,000-node
     * site in racks of 64 lists 315,000 within its racks; a table larger than this wants a default.
     */
    private static final int MAX_LISTED_PAIRS = 1_000_000;

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
        IniFile ini = IniFile.parse(file, text, problems);
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

        Policy policy = readPolicy(singletons.get(POLICY));
        Map<IniFile.Section, List<String>> namesBySection = nodeNames(nodeSections);
        List<NodeConfig> nodes = readNodes(nodeSections, namesBySection);
        SlurmSettings slurm = readSlurm(singletons.get(SLURM), lendPartition);
        Distances distances = readDistances(
                singletons.get(DISTANCE),
                namesBySection.values().stream().flatMap(List::stream).toList());
        Optional<Endpoint> metrics = readMetrics(singletons.get(TRACKER), tracker);

        if (checkFiles && tokenKeyFile.isPresent()) {
            try {
                SiteKey.load(tokenKeyFile.get());
            } catch (ConfigException e) {
                problems.add(new ConfigProblem(file, cluster.lineOf(ConfigKeys.TOKEN_KEY_FILE), e.getMessage()));
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
                workerTls,
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
                problem(section.line(), "node name: " + e.getMessage());
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
                problem(
                        section.line(),
                        (again.size() == 1
                                        ? "node '" + first.getKey() + "' is "
                                        : again.size() + " nodes (" + listed(List.copyOf(again.keySet())) + ") are ")
                                + where + "; node names must be unique");
            }
            namesBySection.put(section, names);
        }
        return namesBySection;
    }

    private List<NodeConfig> readNodes(
            List<IniFile.Section> sections, Map<IniFile.Section, List<String>> namesBySection) {
        if (sections.isEmpty()) {
            problem(0, "no [node NAME] section; describe each GPU node, e.g. [node n1] with " + requiredKeys(NODE));
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
                            problem(
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
            problem(
                    slurm.lineOf(ConfigKeys.JOB_PARTITION),
                    ConfigKeys.JOB_PARTITION.name() + " and " + ConfigKeys.LEND_PARTITION.name() + " are both '"
                            + jobPartition
                            + "'; holder jobs need a partition of their own, so users cannot take lent GPUs");
        }
        boolean munge = slurm.valueOrDefault(ConfigKeys.MUNGE);
        Optional<Path> mungeSocket = slurm.optional(ConfigKeys.MUNGE_SOCKET);
        if (mungeSocket.isPresent() && !munge) {
            problem(
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
            problem(
                    settings.lineOf(ConfigKeys.METRICS),
                    "metrics: " + metrics.get() + " is where the tracker's socket listens ([cluster] tracker = "
                            + tracker.get() + "); give /metrics a port of its own, e.g. 9464");
        }
        return metrics;
    }

    /**
     * Without a [distance] section the network is flat: every pair of nodes is 1 apart. Each entry names two host lists
     * ({@code gpu[001-064] gpu[065-128] = 2}): every node of the one is that far from every other node of the other.
     * Only the listed pairs are kept (see {@link Distances}), at most {@link #MAX_LISTED_PAIRS}; completeness without a
     * default is checked by counting, so a large site with a default never walks its n * (n - 1) / 2 pairs.
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
                                + " 'NODES NODES = DISTANCE' (e.g. n1 n2 = 1 or g[1-4] g[5-8] = 2) or"
                                + " 'default = DISTANCE'");
                continue;
            }
            Optional<Set<String>> from = distanceEnd(entry, ends[0], known, names);
            Optional<Set<String>> to = distanceEnd(entry, ends[1], known, names);
            if (from.isEmpty() || to.isEmpty()) {
                continue;
            }
            long pairCount = (long) from.get().size() * to.get().size();
            if (lineOfPair.size() + pairCount > MAX_LISTED_PAIRS) {
                problem(
                        entry.line(),
                        "'" + entry.key() + "' lists " + pairCount + " pairs, which take [distance] past the "
                                + MAX_LISTED_PAIRS + " pairs it may list; give the most common distance as"
                                + " 'default = DISTANCE' and list the others");
                continue;
            }
            listPairs(entry, from.get(), to.get(), distance, pairs, lineOfPair);
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

    /**
     * The nodes one end of a [distance] entry names, or empty when it is malformed or names a node not described (both
     * reported).
     */
    private Optional<Set<String>> distanceEnd(IniFile.Entry entry, String end, Set<String> known, List<String> names) {
        List<String> expanded;
        try {
            expanded = HostList.expand(end);
        } catch (IllegalArgumentException e) {
            problem(entry.line(), "distance: " + e.getMessage());
            return Optional.empty();
        }
        List<String> unknown = expanded.stream()
                .filter(name -> !known.contains(name))
                .distinct()
                .toList();
        if (!unknown.isEmpty()) {
            problem(
                    entry.line(),
                    (unknown.size() == 1
                                    ? "distance to unknown node '" + unknown.getFirst() + "'; "
                                    : "distance to " + unknown.size() + " unknown nodes (" + listed(unknown) + "); ")
                            + (names.isEmpty() ? "no node is described" : "the nodes are " + listed(names)));
            return Optional.empty();
        }
        return Optional.of(new LinkedHashSet<>(expanded));
    }

    /**
     * Every pair of a node of {@code from} and another node of {@code to}, at {@code distance}: a node is not paired
     * with itself where the lists overlap ({@code g[1-4] g[1-4]}: every pair within), and a pair given on an earlier
     * line is reported once for the entry.
     */
    private void listPairs(
            IniFile.Entry entry,
            Set<String> from,
            Set<String> to,
            Optional<Integer> distance,
            Map<Distances.NodePair, Integer> pairs,
            Map<Distances.NodePair, Integer> lineOfPair) {
        Integer line = entry.line();
        // Each pair given on an earlier line, with that line.
        Map<Distances.NodePair, Integer> again = new LinkedHashMap<>();
        boolean anyPair = false;
        for (String a : from) {
            for (String b : to) {
                if (a.equals(b)) {
                    continue;
                }
                anyPair = true;
                Distances.NodePair pair = Distances.NodePair.of(a, b);
                Integer firstLine = lineOfPair.putIfAbsent(pair, line);
                if (firstLine == null) {
                    distance.ifPresent(value -> pairs.put(pair, value));
                } else if (!firstLine.equals(line)) {
                    again.putIfAbsent(pair, firstLine);
                }
            }
        }
        if (!anyPair) {
            problem(
                    entry.line(),
                    "distance from '" + from.iterator().next() + "' to itself; a node is 0 from itself, give pairs of"
                            + " different nodes");
        } else if (!again.isEmpty()) {
            Map.Entry<Distances.NodePair, Integer> first =
                    again.entrySet().iterator().next();
            problem(
                    entry.line(),
                    (again.size() == 1
                                    ? "distance between '" + first.getKey().first() + "' and '"
                                            + first.getKey().second() + "' is given again (first at line "
                                    : again.size() + " pairs ("
                                            + listed(again.keySet().stream()
                                                    .map(pair -> pair.first() + " " + pair.second())
                                                    .toList())
                                            + ") are given again ("
                                            + first.getKey().first() + " "
                                            + first.getKey().second() + " first at line ")
                            + first.getValue() + "); distances are symmetric, give each pair once");
        }
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

    /** "a, b, c and d": the keys a section of this kind must set. */
    private static String requiredKeys(String kind) {
        List<String> required = ConfigKeys.of(kind).stream()
                .filter(ConfigKey::isRequired)
                .map(ConfigKey::name)
                .toList();
        return String.join(", ", required.subList(0, required.size() - 1)) + " and " + required.getLast();
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

        <T> Optional<T> optional(ConfigKey<T> key) {
            return optional(key, value -> value);
        }

        /** The key's value, which {@code check} may still refuse (with an {@link IllegalArgumentException}). */
        <T> Optional<T> optional(ConfigKey<T> key, UnaryOperator<T> check) {
            IniFile.Entry entry = entries.get(checked(key).name());
            return entry == null ? Optional.empty() : parse(entry, value -> check.apply(key.parse(value)));
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
                    problem(section.line(), section.title() + " lacks '" + key.name() + "' (" + key.meaning() + ")");
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
                problem(0, "no [" + kind + "] section; it is required (see site-config/README.md for its keys)");
            }
        }
    }
}
