package org.vgpu.bench.migration;

import static org.vgpu.bench.migration.BenchFigures.median;
import static org.vgpu.bench.migration.BenchSettings.SMALL_COPY;

import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.function.LongConsumer;

import org.vgpu.migration.MigratableGpu;
import org.vgpu.migration.MigrationTarget;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.kernels.TestKernels;

/**
 * The {@code per-call} section: the wrapper's cost per call (an empty launch, a small copy) against
 * the backend called directly, recording before any migration and after one.
 */
final class PerCallSection {
    private static final double PER_CALL_GOAL = 1.01;
    /**
     * Per-call figures are ratios of two loops of a few milliseconds each, timed back to back; pairs
     * are cheap, and a median over many of them keeps a busy moment of the machine from deciding a
     * figure of 1 %.
     */
    static final int PAIRS_PER_TRIAL = 5;

    private PerCallSection() {}

    /**
     * The wrapper's cost per call against {@code direct}, a backend's own vGPU; with a {@code target},
     * after the wrapper has migrated there (and {@code direct} is on the target's device).
     */
    static void measure(
            MigratableGpu wrapper, VirtualGpu direct, MigrationTarget target, BenchSettings settings, PrintStream out) {
        try (wrapper;
                direct) {
            // Set up before the migration, so the wrapper's handles and buffers are ones the replay remapped.
            LongConsumer directLaunches = launches(direct);
            LongConsumer wrapperLaunches = launches(wrapper);
            LongConsumer directCopies = smallCopies(direct);
            LongConsumer wrapperCopies = smallCopies(wrapper);
            if (target != null) {
                wrapper.migrate(target);
            }
            out.printf(
                    "%nper call, %s vs the backend directly (medians of %d interleaved pairs of loops; goal <= %.2f)%n",
                    target != null ? "after a migration, wrapper" : "wrapper recording (before any migration)",
                    settings.trials() * PAIRS_PER_TRIAL,
                    PER_CALL_GOAL);
            out.printf("  %-40s %12s %12s %8s %8s%n", "operation", "backend", "wrapper", "ratio", "range");
            compare(
                    "empty kernel launch, async",
                    settings,
                    settings.iterations(),
                    directLaunches,
                    wrapperLaunches,
                    out);
            compare("4 KiB host->device copy", settings, settings.iterations() / 10, directCopies, wrapperCopies, out);
        }
    }

    private static LongConsumer launches(VirtualGpu gpu) {
        FunctionHandle empty = gpu.moduleGetFunction(gpu.moduleLoadData(TestKernels.ptx()), TestKernels.EMPTY_KERNEL);
        Dim3 one = Dim3.of(1);
        return count -> {
            for (long i = 0; i < count; i++) {
                gpu.launchKernel(empty, one, one, 0, StreamHandle.DEFAULT, KernelArgs.none());
            }
            gpu.ctxSynchronize();
        };
    }

    private static LongConsumer smallCopies(VirtualGpu gpu) {
        long device = gpu.memAlloc(SMALL_COPY);
        MemorySegment host = MemorySegment.ofArray(new byte[(int) SMALL_COPY]);
        return count -> {
            for (long i = 0; i < count; i++) {
                gpu.memcpyHtoD(device, host, SMALL_COPY);
            }
        };
    }

    /**
     * Times {@code direct} and {@code wrapper} in pairs, each pair back to back in alternating order,
     * and prints the median of each and the median of the pairs' ratios (a pair shares the machine's
     * moment, so drift between pairs cancels), with the middle half of the ratios as the range.
     */
    private static void compare(
            String name,
            BenchSettings settings,
            int repetitions,
            LongConsumer direct,
            LongConsumer wrapper,
            PrintStream out) {
        for (int warmUp = 0; warmUp < 2; warmUp++) {
            direct.accept(repetitions);
            wrapper.accept(repetitions);
        }
        int pairs = settings.trials() * PAIRS_PER_TRIAL;
        double[] directNanos = new double[pairs];
        double[] wrapperNanos = new double[pairs];
        double[] ratios = new double[pairs];
        for (int pair = 0; pair < pairs; pair++) {
            if (pair % 2 == 0) {
                directNanos[pair] = nanosPer(direct, repetitions);
                wrapperNanos[pair] = nanosPer(wrapper, repetitions);
            } else {
                wrapperNanos[pair] = nanosPer(wrapper, repetitions);
                directNanos[pair] = nanosPer(direct, repetitions);
            }
            ratios[pair] = wrapperNanos[pair] / directNanos[pair];
        }
        double[] sortedRatios = ratios.clone();
        Arrays.sort(sortedRatios);
        out.printf(
                "  %-40s %9.3f us %9.3f us %8.3f %s%n",
                name,
                median(directNanos) / 1e3,
                median(wrapperNanos) / 1e3,
                median(ratios),
                String.format("%.3f-%.3f", sortedRatios[pairs / 4], sortedRatios[(pairs - 1) * 3 / 4]));
    }

    private static double nanosPer(LongConsumer body, int repetitions) {
        long start = System.nanoTime();
        body.accept(repetitions);
        return (double) (System.nanoTime() - start) / repetitions;
    }
}
