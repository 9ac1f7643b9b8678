package org.vgpu.job;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Future;
import java.util.regex.Pattern;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.line.LineClient;

/** The job's migration agent as the tests that move a running program's vGPU ask it when to move. */
final class AgentStatus {

    /** Polls only while the program runs, however long that is. */
    static final Duration WHILE_IT_RUNS = Duration.ofNanos(Long.MAX_VALUE);

    /** The agent's status of a vGPU 0 that holds memory of the program's. */
    private static final Pattern STATE_ON_VGPU_0 = Pattern.compile("vgpu 0 on [^,]*, [1-9]\\d* B live");

    private AgentStatus() {}

    /**
     * Asks {@code agent}'s status until vGPU 0 holds memory of the program's: true then; false once {@code program}
     * ended or {@code bound} passed first.
     */
    static boolean awaitStateOnVgpu0(Path agent, Future<?> program, Duration bound) throws InterruptedException {
        long start = System.nanoTime();
        while (!program.isDone() && System.nanoTime() - start < bound.toNanos()) {
            try {
                String status = String.join(" ", LineClient.request(agent, "status", Duration.ofSeconds(10)));
                if (STATE_ON_VGPU_0.matcher(status).find()) {
                    return true;
                }
            } catch (VgpuFailure notListeningYet) {
                // the program's JVM is starting
            }
            Thread.sleep(2);
        }
        return false;
    }
}
