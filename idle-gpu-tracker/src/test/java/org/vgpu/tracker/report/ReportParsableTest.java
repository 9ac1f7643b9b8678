package org.vgpu.tracker.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Instant;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

/** {@link ReportParsable}: sacct's {@code --parsable2} form of the report, values that could break it included. */
class ReportParsableTest {
    private static final Instant AT = Instant.parse("2026-11-29T17:00:00Z");
    private static final Pattern ESCAPE = Pattern.compile("\\\\x([0-9a-f]{2})");

    @Test
    void aHeaderThenOneLinePerRowSplitAtBarsWithNoneAtTheEnd() {
        Report report = report(
                List.of(new Report.HeldRow(50, "bob", 2, "waiting for 2 GPUs")),
                List.of(new Report.IdleRow("n2", 2, List.of(0, 2))),
                List.of());

        List<String> lines = ReportParsable.write(report).lines().toList();

        assertEquals(String.join("|", ReportRows.columns()), lines.getFirst());
        assertEquals(3, lines.size(), lines.toString());
        assertFalse(lines.getFirst().endsWith("|"), lines.getFirst());
        for (String line : lines) {
            // As many bars as columns less one: none closes a line (an empty last cell ends a line in '|').
            assertEquals(
                    ReportRows.columns().size() - 1,
                    line.chars().filter(c -> c == '|').count(),
                    line);
        }
        List<String> held = List.of(lines.get(1).split("\\|", -1));
        assertEquals("held_jobs", held.getFirst());
        assertEquals("50", cell(held, "job"));
        assertEquals("bob", cell(held, "user"));
        assertEquals("waiting for 2 GPUs", cell(held, "reason"));
        assertEquals("", cell(held, "node"), "another section's column is empty");
        List<String> idle = List.of(lines.get(2).split("\\|", -1));
        assertEquals("0,2", cell(idle, "gpus"));
        assertEquals("2", cell(idle, "count"));
    }

    @Test
    void barsBackslashesAndLineBreaksInAValueAreEscapedAndReadBack() {
        String reason = "holder 44 on n3|n4 FAILED:\nexit 1\r\tsee C:\\logs";
        Report report = report(
                List.of(), List.of(), List.of(new Report.EndedRow(40, "car|ol", "n2", 2, 1, "aborted", AT, reason)));

        String text = ReportParsable.write(report);

        List<String> lines = text.lines().toList();
        assertEquals(2, lines.size(), text);
        List<String> ended = List.of(lines.get(1).split("\\|", -1));
        assertEquals(ReportRows.columns().size(), ended.size(), lines.get(1));
        assertEquals("car\\x7col", cell(ended, "user"));
        assertEquals("holder 44 on n3\\x7cn4 FAILED:\\x0aexit 1\\x0d\\x09see C:\\x5clogs", cell(ended, "reason"));
        assertEquals(reason, unescaped(cell(ended, "reason")));
        assertEquals("2026-11-29T17:00:00.000Z", cell(ended, "at"));
    }

    @Test
    void anEmptyReportIsItsHeaderAlone() {
        Report empty = report(List.of(), List.of(), List.of());

        String text = ReportParsable.write(empty);

        assertEquals(String.join("|", ReportRows.columns()) + "\n", text);
        assertTrue(text.startsWith("section|job|"), text);
    }

    /** A report of these held jobs, idle GPUs and ended assemblies, and nothing else. */
    private static Report report(List<Report.HeldRow> held, List<Report.IdleRow> idle, List<Report.EndedRow> ended) {
        return new Report(Report.SCHEMA_VERSION, AT, List.of(), List.of(), List.of(), held, idle, ended);
    }

    private static String cell(List<String> cells, String column) {
        return cells.get(ReportRows.columns().indexOf(column));
    }

    /** What a script does to read a cell back: each \xHH is the character of that code. */
    private static String unescaped(String cell) {
        Matcher escape = ESCAPE.matcher(cell);
        StringBuilder out = new StringBuilder();
        while (escape.find()) {
            escape.appendReplacement(
                    out, Matcher.quoteReplacement(String.valueOf((char) Integer.parseInt(escape.group(1), 16))));
        }
        return escape.appendTail(out).toString();
    }
}
