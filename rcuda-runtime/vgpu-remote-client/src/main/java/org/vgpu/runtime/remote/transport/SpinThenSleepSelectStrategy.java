package org.vgpu.runtime.remote.transport;

import io.netty.channel.SelectStrategy;
import io.netty.util.IntSupplier;

/**
 * An event loop that keeps polling for a while after it last had work, then sleeps as usual.
 * While it polls, a frame that arrives or a task another thread hands it (a batch to write, a
 * reply) is picked up without the wake-up through the kernel that a sleeping loop needs, which is
 * most of a round trip's cost on loopback and fast networks. Idle loops sleep, so an idle session
 * costs no CPU; a busy one costs a core per polling loop, hence only where cores are plentiful.
 */
final class SpinThenSleepSelectStrategy implements SelectStrategy {
    private final long spinNanos;
    private long lastBusyNanos = System.nanoTime();
    /** The loop slept last time: whatever woke it (a frame, a task, a timer) was work. */
    private boolean slept;

    SpinThenSleepSelectStrategy(long spinNanos) {
        this.spinNanos = spinNanos;
    }

    @Override
    public int calculateStrategy(IntSupplier selectNow, boolean hasTasks) throws Exception {
        int ready = selectNow.get();
        long now = System.nanoTime();
        if (ready > 0 || hasTasks || slept) {
            lastBusyNanos = now;
            slept = false;
            return ready;
        }
        if (now - lastBusyNanos < spinNanos) {
            Thread.onSpinWait();
            return 0;
        }
        slept = true;
        return SelectStrategy.SELECT;
    }
}
