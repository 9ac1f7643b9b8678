package org.vgpu.job;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.vgpu.common.error.NetworkException;
import org.vgpu.migration.MigratableGpu;
import org.vgpu.migration.MigrationConfig;
import org.vgpu.migration.MigrationFaults;
import org.vgpu.migration.MigrationListener;
import org.vgpu.migration.MigrationTarget;
import org.vgpu.migration.RemoteWorkerResolver;
import org.vgpu.migration.agent.MigrationAgent;
import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.core.FailureCollector;
import org.vgpu.runtime.remote.client.RemoteConfig;

/**
 * A job's vGPUs, opened as its {@link JobAssembly} says: each a {@link MigratableGpu} in its own
 * window, over the local backend (a GPU of this node) or a session on its lent GPU worker, and the
 * migration agent listening on the assembly's socket when it names one. Closing it closes the
 * vGPUs, stops the agent and removes its socket.
 *
 * <p>An agent that cannot listen (the site has not created the socket directory, another agent
 * holds the socket) does not stop the job: its vGPUs work, they only cannot be moved, and
 * {@link #agentProblem} says why, for the job's output.
 */
public final class JobVgpus implements AutoCloseable {
    private final JobAssembly assembly;
    private final GpuBackend local;
    private final RemoteWorkerResolver workers;
    private final MigrationAgent agent;
    private final List<MigratableGpu> vgpus;
    private final Thread socketRemoval;
    private final String agentProblem;

    private JobVgpus(
            JobAssembly assembly,
            GpuBackend local,
            RemoteWorkerResolver workers,
            MigrationAgent agent,
            List<MigratableGpu> vgpus,
            Thread socketRemoval,
            String agentProblem) {
        this.assembly = assembly;
        this.local = local;
        this.workers = workers;
        this.agent = agent;
        this.vgpus = List.copyOf(vgpus);
        this.socketRemoval = socketRemoval;
        this.agentProblem = agentProblem;
    }

    /**
     * Opens every vGPU of {@code assembly}; when one cannot be opened, closes what was opened and
     * throws.
     *
     * @param local    the backend of this node's GPUs (native, or the CPU emulation); the result owns it
     * @param listener gets the report of every migration, successful or rolled back
     * @throws VgpuException naming the vGPU that could not be opened and why
     * @throws org.vgpu.common.error.ConfigException when the assembly has more local GPUs than
     *         {@code local} has devices
     */
    public static JobVgpus open(
            JobAssembly assembly, GpuBackend local, RemoteConfig remoteConfig, MigrationListener listener) {
        FailureCollector cleanup = new FailureCollector();
        RemoteWorkerResolver workers = null;
        MigrationAgent agent = null;
        Thread socketRemoval = null;
        String agentProblem = null;
        List<MigratableGpu> vgpus = new ArrayList<>();
        try {
            checkLocalDevices(assembly, local);
            // No TLS: the job's environment says nothing of the lenders' certificates (see README, vgpu run).
            workers = new RemoteWorkerResolver(JobTargets.credentials(assembly), remoteConfig, null);
            JobTargets targets = new JobTargets(assembly, local, workers);
            if (assembly.agentSocket().isPresent()) {
                try {
                    agent = new MigrationAgent(
                            assembly.agentSocket().get(),
                            targets,
                            MigrationConfig.DEFAULTS,
                            listener,
                            MigrationFaults.NONE);
                    socketRemoval = removalAtExit(assembly.agentSocket().get());
                } catch (NetworkException e) {
                    agentProblem = e.detail();
                }
            }
            for (JobAssembly.Vgpu vgpu : assembly.vgpus()) {
                vgpus.add(openOne(assembly, vgpu, local, workers, targets, agent, listener));
            }
            return new JobVgpus(assembly, local, workers, agent, vgpus, socketRemoval, agentProblem);
        } catch (RuntimeException e) {
            closeAll(cleanup, local, workers, agent, vgpus, socketRemoval);
            try {
                cleanup.rethrow();
            } catch (RuntimeException closing) {
                e.addSuppressed(closing);
            }
            throw e;
        }
    }

    private static MigratableGpu openOne(
            JobAssembly assembly,
            JobAssembly.Vgpu vgpu,
            GpuBackend local,
            RemoteWorkerResolver workers,
            JobTargets targets,
            MigrationAgent agent,
            MigrationListener listener) {
        MigrationTarget location;
        VirtualGpu initial;
        try {
            switch (vgpu) {
                case JobAssembly.Local gpu -> {
                    location = new MigrationTarget.LocalGpu(gpu.nodeGpu());
                    initial = local.open(gpu.cudaDevice(), assembly.window(gpu.index()));
                }
                case JobAssembly.Remote remote -> {
                    MigrationTarget.RemoteWorker worker = new MigrationTarget.RemoteWorker(remote.worker());
                    location = worker;
                    initial = workers.open(worker, assembly.window(remote.index()), null);
                }
            }
        } catch (VgpuException e) {
            throw new VgpuException(
                    e.code(), "vGPU " + vgpu.index() + " (" + where(vgpu) + ") cannot be opened: " + e.detail(), e);
        }
        if (agent == null) {
            return new MigratableGpu(
                    initial, location, targets, MigrationConfig.DEFAULTS, listener, MigrationFaults.NONE);
        }
        try {
            return agent.adopt(initial, location);
        } catch (RuntimeException e) {
            initial.close();
            throw e;
        }
    }

    /**
     * Local GPU i of the job is CUDA device i: the backend must have as many devices as the job has
     * local GPUs. A job whose environment names more is misconfigured (its GPUs hidden from CUDA, or
     * the bridge's variables wrong); no GPU call has failed.
     */
    private static void checkLocalDevices(JobAssembly assembly, GpuBackend local) {
        for (JobAssembly.Vgpu vgpu : assembly.vgpus()) {
            if (vgpu instanceof JobAssembly.Local gpu && gpu.cudaDevice() >= local.deviceCount()) {
                throw JobAssembly.invalid(String.format(
                        "vGPU %d is local GPU %d,"
                                + " device %d of the job (its place in VGPU_LOCAL_GPUS=%s), but the %s backend has %d device(s)%s",
                        gpu.index(),
                        gpu.nodeGpu(),
                        gpu.cudaDevice(),
                        assembly.localGpusText(),
                        local.name(),
                        local.deviceCount(),
                        local.isEmulation() ? "" : "; does CUDA_VISIBLE_DEVICES list the job's GPUs?"));
            }
        }
    }

    /** Where the assembly put vGPU {@code vgpu}: "local GPU 2" or "remote 10.1.0.7:7001". */
    static String where(JobAssembly.Vgpu vgpu) {
        return switch (vgpu) {
            case JobAssembly.Local gpu -> "local GPU " + gpu.nodeGpu();
            case JobAssembly.Remote remote -> "remote " + remote.worker();
        };
    }

    /**
     * A JVM ended by a signal (scancel sends SIGTERM) runs no finally block: the hook removes the
     * socket then, so the tracker finds no dead agent's socket.
     */
    private static Thread removalAtExit(Path socket) {
        Thread removal = new Thread(
                () -> {
                    try {
                        Files.deleteIfExists(socket);
                    } catch (IOException ignored) {
                        // the JVM is ending; a socket left behind is removed by the next agent that binds there
                    }
                },
                "vgpu-agent-socket-removal");
        Runtime.getRuntime().addShutdownHook(removal);
        return removal;
    }

    public JobAssembly assembly() {
        return assembly;
    }

    /** The vGPUs, vGPU k at position k. */
    public List<MigratableGpu> vgpus() {
        return vgpus;
    }

    /** The backend of this node's GPUs. */
    public GpuBackend local() {
        return local;
    }

    /** Where the agent listens, when there is one. */
    public Optional<Path> agentSocket() {
        return agent == null ? Optional.empty() : Optional.of(agent.socketPath());
    }

    /** Why the assembly names an agent socket but no agent listens there; empty when it does, or names none. */
    public Optional<String> agentProblem() {
        return Optional.ofNullable(agentProblem);
    }

    /** The device vGPU {@code k} was opened on, which it keeps showing the app across migrations. */
    public DeviceProperties device(int k) {
        return vgpus.get(k).deviceProperties();
    }

    @Override
    public void close() {
        FailureCollector failures = new FailureCollector();
        closeAll(failures, local, workers, agent, vgpus, socketRemoval);
        failures.rethrow();
    }

    /** vGPUs first (the agent closes those it adopted), then the event loops they used, then the local backend. */
    private static void closeAll(
            FailureCollector failures,
            GpuBackend local,
            RemoteWorkerResolver workers,
            MigrationAgent agent,
            List<MigratableGpu> vgpus,
            Thread socketRemoval) {
        if (agent != null) {
            failures.attempt(agent::close);
        } else {
            vgpus.forEach(gpu -> failures.attempt(gpu::close));
        }
        if (socketRemoval != null) {
            failures.attempt(() -> {
                try {
                    Runtime.getRuntime().removeShutdownHook(socketRemoval);
                } catch (IllegalStateException shuttingDown) {
                    // the hook runs anyway
                }
            });
        }
        if (workers != null) {
            failures.attempt(workers::close);
        }
        failures.attempt(local::close);
    }
}
