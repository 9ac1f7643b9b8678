package org.vgpu.migration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import org.vgpu.common.error.InputException;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.nativegpu.NativeBackend;
import org.vgpu.runtime.workloads.PointerChaseWorkload;
import org.vgpu.runtime.workloads.WorkloadResult;

/**
 * On a real GPU: a MigratableGpu over the native backend runs a workload, and native-to-native in
 * one process is refused before anything is touched (the source holds the window the target would
 * need), so the vGPU keeps running on its GPU with its data; a move onto the GPU it runs on is refused
 * as nothing to do.
 */
@Tag("gpu")
class NativeMigratableGpuTest {

    @Test
    void nativeToNativeInOneProcessIsRefusedAndTheVgpuKeepsItsData() {
        try (NativeBackend backend = NativeBackend.load();
                MigratableGpu gpu = new MigratableGpu(
                        backend.open(0, VaWindow.forVgpu(0)),
                        new MigrationTarget.LocalGpu(0),
                        new NodeTargetResolver(backend),
                        MigrationConfig.DEFAULTS.withVerifyCopies(true),
                        MigrationListener.NONE,
                        MigrationFaults.NONE)) {
            long data = gpu.memAlloc(1 << 20);
            gpu.memsetD32(data, 0x600DF00D, (1 << 20) / 4);
            InputException nothingToDo =
                    assertThrows(InputException.class, () -> gpu.migrate(new MigrationTarget.LocalGpu(0)));
            assertTrue(nothingToDo.getMessage().contains("already runs on gpu 0"), nothingToDo.getMessage());
            for (int device = 1; device < backend.deviceCount(); device++) {
                MigrationTarget target = new MigrationTarget.LocalGpu(device);
                MigrationException refused = assertThrows(MigrationException.class, () -> gpu.migrate(target));
                assertEquals(ErrorCode.CUDA_ERROR_NOT_SUPPORTED, refused.code(), refused.getMessage());
                assertEquals(MigrationStep.OPEN_TARGET, refused.failedStep());
            }
            int[] word = new int[1];
            gpu.memcpyDtoH(MemorySegment.ofArray(word), data + (1 << 20) - 4, 4);
            assertEquals(0x600DF00D, word[0]);
            WorkloadResult result = new PointerChaseWorkload().run(gpu, 1, 3);
            assertTrue(result.passed(), result.errorSummary());
            assertEquals("native", result.backend());
        }
    }
}
