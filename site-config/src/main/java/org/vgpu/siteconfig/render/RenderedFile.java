package org.vgpu.siteconfig.render;

import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.error.ConfigException;
import org.vgpu.siteconfig.NodeConfig;
import org.vgpu.siteconfig.PlainWords;
import org.vgpu.siteconfig.SiteConfig;
import org.vgpu.siteconfig.SiteConfigWriter;

/**
 * The files an admin installs for vgpu, rendered from a {@link SiteConfig} and the templates under
 * {@code org/vgpu/siteconfig/render/templates}.
 */
public enum RenderedFile {
    /** Node and partition lines to merge into slurm.conf. */
    SLURM_CONF("slurm.conf"),
    GRES_CONF("gres.conf"),
    PLUGSTACK_CONF("plugstack.conf"),
    /** Holds vgpu jobs at submission until the tracker releases them. */
    JOB_SUBMIT_LUA("job_submit.lua"),
    TRACKER_UNIT("vgpu-tracker.service"),
    /** One per node: the node's lender with its own address and GPUs. */
    LENDER_UNIT("vgpu-lender.service"),
    /** The configuration itself as it takes effect: every key with its value, defaults included. */
    EFFECTIVE_CONFIG("vgpu.conf");

    private static final long MIB = 1L << 20;

    private final String fileName;

    RenderedFile(String fileName) {
        this.fileName = fileName;
    }

    public String fileName() {
        return fileName;
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
                        config.nodes().stream().map(RenderedFile::nodeLine).collect(Collectors.joining("\n")));
                values.put(
                        "node_list",
                        config.nodes().stream().map(NodeConfig::name).collect(Collectors.joining(",")));
                values.put("job_partition", config.slurm().jobPartition());
                values.put(
                        "max_user_cpus",
                        config.maxUserCpusPerNode().stream()
                                .mapToObj(cpus -> " MaxCPUsPerNode=" + cpus)
                                .findFirst()
                                .orElse(""));
                values.put("lend_partition", config.lendPartition());
                values.put(
                        "lend_qos", config.lendQos().map(qos -> " QOS=" + qos).orElse(""));
            }
            case GRES_CONF ->
                values.put(
                        "gres_lines",
                        config.nodes().stream()
                                .map(each -> "NodeName=" + each.name() + " Name=gpu File=" + each.gpuDevices() + "\n"
                                        + "NodeName=" + each.name() + " Name=vgpu Count=" + each.vgpus())
                                .collect(Collectors.joining("\n")));
            case PLUGSTACK_CONF -> {
                values.put("spank_plugin", config.slurm().spankPlugin().toString());
                values.put("bridge_arguments", bridgeArguments(config));
            }
            case JOB_SUBMIT_LUA -> {
                values.put("tracker", config.tracker().toString());
                values.put("max_vgpus_per_node", Integer.toString(config.maxVgpusPerNode()));
                values.put("max_gpus_per_job", Integer.toString(config.maxGpusPerJob()));
            }
            case TRACKER_UNIT -> {
                values.put("vgpu_command", config.slurm().vgpuCommand().toString());
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
        return Template.load(fileName + ".tmpl").render(values);
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
        return arguments.entrySet().stream()
                .map(argument -> argument.getKey() + "=" + argument.getValue())
                .collect(Collectors.joining(" "));
    }

    private static String nodeLine(NodeConfig node) {
        StringBuilder line = new StringBuilder("NodeName=").append(node.name());
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
