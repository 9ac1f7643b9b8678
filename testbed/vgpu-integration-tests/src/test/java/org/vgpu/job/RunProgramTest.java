package org.vgpu.job;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.agent.AgentChannel;
import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.line.LineClient;

/**
 * {@code vgpu run -- java ...} with real JVMs: the user guide's program (the text in docs/user/own-programs.md, compiled here with
 * javax.tools against the built classes) runs on a job of 1 local and 1 borrowed vGPU on the CPU emulation, its
 * vGPUs opened by the interposer in its own JVM; a program that crashes or is killed gives its status back and leaves no
 * agent socket; a command that is not Java is told so; outside a job, an error.
 *
 * <p>The interposer jar here holds only the manifest that vgpu.jar's has (Premain-Class): the build's classes come from
 * the program's class path, where the test's JVM has them.
 */
@Timeout(300)
class RunProgramTest {
    private static final String CLASS_PATH = System.getProperty("java.class.path");
    private static final String JAVA =
            Path.of(System.getProperty("java.home"), "bin", "java").toString();

    @TempDir
    static Path programs;

    private static Path interposerJar;

    @TempDir
    Path directory;

    @BeforeAll
    static void compilePrograms() throws IOException {
        write("VectorAdd", guideProgram());
        write("Crash", """
                import org.vgpu.api.VirtualGpus;

                public class Crash {
                    public static void main(String[] args) {
                        VirtualGpus gpus = VirtualGpus.fromEnvironment();
                        gpus.gpu(0).memAlloc(1 << 20);
                        System.out.println("crashing on " + gpus.source().label());
                        throw new IllegalStateException("the program's own bug");
                    }
                }
                """);
        write("Killed", """
                import org.vgpu.api.VirtualGpus;

                public class Killed {
                    public static void main(String[] args) throws Exception {
                        VirtualGpus.fromEnvironment().gpu(0).memAlloc(1 << 20);
                        new ProcessBuilder("kill", "-KILL", Long.toString(ProcessHandle.current().pid()))
                                .start()
                                .waitFor();
                        Thread.sleep(60_000);
                    }
                }
                """);
        write("Moved", """
                import java.lang.foreign.MemorySegment;
                import java.nio.file.Files;
                import java.nio.file.Path;
                import java.util.Arrays;

                import org.vgpu.api.VirtualGpus;
                import org.vgpu.migration.MigratableGpu;

                public class Moved {
                    public static void main(String[] args) throws Exception {
                        MigratableGpu gpu = (MigratableGpu) VirtualGpus.fromEnvironment().gpu(0);
                        float[] data = new float[1 << 16];
                        for (int i = 0; i < data.length; i++) {
                            data[i] = i * 0.5f;
                        }
                        long bytes = (long) data.length * Float.BYTES;
                        long address = gpu.memAlloc(bytes);
                        gpu.memcpyHtoD(address, MemorySegment.ofArray(data), bytes);
                        while (!Files.exists(Path.of(args[0]))) {
                            Thread.sleep(20);
                        }
                        float[] back = new float[data.length];
                        gpu.memcpyDtoH(MemorySegment.ofArray(back), address, bytes);
                        System.out.println("after the move: " + (Arrays.equals(data, back) ? "data intact" : "CHANGED")
                                + ", " + gpu.migrationCount() + " migration(s), on " + gpu.location());
                    }
                }
                """);
        write("Nested", """
                import java.nio.file.Path;

                import org.vgpu.api.VirtualGpus;

                public class Nested {
                    public static void main(String[] args) throws Exception {
                        System.out.println("outer: " + VirtualGpus.fromEnvironment().source().label());
                        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
                        Process inner = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), "Probe")
                                .inheritIO()
                                .start();
                        System.exit(inner.waitFor());
                    }
                }
                """);
        write("Probe", """
                import org.vgpu.api.VirtualGpus;
                import org.vgpu.runtime.api.VgpuException;

                public class Probe {
                    public static void main(String[] args) {
                        try {
                            System.out.println("inner: " + VirtualGpus.fromEnvironment().source().label());
                        } catch (VgpuException e) {
                            System.out.println("inner: " + e.getMessage());
                        }
                    }
                }
                """);
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        ByteArrayOutputStream diagnostics = new ByteArrayOutputStream();
        int compiled = javac.run(
                null,
                diagnostics,
                diagnostics,
                "-cp",
                CLASS_PATH,
                "-d",
                programs.toString(),
                programs.resolve("VectorAdd.java").toString(),
                programs.resolve("Crash.java").toString(),
                programs.resolve("Killed.java").toString(),
                programs.resolve("Moved.java").toString(),
                programs.resolve("Nested.java").toString(),
                programs.resolve("Probe.java").toString());
        assertEquals(0, compiled, diagnostics.toString(StandardCharsets.UTF_8));

        interposerJar = interposerJar(programs.resolve("interposer dir with space"));
    }

    /** A jar in {@code directory} with only vgpu.jar's interposer manifest (the classes are on the test's class path). */
    static Path interposerJar(Path directory) throws IOException {
        Manifest manifest = new Manifest();
        manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        manifest.getMainAttributes().put(new Attributes.Name("Premain-Class"), PremainJavaCheck.class.getName());
        Path jarFile = directory.resolve("vgpu.jar");
        Files.createDirectories(directory);
        try (OutputStream file = Files.newOutputStream(jarFile);
                JarOutputStream jar = new JarOutputStream(file, manifest)) {
            jar.flush();
        }
        return jarFile;
    }

    /** The ```java block of the user guide's "A complete program" (docs/user/own-programs.md), verbatim. */
    static String guideProgram() throws IOException {
        String guide = Files.readString(Path.of("..", "..", "docs", "user", "own-programs.md"));
        int section = guide.indexOf("## A complete program");
        assertTrue(section >= 0, "docs/user/own-programs.md has its section 'A complete program'");
        Matcher block = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL).matcher(guide);
        assertTrue(block.find(section), "the section shows a program");
        return block.group(1);
    }

    private static void write(String name, String source) throws IOException {
        Files.writeString(programs.resolve(name + ".java"), source);
    }

    /** A job's environment: vGPU 0 local GPU 0 and, with a lend, vGPU 1 on the lent worker. */
    private Map<String, String> job(Optional<LentWorkers.Lend> lend, Optional<FakeTracker> tracker) {
        Map<String, String> environment = new HashMap<>();
        environment.put("VGPU_COUNT", lend.isPresent() ? "2" : "1");
        environment.put(
                "VGPU_ASSEMBLY",
                "0=local:0" + lend.map(l -> "," + l.assemblyEntry()).orElse(""));
        environment.put("VGPU_LOCAL_GPUS", "0");
        lend.ifPresent(l -> environment.put("VGPU_REMOTE", l.remoteEntry()));
        environment.put("VGPU_AGENT_SOCKET", socket().toString());
        environment.put("VGPU_MIGRATE", "auto");
        environment.put("VGPU_NODE", "n1");
        environment.put("VGPU_SOURCE", "tracker");
        tracker.ifPresent(t -> environment.put("VGPU_TRACKER", t.address()));
        environment.put("SLURM_JOB_ID", LentWorkers.JOB);
        environment.put("JAVA_TOOL_OPTIONS", "-Dthe.users.own=kept");
        return environment;
    }

    private Path socket() {
        return directory.resolve("agent.sock");
    }

    record Outcome(int status, String out, String err) {
        @Override
        public String toString() {
            return "exit " + status + "\n--- out\n" + out + "--- err\n" + err;
        }
    }

    private static Outcome vgpuRun(Map<String, String> environment, String... args) {
        return vgpuRun(environment, interposerJar, args);
    }

    /** {@code vgpu run ARGS} in {@code environment}, with {@code interposerJar} as the jar it gives programs as their interposer. */
    static Outcome vgpuRun(Map<String, String> environment, Path interposerJar, String... args) {
        ProgramRun run = ProgramRun.of(environment, interposerJar, List.of(args));
        return new Outcome(run.status(), run.out(), run.err());
    }

    private static String[] java(String program, String... options) {
        List<String> args = new ArrayList<>(List.of(options));
        args.addAll(List.of("--local-backend", "emulated", "--", JAVA, "-cp", programs + ":" + CLASS_PATH, program));
        return args.toArray(String[]::new);
    }

    /** With an argument for the program. */
    private static String[] java(String program, Path argument) {
        List<String> args = new ArrayList<>(List.of(java(program)));
        args.add(argument.toString());
        return args.toArray(String[]::new);
    }

    @Test
    void readmesProgramRunsOnTheJobsVgpusOpenedInItsOwnJvm() throws Exception {
        try (LentWorkers lenders = new LentWorkers();
                FakeTracker tracker = new FakeTracker()) {
            LentWorkers.Lend lend = lenders.lend(1, 0);
            Instant started = Instant.now();
            Outcome run = vgpuRun(
                    job(Optional.of(lend), Optional.of(tracker)), java("VectorAdd", "--expected-runtime", "2h"));

            assertEquals(0, run.status(), run.toString());
            assertTrue(
                    run.out()
                            .contains("GPUs: job: 2 vGPUs of job 42 (1 local, 1 remote, migratable), local ones on the"
                                    + " CPU EMULATION\n"),
                    run.toString());
            assertTrue(
                    run.out().contains("vector add on vGPU 0 (vgpu CPU emulation #0): 65536 floats, all right\n"),
                    run.toString());
            // the user's own JAVA_TOOL_OPTIONS kept, the interposer after it
            assertTrue(
                    run.err()
                            .contains(
                                    "Picked up JAVA_TOOL_OPTIONS: -Dthe.users.own=kept \"-javaagent:" + interposerJar),
                    run.toString());
            // the agent's link polled the tracker from the program's JVM, naming the job and its borrowed vGPU
            assertFalse(tracker.polls.isEmpty(), "the program's JVM polled the tracker");
            assertEquals(LentWorkers.JOB, tracker.polls.getFirst().credential().job());
            // --expected-runtime reached the program's JVM: its polls carry the hinted end
            Instant hintedEnd = tracker.polls.getFirst().expectedEnd().orElseThrow();
            assertTrue(
                    !hintedEnd.isBefore(started.plus(Duration.ofHours(2)).minusSeconds(1))
                            && hintedEnd.isBefore(
                                    Instant.now().plus(Duration.ofHours(2)).plusSeconds(1)),
                    hintedEnd + " is 2 h after the start");
            assertFalse(Files.exists(socket()), "the agent's socket is removed at exit");
            assertEquals(
                    List.of(new AgentChannel.Bye(tracker.polls.getFirst().credential())),
                    tracker.byes,
                    "the tracker is told once that the program ended");
        }
    }

    @Test
    void theAgentInTheProgramsJvmMovesItsVgpuWhileItRuns() throws Exception {
        Map<String, String> job = job(Optional.empty(), Optional.empty());
        job.put("VGPU_COUNT", "2");
        job.put("VGPU_ASSEMBLY", "0=local:0,1=local:1");
        job.put("VGPU_LOCAL_GPUS", "0,1");
        Path go = directory.resolve("go");
        CompletableFuture<Outcome> running = CompletableFuture.supplyAsync(() -> vgpuRun(job, java("Moved", go)));
        String status = "";
        while (!status.contains("vgpu 0 on gpu 0 (emulated), 262144 B live in 1 allocations")) {
            assertFalse(running.isDone(), () -> "the program ended early: " + running.join());
            Thread.sleep(50);
            try {
                status = LineClient.request(socket(), "status", Duration.ofSeconds(10))
                        .getLast();
            } catch (VgpuFailure notListeningYet) {
                // the program's JVM is still starting
            }
        }
        String moved = LineClient.request(socket(), "migrate 0 1", Duration.ofSeconds(60))
                .getLast();
        assertTrue(moved.startsWith("ok vgpu 0 moved gpu 0 (emulated) -> gpu 1"), moved);
        Files.createFile(go);
        Outcome run = running.get(120, TimeUnit.SECONDS);

        assertEquals(0, run.status(), run.toString());
        assertTrue(
                run.out().contains("after the move: data intact, 1 migration(s), on gpu 1 (emulated)\n"),
                run.toString());
        assertFalse(Files.exists(socket()));
    }

    @Test
    void aJvmTheProgramStartsDoesNotOpenTheJobsVgpusASecondTime() {
        Outcome run = vgpuRun(job(Optional.empty(), Optional.empty()), java("Nested"));

        assertEquals(0, run.status(), run.toString());
        assertTrue(run.out().contains("outer: job\n"), run.toString());
        assertTrue(
                run.out()
                        .contains(
                                "inner: VGPU_BACKEND_UNAVAILABLE: the job's vGPUs are not for this JVM: another JVM of this vgpu"
                                        + " run holds the"
                                        + " job's vGPUs; this one (pid "),
                run.toString());
        assertFalse(run.out().contains("inner: job"), run.toString());
    }

    @Test
    void readmesProgramOutsideAJobSaysItRunsOnTheCpuEmulation() throws Exception {
        Process program = new ProcessBuilder(JAVA, "-cp", programs + ":" + CLASS_PATH, "VectorAdd")
                .redirectErrorStream(true)
                .start();
        String output = new String(program.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, program.waitFor(), output);
        assertTrue(
                output.contains("GPUs: CPU EMULATION: 4 devices of the CPU EMULATION (not a vgpu job, no CUDA GPU"
                        + " here): not a GPU\n"),
                output);
        assertTrue(output.contains("65536 floats, all right"), output);
    }

    @Test
    void aProgramThatCrashesGivesItsStatusAndLeavesNoSocket() {
        Outcome run = vgpuRun(job(Optional.empty(), Optional.empty()), java("Crash"));

        assertEquals(1, run.status(), run.toString());
        assertTrue(run.out().contains("crashing on job"), run.toString());
        assertTrue(run.err().contains("IllegalStateException: the program's own bug"), run.toString());
        assertFalse(Files.exists(socket()), "the JVM's hook removed the agent socket");
        assertFalse(run.err().contains("removed the agent socket"), "the launcher had nothing to remove: " + run);
    }

    @Test
    void aProgramKilledBySignalGives128PlusItAndTheLauncherRemovesTheSocketItLeft() {
        Outcome run = vgpuRun(job(Optional.empty(), Optional.empty()), java("Killed"));

        assertEquals(128 + 9, run.status(), run.toString());
        assertTrue(
                run.err()
                        .contains("the program ended without closing its vGPUs (killed?); removed the agent socket "
                                + socket()),
                run.toString());
        assertFalse(Files.exists(socket()));
    }

    @Test
    void aCommandThatIsNeitherJavaNorUsesTheLocalWorkerSimplyRunsToItsOwnStatus() {
        Outcome ended = vgpuRun(
                job(Optional.empty(), Optional.empty()),
                "--",
                "sh",
                "-c",
                "echo from sh at \"$VGPU_LOCAL_WORKER\"; sleep 2; exit 3");
        assertEquals(3, ended.status(), ended.toString());
        assertTrue(ended.out().matches("(?s)from sh at /.+/gpu\\.sock\n.*"), ended.toString());
        assertFalse(ended.err().contains("not a Java program"), ended.toString());
        assertFalse(Files.exists(socket()), "no session, so the job's vGPUs and their agent were never opened");

        Outcome missing = vgpuRun(job(Optional.empty(), Optional.empty()), "--", "/no/such/program");
        assertEquals(127, missing.status(), missing.toString());
        assertEquals("vgpu run: /no/such/program: no such program\n", missing.err(), missing.toString());
    }

    /**
     * A program started by an older JVM than the interposer needs (Java 17, as Debian's default-jdk is) gets one line
     * saying which Java it found and what to do, before its JVM starts, instead of that JVM's fatal error.
     */
    @Test
    void aProgramOnAnOlderJavaGetsOneLineSayingWhichJavaItFoundAndWhatToDo() throws IOException {
        Optional<Path> older = olderJava();
        Assumptions.assumeTrue(
                older.isPresent(),
                "no Java older than " + ProgramJava.NEEDED + " on this machine (PATH's java, /usr/lib/jvm/*/bin/java)");

        Outcome run = vgpuRun(
                job(Optional.empty(), Optional.empty()),
                "--local-backend",
                "emulated",
                "--",
                older.get().toString(),
                "-cp",
                programs + ":" + CLASS_PATH,
                "VectorAdd");

        assertEquals(2, run.status(), run.toString());
        assertEquals(1, run.err().lines().count(), run.toString());
        assertTrue(run.err().startsWith("vgpu run: the program's java (" + older.get() + ") is Java "), run.toString());
        assertTrue(run.err().contains("needs Java " + ProgramJava.NEEDED + " or later"), run.toString());
        assertFalse(run.err().contains("FATAL ERROR"), run.toString());
        assertFalse(run.err().contains("is not a Java program"), run.toString());
    }

    /**
     * A script that starts an older JVM in turn, which the launcher cannot check before: that JVM loads the premain's
     * check (compiled for Java 8), which says which Java it is in one line and ends it, and the launcher adds nothing.
     */
    @Test
    void aScriptThatStartsAnOlderJavaGetsOneLineFromItsJvm() throws IOException {
        Optional<Path> older = olderJava();
        Assumptions.assumeTrue(
                older.isPresent(),
                "no Java older than " + ProgramJava.NEEDED + " on this machine (PATH's java, /usr/lib/jvm/*/bin/java)");

        Outcome run = vgpuRun(
                job(Optional.empty(), Optional.empty()),
                "--local-backend",
                "emulated",
                "--",
                "sh",
                "-c",
                "exec \"$0\" -cp \"$1\" VectorAdd",
                older.get().toString(),
                programs + ":" + CLASS_PATH);

        assertEquals(PremainJavaCheck.TOO_OLD_STATUS, run.status(), run.toString());
        List<String> vgpuLines =
                run.err().lines().filter(line -> line.startsWith("vgpu")).toList();
        assertEquals(1, vgpuLines.size(), run.toString());
        assertTrue(
                vgpuLines.getFirst().startsWith("vgpu: this program's JVM (")
                        && vgpuLines.getFirst().contains(" is Java ")
                        && vgpuLines.getFirst().contains("needs Java " + ProgramJava.NEEDED + " or later"),
                run.toString());
        assertFalse(run.err().contains("FATAL ERROR"), run.toString());
    }

    /** A java binary of a release older than the interposer's: PATH's, else one under /usr/lib/jvm. */
    private static Optional<Path> olderJava() throws IOException {
        List<Path> candidates = new ArrayList<>();
        ProgramJava.javaBinary(List.of("java"), System.getenv()).ifPresent(candidates::add);
        Path jvms = Path.of("/usr/lib/jvm");
        if (Files.isDirectory(jvms)) {
            try (var homes = Files.list(jvms)) {
                homes.sorted().map(home -> home.resolve("bin").resolve("java")).forEach(candidates::add);
            }
        }
        return candidates.stream()
                .filter(Files::isExecutable)
                .filter(java -> ProgramJava.version(java)
                        .map(version -> ProgramJava.feature(version).orElse(Integer.MAX_VALUE) < ProgramJava.NEEDED)
                        .orElse(false))
                .findFirst();
    }

    @Test
    void outsideAJobItIsAnErrorAndTheChecksOptionsAreRefused() {
        Outcome outside = vgpuRun(Map.of(), java("VectorAdd"));
        assertEquals(2, outside.status(), outside.toString());
        assertTrue(
                outside.err().contains("vgpu run: this is not a vgpu job: none of ")
                        && outside.err().contains("outside a job, run " + JAVA + " directly"),
                outside.toString());

        Outcome hold = vgpuRun(job(Optional.empty(), Optional.empty()), java("VectorAdd", "--hold", "5"));
        assertEquals(2, hold.status(), hold.toString());
        assertTrue(hold.err().contains("--hold is for the built-in checks"), hold.toString());

        Outcome attach = vgpuRun(job(Optional.empty(), Optional.empty()), "--attach-within", "5", "--", "true");
        assertEquals(2, attach.status(), attach.toString());
        assertTrue(attach.err().contains("attach-within"), "no longer an option: " + attach);
    }

    @Test
    void javaToolOptionsKeepTheUsersValueAndQuoteAJarPathWithASpace() {
        assertEquals(
                "-javaagent:/opt/vgpu.jar=a=b --enable-native-access=ALL-UNNAMED",
                ProgramLaunch.javaToolOptions(Optional.empty(), Path.of("/opt/vgpu.jar"), "a=b"));
        assertEquals(
                "-Xmx1g \"-javaagent:/my dir/vgpu.jar=a=b\" --enable-native-access=ALL-UNNAMED",
                ProgramLaunch.javaToolOptions(Optional.of(" -Xmx1g "), Path.of("/my dir/vgpu.jar"), "a=b"));
    }
}
