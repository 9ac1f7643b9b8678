package org.vgpu.siteconfig;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.TreeMap;

/**
 * Writes a {@link SiteConfig} in the file's own syntax, every key with its value, defaults included: what `vgpu
 * config render --what vgpu.conf` prints, the effective configuration an admin can keep or compare. {@link
 * SiteConfigReader} reads the text back to an equal configuration (SiteConfigFuzzTest holds it to that).
 */
public final class SiteConfigWriter {
    private final StringBuilder text = new StringBuilder();

    private SiteConfigWriter() {}

    /** The settings, section by section; no comment, so a caller adds its own heading. */
    public static String settings(SiteConfig config) {
        SiteConfigWriter writer = new SiteConfigWriter();
        writer.write(config);
        return writer.text.toString();
    }

    private void write(SiteConfig config) {
        section(ConfigKeys.CLUSTER);
        line(ConfigKeys.CLUSTER_NAME, config.clusterName());
        line(ConfigKeys.TRACKER_ADDRESS, config.tracker());
        line(ConfigKeys.TOKEN_KEY_FILE, config.tokenKeyFile());
        line(ConfigKeys.LEND_PARTITION, config.lendPartition());
        line(ConfigKeys.LEND_QOS, config.lendQos());
        line(ConfigKeys.WORKER_TLS, config.workerTls());
        line(ConfigKeys.HOLDERS_AS_BORROWER, config.holdersAsBorrower());

        Policy policy = config.policy();
        MigrationPolicy moves = policy.migration();
        section(ConfigKeys.POLICY);
        line(ConfigKeys.IDLE_GRACE, policy.idleGrace());
        line(ConfigKeys.MAX_BORROWED_PER_JOB, policy.maxBorrowedPerJob());
        line(ConfigKeys.BORROWING, policy.borrowing());
        line(ConfigKeys.FALLBACK_LOCAL_ONLY, policy.fallbackLocalOnly());
        line(ConfigKeys.MIGRATE_HOME, moves.migrateHome());
        line(ConfigKeys.MIGRATION_COOLDOWN, moves.cooldown());
        line(ConfigKeys.MIGRATION_END_GUARD, moves.endGuard());
        line(ConfigKeys.MEM_SYNC_BANDWIDTH, moves.memSyncBytesPerSecond());
        line(ConfigKeys.REPLAY_COST, moves.replayCost());

        SlurmSettings slurm = config.slurm();
        section(ConfigKeys.SLURM);
        line(ConfigKeys.JOB_PARTITION, slurm.jobPartition());
        line(ConfigKeys.SPANK_PLUGIN, slurm.spankPlugin());
        line(ConfigKeys.VGPU_COMMAND, slurm.vgpuCommand());
        line(ConfigKeys.AGENT_SOCKET_DIR, slurm.agentSocketDir());
        line(ConfigKeys.MUNGE, slurm.munge());
        line(ConfigKeys.SLURM_USER, slurm.slurmUser());
        line(ConfigKeys.MUNGE_SOCKET, slurm.mungeSocket());

        if (config.metrics().isPresent()) {
            section(ConfigKeys.TRACKER);
            line(ConfigKeys.METRICS, config.metrics());
        }

        // Neighbouring nodes whose settings read alike share a section ([node gpu[001-064]]), as a site writes them;
        // nodes are only merged where their host list reads back as the same names in the same order.
        List<String> alike = new ArrayList<>();
        String alikeSettings = null;
        for (NodeConfig node : config.nodes()) {
            String settings = nodeSettings(node);
            if (!settings.equals(alikeSettings)) {
                nodeSections(alike, alikeSettings);
                alike = new ArrayList<>();
                alikeSettings = settings;
            }
            alike.add(node.name());
        }
        nodeSections(alike, alikeSettings);

        // The pairs as listed, and the default of every other pair (the reader's default for a file without them).
        Distances distances = config.distances();
        section(SiteConfigReader.DISTANCE);
        distanceLines(distances.listed(), config.nodes())
                .forEach((ends, firsts) -> text.append(HostList.compress(firsts))
                        .append(' ')
                        .append(ends)
                        .append('\n'));
        distances
                .otherPairs()
                .ifPresent(other -> text.append(DistanceSection.DEFAULT_KEY)
                        .append(" = ")
                        .append(other)
                        .append('\n'));
    }

    /**
     * The pairs as [distance] lines, host lists on both sides: a node's pairs at one distance share a line ({@code g1
     * g[2-4] = 1}), and nodes whose lines read alike after the node share one ({@code g[1-4] g[5-8] = 2}). A pair is
     * written once, under the one of its names that sorts first, so no node is on both sides of a line and read back
     * it is the same table. Nodes are in the order of their sections, so numbered names stay runs (g9 before g10).
     *
     * @return by the right side and distance ({@code "g[5-8] = 2"}), the left side's nodes
     */
    private static Map<String, List<String>> distanceLines(
            Map<Distances.NodePair, Integer> listed, List<NodeConfig> nodes) {
        Map<String, Integer> position = new HashMap<>();
        nodes.forEach(node -> position.putIfAbsent(node.name(), position.size()));
        Comparator<String> inFileOrder = Comparator.comparing(position::get);
        Map<String, Map<Integer, List<String>>> byFirst = new TreeMap<>(inFileOrder);
        listed.entrySet().stream()
                .sorted(Map.Entry.comparingByKey(Comparator.comparing(Distances.NodePair::first, inFileOrder)
                        .thenComparing(Distances.NodePair::second, inFileOrder)))
                .forEach(pair -> byFirst.computeIfAbsent(pair.getKey().first(), first -> new TreeMap<>())
                        .computeIfAbsent(pair.getValue(), distance -> new ArrayList<>())
                        .add(pair.getKey().second()));
        Map<String, List<String>> lines = new LinkedHashMap<>();
        byFirst.forEach((first, seconds) -> seconds.forEach((distance, ends) -> lines.computeIfAbsent(
                        HostList.compress(ends) + " = " + distance, line -> new ArrayList<>())
                .add(first)));
        return lines;
    }

    private static String nodeSettings(NodeConfig node) {
        SiteConfigWriter writer = new SiteConfigWriter();
        writer.line(ConfigKeys.GPUS, node.gpus());
        writer.line(ConfigKeys.GPU_MEMORY, node.gpuMemoryBytes());
        writer.line(ConfigKeys.VGPUS, node.vgpus());
        writer.line(ConfigKeys.LENDER_PORT, node.lenderPort());
        writer.line(ConfigKeys.GPU_DEVICES, node.gpuDevices());
        writer.line(ConfigKeys.ADDRESS, node.address());
        writer.line(ConfigKeys.HOSTNAME, node.hostname());
        writer.line(ConfigKeys.SLURMD_PORT, node.slurmdPort());
        writer.line(ConfigKeys.CPUS, node.cpus());
        writer.line(ConfigKeys.REAL_MEMORY, node.realMemoryBytes());
        return writer.text.toString();
    }

    /**
     * Sections for neighbouring nodes of the same settings: one when their host list reads back as they are (the
     * usual case, checked once), else runs as long as each reads back, taken greedily in order. A list that reads
     * back has every beginning of it read back too (a host list's parts follow the names' order), so both ways give
     * the same runs where the first applies.
     */
    private void nodeSections(List<String> names, String settings) {
        if (names.isEmpty()) {
            return;
        }
        if (readsBack(names)) {
            nodeSection(names, settings);
            return;
        }
        List<String> run = new ArrayList<>();
        for (String name : names) {
            List<String> extended = new ArrayList<>(run);
            extended.add(name);
            if (!run.isEmpty() && !readsBack(extended)) {
                nodeSection(run, settings);
                extended = new ArrayList<>(List.of(name));
            }
            run = extended;
        }
        nodeSection(run, settings);
    }

    private static boolean readsBack(List<String> names) {
        return HostList.expand(HostList.compress(names)).equals(names);
    }

    private void nodeSection(List<String> names, String settings) {
        section(ConfigKeys.NODE + " " + HostList.compress(names));
        text.append(settings);
    }

    private void section(String title) {
        if (!text.isEmpty()) {
            text.append('\n');
        }
        text.append('[').append(title).append("]\n");
    }

    private <T> void line(ConfigKey<T> key, T value) {
        text.append(key.name()).append(" = ").append(key.format(value)).append('\n');
    }

    private <T> void line(ConfigKey<T> key, Optional<T> value) {
        value.ifPresent(present -> line(key, present));
    }

    private void line(ConfigKey<Integer> key, OptionalInt value) {
        value.ifPresent(present -> line(key, present));
    }

    private void line(ConfigKey<Long> key, OptionalLong value) {
        value.ifPresent(present -> line(key, present));
    }
}
