package org.vgpu.siteconfig;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * gres.conf's {@code File=} syntax for GPU device files: comma-separated paths, each with at most one
 * bracketed list of numbers and ranges, e.g. {@code /dev/nvidia[0-3]} or {@code /dev/nvidia[0,2-3],/dev/nvidia7}.
 * Only counted here, to check it names one file per GPU; Slurm expands it.
 */
final class GpuDeviceFiles {
    private static final Pattern PART = Pattern.compile("(/[^\\[\\],]*)(?:\\[([0-9,\\-]+)]([^\\[\\],]*))?");
    /** Six digits at most: a longer GPU number is a typo, and one beyond an int would not parse. */
    private static final Pattern RANGE = Pattern.compile("(\\d{1,6})(?:-(\\d{1,6}))?");

    private GpuDeviceFiles() {}

    /**
     * @throws IllegalArgumentException when the text is not in that syntax
     */
    static int count(String files) {
        // gres.conf takes the value unquoted: a space would start another key, as "File=/dev/nvidia0 Name=mps".
        String odd = PlainWords.unplainCharacters(files.replaceAll("[\\[\\],]", ""));
        if (!odd.isEmpty()) {
            throw new IllegalArgumentException("'" + files + "' has a character gres.conf would split at (" + odd
                    + "); expected absolute paths of " + PlainWords.PATH_CHARS + " with an optional [N-M] range,"
                    + " e.g. /dev/nvidia[0-3]");
        }
        int count = 0;
        for (String part : CommaLists.splitOutside(files, '[', ']')) {
            Matcher matcher = PART.matcher(part);
            if (!matcher.matches()) {
                throw new IllegalArgumentException("'" + part + "' is not a device file list; expected absolute paths"
                        + " with an optional [N-M] range, e.g. /dev/nvidia[0-3]");
            }
            if (matcher.group(2) == null) {
                count++;
                continue;
            }
            for (String range : matcher.group(2).split(",", -1)) {
                Matcher bounds = RANGE.matcher(range);
                if (!bounds.matches()) {
                    throw new IllegalArgumentException(
                            "'" + range + "' in '" + part + "' is not a number or range N-M");
                }
                int low = Integer.parseInt(bounds.group(1));
                int high = bounds.group(2) == null ? low : Integer.parseInt(bounds.group(2));
                if (high < low) {
                    throw new IllegalArgumentException("range " + range + " in '" + part + "' runs backwards");
                }
                count += high - low + 1;
            }
        }
        return count;
    }
}
