package org.vgpu.job;

import java.io.File;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.stream.Collectors;

import org.vgpu.common.cli.LogSettings;
import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.error.ConfigException;
import org.vgpu.runtime.remote.worker.InProcessWorker;
import org.vgpu.runtime.remote.worker.WorkerConfig;

/**
 * The job's vGPUs served inside a CUDA program's own process ({@value #VARIABLE}={@value #IN_PROCESS}): vgpu's
 * {@code libcuda.so.1} starts a JVM in the program with vgpu.jar as its class path and calls this class through JNI:
 * {@link #openSession} for each vGPU it opens, then {@link InProcessWorker.Session#serve} for each request frame, which
 * it would otherwise write to the launcher's local worker. What serves them is the local worker's own code on the job's
 * migratable vGPUs ({@link LocalWorker#programVgpus}), opened here from the environment {@code vgpu run} gave the
 * program; they migrate through the job's agent socket as the launcher's do. Which of the launcher and the program
 * holds them is settled by the run's owner lock, as between the launcher and a Java program.
 */
public final class InProcessServing {
    /** How the library serves: {@value #SOCKET} (the default) or {@value #IN_PROCESS}. */
    static final String VARIABLE = BridgeContract.ENV_LIBCUDA_SERVING;

    static final String SOCKET = "socket";
    static final String IN_PROCESS = "in-process";
    /** The launcher's JVM library, which the program's library loads. */
    static final String JVM = BridgeContract.ENV_LIBCUDA_JVM;

    static final String CLASS_PATH = BridgeContract.ENV_LIBCUDA_CLASS_PATH;
    /** The local backend and the emulation's devices, as the interposer takes them. */
    static final String RUNTIME = BridgeContract.ENV_LIBCUDA_RUNTIME;
    /** Set (to true) by the library on the JVM it starts, so that the interposer's premain stands aside in it. */
    static final String PROPERTY = "vgpu.libcuda.in-process";

    private static InProcessWorker worker;
    private static ProgramVgpus vgpus;

    private InProcessServing() {}

    /** Whether this JVM is the one vgpu's {@code libcuda.so.1} started inside a CUDA program. */
    static boolean inThisJvm() {
        return Boolean.getBoolean(PROPERTY);
    }

    /**
     * What {@code vgpu run} adds to the program's environment, whichever way {@code serving} ({@value #VARIABLE}'s
     * value) chooses, so that a process of the program may choose the other (the serving floor benchmark runs
     * itself both ways): the JVM library and the class path of the launcher's own JVM (vgpu.jar, or the jars of a
     * staged build) and the runtime's choices.
     *
     * @throws ConfigException INVALID for a value that is neither {@value #SOCKET} nor {@value #IN_PROCESS}
     */
    static Map<String, String> variables(Optional<String> serving, String runtimeArguments) {
        String value = serving.orElse(SOCKET);
        if (!value.equals(SOCKET) && !value.equals(IN_PROCESS)) {
            throw new ConfigException(
                    ConfigException.Code.INVALID,
                    VARIABLE + "=" + value + ": the library serves either by " + SOCKET + " (the default) or "
                            + IN_PROCESS);
        }
        return Map.of(
                JVM,
                Path.of(System.getProperty("java.home"), "lib", "server", "libjvm.so")
                        .toString(),
                CLASS_PATH,
                launcherClassPath(),
                RUNTIME,
                runtimeArguments);
    }

    /** The launcher's class path, each entry absolute: the program runs in a directory of its own choosing. */
    private static String launcherClassPath() {
        return Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
                .filter(entry -> !entry.isEmpty())
                .map(entry -> Path.of(entry).toAbsolutePath().toString())
                .collect(Collectors.joining(File.pathSeparator));
    }

    /**
     * A new session of the program's library, the worker started at the first (the job's vGPUs themselves open at the
     * first session's HELLO). Called through JNI.
     *
     * @throws ConfigException when the program's environment is not what {@code vgpu run} gives it
     */
    public static synchronized InProcessWorker.Session openSession() {
        if (worker == null) {
            start(System.getenv(), System.err);
        }
        return worker.open();
    }

    /** Ends the sessions and closes the job's vGPUs: the library calls it as the program exits. Called through JNI. */
    public static synchronized void close() {
        if (worker != null) {
            try {
                worker.close();
            } finally {
                vgpus.close();
                worker = null;
                vgpus = null;
            }
        }
    }

    private static void start(Map<String, String> environment, PrintStream err) {
        LogSettings.forUserProgram();
        JobAssembly assembly = JobAssembly.fromEnvironment(environment)
                .orElseThrow(() -> new ConfigException(
                        ConfigException.Code.INVALID, "not a vgpu job: none of the SPANK bridge's variables is set"));
        String runDirectory = environment.get(InterposerPremain.RUN_DIRECTORY);
        if (runDirectory == null) {
            throw new ConfigException(
                    ConfigException.Code.INVALID,
                    InterposerPremain.RUN_DIRECTORY + " is not set: in-process serving runs under vgpu run");
        }
        InterposerPremain.RuntimeChoice choice =
                InterposerPremain.RuntimeChoice.parse(environment.getOrDefault(RUNTIME, ""));
        Consumer<String> say = line -> err.println("vgpu: " + line);
        ProgramVgpus opened = LocalWorker.programVgpus(
                assembly,
                environment,
                choice.backendName(),
                choice.emulatedGpus(),
                Path.of(runDirectory),
                say,
                "this program's own process, which serves them to itself");
        WorkerConfig config = new WorkerConfig(
                "localhost", 0, 0, "vgpu-in-process-" + ProcessHandle.current().pid(), LocalWorker.NO_IDLE_TIMEOUT);
        worker = InProcessWorker.start(config, opened, say);
        vgpus = opened;
    }
}
