package org.vgpu.tracker.server;

import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.line.LineServer;
import org.vgpu.common.net.Endpoint;
import org.vgpu.tracker.Tracker;
import org.vgpu.tracker.ledger.Ledger;
import org.vgpu.tracker.ledger.LedgerException;

/**
 * {@code vgpu tracker} running: one thread that ticks the {@link Tracker} every poll interval (and
 * at once after a {@code done}), and the tracker's socket. Slurm failing in a tick is logged and
 * tried again at the next one; the ledger failing stops the tracker, which must not act on what
 * it cannot record.
 */
public final class TrackerDaemon implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(TrackerDaemon.class);
    /**
     * SPANK requests are one short line, a MUNGE credential included; the bridge contract bounds them. Each running
     * job's migration agent keeps one connection, held up to the agent hold time (20 s) per poll and busy meanwhile,
     * so the idle timeout (between requests) never closes it; 1024 connections leave room for many such jobs beside
     * the bridges' requests.
     */
    static final LineServer.Limits SOCKET_LIMITS =
            new LineServer.Limits("tracker", BridgeContract.REQUEST_LINE_BYTES, 1024, Duration.ofSeconds(30));

    private final Tracker tracker;
    private final Ledger ledger;
    private final Duration poll;
    private final Semaphore wake = new Semaphore(0);
    private final AtomicBoolean closing = new AtomicBoolean();
    private final Thread loop;
    private volatile LineServer server;
    private volatile RuntimeException fatal;

    private TrackerDaemon(Tracker tracker, Ledger ledger, Duration poll) {
        this.tracker = tracker;
        this.ledger = ledger;
        this.poll = poll;
        this.loop = Thread.ofPlatform().name("tracker-loop").unstarted(this::loop);
    }

    /**
     * Reconciles with Slurm (the first tick, which must succeed), then listens and starts ticking.
     *
     * @throws RuntimeException when the first look at Slurm fails or the socket cannot be bound; the ledger is closed then
     */
    public static TrackerDaemon start(
            Tracker tracker,
            Ledger ledger,
            Endpoint listen,
            Duration poll,
            Optional<MungeVerifier> munge,
            Set<String> trustedUsers) {
        return start(tracker, ledger, listen, poll, munge, trustedUsers, SOCKET_LIMITS);
    }

    /**
     * {@link #start} with other socket limits: the bounds test waits for an idle connection to be closed in a second
     * rather than in {@link #SOCKET_LIMITS}' 30.
     */
    static TrackerDaemon start(
            Tracker tracker,
            Ledger ledger,
            Endpoint listen,
            Duration poll,
            Optional<MungeVerifier> munge,
            Set<String> trustedUsers,
            LineServer.Limits limits) {
        TrackerDaemon daemon = new TrackerDaemon(tracker, ledger, poll);
        try {
            tracker.tick();
            daemon.server = LineServer.start(
                    listen,
                    limits,
                    new TrackerProtocol(tracker, daemon::wake, limits.maxRequestBytes(), munge, trustedUsers));
        } catch (RuntimeException e) {
            ledger.close();
            throw e;
        }
        daemon.loop.start();
        return daemon;
    }

    public Endpoint endpoint() {
        return server.endpoint();
    }

    /** Blocks until the daemon is closed or stopped itself; returns why it stopped itself, or null. */
    public RuntimeException awaitStop() throws InterruptedException {
        loop.join();
        return fatal;
    }

    void wake() {
        wake.release();
    }

    private void loop() {
        while (!closing.get()) {
            try {
                wake.tryAcquire(poll.toMillis(), TimeUnit.MILLISECONDS);
                wake.drainPermits();
            } catch (InterruptedException e) {
                break;
            }
            if (closing.get()) {
                break;
            }
            try {
                tracker.tick();
            } catch (LedgerException e) {
                LOG.error(
                        "the ledger failed; the tracker stops rather than act on what it cannot record: {}",
                        e.getMessage());
                fatal = e;
                closeServer();
                break;
            } catch (RuntimeException e) {
                LOG.warn("tick failed, trying again in {} s: {}", poll.toSeconds(), e.getMessage());
            }
        }
    }

    @Override
    public void close() {
        if (!closing.compareAndSet(false, true)) {
            return;
        }
        closeServer();
        loop.interrupt();
        try {
            loop.join(Duration.ofSeconds(30));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        ledger.close();
    }

    private void closeServer() {
        LineServer current = server;
        if (current != null) {
            current.close();
        }
    }
}
