package org.vgpu.simulator.engine;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;

import org.vgpu.simulator.workload.SimNode;
import org.vgpu.tracker.cluster.IdleClock;

/**
 * The simulated cluster's GPUs and CPUs: nodes indexed by how many GPUs they have free, so that finding a node
 * for a job never scans the whole cluster; every change is shown to the tracker's own idle clock, which keeps since
 * when each GPU has been idle; and the GPU-seconds held, for utilisation.
 */
final class Cluster {
    private final NodeState[] nodes;
    /** For each count of free GPUs, the nodes with that many, by index. */
    private final List<TreeSet<Integer>> byFreeGpus = new ArrayList<>();

    private final IdleClock idleClock = new IdleClock();
    private int freeGpus;
    private int busyGpus;
    private double busyGpuSeconds;
    private double clock;

    Cluster(List<SimNode> simNodes) {
        nodes = new NodeState[simNodes.size()];
        int most = simNodes.stream().mapToInt(SimNode::gpus).max().orElse(0);
        for (int count = 0; count <= most; count++) {
            byFreeGpus.add(new TreeSet<>());
        }
        for (int i = 0; i < nodes.length; i++) {
            nodes[i] = new NodeState(i, simNodes.get(i));
            byFreeGpus.get(nodes[i].node.gpus()).add(i);
            freeGpus += nodes[i].node.gpus();
            nodes[i].idleSince = idleClock.observe(nodes[i].node.name(), nodes[i].freeGpuIndices(), Instant.EPOCH);
        }
    }

    NodeState node(int index) {
        return nodes[index];
    }

    int size() {
        return nodes.length;
    }

    /** Integrates the GPUs held up to {@code now}. */
    void advanceTo(double now) {
        busyGpuSeconds += busyGpus * (now - clock);
        clock = now;
    }

    double busyGpuSeconds() {
        return busyGpuSeconds;
    }

    int freeGpus() {
        return freeGpus;
    }

    /** The most free GPUs one node has now. */
    int mostFreeGpus() {
        for (int count = byFreeGpus.size() - 1; count > 0; count--) {
            if (!byFreeGpus.get(count).isEmpty()) {
                return count;
            }
        }
        return 0;
    }

    /**
     * The node with the fewest free GPUs that still holds {@code gpus} GPUs and {@code cpus} CPUs (best fit, ties to
     * the lowest index), other than {@code excluded}; empty when none does.
     */
    Optional<NodeState> bestFit(int gpus, int cpus, NodeState excluded) {
        for (int count = Math.max(gpus, 0); count < byFreeGpus.size(); count++) {
            for (int index : byFreeGpus.get(count)) {
                NodeState node = nodes[index];
                if (node != excluded && node.freeCpus >= cpus) {
                    return Optional.of(node);
                }
            }
        }
        return Optional.empty();
    }

    /** The nodes with at least one free GPU, by free count then index. */
    List<NodeState> nodesWithFreeGpus() {
        List<NodeState> found = new ArrayList<>();
        for (int count = 1; count < byFreeGpus.size(); count++) {
            for (int index : byFreeGpus.get(count)) {
                found.add(nodes[index]);
            }
        }
        return found;
    }

    /** Takes {@code count} free GPUs of {@code node}, lowest indices first, and returns their indices. */
    List<Integer> takeGpus(NodeState node, int count, double now) {
        List<Integer> taken = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            int gpu = node.freeGpus.nextSetBit(0);
            taken.add(gpu);
            node.freeGpus.clear(gpu);
        }
        changed(node, node.freeGpuCount() + count, -count, now);
        return taken;
    }

    /** Takes GPU {@code gpu} of {@code node}, which must be free. */
    void takeGpu(NodeState node, int gpu, double now) {
        if (!node.freeGpus.get(gpu)) {
            throw new IllegalStateException("GPU " + gpu + " of " + node.node.name() + " is not free");
        }
        node.freeGpus.clear(gpu);
        changed(node, node.freeGpuCount() + 1, -1, now);
    }

    void releaseGpu(NodeState node, int gpu, double now) {
        node.freeGpus.set(gpu);
        changed(node, node.freeGpuCount() - 1, 1, now);
    }

    private void changed(NodeState node, int freeBefore, int delta, double now) {
        byFreeGpus.get(freeBefore).remove(node.index);
        byFreeGpus.get(node.freeGpuCount()).add(node.index);
        freeGpus += delta;
        busyGpus -= delta;
        node.idleSince = idleClock.observe(node.node.name(), node.freeGpuIndices(), Simulation.instant(now));
        node.view = null;
    }
}
