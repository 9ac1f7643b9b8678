package org.vgpu.tracker.hook;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

import org.vgpu.common.agent.AgentChannel;
import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.security.SessionToken;
import org.vgpu.common.security.SiteKey;
import org.vgpu.common.security.TokenVerifier;
import org.vgpu.tracker.ledger.Assembly;
import org.vgpu.tracker.ledger.Ledger;
import org.vgpu.tracker.ledger.Lend;

/**
 * What the jobs' migration agents say: who may speak for a job's vGPU, the figures of each vGPU from the newest
 * authenticated poll (the cost model's counters, and where it runs, which settles a migration whose {@code done}
 * never came), each job's end as its user hints it, and whether a job's agent has gone.
 *
 * <p>Not thread-safe: the tracker calls it under its lock.
 */
final class AgentReports {
    /**
     * A job's agent holds a poll nearly always (it polls again within a second of each reply): one that has held none
     * for this long has gone with its app (ended, or killed), and nothing is sent to it.
     */
    static final Duration AGENT_GONE_AFTER = Duration.ofSeconds(10);

    /** Tokens are checked for key, job, vGPU and worker, not expiry: a job's agent polls for as long as the job runs. */
    private static final Clock NO_EXPIRY = Clock.fixed(Instant.EPOCH, ZoneOffset.UTC);

    /** What the job's agent last said of one vGPU, and when. */
    record Report(AgentChannel.Stat stat, Instant at) {}

    private final Ledger ledger;
    private final SiteKey key;
    private final AgentMailbox mailbox;
    private final Map<Long, Map<Integer, Report>> reports = new HashMap<>();
    /** Each job's end as the user hints it, from its agent's newest poll (a poll without a hint drops it). */
    private final Map<Long, Instant> hintedEnds = new HashMap<>();

    AgentReports(Ledger ledger, SiteKey key, AgentMailbox mailbox) {
        this.ledger = Objects.requireNonNull(ledger, "ledger");
        this.key = Objects.requireNonNull(key, "key");
        this.mailbox = Objects.requireNonNull(mailbox, "mailbox");
    }

    /** See {@link MigrationHook#refusal}. */
    Optional<String> refusal(long job, int vgpu, String token) {
        Optional<Assembly> assembly = ledger.assembly(job);
        if (assembly.isEmpty() || assembly.get().phase() != Assembly.Phase.RELEASED) {
            return Optional.of("job " + job + " has no running vGPU assembly at this tracker");
        }
        List<String> workerIds = assembly.get().lend(vgpu).map(Lend::workerIds).orElse(List.of());
        if (workerIds.isEmpty()) {
            return Optional.of("job " + job + " has no borrowed vGPU " + vgpu);
        }
        String why = "";
        for (String workerId : workerIds) {
            try {
                SessionToken granted = new TokenVerifier(key.forLend(Long.toString(job), vgpu), workerId, NO_EXPIRY)
                        .verify(token, vgpu);
                if (!granted.jobId().equals(Long.toString(job))) {
                    return Optional.of(
                            "unauthenticated: the token is job " + granted.jobId() + "'s, not job " + job + "'s");
                }
                return Optional.empty();
            } catch (VgpuFailure e) {
                // The token may name an earlier worker of the lend: try those before refusing.
                why = why.isEmpty() ? e.detail() : why;
            }
        }
        return Optional.of("unauthenticated: " + why);
    }

    /** See {@link MigrationHook#report}. */
    void report(long job, List<AgentChannel.Stat> stats, Optional<Instant> hintedEnd, Instant now) {
        Map<Integer, Report> byVgpu = reports.computeIfAbsent(job, ignored -> new HashMap<>());
        for (AgentChannel.Stat stat : stats) {
            byVgpu.put(stat.vgpu(), new Report(stat, now));
        }
        hintedEnd.ifPresentOrElse(end -> hintedEnds.put(job, end), () -> hintedEnds.remove(job));
    }

    /** What the job's agent last reported of each of its vGPUs, by vGPU. */
    Map<Integer, AgentChannel.Stat> stats(long job) {
        Map<Integer, AgentChannel.Stat> stats = new HashMap<>();
        reports.getOrDefault(job, Map.of()).forEach((vgpu, report) -> stats.put(vgpu, report.stat()));
        return stats;
    }

    /** The agent's newest report of vGPU {@code vgpu} of job {@code job}, when it came after {@code since}. */
    Optional<Report> after(long job, int vgpu, Instant since) {
        return Optional.ofNullable(reports.getOrDefault(job, Map.of()).get(vgpu))
                .filter(candidate -> candidate.at().isAfter(since));
    }

    /** The cost model's counters of a borrowed vGPU, when the agent reported it remote. */
    Optional<MovePolicy.Counters> counters(long job, int vgpu) {
        Report report = reports.getOrDefault(job, Map.of()).get(vgpu);
        if (report == null || !(report.stat().where() instanceof AgentChannel.RemoteWorker)) {
            return Optional.empty();
        }
        return Optional.of(new MovePolicy.Counters(
                report.stat().remoteWaitMs(), report.stat().liveBytes()));
    }

    /** The job's end as its user hints it, from the agent's newest poll. */
    Optional<Instant> hintedEnd(long job) {
        return Optional.ofNullable(hintedEnds.get(job));
    }

    /** A vGPU moved: its counters were the old GPU's, and the agent's next poll says what runs where now. */
    void moved(long job, int vgpu) {
        reports.getOrDefault(job, new HashMap<>()).remove(vgpu);
    }

    /** The job ended: nothing it said counts any more. */
    void forget(long job) {
        reports.remove(job);
        hintedEnds.remove(job);
    }

    /** Why the agent that speaks for vGPU {@code vgpu} of job {@code job} cannot take a migration: it has stopped. */
    Optional<String> agentGone(long job, int vgpu) {
        if (mailbox.left(job, vgpu)) {
            return Optional.of("job " + job + "'s migration agent stopped: its app ended (an agent of a later step"
                    + " polls anew)");
        }
        return mailbox.silentFor(job, vgpu)
                .filter(silent -> silent.compareTo(AGENT_GONE_AFTER) > 0)
                .map(silent -> "job " + job + "'s migration agent stopped polling the tracker " + silent.toSeconds()
                        + " s ago (its app ended or was killed)");
    }
}
