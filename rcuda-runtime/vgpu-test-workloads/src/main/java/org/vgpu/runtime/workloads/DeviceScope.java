package org.vgpu.runtime.workloads;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Function;

import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.core.FailureCollector;
import org.vgpu.runtime.kernels.TestKernels;

/**
 * The device side of one workload run: its allocations and the test-kernel module, released
 * together on {@link #close}, also when the run fails half-way. Host arrays are copied as they lie
 * in memory, which is the device's little-endian layout on every host vgpu runs on (x86-64, aarch64).
 */
final class DeviceScope implements AutoCloseable {
    /** Threads per block of 1-D launches: a multiple of the warp size that any GPU accepts. */
    static final int BLOCK_1D = 256;
    /** Block edge of 2-D launches (16 x 16 = 256 threads). */
    static final int BLOCK_2D = 16;

    private final VirtualGpu gpu;
    private final Deque<Long> allocations = new ArrayDeque<>();
    private final Map<String, FunctionHandle> functions = new HashMap<>();
    private ModuleHandle module;
    private int launches;

    /** What a run on the device produced, how long the device part took, and how many kernels it launched. */
    record DeviceRun<T>(T output, Duration elapsed, int launches) {}

    private DeviceScope(VirtualGpu gpu) {
        this.gpu = gpu;
    }

    /**
     * Runs {@code work} with a fresh scope and times it, releasing the scope's allocations and
     * module (inside the timing, as they are part of what the device does for the workload).
     */
    static <T> DeviceRun<T> run(VirtualGpu gpu, Function<DeviceScope, T> work) {
        long start = System.nanoTime();
        T output;
        int launches;
        try (DeviceScope scope = new DeviceScope(gpu)) {
            output = work.apply(scope);
            launches = scope.launches;
        }
        return new DeviceRun<>(output, Duration.ofNanos(System.nanoTime() - start), launches);
    }

    long allocate(long bytes) {
        long address = gpu.memAlloc(bytes);
        allocations.push(address);
        return address;
    }

    /** An allocation of {@code bytes} set to zero. */
    long allocateZeroed(long bytes) {
        long address = allocate(bytes);
        gpu.memsetD8(address, (byte) 0, bytes);
        return address;
    }

    long upload(float[] values) {
        return upload(MemorySegment.ofArray(values));
    }

    long upload(int[] values) {
        return upload(MemorySegment.ofArray(values));
    }

    long upload(long[] values) {
        return upload(MemorySegment.ofArray(values));
    }

    long upload(byte[] values) {
        return upload(MemorySegment.ofArray(values));
    }

    private long upload(MemorySegment host) {
        long address = allocate(host.byteSize());
        gpu.memcpyHtoD(address, host, host.byteSize());
        return address;
    }

    /** Copies {@code values} to {@code address}, for images that must know their own addresses first. */
    void write(long address, long[] values) {
        gpu.memcpyHtoD(address, MemorySegment.ofArray(values), (long) values.length * Long.BYTES);
    }

    float[] readFloats(long address, int count) {
        float[] values = new float[count];
        gpu.memcpyDtoH(MemorySegment.ofArray(values), address, (long) count * Float.BYTES);
        return values;
    }

    int[] readInts(long address, int count) {
        int[] values = new int[count];
        gpu.memcpyDtoH(MemorySegment.ofArray(values), address, (long) count * Integer.BYTES);
        return values;
    }

    long[] readLongs(long address, int count) {
        long[] values = new long[count];
        gpu.memcpyDtoH(MemorySegment.ofArray(values), address, (long) count * Long.BYTES);
        return values;
    }

    /** Launches a test kernel on the default stream, loading the module on first use. */
    void launch(String kernel, Dim3 grid, Dim3 block, KernelArgs args) {
        gpu.launchKernel(function(kernel), grid, block, 0, StreamHandle.DEFAULT, args);
        launches++;
    }

    /** One thread per index in {@code [0, threads)}, in blocks of {@link #BLOCK_1D}. */
    void launch1D(String kernel, int threads, KernelArgs args) {
        launch(kernel, Dim3.of(blocks(threads, BLOCK_1D)), Dim3.of(BLOCK_1D), args);
    }

    /** One thread per (x, y) index in {@code [0, columns) x [0, rows)}, in square blocks of {@link #BLOCK_2D}. */
    void launch2D(String kernel, int columns, int rows, KernelArgs args) {
        launch(kernel, Dim3.of(blocks(columns, BLOCK_2D), blocks(rows, BLOCK_2D)), Dim3.of(BLOCK_2D, BLOCK_2D), args);
    }

    private static int blocks(int threads, int blockSize) {
        return (int) Math.max(1, (threads + (long) blockSize - 1) / blockSize);
    }

    private FunctionHandle function(String kernel) {
        if (module == null) {
            module = gpu.moduleLoadData(TestKernels.ptx());
        }
        return functions.computeIfAbsent(kernel, name -> gpu.moduleGetFunction(module, name));
    }

    /** Frees every allocation, newest first, and unloads the module; the first failure is rethrown after the rest. */
    @Override
    public void close() {
        FailureCollector failures = new FailureCollector();
        while (!allocations.isEmpty()) {
            long address = allocations.pop();
            failures.attempt(() -> gpu.memFree(address));
        }
        if (module != null) {
            ModuleHandle loaded = module;
            module = null;
            failures.attempt(() -> gpu.moduleUnload(loaded));
        }
        failures.rethrow();
    }
}
