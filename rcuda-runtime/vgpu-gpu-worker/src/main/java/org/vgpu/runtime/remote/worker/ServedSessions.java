package org.vgpu.runtime.remote.worker;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

import io.netty.channel.Channel;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.runtime.remote.protocol.Hello;

/**
 * A worker's sessions: which ones an accepted HELLO claimed and that run now, which ones exclude each other, and what
 * the ended ones served, all together. {@link GpuWorker} decides when a session starts and ends; this keeps the count.
 */
final class ServedSessions {
    /**
     * One session: its connection, what completes when it has ended and freed its vGPU, and whether it is leaving: its
     * client said goodbye or went away, so its end is coming and a next session of its vGPU may wait for it.
     */
    record LiveSession(Channel channel, CompletableFuture<WorkerReport> end, AtomicBoolean leaving) {
        LiveSession(Channel channel) {
            this(channel, new CompletableFuture<>(), new AtomicBoolean());
        }

        /** Its client said goodbye or went away; set before the goodbye is answered, so before a next client comes. */
        void leave() {
            leaving.set(true);
        }

        boolean isLeaving() {
            return leaving.get();
        }
    }

    private final GpuWorker.Sessions sessions;
    /**
     * The sessions claimed by an accepted HELLO, by {@link #claimKey}: for {@link GpuWorker.Sessions#ONE} the one
     * session stays here when it has ended, so that no second one is served.
     */
    private final Map<Integer, LiveSession> live = new ConcurrentHashMap<>();
    /** Whether any HELLO was accepted, for a one-session worker's wait for its client. */
    private final AtomicBoolean anySession = new AtomicBoolean();

    private final Object servedLock = new Object();
    /** What the sessions that ended served, all together. Guarded by {@link #servedLock}. */
    private WorkerReport served = new WorkerReport(0, 0, 0, 0, true, "no session yet");
    /** Guarded by {@link #servedLock}. */
    private int endedSessions;

    ServedSessions(GpuWorker.Sessions sessions) {
        this.sessions = sessions;
    }

    /**
     * Which sessions exclude each other: all of a worker's, or, for {@link GpuWorker.Sessions#ONE_PER_VGPU}, those of
     * one vGPU.
     */
    int claimKey(Hello hello) {
        return sessions == GpuWorker.Sessions.ONE_PER_VGPU ? hello.window().vgpuIndex() : 0;
    }

    /** The session of {@code channel}, claimed under {@code key}; empty when another session holds that key. */
    Optional<LiveSession> claim(int key, Channel channel) {
        LiveSession claim = new LiveSession(channel);
        if (live.putIfAbsent(key, claim) != null) {
            return Optional.empty();
        }
        anySession.set(true);
        return Optional.of(claim);
    }

    /** The session that holds {@code key} now, if any. */
    Optional<LiveSession> holder(int key) {
        return Optional.ofNullable(live.get(key));
    }

    /** Whether any HELLO was ever accepted. */
    boolean anyClaimed() {
        return anySession.get();
    }

    /** The sessions that run now. */
    List<LiveSession> running() {
        return List.copyOf(live.values());
    }

    /** Adds an ended session's figures to the others'; returns how many sessions have ended. */
    int addEnded(WorkerReport session) {
        synchronized (servedLock) {
            served = served.plus(session);
            return ++endedSessions;
        }
    }

    /**
     * Frees {@code key} for the next session, once {@code ended} is over: before its end completes, so that a session
     * waiting for that end finds the key free.
     */
    void release(int key, LiveSession ended) {
        live.remove(key, ended);
    }

    /** Every ended session's figures together; clean, since a holder's worker ends when its holder does. */
    WorkerReport servedSoFar(String reason) {
        synchronized (servedLock) {
            return new WorkerReport(
                    served.calls(),
                    served.bytesIn(),
                    served.bytesOut(),
                    served.busyNanos(),
                    true,
                    reason + " after " + endedSessions + " session(s)");
        }
    }

    /**
     * Closes the connection of every session that runs, and waits for each to end (its GPU thread frees the vGPU
     * first), at most 10 s each; {@code log} hears of one that does not end so, or ends with a failure.
     */
    void endAll(Consumer<String> log) {
        List<LiveSession> running = running();
        running.forEach(session -> session.channel().close());
        for (LiveSession session : running) {
            try {
                session.end().get(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (TimeoutException e) {
                log.accept("the session did not end within 10 s of closing");
            } catch (ExecutionException e) {
                log.accept("the session ended with a failure: " + VgpuFailure.describe(e.getCause()));
            }
        }
    }

    /**
     * Waits until the sessions that run now have ended, at most {@code bound} in all.
     *
     * @return whether none of them runs any more
     */
    boolean awaitEnd(Duration bound) throws InterruptedException {
        // in nanoseconds: whole milliseconds would cut the wait short of the bound by up to one
        long deadline = System.nanoTime() + bound.toNanos();
        for (LiveSession session : running()) {
            try {
                session.end().get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                return false;
            } catch (ExecutionException e) {
                // ended, with a failure the session's own report tells
            }
        }
        return true;
    }
}
