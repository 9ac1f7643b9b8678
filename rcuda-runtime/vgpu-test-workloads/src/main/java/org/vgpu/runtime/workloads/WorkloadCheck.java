package org.vgpu.runtime.workloads;

import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * One workload run on one vGPU and checked against its CPU reference, as the commands that run the
 * test workloads print it. A vGPU error is that workload's failure, not the caller's end, so the
 * other workloads (and the other vGPUs of a job) still run.
 *
 * @param outcome time, error against the reference and detail, or the vGPU's error
 */
public record WorkloadCheck(String workload, boolean passed, String outcome) {

    public static WorkloadCheck run(Workload workload, VirtualGpu gpu, int scale, long seed) {
        try {
            WorkloadResult result = workload.run(gpu, scale, seed);
            return new WorkloadCheck(
                    workload.name(),
                    result.passed(),
                    String.format(
                            "%10.1f ms  %s  (%s)",
                            result.elapsed().toNanos() / 1e6, result.errorSummary(), result.detail()));
        } catch (VgpuException e) {
            return new WorkloadCheck(workload.name(), false, String.format("%13s  %s", "-", e.getMessage()));
        }
    }

    /**
     * {@code PASS  <subject>vector-add   1.2 ms  exact  (detail)}: the status first, so that PASS and
     * FAIL lines are found by their start.
     *
     * @param subject what ran it, with its own trailing separator (e.g. "vgpu 1  "), or ""
     */
    public String line(String subject) {
        return String.format("%s  %s%-15s %s", passed ? "PASS" : "FAIL", subject, workload, outcome);
    }
}
