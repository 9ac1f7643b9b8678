package org.vgpu.job;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import org.vgpu.common.cli.SubcommandRunner;
import org.vgpu.migration.cli.MigrateCommand;
import org.vgpu.runtime.emulated.EmulatedBackend;

/**
 * {@code vgpu run} with the job environments the SPANK bridge makes, on emulated local GPUs and
 * GPU workers in this JVM, the agent's socket in a temporary directory. What is asserted is what
 * the job prints and its exit status.
 */
@Timeout(120)
class RunCommandTest {
    private static final String WORKLOADS = "vector-add, saxpy, pointer-chase";

    @TempDir
    Path directory;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();
    /** What the agent answered to the commands sent during the hold. */
    private final List<String> agentReplies = new ArrayList<>();

    private int run(Map<String, String> environment, RunCommand.Hold hold, String... args) {
        return SubcommandRunner.run(
                new RunCommand(environment, hold),
                args,
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private int run(Map<String, String> environment, String... args) {
        return run(
                environment,
                duration -> {
                    throw new AssertionError("no hold was asked for");
                },
                args);
    }

    private String out() {
        return out.toString(StandardCharsets.UTF_8);
    }

    private String err() {
        return err.toString(StandardCharsets.UTF_8);
    }

    private String printed() {
        return out() + err();
    }

    /** Sends {@code vgpu migrate ARGS} to the agent at {@code socket}, as the tracker or a user would, and keeps the reply. */
    private void toAgent(Path socket, String... args) {
        ByteArrayOutputStream reply = new ByteArrayOutputStream();
        List<String> arguments = new ArrayList<>(List.of("--socket", socket.toString()));
        arguments.addAll(List.of(args));
        PrintStream stream = new PrintStream(reply, true, StandardCharsets.UTF_8);
        SubcommandRunner.run(new MigrateCommand(), arguments.toArray(String[]::new), stream, stream);
        agentReplies.add(reply.toString(StandardCharsets.UTF_8).strip());
    }

    /** A job of local GPUs only (as node GPUs 0, 1, ...), with every other variable the bridge sets. */
    private Map<String, String> localJob(int gpus, Path socket) {
        List<String> assembly = new ArrayList<>();
        List<String> local = new ArrayList<>();
        for (int k = 0; k < gpus; k++) {
            assembly.add(k + "=local:" + k);
            local.add(String.valueOf(k));
        }
        Map<String, String> environment = new HashMap<>(Map.of(
                "VGPU_COUNT",
                String.valueOf(gpus),
                "VGPU_ASSEMBLY",
                String.join(",", assembly),
                "VGPU_LOCAL_GPUS",
                String.join(",", local),
                "CUDA_VISIBLE_DEVICES",
                String.join(",", local),
                "VGPU_REMOTE",
                "",
                "VGPU_WINDOW_BASE",
                "0x100000000000",
                "VGPU_MIGRATE",
                "auto",
                "VGPU_NODE",
                "n1",
                "VGPU_SOURCE",
                "tracker",
                "VGPU_TRACKER",
                "127.0.0.1:7100"));
        environment.put("VGPU_AGENT_SOCKET", socket.toString());
        environment.put("SLURM_JOB_ID", "42");
        return environment;
    }

    private static List<String> resultLines(String output) {
        return output.lines()
                .filter(line -> line.startsWith("PASS  ") || line.startsWith("FAIL  "))
                .toList();
    }

    @Test
    void outsideAVgpuJobItSaysSoAndExits2() {
        assertEquals(2, run(Map.of("PATH", "/usr/bin", "CUDA_VISIBLE_DEVICES", "0")));
        assertTrue(err().contains("vgpu run: this is not a vgpu job: none of VGPU_COUNT, VGPU_ASSEMBLY"), err());
        assertTrue(err().contains("--gres=vgpu:N"), err());
        assertEquals("", out());
    }

    /** vgpu run in a job of {@code gpus} local GPUs whose {@code variable} is {@code value}: exit 2. */
    private void runMalformed(int gpus, String variable, String value) {
        Map<String, String> environment = localJob(gpus, directory.resolve("agent.sock"));
        environment.put(variable, value);
        assertEquals(2, run(environment));
    }

    @Test
    void aMalformedEnvironmentIsExit2NamingTheVariable() {
        runMalformed(2, "CUDA_VISIBLE_DEVICES", "1");
        assertTrue(
                err().contains("vgpu run: the job's vgpu environment is malformed: CUDA_VISIBLE_DEVICES is '1' and"
                        + " does not list GPU 0 of VGPU_LOCAL_GPUS ('0,1')"),
                err());
        assertEquals("", out());
        assertFalse(Files.exists(directory.resolve("agent.sock")));
    }

    @Test
    void badOptionsAreUsageErrors() {
        assertEquals(2, run(localJob(1, directory.resolve("agent.sock")), "--local-backend", "cuda"));
        assertTrue(err().contains("--local-backend must be one of [auto, native, emulated], got 'cuda'"), err());
        assertEquals(2, run(localJob(1, directory.resolve("agent.sock")), "--hold", "0"));
        assertTrue(err().contains("--hold must be >= 1"), err());
        assertEquals(2, run(localJob(1, directory.resolve("agent.sock")), "--workload", "bogus"));
        assertTrue(err().contains("unknown workload 'bogus'"), err());
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "-5m|--expected-runtime: '-5m' is not a duration; expected a whole number with a unit ms, s, m, h or d",
                "abc|--expected-runtime: 'abc' is not a duration; expected a whole number with a unit ms, s, m, h or d",
                "0|--expected-runtime: '0' is not a duration; expected a whole number with a unit ms, s, m, h or d",
                "0s|--expected-runtime: '0s' is not a runtime; expected at least 1 s in whole seconds",
                "1500ms|--expected-runtime: '1500ms' is not a runtime; expected at least 1 s in whole seconds",
                "366d|--expected-runtime: '366d' is longer than 365d, the longest runtime hint",
                "99999999999999999999h|--expected-runtime: '99999999999999999999h' is too long a duration",
            })
    void badExpectedRuntimesAreUsageErrorsSayingWhatIsExpected(String value, String expected) {
        assertEquals(2, run(localJob(1, directory.resolve("agent.sock")), "--expected-runtime", value));
        assertTrue(err().contains(expected), err());
        assertEquals("", out());

        err.reset();
        assertEquals(2, run(localJob(1, directory.resolve("agent.sock")), "--expected-runtime=" + value));
        assertTrue(err().contains(expected), err());
        assertFalse(Files.exists(directory.resolve("agent.sock")), "nothing was opened");
    }

    @Test
    void theExpectedRuntimeComesFromTheOptionOrElseTheVariable() {
        Map<String, String> environment = localJob(1, directory.resolve("agent.sock"));
        String[] quick = {"--local-backend", "emulated", "--workload", "saxpy"};
        assertEquals(0, run(environment, quick), printed());
        assertFalse(out().contains("expected runtime"), out());

        out.reset();
        environment.put("VGPU_EXPECTED_RUNTIME", "45m");
        assertEquals(0, run(environment, quick), printed());
        assertTrue(out().lines().findFirst().orElseThrow().endsWith(", expected runtime 2700 s"), out());

        out.reset();
        List<String> withOption = new ArrayList<>(List.of(quick));
        withOption.addAll(List.of("--expected-runtime", " 2h "));
        assertEquals(0, run(environment, withOption.toArray(String[]::new)), printed());
        assertTrue(out().lines().findFirst().orElseThrow().endsWith(", expected runtime 7200 s"), out());
    }

    @Test
    void aMalformedExpectedRuntimeVariableIsAMalformedEnvironment() {
        runMalformed(1, "VGPU_EXPECTED_RUNTIME", "soon");
        assertTrue(
                err().contains("vgpu run: the job's vgpu environment is malformed: VGPU_EXPECTED_RUNTIME: 'soon' is not"
                        + " a duration; expected a whole number with a unit ms, s, m, h or d, e.g. 30s"),
                err());
    }

    @Test
    void moreLocalGpusThanTheBackendHasIsAConfigurationErrorNotAGpuCallsFailure() {
        int gpus = EmulatedBackend.DEFAULT_DEVICE_COUNT + 1;
        assertEquals(1, run(localJob(gpus, directory.resolve("agent.sock")), "--local-backend", "emulated"));
        assertTrue(
                err().contains("vGPU " + (gpus - 1) + " (local GPU " + (gpus - 1) + ") cannot be opened: CUDA device "
                        + (gpus - 1) + " of the job (its place in CUDA_VISIBLE_DEVICES="),
                err());
        assertTrue(
                err().contains("but the emulated backend has " + EmulatedBackend.DEFAULT_DEVICE_COUNT + " device(s)"),
                err());
        assertFalse(err().contains("CUDA_ERROR"), err());
    }

    @Test
    void localEmulatedVgpusPassAndEveryLineAboutThemSaysEmulated() {
        Path socket = directory.resolve("agent.sock");
        assertEquals(0, run(localJob(2, socket), "--local-backend", "emulated"), printed());
        String output = out();
        assertTrue(
                output.startsWith("vgpu job on node n1: 2 vGPUs (2 local, 0 remote) from the tracker, windows from"
                        + " 0x100000000000, migration auto, agent on " + socket + ", tracker 127.0.0.1:7100"),
                output);
        assertTrue(output.contains("vgpu 0: local GPU 0 (emulated), CUDA device 0: vgpu CPU emulation #0"), output);
        assertTrue(output.contains("vgpu 1: local GPU 1 (emulated), CUDA device 1: vgpu CPU emulation #1"), output);
        List<String> results = resultLines(output);
        assertEquals(6, results.size(), output);
        for (int k = 0; k < 2; k++) {
            for (String workload : List.of("vector-add", "saxpy", "pointer-chase")) {
                String prefix = "PASS  vgpu " + k + "  " + workload + " ";
                assertTrue(results.stream().anyMatch(line -> line.startsWith(prefix)), prefix + " in " + output);
            }
        }
        assertTrue(
                output.contains("PASS: 2 of 2 vGPUs (2 local, 0 remote) passed " + WORKLOADS
                        + "  [emulated: vgpu 0, 1 on the CPU, not a GPU]"),
                output);
        for (String line : output.lines().toList()) {
            if (!line.startsWith("vgpu job ")) {
                assertTrue(line.contains("emulated"), "not labelled emulated: " + line);
            }
        }
        assertFalse(Files.exists(socket), "the agent's socket is removed at exit");
    }

    @Test
    void aProgramThatCannotRunIsNamedInOneLineWithTheShellsStatus() throws IOException {
        Path notExecutable = Files.writeString(directory.resolve("step.sh"), "echo hi\n");
        Map<String, String> job = localJob(1, directory.resolve("agent.sock"));
        job.put("PATH", directory.toString());
        for (String[] expected : new String[][] {
            {"127", "/nonexistent", "vgpu run: /nonexistent: no such program\n"},
            {"127", "no-such-command", "vgpu run: no-such-command: command not found (PATH " + directory + ")\n"},
            {"126", directory.toString(), "vgpu run: " + directory + ": is a directory, not a program\n"},
            {
                "126",
                notExecutable.toString(),
                "vgpu run: " + notExecutable + ": not executable (chmod +x it, or run it"
                        + " through its interpreter: sh " + notExecutable + ")\n"
            },
        }) {
            err.reset();
            assertEquals(Integer.parseInt(expected[0]), run(job, "--", expected[1], "arg"), expected[1]);
            assertEquals(expected[2], err());
            assertEquals("", out());
        }
    }

    @Test
    void anAgentThatCannotListenIsAWarningNotTheJobsEnd() {
        Path socket = directory.resolve("no-such-directory").resolve("agent.sock");
        assertEquals(0, run(localJob(1, socket), "--local-backend", "emulated", "--workload", "saxpy"), printed());
        assertTrue(
                err().contains(
                                "vgpu run: warning: no migration agent, so these vGPUs cannot be moved: the migration agent"
                                        + " cannot listen on " + socket),
                err());
        assertTrue(out().contains("PASS: 1 of 1 vGPUs (1 local, 0 remote) passed saxpy"), out());
    }

    @Test
    void stepsRepeatTheWorkloadsWithNewInputs() {
        assertEquals(
                0,
                run(
                        localJob(1, directory.resolve("agent.sock")),
                        "--local-backend",
                        "emulated",
                        "--steps",
                        "2",
                        "--workload",
                        "saxpy"),
                printed());
        List<String> results = resultLines(out());
        assertEquals(2, results.size(), out());
        assertTrue(results.get(0).startsWith("PASS  vgpu 0  step 1  saxpy "), out());
        assertTrue(results.get(1).startsWith("PASS  vgpu 0  step 2  saxpy "), out());
        assertTrue(out().contains("PASS: 1 of 1 vGPUs (1 local, 0 remote) passed saxpy (2 steps)"), out());
    }

    /**
     * The job of the design: one local vGPU and two borrowed from workers, all checked at once; during
     * the hold the tracker's {@code migrate 1 2} brings vGPU 1 home onto the node's GPU 2 (the job's
     * CUDA device 0), with the data it held, and the checks pass again there.
     */
    @Test
    void aLocalAndTwoBorrowedVgpusPassAndOneMovesHomeDuringTheHold() throws IOException {
        Path socket = directory.resolve("agent.sock");
        try (LentWorkers lenders = new LentWorkers()) {
            LentWorkers.Lend first = lenders.lend(1, 0);
            LentWorkers.Lend second = lenders.lend(2, 1);
            Map<String, String> environment = new HashMap<>(Map.of(
                    "VGPU_COUNT",
                    "3",
                    "VGPU_ASSEMBLY",
                    "0=local:2," + first.assemblyEntry() + "," + second.assemblyEntry(),
                    "VGPU_LOCAL_GPUS",
                    "2",
                    "CUDA_VISIBLE_DEVICES",
                    "2",
                    "VGPU_REMOTE",
                    first.remoteEntry() + "," + second.remoteEntry(),
                    "VGPU_AGENT_SOCKET",
                    socket.toString(),
                    "VGPU_WINDOW_BASE",
                    "0x100000000000",
                    "VGPU_MIGRATE",
                    "auto",
                    "VGPU_NODE",
                    "n1",
                    "VGPU_SOURCE",
                    "tracker"));

            int status = run(
                    environment,
                    duration -> {
                        assertTrue(Files.exists(socket), "the agent listens during the hold");
                        toAgent(socket, "--vgpu", "1", "--to", "2");
                        toAgent(socket, "--status");
                    },
                    "--local-backend",
                    "emulated",
                    "--hold",
                    "30");

            String output = out();
            assertEquals(0, status, printed());
            assertTrue(output.contains("vgpu job on node n1: 3 vGPUs (1 local, 2 remote) from the tracker"), output);
            assertTrue(output.contains("vgpu 0: local GPU 2 (emulated), CUDA device 0: vgpu CPU emulation #0"), output);
            assertTrue(
                    output.contains("vgpu 1: remote " + first.endpoint() + " (worker's device: vgpu CPU emulation #0"),
                    output);
            assertTrue(
                    output.contains("vgpu 2: remote " + second.endpoint() + " (worker's device: vgpu CPU emulation #1"),
                    output);

            List<String> results = resultLines(output);
            for (int k = 0; k < 3; k++) {
                for (String workload : List.of("vector-add", "saxpy", "pointer-chase")) {
                    String before = "PASS  vgpu " + k + "  " + workload + " ";
                    String after = "PASS  vgpu " + k + "  step 2  " + workload + " ";
                    assertTrue(results.stream().anyMatch(line -> line.startsWith(before)), before + " in " + output);
                    assertTrue(results.stream().anyMatch(line -> line.startsWith(after)), after + " in " + output);
                }
                assertTrue(
                        output.contains("PASS  vgpu " + k
                                + "  held-data       1024 KiB written before the hold, read back" + " unchanged"),
                        output);
            }
            assertEquals(3 * 3 * 2 + 3, results.size(), output);
            assertTrue(results.stream().allMatch(line -> line.contains("[emulated: CPU, not a GPU]")), output);

            assertTrue(
                    agentReplies.get(0).startsWith("ok vgpu 1 moved " + first.endpoint() + " (remote) -> gpu 2: "),
                    agentReplies.toString());
            assertTrue(
                    agentReplies
                            .get(1)
                            .contains("vgpu 1 on gpu 2 (emulated), 1048576 B live in 1 allocations, 1 migrations"),
                    agentReplies.toString());
            assertTrue(output.contains("migration: vgpu 1 moved " + first.endpoint() + " (remote) -> gpu 2: "), output);
            assertTrue(output.contains("vgpu 0: now on gpu 2 (emulated) after 0 migration(s)"), output);
            assertTrue(output.contains("vgpu 1: now on gpu 2 (emulated) after 1 migration(s)"), output);
            assertTrue(
                    output.contains("vgpu 2: now on " + second.endpoint() + " (remote) after 0 migration(s)"), output);
            assertTrue(output.contains("PASS: 3 of 3 vGPUs (1 local, 2 remote) passed " + WORKLOADS), output);
            assertTrue(output.contains("PASS: 3 of 3 vGPUs (2 local, 1 remote) passed " + WORKLOADS), output);

            assertFalse(
                    printed().contains(first.token()) || printed().contains(second.token()),
                    "a session token was printed");
            assertFalse(Files.exists(socket), "the agent's socket is removed at exit");
        }
    }

    @Test
    void theAgentRefusesAGpuNotGrantedToTheJobAndMovesToOneThatIs() {
        Path socket = directory.resolve("agent.sock");
        int status = run(
                localJob(2, socket),
                duration -> {
                    toAgent(socket, "--vgpu", "0", "--to", "7");
                    toAgent(socket, "--vgpu", "0", "--to", "1");
                },
                "--local-backend",
                "emulated",
                "--hold",
                "30",
                "--workload",
                "vector-add");
        assertEquals(0, status, printed());
        assertTrue(
                agentReplies.get(0).startsWith("error ")
                        && agentReplies
                                .get(0)
                                .contains(
                                        "CUDA_ERROR_NOT_PERMITTED: GPU 7 of node n1 is not granted to job 42 (it has GPU"
                                                + " 0, GPU 1); the tracker grants a freed GPU when it moves a vGPU home"),
                agentReplies.toString());
        assertTrue(
                agentReplies.get(1).startsWith("ok vgpu 0 moved gpu 0 (emulated) -> gpu 1"), agentReplies.toString());
        assertTrue(out().contains("vgpu 0: now on gpu 1 (emulated) after 1 migration(s)"), out());
        assertTrue(out().contains("PASS  vgpu 0  held-data "), out());
    }

    /**
     * Task 1 of a step of 2 tasks in a job of 4 vGPUs holds vGPUs 2-3: every line it prints names them by the job's
     * indices, as the tracker and the other task's lines do, also the checks, the hold and the summary's emulation
     * note, and its agent on its own socket moves vGPU 3 onto the share's other GPU.
     */
    @Test
    void aTasksShareIsNamedByTheJobsVgpuIndicesInEveryLine() {
        Path socket = directory.resolve("agent.sock");
        Path taskSocket = directory.resolve("agent.sock.vgpus-2-3");
        Map<String, String> environment = localJob(4, socket);
        environment.putAll(Map.of("SLURM_LOCALID", "1", "SLURM_STEP_TASKS_PER_NODE", "2", "SLURM_NODEID", "0"));
        int status = run(
                environment,
                duration -> {
                    assertTrue(Files.exists(taskSocket), "the task's agent listens on its own socket");
                    // GPU 2 is the task's own; GPU 1 is the other task's, which its agent refuses
                    toAgent(taskSocket, "--vgpu", "3", "--to", "2");
                },
                "--local-backend",
                "emulated",
                "--hold",
                "30",
                "--workload",
                "vector-add");
        String output = out();
        assertEquals(0, status, printed());
        assertTrue(output.contains("vgpu job on node n1: 2 vGPUs (2 local, 0 remote)"), output);
        assertTrue(output.contains("vgpu 2: local GPU 2 (emulated)"), output);
        assertTrue(output.contains("vgpu 3: local GPU 3 (emulated)"), output);
        assertTrue(output.contains("vgpu 2: now on gpu 2 (emulated) after 0 migration(s)"), output);
        assertTrue(output.contains("vgpu 3: now on gpu 2 (emulated) after 1 migration(s)"), output);
        List<String> results = resultLines(output);
        for (int k : List.of(2, 3)) {
            assertTrue(
                    results.contains("PASS  vgpu " + k + "  held-data       1024 KiB written before the hold, read"
                            + " back unchanged  [emulated: CPU, not a GPU]"),
                    output);
            assertTrue(results.stream().anyMatch(line -> line.startsWith("PASS  vgpu " + k + "  vector-add ")), output);
            assertTrue(
                    results.stream().anyMatch(line -> line.startsWith("PASS  vgpu " + k + "  step 2  vector-add ")),
                    output);
        }
        assertEquals(6, results.size(), output);
        assertTrue(
                output.contains("PASS: 2 of 2 vGPUs (2 local, 0 remote) passed vector-add  [emulated: vgpu 2, 3 on"
                        + " the CPU, not a GPU]"),
                output);
        assertTrue(
                agentReplies.getFirst().startsWith("ok vgpu 3 moved gpu 3 (emulated) -> gpu 2"),
                agentReplies.toString());
        assertFalse(Files.exists(taskSocket), "the task's agent socket is removed at exit");
    }

    /**
     * A job of 2 local GPUs with {@code variable=value} whose hold asks its agent to move vGPU 0 to GPU 1: the run
     * passes, the agent refuses, and vGPU 0 is where it was.
     *
     * @return the agent's refusal, for what the caller asserts of it
     */
    private String refusedMoveDuringTheHold(String variable, String value) {
        Path socket = directory.resolve("agent.sock");
        Map<String, String> environment = localJob(2, socket);
        environment.put(variable, value);
        int status = run(
                environment,
                duration -> toAgent(socket, "--vgpu", "0", "--to", "1"),
                "--local-backend",
                "emulated",
                "--hold",
                "30",
                "--workload",
                "vector-add");
        assertEquals(0, status, printed());
        assertTrue(agentReplies.getFirst().startsWith("error "), agentReplies.toString());
        assertTrue(out().contains("vgpu 0: now on gpu 0 (emulated) after 0 migration(s)"), out());
        return agentReplies.getFirst();
    }

    @Test
    void aTestOnlyFaultSaysSoLoudlyAndEveryMoveFailsThereLeavingTheVgpuWhereItWas() {
        String refusal = refusedMoveDuringTheHold("VGPU_TEST_MIGRATION_FAULT", "verify");
        assertTrue(
                err().startsWith("vgpu run: TEST-ONLY FAULT: every migration of this job fails at verify because"
                        + " VGPU_TEST_MIGRATION_FAULT is set"),
                err());
        assertTrue(refusal.contains("test-only fault injected at verify"), agentReplies.toString());
        assertTrue(out().contains("PASS  vgpu 0  held-data "), out());
    }

    @Test
    void anUnknownTestOnlyFaultIsAMalformedEnvironment() {
        runMalformed(1, "VGPU_TEST_MIGRATION_FAULT", "everywhere");
        assertTrue(
                err().contains("vgpu run: the job's vgpu environment is malformed: VGPU_TEST_MIGRATION_FAULT must be"
                        + " one of open-target, replay-allocation, mem-sync-batch, verify (a test-only fault), got"
                        + " 'everywhere'"),
                err());
    }

    @Test
    void withVgpuMigrateNeverTheAgentMovesNothing() {
        String refusal = refusedMoveDuringTheHold("VGPU_MIGRATE", "never");
        assertTrue(refusal.contains("--vgpu-migrate=never (VGPU_MIGRATE=never)"), agentReplies.toString());
    }

    @Test
    void aWorkerThatCannotBeReachedFailsTheJobNamingItsVgpu() throws IOException {
        Path socket = directory.resolve("agent.sock");
        int port;
        try (ServerSocket closed = new ServerSocket(0)) {
            port = closed.getLocalPort();
        }
        Map<String, String> environment = localJob(1, socket);
        environment.put("VGPU_COUNT", "2");
        environment.put("VGPU_ASSEMBLY", "0=local:0,1=remote:127.0.0.1:" + port);
        environment.put("VGPU_REMOTE", "1@127.0.0.1:" + port + "#SECRET-token");
        assertEquals(1, run(environment, "--local-backend", "emulated"));
        assertTrue(err().contains("vGPU 1 (remote 127.0.0.1:" + port + ") cannot be opened: "), err());
        assertFalse(printed().contains("SECRET"), printed());
        assertFalse(Files.exists(socket), "the agent's socket is removed when the vGPUs cannot be opened");
    }
}
