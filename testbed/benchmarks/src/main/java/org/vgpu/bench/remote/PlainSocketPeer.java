package org.vgpu.bench.remote;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.vgpu.common.error.IoReasons;
import org.vgpu.common.error.NetworkException;
import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.net.Endpoint;
import org.vgpu.runtime.remote.lender.WorkerLauncher;

/**
 * The plain-socket baseline's {@link PlainSocketBaseline.Server server} in a process of its own,
 * which {@code vgpu remote-bench} starts beside the GPU worker it measures, so that the worker, a
 * product process, knows nothing of baselines. Its command line is
 * {@code java -cp CLASSPATH org.vgpu.bench.remote.PlainSocketPeer HOST}: it listens on a free port of
 * HOST, prints {@value #LISTENING_PREFIX}{@code HOST:PORT}, listens for the {@link NettyEcho} rung on another and
 * prints {@value #ECHO_PREFIX}{@code HOST:PORT}, and serves until its standard input ends.
 * The benchmark holds that input open, so a peer never outlives its benchmark, also one that was
 * killed.
 */
public final class PlainSocketPeer implements AutoCloseable {
    static final String LISTENING_PREFIX = "vgpu-plain-socket listening ";
    static final String ECHO_PREFIX = "vgpu-netty-echo listening ";
    private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration STOP_GRACE = Duration.ofSeconds(5);

    private final Process process;
    private final Endpoint endpoint;
    private final Endpoint nettyEcho;

    private PlainSocketPeer(Process process, Endpoint endpoint, Endpoint nettyEcho) {
        this.process = process;
        this.endpoint = endpoint;
        this.nettyEcho = nettyEcho;
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: PlainSocketPeer HOST   (serves the plain-socket baseline until stdin ends)");
            System.exit(2);
        }
        try (PlainSocketBaseline.Server server = PlainSocketBaseline.Server.start(args[0], 0);
                NettyEcho.Server echo = NettyEcho.Server.start(args[0])) {
            System.out.println(LISTENING_PREFIX + new Endpoint(args[0], server.port()));
            System.out.println(ECHO_PREFIX + new Endpoint(args[0], echo.port()));
            System.out.flush();
            System.in.transferTo(OutputStream.nullOutputStream());
        }
    }

    /**
     * Starts a peer listening on {@code host}, with this JVM's java and class path, and returns once
     * it listens.
     *
     * @throws NetworkException when it cannot be started or does not report listening in time
     */
    public static PlainSocketPeer start(String host) {
        List<String> command = new ArrayList<>(WorkerLauncher.javaCommand(PlainSocketPeer.class.getName()));
        command.add(host);
        Process process;
        try {
            process = new ProcessBuilder(command)
                    .redirectError(ProcessBuilder.Redirect.INHERIT)
                    .start();
        } catch (IOException e) {
            throw new NetworkException(
                    NetworkException.Code.CANNOT_LISTEN,
                    "the plain-socket peer could not be started (" + command.getFirst() + "): " + IoReasons.of(e),
                    e);
        }
        BufferedReader output =
                new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        CompletableFuture<List<String>> firstLines = CompletableFuture.supplyAsync(
                () -> {
                    try {
                        List<String> lines = new ArrayList<>();
                        while (lines.size() < 2) {
                            String line = output.readLine();
                            if (line == null) {
                                break;
                            }
                            if (isJvmLog(line)) {
                                // the JVM's own (a flight recording's start, -Xlog): passed on, not parsed
                                System.err.println("plain-socket peer: " + line);
                            } else {
                                lines.add(line);
                            }
                        }
                        return lines;
                    } catch (IOException e) {
                        return List.of();
                    }
                },
                Thread::startVirtualThread);
        PlainSocketPeer peer = new PlainSocketPeer(process, null, null);
        try {
            List<String> lines = firstLines.get(STARTUP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            return new PlainSocketPeer(
                    process, listening(lines, 0, LISTENING_PREFIX), listening(lines, 1, ECHO_PREFIX));
        } catch (TimeoutException e) {
            peer.close();
            throw notListening("it did not report listening within " + STARTUP_TIMEOUT.toSeconds() + " s");
        } catch (IllegalStateException e) {
            peer.close();
            throw notListening(e.getMessage());
        } catch (VgpuFailure e) {
            peer.close();
            throw notListening("it printed a bad address: " + e.detail());
        } catch (ExecutionException e) {
            peer.close();
            throw notListening("its output could not be read");
        } catch (InterruptedException e) {
            peer.close();
            Thread.currentThread().interrupt();
            throw notListening("the start was interrupted");
        }
    }

    /** Whether {@code line} is the JVM's unified logging ({@code [0.420s][info][jfr,startup] ...}), not the peer's. */
    static boolean isJvmLog(String line) {
        return line.matches("\\[[^\\]]*\\]\\[.*");
    }

    /** The address line {@code index} of the peer's output gives after {@code prefix}. */
    private static Endpoint listening(List<String> lines, int index, String prefix) {
        if (lines.size() <= index) {
            throw new IllegalStateException("it exited without listening (its stderr is above)");
        }
        String line = lines.get(index);
        if (!line.startsWith(prefix)) {
            throw new IllegalStateException("it printed '" + line + "' instead of where it listens");
        }
        return Endpoint.parse(line.substring(prefix.length()));
    }

    private static NetworkException notListening(String reason) {
        return new NetworkException(
                NetworkException.Code.CANNOT_LISTEN, "the plain-socket peer did not start: " + reason);
    }

    /** Where the peer listens. */
    public Endpoint endpoint() {
        return endpoint;
    }

    /** Where the peer's {@link NettyEcho} server listens. */
    public Endpoint nettyEcho() {
        return nettyEcho;
    }

    /** Ends the peer's input, so it stops; kills it if it has not after a grace period. */
    @Override
    public void close() {
        try {
            process.getOutputStream().close();
            if (!process.waitFor(STOP_GRACE.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
            }
        } catch (IOException e) {
            process.destroyForcibly();
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
