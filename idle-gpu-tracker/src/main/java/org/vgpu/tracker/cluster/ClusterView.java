package org.vgpu.tracker.cluster;

import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.vgpu.siteconfig.NodeConfig;
import org.vgpu.siteconfig.SiteConfig;
import org.vgpu.tracker.slurm.SlurmInventory;
import org.vgpu.tracker.slurm.SlurmJob;
import org.vgpu.tracker.slurm.SlurmNode;

/**
 * The site's GPU nodes at one moment: which GPUs are idle (by index) and since when, free CPUs and
 * vgpu slots. Slurm prints no GPU indices per node, so they come from the jobs' allocations
 * ({@code GRES=gpu:2(IDX:0-1)}); where those account for fewer GPUs than the node's used count, the
 * highest-numbered "idle" ones are left out, so a GPU is never taken for idle on a guess.
 */
public record ClusterView(Instant now, List<NodeView> nodes) {
    /** States in which a job holds its GPUs (a completing job still does until its epilog ends). */
    private static final Set<String> HOLDING_STATES =
            Set.of("RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING", "STOPPED");

    public ClusterView {
        nodes = List.copyOf(nodes);
    }

    /** Nodes of the site configuration that Slurm does not report are left out (they cannot run anything). */
    public static ClusterView of(SlurmInventory inventory, SiteConfig site, IdleClock clock, Instant now) {
        Map<String, List<Integer>> idleByNode = idleGpus(inventory, site);
        List<NodeView> views = new ArrayList<>();
        for (NodeConfig config : site.nodes()) {
            Optional<SlurmNode> reported = inventory.node(config.name());
            if (reported.isEmpty()) {
                continue;
            }
            SlurmNode node = reported.get();
            views.add(new NodeView(
                    node.name(),
                    node.schedulable(),
                    node.partitions(),
                    node.idleCpus(),
                    node.idle(SlurmJob.VGPU),
                    clock.observe(node.name(), idleByNode.get(node.name()), now),
                    config.gpuMemoryBytes(),
                    config.lenderEndpoint()));
        }
        return new ClusterView(now, views);
    }

    /**
     * The idle GPU indices of each node of the site that Slurm reports, in site order, without
     * touching an {@link IdleClock}: what {@code vgpu report} and {@code /metrics} show.
     */
    public static Map<String, List<Integer>> idleGpus(SlurmInventory inventory, SiteConfig site) {
        Map<String, Set<Integer>> inUse = gpusInUseByNode(inventory.jobs());
        Map<String, List<Integer>> idle = new LinkedHashMap<>();
        for (NodeConfig config : site.nodes()) {
            inventory
                    .node(config.name())
                    .ifPresent(node ->
                            idle.put(node.name(), idleGpus(node, inUse.getOrDefault(node.name(), Set.of()))));
        }
        return idle;
    }

    public Optional<NodeView> node(String name) {
        return nodes.stream().filter(node -> node.name().equals(name)).findFirst();
    }

    /** Every job's host lists expanded once, rather than once per node looked at. */
    private static Map<String, Set<Integer>> gpusInUseByNode(List<SlurmJob> jobs) {
        Map<String, Set<Integer>> inUse = new HashMap<>();
        for (SlurmJob job : jobs) {
            if (HOLDING_STATES.contains(job.state())) {
                job.gpuIndicesByNode()
                        .forEach((node, indices) -> inUse.computeIfAbsent(node, ignored -> new HashSet<>())
                                .addAll(indices));
            }
        }
        return inUse;
    }

    private static List<Integer> idleGpus(SlurmNode node, Set<Integer> inUse) {
        int configured = node.configured().getOrDefault(SlurmJob.GPU, 0);
        List<Integer> idle = new ArrayList<>();
        for (int index = 0; index < configured && idle.size() < node.idle(SlurmJob.GPU); index++) {
            if (!inUse.contains(index)) {
                idle.add(index);
            }
        }
        return idle;
    }
}
