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
 * target by its node GPU index (as nvidia-smi, gres.conf and the tracker number GPUs), which this
 * process drives as the CUDA device at that GPU's place in VGPU_LOCAL_GPUS. A GPU outside the job's
 * CUDA_VISIBLE_DEVICES is invisible to CUDA here and refused. With {@code VGPU_MIGRATE=never}
 * every target is refused. Remote targets open with the session token VGPU_REMOTE holds for that
 * vGPU on that worker; the rest of the rules (native to native refused) are {@link NodeTargetResolver}'s.
 */
final class JobTargets implements TargetResolver {
    private final JobAssembly assembly;
    private final NodeTargetResolver node;

    JobTargets(JobAssembly assembly, GpuBackend local, RemoteWorkerResolver workers) {
        this.assembly = Objects.requireNonNull(assembly, "assembly");
        this.node = new NodeTargetResolver(local, workers);
    }

    /** The credentials of the workers the tracker lent this job, for a {@link RemoteWorkerResolver}. */
    static RemoteWorkerResolver.WorkerCredentials credentials(JobAssembly assembly) {
        return (Endpoint worker, VaWindow window) -> {
            String token = assembly.tokenFor(window.vgpuIndex(), worker)
                    .orElseThrow(() -> new VgpuException(
                            ErrorCode.VGPU_AUTH_FAILED,
                            "VGPU_REMOTE holds no session token for vGPU " + window.vgpuIndex() + " on worker " + worker
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
            int cudaDevice = assembly.cudaDeviceOf(gpu.index())
                    .orElseThrow(() -> new VgpuException(
                            ErrorCode.CUDA_ERROR_INVALID_DEVICE,
                            "GPU " + gpu.index() + " of this node is not one of the job's" + " local GPUs ("
                                    + assembly.localGpusText() + "); CUDA_VISIBLE_DEVICES hides it from this process"));
            return node.open(new MigrationTarget.LocalGpu(cudaDevice), window, source);
        }
        return node.open(target, window, source);
    }
}
