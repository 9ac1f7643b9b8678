package org.vgpu.runtime.core;

import java.lang.foreign.MemorySegment;
import java.util.List;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.PitchedMemory;

/**
 * The lowering of validated calls that touch many ranges (the rows of a 2D copy or memset, the
 * regions of a gather or scatter) to a backend's primitives for one contiguous range, one call per
 * range. These are {@link AbstractVirtualGpu}'s defaults; a backend with a cheaper way (a local
 * GPU's driver takes a 2D copy whole, a remote client sends one request) overrides the primitive.
 */
final class CallLowering {

    private CallLowering() {}

    /**
     * One asynchronous copy per region into {@code dst}, packed; a backend whose every call crosses
     * a network replaces it by one request.
     */
    static <S> void gather(
            AbstractVirtualGpu<?, ?, S, ?> gpu, MemorySegment dst, List<DeviceRegion> regions, S stream) {
        long offset = 0;
        for (DeviceRegion region : regions) {
            gpu.doMemcpyDtoH(dst.asSlice(offset, region.bytes()), region.address(), region.bytes(), stream, true);
            offset += region.bytes();
        }
    }

    /**
     * One asynchronous copy per region of {@code src}, read back to back; a backend with a cheaper
     * way for many regions replaces it.
     */
    static <S> void scatter(
            AbstractVirtualGpu<?, ?, S, ?> gpu, List<DeviceRegion> regions, MemorySegment src, S stream) {
        long offset = 0;
        for (DeviceRegion region : regions) {
            gpu.doMemcpyHtoD(region.address(), src.asSlice(offset, region.bytes()), region.bytes(), stream, true);
            offset += region.bytes();
        }
    }

    /**
     * One copy per row (one copy in all where both sides are contiguous), queued on the default
     * stream and then waited for, so that a remote vGPU sends its rows back to back and waits once.
     */
    static <S> void memcpy2D(
            AbstractVirtualGpu<?, ?, S, ?> gpu, PitchedMemory dst, PitchedMemory src, long widthBytes, long height) {
        S stream = gpu.defaultStream();
        boolean contiguous = dst.pitch() == widthBytes && src.pitch() == widthBytes;
        long rows = contiguous ? 1 : height;
        long rowBytes = contiguous ? widthBytes * height : widthBytes;
        for (long row = 0; row < rows; row++) {
            long dstOffset = row * dst.pitch();
            long srcOffset = row * src.pitch();
            switch (dst) {
                case PitchedMemory.Device to
                when src instanceof PitchedMemory.Device from ->
                    gpu.doMemcpyDtoD(to.address() + dstOffset, from.address() + srcOffset, rowBytes, stream, true);
                case PitchedMemory.Device to
                when src instanceof PitchedMemory.Host from ->
                    gpu.doMemcpyHtoD(
                            to.address() + dstOffset,
                            from.memory().asSlice(srcOffset, rowBytes),
                            rowBytes,
                            stream,
                            true);
                case PitchedMemory.Host to
                when src instanceof PitchedMemory.Device from ->
                    gpu.doMemcpyDtoH(
                            to.memory().asSlice(dstOffset, rowBytes),
                            from.address() + srcOffset,
                            rowBytes,
                            stream,
                            true);
                default -> throw new IllegalStateException("memcpy2D between two host buffers passed the checks");
            }
        }
        gpu.doStreamSynchronize(stream);
    }

    /** One memset of 32-bit words per row, or one in all where the rows are back to back. */
    static <S> void memsetD2D32(
            AbstractVirtualGpu<?, ?, S, ?> gpu,
            long dst,
            long pitch,
            int value,
            long width,
            long height,
            S stream,
            boolean async) {
        if (pitch == width * Integer.BYTES) {
            gpu.doMemset(dst, value, Integer.BYTES, width * height, stream, async);
            return;
        }
        for (long row = 0; row < height; row++) {
            gpu.doMemset(dst + row * pitch, value, Integer.BYTES, width, stream, async);
        }
    }

    /** The pitch a backend is given: one row's own when there is one row, whose pitch CUDA leaves unused. */
    static long rowPitch(long pitch, long width, long height) {
        return height == 1 ? width * Integer.BYTES : pitch;
    }
}
