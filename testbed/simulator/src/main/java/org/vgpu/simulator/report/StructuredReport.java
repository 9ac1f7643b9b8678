package org.vgpu.simulator.report;

import java.io.IOException;
import java.io.Writer;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.dataformat.csv.CsvMapper;
import com.fasterxml.jackson.dataformat.csv.CsvSchema;

/**
 * The comparison for programs: JSON (the source, the overhead settings and one object per policy) or CSV (a header
 * and one line per policy), both with {@link ReportRow}'s fields.
 */
public final class StructuredReport {
    /** The JSON document's shape. */
    public record Document(String source, List<String> overheads, List<ReportRow> policies) {}

    private StructuredReport() {}

    public static List<ReportRow> rows(Comparison comparison) {
        PolicySummary base = comparison.baseline().orElse(null);
        List<ReportRow> rows = new ArrayList<>();
        for (int i = 0; i < comparison.runs().size(); i++) {
            rows.add(ReportRow.of(
                    comparison.summaries().get(i), comparison.runs().get(i), base));
        }
        return rows;
    }

    public static void writeJson(Comparison comparison, Writer out) throws IOException {
        // as a string, so that Jackson does not close the caller's stream (standard output)
        out.write(new ObjectMapper()
                .enable(SerializationFeature.INDENT_OUTPUT)
                .writeValueAsString(new Document(comparison.source(), comparison.overheads(), rows(comparison))));
        out.write(System.lineSeparator());
    }

    public static void writeCsv(Comparison comparison, Writer out) throws IOException {
        out.write(new CsvMapper().writer(csvSchema()).writeValueAsString(rows(comparison)));
    }

    /** The CSV columns: {@link ReportRow}'s components in their order, with a header line. */
    public static CsvSchema csvSchema() {
        CsvSchema.Builder schema = CsvSchema.builder().setUseHeader(true);
        for (RecordComponent component : ReportRow.class.getRecordComponents()) {
            schema.addColumn(component.getName());
        }
        return schema.build();
    }
}
