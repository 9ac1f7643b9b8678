package org.vgpu.siteconfig;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Slurm's host list syntax, the one reader of node lists in vgpu: the site configuration's {@code [node gpu[001-128]]}
 * sections and {@code [distance]} entries, and the node lists Slurm prints ({@code scontrol show job -d}: {@code
 * n[1-3,5]}). Forms: {@code gpu[001-128]}, {@code g[1,3,5-8]}, {@code a1,b[2-3]}, and a text after the brackets kept
 * on each name ({@code r[1-2]-ib}). {@link #expand} reads one into its names (zero padding kept: the width of a
 * range's lower bound, as Slurm names such nodes), {@link #compress} writes names back as short as that syntax allows.
 * Both are linear in the names.
 *
 * <p>The name check is Slurm's rule for node names: slurm.conf's {@code NodeName} is a host name ({@code hostname -s},
 * or a name the host database or DNS knows), and Slurm's host lists hold names of at most 64 characters
 * ({@code MAXHOSTNAMELEN} in Slurm's hostlist.c). So each name is a {@link ConfigValues#name}: 1 to 64 letters, digits,
 * {@code _ . -}, starting with a letter or digit (host name characters, plus the {@code _} that /etc/hosts takes).
 * The tracker reads Slurm's lists with the same check, so a node Slurm prints is a node a configuration can name.
 *
 * <p>The limit is Slurm's too: its host lists refuse a range of more than 65,536 hosts ({@code MAX_RANGE}, "anything
 * larger will be assumed to be an error"). Here it bounds a whole expression, so a typo such as {@code n[1-99999999]}
 * is refused before any name is made, in a configuration and in Slurm's output alike.
 */
public final class HostList {
    /** The most names one expression may stand for: Slurm's {@code MAX_RANGE}. */
    static final int MAX_NAMES = 65_536;

    private static final Pattern TRAILING_NUMBER = Pattern.compile("^(.*?)(\\d+)$");
    private static final String EXPECTED =
            "expected NAME or NAME[RANGES] as in slurm.conf, e.g. gpu[001-128]," + " gpu[1,3,5-8] or a1,b[2-3]";

    private HostList() {}

    /**
     * The names {@code expression} stands for, in its order, each checked as a {@link ConfigValues#name}.
     *
     * @throws IllegalArgumentException saying what is malformed and what is expected
     */
    public static List<String> expand(String expression) {
        List<String> names = new ArrayList<>();
        for (String part : CommaLists.splitOutside(expression, '[', ']')) {
            if (part.isEmpty()) {
                throw malformed(expression, "an empty name between commas");
            }
            int open = part.indexOf('[');
            int close = part.indexOf(']');
            if (close >= 0 && (open < 0 || close < open)) {
                throw malformed(expression, "']' without its '['");
            }
            if (open < 0) {
                names.add(checkedName(part, expression));
                continue;
            }
            if (open == 0 || close < 0 || part.indexOf('[', open + 1) >= 0 || part.indexOf(']', close + 1) >= 0) {
                throw malformed(
                        expression,
                        open == 0
                                ? "a range needs a name before its '['"
                                : close < 0 ? "'[' without its ']'" : "one [...] per name");
            }
            String prefix = part.substring(0, open);
            String suffix = part.substring(close + 1);
            for (String range : part.substring(open + 1, close).split(",", -1)) {
                addRange(names, prefix, range, suffix, expression);
            }
        }
        return names;
    }

    /** The names as one host list: runs of numbers after a common prefix become ranges; a name's own order within. */
    public static String compress(List<String> names) {
        Map<String, List<Run>> runsByPrefix = new LinkedHashMap<>();
        // Each entry: a name without a number, written as it is, or a prefix, written with its runs.
        List<Map.Entry<String, List<Run>>> parts = new ArrayList<>();
        for (String name : names) {
            Matcher numbered = TRAILING_NUMBER.matcher(name);
            if (!numbered.matches()
                    || numbered.group(1).isEmpty()
                    || numbered.group(2).length() > 18) {
                parts.add(Map.entry(name, List.of()));
                continue;
            }
            String digits = numbered.group(2);
            long value = Long.parseLong(digits);
            List<Run> runs = runsByPrefix.computeIfAbsent(numbered.group(1), prefix -> {
                List<Run> made = new ArrayList<>();
                parts.add(Map.entry(prefix, made));
                return made;
            });
            if (runs.isEmpty() || !runs.getLast().extendsBy(value, digits)) {
                runs.add(new Run(value, digits.length() > 1 && digits.charAt(0) == '0' ? digits.length() : 0));
            }
        }
        List<String> written = new ArrayList<>(parts.size());
        for (Map.Entry<String, List<Run>> part : parts) {
            List<Run> runs = part.getValue();
            if (runs.isEmpty()) {
                written.add(part.getKey());
            } else if (runs.size() == 1 && runs.getFirst().single()) {
                written.add(part.getKey() + runs.getFirst().text());
            } else {
                written.add(part.getKey() + "["
                        + String.join(",", runs.stream().map(Run::text).toList()) + "]");
            }
        }
        return String.join(",", written);
    }

    /** Consecutive numbers written with the same zero padding ({@code width} 0: none). */
    private static final class Run {
        private final long first;
        private final int width;
        private long last;

        Run(long first, int width) {
            this.first = first;
            this.width = width;
            this.last = first;
        }

        /** Takes {@code value} as its next number when it is one, written alike. */
        boolean extendsBy(long value, String digits) {
            if (value != last + 1 || !format(value).equals(digits)) {
                return false;
            }
            last = value;
            return true;
        }

        boolean single() {
            return first == last;
        }

        String text() {
            return first == last ? format(first) : format(first) + "-" + format(last);
        }

        private String format(long value) {
            String plain = Long.toString(value);
            return plain.length() >= width ? plain : "0".repeat(width - plain.length()) + plain;
        }
    }

    private static void addRange(List<String> names, String prefix, String range, String suffix, String expression) {
        int dash = range.indexOf('-');
        String low = dash < 0 ? range : range.substring(0, dash);
        String high = dash < 0 ? range : range.substring(dash + 1);
        if (!isNumber(low) || !isNumber(high)) {
            throw malformed(
                    expression,
                    "'" + range + "' is not a number or a range N-M of numbers"
                            + (range.isEmpty() ? " (an empty one)" : ""));
        }
        long from = Long.parseLong(low);
        long to = Long.parseLong(high);
        if (to < from) {
            throw malformed(expression, "the range " + range + " runs backwards");
        }
        if (to - from + 1 > MAX_NAMES - names.size()) {
            throw new IllegalArgumentException("'" + expression + "' stands for more than " + MAX_NAMES
                    + " nodes, Slurm's own limit on a range (a typo?)");
        }
        int width = low.length();
        for (long number = from; number <= to; number++) {
            String digits = Long.toString(number);
            String padded = digits.length() >= width ? digits : "0".repeat(width - digits.length()) + digits;
            names.add(checkedName(prefix + padded + suffix, expression));
        }
    }

    private static boolean isNumber(String text) {
        return !text.isEmpty() && text.length() <= 18 && text.chars().allMatch(c -> c >= '0' && c <= '9');
    }

    private static String checkedName(String name, String expression) {
        try {
            return ConfigValues.name(name);
        } catch (IllegalArgumentException e) {
            throw name.equals(expression)
                    ? e
                    : new IllegalArgumentException("in '" + expression + "': " + e.getMessage(), e);
        }
    }

    private static IllegalArgumentException malformed(String expression, String what) {
        return new IllegalArgumentException("'" + expression + "' is not a node range: " + what + "; " + EXPECTED);
    }
}
