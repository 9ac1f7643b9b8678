package org.vgpu.runtime.kernels;

import static org.vgpu.runtime.kernels.TwinMemory.INT;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.emulated.EmulatedMemory;

/** Twin of swAntiDiagonal in test_kernels.cu. */
final class SmithWatermanTwin {
    private SmithWatermanTwin() {}

    /**
     * {@code swAntiDiagonal(const char* seqA, const char* seqB, int* H, int lenA, int lenB, int diag,
     * int match, int mismatch, int gap)}: thread t scores cell (firstRow + t, diag - firstRow - t).
     */
    static void swAntiDiagonal(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        ThreadGrid threads = new ThreadGrid(grid, block);
        int lenA = args.i32(3);
        int lenB = args.i32(4);
        int diag = args.i32(5);
        int match = args.i32(6);
        int mismatch = args.i32(7);
        int gap = args.i32(8);
        int firstRow = Math.max(1, diag - lenB);
        int lastRow = Math.min(lenA, diag - 1);
        long cells = Math.min((long) lastRow - firstRow + 1, threads.threadsX());
        if (cells <= 0) {
            return;
        }
        int lastActiveRow = (int) (firstRow + cells - 1);
        long width = lenB + 1L;
        // Rows grow and columns shrink along the diagonal, so the first cell's upper-left
        // neighbour is the lowest index touched and the last cell itself the highest.
        long lowestCell = (firstRow - 1) * width + (diag - firstRow - 1);
        long highestCell = lastActiveRow * width + (diag - lastActiveRow);
        MemorySegment h =
                TwinMemory.ints(memory, args.pointer(2) + lowestCell * Integer.BYTES, highestCell - lowestCell + 1);
        MemorySegment seqA = TwinMemory.bytes(memory, args.pointer(0) + firstRow - 1, cells);
        MemorySegment seqB = TwinMemory.bytes(memory, args.pointer(1) + diag - lastActiveRow - 1, cells);
        for (long copy = 0; copy < threads.threadsPerX(); copy++) {
            for (int i = firstRow; i <= lastActiveRow; i++) {
                int j = diag - i;
                long here = i * width + j - lowestCell;
                byte a = seqA.get(ValueLayout.JAVA_BYTE, i - firstRow);
                byte b = seqB.get(ValueLayout.JAVA_BYTE, j - (diag - lastActiveRow));
                int score = h.getAtIndex(INT, here - width - 1) + (a == b ? match : mismatch);
                score = Math.max(score, h.getAtIndex(INT, here - width) - gap);
                score = Math.max(score, h.getAtIndex(INT, here - 1) - gap);
                h.setAtIndex(INT, here, Math.max(score, 0));
            }
        }
    }
}
