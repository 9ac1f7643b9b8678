package org.vgpu.migration.agent;

import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.agent.AgentChannel;
import org.vgpu.common.agent.AgentChannel.Bye;
import org.vgpu.common.agent.AgentChannel.Credential;
import org.vgpu.common.agent.AgentChannel.Done;
import org.vgpu.common.agent.AgentChannel.DoneReply;
import org.vgpu.common.agent.AgentChannel.Failed;
import org.vgpu.common.agent.AgentChannel.Migrate;
import org.vgpu.common.agent.AgentChannel.Outcome;
import org.vgpu.common.agent.AgentChannel.Poll;
import org.vgpu.common.agent.AgentChannel.PollReply;
import org.vgpu.common.agent.AgentChannel.Stat;
import org.vgpu.common.agent.AgentChannel.Succeeded;
import org.vgpu.common.error.InputException;
import org.vgpu.common.error.NetworkException;
import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.line.LineClient;
import org.vgpu.common.net.Endpoint;
import org.vgpu.migration.MigratableGpu;
import org.vgpu.migration.MigrationReport;
import org.vgpu.migration.MigrationTarget;
import org.vgpu.runtime.remote.client.RemoteCounters;

/**
 * The job's end of the tracker channel ({@link AgentChannel}): compute nodes may reach the tracker, the tracker may not
 * open connections into jobs, so a daemon virtual thread long-polls it, sending each vGPU's figures, and carries out
 * the migrations it answers with, through {@link MigratableGpu#migrate}, the same path as the agent socket's
 * {@code migrate}. A command runs only when its mac verifies under the job's session token (only the tracker, which
 * checks tokens, knows it) and names a vGPU of the job; any other is refused and reported as failed. Before a move
 * to {@code local:<gpu>} the node GPU is granted to the job's runtime ({@link TrackerGrants}), and the grant withdrawn
 * when the move fails; a remote target's session token is handed to the job's workers' credentials.
 *
 * <p>The tracker being away never stops or slows the app: the link retries with a backoff of 1 s doubling to 30 s,
 * logs once when the tracker is lost and once when it answers again; a tracker that answers {@code ok idle} without
 * holding the poll is asked at most once a second. A move's outcome is retried the same way until
 * the tracker has it.
 */
public final class TrackerLink implements AutoCloseable {
    /** The tracker holds a poll up to {@link AgentChannel#HOLD_SECONDS}; the reply may take this much longer. */
    static final Duration READ_MARGIN = Duration.ofSeconds(15);

    static final Duration FIRST_BACKOFF = Duration.ofSeconds(1);
    /** How long the app's end waits for the tracker to take its bye. */
    private static final Duration BYE_TIMEOUT = Duration.ofSeconds(2);

    static final Duration LAST_BACKOFF = Duration.ofSeconds(30);

    private static final Logger LOG = LoggerFactory.getLogger(TrackerLink.class);
    private static final SecureRandom NONCES = new SecureRandom();
    private static final int NONCE_BYTES = 16;

    /** Where the tracker listens: {@code HOST:PORT} or {@code unix:/PATH}, as VGPU_TRACKER gives it. */
    public record Address(Optional<Endpoint> tcp, Optional<Path> unix) {
        private static final String UNIX_PREFIX = "unix:";

        /** @throws InputException when the text is neither form */
        public static Address parse(String text) {
            if (text != null && text.startsWith(UNIX_PREFIX + "/")) {
                return new Address(Optional.empty(), Optional.of(Path.of(text.substring(UNIX_PREFIX.length()))));
            }
            Endpoint endpoint = Endpoint.parse(text);
            if (endpoint.port() == 0) {
                throw new InputException("the tracker's address needs a port, got '" + text + "'");
            }
            return new Address(Optional.of(endpoint), Optional.empty());
        }

        List<String> request(String line, Duration timeout) {
            return tcp.isPresent()
                    ? LineClient.request(tcp.get(), line, timeout)
                    : LineClient.request(unix.orElseThrow(), line, timeout);
        }

        @Override
        public String toString() {
            return tcp.map(Endpoint::toString).orElseGet(() -> UNIX_PREFIX + unix.orElseThrow());
        }
    }

    private final Address tracker;
    private final Credential credential;
    private final Optional<Instant> expectedEnd;
    private final List<MigratableGpu> vgpus;
    private final TrackerGrants grants;
    private final Duration firstBackoff;
    private final Duration lastBackoff;
    private final Object state = new Object();
    private final Thread thread;

    /** Guarded by {@link #state}. */
    private boolean closed;
    /** Guarded by {@link #state}: a migration runs, which an interrupt must not disturb. */
    private boolean migrating;
    /** The problem last logged (tracker unreachable, polls refused); null while the tracker answers. */
    private String problem;

    private TrackerLink(
            Address tracker,
            Credential credential,
            Optional<Instant> expectedEnd,
            List<MigratableGpu> vgpus,
            TrackerGrants grants,
            Duration firstBackoff,
            Duration lastBackoff) {
        this.tracker = Objects.requireNonNull(tracker, "tracker");
        this.credential = Objects.requireNonNull(credential, "credential");
        this.expectedEnd = Objects.requireNonNull(expectedEnd, "expectedEnd");
        this.vgpus = List.copyOf(vgpus);
        this.grants = Objects.requireNonNull(grants, "grants");
        this.firstBackoff = firstBackoff;
        this.lastBackoff = lastBackoff;
        this.thread = Thread.ofVirtual().name("vgpu-tracker-link").unstarted(this::run);
    }

    /**
     * Starts polling {@code tracker} for the job's commands.
     *
     * @param credential  the job, one of its borrowed vGPUs and that vGPU's session token: who polls, and the mac key
     * @param expectedEnd when the user expects the job to end (vgpu run --expected-runtime, VGPU_EXPECTED_RUNTIME),
     *                    sent in every poll for the tracker's cost model; empty: no hint
     * @param vgpus       the job's vGPUs, which commands name by index
     */
    public static TrackerLink start(
            Address tracker,
            Credential credential,
            Optional<Instant> expectedEnd,
            List<MigratableGpu> vgpus,
            TrackerGrants grants) {
        return start(tracker, credential, expectedEnd, vgpus, grants, FIRST_BACKOFF, LAST_BACKOFF);
    }

    /** With another backoff, for tests. */
    static TrackerLink start(
            Address tracker,
            Credential credential,
            Optional<Instant> expectedEnd,
            List<MigratableGpu> vgpus,
            TrackerGrants grants,
            Duration firstBackoff,
            Duration lastBackoff) {
        TrackerLink link = new TrackerLink(tracker, credential, expectedEnd, vgpus, grants, firstBackoff, lastBackoff);
        link.thread.start();
        LOG.info(
                "polling the tracker at {} for job {}'s migrations (as vGPU {}){}",
                tracker,
                credential.job(),
                credential.vgpu(),
                expectedEnd.map(end -> ", expecting the job to end at " + end).orElse(""));
        return link;
    }

    private void run() {
        Duration backoff = firstBackoff;
        while (!isClosed()) {
            long asked = System.nanoTime();
            String nonce = HexFormat.of().formatHex(randomBytes());
            String line = Poll.fitting(credential, nonce, expectedEnd, stats()).format();
            PollReply reply;
            try {
                reply = AgentChannel.parsePollReply(tracker.request(
                                line,
                                Duration.ofSeconds(AgentChannel.HOLD_SECONDS).plus(READ_MARGIN))
                        .getLast());
            } catch (NetworkException | AgentChannel.ParseError e) {
                if (isClosed()) {
                    return;
                }
                troubled("the tracker at " + tracker + " cannot be asked for migrations: " + e.detail());
                backoff = pause(backoff);
                continue;
            }
            switch (reply) {
                case AgentChannel.Idle idle -> {
                    answered();
                    backoff = firstBackoff;
                    // a tracker that answers at once instead of holding the poll is not asked in a busy loop
                    Duration early = firstBackoff.minusNanos(System.nanoTime() - asked);
                    if (early.isPositive()) {
                        pause(early);
                    }
                }
                case AgentChannel.Refused refused -> {
                    troubled("the tracker at " + tracker + " refuses job " + credential.job() + "'s polls: "
                            + refused.reason());
                    backoff = pause(backoff);
                }
                case Migrate command -> {
                    answered();
                    backoff = firstBackoff;
                    carryOut(command, nonce);
                }
            }
        }
    }

    /** Runs a command that verifies, refuses any other, and tells the tracker the outcome. */
    private void carryOut(Migrate command, String nonce) {
        Outcome outcome;
        if (!AgentChannel.verify(credential.token(), nonce, command)) {
            LOG.warn(
                    "refused migration {} of vGPU {} to {}: its mac does not verify, so it is not the tracker's",
                    command.id(),
                    command.vgpu(),
                    command.target());
            outcome = new Failed(
                    "the command's mac does not verify: the job's agent takes migrations only from the" + " tracker");
        } else {
            Optional<MigratableGpu> gpu = vgpus.stream()
                    .filter(candidate -> candidate.vgpuIndex() == command.vgpu())
                    .findFirst();
            if (gpu.isEmpty()) {
                LOG.warn("refused migration {}: job {} has no vGPU {}", command.id(), credential.job(), command.vgpu());
                outcome = new Failed("job " + credential.job() + " has no vGPU " + command.vgpu());
            } else {
                outcome = migrate(gpu.get(), command);
            }
        }
        report(new Done(credential, command.id(), outcome));
    }

    private Outcome migrate(MigratableGpu gpu, Migrate command) {
        synchronized (state) {
            if (closed) {
                return new Failed("the job's vGPUs are closing");
            }
            migrating = true;
        }
        boolean grantedHere = false;
        try {
            MigrationTarget target = switch (command.target()) {
                case AgentChannel.LocalGpu local -> {
                    grantedHere = grants.grantLocalGpu(local.gpu());
                    yield new MigrationTarget.LocalGpu(local.gpu());
                }
                case AgentChannel.RemoteTarget remote -> {
                    grants.grantWorker(command.vgpu(), remote.endpoint(), remote.sessionToken());
                    yield new MigrationTarget.RemoteWorker(remote.endpoint());
                }
            };
            LOG.info("the tracker moves vGPU {} to {} (migration {})", command.vgpu(), target, command.id());
            MigrationReport report = gpu.migrate(target);
            return new Succeeded(report.blocked().toMillis(), report.memSyncBytes());
        } catch (RuntimeException e) {
            if (grantedHere && command.target() instanceof AgentChannel.LocalGpu local) {
                grants.withdrawLocalGpu(local.gpu());
            }
            if (!(e instanceof VgpuFailure)) {
                LOG.warn("migration {} of vGPU {} failed unexpectedly", command.id(), command.vgpu(), e);
            }
            return Failed.because(VgpuFailure.describe(e));
        } finally {
            synchronized (state) {
                migrating = false;
                if (closed) {
                    // close() left this thread alone while it migrated; it ends now
                    thread.interrupt();
                }
            }
        }
    }

    /** Sends {@code done} until the tracker has it (or refuses it), backing off while it cannot be reached. */
    private void report(Done done) {
        Duration backoff = firstBackoff;
        while (!isClosed()) {
            try {
                DoneReply reply = AgentChannel.parseDoneReply(
                        tracker.request(done.format(), Duration.ofSeconds(AgentChannel.HOLD_SECONDS))
                                .getLast());
                answered();
                if (reply instanceof AgentChannel.Refused refused) {
                    LOG.warn("the tracker refused the outcome of migration {}: {}", done.id(), refused.reason());
                }
                return;
            } catch (NetworkException | AgentChannel.ParseError e) {
                if (isClosed()) {
                    return;
                }
                troubled("the tracker at " + tracker + " cannot be told how migration " + done.id() + " ended: "
                        + e.detail());
                backoff = pause(backoff);
            }
        }
    }

    /** Each vGPU's figures, where they fit the channel (a worker host outside its grammar leaves its vGPU out). */
    private List<Stat> stats() {
        List<Stat> stats = new ArrayList<>();
        for (MigratableGpu gpu : vgpus) {
            try {
                AgentChannel.Where where = switch (gpu.placement()) {
                    case MigrationTarget.LocalGpu local -> new AgentChannel.LocalGpu(local.index());
                    case MigrationTarget.RemoteWorker remote -> new AgentChannel.RemoteWorker(remote.endpoint());
                };
                RemoteCounters counters = gpu.remoteCounters();
                stats.add(new Stat(
                        gpu.vgpuIndex(),
                        where,
                        counters.calls(),
                        counters.bytes(),
                        counters.waitMillis(),
                        gpu.liveBytes()));
            } catch (IllegalArgumentException offTheGrammar) {
                LOG.debug("vGPU {} left out of the poll: {}", gpu.vgpuIndex(), offTheGrammar.getMessage());
            }
        }
        return stats;
    }

    /** Logs a problem once, until the tracker answers again. */
    private void troubled(String what) {
        if (problem == null) {
            LOG.warn(
                    "{}; the job runs on, and the agent retries every {} to {} s",
                    what,
                    firstBackoff.toSeconds(),
                    lastBackoff.toSeconds());
        }
        problem = what;
    }

    private void answered() {
        if (problem != null) {
            LOG.info("the tracker at {} answers again", tracker);
            problem = null;
        }
    }

    /** Sleeps {@code backoff}, unless closed meanwhile; the next backoff, doubled up to the last. */
    private Duration pause(Duration backoff) {
        try {
            Thread.sleep(backoff);
        } catch (InterruptedException e) {
            // close() interrupts: the loop sees it is closed
        }
        Duration doubled = backoff.multipliedBy(2);
        return doubled.compareTo(lastBackoff) > 0 ? lastBackoff : doubled;
    }

    private boolean isClosed() {
        synchronized (state) {
            return closed;
        }
    }

    private static byte[] randomBytes() {
        byte[] bytes = new byte[NONCE_BYTES];
        NONCES.nextBytes(bytes);
        return bytes;
    }

    /**
     * Stops polling, then tells the tracker the agent stops ({@code agent bye}); a migration in progress finishes
     * first (its outcome is not sent). Idempotent.
     */
    @Override
    public void close() {
        synchronized (state) {
            if (closed) {
                return;
            }
            closed = true;
            if (!migrating) {
                thread.interrupt();
            }
        }
        try {
            thread.join(Duration.ofSeconds(10));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        sayBye();
    }

    /**
     * One try, briefly: the app is ending and must not wait for a tracker that does not answer; such a tracker learns
     * it from the agent's silence instead.
     */
    private void sayBye() {
        try {
            DoneReply reply = AgentChannel.parseDoneReply(
                    tracker.request(new Bye(credential).format(), BYE_TIMEOUT).getLast());
            if (reply instanceof AgentChannel.Refused refused) {
                LOG.debug("the tracker refused the agent's bye: {}", refused.reason());
            }
        } catch (NetworkException | AgentChannel.ParseError e) {
            LOG.debug("the tracker at {} was not told that the agent stops: {}", tracker, e.detail());
        }
    }
}
