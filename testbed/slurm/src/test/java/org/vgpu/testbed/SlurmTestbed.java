package org.vgpu.testbed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * One Slurm testbed, driven through the scripts in testbed/slurm: {@link #up()} starts it,
 * {@link #close()} tears it down, {@link #assertScenarioPasses} runs a scenario against it.
 */
final class SlurmTestbed implements AutoCloseable {
    /** The scripts sit beside this module's pom, the tests' working directory. */
    private static final Path SCRIPTS = Path.of("").toAbsolutePath();
    private static final Path LAUNCHER_JAR = Path.of("..", "..", "job-wrapper", "target", "vgpu.jar").toAbsolutePath().normalize();
    private static final long SCRIPT_TIMEOUT_SECONDS = 240;

    private final Path dir;
    private final String portBase;
    private final Optional<Path> spankPlugin;

    /** A finished script: its exit status and everything it printed. */
    record Outcome(int status, String output) {
    }

    /**
     * @param dir         the testbed's directory, apart from one someone runs by hand (/tmp/vgpu-testbed)
     * @param portBase    slurmctld's port; slurmd and lenders take the ports above it
     * @param spankPlugin the SPANK bridge to load through plugstack.conf, if any
     */
    SlurmTestbed(Path dir, int portBase, Optional<Path> spankPlugin) {
        this.dir = dir;
        this.portBase = Integer.toString(portBase);
        this.spankPlugin = spankPlugin;
    }

    /** Why no testbed can run here, or null when one can. */
    static String reasonItCannotRun() {
        if (!"root".equals(System.getProperty("user.name"))) {
            return "the Slurm testbed runs slurmctld/slurmd and creates device files, which needs root";
        }
        if (!(onPath("slurmctld") && onPath("slurmd") && onPath("sbatch"))) {
            return "Slurm is not installed (testbed/slurm/install-slurm.sh installs it; .ci/run does)";
        }
        if (!Files.isRegularFile(LAUNCHER_JAR)) {
            return "the vgpu launcher " + LAUNCHER_JAR + " is not built (mvn package)";
        }
        return null;
    }

    Path dir() {
        return dir;
    }

    /** Clears what an earlier run may have left, then starts the testbed. */
    void up() throws Exception {
        run("down.sh");
        Outcome up = run("up.sh");
        assertEquals(0, up.status(), "up.sh failed:\n" + up.output());
    }

    @Override
    public void close() throws IOException {
        if (Files.exists(dir)) {
            Outcome down = run("down.sh");
            assertEquals(0, down.status(), "down.sh failed:\n" + down.output());
        }
    }

    /** Runs scenario-NAME.sh and fails with its output unless it passed. */
    void assertScenarioPasses(String scenario, String... args) throws Exception {
        Outcome outcome = run("scenario-" + scenario + ".sh", args);
        assertEquals(0, outcome.status(), "scenario " + scenario + " failed:\n" + outcome.output());
        assertTrue(outcome.output().contains("PASS " + scenario), outcome.output());
        System.out.print(outcome.output());
    }

    /** Runs one script; an interrupt while it runs is an InterruptedIOException, so close() need not throw one. */
    private Outcome run(String script, String... args) throws IOException {
        List<String> command = new ArrayList<>(List.of(SCRIPTS.resolve(script).toString()));
        command.addAll(Arrays.asList(args));
        // Output goes to a file, not a pipe: daemons that up.sh starts inherit it and would hold a pipe open.
        Path log = Files.createTempFile("vgpu-testbed-" + script, ".log");
        try {
            ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
            Map<String, String> environment = builder.environment();
            environment.put("VGPU_TESTBED_DIR", dir.toString());
            environment.put("VGPU_TESTBED_PORT_BASE", portBase);
            // The launcher runs on the Java running this test, which is the build's Java 25.
            environment.put("JAVA_HOME", System.getProperty("java.home"));
            environment.remove("VGPU_SPANK_PLUGIN");
            spankPlugin.ifPresent(plugin -> environment.put("VGPU_SPANK_PLUGIN", plugin.toString()));
            Process process = builder.start();
            if (!finishesInTime(process)) {
                process.destroyForcibly();
                throw new AssertionError(script + " ran longer than " + SCRIPT_TIMEOUT_SECONDS + " s:\n" + Files.readString(log));
            }
            return new Outcome(process.exitValue(), Files.readString(log));
        } finally {
            Files.delete(log);
        }
    }

    private static boolean finishesInTime(Process process) throws InterruptedIOException {
        try {
            return process.waitFor(SCRIPT_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while a testbed script ran");
        }
    }

    private static boolean onPath(String command) {
        return Arrays.stream(System.getenv().getOrDefault("PATH", "").split(File.pathSeparator))
                .anyMatch(directory -> Files.isExecutable(Path.of(directory, command)));
    }
}
