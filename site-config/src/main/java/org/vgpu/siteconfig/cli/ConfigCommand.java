package org.vgpu.siteconfig.cli;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.function.Supplier;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

import org.vgpu.common.cli.Subcommand;
import org.vgpu.common.error.ConfigException;
import org.vgpu.common.security.SiteKey;
import org.vgpu.siteconfig.ConfigValues;
import org.vgpu.siteconfig.Distances;
import org.vgpu.siteconfig.HostList;
import org.vgpu.siteconfig.MigrationPolicy;
import org.vgpu.siteconfig.NodeConfig;
import org.vgpu.siteconfig.NodesFromSlurm;
import org.vgpu.siteconfig.SiteConfig;
import org.vgpu.siteconfig.SiteConfigException;
import org.vgpu.siteconfig.SiteConfigReader;
import org.vgpu.siteconfig.render.RenderedFile;

/**
 * {@code vgpu config check [FILE]} (default {@value TrackerOptions#DEFAULT_CONFIG}, as for every other command):
 * validates a site configuration, including its token key file, and
 * prints every problem with its line (exit 1) or the effective configuration (exit 0).
 * {@code vgpu config render --what NAME FILE}: prints one of the files an admin installs (pieces of the site's own
 * Slurm files, whole files, systemd units) rendered for that configuration; {@code vgpu config render FILE} (or
 * {@code --list}) says which file goes where. With {@code --slurm-nodes}, render takes the node list and each node's GPU
 * count from the running Slurm instead of the configuration's {@code [node]} sections.
 */
public final class ConfigCommand implements Subcommand {
    private static final String CHECK = "check";
    private static final String RENDER = "render";
    private static final String SLURM_NODES = "slurm-nodes";
    /** Up to this many nodes, check prints the distance of every pair (496 pairs at most). */
    private static final int FULL_DISTANCE_TABLE_NODES = 32;

    private final Supplier<Optional<SlurmGpuNodes>> slurmGpuNodes;

    /** The command as the launcher finds it: Slurm read through the reader that the tracker provides. */
    public ConfigCommand() {
        this(() -> ServiceLoader.load(SlurmGpuNodes.class).findFirst());
    }

    /** @param slurmGpuNodes what {@code --slurm-nodes} reads Slurm with; empty when this vgpu has no reader */
    ConfigCommand(Supplier<Optional<SlurmGpuNodes>> slurmGpuNodes) {
        this.slurmGpuNodes = slurmGpuNodes;
    }

    @Override
    public String name() {
        return "config";
    }

    @Override
    public String summary() {
        return "check a site configuration file, or render the Slurm and systemd files it implies";
    }

    @Override
    public String operands() {
        return "check [FILE] | render [--what NAME [--node NODE] | --list] [--slurm-nodes] [FILE]   (FILE: default "
                + TrackerOptions.DEFAULT_CONFIG + ")";
    }

    @Override
    public Options options() {
        return new Options()
                .addOption(Option.builder()
                        .longOpt("what")
                        .hasArg()
                        .argName("NAME")
                        .desc("for render: one of " + String.join(", ", RenderedFile.fileNames()))
                        .get())
                .addOption(Option.builder()
                        .longOpt("list")
                        .desc("for render: which file goes where, on which hosts (also without --what)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("node")
                        .hasArg()
                        .argName("NODE")
                        .desc("for render of a per-node file (" + String.join(", ", RenderedFile.perNodeFileNames())
                                + "): the node to render it for")
                        .get())
                .addOption(Option.builder()
                        .longOpt(SLURM_NODES)
                        .desc("for render: the nodes and each node's GPU count from the running Slurm (scontrol show"
                                + " node), each node's other settings from the [node] section naming it")
                        .get());
    }

    @Override
    public int run(CommandLine line, PrintStream out, PrintStream err) throws ParseException {
        List<String> operands = line.getArgList();
        if (operands.isEmpty() || operands.size() > 2 || !List.of(CHECK, RENDER).contains(operands.get(0))) {
            throw new ParseException("expected 'check [FILE]' or 'render [--what NAME] [FILE]', got '"
                    + String.join(" ", operands) + "'");
        }
        // the site's configuration where every other command looks for it, unless the admin names another
        Path file = Path.of(operands.size() == 2 ? operands.get(1) : TrackerOptions.DEFAULT_CONFIG);
        if (operands.get(0).equals(CHECK)) {
            if (line.hasOption("what")
                    || line.hasOption("node")
                    || line.hasOption("list")
                    || line.hasOption(SLURM_NODES)) {
                throw new ParseException("--what, --node, --list and --slurm-nodes belong to render, not check");
            }
            return check(file, out, err);
        }
        String what = line.getOptionValue("what");
        boolean list = what == null || line.hasOption("list");
        if (list && (what != null || line.hasOption("node"))) {
            throw new ParseException("--list renders nothing: give it alone, or --what NAME without it");
        }
        Optional<RenderedFile> rendered = list
                ? Optional.empty()
                : Optional.of(RenderedFile.byFileName(what)
                        .orElseThrow(() -> new ParseException("--what must be one of "
                                + String.join(", ", RenderedFile.fileNames()) + ", got '" + what + "'")));
        if (rendered.isPresent() && rendered.get().perNode() != line.hasOption("node")) {
            throw new ParseException(
                    rendered.get().perNode()
                            ? what + " differs between nodes: add --node NODE"
                            : "--node does not apply: " + what + " is the same on every node");
        }
        SiteConfig read;
        try {
            read = SiteConfigReader.read(file);
        } catch (SiteConfigException e) {
            return reportProblems(RENDER, file, e, err);
        }
        Optional<SiteConfig> rendering = line.hasOption(SLURM_NODES) ? withSlurmNodes(read, err) : Optional.of(read);
        if (rendering.isEmpty()) {
            return 1;
        }
        SiteConfig config = rendering.get();
        if (rendered.isEmpty()) {
            list(config, file, out);
            return 0;
        }
        Optional<NodeConfig> node = Optional.empty();
        if (rendered.get().perNode()) {
            String name = line.getOptionValue("node");
            node = Optional.of(config.node(name)
                    .orElseThrow(() -> new ParseException("--node: no node '" + name + "' in " + file
                            + "; its nodes are "
                            + HostList.compress(config.nodes().stream()
                                    .map(NodeConfig::name)
                                    .toList()))));
        }
        out.print(rendered.get().render(config, node));
        return 0;
    }

    /**
     * The configuration with the running Slurm's GPU nodes and counts; empty, with the reason on {@code err}, when
     * Slurm does not answer or its nodes do not fit the configuration. Nodes left out are named on {@code err}.
     */
    private Optional<SiteConfig> withSlurmNodes(SiteConfig config, PrintStream err) {
        Optional<SlurmGpuNodes> reader = slurmGpuNodes.get();
        if (reader.isEmpty()) {
            err.println("vgpu config render: --slurm-nodes needs the tracker's Slurm reader, which this vgpu does not"
                    + " have; render without it");
            return Optional.empty();
        }
        NodesFromSlurm fromSlurm;
        try {
            fromSlurm = NodesFromSlurm.of(config, reader.get().read(config));
        } catch (SlurmGpuNodes.Unanswered e) {
            err.println("vgpu config render: --slurm-nodes: Slurm did not answer (" + e.getMessage()
                    + "); render without --slurm-nodes, or where scontrol reaches slurmctld");
            return Optional.empty();
        } catch (ConfigException e) {
            err.println("vgpu config render: --slurm-nodes: " + e.detail());
            return Optional.empty();
        }
        if (!fromSlurm.leftOut().isEmpty()) {
            err.println("vgpu config render: --slurm-nodes: left out " + HostList.compress(fromSlurm.leftOut())
                    + ", which Slurm has no GPUs on");
        }
        return Optional.of(fromSlurm.config());
    }

    /** Which file goes where: the files of this configuration, kind by kind, with the name --what takes. */
    private static void list(SiteConfig config, Path file, PrintStream out) {
        out.println("the files of cluster " + config.clusterName() + " (" + config.source()
                + "), and where each goes; print one with vgpu config render --what NAME " + file);
        RenderedFile.Kind kind = null;
        for (RenderedFile each : RenderedFile.values()) {
            if (each.kind() != kind) {
                kind = each.kind();
                out.println();
                out.println(kind.heading() + ":");
            }
            out.println("  " + each.fileName() + (each.perNode() ? " --node NODE" : ""));
            out.println("      " + each.destination());
        }
    }

    private static int check(Path file, PrintStream out, PrintStream err) {
        SiteConfig config;
        try {
            config = SiteConfigReader.readAndCheckFiles(file);
        } catch (SiteConfigException e) {
            return reportProblems(CHECK, file, e, err);
        }
        out.println(config.source() + ": valid");
        out.printf(
                "cluster %s: %d node%s, %d GPUs, %d vGPUs%n",
                config.clusterName(),
                config.nodes().size(),
                config.nodes().size() == 1 ? "" : "s",
                config.totalGpus(),
                config.nodes().stream().mapToInt(NodeConfig::vgpus).sum());
        out.printf(
                "tracker %s, /metrics %s; token key %s (private, fingerprint %s)%n",
                config.tracker(),
                config.metrics()
                        .map(metrics -> "on http://" + metrics + "/metrics")
                        .orElse("off"),
                config.tokenKeyFile(),
                SiteKey.load(config.tokenKeyFile()).fingerprint());
        out.printf(
                "partitions: jobs %s, holders %s (QOS %s)%n",
                config.slurm().jobPartition(),
                config.lendPartition(),
                config.lendQos().orElse("none"));
        out.printf(
                "policy: idle_grace %s, max_borrowed_per_job %d, borrowing %s, fallback_local_only %s%n",
                ConfigValues.formatDuration(config.policy().idleGrace()),
                config.policy().maxBorrowedPerJob(),
                onOff(config.policy().borrowing()),
                onOff(config.policy().fallbackLocalOnly()));
        MigrationPolicy moves = config.policy().migration();
        out.printf(
                "policy: migrate_home %s, migration_cooldown %s, migration_end_guard %s, mem_sync_bandwidth %d B/s,"
                        + " replay_cost %s%n",
                onOff(moves.migrateHome()),
                ConfigValues.formatDuration(moves.cooldown()),
                ConfigValues.formatDuration(moves.endGuard()),
                moves.memSyncBytesPerSecond(),
                ConfigValues.formatDuration(moves.replayCost()));
        for (NodeConfig node : config.nodes()) {
            out.printf(
                    "node %s: %d GPU%s x %s, %d vGPUs, devices %s, lender %s%n",
                    node.name(),
                    node.gpus(),
                    node.gpus() == 1 ? "" : "s",
                    ConfigValues.formatBytes(node.gpuMemoryBytes()),
                    node.vgpus(),
                    node.gpuDevices(),
                    node.lenderEndpoint());
        }
        out.println(distances(config));
        out.printf(
                "slurm: SPANK plugin %s, vgpu command %s, agent sockets in %s%n",
                config.slurm().spankPlugin(),
                config.slurm().vgpuCommand(),
                config.slurm().agentSocketDir());
        return 0;
    }

    /**
     * Every pair's distance for a small site; for a large one what the file gives, since the table of a
     * 10,000-node site has 50 million pairs.
     */
    private static String distances(SiteConfig config) {
        int nodes = config.nodes().size();
        if (nodes > FULL_DISTANCE_TABLE_NODES) {
            Distances distances = config.distances();
            return "distances: " + distances.listedPairs() + " pair" + (distances.listedPairs() == 1 ? "" : "s")
                    + " listed, "
                    + (distances.otherPairs().isPresent()
                            ? "every other pair " + distances.otherPairs().getAsInt()
                            : "no other pair")
                    + "; " + nodes + " nodes make " + (long) nodes * (nodes - 1) / 2
                    + " pairs, too many to print each";
        }
        StringBuilder distances = new StringBuilder("distances:");
        for (int i = 0; i < nodes; i++) {
            for (int j = i + 1; j < nodes; j++) {
                String a = config.nodes().get(i).name();
                String b = config.nodes().get(j).name();
                distances
                        .append(' ')
                        .append(a)
                        .append('-')
                        .append(b)
                        .append('=')
                        .append(config.distances().between(a, b));
            }
        }
        return distances.toString();
    }

    private static int reportProblems(String action, Path file, SiteConfigException e, PrintStream err) {
        e.problems().forEach(err::println);
        int count = e.problems().size();
        err.println("vgpu config " + action + ": " + count + " problem" + (count == 1 ? "" : "s") + " in " + file);
        return 1;
    }

    private static String onOff(boolean value) {
        return value ? "on" : "off";
    }
}
