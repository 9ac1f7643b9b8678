package org.vgpu.migration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import org.vgpu.runtime.api.ContextLimit;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.EventHandle;
import org.vgpu.runtime.api.ForwardingVirtualGpu;
import org.vgpu.runtime.api.FunctionAttribute;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.kernels.TestKernels;

/**
 * The two passes of a replay: ahead of the lock everything live, under it only what the app
 * changed since, so that the target ends equal to the log either way.
 */
class ReplayTest {
    private static final long KIB4 = 4096;

    /** The replay calls a target received, by name (and the allocations' count for memAllocAllAt). */
    private static final class RecordingTarget extends ForwardingVirtualGpu {
        final List<String> calls = new ArrayList<>();

        RecordingTarget(VirtualGpu delegate) {
            super(delegate);
        }

        @Override
        public ModuleHandle moduleLoadData(byte[] image) {
            calls.add("moduleLoadData");
            return super.moduleLoadData(image);
        }

        @Override
        public void moduleUnload(ModuleHandle module) {
            calls.add("moduleUnload");
            super.moduleUnload(module);
        }

        @Override
        public FunctionHandle moduleGetFunction(ModuleHandle module, String kernelName) {
            calls.add("moduleGetFunction " + kernelName);
            return super.moduleGetFunction(module, kernelName);
        }

        @Override
        public void funcSetAttribute(FunctionHandle function, FunctionAttribute attribute, int value) {
            calls.add("funcSetAttribute " + value);
            super.funcSetAttribute(function, attribute, value);
        }

        @Override
        public void ctxSetLimit(ContextLimit limit, long value) {
            calls.add("ctxSetLimit " + value);
            super.ctxSetLimit(limit, value);
        }

        @Override
        public StreamHandle streamCreate() {
            calls.add("streamCreate");
            return super.streamCreate();
        }

        @Override
        public void streamDestroy(StreamHandle stream) {
            calls.add("streamDestroy");
            super.streamDestroy(stream);
        }

        @Override
        public EventHandle eventCreate() {
            calls.add("eventCreate");
            return super.eventCreate();
        }

        @Override
        public void eventDestroy(EventHandle event) {
            calls.add("eventDestroy");
            super.eventDestroy(event);
        }

        @Override
        public void memAllocAllAt(List<DeviceRegion> allocations) {
            calls.add("memAllocAllAt " + allocations.size());
            super.memAllocAllAt(allocations);
        }

        @Override
        public void memFree(long address) {
            calls.add("memFree");
            super.memFree(address);
        }

        List<String> drain() {
            List<String> made = List.copyOf(calls);
            calls.clear();
            return made;
        }
    }

    @Test
    void underTheLockTheReplayMakesOnlyWhatChangedSinceItRanAheadAndTheTargetEndsEqualToTheLog() {
        VaWindow window = VaWindow.forVgpu(0);
        try (Emulation emulation = new Emulation(1);
                RecordingTarget target = new RecordingTarget(emulation.backend.open(0, window))) {
            ReplayLog log = new ReplayLog();
            log.setSetting(new GatedVirtualGpu.CtxSetLimitSetting(ContextLimit.STACK_SIZE, 2048));
            ModuleHandle kept = log.addModule(TestKernels.ptx(), null);
            ModuleHandle unloaded = log.addModule(TestKernels.ptx(), null);
            FunctionHandle saxpy = log.addFunction(kept, TestKernels.SAXPY, null);
            log.setSetting(new GatedVirtualGpu.FuncSetAttributeSetting(
                    saxpy, FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, 1024));
            log.addFunction(unloaded, TestKernels.VECTOR_ADD, null);
            StreamHandle keptStream = log.addStream(null);
            StreamHandle destroyedStream = log.addStream(null);
            EventHandle destroyedEvent = log.addEvent(null);
            long base = window.base();
            for (int k = 0; k < 4; k++) {
                log.addAllocation(base + k * KIB4, KIB4);
            }
            Replay replay = new Replay(log, target);

            replay.ahead(MigrationFaults.NONE);
            assertEquals(
                    List.of(
                            "ctxSetLimit 2048",
                            "moduleLoadData",
                            "moduleLoadData",
                            "moduleGetFunction " + TestKernels.SAXPY,
                            "funcSetAttribute 1024",
                            "moduleGetFunction " + TestKernels.VECTOR_ADD,
                            "streamCreate",
                            "streamCreate",
                            "eventCreate",
                            "memAllocAllAt 4"),
                    target.drain());

            // what the app does meanwhile, the migration lock still open
            log.removeModule(unloaded);
            ModuleHandle loaded = log.addModule(TestKernels.ptx(), null);
            log.addFunction(loaded, TestKernels.EMPTY_KERNEL, null);
            log.setSetting(new GatedVirtualGpu.FuncSetAttributeSetting(
                    saxpy, FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, 2048));
            log.removeStream(destroyedStream);
            log.removeEvent(destroyedEvent);
            log.addEvent(null);
            log.removeAllocation(base + KIB4);
            log.removeAllocation(base + 3 * KIB4);
            log.addAllocation(base + 3 * KIB4, 2 * KIB4); // the same address, another size
            log.addAllocation(base + 8 * KIB4, KIB4);

            ReplayLog.Rebinding rebinding = replay.catchUp(MigrationFaults.NONE);
            assertEquals(
                    List.of(
                            "moduleUnload",
                            "streamDestroy",
                            "eventDestroy",
                            "moduleLoadData",
                            "funcSetAttribute 2048",
                            "moduleGetFunction " + TestKernels.EMPTY_KERNEL,
                            "eventCreate",
                            "memFree",
                            "memFree",
                            "memAllocAllAt 2"),
                    target.drain());

            // the target holds the log's allocations and nothing else; mem-sync copies them
            assertEquals(log.regions(), replay.allocations());
            for (DeviceRegion region : log.regions()) {
                assertEquals(region, target.memGetAddressRange(region.address()));
            }
            VgpuException freed = assertThrows(VgpuException.class, () -> target.memGetAddressRange(base + KIB4));
            assertEquals(ErrorCode.CUDA_ERROR_NOT_FOUND, freed.code());
            assertEquals(
                    2048,
                    target.funcGetAttribute(
                            FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, saxpyOnTarget(log, rebinding, saxpy)));
            assertEquals(2048, target.ctxGetLimit(ContextLimit.STACK_SIZE));
            target.streamSynchronize(log.backendStream(keptStream));

            // a second catch-up with nothing changed makes no call
            replay.catchUp(MigrationFaults.NONE);
            assertEquals(List.of(), target.drain());
            assertEquals(log.regions(), replay.allocations());
        }
    }

    /**
     * An app that is allocating or freeing at every try of the replay ahead: no allocation is placed
     * ahead (a list read then could hold a freed one and its successor, overlapping), and the
     * catch-up places them all, whatever the count of changes says by then.
     */
    @Test
    void allocationsReadWhileAChangeIsUnderWayAreLeftToTheCatchUp() {
        VaWindow window = VaWindow.forVgpu(0);
        try (Emulation emulation = new Emulation(1);
                RecordingTarget target = new RecordingTarget(emulation.backend.open(0, window))) {
            ReplayLog log = new ReplayLog();
            for (int k = 0; k < 3; k++) {
                log.addAllocation(window.base() + k * KIB4, KIB4);
            }
            Replay replay = new Replay(log, target);
            log.changing(); // a free or an allocation under way, through every try
            replay.ahead(MigrationFaults.NONE);
            assertEquals(List.of(), target.drain(), "nothing placed ahead");
            assertEquals(List.of(), replay.allocations());

            replay.catchUp(MigrationFaults.NONE);
            assertEquals(List.of("memAllocAllAt 3"), target.drain());
            assertEquals(log.regions(), replay.allocations());
        }
    }

    /** A function's settings go with its module; one recorded for a function already gone is not kept. */
    @Test
    void theSettingsOfAFunctionAreForgottenWithItsModule() {
        ReplayLog log = new ReplayLog();
        log.setSetting(new GatedVirtualGpu.CtxSetLimitSetting(ContextLimit.STACK_SIZE, 2048));
        ModuleHandle kept = log.addModule(TestKernels.ptx(), null);
        ModuleHandle unloaded = log.addModule(TestKernels.ptx(), null);
        FunctionHandle saxpy = log.addFunction(kept, TestKernels.SAXPY, null);
        FunctionHandle vectorAdd = log.addFunction(unloaded, TestKernels.VECTOR_ADD, null);
        GatedVirtualGpu.Setting ofSaxpy = new GatedVirtualGpu.FuncSetAttributeSetting(
                saxpy, FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, 1024);
        log.setSetting(ofSaxpy);
        log.setSetting(new GatedVirtualGpu.FuncSetAttributeSetting(
                vectorAdd, FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, 4096));
        log.setSetting(new GatedVirtualGpu.FuncSetAttributeSetting(
                vectorAdd, FunctionAttribute.PREFERRED_SHARED_MEMORY_CARVEOUT, 50));
        assertEquals(4, log.settings().size());

        log.removeModule(unloaded);
        assertEquals(
                List.of(new GatedVirtualGpu.CtxSetLimitSetting(ContextLimit.STACK_SIZE, 2048), ofSaxpy),
                log.settings());
        log.setSetting(new GatedVirtualGpu.FuncSetAttributeSetting(
                vectorAdd, FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, 8192));
        assertEquals(2, log.settings().size(), "a setting of a function unloaded meanwhile is not kept");
    }

    /** The target's handle for the app's function, as the switch would make it current. */
    private static FunctionHandle saxpyOnTarget(ReplayLog log, ReplayLog.Rebinding rebinding, FunctionHandle app) {
        rebinding.commit();
        return log.backendFunction(app);
    }
}
