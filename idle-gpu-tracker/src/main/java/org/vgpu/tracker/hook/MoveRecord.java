package org.vgpu.tracker.hook;

import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * One migration as {@code vgpu report} and {@code vgpu migrate}'s progress show it.
 *
 * @param from        {@code NODE:GPU} the vGPU ran on (its lender's GPU)
 * @param to          {@code NODE:GPU}, or {@code NODE:?} until the grant holder runs
 * @param direction   {@code home} (onto a GPU of the job's node) or {@code remote} (lender to lender)
 * @param by          {@code hook} or {@code admin}
 * @param reason      why it was started (the cost model's figures, or who asked)
 * @param state       {@code claiming}, {@code sent}, then {@code ok}, {@code failed} or {@code gave-up}
 * @param explanation what happened last, in words
 */
public record MoveRecord(
        long id,
        long job,
        int vgpu,
        String from,
        String to,
        String direction,
        String by,
        String reason,
        Instant started,
        String state,
        long blockedMs,
        long bytes,
        Optional<Instant> ended,
        String explanation) {
    public MoveRecord {
        Objects.requireNonNull(from, "from");
        Objects.requireNonNull(to, "to");
        Objects.requireNonNull(direction, "direction");
        Objects.requireNonNull(by, "by");
        Objects.requireNonNull(reason, "reason");
        Objects.requireNonNull(started, "started");
        Objects.requireNonNull(state, "state");
        Objects.requireNonNull(ended, "ended");
        Objects.requireNonNull(explanation, "explanation");
    }

    /** Whether the migration is over. */
    public boolean finished() {
        return ended.isPresent();
    }

    MoveRecord to(String target) {
        return new MoveRecord(
                id,
                job,
                vgpu,
                from,
                target,
                direction,
                by,
                reason,
                started,
                state,
                blockedMs,
                bytes,
                ended,
                explanation);
    }

    MoveRecord in(String newState, String what) {
        return new MoveRecord(
                id, job, vgpu, from, to, direction, by, reason, started, newState, blockedMs, bytes, ended, what);
    }

    MoveRecord endedAt(Instant at, String result, long blocked, long copied, String what) {
        return new MoveRecord(
                id,
                job,
                vgpu,
                from,
                to,
                direction,
                by,
                reason,
                started,
                result,
                blocked,
                copied,
                Optional.of(at),
                what);
    }
}
