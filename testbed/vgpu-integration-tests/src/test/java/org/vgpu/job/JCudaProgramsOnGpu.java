package org.vgpu.job;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.line.LineClient;
import org.vgpu.common.security.ThrowawaySiteKey;

/**
 * The GPU machine's check of the JCuda programs (testbed/gpu/jcuda-programs.sh runs it): each program with plain
 * JCuda, then unmodified through {@code vgpu run --} on device 0 natively, on two workers of the same GPU in other
 * processes (remote), and starting remote and moved onto the native GPU while it runs; every vgpu run must print
 * what plain JCuda printed. Then the cost of vgpu's path against plain JCuda for an asynchronous launch and a 4 KiB
 * copy, as the median of the ratios of interleaved pairs of runs ({@code jcudaprograms.JCudaCallCost}).
 *
 * <p>With the system property {@code vgpu.cuda.programs} naming the directory of the C programs
 * rcuda-runtime/vgpu-libcuda builds (testbed/gpu/cuda-programs.sh), a driver-API one and the CUDA runtime one go
 * through the same three runs after the JCuda programs: their vGPUs are the launcher's, served to vgpu's {@code
 * libcuda.so.1}; with {@code vgpu.torch.training} naming a PyTorch training script, so does {@code python3} running
 * it: the losses it prints must be the ones plain PyTorch printed; with {@code vgpu.torch.graph} naming
 * rcuda-runtime/vgpu-libcuda/tests/programs/torch_graph.py, a PyTorch CUDA graph's replays, the vGPU moving between two
 * of them.
 *
 * <p>Arguments: the PTX directory (built by nvcc from the programs' .cu files), how often each program repeats its
 * computation (default 20: long enough for a move to land while it runs), the pairs of cost runs (default 5; 0
 * skips them); a PTX directory of {@code -} checks the C programs alone. Exit 0 when every comparison is equal and
 * every move landed mid-run.
 */
public final class JCudaProgramsOnGpu {
    /** The programs, by class name; those without a package are in {@code jcudaprograms}. */
    static final List<String> PROGRAMS = List.of(
            "JCudaVectorAdd",
            "JCudaReduction",
            "JCudaMatrixMultiply",
            "JCudaStreams",
            "JCudaConstantMemory",
            "JCudaNvrtc",
            "JCudaHeatSimulation",
            "JCudaTwoDevices",
            "JCudaPointerTable",
            "jcuda.runtime.samples.JCudaStreamCallbacks",
            "jcuda.driver.samples.JCudaDriverStreamCallbacks",
            "jcuda.driver.samples.JCudaHostFunctionPipeline",
            "jcuda.nvrtc.samples.JCudaNvrtcTemplates",
            "jcuda.nvrtc.samples.JCudaNvrtcLoweredNames",
            "jcuda.driver.samples.JCudaDeviceHeap",
            "jcuda.runtime.samples.JCudaRuntimeLimits",
            "jcuda.runtime.samples.JCudaPinnedFlags");
    /**
     * The C programs and their arguments: long enough, with their pauses, for a move to land while they run (driver
     * steps 200 times 20 ms; runtime_tour, the CUDA runtime's, built static and shared, waits 3 s after its first
     * step; pitched_tour waits 3 s once its pitched memory holds data, graph_tour 3 s between two launches of its graph;
     * cublas_gemm and cufft_transform, built against
     * the toolkit's cuBLAS and cuFFT by cuda-programs.sh, wait 3 s between two products and between a plan's two
     * transforms). (driver_tour prints the device count, which is the
     * job's vGPUs here: cuda-programs.sh compares it on one vGPU.) The system property {@code vgpu.cuda.programs.only}
     * (names, comma-separated) checks those alone.
     */
    static final List<List<String>> CUDA_PROGRAMS = List.of(
            List.of("driver_steps", "200", "20"),
            List.of("runtime_tour", "3000"),
            List.of("runtime_tour_shared", "3000"),
            List.of("pitched_tour", "3000"),
            List.of("graph_tour", "3000"),
            List.of("cublas_gemm", "3000"),
            List.of("cufft_transform", "3000"));

    /**
     * A PyTorch training step's steps per model: enough for a move to land while the script trains (the system
     * property {@code vgpu.torch.training} names the script, rcuda-runtime/vgpu-libcuda/tests/programs/torch_training.py).
     */
    static final String TORCH_TRAINING_STEPS = "300";

    /** How long latency_bench waits with its memory on a borrowed vGPU before it measures: the move lands meanwhile. */
    private static final String MOVE_PAUSE_MS = "3000";

    private static final String CLASS_PATH = System.getProperty("java.class.path");
    /** {@code vgpu remote-bench}'s median remote launch + synchronize. */
    private static final Pattern JAVA_REMOTE_SYNC = Pattern.compile("remote launch \\+ synchronize\\s+([0-9.]+) us");

    private static final String JAVA =
            Path.of(System.getProperty("java.home"), "bin", "java").toString();
    private static final String JOB = "4242";
    /** "native"; "emulated" checks this check itself on a machine without a GPU (where plain JCuda cannot run). */
    private static final String BACKEND = System.getProperty("vgpu.jcuda.check.backend", "native");

    /** JCudaCallCost's line: the last figure is vgpu's own copy in a vgpu run, a second plain copy in a plain one. */
    static final Pattern COST = Pattern.compile(
            "call cost: launch (\\d+) ns, copy 4 KiB (\\d+) ns, cold (\\d+) ns, (?:runtime|again) (\\d+) ns");

    private final Path ptx;
    private final String repeat;
    private final Path directory;
    private final Path interposerJar;
    private final ThrowawaySiteKey siteKey = ThrowawaySiteKey.create("jcuda-gpu");
    private final List<Process> workers = new ArrayList<>();
    private int workerCount;

    private JCudaProgramsOnGpu(Path ptx, String repeat) throws IOException {
        this.ptx = ptx;
        this.repeat = repeat;
        this.directory = Files.createTempDirectory("vgpu-jcuda-gpu");
        this.interposerJar = RunProgramTest.interposerJar(directory.resolve("interposer"));
    }

    public static void main(String[] args) throws Exception {
        Path ptx = Path.of(args[0]);
        String repeat = args.length > 1 ? args[1] : "20";
        int pairs = args.length > 2 ? Integer.parseInt(args[2]) : 5;
        JCudaProgramsOnGpu check = new JCudaProgramsOnGpu(ptx, repeat);
        boolean passed;
        try {
            boolean jcudaPrograms = !args[0].equals("-");
            passed = !jcudaPrograms
                    || check.programs(PROGRAMS.stream()
                            .map(name -> new Program(name, check.jcuda(name, check.ptx.toString(), check.repeat)))
                            .toList());
            String cudaPrograms = System.getProperty("vgpu.cuda.programs");
            if (cudaPrograms != null) {
                List<String> only = Arrays.stream(System.getProperty("vgpu.cuda.programs.only", "")
                                .split(","))
                        .filter(name -> !name.isBlank())
                        .toList();
                passed &= check.programs(CUDA_PROGRAMS.stream()
                        .filter(command -> only.isEmpty() || only.contains(command.getFirst()))
                        .map(command -> new Program(command.getFirst(), cuda(Path.of(cudaPrograms), command)))
                        .toList());
            }
            String torchTraining = System.getProperty("vgpu.torch.training");
            if (torchTraining != null) {
                passed &= check.programs(List.of(
                        new Program("torch_training", List.of("python3", torchTraining, TORCH_TRAINING_STEPS))));
            }
            String torchGraph = System.getProperty("vgpu.torch.graph");
            if (torchGraph != null) {
                passed &= check.programs(List.of(new Program("torch_graph", List.of("python3", torchGraph, "3"))));
            }
            String bench = System.getProperty("vgpu.cuda.bench");
            if (bench != null) {
                passed &= check.remoteBench(Path.of(bench), Path.of(System.getProperty("vgpu.cuda.bench.out", ".")));
            }
            passed &= pairs == 0 || !jcudaPrograms || check.cost(pairs);
        } finally {
            check.close();
        }
        System.out.println(passed ? "PASS: jcuda programs" : "FAIL: jcuda programs");
        System.exit(passed ? 0 : 1);
    }

    /** A program to check: its name, and its command line (without vgpu run's). */
    record Program(String name, List<String> command) {
        /** A C program checks its own results and exits non-zero when one is wrong; a JCuda program prints PASSED. */
        boolean checked(ProgramRun run) {
            return run.status() == 0
                    && (!command.getFirst().equals(JAVA)
                            || (!run.out().contains("FAILED") && run.out().contains(": PASSED, ")));
        }
    }

    /** A JCuda program's command: its class in this JVM's class path. */
    private List<String> jcuda(String program, String... args) {
        String className = program.contains(".") ? program : "jcudaprograms." + program;
        List<String> command = new ArrayList<>(List.of(JAVA, "-cp", CLASS_PATH, className));
        command.addAll(Arrays.asList(args));
        return command;
    }

    /** A C program's command: its binary in {@code directory}, then its arguments. */
    private static List<String> cuda(Path directory, List<String> command) {
        List<String> line = new ArrayList<>(command);
        line.set(0, directory.resolve(command.getFirst()).toAbsolutePath().toString());
        return line;
    }

    /**
     * A worker on GPU 0 in a process of its own, for one session of {@code vgpu} (a worker serves one session, then
     * ends); its endpoint and the job's VGPU_REMOTE entry for it.
     */
    private String[] startWorker(int vgpu) throws IOException, InterruptedException {
        int port;
        try (ServerSocket free = new ServerSocket(0)) {
            port = free.getLocalPort();
        }
        String id = "jcuda-worker-" + workerCount++;
        workers.add(new ProcessBuilder(
                        JAVA,
                        "--enable-native-access=ALL-UNNAMED",
                        "-cp",
                        CLASS_PATH,
                        "org.vgpu.cli.Vgpu",
                        "worker",
                        "--listen",
                        "127.0.0.1:" + port,
                        "--backend",
                        BACKEND,
                        "--device",
                        "0",
                        "--worker-id",
                        id,
                        "--key-file",
                        siteKey.keyFile().toString())
                .redirectErrorStream(true)
                .redirectOutput(directory.resolve(id + ".log").toFile())
                .start());
        waitForListening(port, id);
        String endpoint = "127.0.0.1:" + port;
        String token = siteKey.issuer().issue(JOB, vgpu, id, Duration.ofHours(1));
        return new String[] {endpoint, vgpu + "@" + endpoint + "#" + token};
    }

    /** Ends the workers of the last run that are still there. */
    private void stopWorkers() {
        workers.forEach(Process::destroy);
        workers.clear();
    }

    private static void waitForListening(int port, String id) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            try (Socket probe = new Socket()) {
                probe.connect(new InetSocketAddress("127.0.0.1", port), 500);
                return;
            } catch (IOException notYet) {
                Thread.sleep(100);
            }
        }
        throw new IllegalStateException(id + " does not listen on port " + port + " after 60 s");
    }

    /**
     * A job on this node: the placement of vGPUs 0 and 1, "local" (GPU 0), "remote" (a worker started for it) or, for
     * vGPU 1, "none".
     */
    private Map<String, String> job(String placement0, String placement1) throws IOException, InterruptedException {
        Map<String, String> environment = new HashMap<>(System.getenv());
        List<String> assembly = new ArrayList<>();
        List<String> remotes = new ArrayList<>();
        String[] placements = {placement0, placement1};
        for (int k = 0; k < 2; k++) {
            if (placements[k].equals("none")) {
                continue;
            }
            if (placements[k].equals("local")) {
                assembly.add(k + "=local:0");
            } else {
                String[] worker = startWorker(k);
                assembly.add(k + "=remote:" + worker[0]);
                remotes.add(worker[1]);
            }
        }
        environment.put("VGPU_COUNT", Integer.toString(assembly.size()));
        environment.put("VGPU_ASSEMBLY", String.join(",", assembly));
        environment.put("VGPU_LOCAL_GPUS", assembly.stream().anyMatch(entry -> entry.contains("=local:")) ? "0" : "");
        if (!remotes.isEmpty()) {
            environment.put("VGPU_REMOTE", String.join(",", remotes));
        }
        environment.put("VGPU_AGENT_SOCKET", directory.resolve("agent.sock").toString());
        environment.put("VGPU_MIGRATE", "auto");
        environment.put("VGPU_NODE", "gpu-node");
        environment.put("VGPU_SOURCE", "tracker");
        environment.put("SLURM_JOB_ID", JOB);
        environment.remove("VGPU_TRACKER");
        return environment;
    }

    private ProgramRun plain(List<String> program) throws Exception {
        List<String> command = new ArrayList<>(program);
        if (command.getFirst().equals(JAVA)) {
            command.add(1, "--enable-native-access=ALL-UNNAMED");
        }
        ProcessBuilder builder = new ProcessBuilder(command);
        String nvrtc12 = System.getenv("VGPU_PLAIN_JCUDA_LIBRARY_PATH");
        if (nvrtc12 != null && !nvrtc12.isEmpty()) {
            // jcuda-programs.sh's libnvrtc.so.12 for JCuda's NVRTC binding, for plain JCuda's runs only
            String inherited = builder.environment().get("LD_LIBRARY_PATH");
            builder.environment()
                    .put(
                            "LD_LIBRARY_PATH",
                            inherited == null || inherited.isEmpty() ? nvrtc12 : nvrtc12 + ":" + inherited);
        }
        Process process = builder.start();
        CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> read(process.getErrorStream()));
        String out = read(process.getInputStream());
        return new ProgramRun(process.waitFor(), out, err.join());
    }

    private static String read(java.io.InputStream stream) {
        try {
            return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(unreadable: " + e + ")";
        }
    }

    private ProgramRun vgpu(Map<String, String> job, List<String> program) {
        List<String> command = new ArrayList<>(List.of("--local-backend", BACKEND, "--"));
        command.addAll(program);
        try {
            return ProgramRun.of(job, interposerJar, command);
        } finally {
            stopWorkers();
        }
    }

    /**
     * Each program's runs compared with plain JCuda's. Where plain JCuda cannot run the program on this machine (the
     * NVRTC program where no libnvrtc.so.12 was found or built for JCuda 12.6's NVRTC binding, see jcuda-programs.sh;
     * the two-device program on a machine of one GPU) the reference is the native vgpu run, which must then pass its
     * CPU check.
     */
    private boolean programs(List<Program> programs) throws Exception {
        boolean passed = true;
        for (Program program : programs) {
            ProgramRun plain = plain(program.command());
            List<String> verdicts = new ArrayList<>();
            List<String> timings = new ArrayList<>(timings("plain", plain));
            ProgramRun reference = null;
            String plainly = program.command().getFirst().equals(JAVA) ? "plain JCuda" : "plain CUDA";
            if (plain.status() == 0) {
                reference = plain;
                verdicts.add(plainly + " " + (program.checked(plain) ? "PASSED" : "FAILED its CPU check"));
                passed &= program.checked(plain);
            } else {
                verdicts.add(plainly + " cannot run here ("
                        + plain.err()
                                .lines()
                                .filter(line -> !line.isBlank())
                                .findFirst()
                                .orElse(plain.out().strip())
                        + ")");
            }
            for (String[] mode : new String[][] {{"native", "local", "remote"}, {"remote", "remote", "remote"}}) {
                ProgramRun run = vgpu(job(mode[1], mode[2]), program.command());
                timings.addAll(timings(mode[0], run));
                boolean good;
                if (reference == null) {
                    reference = run;
                    good = program.checked(run);
                    verdicts.add(mode[0] + (good ? " PASSED its CPU check (the reference)" : " FAILED"));
                } else {
                    good = run.status() == 0 && run.results().equals(reference.results());
                    verdicts.add(mode[0] + " " + (good ? "equal" : "DIFFERENT (exit " + run.status() + ")"));
                }
                passed &= good;
                if (!good) {
                    System.out.println(program.name() + " " + mode[0] + " run:\n" + run);
                }
            }
            String moved = movedMidRun(program, reference);
            verdicts.add(moved);
            passed &= moved.startsWith("remote->native mid-run equal");
            timings.forEach(timing -> System.out.println(program.name() + " " + timing));
            System.out.println(program.name() + ": " + String.join(", ", verdicts));
        }
        return passed;
    }

    /**
     * The C latency benchmark (rcuda-runtime/vgpu-libcuda/tests/programs/latency_bench.cu) on a remote vGPU, a worker
     * of GPU 0 in another process, three runs ({@code -Dvgpu.cuda.bench.rounds} sets how many), then as many on a vGPU
     * moved home from such a worker before it measures;
     * each run right after a plain run of the same benchmark, as a plain run's figures drift by 10-20 % over a minute on
     * the GPU machine. Figures into {@code bench.remote.1..3} and {@code bench.moved.1..3} in {@code directory}, the
     * plain runs beside them into {@code bench.remote-plain.N} and {@code bench.moved-plain.N}, where cuda-programs.sh
     * sets each against its plain twin and the Java remote path's figures.
     */
    private boolean remoteBench(Path bench, Path directory) throws Exception {
        int rounds = Integer.getInteger("vgpu.cuda.bench.rounds", 3);
        for (int round = 1; round <= rounds; round++) {
            if (!plainBench(bench, directory.resolve("bench.remote-plain." + round))) {
                return false;
            }
            ProgramRun run = vgpu(job("remote", "none"), List.of(bench.toString()));
            if (run.status() != 0) {
                System.out.println("latency_bench on a remote vGPU failed:\n" + run);
                return false;
            }
            Files.writeString(directory.resolve("bench.remote." + round), String.join("\n", run.results()) + "\n");
            if (Boolean.getBoolean("vgpu.cuda.bench.paired") && !javaRemotePath(run.results(), round)) {
                return false;
            }
        }
        System.out.println("latency_bench on a remote vGPU: " + rounds + " runs in " + directory);
        if (!Boolean.parseBoolean(System.getProperty("vgpu.cuda.bench.moved", "true"))) {
            return true;
        }
        // the same once its vGPU moved home: it waits MOVE_PAUSE_MS with its memory on the worker, moved meanwhile
        for (int round = 1; round <= rounds; round++) {
            if (!plainBench(bench, directory.resolve("bench.moved-plain." + round))) {
                return false;
            }
            MovedRun moved = movedHome(List.of(bench.toString(), MOVE_PAUSE_MS));
            if (moved.run().status() != 0 || !moved.landedMidRun()) {
                System.out.println("latency_bench moved home failed (" + moved.reply() + "):\n" + moved.run());
                return false;
            }
            Files.writeString(
                    directory.resolve("bench.moved." + round),
                    String.join("\n", moved.run().results()) + "\n");
        }
        System.out.println(
                "latency_bench on a vGPU moved home from a remote worker: " + rounds + " runs in " + directory);
        return true;
    }

    /**
     * The Java remote path's launch + synchronize ({@code vgpu remote-bench}, a worker of GPU 0 of its own) right after
     * a C run on a remote vGPU ({@code -Dvgpu.cuda.bench.paired=true}), the pair and its ratio said: run by run, as the
     * two drift together over a minute on the GPU machine. False, said, when the Java benchmark failed.
     */
    private boolean javaRemotePath(List<String> cFigures, int round) throws Exception {
        String c = cFigures.stream()
                .filter(line -> line.startsWith("launch_sync_us "))
                .map(line -> line.substring("launch_sync_us ".length()).trim())
                .findFirst()
                .orElse("?");
        Process bench = new ProcessBuilder(
                        JAVA,
                        "--enable-native-access=ALL-UNNAMED",
                        "-cp",
                        CLASS_PATH,
                        "org.vgpu.cli.Vgpu",
                        "remote-bench",
                        "--backend",
                        BACKEND,
                        "--device",
                        "0",
                        "--worker-device",
                        "0",
                        "--copy-mib",
                        "8",
                        "--trials",
                        "5")
                .redirectErrorStream(true)
                .start();
        String output = new String(bench.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        Matcher java = JAVA_REMOTE_SYNC.matcher(output);
        if (bench.waitFor() != 0 || !java.find()) {
            System.out.println("vgpu remote-bench failed:\n" + output);
            return false;
        }
        String ratio =
                c.equals("?") ? "?" : String.format("%.3f", Double.parseDouble(c) / Double.parseDouble(java.group(1)));
        System.out.println("latency_bench remote pair " + round + ": C launch + synchronize " + c
                + " us, the Java remote path's " + java.group(1) + " us, C / Java " + ratio);
        return true;
    }

    /** One plain run of the latency benchmark, its figures into {@code figures}; false, said, when it failed. */
    private boolean plainBench(Path bench, Path figures) throws Exception {
        ProgramRun run = plain(List.of(bench.toString()));
        if (run.status() != 0) {
            System.out.println("latency_bench on plain CUDA failed:\n" + run);
            return false;
        }
        Files.writeString(figures, String.join("\n", run.results()) + "\n");
        return true;
    }

    /**
     * What a program timed itself, from the lines of its standard error that begin {@code timing:} (its standard
     * output is what is compared, so times go to standard error), each labelled with the run.
     */
    private static List<String> timings(String run, ProgramRun programRun) {
        return programRun
                .err()
                .lines()
                .filter(line -> line.startsWith("timing:"))
                .map(line -> run + " " + line)
                .toList();
    }

    /** vGPU 0 starts on its worker and is moved onto GPU 0 once the program has data on it. */
    private String movedMidRun(Program program, ProgramRun reference) throws Exception {
        MovedRun moved = movedHome(program.command());
        ProgramRun run = moved.run();
        String reply = moved.reply();
        boolean same = run.status() == 0 && run.results().equals(reference.results());
        boolean landed = moved.landedMidRun();
        if (!same || !landed) {
            System.out.println(program.name() + " moved run (" + reply + "):\n" + run);
        }
        return (same && landed
                                ? "remote->native mid-run equal"
                                : "remote->native mid-run " + (same ? "" : "DIFFERENT ")
                                        + (landed ? "" : "NOT MOVED MID-RUN "))
                        .strip()
                + " (" + reply.lines().findFirst().orElse("") + ")";
    }

    /** A run whose vGPU 0 was to move home while it ran: the run, the agent's reply to the move, and whether the
     *  program was still running when the move was answered. */
    record MovedRun(ProgramRun run, String reply, boolean whileRunning) {
        boolean landedMidRun() {
            return reply.startsWith("ok vgpu 0 moved") && whileRunning;
        }
    }

    /** Runs {@code command} with vGPU 0 on a worker of its own, moved onto GPU 0 once the program has data on it. */
    private MovedRun movedHome(List<String> command) throws Exception {
        Map<String, String> job = job("remote", "local");
        Path socket = Path.of(job.get("VGPU_AGENT_SOCKET"));
        CompletableFuture<ProgramRun> running = CompletableFuture.supplyAsync(() -> vgpu(job, command));
        String reply = "no move: the program ended before it had data on vGPU 0";
        boolean whileRunning = false;
        if (AgentStatus.awaitStateOnVgpu0(socket, running, AgentStatus.WHILE_IT_RUNS)) {
            try {
                reply = LineClient.request(socket, "migrate 0 0", Duration.ofSeconds(60))
                        .getLast();
            } catch (VgpuFailure cutOff) {
                reply = "the move's reply was cut off: " + cutOff.getMessage();
            }
            whileRunning = !running.isDone();
        }
        return new MovedRun(running.join(), reply, whileRunning);
    }

    /**
     * Medians of the ratios vgpu/plain over interleaved pairs of runs, for a launch and for a 4 KiB copy (after the
     * copies' warm-up), and the copy's ratio split: the JVM's first copies (cold), vgpu's {@code
     * VirtualGpu.memcpyHtoD} alone in the vgpu run (runtime) and what the shim adds to it.
     */
    private boolean cost(int pairs) throws Exception {
        List<Double> launch = new ArrayList<>();
        List<Double> copy = new ArrayList<>();
        List<Double> cold = new ArrayList<>();
        List<Double> runtime = new ArrayList<>();
        List<Double> shim = new ArrayList<>();
        for (int pair = 0; pair < pairs; pair++) {
            ProgramRun plainRun = plain(jcuda("JCudaCallCost", ptx.toString()));
            Matcher plain = COST.matcher(plainRun.out());
            ProgramRun vgpuRun = vgpu(job("local", "none"), jcuda("JCudaCallCost", ptx.toString()));
            Matcher viaVgpu = COST.matcher(vgpuRun.out());
            if (!plain.find() || !viaVgpu.find()) {
                System.out.println("cost: a run printed no figures:\nplain JCuda:\n" + plainRun.out() + plainRun.err()
                        + "\nvgpu:\n" + vgpuRun.out() + vgpuRun.err());
                return false;
            }
            double plainCopy = Double.parseDouble(plain.group(2));
            launch.add(Double.parseDouble(viaVgpu.group(1)) / Double.parseDouble(plain.group(1)));
            copy.add(Double.parseDouble(viaVgpu.group(2)) / plainCopy);
            cold.add(Double.parseDouble(viaVgpu.group(3)) / Double.parseDouble(plain.group(3)));
            runtime.add(Double.parseDouble(viaVgpu.group(4)) / plainCopy);
            shim.add((Double.parseDouble(viaVgpu.group(2)) - Double.parseDouble(viaVgpu.group(4))) / plainCopy);
            System.out.printf(
                    "cost pair %d: launch %s ns plain, %s ns vgpu; copy 4 KiB %s ns plain (cold %s, again %s),"
                            + " %s ns vgpu (cold %s, VirtualGpu.memcpyHtoD alone %s)%n",
                    pair + 1,
                    plain.group(1),
                    viaVgpu.group(1),
                    plain.group(2),
                    plain.group(3),
                    plain.group(4),
                    viaVgpu.group(2),
                    viaVgpu.group(3),
                    viaVgpu.group(4));
        }
        System.out.printf(
                "cost (vgpu native / plain JCuda, median of %d interleaved pairs): async launch %.3f, 4 KiB copy %.3f"
                        + " (goal <= 1.05)%n",
                pairs, median(launch), median(copy));
        System.out.printf(
                "cost of the 4 KiB copy, split (each / plain JCuda's warm copy into cuMemAlloc memory): vgpu's runtime"
                        + " %.3f + the shim %.3f; the JVM's first copies, vgpu / plain"
                        + " %.3f%n",
                median(runtime), median(shim), median(cold));
        return true;
    }

    private static double median(List<Double> values) {
        List<Double> sorted = values.stream().sorted().toList();
        return sorted.get(sorted.size() / 2);
    }

    private void close() {
        stopWorkers();
        siteKey.close();
    }
}
