package org.vgpu.job;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.JarOutputStream;
import java.util.regex.Matcher;

import jcuda.driver.JCudaDriver;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import org.vgpu.common.line.LineClient;
import org.vgpu.job.jcuda.ProgramTwins;

/**
 * The test JCuda programs (package {@code jcudaprograms}), unmodified, through {@code vgpu run --} on a job of two
 * local vGPUs on the CPU emulation: each computes what the CPU computes, and each, moved to another GPU in the
 * middle of its run through the agent's socket, prints exactly what it printed unmoved.
 */
@Timeout(600)
class JCudaProgramsTest {
    private static final String CLASS_PATH = System.getProperty("java.class.path");
    private static final String JAVA =
            Path.of(System.getProperty("java.home"), "bin", "java").toString();

    @TempDir
    static Path shared;

    private static Path interposerJar;
    private static Path ptx;

    @TempDir
    Path directory;

    @BeforeAll
    static void emulationPtxAndInterposer() throws IOException, URISyntaxException {
        ptx = Files.createDirectories(shared.resolve("ptx"));
        ProgramTwins.writePtx(ptx);
        interposerJar = RunProgramTest.interposerJar(shared.resolve("interposer"));
    }

    /**
     * Two local vGPUs on GPUs 0 and 1 of an emulated node of 4, the agent on a socket in the test's directory. vGPU 0
     * is moved onto GPU 1, the other GPU granted to the job.
     */
    private Map<String, String> job() {
        Map<String, String> environment = new HashMap<>();
        environment.put("VGPU_COUNT", "2");
        environment.put("VGPU_ASSEMBLY", "0=local:0,1=local:1");
        environment.put("VGPU_LOCAL_GPUS", "0,1");
        environment.put("VGPU_AGENT_SOCKET", socket().toString());
        environment.put("VGPU_MIGRATE", "auto");
        environment.put("VGPU_NODE", "n1");
        environment.put("VGPU_SOURCE", "tracker");
        environment.put("SLURM_JOB_ID", "77");
        return environment;
    }

    private Path socket() {
        return directory.resolve("agent.sock");
    }

    /** {@code vgpu run -- java ... PROGRAM PTX} ({@code program}: a class name, fully qualified). */
    private static ProgramRun vgpuRun(Map<String, String> environment, String program) {
        return vgpuRun(environment, CLASS_PATH, program);
    }

    private static ProgramRun vgpuRun(Map<String, String> environment, String classPath, String program) {
        return ProgramRun.of(
                environment,
                interposerJar,
                List.of("--local-backend", "emulated", "--", JAVA, "-cp", classPath, program, ptx.toString()));
    }

    @ParameterizedTest(name = "{0}, moved after launch {1}")
    @CsvSource({
        "jcudaprograms.JCudaVectorAdd, 1",
        "jcudaprograms.JCudaReduction, 1",
        "jcudaprograms.JCudaMatrixMultiply, 1",
        "jcudaprograms.JCudaStreams, 3",
        "jcudaprograms.JCudaConstantMemory, 1",
        "jcudaprograms.JCudaNvrtc, 1",
        "jcudaprograms.JCudaHeatSimulation, 200",
        "jcudaprograms.JCudaTwoDevices, 1",
        "jcudaprograms.JCudaPointerTable, 1",
        "jcuda.driver.samples.JCudaDriverVectorAdd, 1",
        "jcuda.runtime.samples.JCudaStreamCallbacks, 3",
        "jcuda.driver.samples.JCudaDriverStreamCallbacks, 3",
        "jcuda.driver.samples.JCudaHostFunctionPipeline, 1",
        "jcuda.nvrtc.samples.JCudaNvrtcTemplates, 1",
        "jcuda.nvrtc.samples.JCudaNvrtcLoweredNames, 2",
        "jcuda.driver.samples.JCudaDeviceHeap, 1",
        "jcuda.runtime.samples.JCudaRuntimeLimits, 2",
        "jcuda.runtime.samples.JCudaPinnedFlags, 1"
    })
    void runsUnmodifiedAndGivesTheSameResultsMovedMidRun(String program, int pauseAfterLaunch) throws Exception {
        ProgramRun unmoved = vgpuRun(job(), program);
        assertEquals(0, unmoved.status(), unmoved.toString());
        assertFalse(unmoved.results().isEmpty(), unmoved.toString());
        assertTrue(unmoved.results().stream().anyMatch(line -> line.contains(": PASSED, ")), unmoved.toString());
        assertFalse(unmoved.out().contains("FAILED"), unmoved.toString());

        Map<String, String> paused = job();
        paused.put("VGPU_TEST_PAUSE_AT_LAUNCH", Integer.toString(pauseAfterLaunch));
        paused.put("VGPU_TEST_PAUSE_DIRECTORY", directory.toString());
        CompletableFuture<ProgramRun> running = CompletableFuture.supplyAsync(() -> vgpuRun(paused, program));
        while (!Files.exists(directory.resolve("paused"))) {
            assertFalse(running.isDone(), () -> "the program ended before its pause: " + running.join());
            Thread.sleep(20);
        }
        CompletableFuture<List<String>> migration = CompletableFuture.supplyAsync(
                () -> LineClient.request(socket(), "migrate 0 1", Duration.ofSeconds(120)));
        Thread.sleep(300); // the request reaches the agent, which waits for the paused launch
        Files.writeString(directory.resolve("resume"), "");
        ProgramRun movedRun = running.get(300, TimeUnit.SECONDS);
        // the program's JVM reports the move; the reply to the request may be cut off when the program, let go
        // once its vGPU moved, ends before the agent has answered
        assertTrue(
                movedRun.err().contains("vgpu: migration: vgpu 0 moved gpu 0 (emulated) -> gpu 1: "),
                movedRun.toString());
        try {
            String reply = migration.get(120, TimeUnit.SECONDS).getLast();
            assertTrue(reply.startsWith("ok vgpu 0 moved gpu 0 (emulated) -> gpu 1"), reply);
        } catch (ExecutionException cutOff) {
            assertTrue(cutOff.getCause().getMessage().contains("closed the connection"), cutOff.toString());
        }
        assertEquals(0, movedRun.status(), movedRun.toString());
        assertEquals(unmoved.results(), movedRun.results(), movedRun.toString());
        assertFalse(Files.exists(socket()), "the agent's socket is removed at exit");
    }

    /**
     * A device query answers as the job's vGPUs: as many devices, each the device behind it, and after vGPU 0 moved
     * (from emulated GPU 0 to GPU 1, in the middle of the run) the device it moved to; the pinned memory of
     * cudaHostAlloc serves the kernel between.
     */
    @Test
    void aDeviceQueryAnswersAsTheDeviceBehindEachVgpuBeforeAndAfterAMove() throws Exception {
        ProgramRun unmoved = vgpuRun(job(), "jcudaprograms.JCudaDeviceQuery");
        assertEquals(0, unmoved.status(), unmoved.toString());
        List<String> lines = unmoved.results();
        assertEquals("device query: 2 devices", lines.getFirst(), unmoved.toString());
        for (String when : List.of("before the kernel", "after the kernel")) {
            for (int d = 0; d < 2; d++) {
                String prefix = when + ", device " + d + ": vgpu CPU emulation #" + d + ", compute 8.0, 4096 MiB, ";
                assertTrue(
                        lines.stream()
                                .anyMatch(line -> line.startsWith(prefix)
                                        && line.contains("max pitch 2147483647 B")
                                        && line.endsWith("driver and runtime agree: yes")),
                        prefix + " in\n" + unmoved);
            }
        }
        assertTrue(
                lines.stream().anyMatch(line -> line.startsWith("vector add in pinned memory: PASSED, ")),
                unmoved.toString());

        Map<String, String> paused = job();
        paused.put("VGPU_TEST_PAUSE_AT_LAUNCH", "1");
        paused.put("VGPU_TEST_PAUSE_DIRECTORY", directory.toString());
        CompletableFuture<ProgramRun> running =
                CompletableFuture.supplyAsync(() -> vgpuRun(paused, "jcudaprograms.JCudaDeviceQuery"));
        while (!Files.exists(directory.resolve("paused"))) {
            assertFalse(running.isDone(), () -> "the program ended before its pause: " + running.join());
            Thread.sleep(20);
        }
        CompletableFuture<List<String>> migration = CompletableFuture.supplyAsync(
                () -> LineClient.request(socket(), "migrate 0 1", Duration.ofSeconds(120)));
        // The migration opens its target and copies ahead (about 150 ms here) before it waits for the paused launch
        // and holds back the program's next call; resumed before that, the program would query before the move.
        Thread.sleep(2000);
        Files.writeString(directory.resolve("resume"), "");
        ProgramRun moved = running.get(300, TimeUnit.SECONDS);
        migration.handle((reply, cutOff) -> reply).get(120, TimeUnit.SECONDS);
        assertEquals(0, moved.status(), moved.toString());
        List<String> expected = lines.stream()
                .map(line -> line.startsWith("after the kernel, device 0: ")
                        ? line.replace("vgpu CPU emulation #0", "vgpu CPU emulation #1")
                        : line)
                .toList();
        assertEquals(expected, moved.results(), "after the move, device 0 is the emulated GPU 1: " + moved);
    }

    /**
     * A task of a step of two on the node ({@code srun -n 2 vgpu run -- java ...}) sees its own share of the job's
     * vGPUs: task 1 of a job of 2 vGPUs has one device, vGPU 1 (on the emulated GPU 1).
     */
    @Test
    void aTaskOfAStepOfTwoSeesItsOwnVgpuAsItsDeviceZero() {
        Map<String, String> task = job();
        task.put("SLURM_STEP_TASKS_PER_NODE", "2");
        task.put("SLURM_NODEID", "0");
        task.put("SLURM_LOCALID", "1");

        ProgramRun run = vgpuRun(task, "jcudaprograms.JCudaDeviceQuery");

        assertEquals(0, run.status(), run.toString());
        List<String> lines = run.results();
        assertEquals("device query: 1 devices", lines.getFirst(), run.toString());
        assertTrue(
                lines.stream().anyMatch(line -> line.startsWith("before the kernel, device 0: vgpu CPU emulation #1,")),
                run.toString());
        assertTrue(lines.stream().noneMatch(line -> line.contains("device 1:")), run.toString());
    }

    /** The GPU script's cost program also runs through vgpu run, printing the figures the script reads. */
    @Test
    void theCostProgramPrintsTheFiguresTheGpuScriptReads() {
        ProgramRun run = vgpuRun(job(), "jcudaprograms.JCudaCallCost");

        assertEquals(0, run.status(), run.toString());
        Matcher figures = JCudaProgramsOnGpu.COST.matcher(run.out());
        assertTrue(figures.find(), run.toString());
        assertTrue(run.out().contains(" ns, runtime "), "a vgpu run times vgpu's own copy: " + run.out());
    }

    @Test
    void anUnsupportedJCudaCallFailsNamingTheCall() {
        ProgramRun run = vgpuRun(job(), "jcudaprograms.JCudaUnsupportedCall");

        assertEquals(1, run.status(), run.toString());
        assertTrue(run.out().contains("allocated 4096 B with cuMemAlloc"), run.toString());
        assertTrue(
                run.err()
                        .contains("jcuda.CudaException: vgpu does not support cuMemAllocManaged (in"
                                + " jcudaprograms.JCudaUnsupportedCall.main) under vgpu run; see README (JCuda"
                                + " programs)"),
                run.toString());
        assertFalse(run.out().contains("managed memory at"), run.toString());
    }

    /**
     * Programs in packages named as JCuda's own samples are (jcuda.driver.samples, jcuda.runtime.samples) reach the
     * job's vGPUs: the device names and the device pointer are the emulated vGPUs' (vGPU 1's window begins at
     * 0x1040_0000_0000). There is no GPU here, so a program that called JCuda itself would have failed.
     */
    @Test
    void programsInPackagesNamedJCudaRunOnTheJobsVgpus() {
        ProgramRun driver = vgpuRun(job(), "jcuda.driver.samples.JCudaDriverVectorAdd");
        assertEquals(0, driver.status(), driver.toString());
        // cuDeviceGetName answers as the device behind the vGPU: the emulation says it is one
        assertTrue(driver.out().contains("device 0: vgpu CPU emulation #0\n"), driver.toString());
        assertTrue(driver.out().contains("device 1: vgpu CPU emulation #1\n"), driver.toString());
        assertTrue(driver.out().contains("driver vector add: PASSED, 50000 values"), driver.toString());

        ProgramRun runtime = vgpuRun(job(), "jcuda.runtime.samples.JCudaRuntimeRoundTrip");
        assertEquals(0, runtime.status(), runtime.toString());
        assertTrue(
                runtime.out().contains("devices: 2, device 1 allocated Pointer[nativePointer=0x1040"),
                runtime.toString());
        assertTrue(runtime.out().contains("runtime round trip: PASSED, 4096 values"), runtime.toString());
    }

    /**
     * A program shipped in one jar with JCuda (a "fat" jar: JCuda's classes and the program's share the jar's code
     * source) reaches the job's vGPUs too, also one whose class is in a package of JCuda's own ({@code jcuda.driver}):
     * JCuda's classes are told by name. There is no GPU here, so a program that called JCuda itself would have failed.
     */
    @Test
    void aProgramInOneJarWithJCudaRunsOnTheJobsVgpus() throws Exception {
        Path fatJar = directory.resolve("program-with-jcuda.jar");
        Path jcudaJar = Path.of(JCudaDriver.class
                .getProtectionDomain()
                .getCodeSource()
                .getLocation()
                .toURI());
        try (OutputStream file = Files.newOutputStream(fatJar);
                JarOutputStream jar = new JarOutputStream(file);
                JarFile jcuda = new JarFile(jcudaJar.toFile())) {
            for (JarEntry entry : Collections.list(jcuda.entries())) {
                if (entry.getName().endsWith(".class")) {
                    jar.putNextEntry(new JarEntry(entry.getName()));
                    try (InputStream bytes = jcuda.getInputStream(entry)) {
                        bytes.transferTo(jar);
                    }
                }
            }
            for (String program :
                    List.of("jcuda/driver/BundledDeviceCheck", "jcuda/driver/samples/JCudaDriverVectorAdd")) {
                jar.putNextEntry(new JarEntry(program + ".class"));
                try (InputStream bytes = JCudaProgramsTest.class.getResourceAsStream("/" + program + ".class")) {
                    bytes.transferTo(jar);
                }
            }
        }
        String classPath = fatJar + java.io.File.pathSeparator + CLASS_PATH;

        ProgramRun bundled = vgpuRun(job(), classPath, "jcuda.driver.BundledDeviceCheck");
        assertEquals(0, bundled.status(), bundled.toString());
        assertTrue(bundled.out().contains("devices: 2\n"), bundled.toString());
        assertTrue(bundled.out().contains("device 1 allocated CUdeviceptr[nativePointer=0x1040"), bundled.toString());
        assertTrue(bundled.out().contains("bundled round trip: PASSED, 1024 values"), bundled.toString());

        ProgramRun sample = vgpuRun(job(), classPath, "jcuda.driver.samples.JCudaDriverVectorAdd");
        assertEquals(0, sample.status(), sample.toString());
        assertTrue(sample.out().contains("driver vector add: PASSED, 50000 values"), sample.toString());
    }

    @Test
    void aMappedHostPointerIsRefusedNamingTheCall() {
        ProgramRun run = vgpuRun(job(), "jcuda.runtime.samples.JCudaMappedMemory");

        assertEquals(1, run.status(), run.toString());
        assertTrue(run.out().contains("allocated 4096 B of pinned memory with cudaHostAlloc"), run.toString());
        assertTrue(
                run.err()
                        .contains("jcuda.CudaException: vgpu does not support cudaHostGetDevicePointer (mapped host"
                                + " memory: a kernel on a vGPU reaches host memory only through copies) under vgpu"
                                + " run; see README (JCuda programs)"),
                run.toString());
        assertFalse(run.out().contains("mapped at"), run.toString());
    }

    @Test
    void aReflectiveCallOfJCudaFromAProgramIsRefusedNamingTheCallAndWhereItIsMade() {
        ProgramRun run = vgpuRun(job(), "jcuda.samples.JCudaReflectiveCall");

        assertEquals(1, run.status(), run.toString());
        assertTrue(run.out().contains("calling cuInit by reflection"), run.toString());
        assertTrue(
                run.err()
                        .contains("jcuda.CudaException: vgpu does not support jcuda.driver.JCudaDriver.cuInit through"
                                + " reflection (Method.invoke in jcuda.samples.JCudaReflectiveCall.main) under vgpu"
                                + " run; see README (JCuda programs)"),
                run.toString());
        assertFalse(run.out().contains("cuInit through Method.invoke"), run.toString());
    }
}
