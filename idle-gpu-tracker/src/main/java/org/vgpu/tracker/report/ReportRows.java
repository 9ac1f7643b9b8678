package org.vgpu.tracker.report;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;

/**
 * The {@link Report} as one flat table, the shape of the CSV and the parsable output: column {@code section} names
 * the JSON section a row comes from ({@code assemblies}, {@code borrowed}, {@code migrations}, {@code held_jobs},
 * {@code idle_gpus}, {@code ended}), the other columns are the JSON fields of all sections, each once, in document
 * order. A row holds its section's fields as the JSON has them (text, number, boolean, a list of GPU indices, or null
 * for an unknown fact) and nothing for other sections' columns. The columns do not depend on what the report holds,
 * so a script may rely on the header.
 */
final class ReportRows {
    private static final PropertyNamingStrategies.NamingBase SNAKE_CASE =
            (PropertyNamingStrategies.NamingBase) PropertyNamingStrategies.SNAKE_CASE;
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

    static final String SECTION = "section";

    private static final List<String> COLUMNS = columnNames();

    private ReportRows() {}

    /** {@code section}, then every section's JSON field names, each once, in document order. */
    static List<String> columns() {
        return COLUMNS;
    }

    /** Every row of {@code report}, section by section: column name to JSON value ({@code section} first). */
    static List<Map<String, Object>> of(Report report) {
        List<Map<String, Object>> rows = new ArrayList<>();
        for (Section section : SECTIONS) {
            for (Record row : section.rows().apply(report)) {
                Map<String, Object> cells = new LinkedHashMap<>();
                cells.put(SECTION, section.name());
                cells.putAll(ReportJson.MAPPER.convertValue(row, ROW));
                rows.add(cells);
            }
        }
        return rows;
    }

    private static List<String> columnNames() {
        Set<String> columns = new LinkedHashSet<>(List.of(SECTION));
        for (Section section : SECTIONS) {
            for (var component : section.rowType().getRecordComponents()) {
                columns.add(SNAKE_CASE.translate(component.getName()));
            }
        }
        return List.copyOf(columns);
    }
}
