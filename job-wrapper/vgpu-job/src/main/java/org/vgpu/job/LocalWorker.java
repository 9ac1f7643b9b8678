package org.vgpu.job;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Supplier;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.error.ConfigException;
import org.vgpu.migration.MigrationFaults;
import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.remote.client.RemoteConfig;
import org.vgpu.runtime.remote.worker.GpuWorker;
import org.vgpu.runtime.remote.worker.SameUserSessions;
import org.vgpu.runtime.remote.worker.WorkerConfig;

/**
 * The launcher's local worker: while {@code vgpu run -- COMMAND} runs a program, it serves the job's vGPUs to the
 * program's processes that are not JVMs (a CUDA program through vgpu's {@code libcuda.so.1}) on a Unix domain socket
 * in the run's directory, whose path the program finds in {@value #VARIABLE}. It speaks the remote GPU worker's
 * protocol ({@link GpuWorker}), one connection a session of one vGPU (the HELLO's window says which), several vGPUs at
 * once; the sessions are served by the job's own migratable vGPUs ({@link ProgramVgpus}), so a program's vGPUs
 * migrate through the job's agent socket and the tracker's hook as a Java program's do.
 *
 * <p>Who may connect: the run's directory is the launcher's user's alone (0700), and each HELLO is checked against the
 * connecting process's user ({@link SameUserSessions}); no token is needed. Sessions send no keepalives: a local
 * connection's loss is seen at once, and a program may compute on its CPU for hours between two GPU calls.
 */
final class LocalWorker implements AutoCloseable {
    /** Where the program's {@code libcuda.so.1} finds the local worker's socket. */
    static final String VARIABLE = BridgeContract.ENV_LOCAL_WORKER;

    static final String SOCKET_NAME = "gpu.sock";

    /** No idle bound: the longest the worker's configuration takes (24 days), which is what its WELCOME says too. */
    static final Duration NO_IDLE_TIMEOUT = Duration.ofMillis(Integer.MAX_VALUE);

    private final GpuWorker worker;
    private final ProgramVgpus vgpus;
    private final Path socket;

    private LocalWorker(GpuWorker worker, ProgramVgpus vgpus, Path socket) {
        this.worker = worker;
        this.vgpus = vgpus;
        this.socket = socket;
    }

    /**
     * Listens on {@link #SOCKET_NAME} in {@code runDirectory}. The local worker owns {@code vgpus} from here on.
     *
     * @param log where the worker says what it does (a session refused, one that ended and why)
     * @throws ConfigException when the socket's path is too long for a Unix socket or it cannot be listened on
     */
    static LocalWorker start(Path runDirectory, ProgramVgpus vgpus, Consumer<String> log) {
        Path socket = runDirectory.resolve(SOCKET_NAME).toAbsolutePath();
        int bytes = socket.toString().getBytes(StandardCharsets.UTF_8).length;
        if (bytes > BridgeContract.SOCKET_PATH_BYTES) {
            throw new ConfigException(
                    ConfigException.Code.INVALID,
                    "the local worker's socket " + socket + " is " + bytes + " bytes long, and a Unix socket's path"
                            + " is at most " + BridgeContract.SOCKET_PATH_BYTES
                            + ": set TMPDIR to a shorter directory");
        }
        SameUserSessions sameUser;
        try {
            sameUser = SameUserSessions.ownerOf(runDirectory);
        } catch (IOException e) {
            throw new ConfigException(ConfigException.Code.INVALID, "the local worker cannot start: " + e.getMessage());
        }
        String id = "vgpu-run-" + ProcessHandle.current().pid();
        WorkerConfig config = new WorkerConfig("localhost", 0, 0, id, NO_IDLE_TIMEOUT);
        GpuWorker worker = GpuWorker.startOnSocket(socket, config, vgpus, sameUser, log);
        return new LocalWorker(worker, vgpus, socket);
    }

    /**
     * How {@code vgpu run -- COMMAND} starts its local worker: the job's vGPUs, when a session opens them, are opened
     * as the interposer opens them in a Java program's JVM, on the local backend {@code backendName} chosen here (the
     * driver is not touched before), with the migration reports and warnings on {@code err}.
     *
     * @param environment the program's environment, which says how CUDA numbers the node's GPUs and the test fault
     */
    static ProgramLaunch.LocalWorkerStart starter(
            JobAssembly assembly,
            Map<String, String> environment,
            String backendName,
            int emulatedGpus,
            PrintStream err) {
        Consumer<String> say = line -> err.println("vgpu run: " + line);
        return runDirectory -> start(
                runDirectory,
                programVgpus(
                        assembly,
                        environment,
                        backendName,
                        emulatedGpus,
                        runDirectory,
                        say,
                        "the launcher, which serves them to it"),
                say);
    }

    /**
     * The job's vGPUs as a local worker serves them, in the launcher or in the program's own process
     * ({@link InProcessServing}): opened at the first session, on the local backend {@code backendName}.
     *
     * @param holder who holds them once opened, as the line that says so names it
     */
    static ProgramVgpus programVgpus(
            JobAssembly assembly,
            Map<String, String> environment,
            String backendName,
            int emulatedGpus,
            Path runDirectory,
            Consumer<String> say,
            String holder) {
        Map<String, String> programEnvironment = Map.copyOf(environment);
        Supplier<JobVgpus> opener = () -> {
            GpuBackend local = Backends.forJob(backendName, emulatedGpus);
            return JobVgpus.open(
                    assembly,
                    CudaOrdinals.of(programEnvironment, local),
                    local,
                    RemoteConfig.defaults(),
                    report -> say.accept("migration: " + report.summary()),
                    TestMigrationFault.from(programEnvironment)
                            .map(TestMigrationFault::at)
                            .orElse(MigrationFaults.NONE));
        };
        return new ProgramVgpus(assembly, opener, runDirectory, say, holder);
    }

    Path socket() {
        return socket;
    }

    /** The most bytes of page-locked host memory the worker shares with the program; 0 when it shares none. */
    long sharedHostBytes() {
        return worker.sharedHostBytes();
    }

    /** Whether a session opened the job's vGPUs. */
    boolean used() {
        return vgpus.used();
    }

    /** Ends the sessions (each frees what it made), stops listening, then closes the job's vGPUs if they were opened. */
    @Override
    public void close() {
        try {
            worker.close();
        } finally {
            vgpus.close();
        }
    }
}
