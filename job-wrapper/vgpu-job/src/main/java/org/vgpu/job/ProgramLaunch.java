package org.vgpu.job;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.error.ConfigException;
import org.vgpu.common.error.IoReasons;
import org.vgpu.common.error.VgpuFailure;

/**
 * {@code vgpu run -- COMMAND}: starts the user's command with {@link InterposerPremain} in {@code JAVA_TOOL_OPTIONS}, so that
 * a JVM it is opens the job's vGPUs in itself, and with the launcher's {@link LocalWorker} listening for its processes
 * that are not JVMs, and exits with the program's status.
 *
 * <p>Which kind the command is, is found by running it, not by reading the command line: the command's name says too
 * little ({@code java}, but also {@code mvn exec:java}, {@code gradle run}, a site's wrapper script, a jpackage
 * launcher), and a shebang too little as well (a shell script that ends in {@code exec java}). A JVM takes the run's
 * lock and opens the vGPUs; a CUDA program connects to the local worker, which opens them at its first session; a
 * command that does neither (a shell step that uses no GPU) simply runs.
 */
final class ProgramLaunch {
    static final String JAVA_TOOL_OPTIONS = "JAVA_TOOL_OPTIONS";
    /** Where the program's {@code libcuda.so.1} learns that the launcher shares page-locked host memory with it. */
    static final String HOST_REGIONS = BridgeContract.ENV_HOST_REGIONS;

    /** How long a program told to stop (SIGTERM) has before it is killed. */
    private static final Duration STOP_GRACE = Duration.ofSeconds(10);

    /** How the launcher starts the local worker in the run's directory. */
    @FunctionalInterface
    interface LocalWorkerStart {
        LocalWorker start(Path runDirectory);
    }

    private final List<String> command;
    private final Map<String, String> environment;
    private final Path interposerJar;
    /** vgpu's libcuda.so.1, put first on the library path of a program that is not Java. */
    private final Optional<Path> libcuda = LibcudaLocation.find();

    private final String interposerArguments;
    private final LocalWorkerStart localWorker;
    private final Optional<Path> agentSocket;

    /**
     * @param environment    the job's environment, given to the program with the interposer added
     * @param interposerJar       the vgpu jar, whose manifest names {@link PremainJavaCheck} as its Premain-Class
     * @param interposerArguments {@link InterposerPremain#arguments}
     * @param localWorker    starts the local worker for the program's processes that are not JVMs
     * @param agentSocket    the job's agent socket, removed after the program if it is left behind
     */
    ProgramLaunch(
            List<String> command,
            Map<String, String> environment,
            Path interposerJar,
            String interposerArguments,
            LocalWorkerStart localWorker,
            Optional<Path> agentSocket) {
        this.command = List.copyOf(command);
        this.environment = Map.copyOf(environment);
        this.interposerJar = interposerJar;
        this.interposerArguments = interposerArguments;
        this.localWorker = localWorker;
        this.agentSocket = agentSocket;
    }

    /**
     * {@code JAVA_TOOL_OPTIONS} for the program: the user's own value, then the interposer and the native access the
     * runtime's calls into the CUDA driver need. A jar path with a space is quoted, as the JVM reads this variable.
     */
    static String javaToolOptions(Optional<String> users, Path interposerJar, String interposerArguments) {
        String interposer = "-javaagent:" + interposerJar + "=" + interposerArguments;
        if (interposer.chars().anyMatch(Character::isWhitespace)) {
            interposer = "\"" + interposer + "\"";
        }
        String ours = interposer + " --enable-native-access=ALL-UNNAMED";
        return users.filter(value -> !value.isBlank())
                .map(value -> value.strip() + " " + ours)
                .orElse(ours);
    }

    /** Runs the program to its end: its exit status, 128 + N for a death by signal N (as shells say it). */
    int run(PrintStream out, PrintStream err) throws InterruptedException {
        Optional<String> tooOld = ProgramJava.refusal(command, environment);
        if (tooOld.isPresent()) {
            err.println(tooOld.get());
            return 2;
        }
        Map<String, String> servingVariables;
        try {
            servingVariables = InProcessServing.variables(
                    Optional.ofNullable(environment.get(InProcessServing.VARIABLE)), interposerArguments);
        } catch (ConfigException e) {
            err.println("vgpu run: " + e.detail());
            return 2;
        }
        Path runDirectory;
        try {
            runDirectory = Files.createTempDirectory("vgpu-run-");
        } catch (IOException e) {
            err.println("vgpu run: cannot make the run's directory: " + IoReasons.of(e));
            return 1;
        }
        Optional<LocalWorker> local = Optional.empty();
        try {
            local = startLocalWorker(runDirectory, err);
            return runIn(runDirectory, local, servingVariables, out, err);
        } finally {
            local.ifPresent(worker -> closeLocalWorker(worker, err));
            removeAll(runDirectory);
        }
    }

    /** The local worker; none, with a warning, where it cannot listen: a Java program does not need it. */
    private Optional<LocalWorker> startLocalWorker(Path runDirectory, PrintStream err) {
        if (libcuda.isEmpty()) {
            err.println("vgpu run: warning: no vgpu " + LibcudaLocation.LIBRARY + " beside vgpu.jar (in its lib/"
                    + " directory, or the source tree's rcuda-runtime/vgpu-libcuda/build), so a program that is not"
                    + " Java uses the node's driver, not the job's vGPUs");
        }
        try {
            return Optional.of(localWorker.start(runDirectory));
        } catch (VgpuFailure e) {
            err.println("vgpu run: warning: no local worker, so a program that is not Java cannot use the job's vGPUs: "
                    + e.detail());
            return Optional.empty();
        }
    }

    private static void closeLocalWorker(LocalWorker worker, PrintStream err) {
        try {
            worker.close();
        } catch (VgpuFailure e) {
            err.println("vgpu run: closing the job's vGPUs after the program: " + e.detail());
        } catch (RuntimeException e) {
            err.println("vgpu run: closing the job's vGPUs after the program: " + e);
        }
    }

    private int runIn(
            Path runDirectory,
            Optional<LocalWorker> local,
            Map<String, String> servingVariables,
            PrintStream out,
            PrintStream err)
            throws InterruptedException {
        ProcessBuilder builder = new ProcessBuilder(command);
        builder.environment().putAll(environment);
        builder.environment()
                .put(
                        JAVA_TOOL_OPTIONS,
                        javaToolOptions(
                                Optional.ofNullable(environment.get(JAVA_TOOL_OPTIONS)),
                                interposerJar,
                                interposerArguments));
        builder.environment().put(InterposerPremain.RUN_DIRECTORY, runDirectory.toString());
        local.ifPresent(worker -> {
            builder.environment().put(LocalWorker.VARIABLE, worker.socket().toString());
            if (worker.sharedHostBytes() > 0) {
                builder.environment().put(HOST_REGIONS, Long.toString(worker.sharedHostBytes()));
            } else {
                builder.environment().remove(HOST_REGIONS);
            }
            libcuda.ifPresent(directory -> {
                builder.environment()
                        .put(
                                LibcudaLocation.LIBRARY_PATH,
                                LibcudaLocation.libraryPath(
                                        directory, Optional.ofNullable(environment.get(LibcudaLocation.LIBRARY_PATH))));
                CudaLibrarySettings.addTo(builder.environment());
                builder.environment().putAll(servingVariables);
            });
        });
        // the program's own terminal where it is ours (a job's output file, a console); a caller's streams get copies
        boolean ownStreams = out == System.out && err == System.err;
        if (ownStreams) {
            builder.inheritIO();
        }
        Process program;
        try {
            program = builder.start();
        } catch (IOException e) {
            err.println("vgpu run: cannot start " + command.getFirst() + ": " + IoReasons.of(e));
            return 127;
        }
        // scancel or Ctrl-C ends the launcher: the program is told to stop too, and gets time to close its vGPUs
        Thread stopProgram = new Thread(() -> stop(program), "vgpu-run-stop-program");
        Runtime.getRuntime().addShutdownHook(stopProgram);
        List<Thread> copies = List.of();
        if (!ownStreams) {
            closeQuietly(program.getOutputStream()); // a caller with streams of its own has no input for the program
            copies = List.of(copy(program.getInputStream(), out), copy(program.getErrorStream(), err));
        }
        try {
            int status = program.waitFor();
            for (Thread copying : copies) {
                copying.join();
            }
            // the launcher's own vGPUs, if the program used them, close first: their agent socket is no leftover
            local.ifPresent(worker -> closeLocalWorker(worker, err));
            removeLeftSocket(err);
            return status;
        } finally {
            try {
                Runtime.getRuntime().removeShutdownHook(stopProgram);
            } catch (IllegalStateException shuttingDown) {
                // the hook stops the program
            }
        }
    }

    /**
     * The program's JVM removes its migration agent's socket at exit, also on SIGTERM; one killed (SIGKILL, the OOM killer)
     * runs no hook, so the launcher removes what it left, and no one finds a dead migration agent's socket.
     */
    private void removeLeftSocket(PrintStream err) {
        if (agentSocket.isEmpty()) {
            return;
        }
        try {
            if (Files.deleteIfExists(agentSocket.get())) {
                err.println("vgpu run: the program ended without closing its vGPUs (killed?); removed the agent socket "
                        + agentSocket.get());
            }
        } catch (IOException e) {
            err.println("vgpu run: cannot remove the agent socket " + agentSocket.get() + " the program left: "
                    + IoReasons.of(e));
        }
    }

    private static void stop(Process program) {
        if (!program.isAlive()) {
            return;
        }
        program.destroy();
        try {
            if (!program.waitFor(STOP_GRACE.toMillis(), TimeUnit.MILLISECONDS)) {
                program.destroyForcibly().waitFor();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            program.destroyForcibly();
        }
    }

    private static Thread copy(InputStream from, PrintStream to) {
        return Thread.ofPlatform().name("vgpu-run-output").start(() -> {
            try (from) {
                from.transferTo(to);
                to.flush();
            } catch (IOException ignored) {
                // the program closed its end
            }
        });
    }

    private static void closeQuietly(OutputStream input) {
        try {
            input.close();
        } catch (IOException ignored) {
            // the program has gone already
        }
    }

    /** Removes {@code directory} and what is in it, as far as it can: a temporary directory of the launcher. */
    static void removeAll(Path directory) {
        try (Stream<Path> paths = Files.walk(directory)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        } catch (IOException | UncheckedIOException ignored) {
            // a temporary directory; the system's cleaner gets what is left
        }
    }
}
