package org.vgpu.siteconfig;

import java.util.ArrayList;
import java.util.List;

/**
 * Splits Slurm-style comma lists whose items may hold commas of their own inside brackets or
 * parentheses, as in {@code /dev/nvidia[0-1,3]} or {@code gpu:2(IDX:0,2)}.
 */
public final class CommaLists {
    private CommaLists() {}

    /** The items of {@code text}, split at the commas that are not between {@code open} and {@code close}. */
    public static List<String> splitOutside(String text, char open, char close) {
        List<String> parts = new ArrayList<>();
        int depth = 0;
        int start = 0;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == open) {
                depth++;
            } else if (c == close) {
                depth--;
            } else if (c == ',' && depth == 0) {
                parts.add(text.substring(start, i));
                start = i + 1;
            }
        }
        parts.add(text.substring(start));
        return parts;
    }
}
