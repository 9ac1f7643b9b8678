package org.vgpu.testbed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * One Slurm testbed, driven through the scripts in testbed/slurm: {@link #up()} starts it,
 * {@link #close()} tears it down, {@link #assertScenarioPasses} runs a scenario against it.
 */
final class SlurmTestbed implements AutoCloseable {
    /** The scripts sit beside this module's pom, the tests' working directory. */
    private static final Path SCRIPTS = Path.of("").toAbsolutePath();

    private static final Path LAUNCHER_JAR = Path.of("..", "..", "job-wrapper", "target", "vgpu.jar")
            .toAbsolutePath()
            .normalize();
    private static final long SCRIPT_TIMEOUT_SECONDS = 240;
    /**
     * A whole run under User-Mode Linux (in-uml.sh): up, one scenario, down, about 15 minutes on 2 busy cores.
     */
    private static final long OWN_KERNEL_TIMEOUT_SECONDS = 2_400;
    /** A testbed listens on ports base to base+99 (common.sh lays them out: Slurm's daemons, lenders, tracker). */
    private static final int PORT_SPAN = 100;
    /**
     * Port bases are drawn between these, below Linux's ephemeral ports (32768 up), so no outgoing connection
     * takes one of the testbed's ports while it runs.
     */
    private static final int LOWEST_PORT_BASE = 20_000;

    private static final int HIGHEST_PORT_BASE = 32_600;
    private static final int PORT_BASE_TRIES = 50;

    /** The SPANK bridge module slurm-spank-bridge builds, which the bridge's testbeds load. */
    static final Path BRIDGE = Path.of("..", "..", "slurm-spank-bridge", "vgpu_spank.so")
            .toAbsolutePath()
            .normalize();

    /** Where make-trixie-root.sh makes Debian 13's root with Slurm 24.11 unless VGPU_SLURM_ROOT names another. */
    private static final Path DEFAULT_SLURM_ROOT = Path.of("/var/cache/vgpu/trixie-slurm");

    private final Path dir;
    private final String portBase;
    private final Optional<Path> spankPlugin;
    /** Slurm's cgroup plugins with ConstrainDevices=yes, or none (up.sh's VGPU_TESTBED_CGROUPS). */
    private final Cgroups cgroups;
    /** slurmdbd and a MariaDB of the testbed's own (up.sh's VGPU_TESTBED_ACCOUNTING). */
    private final boolean accounting;
    /** A site's own Slurm files that take vgpu's rendered pieces (up.sh's VGPU_TESTBED_SLURM_FILES=pieces). */
    private final boolean sitePieces;

    /** A finished script: its exit status and everything it printed. */
    record Outcome(int status, String output) {}

    /** Which of Slurm's cgroup plugins jobs run under, with ConstrainDevices=yes, as up.sh's VGPU_TESTBED_CGROUPS. */
    enum Cgroups {
        NONE("no"),
        /** cgroup/v1: both versions, on a machine with a cgroup v1 devices controller. */
        V1("yes"),
        /** cgroup/v2: 24.11 only, on a kernel of cgroup v2 only. */
        V2("v2");

        private final String upValue;

        Cgroups(String upValue) {
            this.upValue = upValue;
        }
    }

    /**
     * @param dir         the testbed's directory
     * @param portBase    slurmctld's port; slurmd, lenders and the tracker take the ports above it
     * @param spankPlugin the SPANK bridge to load through plugstack.conf, if any
     * @param cgroups     which cgroup plugin jobs run under with ConstrainDevices=yes, if any
     * @param accounting  whether Slurm keeps accounts in slurmdbd
     * @param sitePieces  whether slurm.conf and plugstack.conf are a site's own that include vgpu's pieces
     */
    private SlurmTestbed(
            Path dir,
            int portBase,
            Optional<Path> spankPlugin,
            Cgroups cgroups,
            boolean accounting,
            boolean sitePieces) {
        this.dir = dir;
        this.portBase = Integer.toString(portBase);
        this.spankPlugin = spankPlugin;
        this.cgroups = cgroups;
        this.accounting = accounting;
        this.sitePieces = sitePieces;
    }

    /**
     * A testbed in a new directory under the temporary directory, on ports that are free now: two builds on one
     * machine, or a testbed someone runs by hand (/tmp/vgpu-testbed, ports from 17900), do not collide.
     * {@link #close()} removes the directory (down.sh does).
     *
     * @param name the directory's prefix, which names the test in {@code ps} and in the daemons' logs
     */
    static SlurmTestbed fresh(String name, Optional<Path> spankPlugin) throws IOException {
        return fresh(name, spankPlugin, Cgroups.NONE);
    }

    /**
     * {@link #fresh(String, Optional)}, with the Slurm cgroup plugin asked for and ConstrainDevices=yes.
     */
    static SlurmTestbed fresh(String name, Optional<Path> spankPlugin, Cgroups cgroups) throws IOException {
        return new SlurmTestbed(reserveDirectory(name), freePortBase(), spankPlugin, cgroups, false, false);
    }

    /** {@link #fresh(String, Optional)}, with slurmdbd and a MariaDB of its own keeping Slurm's accounts. */
    static SlurmTestbed withAccounting(String name, Optional<Path> spankPlugin) throws IOException {
        return new SlurmTestbed(reserveDirectory(name), freePortBase(), spankPlugin, Cgroups.NONE, true, false);
    }

    /**
     * {@link #fresh(String, Optional)}, whose slurm.conf, gres.conf and plugstack.conf are a site's own that take
     * vgpu's rendered pieces ({@code Include} of vgpu.slurm.conf, plugstack.conf.d/vgpu.conf).
     */
    static SlurmTestbed withSitePieces(String name, Optional<Path> spankPlugin) throws IOException {
        return new SlurmTestbed(reserveDirectory(name), freePortBase(), spankPlugin, Cgroups.NONE, false, true);
    }

    private static Path reserveDirectory(String name) throws IOException {
        // The directory only reserves a name that no other run takes: up() tears down what is there, and up.sh
        // makes it anew.
        return Files.createTempDirectory(name + "-");
    }

    /** The Slurm the testbed runs: 22.05 (this machine's) unless VGPU_TESTBED_SLURM says 24.11 (slurm-root.sh). */
    static String slurmVersion() {
        return System.getenv().getOrDefault("VGPU_TESTBED_SLURM", "22.05");
    }

    /** Whether the testbed runs in Debian 13's root (Slurm 24.11) rather than on this machine's Slurm. */
    static boolean inSlurmRoot() {
        return !slurmVersion().equals("22.05");
    }

    /** The Debian 13 root that Slurm 24.11 runs in. */
    static Path slurmRoot() {
        return Optional.ofNullable(System.getenv("VGPU_SLURM_ROOT"))
                .map(Path::of)
                .orElse(DEFAULT_SLURM_ROOT);
    }

    /** A base whose whole span of ports nothing listens on now; up.sh checks the ones it binds again. */
    private static int freePortBase() throws IOException {
        int bases = (HIGHEST_PORT_BASE - LOWEST_PORT_BASE) / PORT_SPAN;
        for (int attempt = 0; attempt < PORT_BASE_TRIES; attempt++) {
            int base =
                    LOWEST_PORT_BASE + PORT_SPAN * ThreadLocalRandom.current().nextInt(bases);
            if (IntStream.range(base, base + PORT_SPAN).allMatch(SlurmTestbed::free)) {
                return base;
            }
        }
        throw new IOException("no " + PORT_SPAN + " free ports in a row between " + LOWEST_PORT_BASE + " and "
                + (HIGHEST_PORT_BASE + PORT_SPAN) + " after " + PORT_BASE_TRIES + " tries");
    }

    private static boolean free(int port) {
        try (ServerSocket _ = new ServerSocket(port)) {
            return true;
        } catch (IOException taken) {
            return false;
        }
    }

    /** Why no testbed can run here, or null when one can. */
    static String reasonItCannotRun() {
        if (!"root".equals(System.getProperty("user.name"))) {
            return "the Slurm testbed runs slurmctld/slurmd and creates device files, which needs root";
        }
        if (inSlurmRoot()) {
            // up.sh would make the root (minutes, from Debian's mirror): a build without network skips instead.
            if (!Files.isRegularFile(slurmRoot().resolve(".vgpu-trixie-root"))) {
                return "VGPU_TESTBED_SLURM=" + slurmVersion() + " runs Slurm in Debian 13's root " + slurmRoot()
                        + ", which is not made (testbed/slurm/make-trixie-root.sh makes it; .ci/run does)";
            }
        } else if (!(onPath("slurmctld") && onPath("slurmd") && onPath("sbatch"))) {
            return "Slurm is not installed (testbed/slurm/install-slurm.sh installs it; .ci/run does)";
        }
        if (!Files.isRegularFile(LAUNCHER_JAR)) {
            return "the vgpu launcher " + LAUNCHER_JAR + " is not built (mvn package)";
        }
        return null;
    }

    /** Why a testbed that loads {@link #BRIDGE} cannot run here, or null when one can. */
    static String reasonBridgeTestbedCannotRun() {
        String reason = reasonItCannotRun();
        if (reason == null && !Files.isRegularFile(BRIDGE)) {
            return "the SPANK bridge " + BRIDGE + " was not built (slurm-spank-bridge needs cc and libslurm-dev)";
        }
        return reason;
    }

    /** Why a testbed with accounting and {@link #BRIDGE} cannot run here, or null when one can. */
    static String reasonAccountingCannotRun() {
        String reason = reasonBridgeTestbedCannotRun();
        if (reason != null) {
            return reason;
        }
        Path sbin = inSlurmRoot() ? slurmRoot().resolve("usr/sbin") : Path.of("/usr/sbin");
        if (!Files.isExecutable(sbin.resolve("slurmdbd")) || !Files.isExecutable(sbin.resolve("mariadbd"))) {
            return "slurmdbd or mariadbd is missing in " + sbin + " (Slurm " + slurmVersion()
                    + "; .ci/run installs them: testbed/slurm/install-slurm.sh with VGPU_TESTBED_ACCOUNTING=yes, or"
                    + " make-trixie-root.sh)";
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
        assertScenarioPassesWithin(SCRIPT_TIMEOUT_SECONDS, scenario, args);
    }

    /** As {@link #assertScenarioPasses}, for a scenario that runs a workload of its own for minutes. */
    void assertScenarioPassesWithin(long timeoutSeconds, String scenario, String... args) throws Exception {
        Outcome outcome = run(timeoutSeconds, "scenario-" + scenario + ".sh", args);
        assertEquals(0, outcome.status(), failureReport("scenario " + scenario, outcome.output()));
        assertTrue(outcome.output().contains("PASS " + scenario), outcome.output());
        System.out.print(outcome.output());
    }

    /**
     * What a failed script printed, its failing checks and its reason for stopping first: a long scenario's whole
     * output can be cut in the middle where a report is shortened, and the line that says what failed would go.
     */
    static String failureReport(String what, String output) {
        String failing = output.lines()
                .filter(line -> line.startsWith("FAIL ") || line.startsWith("testbed: "))
                .collect(Collectors.joining("\n"));
        return what + " failed:\n" + failing + "\n---- its whole output:\n" + output;
    }

    /**
     * Runs testbed/story.sh (README's first command), which brings up a testbed of its own in this one's
     * directory and ports, tells its story and tears it down; instead of {@link #up()}. Fails with its output
     * unless it exited 0; returns that output.
     */
    String assertStoryPasses() throws Exception {
        // The directory fresh() reserved goes: story.sh makes it anew, as up.sh does.
        run("down.sh");
        Outcome story = run("../story.sh");
        assertEquals(0, story.status(), failureReport("story.sh", story.output()));
        System.out.print(story.output());
        return story.output();
    }

    /**
     * Runs run-scenarios.sh for one scenario (up, the scenario, down) under a kernel with cgroup v2 only
     * (in-uml.sh); instead of {@link #up()}. Fails with its output unless the scenario passed.
     */
    void assertScenarioPassesUnderOwnKernel(String scenario) throws Exception {
        run("down.sh");
        Outcome outcome = run(
                OWN_KERNEL_TIMEOUT_SECONDS,
                "in-uml.sh",
                SCRIPTS.resolve("run-scenarios.sh").toString(),
                scenario);
        assertEquals(0, outcome.status(), failureReport("scenario " + scenario + " under in-uml.sh", outcome.output()));
        assertTrue(outcome.output().contains("PASS " + scenario), outcome.output());
        System.out.print(outcome.output());
    }

    private Outcome run(String script, String... args) throws IOException {
        return run(SCRIPT_TIMEOUT_SECONDS, script, args);
    }

    /** Runs one script; an interrupt while it runs is an InterruptedIOException, so close() need not throw one. */
    private Outcome run(long timeoutSeconds, String script, String... args) throws IOException {
        List<String> command = new ArrayList<>(List.of(SCRIPTS.resolve(script).toString()));
        command.addAll(Arrays.asList(args));
        // Output goes to a file, not a pipe: daemons that up.sh starts inherit it and would hold a pipe open.
        Path log = Files.createTempFile("vgpu-testbed-" + Path.of(script).getFileName(), ".log");
        try {
            ProcessBuilder builder =
                    new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
            Map<String, String> environment = builder.environment();
            environment.put("VGPU_TESTBED_DIR", dir.toString());
            environment.put("VGPU_TESTBED_PORT_BASE", portBase);
            // The launcher runs on the Java running this test, which is the build's Java 25.
            environment.put("JAVA_HOME", System.getProperty("java.home"));
            environment.remove("VGPU_SPANK_PLUGIN");
            environment.put("VGPU_TESTBED_CGROUPS", cgroups.upValue);
            environment.put("VGPU_TESTBED_ACCOUNTING", accounting ? "yes" : "no");
            environment.put("VGPU_TESTBED_SLURM_FILES", sitePieces ? "pieces" : "whole");
            spankPlugin.ifPresent(plugin -> environment.put("VGPU_SPANK_PLUGIN", plugin.toString()));
            Process process = builder.start();
            if (!finishesInTime(process, timeoutSeconds)) {
                process.destroyForcibly();
                throw new AssertionError(
                        script + " ran longer than " + timeoutSeconds + " s:\n" + Files.readString(log));
            }
            return new Outcome(process.exitValue(), Files.readString(log));
        } finally {
            Files.delete(log);
        }
    }

    private static boolean finishesInTime(Process process, long timeoutSeconds) throws InterruptedIOException {
        try {
            return process.waitFor(timeoutSeconds, TimeUnit.SECONDS);
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
