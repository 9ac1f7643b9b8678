package org.vgpu.tracker.hook;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;

import org.vgpu.siteconfig.MigrationPolicy;

/**
 * Decides whether one of a running job's borrowed vGPUs moves onto a free GPU of the job's own
 * node now, and which: pure policy (no Slurm, no clock of its own), so the same situation always
 * gets the same decision.
 *
 * <p>A move pays when its <em>benefit</em>, the remote waiting it saves over the job's remaining
 * time, exceeds its <em>cost</em>, the time the app is blocked while it moves:
 * <pre>
 *   benefit = remaining × (remote-wait so far / run time so far)
 *   cost    = live bytes / mem_sync_bandwidth + replay_cost
 * </pre>
 * where remaining is the time left until the job's end: the time limit minus the run time, or the
 * user's hinted end ({@code vgpu run --expected-runtime}) minus now, whichever comes first;
 * {@link #UNLIMITED_HORIZON} for a job with neither. Where the user gave a hint, the decision's text
 * says which end counted ("hinted end in 3 min", "time limit in 55 min"). Hysteresis keeps anything
 * from ping-ponging: one migration per job at a time, none of a vGPU within {@code migration_cooldown}
 * of its last, none when less than {@code migration_end_guard} is left before that end. A vGPU whose
 * agent has not reported yet does not move: without its counters the benefit is unknown. Among
 * vGPUs whose move pays, the largest net gain (benefit − cost) moves first, ties to the lowest vGPU;
 * the target is the lowest free GPU index.
 */
public final class MovePolicy {
    /** The remaining time assumed for a job without a time limit or a hinted end. */
    public static final Duration UNLIMITED_HORIZON = Duration.ofDays(1);

    private final MigrationPolicy policy;

    public MovePolicy(MigrationPolicy policy) {
        this.policy = Objects.requireNonNull(policy, "policy");
    }

    /** What the job's agent last reported of one borrowed vGPU, cumulative since the vGPU was opened. */
    public record Counters(long remoteWaitMillis, long liveBytes) {
        public Counters {
            if (remoteWaitMillis < 0 || liveBytes < 0) {
                throw new IllegalArgumentException("counters must not be negative");
            }
        }
    }

    /** A borrowed vGPU of the job: its counters (empty before the agent's first report) and its last migration. */
    public record Candidate(int vgpu, Optional<Counters> counters, Optional<Instant> lastMigration) {
        public Candidate {
            Objects.requireNonNull(counters, "counters");
            Objects.requireNonNull(lastMigration, "lastMigration");
        }
    }

    /**
     * One job at one moment.
     *
     * @param ranFor        how long the job has run (Slurm's RunTime)
     * @param timeLimit     its time limit; empty when it has none
     * @param hintedEnd     when the user expects it to end (its agent's polls say); empty without a hint
     * @param freeGpus      GPU indices of the job's node that no job holds now
     * @param jobMigrating  whether one of the job's vGPUs is moving already
     * @param candidates    its borrowed vGPUs
     */
    public record Situation(
            Instant now,
            Duration ranFor,
            Optional<Duration> timeLimit,
            Optional<Instant> hintedEnd,
            List<Integer> freeGpus,
            boolean jobMigrating,
            List<Candidate> candidates) {
        public Situation {
            Objects.requireNonNull(now, "now");
            Objects.requireNonNull(ranFor, "ranFor");
            Objects.requireNonNull(timeLimit, "timeLimit");
            Objects.requireNonNull(hintedEnd, "hintedEnd");
            freeGpus = List.copyOf(freeGpus);
            candidates = List.copyOf(candidates);
        }
    }

    /** What to do now. */
    public sealed interface Decision {
        /** Why nothing moves, in words for {@code vgpu report} and the log. */
        String reason();

        record Move(int vgpu, int gpu, double benefitSeconds, double costSeconds, String reason) implements Decision {}

        record Stay(String reason) implements Decision {}
    }

    public Decision decide(Situation situation) {
        if (!policy.migrateHome()) {
            return new Decision.Stay("migrate_home is off");
        }
        if (situation.candidates().isEmpty()) {
            return new Decision.Stay("no borrowed vGPU");
        }
        if (situation.jobMigrating()) {
            return new Decision.Stay("a migration of this job is in progress");
        }
        if (situation.freeGpus().isEmpty()) {
            return new Decision.Stay("no free GPU on the job's node");
        }
        if (situation.ranFor().isZero() || situation.ranFor().isNegative()) {
            return new Decision.Stay("the job has not run long enough to measure its remote penalty");
        }
        Remaining remaining = Remaining.of(situation);
        if (remaining.guarded() && remaining.time().compareTo(policy.endGuard()) < 0) {
            return new Decision.Stay("less than migration_end_guard (" + describe(policy.endGuard()) + ") "
                    + remaining.guardText() + " ("
                    + describe(remaining.time().isNegative() ? Duration.ZERO : remaining.time()) + ")");
        }
        int gpu =
                situation.freeGpus().stream().mapToInt(Integer::intValue).min().orElseThrow();
        List<String> stays = new ArrayList<>();
        Decision.Move best = null;
        for (Candidate candidate : situation.candidates()) {
            if (candidate.counters().isEmpty()) {
                stays.add("vGPU " + candidate.vgpu() + ": its agent has not reported yet");
                continue;
            }
            Optional<Instant> coolUntil = candidate.lastMigration().map(last -> last.plus(policy.cooldown()));
            if (coolUntil.isPresent() && situation.now().isBefore(coolUntil.get())) {
                stays.add("vGPU " + candidate.vgpu() + ": moved less than migration_cooldown ("
                        + describe(policy.cooldown()) + ") ago");
                continue;
            }
            Counters counters = candidate.counters().get();
            double penalty =
                    counters.remoteWaitMillis() / (double) situation.ranFor().toMillis();
            double benefit = seconds(remaining.time()) * penalty;
            double cost = counters.liveBytes() / (double) policy.memSyncBytesPerSecond() + seconds(policy.replayCost());
            String figures = String.format(
                    Locale.ROOT,
                    "saves %.1f s (%.1f ms remote wait per s over %.0f s left%s), costs %.1f s (%d live bytes)",
                    benefit,
                    penalty * 1000,
                    seconds(remaining.time()),
                    remaining.named(),
                    cost,
                    counters.liveBytes());
            if (benefit <= cost) {
                stays.add("vGPU " + candidate.vgpu() + ": the move does not pay: " + figures);
                continue;
            }
            Decision.Move move = new Decision.Move(
                    candidate.vgpu(),
                    gpu,
                    benefit,
                    cost,
                    "vGPU " + candidate.vgpu() + " moves home to GPU " + gpu + ": " + figures);
            if (best == null || gain(move) > gain(best) || (gain(move) == gain(best) && move.vgpu() < best.vgpu())) {
                best = move;
            }
        }
        return best != null ? best : new Decision.Stay(String.join("; ", stays));
    }

    /**
     * The time the move has to pay off, and which end bounds it.
     *
     * @param guarded   whether the job has an end, so that the end guard applies
     * @param guardText how the end guard's text names the time left
     * @param named     for the figures, where the user gave a hint: which end counted and when it comes; else empty
     */
    private record Remaining(Duration time, boolean guarded, String guardText, String named) {
        static Remaining of(Situation situation) {
            Optional<Duration> untilLimit = situation.timeLimit().map(limit -> limit.minus(situation.ranFor()));
            Optional<Duration> untilHint = situation.hintedEnd().map(end -> Duration.between(situation.now(), end));
            if (untilHint.isPresent()
                    && (untilLimit.isEmpty() || untilHint.get().compareTo(untilLimit.get()) <= 0)) {
                return new Remaining(
                        untilHint.get(),
                        true,
                        "is left before the job's hinted end",
                        ": hinted end in " + humanly(untilHint.get()));
            }
            if (untilLimit.isPresent()) {
                return new Remaining(
                        untilLimit.get(),
                        true,
                        "of the job's time limit is left",
                        untilHint.isPresent() ? ": time limit in " + humanly(untilLimit.get()) : "");
            }
            return new Remaining(UNLIMITED_HORIZON, false, "", "");
        }
    }

    /** A time left as a person says it: {@code 40 s}, {@code 3 min}, {@code 2 h 5 min}, {@code 3 d 4 h}. */
    static String humanly(Duration duration) {
        long seconds = Math.max(0, duration.toSeconds());
        if (seconds < 60) {
            return seconds + " s";
        }
        if (seconds < 3600) {
            return seconds / 60 + " min";
        }
        if (seconds < 86_400) {
            return seconds / 3600 + " h" + (seconds % 3600 / 60 == 0 ? "" : " " + seconds % 3600 / 60 + " min");
        }
        return seconds / 86_400 + " d" + (seconds % 86_400 / 3600 == 0 ? "" : " " + seconds % 86_400 / 3600 + " h");
    }

    private static double gain(Decision.Move move) {
        return move.benefitSeconds() - move.costSeconds();
    }

    private static double seconds(Duration duration) {
        return duration.toMillis() / 1000.0;
    }

    private static String describe(Duration duration) {
        return duration.toSeconds() + " s";
    }
}
