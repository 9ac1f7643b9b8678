package org.vgpu.runtime.core;

/**
 * Runs clean-up steps that must all be tried even when some fail, keeping the first failure and
 * attaching the later ones as suppressed, so one bad resource does not leak the others.
 */
public final class FailureCollector {
    private RuntimeException first;

    public void attempt(Runnable step) {
        try {
            step.run();
        } catch (RuntimeException e) {
            if (first == null) {
                first = e;
            } else {
                first.addSuppressed(e);
            }
        }
    }

    /** Throws the first failure, if any step failed. */
    public void rethrow() {
        if (first != null) {
            throw first;
        }
    }
}
