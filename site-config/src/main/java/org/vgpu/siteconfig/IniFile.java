package org.vgpu.siteconfig;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The syntax of a site configuration file, before any meaning is given to it: sections
 * ({@code [kind]} or {@code [kind label]}) holding {@code key = value} lines, {@code #} comments,
 * blank lines. Every section and entry keeps its line number so later checks can point at it.
 * Syntax errors are collected, not thrown, so one run reports all of them.
 */
record IniFile(Path file, List<Section> sections) {
    private static final Pattern HEADER = Pattern.compile("\\[\\s*([a-z]+)(?:\\s+(\\S+))?\\s*]");

    IniFile {
        sections = List.copyOf(sections);
    }

    /** A {@code [kind label]} header and the entries under it; label is empty for {@code [kind]}. */
    record Section(String kind, String label, int line, List<Entry> entries) {
        Section {
            entries = List.copyOf(entries);
        }

        /** How problems name the section, as written in the file. */
        String title() {
            return label.isEmpty() ? "[" + kind + "]" : "[" + kind + " " + label + "]";
        }
    }

    /** One {@code key = value} line; key and value are stripped, the value of any comment. */
    record Entry(String key, String value, int line) {}

    static IniFile parse(Path file, String text, List<ConfigProblem> problems) {
        List<Section> sections = new ArrayList<>();
        String kind = null;
        String label = "";
        int headerLine = 0;
        List<Entry> entries = new ArrayList<>();
        int lineNumber = 0;
        for (String raw : text.split("\r?\n", -1)) {
            lineNumber++;
            String line = stripComment(raw).strip();
            if (line.isEmpty()) {
                continue;
            }
            if (line.startsWith("[")) {
                Matcher header = HEADER.matcher(line);
                if (!header.matches()) {
                    problems.add(
                            new ConfigProblem(
                                    file,
                                    lineNumber,
                                    "malformed section header '" + line
                                            + "'; expected [name] or [name label] with a lower-case name, e.g. [cluster] or [node n1]"));
                    continue;
                }
                if (kind != null) {
                    sections.add(new Section(kind, label, headerLine, entries));
                }
                kind = header.group(1);
                label = header.group(2) == null ? "" : header.group(2);
                headerLine = lineNumber;
                entries = new ArrayList<>();
                continue;
            }
            int equals = line.indexOf('=');
            if (equals < 0) {
                problems.add(
                        new ConfigProblem(file, lineNumber, "'" + line + "' is not a setting; expected key = value"));
                continue;
            }
            String key = line.substring(0, equals).strip();
            String value = line.substring(equals + 1).strip();
            if (key.isEmpty()) {
                problems.add(
                        new ConfigProblem(file, lineNumber, "setting without a key before '='; expected key = value"));
            } else if (value.isEmpty()) {
                problems.add(new ConfigProblem(file, lineNumber, "'" + key + "' has no value after '='"));
            } else if (kind == null) {
                problems.add(new ConfigProblem(
                        file,
                        lineNumber,
                        "'" + key + "' is outside any section; settings belong under a header such as [cluster]"));
            } else {
                entries.add(new Entry(key, value, lineNumber));
            }
        }
        if (kind != null) {
            sections.add(new Section(kind, label, headerLine, entries));
        }
        return new IniFile(file, sections);
    }

    private static String stripComment(String line) {
        int hash = line.indexOf('#');
        return hash < 0 ? line : line.substring(0, hash);
    }
}
