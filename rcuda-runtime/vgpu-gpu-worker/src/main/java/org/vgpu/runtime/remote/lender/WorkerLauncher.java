package org.vgpu.runtime.remote.lender;

import java.io.File;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.error.ConfigException;
import org.vgpu.common.error.IoReasons;

/**
 * Starts GPU workers as operating-system processes, one per borrowed vGPU (DESIGN.md, "One
 * worker process per remote vGPU"), with this JVM's {@code java} and class path.
 *
 * <p>The worker contract: {@code java --enable-native-access=ALL-UNNAMED -cp CLASSPATH MAIN} plus
 * {@link WorkerSpec#arguments()}; when ready the worker prints exactly one stdout line
 * {@code vgpu-worker listening HOST:PORT} (the port it actually bound, also when asked for port 0);
 * it serves one session, prints {@code vgpu-worker served calls=N bytes_in=N bytes_out=N busy_ms=N}
 * and exits 0 (1 after a failure).
 */
public final class WorkerLauncher {
    private static final Logger LOG = LoggerFactory.getLogger(WorkerLauncher.class);
    public static final String WORKER_MAIN_CLASS = "org.vgpu.runtime.remote.worker.WorkerCommand";
    /** Generous: a JVM plus CUDA context creation on a busy node takes seconds, not minutes. */
    public static final Duration DEFAULT_STARTUP_TIMEOUT = Duration.ofSeconds(60);

    public static final String LISTENING_PREFIX = "vgpu-worker listening ";
    /** Before the listening line of a worker with a self-signed certificate: its SHA-256 fingerprint in hex. */
    public static final String CERTIFICATE_PREFIX = "vgpu-worker certificate ";

    public static final String SERVED_PREFIX = "vgpu-worker served ";
    private static final File DEV_NULL = new File("/dev/null");

    private final String mainClass;
    private final Duration startupTimeout;

    /** Launches the real worker command with the default start-up timeout. */
    public WorkerLauncher() {
        this(WORKER_MAIN_CLASS, DEFAULT_STARTUP_TIMEOUT);
    }

    /**
     * @param mainClass the worker's main class (tests use a stand-in that keeps the contract)
     * @param startupTimeout how long a worker may take to report listening before it is killed
     */
    public WorkerLauncher(String mainClass, Duration startupTimeout) {
        this.mainClass = Objects.requireNonNull(mainClass, "mainClass");
        if (startupTimeout.isNegative() || startupTimeout.isZero()) {
            throw new ConfigException(
                    ConfigException.Code.INVALID, "start-up timeout must be positive, got " + startupTimeout);
        }
        this.startupTimeout = startupTimeout;
    }

    /** The full command line that starts the worker {@code spec} describes. */
    public List<String> command(WorkerSpec spec) {
        List<String> command = new ArrayList<>(javaCommand(mainClass));
        command.addAll(spec.arguments());
        return List.copyOf(command);
    }

    /**
     * This JVM's {@code java} and class path running {@code mainClass}: how a process of vgpu's own
     * (a worker, or a benchmark's helper) starts with exactly the classes this one has.
     */
    public static List<String> javaCommand(String mainClass) {
        String java = ProcessHandle.current()
                .info()
                .command()
                .orElseGet(() ->
                        Path.of(System.getProperty("java.home"), "bin", "java").toString());
        return List.of(
                java, "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), mainClass);
    }

    /**
     * Starts a worker and returns once it listens.
     *
     * @throws LendingException WORKER_NOT_STARTED when it cannot be started, exits, or does not report
     *         listening within the start-up timeout (the message carries the end of its stderr);
     *         the process is gone by then
     */
    public LaunchedWorker launch(WorkerSpec spec) {
        List<String> command = command(spec);
        LOG.debug("starting worker {}: {}", spec.workerId(), String.join(" ", command));
        Process process;
        try {
            // The worker reads no input: /dev/null rather than a pipe leaves no descriptor open in this JVM.
            process = new ProcessBuilder(command)
                    .redirectInput(ProcessBuilder.Redirect.from(DEV_NULL))
                    .start();
        } catch (IOException e) {
            throw new LendingException(
                    LendingException.Code.WORKER_NOT_STARTED,
                    "GPU worker " + spec.workerId() + " could not be started (" + command.getFirst() + "): "
                            + IoReasons.of(e),
                    e);
        }
        return LaunchedWorker.watch(spec, process, Instant.now()).awaitListening(startupTimeout);
    }

    public Duration startupTimeout() {
        return startupTimeout;
    }

    @Override
    public String toString() {
        return "worker launcher (" + mainClass + ", start-up timeout " + startupTimeout.toSeconds() + " s)";
    }
}
