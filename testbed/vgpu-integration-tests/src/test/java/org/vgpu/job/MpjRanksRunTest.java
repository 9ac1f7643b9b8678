package org.vgpu.job;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.line.LineClient;
import org.vgpu.job.RunProgramTest.Outcome;

/**
 * {@code vgpu run --ranks N -- java ...} run: the refusals of a run (more ranks than vGPUs, no MPJ Express, no
 * command; the command itself is vgpu-job's MpjRanksTest), and, where Debian's libmpj-java is installed,
 * the MPJ example examples/mpj/LennardJonesRanks.java (compiled here against /usr/share/java/mpj.jar, as a Debian user
 * would) as 3 ranks on 3 vGPUs of the CPU emulation, one of them moved while the ranks run, its results equal to a
 * single rank's; and a rank that fails gives the run status 1. Without libmpj-java those tests are skipped, saying so.
 */
@Timeout(300)
class MpjRanksRunTest {
    private static final Path DEBIAN_MPJ_JAR = Path.of("/usr/share/java/mpj.jar");
    private static final String CLASS_PATH = System.getProperty("java.class.path");
    private static final String JAVA =
            Path.of(System.getProperty("java.home"), "bin", "java").toString();

    @TempDir
    Path directory;

    // ---- refusals

    @Test
    void moreRanksThanVgpusIsBadUsage() {
        Outcome run = RunProgramTest.vgpuRun(job(3), interposerJar(), "--ranks", "4", "--", JAVA, "-cp", ".", "Md");

        assertEquals(2, run.status(), run.toString());
        assertEquals(
                "vgpu run: --ranks 4 needs 4 vGPUs, one for each rank, and this job has 3: submit it with"
                        + " --gres=vgpu:4 or run at most 3 ranks\n",
                run.err());
    }

    @Test
    void withoutMpjExpressTheRunIsRefusedSayingWhatToInstall() {
        Map<String, String> job = job(3);
        job.put(MpjRanks.MPJ_DIR_VARIABLE, directory.resolve("no-mpj").toString());

        Outcome run = RunProgramTest.vgpuRun(job, interposerJar(), "--ranks", "3", "--", JAVA, "-cp", ".", "Md");

        assertEquals(2, run.status(), run.toString());
        assertEquals(
                "vgpu run: --ranks runs MPJ Express programs and MPJ Express is not installed: no "
                        + directory.resolve("no-mpj/lib/starter.jar")
                        + ". Install Debian's libmpj-java (apt-get install libmpj-java) or set VGPU_MPJ_DIR to an MPJ"
                        + " Express directory (an MPJ_HOME, with lib/starter.jar)\n",
                run.err());
    }

    @Test
    void ranksWithoutAProgramIsBadUsage() {
        Outcome run = RunProgramTest.vgpuRun(job(3), interposerJar(), "--ranks", "3");

        assertEquals(2, run.status(), run.toString());
        assertTrue(run.err().contains("--ranks is for a program of one's own"), run.toString());
    }

    // ---- MPJ Express programs (Debian's libmpj-java)

    @Test
    void threeRanksOnThreeVgpusEqualASingleRankAlsoWhenOneVgpuMovesWhileTheyRun() throws Exception {
        Path programs = compileExample();
        Map<String, String> job = job(3);
        Path socket = directory.resolve("agent.sock");
        job.put("VGPU_AGENT_SOCKET", socket.toString());
        List<Path> homesBefore = privateMpjHomes();
        CompletableFuture<Outcome> running = CompletableFuture.supplyAsync(() -> RunProgramTest.vgpuRun(
                job,
                interposerJar(),
                "--ranks",
                "3",
                "--",
                JAVA,
                "-cp",
                programs.toString(),
                "LennardJonesRanks",
                "400",
                "5")); // at least 400 steps and 5 s, so that the move comes while the ranks run
        // vGPU 2 moves to GPU 0 (granted to the job, where rank 0 computes too) once its rank has its atoms there
        String status = "";
        while (!status.matches("(?s).*vgpu 2 on gpu 2 \\(emulated\\), [0-9]+ B live in 5 allocations.*")) {
            assertFalse(running.isDone(), () -> "the ranks ended early: " + running.join());
            Thread.sleep(50);
            try {
                status = String.join("\n", LineClient.request(socket, "status", Duration.ofSeconds(10)));
            } catch (VgpuFailure notListeningYet) {
                // the ranks' JVM is still starting
            }
        }
        String moved = LineClient.request(socket, "migrate 2 0", Duration.ofSeconds(60))
                .getLast();
        assertTrue(moved.startsWith("ok vgpu 2 moved gpu 2 (emulated) -> gpu 0"), moved);
        Outcome run = running.get(240, TimeUnit.SECONDS);

        assertEquals(0, run.status(), run.toString());
        for (int rank = 0; rank < 3; rank++) {
            assertTrue(
                    run.out()
                            .contains("rank " + rank + " of 3 on vGPU " + rank + " (vgpu CPU emulation #" + rank + ")"),
                    run.toString());
        }
        assertTrue(
                run.out()
                        .contains("MATCH: 3 ranks on 3 vGPUs equal a single rank on vGPU 0, bit for bit (positions,"
                                + " velocities, energies)\n"),
                run.toString());
        assertTrue(run.out().contains("3 ranks, 108 atoms, "), run.toString());
        assertFalse(Files.exists(socket), "the agent's socket is removed at exit");
        assertEquals(homesBefore, privateMpjHomes(), "the run's private MPJ_HOME is removed");
    }

    @Test
    void aRankThatFailsEndsTheRunWithStatusOne() throws Exception {
        Path programs = compile("Fails", """
                import mpi.MPI;

                public class Fails {
                    public static void main(String[] args) throws Exception {
                        MPI.Init(args);
                        if (MPI.COMM_WORLD.Rank() == 1) {
                            throw new IllegalStateException("rank 1's own bug");
                        }
                        MPI.COMM_WORLD.Barrier();
                        MPI.Finalize();
                    }
                }
                """);

        Outcome run = RunProgramTest.vgpuRun(
                job(2), interposerJar(), "--ranks", "2", "--", JAVA, "-cp", programs.toString(), "Fails");

        assertEquals(1, run.status(), run.toString());
        assertTrue(run.err().contains("vgpu run: rank 1 failed; the run ends with all its ranks:"), run.toString());
        assertTrue(run.err().contains("IllegalStateException: rank 1's own bug"), run.toString());
    }

    // ---- helpers

    /** A job of {@code vgpus} local vGPUs, vGPU k on the node's GPU k. */
    private Map<String, String> job(int vgpus) {
        String gpus =
                Stream.iterate(0, k -> k + 1).limit(vgpus).map(String::valueOf).collect(Collectors.joining(","));
        Map<String, String> environment = new HashMap<>();
        environment.put("VGPU_COUNT", Integer.toString(vgpus));
        environment.put(
                "VGPU_ASSEMBLY",
                Stream.iterate(0, k -> k + 1)
                        .limit(vgpus)
                        .map(k -> k + "=local:" + k)
                        .collect(Collectors.joining(",")));
        environment.put("VGPU_LOCAL_GPUS", gpus);
        environment.put("VGPU_MIGRATE", "auto");
        environment.put("VGPU_NODE", "n1");
        environment.put("VGPU_SOURCE", "local-only-fallback");
        environment.put("SLURM_JOB_ID", "42");
        return environment;
    }

    /**
     * The interposer jar: vgpu.jar's manifest (Premain-Class) and, as its Class-Path, the build's classes. The ranks' JVM
     * runs MPJ's starter, whose class path is MPJ's jars, so vgpu's classes ({@link InterposerPremain}, {@link RankMain}, the
     * API) come from the interposer jar, as they come from vgpu.jar in a packaged build.
     */
    private Path interposerJar() {
        Path jar = directory.resolve("interposer").resolve("vgpu.jar");
        try {
            Files.createDirectories(jar.getParent());
            Manifest manifest = new Manifest();
            manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
            manifest.getMainAttributes().put(new Attributes.Name("Premain-Class"), PremainJavaCheck.class.getName());
            manifest.getMainAttributes()
                    .put(
                            Attributes.Name.CLASS_PATH,
                            Stream.of(CLASS_PATH.split(File.pathSeparator))
                                    .map(entry -> Path.of(entry).toUri().toString())
                                    .collect(Collectors.joining(" ")));
            try (OutputStream file = Files.newOutputStream(jar);
                    JarOutputStream out = new JarOutputStream(file, manifest)) {
                out.flush();
            }
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return jar;
    }

    private Path compileExample() throws IOException {
        return compile(
                "LennardJonesRanks",
                Files.readString(Path.of("..", "..", "examples", "mpj", "LennardJonesRanks.java")));
    }

    /** Compiles {@code source} against Debian's MPJ Express jar and the build's classes; skips where MPJ is missing. */
    private Path compile(String name, String source) throws IOException {
        Assumptions.assumeTrue(
                Files.isRegularFile(DEBIAN_MPJ_JAR)
                        && Files.isRegularFile(MpjRanks.DEBIAN_MPJ.resolve("lib/starter.jar")),
                "MPJ Express is not installed (no " + DEBIAN_MPJ_JAR + "): apt-get install libmpj-java to run the MPJ"
                        + " tests");
        Path programs = Files.createDirectories(directory.resolve("programs"));
        Path file = programs.resolve(name + ".java");
        Files.writeString(file, source);
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        ByteArrayOutputStream diagnostics = new ByteArrayOutputStream();
        List<String> args = new ArrayList<>(
                List.of("-cp", DEBIAN_MPJ_JAR + File.pathSeparator + CLASS_PATH, "-d", programs.toString()));
        args.add(file.toString());
        int compiled = javac.run(null, diagnostics, diagnostics, args.toArray(String[]::new));
        assertEquals(0, compiled, diagnostics.toString(StandardCharsets.UTF_8));
        return programs;
    }

    /** The private MPJ_HOMEs (vgpu-mpj-*) in the temporary directory now. */
    private static List<Path> privateMpjHomes() throws IOException {
        try (Stream<Path> paths = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
            return paths.filter(path -> path.getFileName().toString().startsWith("vgpu-mpj-"))
                    .toList();
        }
    }
}
