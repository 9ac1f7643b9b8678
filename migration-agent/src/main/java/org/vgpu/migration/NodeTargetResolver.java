package org.vgpu.migration;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * The targets of one node: its GPUs through the local backend (native, or the CPU emulation where
 * "GPU index" means an emulated device), and remote workers through a resolver for them when the
 * process has one.
 *
 * <p>Native to native inside one process is refused: the source vGPU holds the reservation of its
 * window in the process's (unified) address space, and the target must reserve the very same range,
 * which the driver cannot grant while the source holds it. Releasing the source's reservation
 * first would unmap the only copy of the data and make rollback impossible, so the migration would
 * no longer be safe. A local GPU's vGPU moves through a remote worker instead (native to remote,
 * then remote to native), or is served by a worker on its own node.
 */
public final class NodeTargetResolver implements TargetResolver {
    private final GpuBackend local;
    private final TargetResolver remoteWorkers;

    /** Local GPUs only; remote targets are refused with CUDA_ERROR_NOT_SUPPORTED. */
    public NodeTargetResolver(GpuBackend local) {
        this(local, null);
    }

    /** @param remoteWorkers opens {@link MigrationTarget.RemoteWorker} targets; null when there are none */
    public NodeTargetResolver(GpuBackend local, TargetResolver remoteWorkers) {
        this.local = local;
        this.remoteWorkers = remoteWorkers;
    }

    @Override
    public VirtualGpu open(MigrationTarget target, VaWindow window, VirtualGpu source) {
        return switch (target) {
            case MigrationTarget.LocalGpu gpu -> openLocal(gpu, window, source);
            case MigrationTarget.RemoteWorker worker -> {
                if (remoteWorkers == null) {
                    throw new VgpuException(
                            ErrorCode.CUDA_ERROR_NOT_SUPPORTED,
                            "this process has no remote runtime to reach worker " + worker);
                }
                yield remoteWorkers.open(worker, window, source);
            }
        };
    }

    private VirtualGpu openLocal(MigrationTarget.LocalGpu gpu, VaWindow window, VirtualGpu source) {
        if (!local.isEmulation() && local.name().equals(source.backendName())) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_NOT_SUPPORTED,
                    String.format(
                            "%s runs on a local %s GPU;"
                                    + " moving it to %s in the same process would need the window it holds (reserve it twice),"
                                    + " so native-to-native is refused: migrate through a remote worker",
                            window, local.name(), gpu));
        }
        return local.open(gpu.index(), window);
    }
}
