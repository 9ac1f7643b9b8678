package org.vgpu.tracker.slurm;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The records of {@code scontrol show node|job [-d]}: blocks of {@code Key=Value} fields separated by empty lines
 * (a line of only spaces stays inside its record). Some values hold spaces ({@code OS=Linux 6.1 #1 SMP}, a node's
 * {@code Reason=}); a word without {@code Key=} continues the previous value. Keys repeat within one
 * record (a job's {@code Nodes= ... GRES=} line per node set), so fields keep their order.
 */
final class ScontrolRecords {
    private static final Pattern KEY = Pattern.compile("[A-Za-z][A-Za-z0-9_:/]*");

    private ScontrolRecords() {}

    /** One {@code Key=Value} field and the line it started on. */
    record Field(String key, String value, int line) {}

    /** One node or job. */
    @SuppressWarnings("JavaLangClash") // scontrol's own word; used only as ScontrolRecords.Record outside this file
    record Record(String source, int line, List<Field> fields) {
        Record {
            fields = List.copyOf(fields);
        }

        Optional<String> first(String key) {
            return fields.stream()
                    .filter(field -> field.key().equals(key))
                    .map(Field::value)
                    .findFirst();
        }

        String require(String key) {
            return first(key)
                    .orElseThrow(() -> SlurmException.badOutput(
                            source, "the record at line " + line + " has no " + key + "= field"));
        }
    }

    /**
     * @param source the command that printed the text, for error messages
     * @throws SlurmException when a record does not start with {@code Key=Value}
     */
    static List<Record> parse(String source, String text) {
        List<Record> records = new ArrayList<>();
        List<Field> fields = new ArrayList<>();
        int recordLine = 0;
        int lineNumber = 0;
        for (String line : text.split("\r?\n", -1)) {
            lineNumber++;
            String stripped = line.strip();
            if (stripped.isEmpty() && !line.isEmpty()) {
                // Slurm 24.11 indents a line of spaces before a node's Reason=, inside the record.
                continue;
            }
            if (stripped.isEmpty()) {
                if (!fields.isEmpty()) {
                    records.add(new Record(source, recordLine, fields));
                    fields = new ArrayList<>();
                }
                continue;
            }
            if (fields.isEmpty() && stripped.matches("No \\w+ in the system")) {
                continue;
            }
            for (String word : stripped.split("\\s+")) {
                int equals = word.indexOf('=');
                if (equals > 0 && KEY.matcher(word.substring(0, equals)).matches()) {
                    if (fields.isEmpty()) {
                        recordLine = lineNumber;
                    }
                    fields.add(new Field(word.substring(0, equals), word.substring(equals + 1), lineNumber));
                } else if (fields.isEmpty()) {
                    throw SlurmException.badOutput(
                            source, "line " + lineNumber + ": expected Key=Value, got '" + word + "'");
                } else {
                    Field last = fields.removeLast();
                    String joined = last.value().isEmpty() ? word : last.value() + " " + word;
                    fields.add(new Field(last.key(), joined, last.line()));
                }
            }
        }
        if (!fields.isEmpty()) {
            records.add(new Record(source, recordLine, fields));
        }
        return List.copyOf(records);
    }
}
