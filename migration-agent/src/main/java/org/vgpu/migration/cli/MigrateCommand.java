package org.vgpu.migration.cli;

import java.io.Console;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.function.Function;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

import org.vgpu.common.cli.Subcommand;
import org.vgpu.common.error.NetworkException;
import org.vgpu.common.line.LineClient;
import org.vgpu.common.line.TrackerAdminClient;
import org.vgpu.common.net.Endpoint;
import org.vgpu.migration.agent.MigrationAgent;
import org.vgpu.siteconfig.cli.TrackerOptions;

/**
 * {@code vgpu migrate}: two forms.
 * <ul>
 * <li>{@code vgpu migrate JOB VGPU [NODE]} (admins): asks the tracker to move borrowed vGPU VGPU of job JOB home to a
 *     free GPU of its node now, whatever the hook's cost model says, and follows the migration until it ends (a dot
 *     per second on a terminal while it waits); {@code --no-wait} returns once it started.</li>
 * <li>{@code vgpu migrate --vgpu K --to T} (inside the job): sends one command to the job's migration agent and
 *     prints its reply.</li>
 * </ul>
 * Exit status 0 when the move succeeded (or the agent answered {@code ok}), 1 when it failed, was refused (unknown
 * job or vGPU: the tracker's reason) or the peer could not be reached, 2 for bad usage.
 */
public final class MigrateCommand implements Subcommand {
    /** A migration answers when it is done; moving many GiB over a network takes a while. */
    private static final Duration REPLY_TIMEOUT = Duration.ofMinutes(10);

    private static final Duration TRACKER_TIMEOUT = Duration.ofSeconds(30);

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
        return "move a job's vGPU: JOB VGPU [NODE] through the tracker (admins), or --vgpu K --to GPU|HOST:PORT at"
                + " the job's agent, or ask the agent's --status or --history";
    }

    @Override
    public String operands() {
        return "[JOB VGPU [NODE]]";
    }

    @Override
    public Options options() {
        return TrackerOptions.addTo(new Options())
                .addOption(Option.builder()
                        .longOpt("no-wait")
                        .desc("JOB VGPU form: return once the tracker started the migration")
                        .get())
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
        if (!line.getArgList().isEmpty()) {
            return throughTracker(line, out);
        }
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

    /** The admins' form: the tracker claims a GPU of the job's node, grants it and tells the job's agent. */
    private int throughTracker(CommandLine line, PrintStream out) throws ParseException {
        List<String> operands = line.getArgList();
        if (operands.size() < 2 || operands.size() > 3) {
            throw new ParseException("give JOB VGPU [NODE]");
        }
        if (line.hasOption("vgpu") || line.hasOption("to") || line.hasOption("status") || line.hasOption("history")) {
            throw new ParseException("JOB VGPU goes to the tracker; --vgpu, --to, --status and --history to the agent:"
                    + " give one form");
        }
        for (String operand : operands) {
            if (operand.isBlank() || operand.chars().anyMatch(c -> c <= ' ' || c > '~')) {
                throw new ParseException("JOB, VGPU and NODE are one word each, got '" + operand + "'");
            }
        }
        TrackerOptions.AdminTarget target = TrackerOptions.adminTarget(line);
        Endpoint tracker = target.tracker();
        String started = TrackerAdminClient.request(
                tracker, TrackerAdminClient.migrateRequest(operands), target.auth(), TRACKER_TIMEOUT);
        out.println(TrackerAdminClient.text(started));
        OptionalLong id = TrackerAdminClient.startedMigration(started);
        if (line.hasOption("no-wait") || id.isEmpty()) {
            return 0;
        }
        Map<String, String> end = TrackerAdminClient.follow(
                tracker, id.getAsLong(), out, isTerminal(), Duration.ofSeconds(1), REPLY_TIMEOUT);
        boolean ok = TrackerAdminClient.moved(end);
        out.println(
                (ok ? "moved: " : "not moved: ") + end.getOrDefault("from", "?") + " -> " + end.getOrDefault("to", "?")
                        + ", blocked " + end.getOrDefault("blocked_ms", "?") + " ms, " + end.getOrDefault("bytes", "?")
                        + " bytes copied");
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

    /**
     * Whether a person watches: with JLine as the console's provider (Java 22 to 24, or {@code -Djdk.console=
     * jdk.internal.le}) a console exists even when the output is redirected, so only {@link Console#isTerminal} tells.
     */
    @SuppressWarnings("SystemConsoleNull") // Java 25's own console is null where nobody watches, and isTerminal follows
    private static boolean isTerminal() {
        Console console = System.console();
        return console != null && console.isTerminal();
    }
}
