package org.vgpu.tracker.slurm;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.vgpu.siteconfig.CommaLists;

/**
 * Slurm's host list notation, as {@code scontrol show job -d} prints a job's node sets:
 * {@code n1}, {@code n[1-3]}, {@code gpu[01-04,07],login1}. Zero padding is kept ({@code n[08-10]}
 * is n08, n09, n10), as Slurm names such nodes.
 */
public final class HostList {
    private static final Pattern HOST = Pattern.compile("([^\\[\\],]*)(?:\\[([0-9,\\-]+)]([^\\[\\],]*))?");
    private static final Pattern RANGE = Pattern.compile("(\\d+)(?:-(\\d+))?");
    /** A range of more hosts than this is not a node list but a typo or garbage; refuse it before allocating. */
    private static final int MAX_HOSTS = 65_536;

    private HostList() {}

    /**
     * The host names, in order; {@code (null)} and the empty string are none.
     *
     * @param source names the command and field, for error messages
     * @throws SlurmException for text not in that notation
     */
    public static List<String> expand(String source, String text) {
        String stripped = text.strip();
        if (stripped.isEmpty() || stripped.equals("(null)")) {
            return List.of();
        }
        List<String> hosts = new ArrayList<>();
        for (String part : CommaLists.splitOutside(stripped, '[', ']')) {
            Matcher host = HOST.matcher(part);
            if (part.isEmpty() || !host.matches()) {
                throw SlurmException.badOutput(source, "'" + part + "' is not a host list such as n1 or n[1-3,5]");
            }
            if (host.group(2) == null) {
                hosts.add(part);
                continue;
            }
            for (String range : host.group(2).split(",", -1)) {
                Matcher bounds = RANGE.matcher(range);
                if (!bounds.matches()) {
                    throw SlurmException.badOutput(source, "'" + range + "' in '" + part + "' is not N or N-M");
                }
                String low = bounds.group(1);
                String high = bounds.group(2) == null ? low : bounds.group(2);
                long first = Long.parseLong(low);
                long last = Long.parseLong(high);
                if (last < first || last - first >= MAX_HOSTS - hosts.size()) {
                    throw SlurmException.badOutput(
                            source,
                            "'" + range + "' in '" + part + "' runs backwards or names more than " + MAX_HOSTS
                                    + " hosts");
                }
                for (long number = first; number <= last; number++) {
                    hosts.add(host.group(1) + zeroPadded(number, low.length()) + host.group(3));
                }
            }
        }
        return List.copyOf(hosts);
    }

    private static String zeroPadded(long number, int width) {
        String digits = Long.toString(number);
        return digits.length() >= width ? digits : "0".repeat(width - digits.length()) + digits;
    }
}
