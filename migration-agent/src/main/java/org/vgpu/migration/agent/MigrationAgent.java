package org.vgpu.migration.agent;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentSkipListMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.error.ConfigException;
import org.vgpu.common.error.InputException;
import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.line.BoundedLineReader;
import org.vgpu.common.line.LineServer;
import org.vgpu.common.line.LineService;
import org.vgpu.migration.MigratableGpu;
import org.vgpu.migration.MigrationConfig;
import org.vgpu.migration.MigrationFaults;
import org.vgpu.migration.MigrationListener;
import org.vgpu.migration.MigrationReport;
import org.vgpu.migration.MigrationTarget;
import org.vgpu.migration.TargetResolver;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.core.FailureCollector;
import org.vgpu.runtime.remote.client.RemoteCounters;

/**
 * The migration agent inside an app: it owns the app's migratable vGPUs and takes commands on a
 * UNIX domain socket, whose path the job's environment gives ({@value #SOCKET_ENV}). No helper
 * process: migrations run in the app's process, on the connection's thread.
 *
 * <p>Protocol: one command per line (UTF-8, at most {@value #MAX_LINE_BYTES} bytes), one reply line
 * per command, starting with {@code ok} or {@code error}; a connection may send several commands.
 * <pre>
 *   migrate &lt;vgpu&gt; &lt;target&gt;   target: a local GPU index, or host:port of a GPU worker
 *   status                   where each vGPU runs, its live bytes and, while remote, what it forwarded and waited
 *   history                  the last migrations, successful or rolled back, with their timings
 *   help
 * </pre>
 * A malformed command gets an {@code error} reply in vgpu's words and changes nothing; a failed
 * migration's reply starts with its GPU error's name ({@code error CUDA_ERROR_OUT_OF_MEMORY: ...}).
 * A line that is too long ends the connection after its error reply. The socket file is made
 * readable and writable by its owner only: the job's user and root (the tracker) may command the agent.
 */
public final class MigrationAgent implements AutoCloseable {
    public static final String SOCKET_ENV = BridgeContract.ENV_AGENT_SOCKET;
    public static final int MAX_LINE_BYTES = 512;
    /** Migrations kept for {@code history}; older ones are only in the tracker's ledger. */
    public static final int HISTORY_LENGTH = 32;
    /** Connections served at once; more are told so and closed, so a flood cannot exhaust the app. */
    public static final int MAX_CONNECTIONS = 32;
    /** A connection without a command for this long is closed; a migration in progress does not count. */
    private static final Duration IDLE_TIMEOUT = Duration.ofMinutes(5);

    private static final LineServer.Limits SOCKET_LIMITS =
            new LineServer.Limits("migration agent", MAX_LINE_BYTES, MAX_CONNECTIONS, IDLE_TIMEOUT);
    private static final Logger LOG = LoggerFactory.getLogger(MigrationAgent.class);
    private static final String HELP =
            "commands: migrate <vgpu> <target> (target: local GPU index or host:port)" + " | status | history | help";

    private final Path socketPath;
    private final TargetResolver resolver;
    private final MigrationConfig config;
    private final MigrationListener tracker;
    private final MigrationFaults faults;
    private final Map<Integer, MigratableGpu> vgpus = new ConcurrentSkipListMap<>();
    private final Deque<MigrationReport> history = new ArrayDeque<>();
    private final LineServer server;
    private volatile boolean closed;

    /** An agent for production: default migration configuration, no fault injection. */
    public MigrationAgent(Path socketPath, TargetResolver resolver, MigrationListener tracker) {
        this(socketPath, resolver, MigrationConfig.DEFAULTS, tracker, MigrationFaults.NONE);
    }

    /**
     * Binds the socket and starts serving it.
     *
     * @param tracker gets the report of every migration of every vGPU of this agent
     * @param faults  {@link MigrationFaults#NONE} except in tests
     * @throws org.vgpu.common.error.NetworkException CANNOT_LISTEN when the socket cannot be bound
     *         (path too long, no such directory, another agent listening there, a file that is not a socket)
     */
    public MigrationAgent(
            Path socketPath,
            TargetResolver resolver,
            MigrationConfig config,
            MigrationListener tracker,
            MigrationFaults faults) {
        this.socketPath = Objects.requireNonNull(socketPath, "socket path");
        this.resolver = Objects.requireNonNull(resolver, "resolver");
        this.config = Objects.requireNonNull(config, "config");
        this.tracker = Objects.requireNonNull(tracker, "tracker listener");
        this.faults = Objects.requireNonNull(faults, "faults");
        this.server = LineServer.startUnix(socketPath, SOCKET_LIMITS, new LineService() {
            @Override
            public List<String> answer(BoundedLineReader.Line request, String localHost) {
                return MigrationAgent.this.answer(request);
            }

            @Override
            public boolean closesAfterOverlongRequest() {
                return true;
            }
        });
        LOG.info("migration agent listening on {}", socketPath);
    }

    /** The socket path the job's environment gives, or an error naming {@value #SOCKET_ENV}. */
    public static Path socketPathFromEnvironment() {
        String path = System.getenv(SOCKET_ENV);
        if (path == null || path.isBlank()) {
            throw new ConfigException(
                    ConfigException.Code.MISSING,
                    SOCKET_ENV + " is not set: the job's" + " environment must give the migration agent's socket path");
        }
        return Path.of(path);
    }

    public Path socketPath() {
        return socketPath;
    }

    /**
     * Makes {@code initial} (a freshly opened backend) a migratable vGPU of this agent.
     *
     * @param location where {@code initial} runs
     * @throws VgpuException CUDA_ERROR_INVALID_VALUE when the agent already has a vGPU of that index;
     *         {@code initial} then stays the caller's to close
     */
    public MigratableGpu adopt(VirtualGpu initial, MigrationTarget location) {
        MigratableGpu gpu = new MigratableGpu(initial, location, resolver, config, this::recordAndForward, faults);
        if (vgpus.putIfAbsent(gpu.vgpuIndex(), gpu) != null) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE, "the agent already has vGPU " + gpu.vgpuIndex());
        }
        return gpu;
    }

    /** The agent's vGPU of index {@code vgpu}; an {@link InputException} (a command named it) when it has none. */
    public MigratableGpu vgpu(int vgpu) {
        MigratableGpu gpu = vgpus.get(vgpu);
        if (gpu == null) {
            throw new InputException("no vGPU " + vgpu + " in this job (vGPUs: " + vgpus.keySet() + ")");
        }
        return gpu;
    }

    private void recordAndForward(MigrationReport report) {
        synchronized (history) {
            history.addLast(report);
            while (history.size() > HISTORY_LENGTH) {
                history.removeFirst();
            }
        }
        LOG.info("{}", report.summary());
        tracker.migrationFinished(report);
    }

    // ---- commands

    /** The reply to one command line, without the line end. Never throws. */
    String reply(String line) {
        try {
            return oneLine(execute(line.strip()));
        } catch (VgpuFailure e) {
            return oneLine("error " + e.getMessage());
        } catch (RuntimeException e) {
            LOG.warn("agent command '{}' failed unexpectedly", line, e);
            return "error internal failure of the agent; its log has the details";
        }
    }

    private String execute(String line) {
        if (line.isEmpty()) {
            return "error empty command; " + HELP;
        }
        if (line.chars().anyMatch(c -> (c < 0x20 && c != '\t') || c == 0x7f)) {
            return "error the command contains control characters";
        }
        String[] words = line.split("\\s+");
        String command = words[0];
        return switch (command) {
            case "help" -> words.length == 1 ? "ok " + HELP : usage(command);
            case "status" -> words.length == 1 ? status() : usage(command);
            case "history" -> words.length == 1 ? history() : usage(command);
            case "migrate" -> words.length == 3 ? migrate(words[1], words[2]) : usage(command);
            default -> "error unknown command '" + abbreviate(command) + "'; " + HELP;
        };
    }

    private static String usage(String command) {
        return "error usage: " + (command.equals("migrate") ? "migrate <vgpu> <target>" : command + " (no arguments)");
    }

    private String migrate(String vgpuText, String targetText) {
        if (!vgpuText.chars().allMatch(Character::isDigit)
                || vgpuText.length() > 3
                || Integer.parseInt(vgpuText) >= VaWindow.MAX_VGPUS) {
            return "error vgpu must be an index in [0, " + VaWindow.MAX_VGPUS + "), got '" + abbreviate(vgpuText) + "'";
        }
        MigratableGpu gpu = vgpu(Integer.parseInt(vgpuText));
        MigrationTarget target = MigrationTarget.parse(targetText);
        return "ok " + gpu.migrate(target).summary();
    }

    private String status() {
        if (vgpus.isEmpty()) {
            return "ok no vGPUs";
        }
        List<String> parts = new ArrayList<>();
        for (MigratableGpu gpu : vgpus.values()) {
            RemoteCounters remote = gpu.remoteCounters();
            parts.add(String.format(
                    "vgpu %d on %s, %d B live in %d allocations, %d migrations%s%s",
                    gpu.vgpuIndex(),
                    gpu.location(),
                    gpu.liveBytes(),
                    gpu.liveAllocations(),
                    gpu.migrationCount(),
                    gpu.migrating() ? ", migrating now" : "",
                    remote.equals(RemoteCounters.ZERO)
                            ? ""
                            : String.format(
                                    ", forwarded %d calls and %d B, waited %d ms on the worker",
                                    remote.calls(), remote.bytes(), remote.waitMillis())));
        }
        return "ok " + String.join("; ", parts);
    }

    private String history() {
        List<MigrationReport> reports;
        synchronized (history) {
            reports = List.copyOf(history);
        }
        if (reports.isEmpty()) {
            return "ok no migrations";
        }
        List<String> parts = new ArrayList<>();
        for (MigrationReport report : reports) {
            parts.add(report.finishedAt() + " " + report.summary());
        }
        return "ok " + reports.size() + " migrations: " + String.join(" | ", parts);
    }

    private static String abbreviate(String text) {
        return text.length() <= 40 ? text : text.substring(0, 40) + "...";
    }

    private static String oneLine(String reply) {
        return reply.replace('\n', ' ').replace('\r', ' ');
    }

    // ---- socket

    /** One command line's reply; an overlong line is answered and ends the connection. */
    private List<String> answer(BoundedLineReader.Line line) {
        if (line.truncated()) {
            return List.of("error line longer than " + MAX_LINE_BYTES + " bytes; closing the connection");
        }
        return List.of(reply(line.text()));
    }

    /**
     * Stops serving, removes the socket file and closes every vGPU of the agent (a migration in
     * progress finishes first). Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        FailureCollector failures = new FailureCollector();
        failures.attempt(server::close);
        for (MigratableGpu gpu : vgpus.values()) {
            failures.attempt(gpu::close);
        }
        vgpus.clear();
        failures.rethrow();
    }
}
