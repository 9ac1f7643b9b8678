package org.vgpu.job;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Supplier;

import org.vgpu.common.error.IoReasons;
import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * The job's vGPUs as the launcher's local worker hands them to the sessions of a program that is not Java: a
 * {@link GpuBackend} whose {@code open(device, window)} gives vGPU {@code window.vgpuIndex()} of the job, the device
 * number being the worker's and meaning nothing here.
 *
 * <p>The job's vGPUs ({@link JobVgpus}: each a migratable vGPU, the migration agent on the job's socket, the tracker
 * link) are opened at the first session's HELLO, not before: a Java program run by the same launcher opens them in its
 * own JVM, and they must not be opened twice. Which of the two holds them is settled by the run's owner lock, the lock
 * the interposer's premain takes ({@link InterposerPremain}): the launcher takes it before it opens them, and a HELLO
 * that comes while a JVM of the program holds it is refused.
 *
 * <p>Ownership: the job's vGPUs belong to this object, from the first HELLO until {@link #close} (the program's end);
 * a session gets a {@link SessionScopedGpu}, whose close frees what the session made and nothing more.
 */
final class ProgramVgpus implements GpuBackend {
    static final String NAME = "job";

    private final JobAssembly assembly;
    private final Supplier<JobVgpus> opener;
    private final Path ownerLock;
    private final Consumer<String> log;
    /** Who holds them once opened, for the line that says so: the launcher, or the program's own process. */
    private final String holder;
    /** Guarded by this; null until the first HELLO that opens them. */
    private JobVgpus opened;
    /** Guarded by this; held while {@link #opened} is. */
    private FileLock lock;

    /**
     * @param opener       opens the job's vGPUs (and owns the local backend it opens them on)
     * @param runDirectory the run's directory, where the owner lock is
     * @param log          where the launcher says that it opened the job's vGPUs for the program, and their warnings
     * @param holder       who holds them once opened, as the line that says so names it
     */
    ProgramVgpus(
            JobAssembly assembly, Supplier<JobVgpus> opener, Path runDirectory, Consumer<String> log, String holder) {
        this.assembly = Objects.requireNonNull(assembly, "assembly");
        this.opener = Objects.requireNonNull(opener, "opener");
        this.ownerLock = runDirectory.resolve(InterposerPremain.OWNER_LOCK);
        this.log = Objects.requireNonNull(log, "log");
        this.holder = Objects.requireNonNull(holder, "holder");
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public boolean isEmulation() {
        return false;
    }

    @Override
    public int deviceCount() {
        return assembly.count();
    }

    /** Opens the job's vGPUs if no session has yet. */
    @Override
    public DeviceProperties deviceProperties(int device) {
        return job().device(device);
    }

    /** Whether a session opened the job's vGPUs (they are open until {@link #close}). */
    synchronized boolean used() {
        return opened != null;
    }

    @Override
    public VirtualGpu open(int device, VaWindow window) {
        int k = window.vgpuIndex();
        if (!assembly.has(k)) {
            int first = assembly.firstIndex();
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_DEVICE,
                    "vGPU " + k + " is not one of this " + (first == 0 ? "job's " : "task's ") + assembly.count() + " ("
                            + first + " to " + (first + assembly.count() - 1) + ")");
        }
        VaWindow jobWindow = assembly.window(k);
        if (!jobWindow.equals(window)) {
            throw new VgpuException(
                    ErrorCode.VGPU_WINDOW_UNAVAILABLE,
                    String.format(
                            "the session asks for vGPU %d at 0x%x, %d bytes; this job's vGPU %d is at 0x%x, %d bytes"
                                    + " (VGPU_WINDOW_BASE)",
                            k, window.base(), window.size(), k, jobWindow.base(), jobWindow.size()));
        }
        return new SessionScopedGpu(job().vgpus().get(k - assembly.firstIndex()));
    }

    /**
     * Registered with the job's backend of this node, whatever backend each vGPU is on now: the memory is on this host,
     * so a vGPU that migrates home finds it page-locked there.
     */
    @Override
    public boolean hostRegister(MemorySegment host) {
        return job().local().hostRegister(host);
    }

    @Override
    public void hostUnregister(MemorySegment host) {
        JobVgpus job;
        synchronized (this) {
            job = opened;
        }
        if (job != null) {
            job.local().hostUnregister(host);
        }
    }

    private synchronized JobVgpus job() {
        if (opened == null) {
            FileLock owner = claimRun();
            try {
                opened = opener.get();
            } catch (RuntimeException e) {
                release(owner);
                throw e;
            }
            lock = owner;
            log.accept(
                    "the program opened a session: the job's " + assembly.count() + " vGPU(s) are open in " + holder);
            opened.warnings().forEach(log);
        }
        return opened;
    }

    /** The run's owner lock, or a refusal when a JVM of the program holds the job's vGPUs. */
    @SuppressWarnings("resource") // the channel goes with the lock, closed by release
    private FileLock claimRun() {
        try {
            FileChannel channel = FileChannel.open(ownerLock, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            FileLock owner;
            try {
                owner = channel.tryLock();
            } catch (OverlappingFileLockException heldInThisJvm) {
                owner = null;
            }
            if (owner == null) {
                channel.close();
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_NOT_PERMITTED,
                        "a JVM of this program holds the job's vGPUs (a Java program run by vgpu run opens them"
                                + " itself), so a process it starts cannot use them too");
            }
            return owner;
        } catch (IOException e) {
            throw new VgpuException(
                    ErrorCode.VGPU_BACKEND_UNAVAILABLE,
                    "the run's lock " + ownerLock + " cannot be taken: " + IoReasons.of(e),
                    e);
        }
    }

    private static void release(FileLock owner) {
        try {
            owner.channel().close();
        } catch (IOException ignored) {
            // closing the channel releases the lock; a failure leaves it to the launcher's exit
        }
    }

    /** Closes the job's vGPUs, if a session opened them, and gives the run's lock back. */
    @Override
    public synchronized void close() {
        if (opened == null) {
            return;
        }
        try {
            opened.close();
        } finally {
            opened = null;
            release(lock);
            lock = null;
        }
    }
}
