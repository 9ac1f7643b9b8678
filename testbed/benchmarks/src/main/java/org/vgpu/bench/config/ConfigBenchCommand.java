package org.vgpu.bench.config;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

import org.vgpu.bench.Medians;
import org.vgpu.common.cli.CommandLines;
import org.vgpu.common.cli.Subcommand;
import org.vgpu.common.cli.SubcommandRunner;
import org.vgpu.siteconfig.SiteConfig;
import org.vgpu.siteconfig.SiteConfigReader;

/**
 * {@code vgpu config-bench}: how long reading a site configuration takes as the site grows (400 nodes
 * took 7 s, 1,000 did not finish in a minute). Each size is a generated file of that many nodes in racks of
 * {@value #RACK} with every pair in a rack listed at distance 1 and {@code default = 3}. Two baselines from the
 * same run: the file's text read and split into lines (what any reader pays), and a {@value #BASE_NODES}-node
 * file's load scaled linearly to the size (a ratio near 1 means linear). A measurement, never an assertion.
 */
public final class ConfigBenchCommand implements Subcommand {
    private static final int RACK = 8;
    private static final int BASE_NODES = 100;
    private static final int WARM_UP_TRIALS = 2;

    /** For a class path without the launcher: {@code java -cp ... org.vgpu.bench.config.ConfigBenchCommand}. */
    public static void main(String[] args) {
        System.exit(SubcommandRunner.run(new ConfigBenchCommand(), args, System.out, System.err));
    }

    @Override
    public String name() {
        return "config-bench";
    }

    @Override
    public String summary() {
        return "time reading generated site configurations of 1,000 and 10,000 nodes against linear baselines";
    }

    @Override
    public Options options() {
        return new Options()
                .addOption(Option.builder()
                        .longOpt("nodes")
                        .hasArgs()
                        .valueSeparator(',')
                        .argName("N,N")
                        .desc("the site sizes to load (default 1000,10000)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("trials")
                        .hasArg()
                        .argName("N")
                        .desc("timed loads per size whose median is reported (default 5), after " + WARM_UP_TRIALS
                                + " warm-up loads of every size")
                        .get());
    }

    @Override
    public int run(CommandLine line, PrintStream out, PrintStream err) throws ParseException {
        int trials = CommandLines.intValue(line, "trials", 5, 1);
        List<Integer> sizes = new ArrayList<>();
        for (String size : line.hasOption("nodes") ? line.getOptionValues("nodes") : new String[] {"1000", "10000"}) {
            try {
                sizes.add(Integer.parseInt(size.strip()));
            } catch (NumberFormatException e) {
                throw new ParseException("--nodes: '" + size + "' is not a whole number");
            }
            if (sizes.getLast() < 2) {
                throw new ParseException(
                        "--nodes: a site of " + size + " nodes has no pair to measure; give 2 or more");
            }
        }
        Path dir;
        try {
            dir = Files.createTempDirectory("vgpu-config-bench");
        } catch (IOException e) {
            err.println("vgpu config-bench: cannot make a temporary directory");
            return 1;
        }
        try {
            measure(dir, sizes, trials, out);
        } finally {
            removeGenerated(dir);
        }
        return 0;
    }

    private static void measure(Path dir, List<Integer> sizes, int trials, PrintStream out) {
        Path base = write(dir, BASE_NODES);
        List<Path> files = sizes.stream().map(nodes -> write(dir, nodes)).toList();
        // Every file is loaded and read before anything is timed, so the baseline is not the one that pays for
        // the JIT's warm-up.
        for (int warmUp = 0; warmUp < WARM_UP_TRIALS; warmUp++) {
            load(base);
            files.forEach(file -> {
                load(file);
                read(file);
            });
        }
        double baseMs = loadMs(base, trials);
        out.printf(
                "site configuration load (SiteConfigReader.read), median of %d loads after %d warm-up loads of"
                        + " every size; racks of %d nodes listed at distance 1, default = 3%n",
                trials, WARM_UP_TRIALS, RACK);
        out.printf("baseline: %d nodes load in %.2f ms%n%n", BASE_NODES, baseMs);
        out.printf(
                "%7s %9s %10s %14s %10s %16s %11s%n",
                "nodes", "lines", "load ms", "read+split ms", "load/read", "100-node scaled", "load/scaled");
        for (int i = 0; i < sizes.size(); i++) {
            int nodes = sizes.get(i);
            Path file = files.get(i);
            double readMs = readMs(file, trials);
            double load = loadMs(file, trials);
            double scaled = baseMs * nodes / BASE_NODES;
            out.printf(
                    "%7d %9d %10.1f %14.1f %10.1f %16.1f %11.2f%n",
                    nodes, lines(file), load, readMs, load / readMs, scaled, load / scaled);
        }
        out.flush();
    }

    private static void removeGenerated(Path dir) {
        try (var files = Files.list(dir)) {
            for (Path file : files.toList()) {
                Files.delete(file);
            }
            Files.delete(dir);
        } catch (IOException e) {
            // Generated files in the temporary directory; the system cleans it up anyway.
        }
    }

    private static double loadMs(Path file, int trials) {
        double[] times = new double[trials];
        for (int trial = 0; trial < trials; trial++) {
            long start = System.nanoTime();
            load(file);
            times[trial] = (System.nanoTime() - start) / 1e6;
        }
        return Medians.of(times);
    }

    private static void load(Path file) {
        SiteConfig config = SiteConfigReader.read(file);
        if (config.nodes().isEmpty()) {
            throw new IllegalStateException("a generated site without nodes");
        }
    }

    /** The baseline every reader pays: the file's text, split into lines. */
    private static double readMs(Path file, int trials) {
        double[] times = new double[trials];
        for (int trial = 0; trial < trials; trial++) {
            long start = System.nanoTime();
            int count = read(file).split("\r?\n", -1).length;
            times[trial] = (System.nanoTime() - start) / 1e6;
            if (count == 0) {
                throw new IllegalStateException("an empty generated site");
            }
        }
        return Medians.of(times);
    }

    private static long lines(Path file) {
        return read(file).lines().count();
    }

    private static String read(Path file) {
        try {
            return Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A valid site of {@code nodes} nodes, written to {@code dir/site-NODES.conf}. */
    static Path write(Path dir, int nodes) {
        StringBuilder text = new StringBuilder("""
                [cluster]
                name = bench
                tracker = tracker.bench:7400
                token_key_file = /etc/vgpu/site.key
                lend_partition = vgpu-lend
                """);
        StringBuilder distances = new StringBuilder("[distance]\ndefault = 3\n");
        for (int node = 0; node < nodes; node++) {
            text.append("[node g%05d]\ngpus = 4\ngpu_memory = 80GiB\nvgpus = 8\nlender_port = 7500\n".formatted(node));
            for (int other = node - node % RACK; other < node; other++) {
                distances.append("g%05d g%05d = 1\n".formatted(other, node));
            }
        }
        try {
            return Files.writeString(dir.resolve("site-" + nodes + ".conf"), text.append(distances));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
