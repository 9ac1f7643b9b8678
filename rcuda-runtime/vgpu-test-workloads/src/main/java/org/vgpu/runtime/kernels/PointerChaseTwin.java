package org.vgpu.runtime.kernels;

import static org.vgpu.runtime.kernels.TwinMemory.LONG;

import java.lang.foreign.MemorySegment;

import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.emulated.EmulatedMemory;

/** Twin of pointerChase in test_kernels.cu. */
final class PointerChaseTwin {
    private PointerChaseTwin() {}

    /**
     * {@code pointerChase(const unsigned long long* starts, unsigned long long* payloads, int n, int steps)}.
     * Every node is looked up at the address stored in device memory, so a stale or corrupted
     * pointer faults exactly where the GPU would.
     */
    static void pointerChase(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        ThreadGrid threads = new ThreadGrid(grid, block);
        int active = threads.activeX(args.i32(2));
        if (active == 0) {
            return;
        }
        int steps = args.i32(3);
        MemorySegment starts = TwinMemory.longs(memory, args.pointer(0), active);
        MemorySegment payloads = TwinMemory.longs(memory, args.pointer(1), active);
        for (long copy = 0; copy < threads.threadsPerX(); copy++) {
            for (int i = 0; i < active; i++) {
                long node = starts.getAtIndex(LONG, i);
                for (int s = 0; s < steps; s++) {
                    node = TwinMemory.longs(memory, node, 1).getAtIndex(LONG, 0);
                }
                payloads.setAtIndex(
                        LONG, i, TwinMemory.longs(memory, node + Long.BYTES, 1).getAtIndex(LONG, 0));
            }
        }
    }
}
