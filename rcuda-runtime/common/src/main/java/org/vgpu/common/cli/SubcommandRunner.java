package org.vgpu.common.cli;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.util.Arrays;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.DefaultParser;
import org.apache.commons.cli.HelpFormatter;
import org.apache.commons.cli.MissingOptionException;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

import org.vgpu.common.error.InputException;
import org.vgpu.common.error.VgpuFailure;

/**
 * Runs one {@link Subcommand} with raw arguments: parses its options, answers {@code --help}, and
 * maps failures to exit statuses the same way for every command — 0 success, 1 the work failed
 * (a {@link VgpuFailure}, its message on err), 2 bad usage (a {@link ParseException} or
 * {@link InputException}: reason and usage on err). The
 * {@code vgpu} launcher dispatches here, and so does a process started for one command only
 * (a GPU worker), without the launcher on its class path.
 */
public final class SubcommandRunner {
    private SubcommandRunner() {}

    public static int run(Subcommand command, String[] args, PrintStream out, PrintStream err) {
        Options options = command.options()
                .addOption(Option.builder("h")
                        .longOpt("help")
                        .desc("show this help")
                        .get());
        try {
            CommandLine line = new DefaultParser().parse(options, args);
            if (line.hasOption("help")) {
                printUsage(command, options, out);
                return 0;
            }
            if (command.operands().isEmpty() && !line.getArgList().isEmpty()) {
                throw new ParseException("unexpected argument(s): " + String.join(" ", line.getArgList()));
            }
            return command.run(line, out, err);
        } catch (MissingOptionException e) {
            // The parser checks required options before anyone can look for --help: "vgpu worker --help" was a
            // usage error (issue 21). Asking for help needs none of them.
            if (Arrays.asList(args).contains("--help") || Arrays.asList(args).contains("-h")) {
                printUsage(command, options, out);
                return 0;
            }
            err.println("vgpu " + command.name() + ": " + e.getMessage());
            printUsage(command, options, err);
            return 2;
        } catch (ParseException | InputException e) {
            err.println("vgpu " + command.name() + ": " + e.getMessage());
            printUsage(command, options, err);
            return 2;
        } catch (VgpuFailure e) {
            err.println("vgpu " + command.name() + ": " + e.getMessage());
            return 1;
        }
    }

    // commons-cli 1.10 deprecates this HelpFormatter for org.apache.commons.cli.help's, which lays usage out
    // differently; every command's usage text is behaviour people and tests read, so it stays until that is chosen.
    @SuppressWarnings("deprecation")
    private static void printUsage(Subcommand command, Options options, PrintStream stream) {
        PrintWriter writer = new PrintWriter(stream);
        new HelpFormatter()
                .printHelp(
                        writer,
                        100,
                        "vgpu " + command.name() + " [options]"
                                + (command.operands().isEmpty() ? "" : " " + command.operands()),
                        command.summary(),
                        options,
                        2,
                        4,
                        "");
        writer.flush();
    }
}
