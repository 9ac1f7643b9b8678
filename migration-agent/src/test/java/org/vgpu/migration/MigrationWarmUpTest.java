package org.vgpu.migration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class MigrationWarmUpTest {

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void theWarmUpMigratesItsStateAndItsDataComesThrough() {
        // run() throws where the state's data differs after its migrations
        Duration took = MigrationWarmUp.run();
        assertTrue(took.toNanos() > 0, took.toString());
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void aProcessWarmsUpOnceOnADaemonThreadUnlessTurnedOff() throws Exception {
        String before = System.getProperty(MigrationWarmUp.PROPERTY);
        try {
            System.setProperty(MigrationWarmUp.PROPERTY, "false");
            assertEquals(Duration.ZERO, MigrationWarmUp.startOnce().get(), "turned off, nothing runs");
            System.clearProperty(MigrationWarmUp.PROPERTY);
            CompletableFuture<Duration> first = MigrationWarmUp.startOnce();
            assertSame(first, MigrationWarmUp.startOnce(), "once per process");
            assertTrue(first.get(100, TimeUnit.SECONDS).toNanos() > 0);
            assertTrue(
                    Thread.getAllStackTraces().keySet().stream()
                            .filter(thread -> thread.getName().equals("vgpu-migration-warm-up"))
                            .allMatch(Thread::isDaemon),
                    "it never keeps the job's JVM alive");
        } finally {
            if (before == null) {
                System.clearProperty(MigrationWarmUp.PROPERTY);
            } else {
                System.setProperty(MigrationWarmUp.PROPERTY, before);
            }
        }
    }
}
