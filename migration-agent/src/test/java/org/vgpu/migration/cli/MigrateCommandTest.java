package org.vgpu.migration.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.cli.SubcommandRunner;
import org.vgpu.migration.MigrationListener;
import org.vgpu.migration.MigrationTarget;
import org.vgpu.migration.NodeTargetResolver;
import org.vgpu.migration.agent.MigrationAgent;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.kernels.TestKernels;

/** vgpu migrate against a live agent: replies, exit statuses, usage errors. */
@Timeout(60)
class MigrateCommandTest {
    @TempDir
    Path directory;

    private record Run(int status, String out, String err) {}

    private static Run run(Map<String, String> environment, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = SubcommandRunner.run(
                new MigrateCommand(environment::get),
                args,
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void movesAVgpuAndAnswersStatusAndHistory() {
        Path socket = directory.resolve("agent.sock");
        try (EmulatedBackend backend = new EmulatedBackend(2, 1L << 30, TestKernels.twins());
                MigrationAgent agent =
                        new MigrationAgent(socket, new NodeTargetResolver(backend), MigrationListener.NONE)) {
            agent.adopt(backend.open(0, VaWindow.forVgpu(0)), new MigrationTarget.LocalGpu(0));
            Map<String, String> environment = Map.of(MigrationAgent.SOCKET_ENV, socket.toString());

            Run moved = run(environment, "--vgpu", "0", "--to", "1");
            assertEquals(0, moved.status(), moved.err());
            assertTrue(moved.out().startsWith("ok vgpu 0 moved gpu 0 (emulated) -> gpu 1"), moved.out());

            Run status = run(Map.of(), "--socket", socket.toString(), "--status");
            assertEquals(0, status.status());
            assertTrue(status.out().contains("vgpu 0 on gpu 1 (emulated)"), status.out());
            assertTrue(run(environment, "--history").out().startsWith("ok 1 migrations"));

            Run refused = run(environment, "--vgpu", "3", "--to", "1");
            assertEquals(1, refused.status());
            assertTrue(refused.err().startsWith("error no vGPU 3"), refused.err());
        }
    }

    @Test
    void usageErrorsAndAnUnreachableAgent() {
        Map<String, String> environment =
                Map.of(MigrationAgent.SOCKET_ENV, directory.resolve("none.sock").toString());
        assertEquals(2, run(environment).status(), "nothing asked");
        assertEquals(2, run(environment, "--vgpu", "0").status(), "no target");
        assertEquals(2, run(environment, "--status", "--history").status(), "two questions");
        assertEquals(2, run(environment, "--vgpu", "0 1", "--to", "2").status(), "two words in one option");
        assertEquals(2, run(Map.of(), "--status").status(), "no socket");
        Run unreachable = run(environment, "--status");
        assertEquals(1, unreachable.status());
        assertTrue(unreachable.err().contains("cannot reach the migration agent"), unreachable.err());
    }
}
