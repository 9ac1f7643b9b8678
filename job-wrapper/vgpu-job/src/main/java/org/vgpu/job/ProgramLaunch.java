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

import org.vgpu.common.error.IoReasons;

/**
 * {@code vgpu run -- COMMAND}: starts the user's command with {@link InterposerPremain} in {@code JAVA_TOOL_OPTIONS}, so that
 * the JVM it is opens the job's vGPUs in itself, and exits with the program's status.
 *
 * <p>Which commands are JVM programs is found by running them, not by reading the command line: a JVM is one that
 * loaded the interposer, which marks the run's directory before the program's {@code main}. The command's name says too
 * little ({@code java}, but also {@code mvn exec:java}, {@code gradle run}, a site's wrapper script, a jpackage
 * launcher), and a shebang too little as well (a shell script that ends in {@code exec java}). A command that has
 * not attached within the bound, or ended without, is not a JVM program: it is stopped and told what is supported.
 */
final class ProgramLaunch {
    /** Long enough for a JVM to start under a loaded node, or a script to get to its {@code java}. */
    static final Duration DEFAULT_ATTACH_BOUND = Duration.ofSeconds(60);

    static final String JAVA_TOOL_OPTIONS = "JAVA_TOOL_OPTIONS";

    /** How long a program told to stop (SIGTERM) has before it is killed. */
    private static final Duration STOP_GRACE = Duration.ofSeconds(10);

    private static final String SUPPORTED = "vgpu run -- runs Java programs: java with a class, -jar or a source"
            + " file, or a script or tool that starts java with this environment's JAVA_TOOL_OPTIONS; that JVM"
            + " opens the job's vGPUs (org.vgpu.api.VirtualGpus.fromEnvironment() gives them to the program)."
            + " Other programs cannot use the job's vGPUs";

    private final List<String> command;
    private final Map<String, String> environment;
    private final Path interposerJar;
    private final String interposerArguments;
    private final Duration attachBound;
    private final Optional<Path> agentSocket;

    /**
     * @param environment    the job's environment, given to the program with the interposer added
     * @param interposerJar       the vgpu jar, whose manifest names {@link PremainJavaCheck} as its Premain-Class
     * @param interposerArguments {@link InterposerPremain#arguments}
     * @param agentSocket    the job's agent socket, removed after the program if it is left behind
     */
    ProgramLaunch(
            List<String> command,
            Map<String, String> environment,
            Path interposerJar,
            String interposerArguments,
            Duration attachBound,
            Optional<Path> agentSocket) {
        this.command = List.copyOf(command);
        this.environment = Map.copyOf(environment);
        this.interposerJar = interposerJar;
        this.interposerArguments = interposerArguments;
        this.attachBound = attachBound;
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
        Path runDirectory;
        try {
            runDirectory = Files.createTempDirectory("vgpu-run-");
        } catch (IOException e) {
            err.println("vgpu run: cannot make the run's directory: " + IoReasons.of(e));
            return 1;
        }
        try {
            return runIn(runDirectory, out, err);
        } finally {
            removeAll(runDirectory);
        }
    }

    private int runIn(Path runDirectory, PrintStream out, PrintStream err) throws InterruptedException {
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
        // the program's own terminal where it is ours (a job's output file, a console); a caller's streams get copies
        boolean ownStreams = out == System.out && err == System.err;
        if (ownStreams) {
            builder.inheritIO();
        }
        Process program;
        try {
            program = builder.start();
        } catch (IOException e) {
            err.println(
                    "vgpu run: cannot start " + command.getFirst() + ": " + IoReasons.of(e) + ". " + SUPPORTED + ".");
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
            if (!attached(program, runDirectory.resolve(InterposerPremain.ATTACHED_MARK))) {
                boolean ended = !program.isAlive();
                stop(program);
                for (Thread copying : copies) {
                    copying.join();
                }
                if (Files.exists(runDirectory.resolve(PremainJavaCheck.TOO_OLD_MARK))) {
                    // its JVM said which Java it is and what to do
                    return PremainJavaCheck.TOO_OLD_STATUS;
                }
                err.println("vgpu run: " + String.join(" ", command) + " is not a Java program: no JVM with the vgpu"
                        + " interposer started "
                        + (ended
                                ? "before it ended"
                                : "within " + attachBound.toSeconds() + " s, so"
                                        + " it was stopped (--attach-within SECONDS waits longer)")
                        + ". " + SUPPORTED + ".");
                return 2;
            }
            int status = program.waitFor();
            for (Thread copying : copies) {
                copying.join();
            }
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

    /** Whether a JVM of the program loaded the interposer before the bound, or before the program ended. */
    private boolean attached(Process program, Path mark) throws InterruptedException {
        long deadline = System.nanoTime() + attachBound.toNanos();
        while (!Files.exists(mark)) {
            if (program.waitFor(20, TimeUnit.MILLISECONDS)) {
                return Files.exists(mark);
            }
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
        }
        return true;
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
