package org.vgpu.job;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.vgpu.common.net.Endpoint;
import org.vgpu.migration.agent.TrackerGrants;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * What the job's runtime may use: the node GPUs granted to it (its VGPU_LOCAL_GPUS at start, then every
 * {@code local:<gpu>} target of a tracker's command whose mac verified) and the workers it holds session tokens
 * for (VGPU_REMOTE, then a tracker's remote targets). Anything else is refused with a message that names the GPU and
 * the job, so a user who asks for a GPU the job was never given learns why, not merely that CUDA hides it.
 */
final class JobGrants implements TrackerGrants {
    private final JobAssembly assembly;
    private final Set<Integer> localGpus = ConcurrentHashMap.newKeySet();
    private final Map<Integer, WorkerGrant> workers = new ConcurrentHashMap<>();

    private record WorkerGrant(Endpoint worker, String sessionToken) {
        @Override
        public String toString() {
            return "WorkerGrant[worker=" + worker + ", sessionToken=(" + sessionToken.length() + " chars)]";
        }
    }

    JobGrants(JobAssembly assembly) {
        this.assembly = Objects.requireNonNull(assembly, "assembly");
        localGpus.addAll(assembly.localGpus());
    }

    /** @throws VgpuException CUDA_ERROR_NOT_PERMITTED naming the GPU, the node and the job when it is not granted */
    void requireLocal(int nodeGpu) {
        if (!localGpus.contains(nodeGpu)) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_NOT_PERMITTED,
                    "GPU " + nodeGpu + " of "
                            + assembly.node().map(node -> "node " + node).orElse("this node")
                            + " is not granted to "
                            + assembly.job().map(job -> "job " + job).orElse("this job")
                            + " (it has " + String.join(", ", granted()) + "); the tracker grants a freed GPU when it"
                            + " moves a vGPU home");
        }
    }

    /** The session token vGPU {@code vgpu} may open {@code worker} with: the tracker's latest, else VGPU_REMOTE's. */
    Optional<String> tokenFor(int vgpu, Endpoint worker) {
        WorkerGrant grant = workers.get(vgpu);
        if (grant != null && grant.worker().equals(worker)) {
            return Optional.of(grant.sessionToken());
        }
        return assembly.tokenFor(vgpu, worker);
    }

    @Override
    public boolean grantLocalGpu(int nodeGpu) {
        return localGpus.add(nodeGpu);
    }

    @Override
    public void withdrawLocalGpu(int nodeGpu) {
        localGpus.remove(nodeGpu);
    }

    @Override
    public void grantWorker(int vgpu, Endpoint worker, String sessionToken) {
        workers.put(vgpu, new WorkerGrant(worker, sessionToken));
    }

    private List<String> granted() {
        return localGpus.isEmpty()
                ? List.of("no GPU of its own")
                : localGpus.stream().sorted().map(gpu -> "GPU " + gpu).toList();
    }
}
