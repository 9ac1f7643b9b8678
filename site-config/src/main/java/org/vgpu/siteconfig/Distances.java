package org.vgpu.siteconfig;

import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.Set;

/**
 * Topology distances between nodes (e.g. switch hops): the tracker borrows from the nearest idle
 * GPUs first. Symmetric; a node's distance to itself is 0. Complete for the configured nodes: a pair
 * is either listed or takes the site's default.
 *
 * <p>Only the listed pairs are stored, never the full table: a 10,000-node site has 50 million pairs, and
 * building them made loading the configuration take minutes. Lookups stay one hash probe.
 */
public final class Distances {
    private final Set<String> nodes;
    private final Map<NodePair, Integer> listed;
    private final OptionalInt fallback;

    /**
     * @param nodes    the configured nodes
     * @param listed   distances given pair by pair
     * @param fallback the distance of every other pair of {@code nodes}; empty when {@code listed} is complete
     */
    public Distances(Set<String> nodes, Map<NodePair, Integer> listed, OptionalInt fallback) {
        // Plain hash collections: Set.copyOf/Map.copyOf probe linearly and degrade on the clustered
        // hashes of names such as n0001, n0002, ... (a quadratic load).
        this.nodes = new HashSet<>(nodes);
        this.listed = new HashMap<>(listed);
        this.fallback = Objects.requireNonNull(fallback, "fallback");
    }

    /** A complete table of the nodes it names. */
    public Distances(Map<NodePair, Integer> pairs) {
        this(namedIn(pairs), pairs, OptionalInt.empty());
    }

    private static Set<String> namedIn(Map<NodePair, Integer> pairs) {
        Set<String> names = new HashSet<>();
        pairs.keySet().forEach(pair -> {
            names.add(pair.first());
            names.add(pair.second());
        });
        return names;
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

        /**
         * Mixes both names' hashes: a record's default (31 * first + second) gives many pairs of similar names one
         * hash, e.g. (g00001, g00040) and (g00002, g00009).
         */
        @Override
        public int hashCode() {
            long mixed = (first.hashCode() * 0x9E3779B97F4A7C15L) ^ second.hashCode();
            mixed *= 0xBF58476D1CE4E5B9L;
            return (int) (mixed ^ (mixed >>> 32));
        }

        @Override
        public boolean equals(Object other) {
            return other instanceof NodePair pair && first.equals(pair.first) && second.equals(pair.second);
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
        Integer distance = listed.get(NodePair.of(a, b));
        if (distance != null) {
            return distance;
        }
        if (fallback.isPresent() && nodes.contains(a) && nodes.contains(b)) {
            return fallback.getAsInt();
        }
        throw new IllegalArgumentException(
                "no distance between '" + a + "' and '" + b + "': not both configured nodes");
    }

    /** The distances the configuration gives pair by pair. */
    public Map<NodePair, Integer> listed() {
        return Collections.unmodifiableMap(listed);
    }

    /** How many pairs the configuration gives one by one. */
    public int listedPairs() {
        return listed.size();
    }

    /** The distance of every configured pair not listed; empty when every pair is listed. */
    public OptionalInt otherPairs() {
        return fallback;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof Distances distances
                && nodes.equals(distances.nodes)
                && listed.equals(distances.listed)
                && fallback.equals(distances.fallback);
    }

    @Override
    public int hashCode() {
        return Objects.hash(nodes, listed, fallback);
    }

    @Override
    public String toString() {
        return "Distances[" + nodes.size() + " nodes, " + listed.size() + " pairs listed, others "
                + (fallback.isPresent() ? Integer.toString(fallback.getAsInt()) : "none") + "]";
    }
}
