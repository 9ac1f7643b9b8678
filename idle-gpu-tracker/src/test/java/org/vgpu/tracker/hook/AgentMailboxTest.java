package org.vgpu.tracker.hook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.common.agent.AgentChannel;

@Timeout(30)
class AgentMailboxTest {
    private static final AgentMailbox.Order ORDER = new AgentMailbox.Order(7, 1, new AgentChannel.LocalGpu(0));

    @Test
    void aHeldPollGetsTheOrderPostedForItsJobAtOnceAndOnlyOnce() throws Exception {
        AgentMailbox mailbox = new AgentMailbox();
        CompletableFuture<Optional<AgentMailbox.Order>> held =
                CompletableFuture.supplyAsync(() -> take(mailbox, 42, Duration.ofSeconds(20)));
        Thread.sleep(100);
        mailbox.post(43, new AgentMailbox.Order(8, 1, new AgentChannel.LocalGpu(1)));
        mailbox.post(42, ORDER);

        assertEquals(Optional.of(ORDER), held.get(5, TimeUnit.SECONDS));
        assertEquals(Optional.empty(), take(mailbox, 42, Duration.ofMillis(10)), "handed out once");
        assertTrue(mailbox.waiting(43), "another job's order waits for its own agent");
        assertFalse(mailbox.withdraw(43, 7), "withdraw names the order's id");
        assertTrue(mailbox.withdraw(43, 8));
    }

    @Test
    void aNudgeEndsAHeldPollWithoutAnOrderSoTheAgentReportsAgain() throws Exception {
        AgentMailbox mailbox = new AgentMailbox();
        CompletableFuture<Optional<AgentMailbox.Order>> held =
                CompletableFuture.supplyAsync(() -> take(mailbox, 42, Duration.ofSeconds(20)));
        Thread.sleep(100);
        long nudged = System.nanoTime();
        mailbox.nudge(42);

        assertEquals(Optional.empty(), held.get(5, TimeUnit.SECONDS));
        assertTrue(System.nanoTime() - nudged < TimeUnit.SECONDS.toNanos(5));
        mailbox.nudge(42);
        assertEquals(Optional.empty(), take(mailbox, 42, Duration.ofSeconds(20)), "a nudge before the poll counts");
        mailbox.nudge(42);
        mailbox.post(42, ORDER);
        assertEquals(Optional.of(ORDER), take(mailbox, 42, Duration.ofSeconds(20)), "an order beats a nudge");
        long start = System.nanoTime();
        assertEquals(Optional.empty(), take(mailbox, 42, Duration.ofMillis(200)), "and clears it");
        assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(150));
    }

    private static Optional<AgentMailbox.Order> take(AgentMailbox mailbox, long job, Duration hold) {
        try {
            return mailbox.take(job, hold);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }
}
