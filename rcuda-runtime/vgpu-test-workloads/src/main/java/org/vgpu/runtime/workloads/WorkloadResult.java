package org.vgpu.runtime.workloads;

import java.time.Duration;

/**
 * The outcome of one workload run.
 *
 * @param comparison how the device's result compares with the CPU reference; it passed when nothing mismatched
 * @param elapsed    wall time of the device part: allocations, copies, launches, copy-back and frees,
 *                   not the input generation or the CPU reference
 * @param detail     one line on the problem solved, e.g. sizes, launches, a best score
 */
public record WorkloadResult(String workload, String backend, Comparison comparison, Duration elapsed, String detail) {

    public boolean passed() {
        return comparison.passed();
    }

    /** "exact", the error figures, or the mismatch count with the first mismatch. */
    public String errorSummary() {
        if (passed()) {
            return comparison.summary();
        }
        return String.format(
                "%d of %d values wrong (%s); first: %s",
                comparison.mismatches(), comparison.compared(), comparison.summary(), comparison.firstMismatch());
    }
}
