package org.vgpu.siteconfig.render;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.error.ConfigException;
import org.vgpu.siteconfig.HostList;
import org.vgpu.siteconfig.NodeConfig;
import org.vgpu.siteconfig.PlainWords;
import org.vgpu.siteconfig.SiteConfig;
import org.vgpu.siteconfig.SiteConfigWriter;
import org.vgpu.siteconfig.SlurmSettings;

/**
 * The files an admin installs for vgpu, rendered from a {@link SiteConfig} and the templates under
 * {@code org/vgpu/siteconfig/render/templates}: pieces that a site adds to its own Slurm files, whole files for a
 * cluster without its own, systemd units, and the effective configuration. Each says where it goes.
 */
public enum RenderedFile {
    /** What vgpu adds to a site's slurm.conf, by {@code Include}; what it changes in the site's own lines, as comments. */
    SLURM_CONF_PIECE(
            "vgpu.slurm.conf",
            Kind.PIECE,
            "/etc/slurm/vgpu.slurm.conf on every node, the same as slurm.conf; slurm.conf includes it after its"
                    + " NodeName lines (Include /etc/slurm/vgpu.slurm.conf), and its comments say what to add to the"
                    + " site's own GresTypes, JobSubmitPlugins, NodeName and job partition lines"),
    /** The bridge's line, as a file of plugstack.conf's include directory. */
    PLUGSTACK_PIECE(
            "plugstack.conf.d/vgpu.conf",
            Kind.PIECE,
            "/etc/slurm/plugstack.conf.d/vgpu.conf on every node and submit host; plugstack.conf includes the"
                    + " folder (include /etc/slurm/plugstack.conf.d/*.conf: Debian's does)"),
    /** The Lua module whose functions the site's own job_submit.lua calls. */
    JOB_SUBMIT_MODULE(
            "vgpu_job_submit.lua",
            Kind.PIECE,
            "beside job_submit.lua on the slurmctld host; the site's slurm_job_submit and slurm_job_modify call"
                    + " its functions (job_submit.lua below is the script for a site without one)"),
    GRES_CONF(
            "gres.conf",
            Kind.PIECE,
            "gres.conf on every GPU node: its Name=vgpu lines added to the site's, its Name=gpu lines where the"
                    + " site has none"),
    /** A whole slurm.conf's vgpu part: node lines, the job partition as the default one, the lend partition. */
    SLURM_CONF(
            "slurm.conf",
            Kind.WHOLE,
            "for a cluster that is vgpu's alone (a test cluster): appended to slurm.conf's daemon settings on every"
                    + " node"),
    PLUGSTACK_CONF("plugstack.conf", Kind.WHOLE, "plugstack.conf on every node and submit host, where there is none"),
    /** Holds vgpu jobs at submission until the tracker releases them, through {@link #JOB_SUBMIT_MODULE}. */
    JOB_SUBMIT_LUA(
            "job_submit.lua",
            Kind.WHOLE,
            "beside slurm.conf on the slurmctld host (JobSubmitPlugins=lua), where the site has no job_submit.lua;"
                    + " it calls vgpu_job_submit.lua"),
    TRACKER_UNIT(
            "vgpu-tracker.service",
            Kind.UNIT,
            "/etc/systemd/system/vgpu-tracker.service on the slurmctld host (the vgpu package installs it for"
                    + " /etc/vgpu/vgpu.conf)"),
    /** One per node: the node's lender with its own address and GPUs. */
    LENDER_UNIT(
            "vgpu-lender.service",
            Kind.UNIT,
            "/etc/systemd/system/vgpu-lender.service on the node of --node NODE, only where a lender is wanted"),
    /** The configuration itself as it takes effect: every key with its value, defaults included. */
    EFFECTIVE_CONFIG(
            "vgpu.conf",
            Kind.CONFIGURATION,
            "nowhere: the configuration as it takes effect, every default written out, to keep or compare");

    /** What a rendered file is to the site's own files. */
    public enum Kind {
        /** Added to the site's own files, replacing nothing the site defines. */
        PIECE("pieces to add to the site's own Slurm files"),
        /** A whole file, for a cluster without its own. */
        WHOLE("whole files, for a cluster without its own"),
        UNIT("systemd units"),
        CONFIGURATION("the configuration");

        private final String heading;

        Kind(String heading) {
            this.heading = heading;
        }

        public String heading() {
            return heading;
        }
    }

    private static final long MIB = 1L << 20;

    private final String fileName;
    private final Kind kind;
    private final String destination;

    RenderedFile(String fileName, Kind kind, String destination) {
        this.fileName = fileName;
        this.kind = kind;
        this.destination = destination;
    }

    /** The name {@code --what} takes; for a piece, also where it lies beside the file it goes into. */
    public String fileName() {
        return fileName;
    }

    public Kind kind() {
        return kind;
    }

    /** Where the file goes, on which hosts, and how the site's own files take it. */
    public String destination() {
        return destination;
    }

    public static Optional<RenderedFile> byFileName(String fileName) {
        return Arrays.stream(values())
                .filter(file -> file.fileName.equals(fileName))
                .findFirst();
    }

    public static List<String> fileNames() {
        return Arrays.stream(values()).map(RenderedFile::fileName).toList();
    }

    public static List<String> perNodeFileNames() {
        return Arrays.stream(values())
                .filter(RenderedFile::perNode)
                .map(RenderedFile::fileName)
                .toList();
    }

    /** The tracker's unit starts it with this file: ExecStart takes words unquoted, so its path must be plain. */
    private boolean namesSourceInExecStart() {
        return this == TRACKER_UNIT;
    }

    /** Whether the file differs between nodes, so rendering it needs the node. */
    public boolean perNode() {
        return this == LENDER_UNIT;
    }

    /**
     * @param node the node to render for: required when {@link #perNode()}, absent otherwise
     * @throws IllegalArgumentException when {@code node} is given or missing against {@link #perNode()}
     */
    public String render(SiteConfig config, Optional<NodeConfig> node) {
        if (node.isPresent() != perNode()) {
            throw new IllegalArgumentException(
                    fileName + (perNode() ? " is rendered for one node" : " is the same on every node"));
        }
        String source = config.source().toString();
        if (source.chars().anyMatch(Character::isISOControl)) {
            throw new ConfigException(
                    ConfigException.Code.INVALID,
                    "the configuration file's path has a control character, which would end a comment line of "
                            + fileName + "; move the file to an absolute path of " + PlainWords.PATH_CHARS);
        }
        String odd = PlainWords.unplainCharacters(source);
        if (namesSourceInExecStart() && !odd.isEmpty()) {
            throw new ConfigException(
                    ConfigException.Code.INVALID,
                    fileName + " names the configuration file " + source + " in its ExecStart, where systemd would"
                            + " split or expand it (" + odd + "); move the file to an absolute path of "
                            + PlainWords.PATH_CHARS + " and render again");
        }
        Map<String, String> values = new HashMap<>();
        values.put("source", source);
        values.put("cluster", config.clusterName());
        switch (this) {
            case SLURM_CONF -> {
                values.put(
                        "node_lines",
                        alike(config.nodes(), RenderedFile::nodeSettings).stream()
                                .map(group -> "NodeName=" + group.nodes() + nodeSettings(group.first()))
                                .collect(Collectors.joining("\n")));
                values.put("job_partition", jobPartitionLine(config));
                values.put("lend_partition", lendPartitionLine(config));
            }
            case SLURM_CONF_PIECE -> {
                values.put("job_partition", config.slurm().jobPartition());
                values.put(
                        "max_user_cpus",
                        config.maxUserCpusPerNode().stream()
                                .mapToObj(cpus -> "give it MaxCPUsPerNode=" + cpus + ".")
                                .findFirst()
                                .orElse("give it MaxCPUsPerNode=(its nodes' fewest CPUs less GPUs) if its jobs may"
                                        + " take every CPU."));
                values.put(
                        "node_gres",
                        alike(config.nodes(), each -> each.gpus() + "/" + each.vgpus()).stream()
                                .map(group -> "#   NodeName=" + group.nodes() + " ... Gres=gpu:"
                                        + group.first().gpus() + ",vgpu:"
                                        + group.first().vgpus())
                                .collect(Collectors.joining("\n")));
                values.put("lend_partition", lendPartitionLine(config));
            }
            case GRES_CONF ->
                values.put(
                        "gres_lines",
                        alike(config.nodes(), each -> each.gpuDevices() + " " + each.vgpus()).stream()
                                .map(group -> "NodeName=" + group.nodes() + " Name=gpu File="
                                        + group.first().gpuDevices() + "\nNodeName=" + group.nodes()
                                        + " Name=vgpu Count=" + group.first().vgpus())
                                .collect(Collectors.joining("\n")));
            case PLUGSTACK_CONF, PLUGSTACK_PIECE -> values.put("bridge_line", bridgeLine(config));
            case JOB_SUBMIT_LUA -> values.put("module", JOB_SUBMIT_MODULE.fileName());
            case JOB_SUBMIT_MODULE -> {
                values.put("tracker", config.tracker().toString());
                values.put("max_vgpus_per_node", Integer.toString(config.maxVgpusPerNode()));
                values.put("max_gpus_per_job", Integer.toString(config.maxGpusPerJob()));
                values.put("lend_partition_name", config.lendPartition());
            }
            case TRACKER_UNIT -> {
                values.put("vgpu_command", config.slurm().vgpuCommand().toString());
                values.put("auth_options", trackerAuthOptions(config));
                values.put(
                        "auth_comment",
                        config.slurm().munge()
                                ? "# MUNGE ([slurm] auth = munge): every request of the SPANK bridge and of admins'"
                                        + " commands carries a\n# credential, which the tracker checks with unmunge;"
                                        + " root, " + config.slurm().slurmUser()
                                        + " (SlurmUser) and a job's owner are believed."
                                : "# No MUNGE ([slurm] auth = none): the tracker believes whoever reaches its port;"
                                        + " any user's job can ask\n# for another job's session tokens. Set [slurm]"
                                        + " auth = munge unless every user is trusted.");
                values.put(
                        "metrics",
                        config.metrics()
                                .map(metrics -> "# Prometheus: the tracker serves http://" + metrics
                                        + "/metrics ([tracker] metrics); scrape it with, in prometheus.yml:\n"
                                        + "#   scrape_configs:\n#     - job_name: vgpu-tracker\n"
                                        + "#       static_configs: [{targets: ['" + metrics + "']}]")
                                .orElse("# Prometheus: /metrics is off; set [tracker] metrics = HOST:PORT in the"
                                        + " configuration to serve it, then scrape http://HOST:PORT/metrics"));
            }
            case EFFECTIVE_CONFIG -> values.put("settings", SiteConfigWriter.settings(config));
            case LENDER_UNIT -> {
                NodeConfig lender = node.orElseThrow();
                values.put("vgpu_command", config.slurm().vgpuCommand().toString());
                values.put("node", lender.name());
                values.put("listen", lender.lenderEndpoint().toString());
                values.put(
                        "devices",
                        IntStream.range(0, lender.gpus())
                                .mapToObj(Integer::toString)
                                .collect(Collectors.joining(",")));
                values.put("token_key_file", config.tokenKeyFile().toString());
            }
        }
        return Template.load(templateName()).render(values);
    }

    /** Pieces in a folder ({@code plugstack.conf.d/vgpu.conf}) have their template beside the others. */
    private String templateName() {
        return fileName.replace('/', '-') + ".tmpl";
    }

    /** Nodes that slurm.conf or gres.conf describe alike: their host list, and the first of them. */
    private record Alike(String nodes, NodeConfig first) {}

    /**
     * The nodes grouped by what {@code description} gives them, in the order each group's first node comes, so a
     * site of thousands of alike nodes gets one line; linear in the nodes.
     */
    private static List<Alike> alike(List<NodeConfig> nodes, Function<NodeConfig, String> description) {
        Map<String, List<NodeConfig>> groups = new LinkedHashMap<>();
        for (NodeConfig each : nodes) {
            groups.computeIfAbsent(description.apply(each), same -> new ArrayList<>())
                    .add(each);
        }
        return groups.values().stream()
                .map(group -> new Alike(
                        HostList.compress(group.stream().map(NodeConfig::name).toList()), group.getFirst()))
                .toList();
    }

    private static String jobPartitionLine(SiteConfig config) {
        return "PartitionName=" + config.slurm().jobPartition() + " Nodes=" + allNodes(config) + maxUserCpus(config)
                + " Default=YES MaxTime=INFINITE State=UP";
    }

    /**
     * The lend partition: open to every group when holders run as the borrowing user (Slurm checks a partition's
     * access against the job's user, not its submitter; the rendered job_submit.lua module admits root's submissions
     * only), else root's alone.
     */
    private static String lendPartitionLine(SiteConfig config) {
        return "PartitionName=" + config.lendPartition() + " Nodes=" + allNodes(config)
                + " Hidden=YES" + (config.holdersAsBorrower() ? "" : " AllowGroups=root") + " PriorityTier=65533"
                + config.lendQos().map(qos -> " QOS=" + qos).orElse("") + " MaxTime=INFINITE State=UP";
    }

    private static String allNodes(SiteConfig config) {
        return HostList.compress(config.nodes().stream().map(NodeConfig::name).toList());
    }

    /** {@code " MaxCPUsPerNode=N"} when every node states its CPUs, else nothing. */
    private static String maxUserCpus(SiteConfig config) {
        return config.maxUserCpusPerNode().stream()
                .mapToObj(cpus -> " MaxCPUsPerNode=" + cpus)
                .findFirst()
                .orElse("");
    }

    /** The tracker's options of the site's authentication, as its unit starts it. */
    private static String trackerAuthOptions(SiteConfig config) {
        SlurmSettings slurm = config.slurm();
        if (!slurm.munge()) {
            return "--auth " + slurm.authWord();
        }
        return "--auth " + slurm.authWord() + " --trusted-user " + slurm.slurmUser()
                + slurm.mungeSocket().map(socket -> " --munge-socket " + socket).orElse("");
    }

    private static String bridgeLine(SiteConfig config) {
        return "required " + config.slurm().spankPlugin() + " " + bridgeArguments(config);
    }

    /** The SPANK bridge's plugstack.conf arguments that the site configuration decides, in the bridge's words. */
    private static String bridgeArguments(SiteConfig config) {
        Map<String, String> arguments = new LinkedHashMap<>();
        arguments.put(BridgeContract.PLUGSTACK_TRACKER, config.tracker().toString());
        arguments.put(
                BridgeContract.PLUGSTACK_FALLBACK,
                config.policy().fallbackLocalOnly()
                        ? BridgeContract.FALLBACK_LOCAL_ONLY_WORD
                        : BridgeContract.FALLBACK_NONE_WORD);
        arguments.put(
                BridgeContract.PLUGSTACK_AGENT_SOCKET_DIR,
                config.slurm().agentSocketDir().toString());
        arguments.put(BridgeContract.PLUGSTACK_LEND_PARTITION, config.lendPartition());
        arguments.put(BridgeContract.PLUGSTACK_AUTH, config.slurm().authWord());
        config.slurm()
                .mungeSocket()
                .ifPresent(socket -> arguments.put(BridgeContract.PLUGSTACK_MUNGE_SOCKET, socket.toString()));
        return arguments.entrySet().stream()
                .map(argument -> argument.getKey() + "=" + argument.getValue())
                .collect(Collectors.joining(" "));
    }

    /** A node's slurm.conf settings after its name. */
    private static String nodeSettings(NodeConfig node) {
        StringBuilder line = new StringBuilder();
        node.hostname().ifPresent(hostname -> line.append(" NodeHostname=").append(hostname));
        node.address().ifPresent(address -> line.append(" NodeAddr=").append(address));
        node.slurmdPort().ifPresent(port -> line.append(" Port=").append(port));
        node.cpus().ifPresent(cpus -> line.append(" CPUs=").append(cpus));
        node.realMemoryBytes().ifPresent(bytes -> line.append(" RealMemory=").append(bytes / MIB));
        return line.append(" Gres=gpu:")
                .append(node.gpus())
                .append(",vgpu:")
                .append(node.vgpus())
                .append(" State=UNKNOWN")
                .toString();
    }
}
