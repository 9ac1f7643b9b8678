package org.vgpu.simulator.report;

import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.text.DecimalFormat;
import java.text.DecimalFormatSymbols;
import java.util.Locale;

import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.axis.NumberTickUnit;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYStepRenderer;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

import org.vgpu.simulator.result.JobOutcome;
import org.vgpu.simulator.result.PolicyRun;

/**
 * The wait-time distributions of every policy as one PNG: for each policy the fraction of jobs that waited at most
 * a given time (its empirical CDF), the time on a log axis, drawn with JFreeChart in headless mode. Waits under one
 * second are drawn at one second, which a log axis needs; each curve has at most {@value #POINTS} steps.
 */
public final class WaitCdfPlot {
    static final int WIDTH = 1_000;
    static final int HEIGHT = 640;
    private static final int POINTS = 2_000;
    private static final Color[] COLORS = {
        new Color(0x33, 0x33, 0x33),
        new Color(0xd9, 0x5f, 0x02),
        new Color(0x1b, 0x9e, 0x77),
        new Color(0x75, 0x70, 0xb3)
    };

    private WaitCdfPlot() {}

    /** Writes the plot of {@code comparison}'s runs to {@code file} as a PNG. */
    public static void writePng(Comparison comparison, Path file) throws IOException {
        System.setProperty("java.awt.headless", "true");
        ChartUtils.saveChartAsPNG(file.toFile(), chart(comparison), WIDTH, HEIGHT);
    }

    static JFreeChart chart(Comparison comparison) {
        XYSeriesCollection curves = new XYSeriesCollection();
        for (PolicyRun run : comparison.runs()) {
            curves.addSeries(curve(run));
        }
        LogAxis time = new LogAxis("wait (seconds, log scale; waits under 1 s drawn at 1 s)");
        time.setSmallestValue(1);
        // a tick at each power of ten (the unit is in exponents), written 1, 10, 100, 1,000
        time.setTickUnit(new NumberTickUnit(1));
        time.setNumberFormatOverride(new DecimalFormat("#,##0", DecimalFormatSymbols.getInstance(Locale.ROOT)));
        NumberAxis fraction = new NumberAxis("fraction of jobs that waited at most this long");
        fraction.setRange(0, 1.0);
        XYStepRenderer renderer = new XYStepRenderer();
        for (int i = 0; i < comparison.runs().size(); i++) {
            renderer.setSeriesPaint(i, COLORS[i % COLORS.length]);
            renderer.setSeriesStroke(i, new BasicStroke(2f));
        }
        XYPlot plot = new XYPlot(curves, time, fraction, renderer);
        plot.setBackgroundPaint(Color.WHITE);
        plot.setDomainGridlinePaint(Color.LIGHT_GRAY);
        plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
        JFreeChart chart =
                new JFreeChart("Wait times: " + comparison.source(), JFreeChart.DEFAULT_TITLE_FONT, plot, true);
        chart.setBackgroundPaint(Color.WHITE);
        return chart;
    }

    private static XYSeries curve(PolicyRun run) {
        XYSeries series = new XYSeries(run.policy().shortName(), true, true);
        double[] waits = run.jobs().stream()
                .mapToDouble(JobOutcome::waitSeconds)
                .sorted()
                .toArray();
        int step = Math.max(1, waits.length / POINTS);
        for (int i = 0; i < waits.length; i += step) {
            series.addOrUpdate(Math.max(1, waits[i]), (double) (i + 1) / waits.length);
        }
        if (waits.length > 0) {
            series.addOrUpdate(Math.max(1, waits[waits.length - 1]), 1.0);
        }
        return series;
    }
}
