package org.vgpu.simulator.report;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import javax.imageio.ImageIO;

import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.csv.CsvMapper;
import org.jfree.data.xy.XYDataset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class OutputFormatsTest {
    private static final Comparison COMPARISON = Comparison.of(
            "hand-made", List.of("slowdown.unknown = 1.73 (MD app)"), List.of(Runs.slurmAlone(), Runs.vgpu()));

    @TempDir
    Path dir;

    @Test
    void theTableShowsEveryFigureAndTheChangeAgainstSlurmAlone() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        TableReport.write(COMPARISON, new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String table = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(table.contains("workload: hand-made"), table);
        assertTrue(table.contains("overhead: slowdown.unknown = 1.73 (MD app)"), table);
        assertTrue(table.lines().anyMatch(line -> line.matches("mean wait +3\\.3 min +60 s \\(-70 %\\)")), table);
        assertTrue(table.lines().anyMatch(line -> line.matches("mean slowdown of borrowers +- +\\+20\\.0 %")), table);
        assertTrue(
                table.lines().anyMatch(line -> line.matches("GPU utilisation +50\\.0 % +90\\.0 % \\(\\+80 %\\)")),
                table);
        assertTrue(table.lines().anyMatch(line -> line.matches("killed at their time limit +0 +1")), table);
        assertTrue(table.lines().anyMatch(line -> line.matches("planner per pass +0\\.5 us +2\\.0 us")), table);
    }

    @Test
    void jsonParsesBackToTheSameRows() throws Exception {
        StringWriter json = new StringWriter();
        StructuredReport.writeJson(COMPARISON, json);
        StructuredReport.Document back = new ObjectMapper().readValue(json.toString(), StructuredReport.Document.class);
        assertEquals(StructuredReport.rows(COMPARISON), back.policies());
        assertEquals("hand-made", back.source());
        ReportRow vgpu = back.policies().get(1);
        assertEquals("vgpu", vgpu.policy());
        assertEquals(-70, vgpu.meanWaitChangePercent(), 1e-9);
        assertNull(back.policies().getFirst().meanBorrowerSlowdown(), "undefined where no job borrowed");
    }

    @Test
    void csvParsesBackToTheSameRows() throws Exception {
        StringWriter csv = new StringWriter();
        StructuredReport.writeCsv(COMPARISON, csv);
        assertTrue(csv.toString().startsWith("policy,jobs,meanWaitSeconds,"), csv.toString());
        try (MappingIterator<ReportRow> rows = new CsvMapper()
                .readerFor(ReportRow.class)
                .with(StructuredReport.csvSchema())
                .readValues(csv.toString())) {
            List<ReportRow> back = rows.readAll();
            assertEquals(2, back.size());
            assertEquals(StructuredReport.rows(COMPARISON).get(1), back.get(1));
        }
    }

    @Test
    void thePlotIsAPngOfTheSizeAsked() throws Exception {
        Path png = dir.resolve("waits.png");
        WaitCdfPlot.writePng(COMPARISON, png);
        byte[] bytes = Files.readAllBytes(png);
        assertArrayEquals(new byte[] {(byte) 0x89, 'P', 'N', 'G'}, Arrays.copyOf(bytes, 4));
        BufferedImage image = ImageIO.read(png.toFile());
        assertEquals(WaitCdfPlot.WIDTH, image.getWidth());
        assertEquals(WaitCdfPlot.HEIGHT, image.getHeight());
        XYDataset curves = WaitCdfPlot.chart(COMPARISON).getXYPlot().getDataset();
        assertEquals(List.of("slurm", "vgpu"), List.of(curves.getSeriesKey(0), curves.getSeriesKey(1)));
        assertEquals(1.0, curves.getYValue(1, curves.getItemCount(1) - 1), "every CDF ends at all jobs");
    }

    @Test
    void theProgressBarRedrawsOneLineOnATerminalAndWritesQuartersElsewhere() {
        ByteArrayOutputStream terminal = new ByteArrayOutputStream();
        ProgressBar bar = new ProgressBar(new PrintStream(terminal, true, StandardCharsets.UTF_8), "vgpu", true);
        for (int i = 0; i <= 1_000; i++) {
            bar.accept(i / 1_000.0);
        }
        bar.finish();
        String drawn = terminal.toString(StandardCharsets.UTF_8);
        assertEquals(101, drawn.chars().filter(c -> c == '\r').count(), "one redraw per whole percent");
        assertTrue(drawn.endsWith("vgpu [##############################] 100 %\n"), drawn);

        ByteArrayOutputStream log = new ByteArrayOutputStream();
        ProgressBar lines = new ProgressBar(new PrintStream(log, true, StandardCharsets.UTF_8), "vgpu", false);
        for (int i = 0; i <= 1_000; i++) {
            lines.accept(i / 1_000.0);
        }
        lines.finish();
        assertEquals(
                "vgpu: 0 %\nvgpu: 25 %\nvgpu: 50 %\nvgpu: 75 %\nvgpu: 100 %\n", log.toString(StandardCharsets.UTF_8));
    }
}
