package org.vgpu.runtime.kernels;

import static org.vgpu.runtime.kernels.TwinMemory.FLOAT;
import static org.vgpu.runtime.kernels.TwinMemory.INT;

import java.lang.foreign.MemorySegment;

import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.emulated.EmulatedMemory;

/** Twins of emptyKernel, vectorAdd, saxpy, matMul and transpose in test_kernels.cu. */
final class LinearAlgebraTwins {
    private LinearAlgebraTwins() {}

    /** {@code emptyKernel()}: touches nothing. */
    static void emptyKernel(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {}

    /** {@code vectorAdd(const float* a, const float* b, float* c, int n)}. */
    static void vectorAdd(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        ThreadGrid threads = new ThreadGrid(grid, block);
        int active = threads.activeX(args.i32(3));
        if (active == 0) {
            return;
        }
        MemorySegment a = TwinMemory.floats(memory, args.pointer(0), active);
        MemorySegment b = TwinMemory.floats(memory, args.pointer(1), active);
        MemorySegment c = TwinMemory.floats(memory, args.pointer(2), active);
        for (long copy = 0; copy < threads.threadsPerX(); copy++) {
            for (int i = 0; i < active; i++) {
                c.setAtIndex(FLOAT, i, a.getAtIndex(FLOAT, i) + b.getAtIndex(FLOAT, i));
            }
        }
    }

    /** {@code saxpy(int n, float a, const float* x, float* y)}. */
    static void saxpy(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        ThreadGrid threads = new ThreadGrid(grid, block);
        int active = threads.activeX(args.i32(0));
        if (active == 0) {
            return;
        }
        float a = args.f32(1);
        MemorySegment x = TwinMemory.floats(memory, args.pointer(2), active);
        MemorySegment y = TwinMemory.floats(memory, args.pointer(3), active);
        for (long copy = 0; copy < threads.threadsPerX(); copy++) {
            for (int i = 0; i < active; i++) {
                y.setAtIndex(FLOAT, i, a * x.getAtIndex(FLOAT, i) + y.getAtIndex(FLOAT, i));
            }
        }
    }

    /** {@code matMul(const float* A, const float* B, float* C, int n)}: x is the column, y the row. */
    static void matMul(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        ThreadGrid threads = new ThreadGrid(grid, block);
        int n = args.i32(3);
        int rows = threads.activeY(n);
        int cols = threads.activeX(n);
        if (rows == 0 || cols == 0) {
            return;
        }
        // Active rows read whole rows of A; active columns read B down to its last row.
        MemorySegment a = TwinMemory.floats(memory, args.pointer(0), (long) rows * n);
        MemorySegment b = TwinMemory.floats(memory, args.pointer(1), (long) (n - 1) * n + cols);
        MemorySegment c = TwinMemory.floats(memory, args.pointer(2), (long) (rows - 1) * n + cols);
        for (long copy = 0; copy < threads.threadsPerXY(); copy++) {
            for (int row = 0; row < rows; row++) {
                for (int col = 0; col < cols; col++) {
                    float sum = 0.0f;
                    for (int k = 0; k < n; k++) {
                        sum += a.getAtIndex(FLOAT, (long) row * n + k) * b.getAtIndex(FLOAT, (long) k * n + col);
                    }
                    c.setAtIndex(FLOAT, (long) row * n + col, sum);
                }
            }
        }
    }

    /** {@code transpose(const float* in, float* out, int rows, int cols)}: x is the column of {@code in}, y its row. */
    static void transpose(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        ThreadGrid threads = new ThreadGrid(grid, block);
        int rows = args.i32(2);
        int cols = args.i32(3);
        int activeRows = threads.activeY(rows);
        int activeCols = threads.activeX(cols);
        if (activeRows == 0 || activeCols == 0) {
            return;
        }
        MemorySegment in = TwinMemory.floats(memory, args.pointer(0), (long) (activeRows - 1) * cols + activeCols);
        MemorySegment out = TwinMemory.floats(memory, args.pointer(1), (long) (activeCols - 1) * rows + activeRows);
        // Moved as raw 32-bit words, as the GPU's load and store do: even NaN payloads survive.
        for (long copy = 0; copy < threads.threadsPerXY(); copy++) {
            for (int row = 0; row < activeRows; row++) {
                for (int col = 0; col < activeCols; col++) {
                    out.setAtIndex(INT, (long) col * rows + row, in.getAtIndex(INT, (long) row * cols + col));
                }
            }
        }
    }
}
