package org.vgpu.tracker.placement;

import java.time.Duration;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

import org.vgpu.tracker.cluster.ClusterView;
import org.vgpu.tracker.cluster.NodeView;

/**
 * What is still free on each node while the tracker plans: Slurm's idle GPUs, CPUs and vgpu slots
 * less what assemblies already promised but Slurm does not show as taken yet (holders still pending,
 * released jobs not yet started). Planning several jobs in one pass takes from it, so no GPU is
 * promised twice.
 */
public final class Availability {
    /** What is free on one node; counts only go down. */
    public static final class Node {
        private final NodeView view;
        private int gpus;
        private int lendableGpus;
        private int cpus;
        private int vgpus;
        private int lent;

        private Node(NodeView view, int lendableGpus) {
            this.view = view;
            this.gpus = view.idleGpus();
            this.lendableGpus = lendableGpus;
            this.cpus = view.idleCpus();
            this.vgpus = view.idleVgpus();
        }

        public NodeView view() {
            return view;
        }

        public int gpus() {
            return gpus;
        }

        /** GPUs idle past the grace period, which may be lent; never more than {@link #gpus()}. */
        public int lendableGpus() {
            return Math.min(lendableGpus, gpus);
        }

        public int cpus() {
            return cpus;
        }

        public int vgpus() {
            return vgpus;
        }

        /** GPUs of this node promised to jobs of other nodes in this pass: spreads lends over lenders. */
        public int lent() {
            return lent;
        }

        /** Takes what a job placed here needs: its local GPUs, CPUs and vgpu slots. */
        public void takeForJob(int localGpus, int jobCpus, int jobVgpus) {
            gpus = Math.max(0, gpus - localGpus);
            lendableGpus = Math.max(0, lendableGpus - localGpus);
            cpus = Math.max(0, cpus - jobCpus);
            vgpus = Math.max(0, vgpus - jobVgpus);
        }

        /** Takes one GPU and the CPU of the holder job that keeps it. */
        public void takeForLend() {
            gpus = Math.max(0, gpus - 1);
            lendableGpus = Math.max(0, lendableGpus - 1);
            cpus = Math.max(0, cpus - 1);
            lent++;
        }
    }

    private final Map<String, Node> nodes = new LinkedHashMap<>();

    public Availability(ClusterView view, Duration grace) {
        for (NodeView node : view.nodes()) {
            nodes.put(node.name(), new Node(node, node.lendableGpus(view.now(), grace)));
        }
    }

    public Optional<Node> node(String name) {
        return Optional.ofNullable(nodes.get(name));
    }

    public Collection<Node> nodes() {
        return nodes.values();
    }
}
