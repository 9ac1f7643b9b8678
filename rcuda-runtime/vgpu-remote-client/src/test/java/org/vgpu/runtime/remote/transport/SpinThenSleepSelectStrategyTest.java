package org.vgpu.runtime.remote.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.concurrent.TimeUnit;

import io.netty.channel.SelectStrategy;
import org.junit.jupiter.api.Test;

/** When an event loop polls and when it sleeps. */
class SpinThenSleepSelectStrategyTest {

    @Test
    void pollsWhileRecentlyBusyAndReportsWhatIsReady() throws Exception {
        SpinThenSleepSelectStrategy strategy = new SpinThenSleepSelectStrategy(TimeUnit.SECONDS.toNanos(60));
        assertEquals(0, strategy.calculateStrategy(() -> 0, false), "nothing yet, but within the polling time");
        assertEquals(3, strategy.calculateStrategy(() -> 3, false), "ready channels are handled at once");
        assertEquals(0, strategy.calculateStrategy(() -> 0, true), "tasks run without waiting");
    }

    @Test
    void sleepsWhenIdleAndPollsAgainAfterWakingUp() throws Exception {
        SpinThenSleepSelectStrategy strategy = new SpinThenSleepSelectStrategy(TimeUnit.MILLISECONDS.toNanos(20));
        Thread.sleep(30);
        assertEquals(SelectStrategy.SELECT, strategy.calculateStrategy(() -> 0, false), "idle past the polling time");
        assertEquals(0, strategy.calculateStrategy(() -> 0, false), "woken up: whatever woke it was work, so poll");
        assertEquals(0, strategy.calculateStrategy(() -> 0, false), "and keep polling for the polling time");
        Thread.sleep(30);
        assertEquals(SelectStrategy.SELECT, strategy.calculateStrategy(() -> 0, false));
    }
}
