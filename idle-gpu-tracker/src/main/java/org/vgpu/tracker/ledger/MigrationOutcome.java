package org.vgpu.tracker.ledger;

import java.time.Instant;
import java.util.Objects;

/**
 * How migration {@code id} of vGPU {@code vgpu} of job {@code job} ended.
 *
 * @param result    {@link Result#OK}: the vGPU runs on its new GPU; {@link Result#FAILED}: the agent could not
 *                  move it, it stays where it was; {@link Result#GAVE_UP}: the tracker withdrew before the agent
 *                  moved it (the target GPU went to another job, the grant holder ended, the job ended)
 * @param blockedMs how long the app's calls waited on the move (0 unless OK)
 * @param bytes     bytes copied (0 unless OK)
 */
public record MigrationOutcome(long id, long job, int vgpu, Result result, long blockedMs, long bytes, Instant at) {
    public enum Result {
        OK("ok"),
        FAILED("failed"),
        GAVE_UP("gave-up");

        private final String word;

        Result(String word) {
            this.word = word;
        }

        public String word() {
            return word;
        }

        public static Result of(String word) {
            for (Result result : values()) {
                if (result.word.equals(word)) {
                    return result;
                }
            }
            throw new IllegalArgumentException("result '" + word + "' is not ok, failed or gave-up");
        }
    }

    public MigrationOutcome {
        Objects.requireNonNull(result, "result");
        Objects.requireNonNull(at, "at");
        LedgerValues.atLeast("id", id, 1);
        LedgerValues.atLeast("job", job, 1);
        LedgerValues.atLeast("vgpu", vgpu, 0);
        if (blockedMs < 0 || bytes < 0) {
            throw new IllegalArgumentException("blocked time and bytes must not be negative");
        }
    }
}
