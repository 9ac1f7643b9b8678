package org.vgpu.runtime.api;

import java.util.List;

/** {@code bytes} of device memory from {@code address}: one piece of a gathering copy. */
public record DeviceRegion(long address, long bytes) {
    public DeviceRegion {
        if (bytes < 0) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "region byte count must be >= 0, got " + bytes);
        }
    }

    /** The bytes of {@code regions} together; refuses a sum no copy could hold. */
    public static long totalBytes(List<DeviceRegion> regions) {
        long total = 0;
        for (DeviceRegion region : regions) {
            total += region.bytes();
            if (total < 0) {
                throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "the regions hold more than 2^63 bytes together");
            }
        }
        return total;
    }
}
