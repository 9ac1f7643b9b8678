package org.vgpu.siteconfig;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.vgpu.common.error.ConfigException;

/**
 * A site configuration whose node list and GPU counts are the running Slurm's ({@code vgpu config render
 * --slurm-nodes}): the nodes Slurm gives a {@code gpu} GRES, each with Slurm's count, and every other setting from the
 * configuration's {@code [node]} section that names it. Nodes of the configuration that Slurm has no GPUs on are left
 * out and named.
 *
 * @param config  the configuration with Slurm's GPU nodes
 * @param leftOut the configuration's nodes that are no GPU node of Slurm's, in file order
 */
public record NodesFromSlurm(SiteConfig config, List<String> leftOut) {
    public NodesFromSlurm {
        leftOut = List.copyOf(leftOut);
    }

    /**
     * @param slurmGpus each node Slurm knows, in Slurm's order, with its {@code gpu} GRES count (0: none)
     * @throws ConfigException when a GPU node of Slurm's has no section, when a section names its device files for
     *                         another GPU count than Slurm's, or when no node is left
     */
    public static NodesFromSlurm of(SiteConfig config, Map<String, Integer> slurmGpus) {
        List<NodeConfig> nodes = new ArrayList<>();
        List<String> uncovered = new ArrayList<>();
        slurmGpus.forEach((name, gpus) -> {
            if (gpus < 1) {
                return;
            }
            config.node(name)
                    .ifPresentOrElse(section -> nodes.add(withGpus(config, section, gpus)), () -> uncovered.add(name));
        });
        if (!uncovered.isEmpty()) {
            throw new ConfigException(
                    ConfigException.Code.INVALID,
                    "Slurm's GPU nodes " + HostList.compress(uncovered) + " have no [node] section in "
                            + config.source() + ", which gives each node its gpu_memory, vgpus and lender_port; add"
                            + " them to a section ([node NAME] takes Slurm's ranges, e.g. [node gpu[001-128]])");
        }
        if (nodes.isEmpty()) {
            throw new ConfigException(
                    ConfigException.Code.INVALID,
                    "Slurm has no node with a gpu GRES among the "
                            + config.nodes().size() + " nodes of " + config.source() + " ("
                            + HostList.compress(names(config.nodes())) + ")");
        }
        List<String> leftOut = names(config.nodes()).stream()
                .filter(name -> slurmGpus.getOrDefault(name, 0) < 1)
                .toList();
        SiteConfig fromSlurm = new SiteConfig(
                config.source(),
                config.clusterName(),
                config.tracker(),
                config.tokenKeyFile(),
                config.lendPartition(),
                config.lendQos(),
                config.workerTls(),
                config.holdersAsBorrower(),
                config.policy(),
                nodes,
                config.distances(),
                config.slurm(),
                config.metrics());
        return new NodesFromSlurm(fromSlurm, leftOut);
    }

    /**
     * The section's node with Slurm's GPU count; device files that the section left at their default follow the count,
     * ones it names must name as many files as Slurm has GPUs.
     */
    private static NodeConfig withGpus(SiteConfig config, NodeConfig section, int gpus) {
        String devices = section.gpuDevices();
        if (devices.equals(NodeConfig.defaultGpuDevices(section.gpus()))) {
            devices = NodeConfig.defaultGpuDevices(gpus);
        } else if (GpuDeviceFiles.count(devices) != gpus) {
            throw new ConfigException(
                    ConfigException.Code.INVALID,
                    "node " + section.name() + ": gpu_devices = " + devices + " in " + config.source() + " names "
                            + GpuDeviceFiles.count(devices) + " files, and Slurm gives the node " + gpus + " GPUs");
        }
        return new NodeConfig(
                section.name(),
                gpus,
                section.gpuMemoryBytes(),
                section.vgpus(),
                section.lenderPort(),
                devices,
                section.address(),
                section.hostname(),
                section.slurmdPort(),
                section.cpus(),
                section.realMemoryBytes());
    }

    private static List<String> names(List<NodeConfig> nodes) {
        return nodes.stream().map(NodeConfig::name).toList();
    }
}
