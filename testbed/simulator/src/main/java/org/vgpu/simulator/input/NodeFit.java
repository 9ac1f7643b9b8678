package org.vgpu.simulator.input;

import java.util.List;

import org.vgpu.simulator.workload.SimNode;

/**
 * Whether a job can ever start on a cluster: some node has all its GPUs and CPUs. A job that cannot would wait
 * forever under every policy (vgpu jobs borrow only for single-node jobs that fit a node's request), so the
 * readers leave it out and say so.
 */
final class NodeFit {
    static final String TOO_BIG = "that ask more GPUs or CPUs than any one node has";

    private final List<SimNode> nodes;

    NodeFit(List<SimNode> nodes) {
        this.nodes = List.copyOf(nodes);
    }

    boolean fits(int gpus, int cpus) {
        return nodes.stream().anyMatch(node -> node.gpus() >= gpus && node.cpus() >= cpus);
    }
}
