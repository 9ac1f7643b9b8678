package org.vgpu.job;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.vgpu.common.line.LineClient;
import org.vgpu.job.cuda.CudaProgramTwins;

/**
 * CUDA programs written in C against the driver API or C++ against the CUDA runtime, and built by plain nvcc (rcuda-runtime/vgpu-libcuda builds them
 * where nvcc is, as CI's machine has it) run through {@code vgpu run} on the CPU emulation, which puts vgpu's {@code
 * libcuda.so.1} first on their library path: their vGPUs are the job's migratable vGPUs, served by the launcher's
 * local worker, and one moves while the program has state on it. The kernels run as their Java twins ({@link CudaProgramTwins}); on a GPU they are the
 * programs' own PTX (testbed/gpu).
 */
class CudaProgramsTest {
    private static final Path LIBCUDA =
            Path.of("../../rcuda-runtime/vgpu-libcuda/build").toAbsolutePath().normalize();

    /** How the library serves the programs' calls: the launcher's socket (unset) or {@code in-process}. */
    private static final String SERVING_PROPERTY = "vgpu.test.libcuda-serving";

    /**
     * How long runtime_tour pauses with state on its vGPU when a test moves it without holding a launch: far longer than
     * asking for the move takes (the move itself may take longer: the program's next call waits for it).
     */
    private static final String PAUSE_MS = "10000";

    private static Path interposerJar;

    @TempDir
    Path directory;

    private Path agentSocket;
    private Map<String, String> environment;

    @BeforeAll
    static void interposer(@TempDir Path jars) throws IOException {
        interposerJar = RunProgramTest.interposerJar(jars);
    }

    @BeforeEach
    void job() {
        assumeTrue(
                Files.exists(LIBCUDA.resolve("libcuda.so.1")) && Files.exists(program("driver_steps")),
                "vgpu's libcuda.so.1 and its test programs are built by rcuda-runtime/vgpu-libcuda where nvcc is: not"
                        + " here");
        agentSocket = directory.resolve("agent.sock");
        environment = new HashMap<>(Map.of(
                "VGPU_COUNT", "2",
                "VGPU_ASSEMBLY", "0=local:0,1=local:1",
                "VGPU_LOCAL_GPUS", "0,1",
                "CUDA_VISIBLE_DEVICES", "0,1",
                "VGPU_REMOTE", "",
                "VGPU_MIGRATE", "auto",
                "VGPU_NODE", "n1",
                "VGPU_SOURCE", "local-only-fallback",
                "VGPU_AGENT_SOCKET", agentSocket.toString(),
                "SLURM_JOB_ID", "43"));
        // -Dvgpu.test.libcuda-serving=in-process runs the programs with their vGPUs served in their own process
        String serving = System.getProperty(SERVING_PROPERTY);
        if (serving != null) {
            environment.put("VGPU_LIBCUDA_SERVING", serving);
        }
    }

    private static Path program(String name) {
        return LIBCUDA.resolve("programs").resolve(name);
    }

    private ProgramRun run(String... command) {
        return run(environment, command);
    }

    private static ProgramRun run(Map<String, String> job, String... command) {
        List<String> args = new ArrayList<>(List.of("--local-backend", "emulated", "--"));
        args.addAll(List.of(command));
        return ProgramRun.of(job, interposerJar, args);
    }

    @Test
    void cublasGetsAWorkspaceConfigurationUnlessTheJobGaveOne() {
        String[] printWorkspace = {"/bin/sh", "-c", "echo \"workspace ${CUBLAS_WORKSPACE_CONFIG-unset}\""};
        ProgramRun run = run(printWorkspace);
        assertEquals(List.of("workspace :4096:8"), run.results(), run.toString());
        Map<String, String> own = new HashMap<>(environment);
        own.put("CUBLAS_WORKSPACE_CONFIG", ":16:8");
        run = run(own, printWorkspace);
        assertEquals(List.of("workspace :16:8"), run.results(), run.toString());
    }

    @Test
    void aChildForkedAfterItsParentUsedCudaIsRefusedAndTheParentGoesOn() {
        ProgramRun run = run(program("driver_fork").toString());
        assertEquals(0, run.status(), run.toString());
        assertEquals(
                List.of(
                        "child after fork: allocation refused, copy refused",
                        "parent after the child: its copy back equal: yes",
                        "done"),
                run.results(),
                run.toString());
        assertTrue(run.err().contains("refused in a process forked after its parent used them"), run.toString());
    }

    @Test
    void aDriverApiProgramRunsOnItsVgpuAsOnAGpu() {
        ProgramRun run = run(program("driver_tour").toString());
        assertEquals(0, run.status(), run.toString());
        assertEquals(
                List.of(
                        "devices 2, compute capability >= 8: yes",
                        "global of 4 bytes; saxpy total 10050000.0",
                        "free inside an allocation: CUDA_ERROR_INVALID_VALUE",
                        "done"),
                run.results(),
                run.toString());
        assertTrue(run.err().contains("the program opened a session"), run.toString());
    }

    /**
     * Served in the program's own process on the native backend, vgpu's runtime reaches the node's driver through this
     * same library (JCuda's native library binds {@code libcuda.so.1} by name, and in that process the name is vgpu's):
     * its calls must pass to the node's driver, not come back to the vGPU it is opening, where they waited on the vGPU
     * the program's thread was opening and the program hung. Where there is no GPU, a stand-in driver (it refuses the
     * context with an error a vGPU never gives there) shows where they went.
     */
    @Test
    @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void servedInItsOwnProcessTheRuntimesDriverCallsReachTheNodesDriver() throws IOException {
        Path standIn = LIBCUDA.resolve("stand-in-driver/libcuda.so.1");
        assumeTrue(Files.exists(standIn), "the stand-in driver is built with the test programs");
        Map<String, String> job = new HashMap<>(environment);
        job.putAll(Map.of( // one vGPU on the stand-in's one device
                "VGPU_COUNT", "1",
                "VGPU_ASSEMBLY", "0=local:0",
                "VGPU_LOCAL_GPUS", "0",
                "CUDA_VISIBLE_DEVICES", "0"));
        job.put("VGPU_LIBCUDA_SERVING", "in-process");
        job.put("VGPU_REAL_LIBCUDA", standIn.toString());
        Path report = directory.resolve("report.txt");
        job.put("VGPU_LIBCUDA_REPORT", report.toString());
        List<String> args = List.of(
                "--local-backend", "native", "--", program("driver_tour").toString());
        ProgramRun run = ProgramRun.of(job, interposerJar, args);
        assertEquals(1, run.status(), run.toString());
        assertTrue(
                run.err().contains("cuDevicePrimaryCtxRetain(device 0) failed: CUDA_ERROR_OUT_OF_MEMORY"),
                run.toString());
        // the report counts the program's calls, not those vgpu's runtime made through the library in its process
        List<String> counted = Files.readAllLines(report).stream()
                .map(line -> line.split("\t")[0])
                .toList();
        assertTrue(counted.contains("cuDeviceGetCount"), counted.toString());
        assertFalse(counted.contains("cuDeviceGetPCIBusId"), "the native backend's own call: " + counted);
    }

    /**
     * A CUDA runtime program, built by plain nvcc (the runtime linked in statically) and with {@code -cudart shared}:
     * the runtime takes vgpu's own hidden tables of the driver, loads the program's fatbins through it, and the
     * program computes on its vGPU what it computes on a GPU (its errors included).
     */
    @ParameterizedTest
    @ValueSource(strings = {"runtime_tour", "runtime_tour_shared"})
    void aCudaRuntimeProgramRunsOnItsVgpuAsOnAGpu(String name) {
        assumeTrue(Files.exists(program(name)), name + " is built by rcuda-runtime/vgpu-libcuda where nvcc is");
        ProgramRun run = run(program(name).toString());
        assertEquals(0, run.status(), run.toString());
        assertEquals(runtimeTourOutput(), run.results(), run.toString());
        assertTrue(run.err().contains("the program opened a session"), run.toString());
    }

    /**
     * runtime_tour's vGPU moves after its first step (its second launch held), with its data and variables on it. The
     * move takes its lock only after opening the target and replaying ahead, while the program's later calls go on; the
     * program's pause after its first step (3 s) keeps that lock out of the span its events time (the next test moves
     * inside it).
     */
    @Test
    void aCudaRuntimeProgramsVgpuMovesWhileItHasStateOnIt() throws Exception {
        ProgramRun run = movedAtLaunch(2, program("runtime_tour").toString(), "3000");
        assertEquals(0, run.status(), run.toString());
        assertEquals(runtimeTourOutput(), run.results(), run.toString());
    }

    /**
     * Served in the program's own process, where direct driver calls are the default (VGPU_LIBCUDA_DIRECT unset) or
     * asked for (on): the library finds the runtime's direct-call methods and registers its own native ones there (else
     * it would say the runtime offers none), offers them as each vGPU opens and asks for the driver's handles, of which
     * an emulated vGPU has none: every call is served, and the program computes what it computes on a GPU.
     */
    @ParameterizedTest
    @ValueSource(strings = {"", "on"})
    void servedInItsOwnProcessWithDirectCallsOnTheEmulationEveryCallIsServed(String direct) {
        Map<String, String> job = new HashMap<>(environment);
        job.put("VGPU_LIBCUDA_SERVING", "in-process");
        job.put("VGPU_LIBCUDA_DIRECT", direct);
        ProgramRun run = run(job, program("runtime_tour").toString());
        assertEquals(0, run.status(), run.toString());
        assertEquals(runtimeTourOutput(), run.results(), run.toString());
        assertFalse(run.err().contains("direct calls"), "nothing said about direct calls: " + run);
    }

    /**
     * Served in the program's own process, asynchronous requests (runtime_tour's launches, asynchronous copies and
     * memsets) wait in the library for the next request that is answered and go with it, in one call into the runtime:
     * the report counts fewer calls than requests (one each, and more, before), and the program computes what it
     * computes on a GPU, its errors included; a kernel's fault is still reported by the synchronize after its launch.
     */
    @Test
    void servedInItsOwnProcessAsynchronousRequestsGoWithTheNextAnsweredOne() throws IOException {
        Map<String, String> job = new HashMap<>(environment);
        job.put("VGPU_LIBCUDA_SERVING", "in-process");
        Path report = directory.resolve("report.txt");
        job.put("VGPU_LIBCUDA_REPORT", report.toString());
        ProgramRun run = run(job, program("runtime_tour").toString());
        assertEquals(0, run.status(), run.toString());
        assertEquals(runtimeTourOutput(), run.results(), run.toString());
        String[] served = Files.readAllLines(report).stream()
                .filter(line -> line.startsWith("served-in-process\t"))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no served-in-process line in the report"))
                .split("\t");
        long requests = Long.parseLong(served[1].replace(" requests", ""));
        long calls = Long.parseLong(served[2].replace(" calls into the runtime", ""));
        assertTrue(calls > 0 && calls < requests, String.join(" ", served));

        ProgramRun fault = run(job, program("driver_steps").toString(), "2", "0", "fault");
        assertEquals(0, fault.status(), fault.toString());
        assertEquals(
                "a kernel on memory the program does not have: launch CUDA_SUCCESS, next synchronize"
                        + " CUDA_ERROR_ILLEGAL_ADDRESS",
                fault.results().getLast(),
                fault.toString());
    }

    /**
     * Served in the program's own process, runtime_tour's vGPU moves to the job's other GPU while the program pauses
     * with state on it (its memory, its module variables, its kernels' module): the move stops the vGPU's direct calls
     * first (the library's stop, a native method the runtime calls through LibraryDirectCalls) and resumes them after,
     * and the program computes what it computes on a GPU. The launch holds of the other move tests live in this JVM,
     * not the program's, so the move is asked while the program pauses; it waits at its next call for the move to end.
     */
    @Test
    void servedInItsOwnProcessAProgramsVgpuMovesWhileItHasStateOnIt() throws Exception {
        Map<String, String> job = new HashMap<>(environment);
        job.put("VGPU_LIBCUDA_SERVING", "in-process");
        ProgramRun run = movedWhilePausing(job, "runtime_tour");
        assertEquals(0, run.status(), run.toString());
        assertEquals(runtimeTourOutput(), run.results(), run.toString());
    }

    /**
     * VGPU_LIBCUDA_JVM_OPTIONS reaches the JVM the library starts in the program: options it takes leave the program as
     * it was; one it refuses stops the program at its first CUDA call, with a line naming the variable and its value.
     */
    @Test
    void theJvmInTheProgramTakesTheUsersOptionsAndOneItRefusesIsNamed() {
        Map<String, String> job = new HashMap<>(environment);
        job.put("VGPU_LIBCUDA_SERVING", "in-process");
        job.put("VGPU_LIBCUDA_JVM_OPTIONS", "-Xss2m  -Dvgpu.test.option=1");
        ProgramRun run = run(job, program("runtime_tour").toString());
        assertEquals(0, run.status(), run.toString());
        assertEquals(runtimeTourOutput(), run.results(), run.toString());
        job.put("VGPU_LIBCUDA_JVM_OPTIONS", "-Xss2m -XX:+NoSuchVgpuOption");
        run = run(job, program("runtime_tour").toString());
        assertNotEquals(0, run.status(), run.toString());
        assertTrue(
                run.err().contains("its options include VGPU_LIBCUDA_JVM_OPTIONS=-Xss2m -XX:+NoSuchVgpuOption"),
                run.toString());
    }

    /** A VGPU_LIBCUDA_DIRECT that is neither on nor off is said once, and every call is served. */
    @Test
    void aDirectSettingNeitherOnNorOffIsSaidAndEveryCallServed() {
        Map<String, String> job = new HashMap<>(environment);
        job.put("VGPU_LIBCUDA_SERVING", "in-process");
        job.put("VGPU_LIBCUDA_DIRECT", "yes");
        ProgramRun run = run(job, program("runtime_tour").toString());
        assertEquals(0, run.status(), run.toString());
        assertEquals(runtimeTourOutput(), run.results(), run.toString());
        assertEquals(
                1,
                run.err()
                        .lines()
                        .filter(line -> line.contains("VGPU_LIBCUDA_DIRECT=yes: expected on or off"))
                        .count(),
                run.toString());
    }

    /**
     * runtime_tour's vGPU moves while the program times a copy, a launch and a copy back with two events: its third
     * launch, between the two records, is held, so the first event is recorded on the source and the second on the
     * target, and the program's cudaEventElapsedTime spans the move.
     */
    @Test
    void aCudaRuntimeProgramTimesAcrossAMoveOfItsVgpu() throws Exception {
        ProgramRun run = movedAtLaunch(3, program("runtime_tour").toString(), "0");
        assertEquals(0, run.status(), run.toString());
        assertEquals(runtimeTourOutput(), run.results(), run.toString());
    }

    /** What runtime_tour prints on a GPU, computed here as its kernels compute (fused multiply-adds, tree sums). */
    private static List<String> runtimeTourOutput() {
        int n = 1 << 20;
        float[] x = new float[n];
        double polynomialSum = 0;
        double scaledSum = 0;
        for (int i = 0; i < n; i++) {
            x[i] = (float) (i % 1000) / 1000.0f;
            float v = x[i];
            polynomialSum += Math.fma(Math.fma(Math.fma(0.125f, v, 0.25f), v, 0.5f), v, 1.0f);
            x[i] = v * 2.0f;
            scaledSum += x[i];
        }
        int blocks = n / 256;
        double blockTotal = blockSumsTotal(x, 256);
        long indices = 0;
        for (int i = 0; i < 1000; i++) {
            indices += i * 3L + 1;
        }
        return List.of(
                "devices >= 1: yes, device 0 has compute capability >= 8: yes",
                String.format("polynomial sum %.3f, launches seen by the device 2", polynomialSum),
                String.format("scaled sum %.3f, elapsed time measured: yes", scaledSum),
                "pointer kinds: device memory 2 on device 0 at itself yes, page-locked 1 at itself yes, pageable 0",
                "a __device__ variable: memory 2 on device 0 at itself yes",
                "stream after an event: cudaSuccess, event: cudaSuccess",
                String.format("block sums total %.3f over %d blocks", blockTotal, blocks),
                "indices total " + indices,
                "launch with 4096 threads per block: cudaErrorInvalidValue",
                "free of a host address: cudaErrorInvalidValue",
                "done");
    }

    /**
     * A CUDA runtime program as modern code and libraries launch: the occupancy API chooses its launch,
     * cudaLaunchKernelEx launches with launch attributes, and a kernel opts in to more dynamic shared memory. Served
     * over the launcher's socket and in the program's own process, where the library keeps the kernel's and the
     * device's attributes until the vGPU moves, and those a program may set until it sets one: the program asks the
     * dynamic shared memory before and after its opt-in.
     */
    @ParameterizedTest
    @ValueSource(strings = {"", "in-process"})
    void launchesWithAttributesAndOccupancyRunOnItsVgpuAsOnAGpu(String serving) {
        assumeTrue(
                Files.exists(program("launch_tour")),
                "launch_tour is built by rcuda-runtime/vgpu-libcuda where nvcc is");
        Map<String, String> job = new HashMap<>(environment);
        if (!serving.isEmpty()) {
            job.put("VGPU_LIBCUDA_SERVING", serving);
        }
        ProgramRun run = run(job, program("launch_tour").toString());
        assertEquals(0, run.status(), run.toString());
        assertEquals(launchTourOutput(), run.results(), run.toString());
    }

    /**
     * pitched_tour's pitched allocations, 2-D copies (host rows further apart than the device's, a rectangle on the
     * device, a band on a stream) and 2-D memsets, and copies whose direction comes from the pointers, over the
     * launcher's socket and in the program's own process, its vGPU moving to the job's other GPU while its pitched
     * memory holds data: the runtime's calls reach vgpu's own entry points, each step finds what it finds on a GPU, and
     * a row wider than its pitch is refused as CUDA refuses it.
     */
    @ParameterizedTest
    @ValueSource(strings = {"", "in-process"})
    void pitchedAllocationsTwoDimensionalCopiesAndMemsetsAndCopiesOfEitherDirectionRunOnAVgpuThatMoves(String serving)
            throws Exception {
        ProgramRun run = movedWhilePausingReaching(
                serving,
                "pitched_tour",
                List.of(
                        "cuMemAllocPitch",
                        "cuMemcpy2DUnaligned",
                        "cuMemcpy2DAsync",
                        "cuMemcpy3D",
                        "cuMemsetD2D8",
                        "cuMemsetD2D8Async",
                        "cuMemcpy",
                        "cuMemcpyAsync",
                        "cuMemHostRegister",
                        "cuMemHostUnregister",
                        "cuLaunchHostFunc",
                        "cuStreamAddCallback",
                        "cuMemAllocAsync",
                        "cuMemFreeAsync",
                        "cuMemGetAddressRange",
                        "cuCtxSetCacheConfig",
                        "cuDeviceCanAccessPeer",
                        "cuMemcpyPeer"));
        assertEquals(
                List.of(
                        "pitched allocation: pitch holds a row: yes, rows aligned to 256 bytes: yes, both pitches"
                                + " equal: yes",
                        "2-D copies to, on and from the device and a 2-D memset: 37000 of 37000 floats as expected,"
                                + " the host's row gaps untouched: yes",
                        "2-D memset and copy on a stream: 2368 of 2368 floats as expected",
                        "2-D copies with page-locked memory on a stream: 2960 of 2960 floats as expected",
                        "a host function on a stream saw 0x07070707 before it, its 42 reached the device after it: yes;"
                                + " a callback's status: cudaSuccess",
                        "copies with cudaMemcpyDefault: 65536 of 65536 floats as expected",
                        "pageable memory reused once its asynchronous copy returned: 65536 of 65536 floats as the copy"
                                + " took them",
                        "stream-ordered allocation: 65536 of 65536 floats as expected; an address inside an"
                                + " allocation: found, its start: yes, 262144 bytes",
                        "70000 rows of 8 bytes and 2 rows of 5 MiB to the device and back: 11045760 of 11045760 bytes"
                                + " as expected",
                        "a 3-D volume set, a box written and all read back: 48000 of 48000 bytes as expected",
                        "registered host memory: 4096 of 4096 floats back, a host pointer: yes, registered again in"
                                + " part: cudaErrorHostMemoryAlreadyRegistered, unregistered twice:"
                                + " cudaErrorHostMemoryNotRegistered",
                        "a cache preference set; devices device 0 reaches as a peer: 0",
                        "a copy to the last device and back: 65536 of 65536 floats as expected",
                        "a row wider than its pitch: cudaErrorInvalidPitchValue",
                        "pitched tour done"),
                run.results(),
                run.toString());
    }

    /**
     * graph_tour's CUDA graphs made by stream capture, over the launcher's socket and in the program's own process, its
     * vGPU moving to the job's other GPU between two launches of one graph: a capture records and runs nothing, each
     * launch runs the captured copies, memset, kernels and host function in their order (on its stream, or another),
     * reading the host memory as it is then, a kernel's parameters are those of the capture, and what CUDA refuses
     * during a capture ends it with no graph.
     */
    @ParameterizedTest
    @ValueSource(strings = {"", "in-process"})
    void graphsMadeByStreamCaptureRunTheirWorkAtEachLaunchOnAVgpuThatMoves(String serving) throws Exception {
        ProgramRun run = movedWhilePausingReaching(
                serving,
                "graph_tour",
                List.of(
                        "cuStreamBeginCapture",
                        "cuStreamEndCapture",
                        "cuStreamIsCapturing",
                        "cuStreamGetCaptureInfo",
                        "cuGraphLaunch",
                        "cuGraphExecDestroy",
                        "cuGraphDestroy",
                        "cuThreadExchangeStreamCaptureMode"));
        assertEquals(
                List.of(
                        "a step captured: capturing while recorded: yes, a capture id: yes, no capture after its end:"
                                + " yes, nothing ran during the capture: yes",
                        "the step's graph launched 3 times, the last on another stream: 3 of 3 results as expected,"
                                + " its host function ran 3 times",
                        "a kernel captured with a factor of 2, the factor then set to 5: 65536 of 65536 values scaled"
                                + " by 2",
                        "a capture forked to another stream and joined back: the other stream captured: yes, its"
                                + " capture ended with the first's: yes, 2 of 2 results as expected",
                        "a 2-D memset and 2-D copies of pitched memory captured: 2 of 2 results as expected",
                        "capturing the legacy default stream: cudaErrorStreamCaptureUnsupported; a captured stream"
                                + " synchronized: cudaErrorStreamCaptureUnsupported, the capture's end:"
                                + " cudaErrorStreamCaptureInvalidated, no graph: yes; ending no capture:"
                                + " cudaErrorIllegalState",
                        "this thread's capture mode: global before, relaxed after: yes",
                        "graph tour done"),
                run.results(),
                run.toString());
    }

    /** What launch_tour prints on a GPU: y = 0.5 x + (2 x + 1) in fused multiply-adds, then its blocks' tree sums. */
    private static List<String> launchTourOutput() {
        int n = 1 << 20;
        float[] y = new float[n];
        double total = 0;
        for (int i = 0; i < n; i++) {
            float x = (float) (i % 1000) / 1000.0f;
            y[i] = Math.fma(0.5f, x, Math.fma(2.0f, x, 1.0f));
            total += y[i];
        }
        int blocks = n / 256;
        double tiles = blockSumsTotal(y, 256);
        return List.of(
                "axpy: up to 256 threads per block or more: yes, registers counted: yes, binary for the device: yes",
                "occupancy: block of whole warps: yes, blocks per multiprocessor >= 1: yes, within its threads: yes,"
                        + " grid fills the device: yes",
                String.format("axpy twice through cudaLaunchKernelEx: sum %.3f", total),
                "tile_sums: dynamic shared memory allowed 65536 bytes (less before)",
                "fewer blocks per multiprocessor with 64 KiB tiles: yes, still one or more: yes",
                String.format("tile sums total %.3f over %d blocks", tiles, blocks),
                "launch with 4096 threads per block: cudaErrorInvalidValue",
                "launch with more dynamic shared memory than allowed: cudaErrorInvalidValue",
                "done");
    }

    /**
     * The total of the sums a block of {@code width} threads computes of each {@code width} values in shared memory:
     * halves folded onto the first, stride by stride, in float.
     */
    private static double blockSumsTotal(float[] values, int width) {
        double total = 0;
        for (int b = 0; b < values.length / width; b++) {
            float[] partial = Arrays.copyOfRange(values, b * width, b * width + width);
            for (int stride = width / 2; stride > 0; stride /= 2) {
                for (int t = 0; t < stride; t++) {
                    partial[t] += partial[t + stride];
                }
            }
            total += partial[0];
        }
        return total;
    }

    @Test
    void itsVgpuMovesWhileItHasStateOnIt() throws Exception {
        ProgramRun run = movedAtLaunch(5, program("driver_steps").toString(), "12", "0");
        assertEquals(0, run.status(), run.toString());
        assertEquals(List.of("12 steps checked; checksum " + expectedChecksum(12)), run.results(), run.toString());
    }

    /**
     * A launch returns before the vGPU ran it, as on a GPU: the kernel's fault (memory the program does not have) is
     * reported by the program's next synchronizing call, not by the launch.
     */
    @Test
    void aKernelsFaultIsReportedByTheNextSynchronizeAsOnAGpu() {
        ProgramRun run = run(program("driver_steps").toString(), "2", "0", "fault");
        assertEquals(0, run.status(), run.toString());
        assertEquals(
                List.of(
                        "2 steps checked; checksum " + expectedChecksum(2),
                        "a kernel on memory the program does not have: launch CUDA_SUCCESS, next synchronize"
                                + " CUDA_ERROR_ILLEGAL_ADDRESS"),
                run.results(),
                run.toString());
    }

    /**
     * The program run as {@link #movedWhilePausing} runs it, served as {@code serving} says (empty: the default), with
     * the library's report asked for; checked to have ended well and to have reached each of {@code entryPoints} in
     * vgpu's own library.
     */
    private ProgramRun movedWhilePausingReaching(String serving, String name, List<String> entryPoints)
            throws Exception {
        assumeTrue(Files.exists(program(name)), name + " is built by rcuda-runtime/vgpu-libcuda where nvcc is");
        Map<String, String> job = new HashMap<>(environment);
        if (!serving.isEmpty()) {
            job.put("VGPU_LIBCUDA_SERVING", serving);
        }
        Path report = directory.resolve("report.txt");
        job.put("VGPU_LIBCUDA_REPORT", report.toString());
        ProgramRun run = movedWhilePausing(job, name);
        assertEquals(0, run.status(), run.toString());
        List<String> counted = Files.readAllLines(report).stream()
                .map(line -> line.split("\t")[0])
                .toList();
        assertTrue(counted.containsAll(entryPoints), "the runtime's calls reach vgpu's own entry points: " + counted);
        return run;
    }

    /**
     * {@code name} run in {@code job} with its pause ({@link #PAUSE_MS}), its vGPU 0 moved from emulated GPU 0 to GPU 1
     * once it has state there: while it pauses, since launch holds live in this JVM and a program served in its own
     * process runs its emulation in its own. Its next call waits for the move to end.
     */
    private ProgramRun movedWhilePausing(Map<String, String> job, String name) throws Exception {
        CompletableFuture<ProgramRun> program =
                CompletableFuture.supplyAsync(() -> run(job, program(name).toString(), PAUSE_MS));
        assertTrue(
                AgentStatus.awaitStateOnVgpu0(agentSocket, program, Duration.ofSeconds(60)),
                "the program had state on vGPU 0 while it ran");
        List<String> reply = LineClient.request(agentSocket, "migrate 0 1", Duration.ofSeconds(60));
        boolean whileRunning = !program.isDone();
        ProgramRun run = program.get(120, TimeUnit.SECONDS);
        assertTrue(reply.getLast().startsWith("ok vgpu 0 moved gpu 0 (emulated) -> gpu 1"), reply + "\n" + run);
        assertTrue(whileRunning, "the move landed while the program ran: " + run);
        return run;
    }

    /** The program run with its vGPU 0 moved from emulated GPU 0 to GPU 1 while its {@code launch}-th launch is held. */
    private ProgramRun movedAtLaunch(int launch, String... command) throws Exception {
        return movedAtLaunch(
                environment,
                agentSocket,
                () -> {},
                "migrate 0 1",
                "ok vgpu 0 moved gpu 0 (emulated) -> gpu 1",
                launch,
                command);
    }

    /** What a test checks while the program waits at its held launch. */
    private interface WhileHeld {
        void check() throws Exception;
    }

    /**
     * The program run in {@code job}: while its {@code launch}-th launch is held, {@code whileHeld} checks, then
     * {@code migrate} through {@code agent} moves a vGPU, whose reply must begin with {@code moved}.
     */
    private static ProgramRun movedAtLaunch(
            Map<String, String> job,
            Path agent,
            WhileHeld whileHeld,
            String migrate,
            String moved,
            int launch,
            String... command)
            throws Exception {
        CudaProgramTwins.Hold hold = CudaProgramTwins.holdLaunch(launch);
        CompletableFuture<ProgramRun> program = CompletableFuture.supplyAsync(() -> run(job, command));
        try {
            assertTrue(hold.awaitReached(60), "the program reached its launch " + launch);
            whileHeld.check();
            CompletableFuture<List<String>> reply =
                    CompletableFuture.supplyAsync(() -> LineClient.request(agent, migrate, Duration.ofSeconds(60)));
            // The move waits for the held launch and the program's next call waits for the move, once the move has
            // begun: so the launch is let go only when the agent says its vGPU is migrating (else a loaded machine
            // may let the program run to its end before the request is read).
            awaitMigrating(agent, reply);
            hold.release();
            List<String> lines = reply.get(90, TimeUnit.SECONDS);
            assertTrue(lines.getLast().startsWith(moved), lines.toString());
        } finally {
            hold.release();
        }
        return program.get(120, TimeUnit.SECONDS);
    }

    /** Until the agent's status says a vGPU is migrating, or the move's reply came (a refusal, say). */
    private static void awaitMigrating(Path agent, CompletableFuture<List<String>> reply) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!reply.isDone() && System.nanoTime() < deadline) {
            List<String> status = LineClient.request(agent, "status", Duration.ofSeconds(60));
            if (status.getLast().contains(", migrating now")) {
                return;
            }
            Thread.sleep(10);
        }
    }

    // ---- a step of several tasks on the node (srun -n 2 vgpu run -- ./app): each task its own share of the vGPUs

    private Map<String, String> task(int localId) {
        Map<String, String> task = new HashMap<>(environment);
        task.putAll(Map.of(
                "VGPU_COUNT", "4",
                "VGPU_ASSEMBLY", "0=local:0,1=local:1,2=local:2,3=local:3",
                "VGPU_LOCAL_GPUS", "0,1,2,3",
                "CUDA_VISIBLE_DEVICES", "0,1,2,3",
                "SLURM_STEP_TASKS_PER_NODE", "2",
                "SLURM_NODEID", "0",
                "SLURM_LOCALID", Integer.toString(localId)));
        return task;
    }

    @Test
    void eachTaskOfAStepGetsItsOwnShareOfTheVgpusAndItsOwnAgent() throws Exception {
        ProgramRun first = run(task(0), program("driver_tour").toString());
        assertEquals(0, first.status(), first.toString());
        assertEquals("devices 2, compute capability >= 8: yes", first.results().getFirst(), first.toString());

        Path taskAgent = directory.resolve("agent.sock.vgpus-2-3");
        ProgramRun run = movedAtLaunch(
                task(1),
                taskAgent,
                () -> {
                    List<String> status = LineClient.request(taskAgent, "status", Duration.ofSeconds(10));
                    String all = String.join("\n", status);
                    assertTrue(all.contains("vgpu 2 on gpu 2 (emulated)") && all.contains("vgpu 3 on gpu 3"), all);
                    assertTrue(
                            !all.contains("vgpu 0 ") && !all.contains("vgpu 1 "),
                            "task 0's vGPUs are not task 1's: " + all);
                    assertTrue(!Files.exists(agentSocket), "no task serves the job's whole socket");
                    // GPU 0 is task 0's: task 1 may move its vGPUs onto its own GPUs (and those the tracker grants it)
                    List<String> refused = LineClient.request(taskAgent, "migrate 2 0", Duration.ofSeconds(60));
                    assertTrue(
                            refused.getLast()
                                    .contains("GPU 0 of node n1 is not granted to job 43 (it has GPU 2, GPU 3)"),
                            refused.toString());
                },
                "migrate 2 3",
                "ok vgpu 2 moved gpu 2 (emulated) -> gpu 3",
                5,
                program("driver_steps").toString(),
                "12",
                "0");
        assertEquals(0, run.status(), run.toString());
        assertEquals(List.of("12 steps checked; checksum " + expectedChecksum(12)), run.results(), run.toString());
    }

    @Test
    void tasksThatCannotShareTheVgpusEquallyAreRefusedBeforeTheProgramStarts() {
        Map<String, String> task = task(1);
        task.put("SLURM_STEP_TASKS_PER_NODE", "3");
        ProgramRun run = run(task, program("driver_tour").toString());

        assertEquals(2, run.status(), run.toString());
        assertEquals(
                "vgpu run: this step runs 3 tasks on this node and the job has 4 vGPUs, which do not divide equally"
                        + " among them: each task gets its own vGPUs, so submit with --gres=vgpu:N where N is a"
                        + " multiple of 3 (e.g. 3 for one vGPU per task), or run 1, 2 or 4 task(s) per node\n",
                run.err(),
                run.toString());
        assertEquals("", run.out(), "the program did not start");
    }

    /** What driver_steps computes: state[i] = state[i] / 2 + (i % 7 + step), from zeros, 65536 elements. */
    private static String expectedChecksum(int steps) {
        int n = 1 << 16;
        float[] state = new float[n];
        for (int step = 1; step <= steps; step++) {
            for (int i = 0; i < n; i++) {
                state[i] = Math.fma(state[i], 0.5f, (float) (i % 7 + step));
            }
        }
        double sum = 0;
        for (float value : state) {
            sum += value;
        }
        return String.format("%.1f", sum);
    }
}
