package org.vgpu.job;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.vgpu.common.agent.AgentChannel;
import org.vgpu.common.error.NetworkException;
import org.vgpu.common.error.VgpuFailure;
import org.vgpu.migration.MigratableGpu;
import org.vgpu.migration.MigrationConfig;
import org.vgpu.migration.MigrationFaults;
import org.vgpu.migration.MigrationListener;
import org.vgpu.migration.MigrationTarget;
import org.vgpu.migration.MigrationWarmUp;
import org.vgpu.migration.RemoteWorkerResolver;
import org.vgpu.migration.agent.MigrationAgent;
import org.vgpu.migration.agent.TrackerLink;
import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.core.FailureCollector;
import org.vgpu.runtime.remote.client.RemoteConfig;

/**
 * A job's vGPUs, opened as its {@link JobAssembly} says: each a {@link MigratableGpu} in its own
 * window, over the local backend (a GPU of this node) or a session on its lent GPU worker, and the
 * migration agent listening on the assembly's socket when it names one. When the job borrows a vGPU
 * and knows the tracker (VGPU_TRACKER), a {@link TrackerLink} polls the tracker for the migrations
 * that bring borrowed vGPUs home. Closing it stops the link, closes the vGPUs, stops the agent and
 * removes its socket.
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
    private final TrackerLink trackerLink;
    private final String trackerProblem;
    private final CudaOrdinals ordinals;
    private final List<MigratableGpu> vgpus;
    private final Thread socketRemoval;
    private final String agentProblem;

    private JobVgpus(
            JobAssembly assembly,
            GpuBackend local,
            RemoteWorkerResolver workers,
            MigrationAgent agent,
            TrackerPolling polling,
            CudaOrdinals ordinals,
            List<MigratableGpu> vgpus,
            Thread socketRemoval,
            String agentProblem) {
        this.assembly = assembly;
        this.local = local;
        this.workers = workers;
        this.agent = agent;
        this.trackerLink = polling.link();
        this.trackerProblem = polling.problem();
        this.ordinals = ordinals;
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
        return open(
                assembly, CudaOrdinals.of(System.getenv(), local), local, remoteConfig, listener, MigrationFaults.NONE);
    }

    /**
     * With the CUDA ordinals found from another environment than this process's (vgpu run's, a test's).
     *
     * @param faults {@link MigrationFaults#NONE}, except where vgpu run was given a test-only fault
     */
    static JobVgpus open(
            JobAssembly assembly,
            CudaOrdinals ordinals,
            GpuBackend local,
            RemoteConfig remoteConfig,
            MigrationListener listener,
            MigrationFaults faults) {
        FailureCollector cleanup = new FailureCollector();
        RemoteWorkerResolver workers = null;
        MigrationAgent agent = null;
        Thread socketRemoval = null;
        String agentProblem = null;
        List<MigratableGpu> vgpus = new ArrayList<>();
        try {
            checkLocalDevices(assembly, ordinals);
            JobGrants grants = new JobGrants(assembly);
            // No TLS context of its own: a token that pins its worker's certificate opens TLS to it (WorkerEndpoint).
            workers = new RemoteWorkerResolver(JobTargets.credentials(grants), remoteConfig, null);
            JobTargets targets = new JobTargets(assembly, grants, ordinals, local, workers);
            if (assembly.agentSocket().isPresent()) {
                try {
                    agent = new MigrationAgent(
                            assembly.agentSocket().get(), targets, MigrationConfig.DEFAULTS, listener, faults);
                    socketRemoval = removalAtExit(assembly.agentSocket().get());
                    // migrations may come now: the first must not also pay for this JVM's first sight of the code
                    MigrationWarmUp.startOnce();
                } catch (NetworkException e) {
                    agentProblem = e.detail();
                }
            }
            for (JobAssembly.Vgpu vgpu : assembly.vgpus()) {
                vgpus.add(openOne(assembly, vgpu, ordinals, local, workers, targets, agent, listener, faults));
            }
            TrackerPolling polling = startTrackerLink(assembly, vgpus, grants);
            return new JobVgpus(assembly, local, workers, agent, polling, ordinals, vgpus, socketRemoval, agentProblem);
        } catch (RuntimeException e) {
            closeAll(cleanup, local, workers, null, agent, vgpus, socketRemoval);
            try {
                cleanup.rethrow();
            } catch (RuntimeException closing) {
                e.addSuppressed(closing);
            }
            throw e;
        }
    }

    /** The link to the tracker, or why there is none although the job borrows a vGPU (null when it needs none). */
    private record TrackerPolling(TrackerLink link, String problem) {}

    /**
     * A link to the tracker when the job borrows a vGPU (its session token is the link's credential) and knows the
     * tracker; none otherwise: a job without a borrowed vGPU has nothing to bring home.
     */
    private static TrackerPolling startTrackerLink(JobAssembly assembly, List<MigratableGpu> vgpus, JobGrants grants) {
        Optional<JobAssembly.Remote> borrowed = assembly.firstRemote();
        if (borrowed.isEmpty() || assembly.tracker().isEmpty()) {
            return new TrackerPolling(null, null);
        }
        if (assembly.job().isEmpty()) {
            return new TrackerPolling(null, "SLURM_JOB_ID is not set, so the job cannot name itself to the tracker");
        }
        AgentChannel.Credential credential;
        TrackerLink.Address tracker;
        try {
            credential = new AgentChannel.Credential(
                    assembly.job().get(), borrowed.get().index(), borrowed.get().token());
            tracker = TrackerLink.Address.parse(assembly.tracker().get());
        } catch (IllegalArgumentException e) {
            return new TrackerPolling(null, e.getMessage());
        } catch (VgpuFailure e) {
            return new TrackerPolling(null, e.detail());
        }
        return new TrackerPolling(
                TrackerLink.start(tracker, credential, assembly.expectedEnd(Instant.now()), vgpus, grants), null);
    }

    private static MigratableGpu openOne(
            JobAssembly assembly,
            JobAssembly.Vgpu vgpu,
            CudaOrdinals ordinals,
            GpuBackend local,
            RemoteWorkerResolver workers,
            JobTargets targets,
            MigrationAgent agent,
            MigrationListener listener,
            MigrationFaults faults) {
        MigrationTarget location;
        VirtualGpu initial;
        try {
            switch (vgpu) {
                case JobAssembly.Local gpu -> {
                    location = new MigrationTarget.LocalGpu(gpu.nodeGpu());
                    initial = local.open(ordinals.ordinalOf(gpu.nodeGpu()), assembly.window(gpu.index()));
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
            return new MigratableGpu(initial, location, targets, MigrationConfig.DEFAULTS, listener, faults);
        }
        try {
            return agent.adopt(initial, location);
        } catch (RuntimeException e) {
            initial.close();
            throw e;
        }
    }

    /**
     * Every local GPU of the job must be one CUDA shows this process: a job whose GPUs cannot be found is
     * misconfigured (its GPUs hidden from CUDA, or the bridge's variables wrong); no GPU call has failed.
     */
    private static void checkLocalDevices(JobAssembly assembly, CudaOrdinals ordinals) {
        for (JobAssembly.Vgpu vgpu : assembly.vgpus()) {
            if (vgpu instanceof JobAssembly.Local gpu) {
                try {
                    ordinals.ordinalOf(gpu.nodeGpu());
                } catch (VgpuException e) {
                    throw JobAssembly.invalid("vGPU " + gpu.index() + " (local GPU " + gpu.nodeGpu()
                            + ") cannot be opened: " + e.detail());
                }
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

    /** The vGPUs in the assembly's order: position k holds its k-th vGPU (a task's share starts at its first). */
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

    /** Why the job borrows a vGPU but does not poll the tracker for migrations; empty when it polls, or needs not. */
    public Optional<String> trackerProblem() {
        return Optional.ofNullable(trackerProblem);
    }

    /**
     * What the job's output should warn of: no migration agent ({@link #agentProblem}), no tracker link
     * ({@link #trackerProblem}); each line starts "warning: ".
     */
    public List<String> warnings() {
        List<String> warnings = new ArrayList<>();
        agentProblem()
                .ifPresent(problem ->
                        warnings.add("warning: no migration agent, so these vGPUs cannot be moved: " + problem));
        trackerProblem()
                .ifPresent(problem -> warnings.add(
                        "warning: the borrowed vGPUs will not be brought home by the tracker: " + problem));
        return warnings;
    }

    /** The CUDA ordinal of this process that drives node GPU {@code nodeGpu}. */
    public int cudaOrdinal(int nodeGpu) {
        return ordinals.ordinalOf(nodeGpu);
    }

    /**
     * The device the program's vGPU {@code position} (its CUDA device: the vGPU's index less the share's first) was
     * opened on, which it keeps showing the app across migrations.
     */
    public DeviceProperties device(int position) {
        return vgpus.get(position).deviceProperties();
    }

    @Override
    public void close() {
        FailureCollector failures = new FailureCollector();
        closeAll(failures, local, workers, trackerLink, agent, vgpus, socketRemoval);
        failures.rethrow();
    }

    /**
     * The tracker link first (no migration starts after it), then the vGPUs (the agent closes those it adopted),
     * then the event loops they used, then the local backend.
     */
    private static void closeAll(
            FailureCollector failures,
            GpuBackend local,
            RemoteWorkerResolver workers,
            TrackerLink trackerLink,
            MigrationAgent agent,
            List<MigratableGpu> vgpus,
            Thread socketRemoval) {
        if (trackerLink != null) {
            failures.attempt(trackerLink::close);
        }
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
