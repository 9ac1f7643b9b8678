package org.vgpu.simulator.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

import org.vgpu.common.cli.CommandLines;
import org.vgpu.common.cli.Subcommand;
import org.vgpu.common.cli.SubcommandRunner;
import org.vgpu.common.error.IoReasons;
import org.vgpu.simulator.engine.BackfillSettings;
import org.vgpu.simulator.engine.OverheadModel;
import org.vgpu.simulator.engine.Simulator;
import org.vgpu.simulator.engine.TrackerSettings;
import org.vgpu.simulator.input.AlibabaTraceReader;
import org.vgpu.simulator.input.ClusterSpec;
import org.vgpu.simulator.input.HpcMixGenerator;
import org.vgpu.simulator.input.LoadLevel;
import org.vgpu.simulator.input.LoadedWorkload;
import org.vgpu.simulator.input.OfferedLoad;
import org.vgpu.simulator.input.SacctReader;
import org.vgpu.simulator.input.SwfReader;
import org.vgpu.simulator.report.Comparison;
import org.vgpu.simulator.report.ProgressBar;
import org.vgpu.simulator.report.RecordedComparison;
import org.vgpu.simulator.report.StructuredReport;
import org.vgpu.simulator.report.TableReport;
import org.vgpu.simulator.report.WaitCdfPlot;
import org.vgpu.simulator.result.Policy;
import org.vgpu.simulator.result.PolicyRun;
import org.vgpu.simulator.workload.SimNode;
import org.vgpu.simulator.workload.WorkloadException;
import org.vgpu.siteconfig.SiteConfigException;
import org.vgpu.siteconfig.SiteConfigReader;
import org.vgpu.tracker.cli.TrackerCommand;

/**
 * {@code vgpu simulate}: what vgpu would do for a cluster. Reads one input (Alibaba's trace, a site's sacct history,
 * an SWF log or a generated mix), runs it under each policy asked for, and prints the comparison (a table, JSON or
 * CSV), with the reader's summary of what it kept and left out, and on request a plot of the wait times. Bad
 * options are usage errors (status 2); an input that cannot be read, or has malformed lines, fails the command
 * (status 1) with every problem as {@code FILE:LINE}.
 */
public final class SimulateCommand implements Subcommand {
    /** From this many jobs on, each policy's run shows its progress on standard error. */
    static final int LONG_RUN_JOBS = 5_000;

    private static final List<String> INPUTS = List.of("alibaba", "sacct", "swf", "generate");
    private static final List<String> FORMATS = List.of("table", "json", "csv");
    private static final List<String> LEVELS =
            Arrays.stream(LoadLevel.values()).map(LoadLevel::word).toList();

    /** For a class path without the launcher: {@code java -cp ... org.vgpu.simulator.cli.SimulateCommand}. */
    public static void main(String[] args) {
        System.exit(SubcommandRunner.run(new SimulateCommand(), args, System.out, System.err));
    }

    @Override
    public String name() {
        return "simulate";
    }

    @Override
    public String summary() {
        return "what vgpu would do for a cluster: run a trace, a site's sacct history, an SWF log or a generated mix"
                + " under Slurm alone, borrowing, vgpu and vgpu without overheads, and compare waits and slowdowns";
    }

    @Override
    public Options options() {
        return new Options()
                .addOption(valued("alibaba", "DIR", "Alibaba's GPU trace 2023 (nodes.csv and pods.csv in DIR)"))
                .addOption(valued(
                        "fractional",
                        "whole|skip",
                        "with --alibaba: a pod asking a fraction of a GPU takes one whole GPU (whole, the default)"
                                + " or is left out (skip)"))
                .addOption(valued("sacct", "FILE", "a site's history: the output of " + SacctReader.COMMAND))
                .addOption(valued(
                        "borrowers",
                        "all|vgpu-jobs",
                        "with --sacct: the borrowing policies may borrow for every job (all, the default: what vgpu"
                                + " would have done) or for the jobs that asked gres/vgpu alone (vgpu-jobs: as the"
                                + " history ran)"))
                .addOption(valued(
                        "swf", "FILE", "a log in the Standard Workload Format of the Parallel Workloads" + " Archive"))
                .addOption(valued(
                        "procs-per-gpu",
                        "N",
                        "with --swf: a job asks ceil(processors / N) GPUs (default 1: one GPU per processor)"))
                .addOption(valued(
                        "generate", String.join("|", LEVELS), "a generated HPC mix offering that load to --cluster"))
                .addOption(valued("jobs", "N", "with --generate: how many jobs (default 1000)"))
                .addOption(valued("seed", "S", "with --generate: the random seed (default 1)"))
                .addOption(valued(
                        "cluster", "SPEC", "the nodes, for --sacct, --swf and --generate: " + ClusterSpec.FORMAT))
                .addOption(valued(
                        "policies",
                        "LIST",
                        "comma-separated, of " + String.join(",", policyNames()) + " (default all)"))
                .addOption(Option.builder()
                        .longOpt("overhead")
                        .hasArg()
                        .argName("KEY=VALUE")
                        .desc("override one figure of the overhead model (repeatable); keys: "
                                + String.join(", ", OverheadModel.keys()))
                        .get())
                .addOption(valued(
                        "backfill-interval",
                        "SECONDS",
                        "run Slurm's backfill every SECONDS, as slurm.conf's bf_interval (Slurm's default 30),"
                                + " instead of at every scheduling pass (0, the default)"))
                .addOption(valued(
                        "backfill-phase",
                        "SECONDS",
                        "with --backfill-interval: when, in seconds from the first submission, a backfill cycle"
                                + " ran (default 0)"))
                .addOption(valued(
                        "backfill-reserves",
                        "first|all",
                        "whom backfill protects: the first waiting job (EASY backfill, the default) or every job"
                                + " a backfill cycle tests (Slurm's backfill scheduler)"))
                .addOption(valued(
                        "site-config",
                        "FILE",
                        "the site's vgpu configuration: its [policy] (idle grace, most GPUs borrowed per job,"
                                + " migration) is the simulated tracker's (default: a [policy] of defaults)"))
                .addOption(valued(
                        "tracker-poll",
                        "SECONDS",
                        "how often the simulated tracker plans, as vgpu tracker --poll (default "
                                + TrackerCommand.DEFAULT_POLL_SECONDS + ")"))
                .addOption(Option.builder()
                        .longOpt("compare-recorded")
                        .desc("also set one policy's run (--compare-with) against the starts the input recorded:"
                                + " both wait distributions (mean, median, p95)")
                        .get())
                .addOption(valued(
                        "compare-with",
                        "POLICY",
                        "with --compare-recorded: the policy the history ran under, one of --policies (default "
                                + Policy.SLURM_ALONE.shortName() + "; a borrowing one for a history that ran with"
                                + " vgpu)"))
                .addOption(Option.builder()
                        .longOpt("per-job")
                        .desc("with --compare-recorded: also each job's recorded and simulated start")
                        .get())
                .addOption(valued("format", "table|json|csv", "how to print the comparison (default table)"))
                .addOption(valued("plot", "FILE.png", "also draw every policy's wait-time distribution to FILE.png"));
    }

    private static Option valued(String name, String argument, String description) {
        return Option.builder()
                .longOpt(name)
                .hasArg()
                .argName(argument)
                .desc(description)
                .get();
    }

    @Override
    public int run(CommandLine line, PrintStream out, PrintStream err) throws ParseException {
        String input = input(line);
        List<SimNode> nodes = cluster(line, input);
        OverheadModel model = overheads(line);
        List<Policy> policies = policies(line);
        BackfillSettings backfill = backfill(line);
        TrackerSettings tracker = tracker(line);
        Policy compared = compareRecorded(line, input, policies);
        String format = CommandLines.choice(line, "format", "table", FORMATS);
        Path plot = plot(line);
        LoadedWorkload loaded;
        try {
            loaded = load(line, input, nodes);
        } catch (WorkloadException e) {
            e.problems().forEach(problem -> err.println("vgpu simulate: " + problem));
            return 1;
        } catch (IOException e) {
            err.println("vgpu simulate: cannot read the --" + input + " input " + line.getOptionValue(input) + ": "
                    + IoReasons.of(e));
            return 1;
        }
        PrintStream notes = format.equals("table") ? out : err;
        loaded.summary().forEach(notes::println);
        if (!input.equals("generate")) {
            notes.println(OfferedLoad.line(loaded.workload()));
        }
        notes.println();

        Simulator simulator = new Simulator(model, backfill, tracker);
        List<PolicyRun> runs = new ArrayList<>();
        boolean showProgress = loaded.workload().jobs().size() >= LONG_RUN_JOBS;
        boolean terminal = showProgress && ProgressBar.stderrIsTerminal();
        for (Policy policy : policies) {
            ProgressBar bar = new ProgressBar(err, "vgpu simulate: " + policy.shortName(), terminal);
            runs.add(simulator.run(loaded.workload(), policy, showProgress ? bar : fraction -> {}));
            if (showProgress) {
                bar.finish();
            }
        }
        Comparison comparison = Comparison.of(loaded.workload().source(), model.describe(), runs);
        try {
            switch (format) {
                case "json" -> out.print(structured(comparison, true));
                case "csv" -> out.print(structured(comparison, false));
                default -> TableReport.write(comparison, out);
            }
        } catch (IOException e) {
            err.println("vgpu simulate: cannot write the " + format + " output: " + IoReasons.of(e));
            return 1;
        }
        if (compared != null) {
            notes.println();
            RecordedComparison.of(loaded.workload(), runs.get(policies.indexOf(compared)))
                    .write(notes, line.hasOption("per-job"));
        }
        out.flush();
        if (plot != null) {
            try {
                WaitCdfPlot.writePng(comparison, plot);
            } catch (IOException e) {
                err.println("vgpu simulate: cannot write the plot " + plot + ": " + IoReasons.of(e));
                return 1;
            }
            notes.println("plot of the wait times: " + plot);
        }
        return 0;
    }

    private static String structured(Comparison comparison, boolean json) throws IOException {
        StringWriter text = new StringWriter();
        if (json) {
            StructuredReport.writeJson(comparison, text);
        } else {
            StructuredReport.writeCsv(comparison, text);
        }
        return text.toString();
    }

    /** Which input was given: exactly one, and only the options that go with it. */
    private static String input(CommandLine line) throws ParseException {
        List<String> given = INPUTS.stream().filter(line::hasOption).toList();
        if (given.size() != 1) {
            throw new ParseException((given.isEmpty()
                            ? "no input given"
                            : "more than one input given (--" + String.join(", --", given) + ")")
                    + "; give one of --alibaba DIR, --sacct FILE, --swf FILE or --generate LEVEL");
        }
        String input = given.getFirst();
        refuseUnless(line, "fractional", input, "alibaba");
        refuseUnless(line, "borrowers", input, "sacct");
        refuseUnless(line, "procs-per-gpu", input, "swf");
        refuseUnless(line, "jobs", input, "generate");
        refuseUnless(line, "seed", input, "generate");
        return input;
    }

    private static void refuseUnless(CommandLine line, String option, String input, String owner)
            throws ParseException {
        if (line.hasOption(option) && !input.equals(owner)) {
            throw new ParseException("--" + option + " goes with --" + owner + ", not with --" + input);
        }
    }

    private static List<SimNode> cluster(CommandLine line, String input) throws ParseException {
        if (input.equals("alibaba")) {
            if (line.hasOption("cluster")) {
                throw new ParseException("--cluster does not go with --alibaba: the trace lists its own nodes");
            }
            return List.of();
        }
        if (!line.hasOption("cluster")) {
            throw new ParseException(
                    "--" + input + " needs --cluster SPEC, the nodes to run it on: " + ClusterSpec.FORMAT);
        }
        try {
            return ClusterSpec.parse(line.getOptionValue("cluster"));
        } catch (IllegalArgumentException e) {
            throw new ParseException(e.getMessage());
        }
    }

    private static OverheadModel overheads(CommandLine line) throws ParseException {
        OverheadModel model = OverheadModel.measured();
        String[] settings = line.getOptionValues("overhead");
        for (String setting : settings == null ? new String[0] : settings) {
            int equals = setting.indexOf('=');
            if (equals < 1) {
                throw new ParseException("--overhead takes KEY=VALUE, got '" + setting + "'; keys: "
                        + String.join(", ", OverheadModel.keys()));
            }
            try {
                model = model.with(setting.substring(0, equals).strip(), setting.substring(equals + 1));
            } catch (IllegalArgumentException e) {
                throw new ParseException("--overhead: " + e.getMessage());
            }
        }
        return model;
    }

    private static BackfillSettings backfill(CommandLine line) throws ParseException {
        boolean reserveEveryJob = CommandLines.choice(line, "backfill-reserves", "first", List.of("first", "all"))
                .equals("all");
        if (!line.hasOption("backfill-interval")) {
            if (line.hasOption("backfill-phase")) {
                throw new ParseException("--backfill-phase goes with --backfill-interval");
            }
            return new BackfillSettings(0, 0, reserveEveryJob);
        }
        double interval = seconds(line, "backfill-interval");
        if (interval < 0) {
            throw new ParseException("--backfill-interval needs seconds >= 0, got " + interval);
        }
        return new BackfillSettings(
                interval, line.hasOption("backfill-phase") ? seconds(line, "backfill-phase") : 0, reserveEveryJob);
    }

    private static double seconds(CommandLine line, String option) throws ParseException {
        String value = line.getOptionValue(option);
        try {
            double seconds = Double.parseDouble(value.strip());
            if (!Double.isFinite(seconds)) {
                throw new NumberFormatException();
            }
            return seconds;
        } catch (NumberFormatException e) {
            throw new ParseException("--" + option + " needs a number of seconds, got '" + value + "'");
        }
    }

    /**
     * The policy whose run --compare-recorded sets against the recorded starts, or null when it was not asked; it
     * needs an input that records starts, and the policy among --policies.
     */
    private static Policy compareRecorded(CommandLine line, String input, List<Policy> policies) throws ParseException {
        if (!line.hasOption("compare-recorded")) {
            for (String option : List.of("per-job", "compare-with")) {
                if (line.hasOption(option)) {
                    throw new ParseException("--" + option + " goes with --compare-recorded");
                }
            }
            return null;
        }
        if (input.equals("generate")) {
            throw new ParseException("--compare-recorded needs an input that recorded when its jobs started"
                    + " (--alibaba, --sacct or --swf), not --generate");
        }
        String name = CommandLines.choice(line, "compare-with", Policy.SLURM_ALONE.shortName(), policyNames());
        Policy compared = Arrays.stream(Policy.values())
                .filter(policy -> policy.shortName().equals(name))
                .findFirst()
                .orElseThrow();
        if (!policies.contains(compared)) {
            throw new ParseException("--compare-recorded compares the recorded starts with policy " + name + ": add "
                    + name + " to --policies");
        }
        return compared;
    }

    /** The simulated tracker: the site configuration's [policy] and --tracker-poll. */
    private static TrackerSettings tracker(CommandLine line) throws ParseException {
        org.vgpu.siteconfig.Policy sitePolicy = TrackerSettings.DEFAULTS.sitePolicy();
        if (line.hasOption("site-config")) {
            try {
                sitePolicy = SiteConfigReader.read(Path.of(line.getOptionValue("site-config")))
                        .policy();
            } catch (SiteConfigException e) {
                throw new ParseException("--site-config: " + e.getMessage());
            }
        }
        double poll = TrackerSettings.DEFAULTS.pollSeconds();
        if (line.hasOption("tracker-poll")) {
            poll = seconds(line, "tracker-poll");
            if (!(poll > 0)) {
                throw new ParseException("--tracker-poll needs seconds > 0, got " + poll);
            }
        }
        return new TrackerSettings(sitePolicy, poll);
    }

    private static List<Policy> policies(CommandLine line) throws ParseException {
        return CommandLines.choices(line, "policies", policyNames()).stream()
                .map(name -> Arrays.stream(Policy.values())
                        .filter(policy -> policy.shortName().equals(name))
                        .findFirst()
                        .orElseThrow())
                .toList();
    }

    private static List<String> policyNames() {
        return Arrays.stream(Policy.values()).map(Policy::shortName).toList();
    }

    private static Path plot(CommandLine line) throws ParseException {
        String file = line.getOptionValue("plot");
        if (file == null) {
            return null;
        }
        if (!file.toLowerCase(Locale.ROOT).endsWith(".png")) {
            throw new ParseException("--plot draws a PNG: give a FILE ending in .png, got '" + file + "'");
        }
        return Path.of(file);
    }

    private static LoadedWorkload load(CommandLine line, String input, List<SimNode> nodes)
            throws ParseException, IOException, WorkloadException {
        Path path = Path.of(line.getOptionValue(input));
        return switch (input) {
            case "alibaba" -> AlibabaTraceReader.read(path, fractional(line));
            case "sacct" ->
                SacctReader.read(
                        path,
                        nodes,
                        CommandLines.choice(line, "borrowers", "all", List.of("all", "vgpu-jobs"))
                                        .equals("all")
                                ? SacctReader.Borrowers.ALL
                                : SacctReader.Borrowers.VGPU_JOBS);
            case "swf" -> SwfReader.read(path, nodes, CommandLines.intValue(line, "procs-per-gpu", 1, 1));
            default -> {
                String level = CommandLines.choice(line, "generate", "", LEVELS);
                int jobs = CommandLines.intValue(line, "jobs", 1_000, 1);
                long seed = seed(line);
                yield HpcMixGenerator.generate(LoadLevel.valueOf(level.toUpperCase(Locale.ROOT)), nodes, jobs, seed);
            }
        };
    }

    private static AlibabaTraceReader.Fractional fractional(CommandLine line) throws ParseException {
        return AlibabaTraceReader.Fractional.valueOf(
                CommandLines.choice(line, "fractional", "whole", List.of("whole", "skip"))
                        .toUpperCase(Locale.ROOT));
    }

    private static long seed(CommandLine line) throws ParseException {
        String value = line.getOptionValue("seed", "1");
        try {
            return Long.parseLong(value.strip());
        } catch (NumberFormatException e) {
            throw new ParseException("--seed needs a whole number, got '" + value + "'");
        }
    }
}
