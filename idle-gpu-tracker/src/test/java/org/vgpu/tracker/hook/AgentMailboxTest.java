package org.vgpu.tracker.hook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
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

    @Test
    void onlyTheNewestPollOfAJobTakesItsOrderSoAnAgentThatEndedLosesNone() throws Exception {
        AgentMailbox mailbox = new AgentMailbox();
        // The poll of a job step's agent that has exited: held on a connection no one reads any more.
        // Threads of their own: the common pool may have a single thread on a 2-core machine.
        ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();
        CompletableFuture<Optional<AgentMailbox.Order>> dead =
                CompletableFuture.supplyAsync(() -> take(mailbox, 42, Duration.ofSeconds(20)), threads);
        Thread.sleep(100);
        CompletableFuture<Optional<AgentMailbox.Order>> next =
                CompletableFuture.supplyAsync(() -> take(mailbox, 42, Duration.ofSeconds(20)), threads);
        assertEquals(Optional.empty(), dead.get(5, TimeUnit.SECONDS), "a newer poll ends the older one at once");
        mailbox.post(42, ORDER);

        assertEquals(Optional.of(ORDER), next.get(5, TimeUnit.SECONDS));
        threads.close();
    }

    @Test
    void silentForSaysHowLongNoPollWasHeldOnceTheJobPolled() throws Exception {
        long[] now = {1_000_000_000L};
        AgentMailbox mailbox = new AgentMailbox(() -> now[0]);
        assertEquals(Optional.empty(), mailbox.silentFor(42), "never polled: not known to be gone");
        CompletableFuture<Optional<AgentMailbox.Order>> held =
                CompletableFuture.supplyAsync(() -> take(mailbox, 42, Duration.ofSeconds(20)));
        Thread.sleep(100);
        assertEquals(Optional.empty(), mailbox.silentFor(42), "a poll is held");
        mailbox.nudge(42);
        assertEquals(Optional.empty(), held.get(5, TimeUnit.SECONDS));
        now[0] += Duration.ofSeconds(12).toNanos();

        assertEquals(Optional.of(Duration.ofSeconds(12)), mailbox.silentFor(42));
        mailbox.clear(42);
        assertEquals(Optional.empty(), mailbox.silentFor(42), "an ended job is forgotten");
    }

    private static Optional<AgentMailbox.Order> take(AgentMailbox mailbox, long job, Duration hold) {
        try {
            return mailbox.take(job, hold);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }
}
