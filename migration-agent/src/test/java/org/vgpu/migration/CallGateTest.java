package org.vgpu.migration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/** The migration lock: exclusion, waiting, timeout, closing. */
@Timeout(60)
class CallGateTest {
    private final ExecutorService threads = Executors.newCachedThreadPool();

    @AfterEach
    void stopThreads() {
        threads.shutdownNow();
    }

    @Test
    void whileShutNoCallIsInsideAndCallsResumeAfterReopen() throws Exception {
        CallGate gate = new CallGate("vGPU 0");
        AtomicInteger inside = new AtomicInteger();
        AtomicBoolean stop = new AtomicBoolean();
        int callerCount = 4;
        CountDownLatch calling = new CountDownLatch(callerCount);
        List<Future<Long>> callers = new ArrayList<>();
        for (int t = 0; t < callerCount; t++) {
            callers.add(threads.submit(() -> {
                long calls = 0;
                while (!stop.get()) {
                    CallGate.Slot slot = gate.enter();
                    inside.incrementAndGet();
                    Thread.onSpinWait();
                    inside.decrementAndGet();
                    gate.exit(slot);
                    if (calls++ == 0) {
                        calling.countDown();
                    }
                }
                return calls;
            }));
        }
        // On a loaded machine a thread may start late: the rounds begin once every caller is calling.
        assertTrue(calling.await(30, TimeUnit.SECONDS));
        for (int round = 0; round < 300; round++) {
            gate.shut(Duration.ofSeconds(10));
            assertEquals(0, inside.get(), "a call is inside while the gate is shut");
            Thread.onSpinWait();
            assertEquals(0, inside.get(), "a call entered a shut gate");
            gate.reopen();
        }
        stop.set(true);
        for (Future<Long> caller : callers) {
            assertTrue(caller.get(10, TimeUnit.SECONDS) > 0);
        }
    }

    @Test
    void aShutGateHoldsNewCallsUntilItReopens() throws Exception {
        CallGate gate = new CallGate("vGPU 0");
        gate.shut(Duration.ofSeconds(1));
        Future<?> call = threads.submit(() -> gate.exit(gate.enter()));
        assertThrows(TimeoutException.class, () -> call.get(100, TimeUnit.MILLISECONDS));
        gate.reopen();
        call.get(10, TimeUnit.SECONDS);
    }

    @Test
    void shuttingTimesOutOnACallThatDoesNotLeaveAndLeavesTheGateOpen() throws Exception {
        CallGate gate = new CallGate("vGPU 3");
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch leave = new CountDownLatch(1);
        Future<?> stuck = threads.submit(() -> {
            CallGate.Slot slot = gate.enter();
            entered.countDown();
            leave.await();
            gate.exit(slot);
            return null;
        });
        assertTrue(entered.await(10, TimeUnit.SECONDS));
        VgpuException timedOut = assertThrows(VgpuException.class, () -> gate.shut(Duration.ofMillis(50)));
        assertEquals(ErrorCode.CUDA_ERROR_NOT_PERMITTED, timedOut.code());
        assertTrue(timedOut.getMessage().contains("vGPU 3"), timedOut.getMessage());
        gate.exit(gate.enter()); // open again
        leave.countDown();
        stuck.get(10, TimeUnit.SECONDS);
        gate.shut(Duration.ofSeconds(1));
        gate.reopen();
    }

    @Test
    void aMigrationCannotStartFromInsideACall() {
        CallGate gate = new CallGate("vGPU 0");
        CallGate.Slot slot = gate.enter();
        assertThrows(IllegalStateException.class, () -> gate.shut(Duration.ofSeconds(1)));
        gate.exit(slot);
    }

    @Test
    void closingWaitsForCallsAndRefusesWaitingAndLaterOnes() throws Exception {
        CallGate gate = new CallGate("vGPU 1");
        gate.shut(Duration.ofSeconds(1));
        Future<?> waiting = threads.submit(() -> gate.exit(gate.enter()));
        assertFalse(waiting.isDone());
        gate.closeForever();
        ExecutionException refused = assertThrows(ExecutionException.class, () -> waiting.get(10, TimeUnit.SECONDS));
        assertEquals(ErrorCode.VGPU_CLOSED, ((VgpuException) refused.getCause()).code());
        VgpuException later = assertThrows(VgpuException.class, gate::enter);
        assertEquals(ErrorCode.VGPU_CLOSED, later.code());
        assertEquals(
                ErrorCode.VGPU_CLOSED,
                assertThrows(VgpuException.class, () -> gate.shut(Duration.ofSeconds(1)))
                        .code());
        gate.reopen();
        assertThrows(VgpuException.class, gate::enter, "a closed gate stays closed");
    }

    @Test
    void threadsThatComeAndGoDoNotBreakTheGate() throws Exception {
        CallGate gate = new CallGate("vGPU 0");
        for (int wave = 0; wave < 20; wave++) {
            List<Thread> shortLived = new ArrayList<>();
            for (int t = 0; t < 16; t++) {
                shortLived.add(Thread.ofVirtual().start(() -> gate.exit(gate.enter())));
            }
            for (Thread thread : shortLived) {
                thread.join();
            }
            gate.shut(Duration.ofSeconds(10));
            gate.reopen();
        }
    }
}
