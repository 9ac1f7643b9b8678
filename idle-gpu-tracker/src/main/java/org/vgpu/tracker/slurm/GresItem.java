package org.vgpu.tracker.slurm;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.vgpu.siteconfig.CommaLists;

/**
 * One GRES entry as Slurm prints it: {@code gpu:4}, {@code gpu:a100:2}, {@code gpu:3(IDX:0-2)},
 * {@code vgpu(CNT:3)}, {@code gpu:4(S:0-1)}; in a job's TRES request prefixed {@code gres:} (22.05)
 * or {@code gres/} (later releases).
 *
 * @param indices the device indices Slurm allocated ({@code IDX}), empty when it printed none
 */
public record GresItem(String name, Optional<String> type, int count, List<Integer> indices) {
    private static final Pattern ITEM = Pattern.compile(
            "(?:gres[:/])?([A-Za-z][A-Za-z0-9_]*)(?::([A-Za-z][A-Za-z0-9_.-]*))?(?::(\\d+))?(?:\\((IDX|CNT|S):([^)]*)\\))?");
    private static final Pattern INDEX_RANGE = Pattern.compile("(\\d+)(?:-(\\d+))?");

    public GresItem {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(type, "type");
        indices = List.copyOf(indices);
        if (count < 0) {
            throw new IllegalArgumentException("count must be >= 0, got " + count);
        }
    }

    /**
     * Parses a comma-separated list; Slurm's {@code (null)} and {@code N/A} and the empty string are an
     * empty list.
     *
     * @param source names the command and field, for error messages
     * @throws SlurmException for an entry in none of the forms above
     */
    public static List<GresItem> parseList(String source, String text) {
        String stripped = text.strip();
        if (stripped.isEmpty() || stripped.equals("(null)") || stripped.equals("N/A")) {
            return List.of();
        }
        List<GresItem> items = new ArrayList<>();
        for (String item : CommaLists.splitOutside(stripped, '(', ')')) {
            items.add(parse(source, item));
        }
        return List.copyOf(items);
    }

    /** The counts by GRES name ({@code gpu}, {@code vgpu}), summed over types and entries. */
    public static Map<String, Integer> counts(List<GresItem> items) {
        Map<String, Integer> counts = new LinkedHashMap<>();
        for (GresItem item : items) {
            counts.merge(item.name(), item.count(), Integer::sum);
        }
        return counts;
    }

    private static GresItem parse(String source, String item) {
        Matcher matcher = ITEM.matcher(item);
        if (!matcher.matches()) {
            throw SlurmException.badOutput(
                    source, "'" + item + "' is not a GRES entry such as gpu:4, gpu:1(IDX:3) or vgpu(CNT:3)");
        }
        String detailKind = matcher.group(4);
        List<Integer> indices = "IDX".equals(detailKind) ? indices(source, item, matcher.group(5)) : List.of();
        int count;
        try {
            if ("CNT".equals(detailKind)) {
                count = Integer.parseInt(matcher.group(5));
            } else if (matcher.group(3) != null) {
                count = Integer.parseInt(matcher.group(3));
            } else {
                count = indices.isEmpty() ? 1 : indices.size();
            }
        } catch (NumberFormatException e) {
            throw SlurmException.badOutput(source, "'" + item + "' has a count that is not a number");
        }
        if (!indices.isEmpty() && indices.size() != count) {
            throw SlurmException.badOutput(
                    source, "'" + item + "' counts " + count + " but lists " + indices.size() + " indices");
        }
        return new GresItem(matcher.group(1), Optional.ofNullable(matcher.group(2)), count, indices);
    }

    private static List<Integer> indices(String source, String item, String ranges) {
        List<Integer> indices = new ArrayList<>();
        for (String range : ranges.split(",")) {
            Matcher bounds = INDEX_RANGE.matcher(range);
            if (!bounds.matches()) {
                throw SlurmException.badOutput(source, "'" + item + "' has index '" + range + "', expected N or N-M");
            }
            int low = Integer.parseInt(bounds.group(1));
            int high = bounds.group(2) == null ? low : Integer.parseInt(bounds.group(2));
            if (high < low) {
                throw SlurmException.badOutput(source, "'" + item + "' has a backwards index range '" + range + "'");
            }
            for (int index = low; index <= high; index++) {
                indices.add(index);
            }
        }
        return indices;
    }
}
