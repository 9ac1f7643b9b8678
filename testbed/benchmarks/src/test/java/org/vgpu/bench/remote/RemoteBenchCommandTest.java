package org.vgpu.bench.remote;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.common.cli.SubcommandRunner;

/**
 * {@code vgpu remote-bench} on the emulation with tiny sizes: it runs, labels emulation, prints every row, and its
 * remote pinned memory is shared with the worker process.
 */
class RemoteBenchCommandTest {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int run(String... args) {
        return SubcommandRunner.run(
                new RemoteBenchCommand(),
                args,
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void measuresEveryRowAgainstAWorkerProcessAndLabelsTheEmulation() {
        assertEquals(
                0,
                run(
                        "--backend",
                        "emulated",
                        "--trials",
                        "1",
                        "--sync-iterations",
                        "20",
                        "--async-iterations",
                        "20",
                        "--copy-mib",
                        "1"),
                err.toString());
        String table = out.toString(StandardCharsets.UTF_8);
        assertTrue(table.contains("CPU EMULATION"), table);
        for (String row : new String[] {
            "plain socket 64 B round trip",
            "remote launch + synchronize",
            "remote overhead / plain round trip",
            "remote / (local + plain round trip)",
            "<= 1.1",
            "remote async launch (batched)",
            "remote / local launch throughput",
            "remote host->device 1 MiB",
            "remote device->host 1 MiB",
            "<= 1.25",
            ">= 50 %",
            ">= 90 %",
            "plain socket send from 1 MiB host memory",
            "plain socket send through a cached 1 MiB buffer",
            "plain socket receive into 1 MiB host memory",
            "plain socket receive through a cached 1 MiB buffer",
            "remote vs plain socket from 1 MiB host memory",
            "remote vs plain socket into 1 MiB host memory",
            "remote vs local copy from pinned memory",
            "remote vs local copy into pinned memory",
            "remote host->device 1 MiB from pinned memory",
            "remote device->host 1 MiB into pinned memory",
            "remote pinned vs local copy from pinned memory",
            "remote pinned vs local copy into pinned memory",
            // the worker process is on this host: the pinned rows measure its shared regions
            "remote pinned memory (memAllocHost): 1 allocation(s), 1 MiB, shared with the worker",
            "8 parallel plain sockets (Java NIO) send through cached buffers",
            "8 parallel plain sockets (Java NIO) receive through cached buffers",
            "remote host->device vs 8 parallel plain sockets (Java NIO)",
            "remote device->host vs 8 parallel plain sockets (Java NIO)",
            "8 parallel plain sockets (Java NIO) send from 1 MiB host memory",
            "8 parallel plain sockets (Java NIO) receive into 1 MiB host memory",
            "remote host->device vs 8 parallel plain sockets (Java NIO) from host memory",
            "remote device->host vs 8 parallel plain sockets (Java NIO) into host memory",
            ">= 80 %",
            "bulk bytes same-host shared memory",
            "-Dvgpu.chunk.kib",
            "-Dvgpu.socket.buffer.kib"
        }) {
            assertTrue(table.contains(row), "missing '" + row + "' in\n" + table);
        }
        // both bulk copies are compared with both baselines: two ratios through the cached buffer
        assertEquals(2, table.split("remote vs plain socket through a cached 1 MiB buffer", -1).length - 1, table);
    }

    @Test
    void badOptionsAreUsageErrors() {
        assertEquals(2, run("--backend", "remote"));
        assertEquals(2, run("--trials", "0"));
        assertEquals(2, run("--backend", "emulated", "--device", "99"));
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void theRoundTripLadderMeasuresEveryRungAndTheStepsBetweenThem() {
        assertEquals(
                0,
                run("--round-trip-ladder", "--backend", "emulated", "--trials", "1", "--sync-iterations", "20"),
                err.toString());
        String table = out.toString(StandardCharsets.UTF_8);
        assertTrue(table.contains("CPU EMULATION"), table);
        for (String row : new String[] {
            "plain socket 64 B round trip, blocking reads",
            "plain socket 64 B round trip, spinning reads",
            "Netty 64 B round trip, the runtime's event loops",
            "local synchronize, nothing queued",
            "remote synchronize, nothing queued",
            "spinning sockets -> Netty and the caller's hand-off",
            "Netty -> the runtime (remote - local synchronize)",
            "spinning sockets -> the runtime, all told"
        }) {
            assertTrue(table.contains(row), "missing '" + row + "' in\n" + table);
        }
        // no row of the full benchmark: the ladder runs instead of it
        assertTrue(!table.contains("remote host->device"), table);
    }
}
