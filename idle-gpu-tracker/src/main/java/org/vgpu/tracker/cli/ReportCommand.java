package org.vgpu.tracker.cli;

import static org.vgpu.common.contract.BridgeContract.REQUEST_STATUS;
import static org.vgpu.common.contract.BridgeContract.STATUS_JSON_LINE_WORD;

import java.io.PrintStream;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

import org.vgpu.common.cli.CommandLines;
import org.vgpu.common.cli.Subcommand;
import org.vgpu.common.line.LineClient;
import org.vgpu.common.line.LineText;
import org.vgpu.common.net.Endpoint;
import org.vgpu.siteconfig.cli.TrackerOptions;
import org.vgpu.tracker.report.Report;
import org.vgpu.tracker.report.ReportCsv;
import org.vgpu.tracker.report.ReportFilter;
import org.vgpu.tracker.report.ReportJson;
import org.vgpu.tracker.report.ReportParsable;
import org.vgpu.tracker.report.ReportTable;

/**
 * {@code vgpu report}: what the tracker has lent, to whom, the migrations of borrowed vGPUs, which vgpu
 * jobs wait and why, idle GPUs per node and recently ended assemblies, as a table (default), JSON, CSV or sacct's
 * {@code --parsable2} form, all written from one {@link Report}, of every job or those {@code --job} and {@code
 * --user} select ({@link ReportFilter}). Asks the running tracker ({@code status json} on its socket), found as the
 * admin commands find it ({@link TrackerOptions}); a peer that is not a tracker, or does not answer, is an error
 * (exit 1), never an empty report.
 */
public final class ReportCommand implements Subcommand {
    private static final List<String> FORMATS = List.of("table", "json", "csv");
    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    /** A Slurm job id as the report names jobs: a whole job's number (not an array task's 12_3, not a step's 12.0). */
    private static final Pattern JOB_ID = Pattern.compile("[1-9][0-9]{0,17}");
    /** A user name as Slurm shows it: no blank, control character or {@code |} can be part of one. */
    private static final Pattern USER = Pattern.compile("[^\\s|\\p{Cntrl}]+");

    @Override
    public String name() {
        return "report";
    }

    @Override
    public String summary() {
        return "show borrowed GPUs, migrations, held vgpu jobs and idle GPUs (table, JSON, CSV or parsable)";
    }

    @Override
    public Options options() {
        return TrackerOptions.addLocationTo(new Options())
                .addOption(Option.builder()
                        .longOpt("format")
                        .hasArg()
                        .argName("FORMAT")
                        .desc("table, json or csv (default table)")
                        .get())
                .addOption(Option.builder("P")
                        .longOpt("parsable2")
                        .desc("one table of every section, '|' between cells, a header line first, as sacct"
                                + " --parsable2 (no --format)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("job")
                        .hasArg()
                        .argName("JOB[,JOB...]")
                        .desc("only these jobs (Slurm job ids; repeatable)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("user")
                        .hasArg()
                        .argName("USER[,USER...]")
                        .desc("only these users' jobs (repeatable)")
                        .get());
    }

    @Override
    public int run(CommandLine line, PrintStream out, PrintStream err) throws ParseException {
        if (line.hasOption("parsable2") && line.hasOption("format")) {
            throw new ParseException("give --format or --parsable2, not both");
        }
        String format =
                line.hasOption("parsable2") ? "parsable2" : CommandLines.choice(line, "format", "table", FORMATS);
        ReportFilter filter = new ReportFilter(jobs(line), users(line));
        Endpoint tracker = TrackerOptions.tracker(line);
        Report report = filter.apply(ReportJson.fromReply(
                LineClient.request(tracker, REQUEST_STATUS + " " + STATUS_JSON_LINE_WORD, TIMEOUT),
                tracker.toString()));
        out.print(
                switch (format) {
                    case "json" -> ReportJson.pretty(report) + System.lineSeparator();
                    case "csv" -> ReportCsv.write(report);
                    case "parsable2" -> ReportParsable.write(report);
                    default -> ReportTable.write(report);
                });
        out.flush();
        return 0;
    }

    private static Set<Long> jobs(CommandLine line) throws ParseException {
        Set<Long> jobs = new LinkedHashSet<>();
        for (String job : CommandLines.items(line, "job")) {
            if (!JOB_ID.matcher(job).matches()) {
                throw new ParseException(
                        "--job takes Slurm job ids, the numbers scontrol shows as JobId (an array task's 12_3"
                                + " or a step's 12.0 is none), got '"
                                + LineText.printable(job, 40) + "'");
            }
            jobs.add(Long.parseLong(job));
        }
        return jobs;
    }

    private static Set<String> users(CommandLine line) throws ParseException {
        List<String> users = CommandLines.items(line, "user");
        for (String user : users) {
            if (!USER.matcher(user).matches()) {
                throw new ParseException("--user takes user names, got '" + LineText.printable(user, 40) + "'");
            }
        }
        return new LinkedHashSet<>(users);
    }
}
