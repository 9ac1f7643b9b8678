package org.vgpu.runtime.api;

import java.util.List;

/**
 * The parameter sizes of a kernel, as the module declares them. The driver does not check a
 * launch's arguments against the kernel, so a wrong count would read garbage on the GPU; every
 * backend checks against this before launching.
 */
public record KernelSignature(String kernelName, List<Integer> parameterSizes) {
    public KernelSignature {
        parameterSizes = List.copyOf(parameterSizes);
    }

    /** Throws CUDA_ERROR_INVALID_VALUE unless {@code args} match this signature in count and sizes. */
    public void check(KernelArgs args) {
        if (args.count() != parameterSizes.size()) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "kernel " + kernelName + " takes " + parameterSizes.size() + " arguments " + describeSizes()
                            + ", got " + args.count());
        }
        for (int i = 0; i < args.count(); i++) {
            int given = args.get(i).size();
            if (given != parameterSizes.get(i)) {
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_INVALID_VALUE,
                        "kernel " + kernelName + " argument "
                                + i + " must be " + parameterSizes.get(i) + " bytes, got " + args.get(i) + " ("
                                + given + " bytes)");
            }
        }
    }

    private String describeSizes() {
        StringBuilder sb = new StringBuilder("(");
        for (int i = 0; i < parameterSizes.size(); i++) {
            sb.append(i == 0 ? "" : ", ").append(parameterSizes.get(i)).append(" B");
        }
        return sb.append(')').toString();
    }
}
