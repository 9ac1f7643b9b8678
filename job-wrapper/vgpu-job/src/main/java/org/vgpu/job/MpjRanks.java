package org.vgpu.job;

import java.io.File;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.jar.JarFile;
import java.util.jar.Manifest;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.error.InputException;
import org.vgpu.common.error.IoReasons;

/**
 * {@code vgpu run --ranks N -- java [JVM-OPTIONS] (-cp CLASSPATH MAIN | -jar JAR) [ARGS...]}: the program as MPJ
 * Express ranks in multicore mode, the N ranks threads of one JVM, rank i computing on vGPU i ({@code
 * org.vgpu.api.VirtualGpus#forRank}).
 *
 * <p>The command is the one that would run the program alone; vgpu turns it into MPJ Express's multicore starter
 * ({@value #MULTICORE_STARTER}) in that {@code java}, with the JVM options kept. Why not MPJ's own {@code
 * starter.jar} ({@code mpjrun}): that is a JVM which starts a second one for the ranks, and the vgpu interposer (in every
 * JVM through {@code JAVA_TOOL_OPTIONS}) would open the vGPUs in the first, which runs no rank. Each rank's main is
 * {@link RankMain}'s, which runs the program's and turns a rank's failure into exit status 1 (MPJ's starter would
 * end with 0).
 *
 * <p>Debian's libmpj-java is not a complete MPJ_HOME: its jars look for {@code log4j-1.2.jar} beside them (their
 * manifests' Class-Path, resolved from the jars' real place, so symbolic links do not help), and Debian keeps it in
 * /usr/share/java. So each run gets a private MPJ_HOME in a temporary directory, with copies of MPJ's jars and of
 * log4j, removed when the run ends ({@link #close}), also when the launcher is stopped.
 */
final class MpjRanks implements AutoCloseable {
    static final String OPTION = "ranks";

    /** Where MPJ Express is, when not Debian's libmpj-java: a directory with lib/starter.jar (an MPJ_HOME). */
    static final String MPJ_DIR_VARIABLE = BridgeContract.ENV_MPJ_DIR;

    static final Path DEBIAN_MPJ = Path.of("/usr/share/mpj");
    static final Path DEBIAN_LOG4J = Path.of("/usr/share/java/log4j-1.2.jar");

    static final String MULTICORE_STARTER = "runtime.starter.MulticoreStarter";

    /** The class path of the starter's JVM, as MPJ Express 0.44's starter.jar gives it to the JVM of the ranks. */
    private static final List<String> STARTER_JARS =
            List.of("smpdev.jar", "xdev.jar", "mpjbuf.jar", "loader2.jar", "starter.jar", "mpiExp.jar");

    private static final String LOG4J = "log4j-1.2.jar";

    /** MPJ's name for its multicore device in the starter's arguments. */
    private static final String MULTICORE_DEVICE = "smpdev";

    private static final String SHAPE = "--ranks runs `java [JVM options] -cp CLASSPATH MAIN [ARGS...]` or `java [JVM"
            + " options] -jar JAR [ARGS...]`, the command that runs the program alone";

    /** JVM options whose value is the next word; any other word that starts with '-' before the main is one word. */
    private static final Set<String> OPTIONS_WITH_VALUE = Set.of(
            "--add-opens",
            "--add-exports",
            "--add-reads",
            "--add-modules",
            "--enable-native-access",
            "--limit-modules",
            "--patch-module");

    private static final Set<String> CLASS_PATH_OPTIONS = Set.of("-cp", "-classpath", "--class-path");
    private static final Set<String> MODULE_OPTIONS =
            Set.of("-p", "--module-path", "-m", "--module", "--upgrade-module-path");

    /** The program as a plain {@code java} command gives it. */
    record JavaProgram(
            String java, List<String> jvmOptions, String classPath, String mainClass, List<String> arguments) {}

    private final Path home;
    private final List<String> command;
    /**
     * Removes the home when the launcher is ended (scancel, Ctrl-C) while the ranks run, when {@link #close} is not
     * reached; the ranks' JVM keeps reading the jars it has open, which Linux keeps until they are closed.
     */
    private final Thread removeAtExit;

    private MpjRanks(Path home, List<String> command) {
        this.home = home;
        this.command = List.copyOf(command);
        this.removeAtExit = new Thread(() -> ProgramLaunch.removeAll(home), "vgpu-run-remove-mpj-home");
        Runtime.getRuntime().addShutdownHook(removeAtExit);
    }

    /**
     * Prepares the run of {@code program} as {@code ranks} MPJ Express ranks: a private MPJ_HOME, the starter's
     * command.
     *
     * @param vgpus       the job's vGPUs, one for each rank at most
     * @param environment the job's environment ({@value #MPJ_DIR_VARIABLE})
     * @throws InputException when the ranks or the command do not fit, or MPJ Express is not installed
     */
    static MpjRanks prepare(int ranks, List<String> program, int vgpus, Map<String, String> environment) {
        if (ranks > vgpus) {
            throw new InputException("--ranks " + ranks + " needs " + ranks + " vGPUs, one for each rank, and this job"
                    + " has " + vgpus + ": submit it with --gres=vgpu:" + ranks + " or run at most " + vgpus
                    + " ranks");
        }
        JavaProgram java = parse(program);
        Path mpj = Optional.ofNullable(environment.get(MPJ_DIR_VARIABLE))
                .filter(value -> !value.isBlank())
                .map(Path::of)
                .orElse(DEBIAN_MPJ);
        Path log4j = installed(mpj);
        Path home;
        try {
            home = Files.createTempDirectory("vgpu-mpj-");
        } catch (IOException e) {
            throw new InputException("cannot make a directory for MPJ Express's files: " + IoReasons.of(e));
        }
        MpjRanks prepared = new MpjRanks(home, starterCommand(java, ranks, home));
        try {
            copyHome(mpj, log4j, home);
        } catch (IOException e) {
            prepared.close();
            throw new InputException("cannot copy MPJ Express from " + mpj + " to " + home + ": " + IoReasons.of(e));
        }
        return prepared;
    }

    /** What the launcher runs instead of the program's command. */
    List<String> command() {
        return command;
    }

    /** The variables the starter reads: MPJ_HOME, the private one. */
    Map<String, String> environment() {
        return Map.of("MPJ_HOME", home.toString());
    }

    /** Removes the private MPJ_HOME. */
    @Override
    public void close() {
        ProgramLaunch.removeAll(home);
        try {
            Runtime.getRuntime().removeShutdownHook(removeAtExit);
        } catch (IllegalStateException shuttingDown) {
            // the hook removes it (again)
        }
    }

    /** The program's class path, main class and arguments from its {@code java} command. */
    static JavaProgram parse(List<String> program) {
        String java = program.getFirst();
        if (!String.valueOf(Path.of(java).getFileName()).equals("java")) {
            throw new InputException(SHAPE + ", not " + java + " (vgpu starts MPJ Express's multicore starter with that"
                    + " java, so a script or a build tool cannot be given ranks)");
        }
        List<String> jvmOptions = new ArrayList<>();
        String classPath = ".";
        for (int k = 1; k < program.size(); k++) {
            String word = program.get(k);
            if (CLASS_PATH_OPTIONS.contains(word)) {
                classPath = valueOf(program, ++k, word);
            } else if (word.startsWith("--class-path=")) {
                classPath = word.substring("--class-path=".length());
            } else if (word.equals("-jar")) {
                String jar = valueOf(program, ++k, word);
                return new JavaProgram(java, jvmOptions, jar, mainClassOf(jar), rest(program, k + 1));
            } else if (MODULE_OPTIONS.contains(word.split("=", 2)[0])) {
                throw new InputException(
                        SHAPE + ": " + word + " is not supported (MPJ Express loads each rank from a class path)");
            } else if (OPTIONS_WITH_VALUE.contains(word)) {
                jvmOptions.add(word);
                jvmOptions.add(valueOf(program, ++k, word));
            } else if (word.startsWith("-")) {
                jvmOptions.add(word);
            } else if (word.endsWith(".java")) {
                throw new InputException(SHAPE + ": a source file (" + word
                        + ") is not supported; compile it with javac" + " -cp /usr/share/java/mpj.jar:vgpu.jar first");
            } else {
                return new JavaProgram(java, jvmOptions, classPath, word, rest(program, k + 1));
            }
        }
        throw new InputException(SHAPE + ": " + String.join(" ", program) + " names no main class");
    }

    private static String valueOf(List<String> program, int k, String option) {
        if (k >= program.size()) {
            throw new InputException(SHAPE + ": " + option + " needs a value");
        }
        return program.get(k);
    }

    private static List<String> rest(List<String> program, int from) {
        return List.copyOf(program.subList(from, program.size()));
    }

    private static String mainClassOf(String jar) {
        try (JarFile file = new JarFile(jar)) {
            Manifest manifest = file.getManifest();
            String main = manifest == null ? null : manifest.getMainAttributes().getValue("Main-Class");
            if (main == null || main.isBlank()) {
                throw new InputException(
                        jar + " names no Main-Class in its manifest: give the class, -cp " + jar + " MAIN");
            }
            return main.strip();
        } catch (IOException e) {
            throw new InputException("cannot read the jar " + jar + ": " + IoReasons.of(e));
        }
    }

    /** log4j 1.2 for {@code mpj}'s jars: beside them, else Debian's; refused with what to install when missing. */
    private static Path installed(Path mpj) {
        if (!Files.isRegularFile(mpj.resolve("lib").resolve("starter.jar"))) {
            throw new InputException("--ranks runs MPJ Express programs and MPJ Express is not installed: no "
                    + mpj.resolve("lib").resolve("starter.jar")
                    + ". Install Debian's libmpj-java (apt-get install libmpj-java) or set " + MPJ_DIR_VARIABLE
                    + " to an MPJ Express directory (an MPJ_HOME, with lib/starter.jar)");
        }
        Path beside = mpj.resolve("lib").resolve(LOG4J);
        if (Files.isRegularFile(beside)) {
            return beside;
        }
        if (Files.isRegularFile(DEBIAN_LOG4J)) {
            return DEBIAN_LOG4J;
        }
        throw new InputException("MPJ Express in " + mpj + " needs log4j 1.2, which is neither in " + beside.getParent()
                + " nor at " + DEBIAN_LOG4J + ": install Debian's liblog4j1.2-java");
    }

    /** MPJ's jars (copies of what links point at) and log4j in home/lib, its configuration in home/conf. */
    private static void copyHome(Path mpj, Path log4j, Path home) throws IOException {
        Path lib = Files.createDirectories(home.resolve("lib"));
        try (DirectoryStream<Path> jars = Files.newDirectoryStream(mpj.resolve("lib"), "*.jar")) {
            for (Path jar : jars) {
                Files.copy(jar, lib.resolve(jar.getFileName().toString()));
            }
        }
        if (!Files.exists(lib.resolve(LOG4J))) {
            Files.copy(log4j, lib.resolve(LOG4J));
        }
        Path conf = mpj.resolve("conf");
        if (Files.isDirectory(conf)) {
            Path copied = Files.createDirectories(home.resolve("conf"));
            try (DirectoryStream<Path> files = Files.newDirectoryStream(conf, Files::isRegularFile)) {
                for (Path file : files) {
                    Files.copy(file, copied.resolve(file.getFileName().toString()));
                }
            }
        }
    }

    /**
     * {@code java [JVM-OPTIONS] -cp STARTER-JARS MulticoreStarter WDIR N smpdev useLocalLoader CLASSPATH RankMain MAIN
     * [ARGS]}: MPJ's starter loads each rank's classes from CLASSPATH (with MPJ's mpi.jar and mpjdev.jar) in a class
     * loader of its own, so each rank has its own MPI state, and calls {@link RankMain} with the rank, N, the device
     * and MAIN [ARGS].
     */
    private static List<String> starterCommand(JavaProgram program, int ranks, Path home) {
        List<String> command = new ArrayList<>();
        command.add(program.java());
        command.addAll(program.jvmOptions());
        command.add("-cp");
        command.add(String.join(
                File.pathSeparator,
                STARTER_JARS.stream()
                        .map(jar -> home.resolve("lib").resolve(jar).toString())
                        .toList()));
        command.add(MULTICORE_STARTER);
        command.add(Path.of("").toAbsolutePath().toString());
        command.add(Integer.toString(ranks));
        command.add(MULTICORE_DEVICE);
        command.add("useLocalLoader");
        command.add(program.classPath());
        command.add(RankMain.class.getName());
        command.add(program.mainClass());
        command.addAll(program.arguments());
        return command;
    }
}
