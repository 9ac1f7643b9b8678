package org.vgpu.bench;

import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.JCudaDriver;
import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

import org.vgpu.common.cli.CommandLines;
import org.vgpu.common.cli.Subcommand;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.kernels.TestKernels;
import org.vgpu.runtime.nativegpu.CudaErrors;
import org.vgpu.runtime.nativegpu.NativeBackend;

/**
 * {@code vgpu bench}: what the VirtualGpu API costs on a native GPU, against the same operations
 * written in raw JCuda, in one process on one device and one context. Every trial runs each
 * operation both ways, alternating which goes first so neither profits from a warmer cache; the
 * table shows medians over the trials and the ratio vgpu/raw, with the goal of at most 1.05. It is
 * a measurement, never an assertion: the exit status says only whether the runs worked.
 */
public final class BenchCommand implements Subcommand {
    private static final double GOAL_RATIO = 1.05;
    private static final int WARM_UP_TRIALS = 2;
    private static final int SMALL_COPY_BYTES = 4 << 10;
    private static final long LARGE_COPY_BYTES = 256L << 20;
    private static final int LARGE_COPIES_PER_TRIAL = 4;
    private static final Dim3 ONE = Dim3.of(1);

    @Override
    public String name() {
        return "bench";
    }

    @Override
    public String summary() {
        return "time the native backend against raw JCuda on one GPU (launches, copies) and print the ratios";
    }

    @Override
    public Options options() {
        return new Options()
                .addOption(Option.builder()
                        .longOpt("device")
                        .hasArg()
                        .argName("N")
                        .desc("GPU to use (default 0)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("iterations")
                        .hasArg()
                        .argName("N")
                        .desc("asynchronous empty launches per trial (default 20000); synchronous launches and 4 KiB"
                                + " copies run a tenth of that, 256 MiB copies " + LARGE_COPIES_PER_TRIAL)
                        .get())
                .addOption(Option.builder()
                        .longOpt("trials")
                        .hasArg()
                        .argName("N")
                        .desc("timed trials whose median is reported (default 15), after " + WARM_UP_TRIALS
                                + " warm-up trials")
                        .get());
    }

    @Override
    public int run(CommandLine line, PrintStream out, PrintStream err) throws ParseException {
        int device = CommandLines.intValue(line, "device", 0, 0);
        int iterations = CommandLines.intValue(line, "iterations", 20_000, 10);
        int trials = CommandLines.intValue(line, "trials", 15, 1);
        try (NativeBackend backend = NativeBackend.load()) {
            if (device >= backend.deviceCount()) {
                throw new ParseException(
                        "--device must be < " + backend.deviceCount() + " (the GPUs of this machine), got " + device);
            }
            try (VirtualGpu gpu = backend.open(device, VaWindow.forVgpu(0));
                    RawJCuda raw = new RawJCuda(device)) {
                out.printf(
                        "vgpu bench on GPU %d: %s; Java %s%n",
                        device, gpu.deviceProperties().describe(), Runtime.version());
                out.printf(
                        "%d trials after %d warm-up trials, median per operation; raw JCuda and vgpu share the"
                                + " device's primary context; the ratio range spans the trials' own ratios (their noise)%n%n",
                        trials, WARM_UP_TRIALS);
                List<Operation> operations = operations(gpu, raw, iterations);
                for (int trial = 0; trial < WARM_UP_TRIALS + trials; trial++) {
                    boolean record = trial >= WARM_UP_TRIALS;
                    boolean rawFirst = trial % 2 == 0;
                    for (Operation operation : operations) {
                        operation.runTrial(rawFirst, record);
                    }
                }
                printTable(operations, out);
            }
        }
        return 0;
    }

    private static List<Operation> operations(VirtualGpu gpu, RawJCuda raw, int iterations) {
        int syncRepetitions = Math.max(1, iterations / 10);
        FunctionHandle empty = gpu.moduleGetFunction(gpu.moduleLoadData(TestKernels.ptx()), TestKernels.EMPTY_KERNEL);
        byte[] smallHost = new byte[SMALL_COPY_BYTES];
        long smallDevice = gpu.memAlloc(SMALL_COPY_BYTES);
        long largeDevice = gpu.memAlloc(LARGE_COPY_BYTES);
        MemorySegment pinned = gpu.memAllocHost(LARGE_COPY_BYTES);
        return List.of(
                new Operation(
                        "empty kernel launch, async (per launch)",
                        iterations,
                        false,
                        n -> {
                            for (int i = 0; i < n; i++) {
                                raw.launchEmpty();
                            }
                            raw.synchronize();
                        },
                        n -> {
                            for (int i = 0; i < n; i++) {
                                gpu.launchKernel(empty, ONE, ONE, 0, StreamHandle.DEFAULT, KernelArgs.none());
                            }
                            gpu.ctxSynchronize();
                        }),
                new Operation(
                        "empty kernel launch + synchronize",
                        syncRepetitions,
                        false,
                        n -> {
                            for (int i = 0; i < n; i++) {
                                raw.launchEmpty();
                                raw.synchronize();
                            }
                        },
                        n -> {
                            for (int i = 0; i < n; i++) {
                                gpu.launchKernel(empty, ONE, ONE, 0, StreamHandle.DEFAULT, KernelArgs.none());
                                gpu.ctxSynchronize();
                            }
                        }),
                new Operation(
                        "4 KiB pageable host->device copy (byte[])",
                        syncRepetitions,
                        false,
                        n -> {
                            for (int i = 0; i < n; i++) {
                                raw.copySmallToDevice(smallHost);
                            }
                        },
                        n -> {
                            for (int i = 0; i < n; i++) {
                                gpu.memcpyHtoD(smallDevice, MemorySegment.ofArray(smallHost), SMALL_COPY_BYTES);
                            }
                        }),
                new Operation(
                        "256 MiB pinned host->device copy",
                        LARGE_COPIES_PER_TRIAL,
                        true,
                        n -> {
                            for (int i = 0; i < n; i++) {
                                raw.copyLargeToDevice();
                            }
                        },
                        n -> {
                            for (int i = 0; i < n; i++) {
                                gpu.memcpyHtoD(largeDevice, pinned, LARGE_COPY_BYTES);
                            }
                        }),
                new Operation(
                        "256 MiB pinned device->host copy",
                        LARGE_COPIES_PER_TRIAL,
                        true,
                        n -> {
                            for (int i = 0; i < n; i++) {
                                raw.copyLargeToHost();
                            }
                        },
                        n -> {
                            for (int i = 0; i < n; i++) {
                                gpu.memcpyDtoH(pinned, largeDevice, LARGE_COPY_BYTES);
                            }
                        }));
    }

    private static void printTable(List<Operation> operations, PrintStream out) {
        String format = "%-44s %22s %22s %9s %14s %12s%n";
        out.printf(format, "operation", "raw JCuda", "vgpu", "vgpu/raw", "ratio range", "goal <= " + GOAL_RATIO);
        for (Operation operation : operations) {
            double rawNanos = operation.raw.median();
            double vgpuNanos = operation.vgpu.median();
            double ratio = vgpuNanos / rawNanos;
            double[] trialRatios = operation.trialRatios();
            out.printf(
                    format,
                    operation.name,
                    operation.describe(rawNanos),
                    operation.describe(vgpuNanos),
                    String.format("%.3f", ratio),
                    String.format("%.3f-%.3f", trialRatios[0], trialRatios[trialRatios.length - 1]),
                    ratio <= GOAL_RATIO ? "yes" : "NO");
        }
    }

    /** Runs one side of an operation {@code repetitions} times. */
    @FunctionalInterface
    private interface Body {
        void run(int repetitions);
    }

    /** Nanoseconds per repetition, one sample per timed trial. */
    private static final class Samples {
        private final List<Double> nanos = new ArrayList<>();

        void time(Body body, int repetitions, boolean record) {
            long start = System.nanoTime();
            body.run(repetitions);
            long elapsed = System.nanoTime() - start;
            if (record) {
                nanos.add((double) elapsed / repetitions);
            }
        }

        double at(int trial) {
            return nanos.get(trial);
        }

        int count() {
            return nanos.size();
        }

        double median() {
            return Medians.of(nanos);
        }
    }

    private static final class Operation {
        final String name;
        final int repetitions;
        final boolean large;
        final Body rawBody;
        final Body vgpuBody;
        final Samples raw = new Samples();
        final Samples vgpu = new Samples();

        Operation(String name, int repetitions, boolean large, Body rawBody, Body vgpuBody) {
            this.name = name;
            this.repetitions = repetitions;
            this.large = large;
            this.rawBody = rawBody;
            this.vgpuBody = vgpuBody;
        }

        void runTrial(boolean rawFirst, boolean record) {
            if (rawFirst) {
                raw.time(rawBody, repetitions, record);
                vgpu.time(vgpuBody, repetitions, record);
            } else {
                vgpu.time(vgpuBody, repetitions, record);
                raw.time(rawBody, repetitions, record);
            }
        }

        /** vgpu/raw of each timed trial, sorted. */
        double[] trialRatios() {
            double[] ratios = new double[raw.count()];
            for (int trial = 0; trial < ratios.length; trial++) {
                ratios[trial] = vgpu.at(trial) / raw.at(trial);
            }
            Arrays.sort(ratios);
            return ratios;
        }

        /** Microseconds per call for small operations; milliseconds and bandwidth for 256 MiB copies. */
        String describe(double nanos) {
            if (large) {
                return String.format("%.2f ms (%.1f GB/s)", nanos / 1e6, LARGE_COPY_BYTES / nanos);
            }
            return String.format("%.2f us", nanos / 1e3);
        }
    }

    /**
     * The baseline: the same work as a JCuda program writes it, in the device's primary context
     * (the one vgpu uses), with JCuda's own allocations and pointers.
     */
    private static final class RawJCuda implements AutoCloseable {
        private final CUdevice device = new CUdevice();
        private final CUcontext context = new CUcontext();
        private final CUmodule module = new CUmodule();
        private final CUfunction emptyKernel = new CUfunction();
        private final CUdeviceptr smallDevice = new CUdeviceptr();
        private final CUdeviceptr largeDevice = new CUdeviceptr();
        private final Pointer pinned = new Pointer();

        RawJCuda(int ordinal) {
            CudaErrors.check(JCudaDriver.cuDeviceGet(device, ordinal), "cuDeviceGet");
            CudaErrors.check(JCudaDriver.cuDevicePrimaryCtxRetain(context, device), "cuDevicePrimaryCtxRetain");
            CudaErrors.check(JCudaDriver.cuCtxSetCurrent(context), "cuCtxSetCurrent");
            byte[] ptx = TestKernels.ptx();
            byte[] terminated = Arrays.copyOf(ptx, ptx.length + 1);
            CudaErrors.check(JCudaDriver.cuModuleLoadData(module, terminated), "cuModuleLoadData");
            CudaErrors.check(
                    JCudaDriver.cuModuleGetFunction(emptyKernel, module, TestKernels.EMPTY_KERNEL),
                    "cuModuleGetFunction");
            CudaErrors.check(JCudaDriver.cuMemAlloc(smallDevice, SMALL_COPY_BYTES), "cuMemAlloc");
            CudaErrors.check(JCudaDriver.cuMemAlloc(largeDevice, LARGE_COPY_BYTES), "cuMemAlloc");
            CudaErrors.check(JCudaDriver.cuMemAllocHost(pinned, LARGE_COPY_BYTES), "cuMemAllocHost");
        }

        void launchEmpty() {
            CudaErrors.check(
                    JCudaDriver.cuLaunchKernel(emptyKernel, 1, 1, 1, 1, 1, 1, 0, null, null, null), "cuLaunchKernel");
        }

        void synchronize() {
            CudaErrors.check(JCudaDriver.cuCtxSynchronize(), "cuCtxSynchronize");
        }

        void copySmallToDevice(byte[] host) {
            CudaErrors.check(JCudaDriver.cuMemcpyHtoD(smallDevice, Pointer.to(host), SMALL_COPY_BYTES), "cuMemcpyHtoD");
        }

        void copyLargeToDevice() {
            CudaErrors.check(JCudaDriver.cuMemcpyHtoD(largeDevice, pinned, LARGE_COPY_BYTES), "cuMemcpyHtoD");
        }

        void copyLargeToHost() {
            CudaErrors.check(JCudaDriver.cuMemcpyDtoH(pinned, largeDevice, LARGE_COPY_BYTES), "cuMemcpyDtoH");
        }

        @Override
        public void close() {
            CudaErrors.check(JCudaDriver.cuCtxSetCurrent(context), "cuCtxSetCurrent");
            CudaErrors.check(JCudaDriver.cuMemFreeHost(pinned), "cuMemFreeHost");
            CudaErrors.check(JCudaDriver.cuMemFree(largeDevice), "cuMemFree");
            CudaErrors.check(JCudaDriver.cuMemFree(smallDevice), "cuMemFree");
            CudaErrors.check(JCudaDriver.cuModuleUnload(module), "cuModuleUnload");
            CudaErrors.check(JCudaDriver.cuDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease");
        }
    }
}
