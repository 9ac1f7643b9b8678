package org.vgpu.tracker.report;

import java.io.IOException;
import java.io.StringWriter;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SequenceWriter;
import com.fasterxml.jackson.dataformat.csv.CsvMapper;
import com.fasterxml.jackson.dataformat.csv.CsvSchema;

/**
 * The {@link Report} as one CSV table (RFC 4180, with a header), written with Jackson's CSV module:
 * column {@code section} names the JSON section a row comes from ({@code assemblies}, {@code borrowed},
 * {@code migrations}, {@code held_jobs}, {@code idle_gpus}, {@code ended}), the other columns are the
 * JSON fields of all sections, each once, in document order; a row leaves the columns of other sections
 * empty, and an unknown fact (JSON null) is empty too. A list (GPU indices) is one cell, its items
 * separated by {@code ;}. The columns do not depend on what the report holds, so a script may rely on
 * the header.
 */
public final class ReportCsv {
    private static final PropertyNamingStrategies.NamingBase SNAKE_CASE =
            (PropertyNamingStrategies.NamingBase) PropertyNamingStrategies.SNAKE_CASE;
    private static final CsvMapper CSV = CsvMapper.builder().build();
    private static final TypeReference<Map<String, Object>> ROW = new TypeReference<>() {};

    /** One section of the document: its JSON name, its row type, and its rows. */
    private record Section(
            String name, Class<? extends Record> rowType, Function<Report, List<? extends Record>> rows) {}

    private static final List<Section> SECTIONS = List.of(
            new Section("assemblies", Report.AssemblyRow.class, Report::assemblies),
            new Section("borrowed", Report.BorrowedRow.class, Report::borrowed),
            new Section("migrations", Report.MigrationRow.class, Report::migrations),
            new Section("held_jobs", Report.HeldRow.class, Report::heldJobs),
            new Section("idle_gpus", Report.IdleRow.class, Report::idleGpus),
            new Section("ended", Report.EndedRow.class, Report::ended));

    private static final CsvSchema SCHEMA = schema();

    private ReportCsv() {}

    /** The JSON names of the document's sections, in order: the values of the CSV's {@code section} column. */
    public static List<String> sectionNames() {
        return SECTIONS.stream().map(Section::name).toList();
    }

    public static String write(Report report) {
        StringWriter out = new StringWriter();
        try (SequenceWriter rows = CSV.writer(SCHEMA).writeValues(out)) {
            for (Section section : SECTIONS) {
                for (Record row : section.rows().apply(report)) {
                    Map<String, Object> cells = new LinkedHashMap<>();
                    cells.put("section", section.name());
                    cells.putAll(ReportJson.MAPPER.convertValue(row, ROW));
                    rows.write(cells);
                }
            }
        } catch (IOException e) {
            // Writing to a String cannot fail on I/O; a value CSV cannot hold is a bug here.
            throw new IllegalStateException("cannot write the report as CSV", e);
        }
        return out.toString();
    }

    /** {@code section}, then every section's JSON field names, each once, in document order. */
    private static CsvSchema schema() {
        CsvSchema.Builder columns = CsvSchema.builder().addColumn("section");
        Set<String> seen = new HashSet<>(List.of("section"));
        for (Section section : SECTIONS) {
            for (var component : section.rowType().getRecordComponents()) {
                String name = SNAKE_CASE.translate(component.getName());
                if (seen.add(name)) {
                    columns.addColumn(name);
                }
            }
        }
        return columns.build().withHeader().withArrayElementSeparator(";").withNullValue("");
    }
}
