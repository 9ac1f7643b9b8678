package org.vgpu.job;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.instrument.Instrumentation;
import java.lang.invoke.MethodHandle;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.Optional;

import org.vgpu.common.cli.LogSettings;
import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.error.VgpuFailure;
import org.vgpu.job.jcuda.JCudaCallSites;
import org.vgpu.migration.MigrationFaults;
import org.vgpu.runtime.Backends;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.remote.client.RemoteConfig;

/**
 * The interposer {@code vgpu run -- COMMAND} puts into the user's JVM ({@code -javaagent}, through {@code
 * JAVA_TOOL_OPTIONS}), its premain, entered through {@link PremainJavaCheck} once that has found the JVM's Java new
 * enough: before the program's {@code main} it opens the job's vGPUs ({@link JobVgpus}: the
 * runtime, the migration agent on the job's socket, the link to the tracker) in that JVM, where the program calls
 * them; {@code org.vgpu.api.VirtualGpus.fromEnvironment()} hands the program these vGPUs, and the program's JCuda
 * calls are redirected to them ({@link JCudaCallSites}). A shutdown hook closes them when the JVM ends, normally or on
 * SIGTERM: the tracker link stops, the migration agent's socket is removed.
 *
 * <p>Why an interposer in the program's JVM rather than the runtime in the launcher with the program as a client: the
 * vGPUs must live where the program's calls are made, or every call would cross a process boundary (the cost rCUDA
 * pays over the network, here for a local GPU too), and a migration must be able to gate the program's own calls.
 * Why {@code JAVA_TOOL_OPTIONS}: every JVM honours it, also one started by a script or a build tool, without the
 * launcher having to understand the command line; the user's own value is kept, ours appended.
 *
 * <p>Only the first JVM of a run opens the vGPUs, holding a lock in the run's directory ({@value #RUN_DIRECTORY})
 * until it ends: a JVM the program starts in turn inherits {@code JAVA_TOOL_OPTIONS} but must not open the same
 * vGPUs a second time, nor may it while the launcher's {@link LocalWorker} holds the lock for a program that is not
 * Java. Each JVM that loads the interposer marks the run's directory.
 */
public final class InterposerPremain {
    /** The launcher's directory for this run: the owner's lock and the mark that a JVM attached. */
    static final String RUN_DIRECTORY = BridgeContract.ENV_RUN_DIRECTORY;

    static final String ATTACHED_MARK = "attached";
    static final String OWNER_LOCK = "owner.lock";
    private static final String BACKEND_ARGUMENT = "local-backend";
    private static final String EMULATED_GPUS_ARGUMENT = "emulated-gpus";

    /** The vGPUs this JVM's interposer opened; null where no interposer ran or it opened none. */
    private static volatile JobVgpus opened;

    /**
     * The run's lock, held for the JVM's life: an unreachable channel is closed by its cleaner, which would release
     * the lock to the next JVM while this one still holds the vGPUs.
     */
    @SuppressWarnings("unused")
    private static FileLock ownerLock;

    /** Why this JVM's interposer opened no vGPUs although it ran in a job: another JVM of the run holds them. */
    private static volatile String declined;

    private InterposerPremain() {}

    /** The vGPUs the interposer opened in this JVM (a program started by {@code vgpu run --}), if it did. */
    public static Optional<JobVgpus> opened() {
        return Optional.ofNullable(opened);
    }

    /**
     * Why the interposer of this JVM left the job's vGPUs to another JVM of the same run, which holds them; empty where it
     * did not. A program here must not open them a second time.
     */
    public static Optional<String> declined() {
        return Optional.ofNullable(declined);
    }

    /**
     * Called by the JVM before the program's main.
     *
     * @param arguments {@link #arguments}'s text: the local backend and the emulation's devices
     */
    public static void premain(String arguments, Instrumentation instrumentation) {
        if (InProcessServing.inThisJvm()) {
            return; // the JVM vgpu's libcuda.so.1 started inside a CUDA program: it serves that program's vGPUs itself
        }
        LogSettings.forUserProgram();
        PrintStream err = System.err;
        Map<String, String> environment = System.getenv();
        keepLibcudaPassingThrough(err);
        String runDirectory = environment.get(RUN_DIRECTORY);
        if (runDirectory != null && !claimRun(Path.of(runDirectory), err)) {
            return;
        }
        try {
            open(arguments == null ? "" : arguments, environment, err)
                    .ifPresent(job -> JCudaCallSites.install(instrumentation, job.vgpus()));
        } catch (VgpuFailure e) {
            err.println("vgpu: the job's vGPUs cannot be opened: " + e.detail());
            System.exit(1);
        } catch (RuntimeException e) {
            err.println("vgpu: the job's vGPUs cannot be opened: " + e.getMessage());
            System.exit(1);
        }
    }

    /**
     * A JVM's vGPUs are its own runtime's: vgpu's {@code libcuda.so.1}, which JCuda loads here from the library path
     * {@code vgpu run} gave the program, must pass this JVM's calls to the node's driver, not serve them from the
     * launcher. It decides when it is loaded, after this, by whether the local worker's variable is set: so it is
     * removed from this process's environment.
     */
    @SuppressWarnings("restricted") // one call of libc's unsetenv; vgpu run enables native access for the program
    private static void keepLibcudaPassingThrough(PrintStream err) {
        try (Arena arena = Arena.ofConfined()) {
            Linker linker = Linker.nativeLinker();
            MethodHandle unsetenv = linker.downcallHandle(
                    linker.defaultLookup().find("unsetenv").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
            int status = (int) unsetenv.invokeExact(arena.allocateFrom(LocalWorker.VARIABLE));
            if (status != 0) {
                err.println("vgpu: warning: cannot remove " + LocalWorker.VARIABLE + " from this JVM's environment");
            }
        } catch (Throwable e) { // invokeExact's own signature: the call itself cannot fail otherwise
            err.println("vgpu: warning: cannot remove " + LocalWorker.VARIABLE + " from this JVM's environment: " + e);
        }
    }

    /** The local backend and the emulation's devices, as {@link #arguments} writes them. */
    record RuntimeChoice(String backendName, int emulatedGpus) {
        static RuntimeChoice parse(String arguments) {
            String backendName = Backends.AUTO;
            int emulatedGpus = EmulatedBackend.DEFAULT_DEVICE_COUNT;
            for (String argument : arguments.split(",")) {
                if (argument.startsWith(BACKEND_ARGUMENT + "=")) {
                    backendName = argument.substring(BACKEND_ARGUMENT.length() + 1);
                } else if (argument.startsWith(EMULATED_GPUS_ARGUMENT + "=")) {
                    emulatedGpus = Integer.parseInt(argument.substring(EMULATED_GPUS_ARGUMENT.length() + 1));
                }
            }
            return new RuntimeChoice(backendName, emulatedGpus);
        }
    }

    /** The interposer's argument text for these choices ({@code -javaagent:JAR=TEXT}): no spaces, no quotes. */
    static String arguments(String localBackend, int emulatedGpus) {
        return BACKEND_ARGUMENT + "=" + localBackend + "," + EMULATED_GPUS_ARGUMENT + "=" + emulatedGpus;
    }

    /**
     * Marks the run as attached and takes its lock; false when another JVM of this run holds it. The lock goes with
     * the JVM, also when it is killed, so a script's second JVM after the first one ends gets the vGPUs.
     */
    @SuppressWarnings("resource") // the channel and its lock are held until the JVM ends, on purpose
    private static boolean claimRun(Path directory, PrintStream err) {
        try {
            Files.writeString(
                    directory.resolve(ATTACHED_MARK),
                    ProcessHandle.current().pid() + "\n",
                    StandardOpenOption.CREATE,
                    StandardOpenOption.APPEND);
            FileChannel channel = FileChannel.open(
                    directory.resolve(OWNER_LOCK), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            FileLock lock = channel.tryLock();
            if (lock == null) {
                channel.close();
                declined = "another JVM of this vgpu run holds the job's vGPUs; this one (pid "
                        + ProcessHandle.current().pid() + ") runs without them";
                err.println("vgpu: " + declined);
                return false;
            }
            ownerLock = lock;
            return true;
        } catch (IOException e) {
            err.println("vgpu: the run's directory " + directory + " cannot be used (" + e.getMessage()
                    + "); the job's vGPUs are opened anyway");
            return true;
        }
    }

    /** The job's vGPUs, opened; empty outside a job. */
    private static Optional<JobVgpus> open(String arguments, Map<String, String> environment, PrintStream err) {
        RuntimeChoice choice = RuntimeChoice.parse(arguments);
        String backendName = choice.backendName();
        int emulatedGpus = choice.emulatedGpus();
        Optional<JobAssembly> assembly = JobAssembly.fromEnvironment(environment);
        if (assembly.isEmpty()) {
            // vgpu run checked the environment before it started the program; a JVM that gets here was given the
            // interposer by hand outside a job
            err.println("vgpu: not a vgpu job (none of the SPANK bridge's variables is set): no vGPUs opened");
            return Optional.empty();
        }
        var local = Backends.forJob(backendName, emulatedGpus);
        JobVgpus job = JobVgpus.open(
                assembly.get(),
                CudaOrdinals.of(environment, local),
                local,
                RemoteConfig.defaults(),
                report -> err.println("vgpu: migration: " + report.summary()),
                TestMigrationFault.from(environment).map(TestMigrationFault::at).orElse(MigrationFaults.NONE));
        job.warnings().forEach(warning -> err.println("vgpu: " + warning));
        Runtime.getRuntime().addShutdownHook(new Thread(() -> close(job, err), "vgpu-interposer-close"));
        opened = job;
        return Optional.of(job);
    }

    private static void close(JobVgpus job, PrintStream err) {
        opened = null;
        try {
            job.close();
        } catch (RuntimeException e) {
            err.println("vgpu: closing the job's vGPUs at exit: " + e.getMessage());
        }
    }
}
