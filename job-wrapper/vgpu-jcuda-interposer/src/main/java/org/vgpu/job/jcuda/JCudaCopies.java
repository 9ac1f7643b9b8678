package org.vgpu.job.jcuda;

import java.lang.foreign.MemorySegment;

import jcuda.NativePointerObject;
import jcuda.Pointer;
import jcuda.driver.CUDA_MEMCPY2D;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUmemorytype;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.PitchedMemory;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * Copies between a program's host pointers ({@code Pointer.to(...)}, cuMemAllocHost, an array of device pointers)
 * and device addresses, for the driver and the runtime shims alike. Each copy goes to the vGPU whose window holds its device address, as with
 * CUDA's unified addressing; a copy between two vGPUs goes through the host.
 *
 * <p>An asynchronous copy from or to a Java array (which JCuda copies synchronously too: the array may move) is made
 * after the stream's earlier work, then synchronously (so is one from or to an array of device pointers); one from or to page-locked memory (cuMemAllocHost, a direct
 * buffer) is queued on the stream.
 */
final class JCudaCopies {
    private JCudaCopies() {}

    static void hostToDevice(long dst, Pointer src, long bytes) {
        JCudaSession.get().gpuOf(dst).memcpyHtoD(dst, JCudaObjects.copySource(src, bytes, "source"), bytes);
    }

    static void deviceToHost(Pointer dst, long src, long bytes) {
        VirtualGpu gpu = JCudaSession.get().gpuOf(src);
        if (JCudaObjects.isPointerArray(dst)) {
            MemorySegment table = JCudaObjects.pointerTable(dst, "destination");
            gpu.memcpyDtoH(JCudaObjects.fromOffset(dst, table, bytes, "destination"), src, bytes);
            JCudaObjects.writeBackPointers(dst, table);
        } else {
            gpu.memcpyDtoH(JCudaObjects.hostMemory(dst, bytes, "destination"), src, bytes);
        }
    }

    static void deviceToDevice(long dst, long src, long bytes) {
        JCudaSession session = JCudaSession.get();
        VirtualGpu to = session.gpuOf(dst);
        VirtualGpu from = session.gpuOf(src);
        if (to == from) {
            to.memcpyDtoD(dst, src, bytes);
            return;
        }
        MemorySegment staging = MemorySegment.ofArray(new byte[Math.toIntExact(bytes)]);
        from.memcpyDtoH(staging, src, bytes);
        to.memcpyHtoD(dst, staging, bytes);
    }

    static void hostToDeviceAsync(long dst, Pointer src, long bytes, NativePointerObject stream) {
        JCudaSession.get().onStream(stream, (gpu, queue) -> {
            MemorySegment host = JCudaObjects.copySource(src, bytes, "source");
            if (host.isNative()) {
                gpu.memcpyHtoDAsync(dst, host, bytes, queue);
            } else {
                gpu.streamSynchronize(queue);
                gpu.memcpyHtoD(dst, host, bytes);
            }
        });
    }

    static void deviceToHostAsync(Pointer dst, long src, long bytes, NativePointerObject stream) {
        JCudaSession.get().onStream(stream, (gpu, queue) -> {
            if (JCudaObjects.isPointerArray(dst)) {
                gpu.streamSynchronize(queue);
                deviceToHost(dst, src, bytes);
                return;
            }
            MemorySegment host = JCudaObjects.hostMemory(dst, bytes, "destination");
            if (host.isNative()) {
                gpu.memcpyDtoHAsync(host, src, bytes, queue);
            } else {
                gpu.streamSynchronize(queue);
                gpu.memcpyDtoH(host, src, bytes);
            }
        });
    }

    /**
     * A 2-D copy between host and device sides (CU_MEMORYTYPE_HOST, DEVICE, or UNIFIED with a device pointer), made
     * by the vGPU of its device side (the destination's where both are); CUDA arrays are refused.
     */
    static void pitched(CUDA_MEMCPY2D copy) {
        PitchedMemory dst = side(
                copy.dstMemoryType,
                copy.dstHost,
                copy.dstDevice,
                copy.dstXInBytes,
                copy.dstY,
                copy.dstPitch,
                copy,
                "destination");
        PitchedMemory src = side(
                copy.srcMemoryType,
                copy.srcHost,
                copy.srcDevice,
                copy.srcXInBytes,
                copy.srcY,
                copy.srcPitch,
                copy,
                "source");
        long device = dst instanceof PitchedMemory.Device onDevice
                ? onDevice.address()
                : src instanceof PitchedMemory.Device fromDevice ? fromDevice.address() : 0;
        if (device == 0) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "cuMemcpy2D between two host sides");
        }
        JCudaSession.get().gpuOf(device).memcpy2D(dst, src, copy.WidthInBytes, copy.Height);
    }

    /** One side of a 2-D copy, from its first row's first byte on. */
    private static PitchedMemory side(
            int type, Pointer host, CUdeviceptr device, long x, long y, long pitch, CUDA_MEMCPY2D copy, String what) {
        long offset = x + y * pitch;
        boolean onDevice = type == CUmemorytype.CU_MEMORYTYPE_DEVICE
                || (type == CUmemorytype.CU_MEMORYTYPE_UNIFIED && device != null);
        if (onDevice) {
            return new PitchedMemory.Device(JCudaObjects.deviceAddress(device) + offset, pitch);
        }
        if (type == CUmemorytype.CU_MEMORYTYPE_HOST) {
            long rows = copy.Height == 0 ? 0 : (copy.Height - 1) * pitch + copy.WidthInBytes;
            return new PitchedMemory.Host(
                    JCudaObjects.hostMemory(host, offset + rows, what).asSlice(offset), pitch);
        }
        throw JCudaApi.unsupported("cuMemcpy2D with a CUDA array or memory type " + type);
    }

    /** Queued on {@code stream}'s vGPU, which must hold both addresses (no copy between vGPUs on a stream). */
    static void deviceToDeviceAsync(long dst, long src, long bytes, NativePointerObject stream) {
        JCudaSession.get().onStream(stream, (gpu, queue) -> gpu.memcpyDtoDAsync(dst, src, bytes, queue));
    }
}
