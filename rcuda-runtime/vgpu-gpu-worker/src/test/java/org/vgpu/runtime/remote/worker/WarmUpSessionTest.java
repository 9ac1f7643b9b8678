package org.vgpu.runtime.remote.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.ForwardingGpuBackend;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.kernels.TestKernels;
import org.vgpu.runtime.remote.client.RemoteConfig;
import org.vgpu.runtime.remote.protocol.NettyLeaks;

@ExtendWith(NettyLeaks.class)
class WarmUpSessionTest {

    @Test
    void theWarmUpSessionLeavesTheDeviceAsItFoundIt() {
        try (EmulatedBackend backend = new EmulatedBackend(1, 1L << 30, TestKernels.twins())) {
            long freeBefore = freeMemory(backend);
            WarmUpSession.run(backend, 0);
            assertEquals(freeBefore, freeMemory(backend), "the warm-up freed what it allocated");
            try (VirtualGpu gpu = backend.open(0, VaWindow.forVgpu(VaWindow.MAX_VGPUS - 1))) {
                gpu.memAlloc(4096);
            }
        }
    }

    /**
     * The device sees the worker's chunks of each request. A chunk of a large region with one small
     * region behind it comes only from the warm-up's mem-sync-shaped reads, once a round; chunks of one
     * large region and of many small ones are there too.
     */
    @Test
    void theWarmUpReadsWhatAMemSyncReads() {
        List<List<DeviceRegion>> gathers = Collections.synchronizedList(new ArrayList<>());
        try (EmulatedBackend emulation = new EmulatedBackend(1, 1L << 30, TestKernels.twins())) {
            WarmUpSession.run(recordingGathers(emulation, gathers), 0);
        }
        long chunk = RemoteConfig.defaults().chunkBytes();
        List<String> shapes = gathers.stream()
                .map(gather -> gather.stream()
                        .map(region -> region.bytes() > 4096 ? "large" : "small")
                        .toList()
                        .toString())
                .toList();
        assertEquals(
                WarmUpSession.ROUNDS,
                shapes.stream().filter("[large, small]"::equals).count(),
                "one such read per round");
        assertTrue(shapes.contains("[large]"), shapes.toString());
        assertTrue(
                shapes.contains(
                        Collections.nCopies((int) (chunk / 4096), "small").toString()),
                shapes.toString());
    }

    /** The backend {@code emulation}, whose vGPUs add the regions of every gather they run to {@code gathers}. */
    private static GpuBackend recordingGathers(EmulatedBackend emulation, List<List<DeviceRegion>> gathers) {
        return new ForwardingGpuBackend(emulation) {
            @Override
            @SuppressWarnings("unchecked")
            public VirtualGpu open(int device, VaWindow window) {
                VirtualGpu gpu = super.open(device, window);
                return (VirtualGpu) Proxy.newProxyInstance(
                        VirtualGpu.class.getClassLoader(), new Class<?>[] {VirtualGpu.class}, (proxy, method, args) -> {
                            if (method.getName().equals("memcpyDtoHGatherAsync")) {
                                gathers.add(List.copyOf((List<DeviceRegion>) args[1]));
                            }
                            try {
                                return method.invoke(gpu, args);
                            } catch (InvocationTargetException e) {
                                throw e.getCause();
                            }
                        });
            }
        };
    }

    @Test
    void aDeviceThatCannotServeTheWarmUpFailsItWithTheDevicesError() {
        try (EmulatedBackend backend = new EmulatedBackend(1, 2L << 20, TestKernels.twins())) {
            VgpuException e = assertThrows(VgpuException.class, () -> WarmUpSession.run(backend, 0));
            assertEquals(ErrorCode.CUDA_ERROR_OUT_OF_MEMORY, e.code());
            assertTrue(
                    e.getMessage()
                            .startsWith("CUDA_ERROR_OUT_OF_MEMORY: the worker's warm-up session failed: CPU emulation:"
                                    + " 4194304 bytes do not fit"),
                    e.getMessage());
        }
    }

    @Test
    void theWaitForTheCompilerEndsOnceItsTotalStopsGrowing() {
        AtomicLong polls = new AtomicLong();
        // compile time grows over the first five polls, then stays
        LongSupplier total = () -> Math.min(polls.incrementAndGet(), 5) * 10;
        assertTrue(WarmUpSession.awaitCompilerIdle(total, Duration.ofMillis(20), Duration.ofSeconds(30)));
        assertTrue(polls.get() >= 5, "it polled until the total stopped growing, " + polls.get() + " polls");
    }

    @Test
    void aCompilerThatNeverGoesQuietIsWaitedForOnlyUpToTheLimit() {
        AtomicLong polls = new AtomicLong();
        assertFalse(
                WarmUpSession.awaitCompilerIdle(polls::incrementAndGet, Duration.ofSeconds(30), Duration.ofMillis(50)));
        assertTrue(polls.get() >= 1);
    }

    private static long freeMemory(EmulatedBackend backend) {
        try (VirtualGpu gpu = backend.open(0, VaWindow.forVgpu(0))) {
            return gpu.memGetInfo().free();
        }
    }
}
