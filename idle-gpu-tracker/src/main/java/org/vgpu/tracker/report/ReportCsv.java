package org.vgpu.tracker.report;

import java.io.IOException;
import java.io.StringWriter;
import java.util.Map;

import com.fasterxml.jackson.databind.SequenceWriter;
import com.fasterxml.jackson.dataformat.csv.CsvMapper;
import com.fasterxml.jackson.dataformat.csv.CsvSchema;

/**
 * The {@link Report} as one CSV table (RFC 4180, with a header) of {@link ReportRows}' columns, written with
 * Jackson's CSV module: a row leaves the columns of other sections empty, and an unknown fact (JSON null) is empty
 * too. A list (GPU indices) is one cell, its items separated by {@code ;}.
 */
public final class ReportCsv {
    private static final CsvMapper CSV = CsvMapper.builder().build();
    private static final CsvSchema SCHEMA = schema();

    private ReportCsv() {}

    public static String write(Report report) {
        StringWriter out = new StringWriter();
        try (SequenceWriter rows = CSV.writer(SCHEMA).writeValues(out)) {
            for (Map<String, Object> row : ReportRows.of(report)) {
                rows.write(row);
            }
        } catch (IOException e) {
            // Writing to a String cannot fail on I/O; a value CSV cannot hold is a bug here.
            throw new IllegalStateException("cannot write the report as CSV", e);
        }
        return out.toString();
    }

    private static CsvSchema schema() {
        CsvSchema.Builder columns = CsvSchema.builder();
        ReportRows.columns().forEach(columns::addColumn);
        return columns.build().withHeader().withArrayElementSeparator(";").withNullValue("");
    }
}
