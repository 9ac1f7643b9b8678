package org.vgpu.runtime.remote.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.Test;

class AcceptFailuresTest {
    @Test
    void failuresAreToldOnceAMinuteWithHowManyWereNotAndAcceptingPausesForASecond() {
        List<String> log = new ArrayList<>();
        AtomicLong now = new AtomicLong();
        EmbeddedChannel listening = new EmbeddedChannel(new AcceptFailures("w1", log::add, now::get));
        IOException tooMany = new IOException("accept(..) failed: Too many open files");
        for (int i = 0; i < 100; i++) {
            listening.pipeline().fireExceptionCaught(tooMany);
            now.addAndGet(TimeUnit.MILLISECONDS.toNanos(100));
        }
        listening.checkException();
        assertFalse(listening.config().isAutoRead(), "accepting pauses");
        listening.advanceTimeBy(1, TimeUnit.SECONDS);
        listening.runScheduledPendingTasks();
        assertTrue(listening.config().isAutoRead(), "and resumes after a second");
        assertEquals(
                List.of("worker w1 cannot accept connections: too many open files; it tries again every 1 s and"
                        + " reports this at most every 1 min"),
                log);
        now.addAndGet(TimeUnit.SECONDS.toNanos(60));
        listening.pipeline().fireExceptionCaught(tooMany);
        assertEquals(
                "worker w1 cannot accept connections: too many open files (100 failed accepts since the last report);"
                        + " it tries again every 1 s and reports this at most every 1 min",
                log.get(1));
        listening.finishAndReleaseAll();
    }
}
