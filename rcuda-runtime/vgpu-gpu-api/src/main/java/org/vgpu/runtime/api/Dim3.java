package org.vgpu.runtime.api;

/** Grid or block dimensions of a kernel launch, as CUDA's {@code dim3}. */
public record Dim3(int x, int y, int z) {
    public Dim3 {
        if (x < 1 || y < 1 || z < 1) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "launch dimensions must be >= 1, got (" + x + ", " + y + ", " + z + ")");
        }
    }

    public static Dim3 of(int x) {
        return new Dim3(x, 1, 1);
    }

    public static Dim3 of(int x, int y) {
        return new Dim3(x, y, 1);
    }

    public long count() {
        return (long) x * y * z;
    }
}
