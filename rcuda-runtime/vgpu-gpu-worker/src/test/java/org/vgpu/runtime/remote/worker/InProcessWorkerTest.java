package org.vgpu.runtime.remote.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.kernels.TestKernels;
import org.vgpu.runtime.remote.protocol.Frames;

/**
 * Sessions served in the calling process, as vgpu's {@code libcuda.so.1} has them served by the JVM it starts inside
 * a CUDA program: the same frames as a local worker's socket carries, each request run on the calling thread and its
 * replies handed back in the buffer it came in.
 */
@Timeout(60)
class InProcessWorkerTest {
    private final EmulatedBackend backend = new EmulatedBackend(2, 1L << 30, TestKernels.twins());
    private final List<String> log = new CopyOnWriteArrayList<>();
    private final InProcessWorker worker = InProcessWorker.start(
            new WorkerConfig("localhost", 0, 0, "in-process-test", Duration.ofMinutes(1)), backend, log::add);

    @AfterEach
    void stop() {
        worker.close();
    }

    @Test
    void aRequestIsAnsweredInTheBufferItCameIn() {
        long base = VaWindow.forVgpu(0).base();
        try (RawClient client = RawClient.inProcess(worker.open())) {
            assertTrue(client.hello(1, "", VaWindow.forVgpu(0)).read().startsWith("#1 welcome in-process-test"));
            assertEquals(
                    "#2 ok 0 bytes",
                    client.send(e -> e.memAllocAt(2, base, 4096)).read());
            assertEquals(
                    "#3 ok 0 bytes",
                    client.send(e -> e.memset(3, false, 0, base, 7, 1, 16)).read());
            assertEquals(
                    "#4 data@0 4 bytes [07070707]",
                    client.send(e -> e.memcpyDtoH(4, false, 0, base, 4, 4)).read());
            assertEquals(
                    "silent",
                    client.send(e -> e.memset(5, true, 0, base, 9, 1, 4)).read(),
                    "async: no answer");
            assertEquals(
                    "#6 data@0 4 bytes [09090909]",
                    client.send(e -> e.memcpyDtoH(6, false, 0, base, 4, 4)).read());
        }
    }

    /**
     * A copy from the device sends its chunks from staging memory that is reused once a chunk is written: the chunks
     * the library has not read yet must keep their bytes.
     */
    @Test
    void theChunksOfACopyFromTheDeviceKeepTheirBytesUntilRead() {
        long base = VaWindow.forVgpu(0).base();
        int chunks = 32;
        try (RawClient client = RawClient.inProcess(worker.open())) {
            client.hello(1, "", VaWindow.forVgpu(0)).read();
            client.send(e -> e.memAllocAt(2, base, 4096)).read();
            for (int k = 0; k < chunks; k++) {
                int value = k;
                client.send(e -> e.memset(3, false, 0, base + 4L * value, value, 1, 4))
                        .read();
            }
            client.send(e -> e.memcpyDtoH(4, false, 0, base, 4L * chunks, 4));
            for (int k = 0; k < chunks; k++) {
                String hex = String.format("%02x", k).repeat(4);
                assertEquals(
                        "#4 data@" + 4 * k + " 4 bytes" + (k < chunks - 1 ? " more" : "") + " [" + hex + "]",
                        client.read());
            }
        }
    }

    @Test
    void oneSessionAtATimeUsesAVgpu() {
        try (RawClient first = RawClient.inProcess(worker.open())) {
            first.hello(1, "", VaWindow.forVgpu(1)).read();
            try (RawClient second = RawClient.inProcess(worker.open())) {
                String refused = second.hello(1, "", VaWindow.forVgpu(1)).read();
                assertTrue(refused.startsWith("#1 error") && refused.contains("one process at a time"), refused);
            }
        }
        try (RawClient next = RawClient.inProcess(worker.open())) {
            assertTrue(next.hello(1, "", VaWindow.forVgpu(1)).read().startsWith("#1 welcome"), "the first one ended");
        }
    }

    /**
     * The library hands over whole frames, and an open session's run straight from its bytes; a frame that still
     * comes in parts (split across two calls here) is put together by the pipeline, and those after it are answered
     * in order, with a PING's answer among them.
     */
    @Test
    void framesAreAnsweredInOrderWholeOrSplitAcrossCalls() {
        long base = VaWindow.forVgpu(0).base();
        try (RawClient client = RawClient.inProcess(worker.open())) {
            assertEquals("#1 pong", client.send(e -> e.ping(1)).read(), "a PING before the HELLO");
            client.hello(2, "", VaWindow.forVgpu(0)).read();
            client.send(e -> e.memAllocAt(3, base, 4096)).read();
            byte[] frames = RawClient.encoded(e -> {
                e.memset(4, false, 0, base, 5, 1, 4);
                e.ping(5);
                e.memcpyDtoH(6, false, 0, base, 4, 4);
            });
            int split = 7; // inside the first frame's header
            client.sendBytes(Arrays.copyOfRange(frames, 0, split));
            assertEquals("silent", client.read(), "nothing runs before the frame is whole");
            client.sendBytes(Arrays.copyOfRange(frames, split, frames.length));
            assertEquals("#4 ok 0 bytes", client.read());
            assertEquals("#5 pong", client.read());
            assertEquals("#6 data@0 4 bytes [05050505]", client.read());
            client.send(e -> {
                e.memset(7, true, 0, base, 6, 1, 4);
                e.ctxSynchronize(8);
                e.memcpyDtoH(9, false, 0, base, 4, 4);
            });
            assertEquals("#8 ok 0 bytes", client.read(), "three whole frames in one call, the first silent");
            assertEquals("#9 data@0 4 bytes [06060606]", client.read());
        }
    }

    /**
     * A frame whose header breaks the protocol ends the session with the reason, also when it comes straight from the
     * library's bytes: what follows it in the same call does not run, and the vGPU is free for the next session.
     */
    @Test
    void aBrokenFrameEndsTheSessionAndWhatFollowsItDoesNotRun() {
        long base = VaWindow.forVgpu(0).base();
        try (RawClient client = RawClient.inProcess(worker.open())) {
            client.hello(1, "", VaWindow.forVgpu(0)).read();
            client.send(e -> e.memAllocAt(2, base, 4096)).read();
            byte[] broken = {0, 0, 0, (byte) Frames.MIN_LENGTH, 0x77, 0x77, 0, 0, 0, 0, 0, 3};
            byte[] after = RawClient.encoded(e -> e.memcpyDtoH(4, false, 0, base, 4, 4));
            byte[] both = Arrays.copyOf(broken, broken.length + after.length);
            System.arraycopy(after, 0, both, broken.length, after.length);
            client.sendBytes(both);
            assertEquals("silent", client.read(), "no reply to the copy after the broken frame");
        }
        assertTrue(
                log.stream()
                        .anyMatch(line -> line.contains("a session failed") && line.contains("unknown opcode 0x7777")),
                log.toString());
        try (RawClient next = RawClient.inProcess(worker.open())) {
            assertTrue(next.hello(1, "", VaWindow.forVgpu(0)).read().startsWith("#1 welcome"), "the vGPU was freed");
        }
    }
}
