package org.vgpu.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

import org.junit.jupiter.api.Test;

import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.nativegpu.NativeBackend;

/**
 * A job's local backend ({@link Backends#select} with job = true), with a stand-in for the native loader (no GPU
 * here): driver present but no device seen defers the native backend instead of falling back to the emulation, and
 * the deferred backend loads at the next use once the driver sees a device; a missing driver still means the
 * emulation under auto.
 */
class JobBackendTest {
    private static final String NO_DEVICE = "the NVIDIA driver sees no CUDA device";

    /** Loads as scripted: each call takes the next outcome (a backend, or an exception to throw); counts calls. */
    private static final class ScriptedLoader implements Supplier<GpuBackend> {
        private final Deque<Object> outcomes = new ArrayDeque<>();
        int calls;

        ScriptedLoader then(Object outcome) {
            outcomes.add(outcome);
            return this;
        }

        @Override
        public GpuBackend get() {
            calls++;
            Object next = outcomes.size() > 1 ? outcomes.poll() : outcomes.peek();
            if (next instanceof RuntimeException failure) {
                throw failure;
            }
            return (GpuBackend) next;
        }
    }

    /** The GPU the cgroup admits later, standing in for the loaded native backend. */
    private final EmulatedBackend admitted = Backends.emulated(1);

    @Test
    void driverPresentWithoutDeviceDefersTheNativeBackendInsteadOfEmulating() {
        ScriptedLoader loader = new ScriptedLoader().then(new NativeBackend.NoDeviceSeen(NO_DEVICE));
        for (String name : new String[] {Backends.AUTO, NativeBackend.NAME}) {
            GpuBackend local = Backends.select(name, 4, loader, true);
            DeferredNativeBackend deferred = assertInstanceOf(DeferredNativeBackend.class, local, name);
            assertFalse(deferred.isEmulation(), "not the emulation");
            assertEquals(NativeBackend.NAME, deferred.name());
            assertFalse(deferred.loaded());
            assertEquals(0, deferred.deviceCount(), "no device yet, and no failure");
            assertEquals(Optional.empty(), deferred.pciBusId(0));
            VgpuException refused = assertThrows(VgpuException.class, () -> deferred.open(0, VaWindow.forVgpu(0)));
            assertEquals(ErrorCode.VGPU_BACKEND_UNAVAILABLE, refused.code());
            assertTrue(
                    refused.getMessage().contains("no GPU of this node is admitted to this job yet"),
                    refused.getMessage());
            assertTrue(refused.getMessage().contains(NO_DEVICE), refused.getMessage());
        }
    }

    @Test
    void theDeferredBackendLoadsWhenTheDriverSeesTheGrantedGpuAndOpensOnIt() {
        ScriptedLoader loader = new ScriptedLoader()
                .then(new NativeBackend.NoDeviceSeen(NO_DEVICE))
                .then(new NativeBackend.NoDeviceSeen(NO_DEVICE))
                .then(admitted);
        DeferredNativeBackend deferred =
                assertInstanceOf(DeferredNativeBackend.class, Backends.select(Backends.AUTO, 4, loader, true));
        assertEquals(1, loader.calls);
        assertThrows(VgpuException.class, () -> deferred.open(0, VaWindow.forVgpu(0)), "still refused");
        assertEquals(2, loader.calls, "open retried the load");

        try (VirtualGpu gpu = deferred.open(0, VaWindow.forVgpu(0))) {
            assertEquals(3, loader.calls, "the grant's open loaded the backend");
            assertTrue(deferred.loaded());
            long address = gpu.memAlloc(4096);
            gpu.memsetD8(address, (byte) 5, 4096);
            gpu.ctxSynchronize();
        }
        assertEquals(1, deferred.deviceCount());
        assertEquals(admitted.deviceProperties(0), deferred.deviceProperties(0));
        assertEquals(3, loader.calls, "loaded once, never again");
    }

    /** The admitted GPU's backend, noting the host memory it page-locks and releases. */
    private final class RegisteringBackend implements GpuBackend {
        final List<MemorySegment> registered = new ArrayList<>();
        final List<MemorySegment> unregistered = new ArrayList<>();

        @Override
        public String name() {
            return NativeBackend.NAME;
        }

        @Override
        public boolean isEmulation() {
            return false;
        }

        @Override
        public int deviceCount() {
            return admitted.deviceCount();
        }

        @Override
        public DeviceProperties deviceProperties(int device) {
            return admitted.deviceProperties(device);
        }

        @Override
        public VirtualGpu open(int device, VaWindow window) {
            return admitted.open(device, window);
        }

        @Override
        public boolean hostRegister(MemorySegment host) {
            registered.add(host);
            return true;
        }

        @Override
        public void hostUnregister(MemorySegment host) {
            unregistered.add(host);
        }
    }

    /**
     * Host memory shared with a program before the job's GPU was admitted is page-locked when the backend loads, so a
     * vGPU that migrates home onto the granted GPU copies it as pinned memory; it is released there once freed.
     */
    @Test
    void hostMemoryRegisteredBeforeTheGrantIsRegisteredWhenTheBackendLoads() {
        RegisteringBackend granted = new RegisteringBackend();
        ScriptedLoader loader = new ScriptedLoader()
                .then(new NativeBackend.NoDeviceSeen(NO_DEVICE))
                .then(granted);
        DeferredNativeBackend deferred =
                assertInstanceOf(DeferredNativeBackend.class, Backends.select(Backends.AUTO, 4, loader, true));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment early = arena.allocate(8192, 4096);
            MemorySegment freedEarly = arena.allocate(4096, 4096);
            assertFalse(deferred.hostRegister(early), "nothing to lock it with yet");
            assertFalse(deferred.hostRegister(freedEarly));
            deferred.hostUnregister(freedEarly);
            assertTrue(granted.registered.isEmpty());

            try (VirtualGpu home = deferred.open(0, VaWindow.forVgpu(0))) {
                assertEquals(List.of(early), granted.registered, "registered as the granted GPU's backend loaded");
                long address = home.memAlloc(8192);
                early.fill((byte) 4);
                home.memcpyHtoD(address, early, 8192);
                byte[] back = new byte[8192];
                home.memcpyDtoH(MemorySegment.ofArray(back), address, 8192);
                assertEquals(4, back[8191]);
            }
            MemorySegment late = arena.allocate(4096, 4096);
            assertTrue(deferred.hostRegister(late), "registered at once once loaded");
            deferred.hostUnregister(early);
            deferred.hostUnregister(late);
            assertEquals(List.of(early, late), granted.unregistered);
            assertTrue(granted.unregistered.stream().noneMatch(freedEarly::equals));
        }
    }

    @Test
    void countingDevicesRetriesTheLoadSoAGrantedGpuCanBeFound() {
        ScriptedLoader loader = new ScriptedLoader()
                .then(new NativeBackend.NoDeviceSeen(NO_DEVICE))
                .then(admitted);
        GpuBackend local = Backends.select(Backends.AUTO, 4, loader, true);
        assertEquals(1, local.deviceCount());
        assertEquals(2, loader.calls);
    }

    @Test
    void driverAbsentMeansTheEmulationUnderAutoAndAFailureUnderNative() {
        VgpuException noDriver =
                new VgpuException(ErrorCode.VGPU_BACKEND_UNAVAILABLE, "cannot load libcuda.so.1, the NVIDIA driver");
        ScriptedLoader loader = new ScriptedLoader().then(noDriver);
        GpuBackend auto = Backends.select(Backends.AUTO, 3, loader, true);
        assertInstanceOf(EmulatedBackend.class, auto);
        assertEquals(3, auto.deviceCount());
        assertSame(
                noDriver,
                assertThrows(VgpuException.class, () -> Backends.select(NativeBackend.NAME, 3, loader, true)));
    }

    @Test
    void outsideAJobNoDeviceStillMeansTheEmulationUnderAuto() {
        ScriptedLoader loader = new ScriptedLoader().then(new NativeBackend.NoDeviceSeen(NO_DEVICE));
        assertInstanceOf(EmulatedBackend.class, Backends.select(Backends.AUTO, 4, loader, false));
        assertThrows(NativeBackend.NoDeviceSeen.class, () -> Backends.select(NativeBackend.NAME, 4, loader, false));
    }

    @Test
    void aDriverThatLoadsIsUsedAsIs() {
        ScriptedLoader loader = new ScriptedLoader().then(admitted);
        assertSame(admitted, Backends.select(Backends.AUTO, 4, loader, true));
    }
}
