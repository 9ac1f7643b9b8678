package org.vgpu.tracker.cli;

import java.io.PrintStream;
import java.time.Duration;
import java.util.List;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

import org.vgpu.common.cli.Subcommand;
import org.vgpu.common.line.TrackerAdminClient;
import org.vgpu.siteconfig.cli.TrackerOptions;

/**
 * An admin command that is one request to the tracker ({@code --config}/{@code --tracker}, {@code --auth}) whose
 * {@code ok} reply it prints. Exit 0 on {@code ok}; a refusal is the tracker's reason and exit 1; bad usage exit 2.
 */
abstract class AdminRequestCommand implements Subcommand {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    /** The request line for these operands. */
    abstract String request(List<String> operands) throws ParseException;

    @Override
    public Options options() {
        return TrackerOptions.addTo(new Options());
    }

    @Override
    public int run(CommandLine line, PrintStream out, PrintStream err) throws ParseException {
        String request = request(line.getArgList());
        TrackerOptions.AdminTarget target = TrackerOptions.adminTarget(line);
        String reply = TrackerAdminClient.request(target.tracker(), request, target.auth(), TIMEOUT);
        out.println(TrackerAdminClient.text(reply));
        return 0;
    }
}
