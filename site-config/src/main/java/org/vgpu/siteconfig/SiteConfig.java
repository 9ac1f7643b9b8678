package org.vgpu.siteconfig;

import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

import org.vgpu.common.net.Endpoint;

/**
 * The cluster's validated vgpu configuration, read once from one file by {@link SiteConfigReader}.
 *
 * @param source        the file it was read from (absolute), so rendered files can point back at it
 * @param clusterName   a name for logs, metrics and rendered files
 * @param tracker       where the tracker listens (SPANK bridge, lenders and {@code vgpu report} connect there)
 * @param tokenKeyFile  the site key ({@link org.vgpu.common.security.SiteKey}) that signs session tokens
 * @param lendPartition the partition of the tracker's holder jobs
 * @param lendQos       the QOS of holder jobs, when the site has accounting (QOS needs slurmdbd)
 * @param workerTls     whether holders' workers speak TLS with their jobs (self-signed certificates the jobs' tokens
 *                      pin); off: plain TCP
 * @param holdersAsBorrower whether the tracker submits holder jobs as the borrowing job's user (else as its own)
 * @param nodes         the GPU nodes, in file order, names unique
 * @param metrics       where the tracker serves Prometheus' {@code /metrics}; empty: it serves none
 *                      (the default, so the tracker opens no port an admin did not choose)
 */
public record SiteConfig(
        Path source,
        String clusterName,
        Endpoint tracker,
        Path tokenKeyFile,
        String lendPartition,
        Optional<String> lendQos,
        boolean workerTls,
        boolean holdersAsBorrower,
        Policy policy,
        List<NodeConfig> nodes,
        Distances distances,
        SlurmSettings slurm,
        Optional<Endpoint> metrics) {
    public SiteConfig {
        Objects.requireNonNull(source, "source");
        Objects.requireNonNull(clusterName, "clusterName");
        Objects.requireNonNull(tracker, "tracker");
        Objects.requireNonNull(tokenKeyFile, "tokenKeyFile");
        Objects.requireNonNull(lendPartition, "lendPartition");
        Objects.requireNonNull(lendQos, "lendQos");
        Objects.requireNonNull(policy, "policy");
        Objects.requireNonNull(distances, "distances");
        Objects.requireNonNull(slurm, "slurm");
        Objects.requireNonNull(metrics, "metrics");
        // The key file is written unquoted into the lender's ExecStart and quoted into holder scripts.
        PlainWords.requirePlainPath(ConfigKeys.TOKEN_KEY_FILE.name(), tokenKeyFile);
        nodes = List.copyOf(nodes);
        if (nodes.isEmpty()) {
            throw new IllegalArgumentException("a site needs at least one node");
        }
    }

    public Optional<NodeConfig> node(String name) {
        return nodes.stream().filter(node -> node.name().equals(name)).findFirst();
    }

    public int totalGpus() {
        return nodes.stream().mapToInt(NodeConfig::gpus).sum();
    }

    /**
     * The CPUs a user job may take on one node, so one CPU per GPU stays free for holder jobs
     * (Slurm starts no job without a CPU, and a GPU whose node has no free CPU cannot be lent):
     * the smallest {@code cpus - gpus} of all nodes; empty unless every node states its CPUs.
     */
    public OptionalInt maxUserCpusPerNode() {
        if (nodes.stream().anyMatch(node -> node.cpus().isEmpty())) {
            return OptionalInt.empty();
        }
        return nodes.stream()
                .mapToInt(node -> node.cpus().getAsInt() - node.gpus())
                .min();
    }

    /** The most vGPUs one job may ask for on a node: the largest vgpu count of any node. */
    public int maxVgpusPerNode() {
        return nodes.stream().mapToInt(NodeConfig::vgpus).max().orElseThrow();
    }

    /**
     * The most GPUs one job can get: the largest node's GPUs plus, when borrowing is on, the
     * borrow limit; never more than the cluster has.
     */
    public int maxGpusPerJob() {
        int local = nodes.stream().mapToInt(NodeConfig::gpus).max().orElseThrow();
        int borrowed = policy.borrowing() ? policy.maxBorrowedPerJob() : 0;
        return Math.min(totalGpus(), local + borrowed);
    }
}
