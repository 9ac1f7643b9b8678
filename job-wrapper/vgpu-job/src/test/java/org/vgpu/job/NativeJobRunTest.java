package org.vgpu.job;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.cli.SubcommandRunner;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.ThrowawaySiteKey;
import org.vgpu.migration.cli.MigrateCommand;
import org.vgpu.runtime.remote.lender.LaunchedWorker;
import org.vgpu.runtime.remote.lender.WorkerLauncher;
import org.vgpu.runtime.remote.lender.WorkerSpec;

/**
 * The mission inside a job, on a GPU machine: vGPU 0 on the node's GPU 0, vGPU 1 borrowed from a
 * native GPU worker process on GPU {@code -Dvgpu.test.worker.device} (default 0; run-on-gpu.sh passes
 * the machine's last GPU, so with two GPUs the borrowed one is another GPU), all checked natively; during the hold {@code migrate 1 0} brings vGPU 1 home, remote to native, and the
 * checks pass again there. Nothing in the output may say emulated.
 */
@Tag("gpu")
@Timeout(300)
class NativeJobRunTest {
    @TempDir
    Path directory;

    @Test
    void aBorrowedVgpuMovesHomeOntoTheNativeGpuDuringTheHold() {
        Path socket = directory.resolve("agent.sock");
        List<String> replies = new ArrayList<>();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (ThrowawaySiteKey siteKey = ThrowawaySiteKey.create("vgpu-native-run");
                LaunchedWorker worker = new WorkerLauncher()
                        .launch(new WorkerSpec(
                                new Endpoint("127.0.0.1", 0),
                                "native",
                                Integer.getInteger("vgpu.test.worker.device", 0),
                                "lender-gpu0",
                                siteKey.keyFile()))) {
            String endpoint = worker.endpoint().toString();
            String token = siteKey.issuer().issue("42", 1, worker.workerId(), Duration.ofMinutes(10));
            Map<String, String> environment = new HashMap<>(Map.of(
                    "VGPU_COUNT",
                    "2",
                    "VGPU_ASSEMBLY",
                    "0=local:0,1=remote:" + endpoint,
                    "VGPU_LOCAL_GPUS",
                    "0",
                    "CUDA_VISIBLE_DEVICES",
                    "0",
                    "VGPU_REMOTE",
                    "1@" + endpoint + "#" + token,
                    "VGPU_AGENT_SOCKET",
                    socket.toString(),
                    "VGPU_MIGRATE",
                    "auto",
                    "VGPU_NODE",
                    "gpu-node",
                    "VGPU_SOURCE",
                    "tracker"));
            RunCommand.Hold migrateHome = duration -> {
                ByteArrayOutputStream reply = new ByteArrayOutputStream();
                PrintStream stream = new PrintStream(reply, true, StandardCharsets.UTF_8);
                SubcommandRunner.run(
                        new MigrateCommand(),
                        new String[] {"--socket", socket.toString(), "--vgpu", "1", "--to", "0"},
                        stream,
                        stream);
                replies.add(reply.toString(StandardCharsets.UTF_8).strip());
            };
            PrintStream printed = new PrintStream(out, true, StandardCharsets.UTF_8);
            int status = SubcommandRunner.run(
                    new RunCommand(environment, migrateHome),
                    new String[] {"--local-backend", "native", "--hold", "60", "--workload", "all"},
                    printed,
                    printed);
            String output = out.toString(StandardCharsets.UTF_8);
            System.out.println(output + replies);

            assertEquals(0, status, output);
            assertTrue(output.contains("vgpu 0: local GPU 0 (native), CUDA device 0: "), output);
            assertTrue(output.contains("vgpu 1: remote " + endpoint + " (worker's device: "), output);
            assertTrue(
                    replies.get(0).startsWith("ok vgpu 1 moved " + endpoint + " (remote) -> gpu 0"),
                    replies.toString());
            assertTrue(output.contains("vgpu 1: now on gpu 0 (native) after 1 migration(s)"), output);
            assertTrue(output.contains("PASS  vgpu 1  held-data "), output);
            assertTrue(output.contains("PASS: 2 of 2 vGPUs (1 local, 1 remote) passed "), output);
            assertTrue(output.contains("PASS: 2 of 2 vGPUs (2 local, 0 remote) passed "), output);
            assertFalse(output.contains("emulated"), output);
            assertFalse(output.contains(token), "the session token was printed");
        }
    }
}
