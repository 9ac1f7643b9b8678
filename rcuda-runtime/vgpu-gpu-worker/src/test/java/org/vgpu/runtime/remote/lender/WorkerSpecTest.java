package org.vgpu.runtime.remote.lender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import org.vgpu.common.error.InputException;
import org.vgpu.common.net.Endpoint;

class WorkerSpecTest {
    private static final Endpoint LISTEN = new Endpoint("10.0.0.5", 0);
    private static final Path KEY = Path.of("/etc/vgpu/site.key");

    @Test
    void aMinimalSpecHasOnlyTheRequiredOptions() {
        assertEquals(
                List.of(
                        "--listen",
                        "10.0.0.5:0",
                        "--backend",
                        "native",
                        "--device",
                        "2",
                        "--worker-id",
                        "n1-d2-00ff",
                        "--key-file",
                        "/etc/vgpu/site.key"),
                new WorkerSpec(LISTEN, "native", 2, "n1-d2-00ff", KEY).arguments());
    }

    @Test
    void nonsenseIsRefused() {
        assertInvalid(() -> new WorkerSpec(LISTEN, "auto", 0, "w", KEY));
        assertInvalid(() -> new WorkerSpec(LISTEN, "native", -1, "w", KEY));
        assertInvalid(() -> new WorkerSpec(LISTEN, "native", 0, "two words", KEY));
        assertInvalid(() -> new WorkerSpec(LISTEN, "native", 0, "", KEY));
        assertInvalid(() -> spec(Optional.of(Duration.ZERO)));
        assertInvalid(() -> spec(Optional.of(Duration.ofMillis(1500))));
    }

    private static WorkerSpec spec(Optional<Duration> idleTimeout) {
        return new WorkerSpec(LISTEN, "emulated", 0, "w", KEY, Optional.empty(), idleTimeout);
    }

    private static void assertInvalid(org.junit.jupiter.api.function.Executable call) {
        assertEquals("BAD_INPUT", assertThrows(InputException.class, call).codeName());
    }
}
