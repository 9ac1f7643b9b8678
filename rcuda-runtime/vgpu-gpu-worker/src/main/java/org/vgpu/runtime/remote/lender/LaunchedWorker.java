package org.vgpu.runtime.remote.lender;

import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HexFormat;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.line.BoundedLineReader;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.CertificatePin;

/**
 * A GPU worker process started by {@link WorkerLauncher}, listening at {@link #endpoint()}.
 *
 * <p>Its stdout and stderr are read to the end by two threads of their own for as long as it
 * runs, so it never blocks on a full pipe: stdout for the {@code vgpu-worker served ...} summary,
 * stderr into a short tail that explains a failure. Both are logged at debug level.
 * {@link #close()} stops it: SIGTERM, then SIGKILL if it has not exited after a grace period.
 */
public final class LaunchedWorker implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(LaunchedWorker.class);
    /** A worker's line is short; longer ones are cut so a runaway worker cannot fill the lender's memory. */
    private static final int MAX_LINE_BYTES = 4096;

    private static final int STDERR_TAIL_LINES = 20;
    private static final Duration STOP_GRACE = Duration.ofSeconds(5);
    /** Output still in the pipes when a worker exits takes moments to read. */
    private static final Duration DRAIN_WAIT = Duration.ofSeconds(2);

    private final WorkerSpec spec;
    private final Process process;
    private final Instant startedAt;
    private final CompletableFuture<Endpoint> listening = new CompletableFuture<>();
    private final CompletableFuture<Void> stdoutDrained = new CompletableFuture<>();
    private final CompletableFuture<Void> stderrDrained = new CompletableFuture<>();
    private final CompletableFuture<LaunchedWorker> exited;
    private final Deque<String> stderrTail = new ArrayDeque<>();
    private volatile String servedSummary;
    private volatile Endpoint endpoint;
    private volatile Optional<CertificatePin> certificate = Optional.empty();

    private LaunchedWorker(WorkerSpec spec, Process process, Instant startedAt) {
        this.spec = spec;
        this.process = process;
        this.startedAt = startedAt;
        this.exited = process.onExit()
                .thenCompose(ended -> CompletableFuture.allOf(stdoutDrained, stderrDrained))
                .thenApply(drained -> this);
    }

    /** Starts reading a just-started worker's output; {@link #awaitListening} then waits for it to be ready. */
    static LaunchedWorker watch(WorkerSpec spec, Process process, Instant startedAt) {
        LaunchedWorker worker = new LaunchedWorker(spec, process, startedAt);
        worker.drain(process.getInputStream(), "stdout", worker::onStdoutLine, () -> {
            worker.listening.completeExceptionally(
                    new IllegalStateException("closed its output without reporting listening"));
            worker.stdoutDrained.complete(null);
        });
        worker.drain(
                process.getErrorStream(), "stderr", worker::onStderrLine, () -> worker.stderrDrained.complete(null));
        return worker;
    }

    /**
     * Waits for the listening line. On failure the process is stopped and the exception tells why,
     * with the end of the worker's stderr.
     *
     * @throws LendingException WORKER_NOT_STARTED when the worker exits, reports a bad endpoint or is not ready in time
     */
    LaunchedWorker awaitListening(Duration timeout) {
        try {
            endpoint = listening.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            LOG.debug(
                    "worker {} (pid {}) listening at {} after {} ms",
                    spec.workerId(),
                    process.pid(),
                    endpoint,
                    Duration.between(startedAt, Instant.now()).toMillis());
            return this;
        } catch (TimeoutException e) {
            close();
            throw failedToStart("did not report listening within " + timeout.toSeconds() + " s");
        } catch (ExecutionException e) {
            close();
            throw failedToStart(e.getCause().getMessage());
        } catch (InterruptedException e) {
            close();
            Thread.currentThread().interrupt();
            throw failedToStart("was stopped: the launch was interrupted");
        }
    }

    /** The address the worker reported listening on. */
    public Endpoint endpoint() {
        return endpoint;
    }

    public String workerId() {
        return spec.workerId();
    }

    /** The fingerprint of the worker's self-signed certificate, which its clients' tokens pin; empty without one. */
    public Optional<CertificatePin> certificate() {
        return certificate;
    }

    public WorkerSpec spec() {
        return spec;
    }

    public Process process() {
        return process;
    }

    public Instant startedAt() {
        return startedAt;
    }

    /** Completes once the process has exited and its output has been read to the end. */
    public CompletableFuture<LaunchedWorker> onExit() {
        return exited;
    }

    /** The worker's {@code vgpu-worker served ...} line, once it printed one (it does when it exits after a session). */
    public Optional<String> servedSummary() {
        return Optional.ofNullable(servedSummary);
    }

    /** The last lines the worker wrote to stderr, oldest first, one per line. */
    public String stderrTail() {
        synchronized (stderrTail) {
            return String.join("\n", stderrTail);
        }
    }

    /** Stops the worker if it still runs and waits until it has exited; SIGTERM first, SIGKILL after a grace period. */
    @Override
    public void close() {
        boolean interrupted = false;
        if (process.isAlive()) {
            process.destroy();
            try {
                if (!process.waitFor(STOP_GRACE.toMillis(), TimeUnit.MILLISECONDS)) {
                    LOG.warn(
                            "worker {} (pid {}) ignored SIGTERM for {} s, killing it",
                            spec.workerId(),
                            process.pid(),
                            STOP_GRACE.toSeconds());
                    process.destroyForcibly();
                    process.waitFor(STOP_GRACE.toMillis(), TimeUnit.MILLISECONDS);
                }
            } catch (InterruptedException e) {
                interrupted = true;
                process.destroyForcibly();
            }
        }
        try {
            exited.get(DRAIN_WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            interrupted = true;
        } catch (ExecutionException | TimeoutException e) {
            LOG.debug("worker {}: output not fully read after exit: {}", spec.workerId(), e.toString());
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return "worker " + spec.workerId() + " (device " + spec.device() + ", pid " + process.pid() + ", " + endpoint()
                + ")";
    }

    private void onStdoutLine(String line) {
        if (!listening.isDone() && line.startsWith(WorkerLauncher.LISTENING_PREFIX)) {
            try {
                listening.complete(Endpoint.parse(
                        line.substring(WorkerLauncher.LISTENING_PREFIX.length()).strip()));
            } catch (VgpuFailure e) {
                listening.completeExceptionally(new IllegalStateException("reported a bad endpoint: " + e.detail()));
            }
        } else if (!listening.isDone() && line.startsWith(WorkerLauncher.CERTIFICATE_PREFIX)) {
            try {
                certificate = Optional.of(CertificatePin.ofDigest(HexFormat.of()
                        .parseHex(line.substring(WorkerLauncher.CERTIFICATE_PREFIX.length())
                                .strip())));
            } catch (IllegalArgumentException | VgpuFailure e) {
                listening.completeExceptionally(new IllegalStateException("reported a bad certificate fingerprint"));
            }
        } else if (line.startsWith(WorkerLauncher.SERVED_PREFIX)) {
            servedSummary = line;
        } else {
            LOG.debug("worker {} stdout: {}", spec.workerId(), line);
        }
    }

    private void onStderrLine(String line) {
        synchronized (stderrTail) {
            if (stderrTail.size() == STDERR_TAIL_LINES) {
                stderrTail.removeFirst();
            }
            stderrTail.addLast(line);
        }
        LOG.debug("worker {} stderr: {}", spec.workerId(), line);
    }

    private void drain(InputStream stream, String name, Consumer<String> onLine, Runnable atEnd) {
        Thread.ofPlatform()
                .daemon()
                .name("worker-" + spec.workerId() + "-" + name)
                .start(() -> {
                    try (stream) {
                        BoundedLineReader reader = new BoundedLineReader(stream, MAX_LINE_BYTES);
                        for (BoundedLineReader.Line line = reader.readLine(); line != null; line = reader.readLine()) {
                            onLine.accept(line.truncated() ? line.text() + " [cut]" : line.text());
                        }
                    } catch (IOException e) {
                        LOG.debug("worker {}: reading {} ended: {}", spec.workerId(), name, e.toString());
                    } finally {
                        atEnd.run();
                    }
                });
    }

    private LendingException failedToStart(String reason) {
        String status = process.isAlive() ? "" : " (exit status " + process.exitValue() + ")";
        if (!process.isAlive()) {
            // Its stdout may close before the reader of its stderr has read what it wrote there last.
            awaitStderrRead();
        }
        String tail = stderrTail();
        return new LendingException(
                LendingException.Code.WORKER_NOT_STARTED,
                "GPU worker " + spec.workerId() + " on device "
                        + spec.device() + " " + reason + status
                        + (tail.isEmpty() ? "; it wrote nothing to stderr" : "; its stderr ended with:\n" + tail));
    }

    /** Waits up to 2 s for an exited worker's stderr to be read to its end. */
    private void awaitStderrRead() {
        try {
            stderrDrained.get(2, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            // The tail read so far is what the error carries.
        }
    }
}
