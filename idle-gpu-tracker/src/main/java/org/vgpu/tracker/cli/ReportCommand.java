package org.vgpu.tracker.cli;

import static org.vgpu.common.contract.BridgeContract.REQUEST_STATUS;
import static org.vgpu.common.contract.BridgeContract.STATUS_JSON_LINE_WORD;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

import org.vgpu.common.cli.CommandLines;
import org.vgpu.common.cli.Subcommand;
import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.line.LineClient;
import org.vgpu.common.net.Endpoint;
import org.vgpu.siteconfig.SiteConfigReader;
import org.vgpu.tracker.report.Report;
import org.vgpu.tracker.report.ReportCsv;
import org.vgpu.tracker.report.ReportJson;
import org.vgpu.tracker.report.ReportTable;

/**
 * {@code vgpu report}: what the tracker has lent, to whom, the migrations of borrowed vGPUs, which vgpu
 * jobs wait and why, idle GPUs per node and recently ended assemblies, as a table (default), JSON or
 * CSV, all three written from one {@link Report}. Asks the running tracker ({@code status json} on its
 * socket); a peer that is not a tracker, or does not answer, is an error (exit 1), never an empty report.
 */
public final class ReportCommand implements Subcommand {
    private static final List<String> FORMATS = List.of("table", "json", "csv");
    private static final Duration TIMEOUT = Duration.ofSeconds(10);

    @Override
    public String name() {
        return "report";
    }

    @Override
    public String summary() {
        return "show borrowed GPUs, migrations, held vgpu jobs and idle GPUs (table, JSON or CSV)";
    }

    @Override
    public Options options() {
        return new Options()
                .addOption(Option.builder()
                        .longOpt("config")
                        .hasArg()
                        .argName("FILE")
                        .desc("the site configuration, which names the tracker")
                        .get())
                .addOption(Option.builder()
                        .longOpt("tracker")
                        .hasArg()
                        .argName("HOST:PORT")
                        .desc("the tracker to ask, instead of the configuration's")
                        .get())
                .addOption(Option.builder()
                        .longOpt("format")
                        .hasArg()
                        .argName("FORMAT")
                        .desc("table, json or csv (default table)")
                        .get());
    }

    @Override
    public int run(CommandLine line, PrintStream out, PrintStream err) throws ParseException {
        if (line.hasOption("config") == line.hasOption("tracker")) {
            throw new ParseException("give either --config FILE or --tracker HOST:PORT");
        }
        String format = CommandLines.choice(line, "format", "table", FORMATS);
        Endpoint tracker;
        if (line.hasOption("tracker")) {
            try {
                tracker = Endpoint.parse(line.getOptionValue("tracker"));
            } catch (VgpuFailure e) {
                throw new ParseException("--tracker: " + e.detail());
            }
        } else {
            tracker = SiteConfigReader.read(Path.of(line.getOptionValue("config")))
                    .tracker();
        }
        Report report = ReportJson.fromReply(
                LineClient.request(tracker, REQUEST_STATUS + " " + STATUS_JSON_LINE_WORD, TIMEOUT), tracker.toString());
        out.print(
                switch (format) {
                    case "json" -> ReportJson.pretty(report) + System.lineSeparator();
                    case "csv" -> ReportCsv.write(report);
                    default -> ReportTable.write(report);
                });
        out.flush();
        return 0;
    }
}
