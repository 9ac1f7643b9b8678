package org.vgpu.tracker.hook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Optional;
import java.util.Set;
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
    /** The agent of a step of one task: it speaks for all of the job's vGPUs. */
    private static final AgentMailbox.Agent WHOLE_JOB = new AgentMailbox.Agent(1, Set.of(0, 1, 2, 3));

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
        assertEquals(Optional.empty(), mailbox.silentFor(42, 1), "never polled: not known to be gone");
        CompletableFuture<Optional<AgentMailbox.Order>> held =
                CompletableFuture.supplyAsync(() -> take(mailbox, 42, Duration.ofSeconds(20)));
        Thread.sleep(100);
        assertEquals(Optional.empty(), mailbox.silentFor(42, 1), "a poll is held");
        mailbox.nudge(42);
        assertEquals(Optional.empty(), held.get(5, TimeUnit.SECONDS));
        now[0] += Duration.ofSeconds(12).toNanos();

        assertEquals(Optional.of(Duration.ofSeconds(12)), mailbox.silentFor(42, 1));
        mailbox.clear(42);
        assertEquals(Optional.empty(), mailbox.silentFor(42, 1), "an ended job is forgotten");
    }

    // ---- a step of several tasks: one agent per task, each speaking for its share of the job's vGPUs

    private static final AgentMailbox.Agent TASK_0 = new AgentMailbox.Agent(0, Set.of(0, 1));
    private static final AgentMailbox.Agent TASK_1 = new AgentMailbox.Agent(2, Set.of(2, 3));

    @Test
    void eachTasksAgentTakesTheOrdersForItsOwnShareOnly() throws Exception {
        AgentMailbox mailbox = new AgentMailbox();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            CompletableFuture<Optional<AgentMailbox.Order>> task0 =
                    CompletableFuture.supplyAsync(() -> take(mailbox, 42, TASK_0, Duration.ofMillis(1500)), threads);
            CompletableFuture<Optional<AgentMailbox.Order>> task1 =
                    CompletableFuture.supplyAsync(() -> take(mailbox, 42, TASK_1, Duration.ofSeconds(20)), threads);
            Thread.sleep(100);
            AgentMailbox.Order vgpu3Home = new AgentMailbox.Order(9, 3, new AgentChannel.LocalGpu(1));
            mailbox.post(42, vgpu3Home);

            assertEquals(Optional.of(vgpu3Home), task1.get(5, TimeUnit.SECONDS), "vGPU 3 is task 1's");
            assertEquals(Optional.empty(), task0.get(5, TimeUnit.SECONDS), "task 0's poll took nothing of task 1's");
            AgentMailbox.Order vgpu1Home = new AgentMailbox.Order(10, 1, new AgentChannel.LocalGpu(2));
            mailbox.post(42, vgpu1Home);
            assertEquals(
                    Optional.empty(),
                    take(mailbox, 42, TASK_1, Duration.ofMillis(200)),
                    "task 1's poll leaves task 0's order");
            assertEquals(Optional.of(vgpu1Home), take(mailbox, 42, TASK_0, Duration.ofSeconds(5)));
        }
    }

    @Test
    void anAgentThatStoppedIsGoneForItsShareOnly() throws Exception {
        long[] now = {1_000_000_000L};
        AgentMailbox mailbox = new AgentMailbox(() -> now[0]);
        take(mailbox, 42, TASK_0, Duration.ZERO);
        take(mailbox, 42, TASK_1, Duration.ZERO);
        now[0] += Duration.ofSeconds(3).toNanos();
        mailbox.leave(42, 0);

        assertTrue(mailbox.left(42, 1), "task 0 stopped: its vGPUs have no agent");
        assertFalse(mailbox.left(42, 3), "task 1's agent still runs");
        assertEquals(Set.of(2, 3), mailbox.spokenFor(42, 2));
        assertEquals(Optional.of(Duration.ofSeconds(3)), mailbox.silentFor(42, 3));
        take(mailbox, 42, TASK_0, Duration.ZERO);
        assertFalse(mailbox.left(42, 1), "a poll after the bye: task 0's agent is back (a later step's)");
    }

    @Test
    void aVgpuGoesToTheAgentThatPolledForItLastWhenAnEarlierStepsAgentAlsoSpokeForIt() throws Exception {
        AgentMailbox mailbox = new AgentMailbox();
        // an earlier step of one task spoke for every vGPU; the step now running has two tasks
        take(mailbox, 42, WHOLE_JOB, Duration.ZERO);
        take(mailbox, 42, TASK_0, Duration.ZERO);
        take(mailbox, 42, TASK_1, Duration.ZERO);
        AgentMailbox.Order vgpu2 = new AgentMailbox.Order(11, 2, new AgentChannel.LocalGpu(0));
        mailbox.post(42, vgpu2);

        assertEquals(Optional.empty(), take(mailbox, 42, TASK_0, Duration.ofMillis(100)));
        assertEquals(Optional.of(vgpu2), take(mailbox, 42, TASK_1, Duration.ofSeconds(5)));
    }

    @Test
    void anOrderForAVgpuNoAgentReportedGoesToTheAgentThatPolledLast() throws Exception {
        AgentMailbox mailbox = new AgentMailbox();
        take(mailbox, 42, TASK_1, Duration.ZERO);
        AgentMailbox.Order vgpu5 = new AgentMailbox.Order(12, 5, new AgentChannel.LocalGpu(0));
        mailbox.post(42, vgpu5);

        assertEquals(Optional.of(vgpu5), take(mailbox, 42, TASK_0, Duration.ofSeconds(5)));
    }

    private static Optional<AgentMailbox.Order> take(AgentMailbox mailbox, long job, Duration hold) {
        return take(mailbox, job, WHOLE_JOB, hold);
    }

    private static Optional<AgentMailbox.Order> take(
            AgentMailbox mailbox, long job, AgentMailbox.Agent agent, Duration hold) {
        try {
            return mailbox.take(job, agent, hold);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }
}
