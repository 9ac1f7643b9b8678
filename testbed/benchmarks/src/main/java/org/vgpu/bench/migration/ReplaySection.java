package org.vgpu.bench.migration;

import static org.vgpu.bench.migration.BenchSettings.SMALL_COPY;

import java.io.PrintStream;
import java.util.List;

import org.vgpu.migration.MigratableGpu;
import org.vgpu.migration.MigrationReport;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.kernels.TestKernels;

/**
 * The {@code replay} section: replay time against the calls the app made (flat: the log keeps live
 * state only) and against its live objects (growing with them).
 */
final class ReplaySection {
    private ReplaySection() {}

    /**
     * Replay against the app's call count (the log keeps live state only, so it should not grow) and
     * against the live state (one replayed call per live object, so it grows with it).
     */
    static void measure(Placement placement, BenchSettings settings, PrintStream out, String label) {
        out.printf(
                "%nreplay time (target opened, every live object recreated) vs calls the app made;"
                        + " live state: 1 module, 4 functions, 2 streams, 2 events, 16 allocations (goal: flat, <= 50 ms);"
                        + " ahead of the lock while the app runs, then under it what changed since%s%n",
                label);
        out.printf("  %-34s %12s %12s%n", "calls made", "ahead", "under lock");
        for (int calls : settings.replayCalls()) {
            try (MigratableGpu gpu = placement.openOnSource(2)) {
                FunctionHandle empty = null;
                var module = gpu.moduleLoadData(TestKernels.ptx());
                for (String kernel : List.of(
                        TestKernels.EMPTY_KERNEL,
                        TestKernels.SAXPY,
                        TestKernels.VECTOR_ADD,
                        TestKernels.POINTER_CHASE)) {
                    FunctionHandle function = gpu.moduleGetFunction(module, kernel);
                    empty = kernel.equals(TestKernels.EMPTY_KERNEL) ? function : empty;
                }
                for (int i = 0; i < 2; i++) {
                    gpu.streamCreate();
                    gpu.eventCreate();
                }
                for (int i = 0; i < 16; i++) {
                    gpu.memAlloc(SMALL_COPY);
                }
                // The rest of the calls: launches, allocations freed again and repeated kernel lookups (churn
                // the log must not keep).
                int made = 29;
                Dim3 one = Dim3.of(1);
                while (made < calls) {
                    if (made % 100 == 0) {
                        gpu.memFree(gpu.memAlloc(SMALL_COPY));
                        gpu.moduleGetFunction(module, TestKernels.SAXPY);
                        made += 3;
                    } else {
                        gpu.launchKernel(empty, one, one, 0, StreamHandle.DEFAULT, KernelArgs.none());
                        made++;
                    }
                }
                gpu.ctxSynchronize();
                MigrationReport report = gpu.migrate(placement.target());
                out.printf(
                        "  %-34d %9.3f ms %9.3f ms%n",
                        calls,
                        report.replayAhead().toNanos() / 1e6,
                        report.replay().toNanos() / 1e6);
            }
        }
        out.printf("  replay time vs live objects (grows with them, not with calls)%n");
        out.printf("  %-34s %12s %14s %12s%n", "live objects", "ahead", "per object", "under lock");
        for (int count : settings.replayLiveObjects()) {
            try (MigratableGpu gpu = placement.openOnSource(2)) {
                for (int i = 0; i < count; i++) {
                    gpu.memAlloc(SMALL_COPY);
                }
                printReplay(count + " allocations of 4 KiB", gpu.migrate(placement.target()), count, out);
            }
            try (MigratableGpu gpu = placement.openOnSource(2)) {
                for (int i = 0; i < count / 2; i++) {
                    gpu.streamCreate();
                    gpu.eventCreate();
                }
                printReplay(count + " streams and events", gpu.migrate(placement.target()), count, out);
            }
        }
    }

    private static void printReplay(String what, MigrationReport report, int calls, PrintStream out) {
        double ahead = report.replayAhead().toNanos() / 1e6;
        out.printf(
                "  %-34s %9.3f ms %11.3f us %9.3f ms%n",
                what, ahead, ahead * 1e3 / calls, report.replay().toNanos() / 1e6);
    }
}
