package org.vgpu.simulator.engine;

import java.time.Instant;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Map;

import org.vgpu.common.net.Endpoint;
import org.vgpu.simulator.workload.SimNode;
import org.vgpu.tracker.cluster.NodeView;

/** One simulated node now: which of its GPUs are free (by index), its free CPUs and vgpu slots, who holds what. */
final class NodeState {
    final int index;
    final SimNode node;
    final BitSet freeGpus;
    int freeCpus;
    /**
     * The node's vgpu GRES slots per GPU, as the Slurm testbed configures them ({@code gpu:4,vgpu:8}): a node can
     * host jobs with more vGPUs than it has GPUs, the rest borrowed.
     */
    static final int VGPU_SLOTS_PER_GPU = 2;

    /** The node's vgpu slots less the vGPUs of the jobs it hosts. */
    int freeVgpus;
    /** What running jobs hold here, by when they end at the latest, for backfill's reservation. */
    final List<Hold> holds = new ArrayList<>();
    /** The running jobs whose own node this is: the hook looks at them when a GPU here frees. */
    final List<RunningJob> hosted = new ArrayList<>();
    /** Since when each free GPU has been idle, as the tracker's idle clock said at the last change. */
    Map<Integer, Instant> idleSince = Map.of();
    /** The tracker's view of this node as of the last change; null when it changed since. */
    NodeView view;

    NodeState(int index, SimNode node) {
        this.index = index;
        this.node = node;
        this.freeGpus = new BitSet(node.gpus());
        this.freeGpus.set(0, node.gpus());
        this.freeCpus = node.cpus();
        this.freeVgpus = VGPU_SLOTS_PER_GPU * node.gpus();
    }

    /** Adds a hold, keeping {@link #holds} ordered by end. */
    void hold(Hold hold) {
        double end = hold.job.limitEnd();
        int at = holds.size();
        while (at > 0 && holds.get(at - 1).job.limitEnd() > end) {
            at--;
        }
        holds.add(at, hold);
    }

    /** Takes (positive) or gives back (negative) CPUs and vgpu slots. */
    void takeCpusAndSlots(int cpus, int vgpus) {
        freeCpus -= cpus;
        freeVgpus -= vgpus;
        view = null;
    }

    /** The tracker's view of the node now: what the tracker builds from Slurm's node and job records. */
    NodeView view(String partition) {
        if (view == null) {
            view = new NodeView(
                    node.name(),
                    true,
                    List.of(partition),
                    freeCpus,
                    freeVgpus,
                    idleSince,
                    0,
                    new Endpoint(node.name(), 0));
        }
        return view;
    }

    int freeGpuCount() {
        return freeGpus.cardinality();
    }

    boolean fits(int gpus, int cpus) {
        return freeGpuCount() >= gpus && freeCpus >= cpus;
    }

    List<Integer> freeGpuIndices() {
        return freeGpus.stream().boxed().toList();
    }

    boolean hostsBorrowers() {
        for (RunningJob job : hosted) {
            if (!job.remotes.isEmpty()) {
                return true;
            }
        }
        return false;
    }
}
