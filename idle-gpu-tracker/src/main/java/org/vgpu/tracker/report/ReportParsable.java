package org.vgpu.tracker.report;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * The {@link Report} in the form of sacct's {@code --parsable2}, for scripts that split lines at {@code |}: a header
 * line of {@link ReportRows}' column names, then one line per row, cells separated by {@code |} with none after the
 * last. An unknown fact (JSON null) and other sections' columns are empty; a list of GPU indices is one cell, its
 * items separated by {@code ,}. A cell never holds {@code |} or a line break: in a value, {@code |}, {@code \} and
 * every control character (line feed, carriage return, tab, ...) are written as {@code \xHH}, the character's code in
 * two hex digits, so a line split at {@code |} gives the cells, and undoing those escapes gives each value as the
 * JSON has it.
 */
public final class ReportParsable {
    static final char SEPARATOR = '|';

    private ReportParsable() {}

    public static String write(Report report) {
        List<String> columns = ReportRows.columns();
        StringBuilder out = new StringBuilder();
        out.append(String.join(String.valueOf(SEPARATOR), columns)).append('\n');
        for (Map<String, Object> row : ReportRows.of(report)) {
            out.append(columns.stream().map(column -> cell(row.get(column))).collect(Collectors.joining("|")))
                    .append('\n');
        }
        return out.toString();
    }

    private static String cell(Object value) {
        if (value == null) {
            return "";
        }
        if (value instanceof List<?> items) {
            return items.stream().map(ReportParsable::cell).collect(Collectors.joining(","));
        }
        return escaped(value.toString());
    }

    /** {@code text} with {@code |}, {@code \} and control characters as {@code \xHH}. */
    static String escaped(String text) {
        StringBuilder out = new StringBuilder(text.length());
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == SEPARATOR || c == '\\' || Character.isISOControl(c)) {
                out.append("\\x").append(String.format(Locale.ROOT, "%02x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }
}
