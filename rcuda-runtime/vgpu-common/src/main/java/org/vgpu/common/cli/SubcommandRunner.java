package org.vgpu.common.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
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
 * {@link InputException}: its reason and the --help hint on err). Any other exception is a bug in vgpu: exit 1,
 * one line on err that says so and names the file its details went to, not a stack trace. The
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
            // usage error. Asking for help needs none of them.
            if (Arrays.asList(args).contains("--help") || Arrays.asList(args).contains("-h")) {
                printUsage(command, options, out);
                return 0;
            }
            usageError(command, e.getMessage(), err);
            return 2;
        } catch (ParseException | InputException e) {
            usageError(command, e.getMessage(), err);
            return 2;
        } catch (VgpuFailure e) {
            err.println("vgpu " + command.name() + ": " + e.getMessage());
            return 1;
        } catch (RuntimeException e) {
            internalError(command, e, err, Path.of(System.getProperty("java.io.tmpdir")));
            return 1;
        }
    }

    /** A usage error: its reason on one line, and where the whole usage is; not the usage itself, which hides it. */
    private static void usageError(Subcommand command, String reason, PrintStream err) {
        err.println("vgpu " + command.name() + ": " + reason);
        err.println("see `vgpu " + command.name() + " --help`");
    }

    /**
     * Reports a failure no command expects: one line for the user, the stack trace for whoever fixes
     * it in a file under {@code directory}, or on err after all where no file can be written, since a
     * bug's details must not be lost.
     */
    static void internalError(Subcommand command, RuntimeException failure, PrintStream err, Path directory) {
        String prefix = "vgpu " + command.name() + ": internal error, a bug in vgpu rather than in the input or the"
                + " machine: the command stopped";
        StringWriter details = new StringWriter();
        failure.printStackTrace(new PrintWriter(details));
        try {
            Path report = Files.createTempFile(
                    directory,
                    "vgpu-" + command.name() + "-" + ProcessHandle.current().pid() + "-",
                    ".txt");
            Files.writeString(report, "vgpu " + command.name() + ", internal error\n" + details);
            err.println(prefix + "; its details are in " + report + ", please report them");
        } catch (IOException | RuntimeException unwritable) {
            err.println(prefix + "; its details could not be written to " + directory + " (" + unwritable.getMessage()
                    + "), so they follow:");
            err.print(details);
        }
    }

    // commons-cli 1.10 deprecates this HelpFormatter for org.apache.commons.cli.help's, which lays usage out
    // differently; every command's usage text is behaviour people and tests read, so it stays until that is chosen.
    @SuppressWarnings("deprecation")
    private static void printUsage(Subcommand command, Options options, PrintStream stream) {
        PrintWriter writer = new PrintWriter(stream, false, stream.charset());
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
