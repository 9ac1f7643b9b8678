package org.vgpu.api;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.vgpu.job.InterposerPremain;
import org.vgpu.job.JobAssembly;
import org.vgpu.job.JobVgpus;
import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.core.FailureCollector;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.remote.client.RemoteConfig;

/**
 * The entry point for a Java program of one's own: the GPUs it runs on, as {@link VirtualGpu}s, vGPU k (CUDA device
 * k) at position k.
 *
 * <pre>{@code
 * try (VirtualGpus gpus = VirtualGpus.fromEnvironment()) {
 *     VirtualGpu gpu = gpus.gpu(0);
 *     ...
 * }
 * }</pre>
 *
 * Where they come from, {@link #source()} says:
 * <ul>
 *   <li>{@link Source#JOB}: the vgpu job's vGPUs, each migratable (local GPUs and borrowed ones). Under {@code vgpu
 *       run -- java ...} these are the ones the launcher's interposer opened in this JVM before {@code main}, the same
 *       objects on every call (one session per vGPU); the interposer closes them when the JVM ends. In a job without
 *       {@code vgpu run --} (a program started directly by {@code srun}) this call opens them, with the migration
 *       agent, and {@link #close} closes them.</li>
 *   <li>{@link Source#NODE_GPUS}: outside a vgpu job, every GPU of this machine, as CUDA numbers them, opened
 *       natively and not migratable.</li>
 *   <li>{@link Source#CPU_EMULATION}: outside a vgpu job on a machine without a CUDA GPU, the CPU emulation's
 *       devices (kernels run as Java twins of the test kernels; results are right, times say nothing of GPUs).</li>
 * </ul>
 */
public final class VirtualGpus implements AutoCloseable {
    /** Where a program's GPUs come from; {@link #label} is how output names it. */
    public enum Source {
        JOB("job"),
        NODE_GPUS("node GPUs"),
        CPU_EMULATION("CPU EMULATION");

        private final String label;

        Source(String label) {
            this.label = label;
        }

        public String label() {
            return label;
        }
    }

    private final Source source;
    private final List<VirtualGpu> gpus;
    private final String description;
    /** Closes what this opened; null where the interposer owns the vGPUs. */
    private final Runnable owned;

    private boolean closed;

    private VirtualGpus(Source source, List<? extends VirtualGpu> gpus, String description, Runnable owned) {
        this.source = source;
        this.gpus = List.copyOf(gpus);
        this.description = description;
        this.owned = owned;
    }

    /**
     * This program's GPUs: the vgpu job's, else this machine's, else the CPU emulation's (see the class comment).
     *
     * @throws org.vgpu.common.error.ConfigException when the job's vgpu environment is malformed
     * @throws org.vgpu.runtime.api.VgpuException naming the vGPU that could not be opened, and why; also in a JVM
     *         that a program under {@code vgpu run --} started while its own JVM holds the job's vGPUs
     */
    public static VirtualGpus fromEnvironment() {
        return from(System.getenv(), InterposerPremain.opened(), InterposerPremain.declined());
    }

    /**
     * From {@code environment}, with the vGPUs the interposer opened in this JVM, if it did.
     *
     * @param declinedByInterposer why the interposer left the vGPUs to another JVM of the run, if it did
     */
    static VirtualGpus from(
            Map<String, String> environment,
            Optional<JobVgpus> openedByInterposer,
            Optional<String> declinedByInterposer) {
        if (openedByInterposer.isPresent()) {
            return ofJob(openedByInterposer.get(), null);
        }
        if (declinedByInterposer.isPresent()) {
            // a second session on each vGPU would fight the first for its GPU, and a lent worker serves one at a time
            throw new VgpuException(
                    ErrorCode.VGPU_BACKEND_UNAVAILABLE,
                    "the job's vGPUs are not for this JVM: " + declinedByInterposer.get());
        }
        Optional<JobAssembly> assembly = JobAssembly.fromEnvironment(environment);
        if (assembly.isPresent()) {
            GpuBackend local = Backends.forJob(Backends.AUTO, EmulatedBackend.DEFAULT_DEVICE_COUNT);
            JobVgpus job = JobVgpus.open(
                    assembly.get(),
                    local,
                    RemoteConfig.defaults(),
                    report -> System.err.println("vgpu: migration: " + report.summary()));
            return ofJob(job, job::close);
        }
        return ofNode(Backends.open(Backends.AUTO));
    }

    private static VirtualGpus ofJob(JobVgpus job, Runnable owned) {
        String description = job.vgpus().size() + " vGPUs of "
                + job.assembly().job().map(id -> "job " + id).orElse("this vgpu job") + " ("
                + job.assembly().localCount() + " local, " + job.assembly().remoteCount() + " remote, migratable)"
                + (job.local().isEmulation() ? ", local ones on the CPU EMULATION" : "");
        return new VirtualGpus(Source.JOB, job.vgpus(), description, owned);
    }

    private static VirtualGpus ofNode(GpuBackend backend) {
        List<VirtualGpu> gpus = new ArrayList<>();
        try {
            for (int device = 0; device < backend.deviceCount(); device++) {
                gpus.add(backend.open(device, VaWindow.forVgpu(device)));
            }
        } catch (RuntimeException e) {
            FailureCollector cleanup = new FailureCollector();
            gpus.forEach(gpu -> cleanup.attempt(gpu::close));
            cleanup.attempt(backend::close);
            throw e;
        }
        Source source = backend.isEmulation() ? Source.CPU_EMULATION : Source.NODE_GPUS;
        String description = source == Source.CPU_EMULATION
                ? gpus.size() + " devices of the CPU EMULATION (not a vgpu job, no CUDA GPU here): not a GPU"
                : gpus.size() + " node GPUs (not a vgpu job: opened natively, not migratable)";
        return new VirtualGpus(source, gpus, description, () -> {
            FailureCollector failures = new FailureCollector();
            gpus.forEach(gpu -> failures.attempt(gpu::close));
            failures.attempt(backend::close);
            failures.rethrow();
        });
    }

    /** Whether these are a job's vGPUs, this machine's GPUs or the CPU emulation. */
    public Source source() {
        return source;
    }

    /** One line for the program's output, e.g. {@code "2 vGPUs of job 42 (1 local, 1 remote, migratable)"}. */
    public String description() {
        return description;
    }

    /** Every GPU, vGPU k (CUDA device k) at position k. */
    public List<VirtualGpu> gpus() {
        return gpus;
    }

    /** vGPU {@code k}. */
    public VirtualGpu gpu(int k) {
        return gpus.get(k);
    }

    /**
     * The GPU of MPI rank {@code rank} of {@code size}: vGPU {@code rank}, each rank on a vGPU of its own, which
     * migrates on its own. For MPJ Express programs under {@code vgpu run --ranks N -- java ...}, whose ranks are
     * threads of one JVM: each rank calls {@code gpus.forRank(MPI.COMM_WORLD.Rank(), MPI.COMM_WORLD.Size())}.
     *
     * <p>Why the rank is given rather than found from the calling thread: the rank is what an MPI program knows, MPJ
     * Express numbers its threads apart from its ranks (rank 0 may run in the thread MPJ calls 1), and a rank's own
     * threads and thread pools get the same vGPU this way.
     *
     * @throws IllegalArgumentException when {@code rank} is not one of {@code size} ranks
     * @throws VgpuException ({@link ErrorCode#VGPU_BACKEND_UNAVAILABLE}) when there are fewer GPUs than ranks
     */
    public VirtualGpu forRank(int rank, int size) {
        if (rank < 0 || rank >= size) {
            throw new IllegalArgumentException(
                    "rank " + rank + " is not one of " + size + " ranks (0 to " + (size - 1) + ")");
        }
        if (size > gpus.size()) {
            throw new VgpuException(
                    ErrorCode.VGPU_BACKEND_UNAVAILABLE,
                    size + " ranks need " + size + " GPUs, one for each rank, and there are " + gpus.size() + ": "
                            + description);
        }
        return gpus.get(rank);
    }

    public int count() {
        return gpus.size();
    }

    /** Closes what {@link #fromEnvironment} opened; nothing where {@code vgpu run}'s interposer owns the vGPUs. */
    @Override
    public synchronized void close() {
        if (owned != null && !closed) {
            closed = true;
            owned.run();
        }
    }

    @Override
    public String toString() {
        return source.label() + ": " + description;
    }
}
