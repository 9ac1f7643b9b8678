package org.vgpu.job;

import java.util.Objects;

import org.vgpu.common.net.Endpoint;
import org.vgpu.migration.MigrationTarget;
import org.vgpu.migration.NodeTargetResolver;
import org.vgpu.migration.RemoteWorkerResolver;
import org.vgpu.migration.TargetResolver;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.remote.client.WorkerEndpoint;

/**
 * Where a job's vGPUs may go, in the tracker's terms: {@code migrate <vgpu> <target>} names a local
 * target by its node GPU index (as nvidia-smi, gres.conf and the tracker number GPUs). The job opens
 * only a GPU granted to it ({@link JobGrants}: its own, and those the tracker's commands granted),
 * driven as the CUDA ordinal {@link CudaOrdinals} finds for it. With {@code VGPU_MIGRATE=never}
 * every target is refused. Remote targets open with the session token the job holds for that
 * vGPU on that worker; the rest of the rules (native to native refused) are {@link NodeTargetResolver}'s.
 */
final class JobTargets implements TargetResolver {
    private final JobAssembly assembly;
    private final JobGrants grants;
    private final CudaOrdinals ordinals;
    private final NodeTargetResolver node;

    JobTargets(
            JobAssembly assembly,
            JobGrants grants,
            CudaOrdinals ordinals,
            GpuBackend local,
            RemoteWorkerResolver workers) {
        this.assembly = Objects.requireNonNull(assembly, "assembly");
        this.grants = Objects.requireNonNull(grants, "grants");
        this.ordinals = Objects.requireNonNull(ordinals, "ordinals");
        this.node = new NodeTargetResolver(local, workers);
    }

    /** The credentials of the workers lent to this job, for a {@link RemoteWorkerResolver}. */
    static RemoteWorkerResolver.WorkerCredentials credentials(JobGrants grants) {
        return (Endpoint worker, VaWindow window) -> {
            String token = grants.tokenFor(window.vgpuIndex(), worker)
                    .orElseThrow(() -> new VgpuException(
                            ErrorCode.VGPU_AUTH_FAILED,
                            "this job holds no session token for vGPU " + window.vgpuIndex() + " on worker " + worker
                                    + "; only the tracker can lend this job another worker"));
            // VGPU_REMOTE does not name the worker; errors name it by its vGPU. The tracker takes the
            // worker back when the job's holder ends, so closing the session has nothing to release.
            return new WorkerEndpoint("of vGPU " + window.vgpuIndex(), worker.host(), worker.port(), token, () -> {});
        };
    }

    @Override
    public VirtualGpu open(MigrationTarget target, VaWindow window, VirtualGpu source) {
        if (assembly.migration() == JobAssembly.Migration.NEVER) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_NOT_PERMITTED,
                    "this job was submitted with --vgpu-migrate=never"
                            + " (VGPU_MIGRATE=never): its vGPUs stay where they started");
        }
        if (target instanceof MigrationTarget.LocalGpu gpu) {
            grants.requireLocal(gpu.index());
            return node.open(new MigrationTarget.LocalGpu(ordinals.ordinalOf(gpu.index())), window, source);
        }
        return node.open(target, window, source);
    }
}
