package org.vgpu.simulator.workload;

import java.util.List;

/**
 * An input the simulator cannot read, with every problem found, each as {@code FILE:LINE: what is wrong; what
 * is expected}, as the site configuration reader reports its file.
 */
public final class WorkloadException extends Exception {
    private static final long serialVersionUID = 1L;

    private final List<String> problems;

    public WorkloadException(List<String> problems) {
        super(String.join("\n", problems));
        if (problems.isEmpty()) {
            throw new IllegalArgumentException("a workload error needs at least one problem");
        }
        this.problems = List.copyOf(problems);
    }

    public List<String> problems() {
        return problems;
    }
}
