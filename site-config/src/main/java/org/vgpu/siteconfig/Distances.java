package org.vgpu.siteconfig;

import java.util.Map;
import java.util.Objects;

/**
 * Topology distances between nodes (e.g. switch hops): the tracker borrows from the nearest idle
 * GPUs first. Symmetric; a node's distance to itself is 0. Complete for the configured nodes.
 */
public record Distances(Map<NodePair, Integer> pairs) {
    public Distances {
        pairs = Map.copyOf(pairs);
    }

    /** Two distinct node names in a fixed order, so {@code (a, b)} and {@code (b, a)} are one key. */
    public record NodePair(String first, String second) {
        public NodePair {
            Objects.requireNonNull(first, "first");
            Objects.requireNonNull(second, "second");
            if (first.compareTo(second) >= 0) {
                throw new IllegalArgumentException(
                        "use NodePair.of: '" + first + "' must sort before '" + second + "'");
            }
        }

        public static NodePair of(String a, String b) {
            return a.compareTo(b) < 0 ? new NodePair(a, b) : new NodePair(b, a);
        }
    }

    /**
     * The distance between two configured nodes.
     *
     * @throws IllegalArgumentException for a node that is not configured
     */
    public int between(String a, String b) {
        if (a.equals(b)) {
            return 0;
        }
        Integer distance = pairs.get(NodePair.of(a, b));
        if (distance == null) {
            throw new IllegalArgumentException(
                    "no distance between '" + a + "' and '" + b + "': not both configured nodes");
        }
        return distance;
    }
}
