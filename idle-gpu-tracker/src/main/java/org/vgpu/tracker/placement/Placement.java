package org.vgpu.tracker.placement;

import java.util.List;
import java.util.Objects;

/** What the planner decided for one held vgpu job. */
public sealed interface Placement {
    /**
     * Run the job on {@code node} with {@code localGpus} of its GPUs as the first vGPUs, and one
     * GPU borrowed from each entry of {@code lenders} as the following ones, in that order.
     */
    record Plan(long job, String node, int localGpus, List<String> lenders) implements Placement {
        public Plan {
            Objects.requireNonNull(node, "node");
            lenders = List.copyOf(lenders);
            if (localGpus < 0 || localGpus + lenders.size() < 1) {
                throw new IllegalArgumentException("a plan needs at least one GPU, got " + localGpus + " local and "
                        + lenders.size() + " borrowed");
            }
        }

        public int vgpus() {
            return localGpus + lenders.size();
        }
    }

    /** The job cannot be assembled now; {@code reason} says why, for the job's comment and {@code vgpu report}. */
    record Wait(long job, String reason) implements Placement {
        public Wait {
            Objects.requireNonNull(reason, "reason");
        }
    }
}
