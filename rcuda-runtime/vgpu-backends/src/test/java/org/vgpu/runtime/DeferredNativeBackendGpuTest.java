package org.vgpu.runtime;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.nativegpu.NativeBackend;

/**
 * On a GPU machine: a job's backend deferred because the first load saw no device (stood in here: the cgroup that
 * refuses the GPU needs root, see testbed/gpu/cgroup-grant-probe.c for the driver's side) drives the real GPU natively
 * once the load succeeds, through the real {@link NativeBackend#load} retried at open.
 */
@Tag("gpu")
@Timeout(120)
class DeferredNativeBackendGpuTest {

    @Test
    void aDeferredJobBackendOpensTheRealGpuOnceTheDriverSeesIt() {
        AtomicBoolean admitted = new AtomicBoolean();
        GpuBackend local = Backends.select(
                Backends.AUTO,
                4,
                () -> {
                    if (!admitted.get()) {
                        throw new NativeBackend.NoDeviceSeen("the GPU is not admitted yet (stand-in)");
                    }
                    return NativeBackend.load();
                },
                true);
        try (DeferredNativeBackend deferred = assertInstanceOf(DeferredNativeBackend.class, local);
                Arena arena = Arena.ofConfined()) {
            assertEquals(0, deferred.deviceCount());
            assertThrows(VgpuException.class, () -> deferred.open(0, VaWindow.forVgpu(0)));

            admitted.set(true);
            try (VirtualGpu gpu = deferred.open(0, VaWindow.forVgpu(0))) {
                assertEquals(NativeBackend.NAME, gpu.backendName());
                int bytes = 1 << 20;
                long address = gpu.memAlloc(bytes);
                gpu.memsetD8(address, (byte) 7, bytes);
                MemorySegment back = arena.allocate(bytes);
                gpu.memcpyDtoH(back, address, bytes);
                byte[] expected = new byte[bytes];
                Arrays.fill(expected, (byte) 7);
                assertArrayEquals(expected, back.toArray(ValueLayout.JAVA_BYTE));
                System.out.println("deferred native backend opened "
                        + deferred.deviceProperties(0).name() + " at PCI "
                        + deferred.pciBusId(0).orElse("?"));
            }
        }
    }
}
