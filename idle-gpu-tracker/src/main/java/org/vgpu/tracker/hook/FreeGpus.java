package org.vgpu.tracker.hook;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import org.vgpu.tracker.slurm.SlurmInventory;
import org.vgpu.tracker.slurm.SlurmJob;
import org.vgpu.tracker.slurm.SlurmNode;

/** Which GPUs of a node a migration may claim now, from Slurm's view. */
final class FreeGpus {
    private FreeGpus() {}

    /** GPU indices of {@code node} that no job holds (the idle grace does not apply to moves). */
    static List<Integer> on(SlurmInventory inventory, String node) {
        Optional<SlurmNode> view = inventory.node(node);
        if (view.isEmpty() || !view.get().schedulable()) {
            return List.of();
        }
        Set<Integer> used = new HashSet<>();
        for (SlurmJob job : inventory.jobs()) {
            if (job.state().equals("RUNNING") || job.state().equals("CONFIGURING")) {
                used.addAll(job.gpuIndicesOn(node));
            }
        }
        int gpus = view.get().configured().getOrDefault(SlurmJob.GPU, 0);
        List<Integer> free = new ArrayList<>();
        for (int gpu = 0; gpu < gpus; gpu++) {
            if (!used.contains(gpu)) {
                free.add(gpu);
            }
        }
        // Slurm's count is the last word: it also counts GPUs taken without indices shown.
        return free.size() > view.get().idle(SlurmJob.GPU)
                ? free.subList(0, view.get().idle(SlurmJob.GPU))
                : free;
    }
}
