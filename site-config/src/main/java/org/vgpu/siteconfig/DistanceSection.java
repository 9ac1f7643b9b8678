package org.vgpu.siteconfig;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * Reads a site configuration's [distance] section into {@link Distances}: host lists expanded into pairs of nodes,
 * each pair given once, every pair given or a default, every problem reported at its line.
 */
final class DistanceSection {
    /** The key of the distance of every pair a [distance] section does not list. */
    static final String DEFAULT_KEY = "default";
    /**
     * The most pairs a [distance] section may list, ranges expanded: the tracker keeps each in memory. A 10,000-node
     * site in racks of 64 lists 315,000 within its racks; a table larger than this wants a default.
     */
    private static final int MAX_LISTED_PAIRS = 1_000_000;

    private final FileProblems problems;

    DistanceSection(FileProblems problems) {
        this.problems = problems;
    }

    /**
     * Without a [distance] section the network is flat: every pair of nodes is 1 apart. Each entry names two host lists
     * ({@code gpu[001-064] gpu[065-128] = 2}): every node of the one is that far from every other node of the other.
     * Only the listed pairs are kept (see {@link Distances}), at most {@link #MAX_LISTED_PAIRS}; completeness without a
     * default is checked by counting, so a large site with a default never walks its n * (n - 1) / 2 pairs.
     */
    Distances read(IniFile.Section section, List<String> names) {
        Map<Distances.NodePair, Integer> pairs = new HashMap<>();
        Optional<Integer> fallback = section == null ? Optional.of(1) : Optional.empty();
        Map<Distances.NodePair, Integer> lineOfPair = new HashMap<>();
        Set<String> known = new HashSet<>(names);
        for (IniFile.Entry entry : section == null ? List.<IniFile.Entry>of() : section.entries()) {
            Optional<Integer> distance = problems.parse(entry, value -> ConfigValues.integer(value, 1, 1_000_000));
            if (entry.key().equals(DEFAULT_KEY)) {
                if (fallback.isPresent()) {
                    problems.add(entry.line(), "'default' is set again in [distance]; set it once");
                }
                fallback = distance;
                continue;
            }
            String[] ends = entry.key().split("\\s+");
            if (ends.length != 2) {
                problems.add(
                        entry.line(),
                        "'" + entry.key() + "' in [distance] is not a pair of nodes; expected"
                                + " 'NODES NODES = DISTANCE' (e.g. n1 n2 = 1 or g[1-4] g[5-8] = 2) or"
                                + " 'default = DISTANCE'");
                continue;
            }
            Optional<Set<String>> from = distanceEnd(entry, ends[0], known, names);
            Optional<Set<String>> to = distanceEnd(entry, ends[1], known, names);
            if (from.isEmpty() || to.isEmpty()) {
                continue;
            }
            long pairCount = (long) from.get().size() * to.get().size();
            if (lineOfPair.size() + pairCount > MAX_LISTED_PAIRS) {
                problems.add(
                        entry.line(),
                        "'" + entry.key() + "' lists " + pairCount + " pairs, which take [distance] past the "
                                + MAX_LISTED_PAIRS + " pairs it may list; give the most common distance as"
                                + " 'default = DISTANCE' and list the others");
                continue;
            }
            listPairs(entry, from.get(), to.get(), distance, pairs, lineOfPair);
        }
        long allPairs = (long) names.size() * (names.size() - 1) / 2;
        if (fallback.isEmpty()
                && lineOfPair.size() < allPairs
                && section != null
                && problems.at(section.entries()).isEmpty()) {
            problems.add(
                    section.line(),
                    "[distance] lacks " + missingPairs(names, lineOfPair.keySet(), allPairs)
                            + "; add a line 'NODE NODE = DISTANCE' for each, or 'default = DISTANCE' for all pairs"
                            + " not listed");
        }
        return new Distances(known, pairs, fallback.map(OptionalInt::of).orElse(OptionalInt.empty()));
    }

    /**
     * The nodes one end of a [distance] entry names, or empty when it is malformed or names a node not described (both
     * reported).
     */
    private Optional<Set<String>> distanceEnd(IniFile.Entry entry, String end, Set<String> known, List<String> names) {
        List<String> expanded;
        try {
            expanded = HostList.expand(end);
        } catch (IllegalArgumentException e) {
            problems.add(entry.line(), "distance: " + e.getMessage());
            return Optional.empty();
        }
        List<String> unknown = expanded.stream()
                .filter(name -> !known.contains(name))
                .distinct()
                .toList();
        if (!unknown.isEmpty()) {
            problems.add(
                    entry.line(),
                    (unknown.size() == 1
                                    ? "distance to unknown node '" + unknown.getFirst() + "'; "
                                    : "distance to " + unknown.size() + " unknown nodes ("
                                            + FileProblems.listed(unknown) + "); ")
                            + (names.isEmpty()
                                    ? "no node is described"
                                    : "the nodes are " + FileProblems.listed(names)));
            return Optional.empty();
        }
        return Optional.of(new LinkedHashSet<>(expanded));
    }

    /**
     * Every pair of a node of {@code from} and another node of {@code to}, at {@code distance}: a node is not paired
     * with itself where the lists overlap ({@code g[1-4] g[1-4]}: every pair within), and a pair given on an earlier
     * line is reported once for the entry.
     */
    private void listPairs(
            IniFile.Entry entry,
            Set<String> from,
            Set<String> to,
            Optional<Integer> distance,
            Map<Distances.NodePair, Integer> pairs,
            Map<Distances.NodePair, Integer> lineOfPair) {
        Integer line = entry.line();
        // Each pair given on an earlier line, with that line.
        Map<Distances.NodePair, Integer> again = new LinkedHashMap<>();
        boolean anyPair = false;
        for (String a : from) {
            for (String b : to) {
                if (a.equals(b)) {
                    continue;
                }
                anyPair = true;
                Distances.NodePair pair = Distances.NodePair.of(a, b);
                Integer firstLine = lineOfPair.putIfAbsent(pair, line);
                if (firstLine == null) {
                    distance.ifPresent(value -> pairs.put(pair, value));
                } else if (!firstLine.equals(line)) {
                    again.putIfAbsent(pair, firstLine);
                }
            }
        }
        if (!anyPair) {
            problems.add(
                    entry.line(),
                    "distance from '" + from.iterator().next() + "' to itself; a node is 0 from itself, give pairs of"
                            + " different nodes");
        } else if (!again.isEmpty()) {
            Map.Entry<Distances.NodePair, Integer> first =
                    again.entrySet().iterator().next();
            problems.add(
                    entry.line(),
                    (again.size() == 1
                                    ? "distance between '" + first.getKey().first() + "' and '"
                                            + first.getKey().second() + "' is given again (first at line "
                                    : again.size() + " pairs ("
                                            + FileProblems.listed(again.keySet().stream()
                                                    .map(pair -> pair.first() + " " + pair.second())
                                                    .toList())
                                            + ") are given again ("
                                            + first.getKey().first() + " "
                                            + first.getKey().second() + " first at line ")
                            + first.getValue() + "); distances are symmetric, give each pair once");
        }
    }

    /** The first few pairs not given, and how many more: a site of thousands of nodes lacks millions. */
    private static String missingPairs(List<String> names, Set<Distances.NodePair> given, long allPairs) {
        List<String> shown = new ArrayList<>();
        for (int i = 0; i < names.size() && shown.size() < FileProblems.SHOWN_AT_MOST; i++) {
            for (int j = i + 1; j < names.size() && shown.size() < FileProblems.SHOWN_AT_MOST; j++) {
                Distances.NodePair pair = Distances.NodePair.of(names.get(i), names.get(j));
                if (!given.contains(pair)) {
                    shown.add(pair.first() + " " + pair.second());
                }
            }
        }
        long more = allPairs - given.size() - shown.size();
        return more == 0
                ? String.join(", ", shown)
                : String.join(", ", shown) + " and " + more + " more pair" + (more == 1 ? "" : "s");
    }
}
