package org.vgpu.migration.cli;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.function.Function;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

import org.vgpu.common.cli.Subcommand;
import org.vgpu.common.error.NetworkException;
import org.vgpu.common.line.LineClient;
import org.vgpu.migration.agent.MigrationAgent;

/**
 * {@code vgpu migrate}: sends one command to a job's migration agent and prints its reply. Exit
 * status 0 when the agent answered {@code ok}, 1 when it answered {@code error} or could not be
 * reached, 2 for bad usage.
 */
public final class MigrateCommand implements Subcommand {
    /** A migration answers when it is done; moving many GiB over a network takes a while. */
    private static final Duration REPLY_TIMEOUT = Duration.ofMinutes(10);

    private final Function<String, String> environment;

    public MigrateCommand() {
        this(System::getenv);
    }

    /** @param environment looks up environment variables (tests give their own) */
    MigrateCommand(Function<String, String> environment) {
        this.environment = environment;
    }

    @Override
    public String name() {
        return "migrate";
    }

    @Override
    public String summary() {
        return "tell a job's migration agent to move a vGPU (--vgpu K --to GPU|HOST:PORT), or ask its --status or --history";
    }

    @Override
    public Options options() {
        return new Options()
                .addOption(Option.builder()
                        .longOpt("socket")
                        .hasArg()
                        .argName("PATH")
                        .desc("the agent's socket (default: $" + MigrationAgent.SOCKET_ENV + ")")
                        .get())
                .addOption(Option.builder()
                        .longOpt("vgpu")
                        .hasArg()
                        .argName("K")
                        .desc("the vGPU to move")
                        .get())
                .addOption(Option.builder()
                        .longOpt("to")
                        .hasArg()
                        .argName("TARGET")
                        .desc("a local GPU index or HOST:PORT of a GPU worker")
                        .get())
                .addOption(Option.builder()
                        .longOpt("status")
                        .desc("where each vGPU runs and its live bytes")
                        .get())
                .addOption(Option.builder()
                        .longOpt("history")
                        .desc("the agent's recent migrations")
                        .get());
    }

    @Override
    public int run(CommandLine line, PrintStream out, PrintStream err) throws ParseException {
        String command = command(line);
        Path socket = socket(line);
        String reply;
        try {
            reply = LineClient.request(socket, command, REPLY_TIMEOUT).getLast();
        } catch (NetworkException e) {
            err.println("vgpu migrate: cannot reach the migration agent: " + e.getMessage());
            return 1;
        }
        boolean ok = reply.startsWith("ok");
        (ok ? out : err).println(reply);
        return ok ? 0 : 1;
    }

    private static String command(CommandLine line) throws ParseException {
        boolean move = line.hasOption("vgpu") || line.hasOption("to");
        int chosen = (move ? 1 : 0) + (line.hasOption("status") ? 1 : 0) + (line.hasOption("history") ? 1 : 0);
        if (chosen != 1) {
            throw new ParseException("give exactly one of --vgpu K --to TARGET, --status, --history");
        }
        if (line.hasOption("status")) {
            return "status";
        }
        if (line.hasOption("history")) {
            return "history";
        }
        String vgpu = line.getOptionValue("vgpu");
        String target = line.getOptionValue("to");
        if (vgpu == null || target == null) {
            throw new ParseException("--vgpu and --to go together");
        }
        if (vgpu.isBlank()
                || target.isBlank()
                || (vgpu + target).chars().anyMatch(c -> Character.isWhitespace(c) || c < 0x20)) {
            throw new ParseException("--vgpu and --to take one word each, got '" + vgpu + "' and '" + target + "'");
        }
        return "migrate " + vgpu + " " + target;
    }

    private Path socket(CommandLine line) throws ParseException {
        String path = line.getOptionValue("socket", environment.apply(MigrationAgent.SOCKET_ENV));
        if (path == null || path.isBlank()) {
            throw new ParseException("no agent socket: give --socket PATH or set " + MigrationAgent.SOCKET_ENV);
        }
        return Path.of(path);
    }
}
