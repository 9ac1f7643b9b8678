package org.vgpu.tracker.cluster;

import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Since when each GPU has been idle, as seen by successive looks at Slurm. Slurm keeps no such
 * time, so a GPU counts as idle from the first look that found it idle: after a tracker restart
 * every GPU starts its grace period again, which errs on the side of letting Slurm pick first.
 */
public final class IdleClock {
    private final Map<String, Map<Integer, Instant>> idleSince = new HashMap<>();

    /**
     * Records the idle GPUs of a node as found at {@code now} and returns since when each has been idle;
     * a GPU missing from {@code idleGpus} is busy and its clock is reset.
     */
    public Map<Integer, Instant> observe(String node, List<Integer> idleGpus, Instant now) {
        Map<Integer, Instant> previous = idleSince.getOrDefault(node, Map.of());
        Map<Integer, Instant> current = new HashMap<>();
        for (int gpu : idleGpus) {
            current.put(gpu, previous.getOrDefault(gpu, now));
        }
        idleSince.put(node, current);
        return Map.copyOf(current);
    }
}
