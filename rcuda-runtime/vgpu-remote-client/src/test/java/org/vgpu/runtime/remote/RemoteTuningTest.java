package org.vgpu.runtime.remote;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Properties;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import org.vgpu.common.error.InputException;
import org.vgpu.runtime.remote.RemoteTuning.WorkerWarmUp;

class RemoteTuningTest {

    private static RemoteTuning tuning(String... propertiesAndValues) {
        Properties properties = new Properties();
        for (int i = 0; i < propertiesAndValues.length; i += 2) {
            properties.setProperty(propertiesAndValues[i], propertiesAndValues[i + 1]);
        }
        return RemoteTuning.fromProperties(properties);
    }

    @Test
    void unsetPropertiesGiveTheDefaults() {
        RemoteTuning defaults = tuning();
        assertEquals(1 << 20, defaults.chunkBytes());
        assertEquals(Runtime.getRuntime().availableProcessors() >= 8 ? 50_000 : 0, defaults.spinNanos());
        assertEquals(0, defaults.socketBufferBytes(), "kernel autotuning");
        assertEquals(256 << 10, defaults.copierMinBytes());
        assertSame(WorkerWarmUp.NATIVE_ONLY, defaults.workerWarmUp());
        assertEquals(Runtime.getRuntime().availableProcessors() >= 8 ? 4 : 1, defaults.copyThreads());
        assertTrue(defaults.landStripedChunks());
        assertTrue(defaults.workerWarmUp().appliesTo("native"));
        assertFalse(defaults.workerWarmUp().appliesTo("emulated"));
    }

    @Test
    void eachPropertySetsItsValueInItsUnit() {
        RemoteTuning tuned = tuning(
                RemoteTuning.CHUNK_KIB,
                "4",
                RemoteTuning.SPIN_MICROS,
                "0",
                RemoteTuning.SOCKET_BUFFER_KIB,
                " 512 ",
                RemoteTuning.COPIER_MIN_KIB,
                "0",
                RemoteTuning.WORKER_WARM_UP,
                "TRUE",
                RemoteTuning.COPY_THREADS,
                "6",
                RemoteTuning.LANDING,
                " False ");
        assertEquals(new RemoteTuning(4096, 0, 512 << 10, 0, WorkerWarmUp.ON, 6, false), tuned);
        assertTrue(tuned.workerWarmUp().appliesTo("emulated"));
        assertEquals(
                16383 << 10, tuning(RemoteTuning.CHUNK_KIB, "16383").chunkBytes(), "the largest chunk a frame holds");
        assertEquals(75_000, tuning(RemoteTuning.SPIN_MICROS, "75").spinNanos());
        assertFalse(tuning(RemoteTuning.WORKER_WARM_UP, "false").workerWarmUp().appliesTo("native"));
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "vgpu.chunk.kib             | abc   | -Dvgpu.chunk.kib=abc: expected a whole number from 4 to 16383 (KiB), default 1024",
                "vgpu.chunk.kib             | 3     | -Dvgpu.chunk.kib=3: expected a whole number from 4 to 16383 (KiB)",
                "vgpu.chunk.kib             | 16384 | -Dvgpu.chunk.kib=16384: expected a whole number from 4 to 16383 (KiB)",
                "vgpu.spin.micros           | -1    | -Dvgpu.spin.micros=-1: expected a whole number from 0 to 1000000 (us; 0: no polling)",
                "vgpu.socket.buffer.kib     | 1.5   | -Dvgpu.socket.buffer.kib=1.5: expected a whole number from 0 to 1048576 (KiB; 0: the kernel's autotuning), default 0",
                "vgpu.socket.buffer.kib     | 99999999999 | -Dvgpu.socket.buffer.kib=99999999999: expected a whole number from 0 to 1048576",
                "vgpu.client.copier.min.kib | -5    | -Dvgpu.client.copier.min.kib=-5: expected a whole number from 0 to 16383 (KiB; 0: every chunk on the event loop), default 256",
                "vgpu.bulk.copy.threads     | 0     | -Dvgpu.bulk.copy.threads=0: expected a whole number from 1 to 64 (threads; 1: the calling thread alone)",
                "vgpu.worker.warm-up        | yes   | -Dvgpu.worker.warm-up=yes: expected true or false; unset, native workers warm up and emulated ones do not",
                "vgpu.bulk.landing          | on    | -Dvgpu.bulk.landing=on: expected true or false, default true",
            })
    void aValueItCannotUseIsABadInputNamingThePropertyAndWhatItAccepts(String property, String value, String message) {
        InputException bad = assertThrows(InputException.class, () -> tuning(property, value));
        assertTrue(bad.getMessage().startsWith(message), bad.getMessage());
    }

    @Test
    void theLineNamesEveryValueWithItsProperty() {
        assertEquals(
                "chunk 1024 KiB (-Dvgpu.chunk.kib), poll 0 us before sleeping (-Dvgpu.spin.micros), socket buffers"
                        + " autotuned by the kernel (-Dvgpu.socket.buffer.kib), client lands chunks of 256 KiB and more through a"
                        + " copier thread (-Dvgpu.client.copier.min.kib), worker warm-up on native workers (-Dvgpu.worker.warm-up),"
                        + " large chunks copied by 1 thread (-Dvgpu.bulk.copy.threads), striped chunks landed by their"
                        + " stripes (-Dvgpu.bulk.landing)",
                tuning(RemoteTuning.SPIN_MICROS, "0", RemoteTuning.COPY_THREADS, "1")
                        .describe());
        assertTrue(tuning(
                        RemoteTuning.SOCKET_BUFFER_KIB,
                        "256",
                        RemoteTuning.COPIER_MIN_KIB,
                        "0",
                        RemoteTuning.WORKER_WARM_UP,
                        "false")
                .describe()
                .matches(".*socket buffers 256 KiB .*client lands chunks on the event loop .*worker warm-up off .*"));
    }

    @Test
    void theProcessReadsItOnce() {
        assertSame(RemoteTuning.current(), RemoteTuning.current());
    }
}
