package org.vgpu.migration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.cli.SubcommandRunner;
import org.vgpu.migration.agent.MigrationAgent;
import org.vgpu.migration.cli.MigrateCommand;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.kernels.TestKernels;

/**
 * The tracker's path, end to end: {@code vgpu migrate} on the command line, the agent's socket, a
 * local vGPU moved to a GPU worker (evacuation) and from there back to another local device (the
 * mission), the app computing between the moves with the same handles and pointers.
 */
@Timeout(120)
class AgentEndToEndTest {
    @TempDir
    Path directory;

    private static String vgpu(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = SubcommandRunner.run(
                new MigrateCommand(),
                args,
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        String printed = out.toString(StandardCharsets.UTF_8) + err.toString(StandardCharsets.UTF_8);
        assertEquals(0, status, printed);
        return printed;
    }

    @Test
    void theCommandLineMovesAVgpuToAWorkerAndBackWhileTheAppComputes() {
        Path socket = directory.resolve("agent.sock");
        List<MigrationReport> tracker = Collections.synchronizedList(new ArrayList<>());
        try (Emulation local = new Emulation(2);
                LocalWorkers workers = new LocalWorkers();
                MigrationAgent agent = new MigrationAgent(
                        socket,
                        new NodeTargetResolver(local.backend, workers.resolver),
                        Emulation.VERIFIED,
                        tracker::add,
                        MigrationFaults.NONE)) {
            MigratableGpu gpu = agent.adopt(local.backend.open(0, VaWindow.forVgpu(0)), Emulation.gpu(0));
            int n = 1 << 16;
            FunctionHandle saxpy = gpu.moduleGetFunction(gpu.moduleLoadData(TestKernels.ptx()), TestKernels.SAXPY);
            long x = gpu.memAlloc(n * 4L);
            long y = gpu.memAlloc(n * 4L);
            gpu.memsetD32(x, Float.floatToRawIntBits(1.5f), n);
            gpu.memsetD32(y, Float.floatToRawIntBits(0f), n);
            KernelArgs args =
                    KernelArgs.builder().i32(n).f32(2f).pointer(x).pointer(y).build();
            String socketPath = socket.toString();
            MigrationTarget.RemoteWorker worker = workers.start(1);

            gpu.launchKernel(saxpy, Dim3.of(n / 256), Dim3.of(256), 0, StreamHandle.DEFAULT, args);
            String evacuated = vgpu("--socket", socketPath, "--vgpu", "0", "--to", worker.toString());
            assertTrue(evacuated.startsWith("ok vgpu 0 moved gpu 0 (emulated) -> " + worker), evacuated);
            assertTrue(vgpu("--socket", socketPath, "--status").contains("vgpu 0 on " + worker + " (remote)"));

            gpu.launchKernel(saxpy, Dim3.of(n / 256), Dim3.of(256), 0, StreamHandle.DEFAULT, args);
            String home = vgpu("--socket", socketPath, "--vgpu", "0", "--to", "1");
            assertTrue(home.startsWith("ok vgpu 0 moved " + worker + " (remote) -> gpu 1"), home);

            gpu.launchKernel(saxpy, Dim3.of(n / 256), Dim3.of(256), 0, StreamHandle.DEFAULT, args);
            float[] result = new float[n];
            gpu.memcpyDtoH(MemorySegment.ofArray(result), y, n * 4L);
            for (float value : result) {
                assertEquals(9f, value, "three saxpy rounds of 2 * 1.5, on three backends");
            }
            assertTrue(vgpu("--socket", socketPath, "--history").startsWith("ok 2 migrations"));
            assertEquals(2, tracker.size());
            assertTrue(tracker.stream().allMatch(MigrationReport::migrated));
        }
    }
}
