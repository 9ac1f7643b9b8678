package org.vgpu.siteconfig.render;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

import org.vgpu.siteconfig.NodeConfig;
import org.vgpu.siteconfig.SiteConfig;

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
    /** A systemd template unit: one instance per node, {@code vgpu-lender@NODE.service}. */
    LENDER_UNIT("vgpu-lender@.service");

    private static final long MIB = 1L << 20;

    private final String fileName;

    RenderedFile(String fileName) {
        this.fileName = fileName;
    }

    public String fileName() {
        return fileName;
    }

    public static Optional<RenderedFile> byFileName(String fileName) {
        return Arrays.stream(values()).filter(file -> file.fileName.equals(fileName)).findFirst();
    }

    public static List<String> fileNames() {
        return Arrays.stream(values()).map(RenderedFile::fileName).toList();
    }

    public String render(SiteConfig config) {
        Map<String, String> values = new HashMap<>();
        values.put("source", config.source().toString());
        values.put("cluster", config.clusterName());
        switch (this) {
            case SLURM_CONF -> {
                values.put("node_lines", config.nodes().stream().map(RenderedFile::nodeLine).collect(Collectors.joining("\n")));
                values.put("node_list", config.nodes().stream().map(NodeConfig::name).collect(Collectors.joining(",")));
                values.put("job_partition", config.slurm().jobPartition());
                values.put("lend_partition", config.lendPartition());
                values.put("lend_qos", config.lendQos().map(qos -> " QOS=" + qos).orElse(""));
            }
            case GRES_CONF -> values.put("gres_lines", config.nodes().stream()
                    .map(node -> "NodeName=" + node.name() + " Name=gpu File=" + node.gpuDevices() + "\n"
                            + "NodeName=" + node.name() + " Name=vgpu Count=" + node.vgpus())
                    .collect(Collectors.joining("\n")));
            case PLUGSTACK_CONF -> {
                values.put("spank_plugin", config.slurm().spankPlugin().toString());
                values.put("tracker", config.tracker().toString());
            }
            case JOB_SUBMIT_LUA -> values.put("tracker", config.tracker().toString());
            case TRACKER_UNIT, LENDER_UNIT -> values.put("vgpu_command", config.slurm().vgpuCommand().toString());
        }
        return Template.load(fileName + ".tmpl").render(values);
    }

    private static String nodeLine(NodeConfig node) {
        StringBuilder line = new StringBuilder("NodeName=").append(node.name());
        node.hostname().ifPresent(hostname -> line.append(" NodeHostname=").append(hostname));
        node.address().ifPresent(address -> line.append(" NodeAddr=").append(address));
        node.slurmdPort().ifPresent(port -> line.append(" Port=").append(port));
        node.cpus().ifPresent(cpus -> line.append(" CPUs=").append(cpus));
        node.realMemoryBytes().ifPresent(bytes -> line.append(" RealMemory=").append(bytes / MIB));
        return line.append(" Gres=gpu:").append(node.gpus()).append(",vgpu:").append(node.vgpus())
                .append(" State=UNKNOWN").toString();
    }
}
