package org.vgpu.runtime.remote.lender;

import java.time.Duration;
import java.time.Instant;
import java.util.function.BooleanSupplier;

/** Polls for what other threads and processes bring about, failing the test after a bound. */
final class Await {
    private Await() {}

    /** Generous for a 2-core machine starting JVMs; a passing test returns as soon as the condition holds. */
    private static final Duration PATIENCE = Duration.ofSeconds(60);

    static void until(BooleanSupplier condition) {
        Instant deadline = Instant.now().plus(PATIENCE);
        while (!condition.getAsBoolean()) {
            if (Instant.now().isAfter(deadline)) {
                throw new AssertionError("condition not met within " + PATIENCE.toSeconds() + " s");
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while waiting", e);
            }
        }
    }
}
