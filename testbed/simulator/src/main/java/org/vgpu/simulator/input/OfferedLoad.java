package org.vgpu.simulator.input;

import java.util.List;
import java.util.Locale;

import org.vgpu.simulator.workload.SimJob;
import org.vgpu.simulator.workload.SimNode;
import org.vgpu.simulator.workload.Workload;

/**
 * How busy a workload's jobs would keep its cluster: the GPU-seconds they ask over the GPU-seconds the cluster has
 * from the first to the last submit. Near or above 1 jobs queue under any policy; far below it hardly any job waits,
 * and borrowing has nothing to shorten.
 */
public final class OfferedLoad {
    private OfferedLoad() {}

    public static double of(Workload workload) {
        List<SimJob> jobs = workload.jobs();
        double span = jobs.getLast().submitSecond() - jobs.getFirst().submitSecond();
        double work = jobs.stream()
                .mapToDouble(job -> (double) job.gpus() * job.runSeconds())
                .sum();
        int capacity = workload.nodes().stream().mapToInt(SimNode::gpus).sum();
        return span <= 0 ? Double.POSITIVE_INFINITY : work / (capacity * span);
    }

    /** The summary line every input's reading ends with. */
    public static String line(Workload workload) {
        return String.format(
                Locale.ROOT,
                "offered load: the jobs ask %.1f %% of the %,d GPUs' time from the first to the last submit",
                of(workload) * 100,
                workload.nodes().stream().mapToInt(SimNode::gpus).sum());
    }
}
