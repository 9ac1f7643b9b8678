package org.vgpu.tracker.process;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.vgpu.common.error.IoReasons;

/**
 * Runs a command with a time limit (Slurm's client commands block for minutes while slurmctld is
 * down; munged may hang), feeding it standard input and collecting both outputs without letting
 * a full pipe stall it.
 */
public final class BoundedCommand {
    /** A finished command. */
    public record Result(List<String> command, int exitCode, String stdout, String stderr) {
        public String commandLine() {
            return String.join(" ", command);
        }
    }

    /** The command could not be run, or not within its time. */
    public static final class Failure extends Exception {
        private static final long serialVersionUID = 1L;

        Failure(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** How long a killed command's stderr is awaited for its last line. */
    private static final Duration STDERR_AFTER_KILL = Duration.ofSeconds(1);

    private BoundedCommand() {}

    /**
     * @param stdin what the command reads (empty: it reads end of file at once)
     * @throws Failure naming the command when it cannot be started, outlives {@code timeout} (it is
     *         killed then), or its output cannot be read
     */
    public static Result run(List<String> command, String stdin, Duration timeout) throws Failure {
        String line = String.join(" ", command);
        Process process;
        try {
            process = new ProcessBuilder(command).start();
        } catch (IOException e) {
            throw new Failure("cannot run '" + line + "': " + whyNotStarted(e), e);
        }
        CompletableFuture<String> stdout = readAll(process.getInputStream());
        CompletableFuture<String> stderr = readAll(process.getErrorStream());
        try (OutputStream in = process.getOutputStream()) {
            in.write(stdin.getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            // The command may exit without reading its input; its exit status tells what happened.
        }
        try {
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                throw new Failure(
                        "'" + line + "' did not finish within " + timeout.toSeconds() + " s" + lastSaid(stderr), null);
            }
            return new Result(List.copyOf(command), process.exitValue(), stdout.get(), stderr.get());
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new Failure("interrupted while running '" + line + "'", e);
        } catch (ExecutionException e) {
            throw new Failure(
                    "cannot read the output of '" + line + "': "
                            + (e.getCause() instanceof IOException io ? IoReasons.of(io) : "reading it failed"),
                    e);
        }
    }

    /**
     * What a killed command last wrote on stderr, as "; it last said: LINE", or nothing: the reason it hung (scontrol
     * retrying a missing slurm.conf for a minute says so there). A child that inherited the pipe may keep it open, so
     * the wait is short.
     */
    private static String lastSaid(CompletableFuture<String> stderr) {
        try {
            return stderr.get(STDERR_AFTER_KILL.toMillis(), TimeUnit.MILLISECONDS)
                    .lines()
                    .filter(said -> !said.isBlank())
                    .reduce((first, second) -> second)
                    .map(said -> "; it last said: " + said.strip())
                    .orElse("");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "";
        } catch (ExecutionException | TimeoutException e) {
            return "";
        }
    }

    /**
     * ProcessBuilder reports the exec's errno only in its text ("error: 2 (No such file or directory)",
     * "error=2, ..." in older JDKs).
     */
    private static String whyNotStarted(IOException e) {
        String jdkText = String.valueOf(e.getMessage());
        if (jdkText.contains("No such file or directory")) {
            return "no such program";
        }
        if (jdkText.contains("Permission denied")) {
            return "permission denied";
        }
        return IoReasons.of(e);
    }

    private static CompletableFuture<String> readAll(InputStream stream) {
        CompletableFuture<String> text = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> {
            try (stream) {
                text.complete(new String(stream.readAllBytes(), StandardCharsets.UTF_8));
            } catch (IOException e) {
                text.completeExceptionally(e);
            }
        });
        return text;
    }
}
