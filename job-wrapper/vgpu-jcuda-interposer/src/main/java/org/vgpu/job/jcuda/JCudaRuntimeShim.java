package org.vgpu.job.jcuda;

import static org.vgpu.job.jcuda.JCudaApi.RUNTIME;

import java.lang.foreign.MemorySegment;

import jcuda.LogLevel;
import jcuda.Pointer;
import jcuda.runtime.cudaDeviceProp;
import jcuda.runtime.cudaError;
import jcuda.runtime.cudaEvent_t;
import jcuda.runtime.cudaHostFn;
import jcuda.runtime.cudaMemcpyKind;
import jcuda.runtime.cudaStreamCallback;
import jcuda.runtime.cudaStream_t;

import org.vgpu.runtime.api.ContextLimit;
import org.vgpu.runtime.api.DeviceAttribute;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.MemoryInfo;
import org.vgpu.runtime.api.VgpuException;

/**
 * The runtime-API calls common JCuda programs make ({@code jcuda.runtime.JCuda}), on the same vGPUs, handles and
 * current device as the driver shim's: {@code cudaMalloc}'s pointer is a window address, a {@code cudaStream_t} and a
 * {@code CUstream} made from it name the same stream. Kernels are launched with the driver API's {@code
 * cuLaunchKernel}, as JCuda programs do.
 */
public final class JCudaRuntimeShim {
    private JCudaRuntimeShim() {}

    private static JCudaSession session() {
        return JCudaSession.get();
    }

    public static void setExceptionsEnabled(boolean enabled) {
        RUNTIME.setExceptionsEnabled(enabled);
    }

    /** JCuda's native log level: the program's calls reach no JCuda native code under vgpu, so there is nothing to log. */
    public static void setLogLevel(LogLevel level) {}

    public static int cudaGetDeviceCount(int[] count) {
        return RUNTIME.call("cudaGetDeviceCount", () -> {
            count[0] = session().deviceCount();
        });
    }

    /** As the device behind vGPU {@code device} answers now ({@link JCudaDeviceQueries}). */
    public static int cudaGetDeviceProperties(cudaDeviceProp properties, int device) {
        return RUNTIME.call(
                "cudaGetDeviceProperties",
                () -> JCudaDeviceQueries.fill(session().device(device), properties));
    }

    /** The runtime API's {@code cudaDeviceAttr} numbers are the driver API's {@code CUdevice_attribute} numbers. */
    public static int cudaDeviceGetAttribute(int[] value, int attribute, int device) {
        return RUNTIME.call("cudaDeviceGetAttribute", () -> {
            value[0] = session().device(device).deviceGetAttribute(DeviceAttribute.fromCuda(attribute));
        });
    }

    public static int cudaSetDevice(int device) {
        return RUNTIME.call("cudaSetDevice", () -> session().makeCurrent(device));
    }

    public static int cudaGetDevice(int[] device) {
        return RUNTIME.call("cudaGetDevice", () -> {
            device[0] = session().currentDevice();
        });
    }

    public static int cudaDeviceSynchronize() {
        return RUNTIME.call("cudaDeviceSynchronize", () -> session().synchronize());
    }

    /** As {@code cudaDeviceSetLimit} on the current device; a migration sets it again on the GPU the vGPU moves to. */
    public static int cudaDeviceSetLimit(int limit, long value) {
        return RUNTIME.call(
                "cudaDeviceSetLimit", () -> session().currentGpu().ctxSetLimit(ContextLimit.fromCuda(limit), value));
    }

    public static int cudaDeviceGetLimit(long[] value, int limit) {
        return RUNTIME.call("cudaDeviceGetLimit", () -> {
            value[0] = session().currentGpu().ctxGetLimit(ContextLimit.fromCuda(limit));
        });
    }

    public static int cudaDeviceReset() {
        return RUNTIME.call("cudaDeviceReset", () -> session().reset(session().currentDevice()));
    }

    /** Errors are returned by each call; none is kept for later. */
    public static int cudaGetLastError() {
        return cudaError.cudaSuccess;
    }

    public static int cudaMemGetInfo(long[] free, long[] total) {
        return RUNTIME.call("cudaMemGetInfo", () -> {
            MemoryInfo info = session().currentGpu().memGetInfo();
            free[0] = info.free();
            total[0] = info.total();
        });
    }

    public static int cudaMalloc(Pointer pointer, long bytes) {
        return RUNTIME.call(
                "cudaMalloc",
                () -> JCudaObjects.setNativePointer(pointer, session().allocate(bytes)));
    }

    public static int cudaFree(Pointer pointer) {
        return RUNTIME.call("cudaFree", () -> {
            long address = JCudaObjects.deviceAddress(pointer);
            // cudaFree(NULL) frees nothing, as in CUDA; programs call it to set up the device's context
            if (address != 0) {
                session().free(address);
            }
        });
    }

    public static int cudaMallocHost(Pointer pointer, long bytes) {
        return RUNTIME.call("cudaMallocHost", () -> session().allocateHost(pointer, bytes, 0));
    }

    /** Flags as {@link HostAllocFlags} says: portable and write-combined give pinned memory, mapped is refused. */
    public static int cudaHostAlloc(Pointer pointer, long bytes, int flags) {
        return RUNTIME.call("cudaHostAlloc", () -> {
            HostAllocFlags.RUNTIME.check(flags);
            session().allocateHost(pointer, bytes, flags);
        });
    }

    /** Refused, naming the call: a vGPU maps no host memory ({@link HostAllocFlags}). */
    public static int cudaHostGetDevicePointer(Pointer devicePointer, Pointer hostPointer, int flags) {
        return RUNTIME.call("cudaHostGetDevicePointer", () -> {
            throw HostAllocFlags.RUNTIME.mappedRefused("cudaHostGetDevicePointer");
        });
    }

    public static int cudaFreeHost(Pointer pointer) {
        return RUNTIME.call("cudaFreeHost", () -> session().freeHost(pointer));
    }

    public static int cudaMemcpy(Pointer dst, Pointer src, long bytes, int kind) {
        return RUNTIME.call("cudaMemcpy", () -> copy(dst, src, bytes, kind, null));
    }

    public static int cudaMemcpyAsync(Pointer dst, Pointer src, long bytes, int kind, cudaStream_t stream) {
        return RUNTIME.call("cudaMemcpyAsync", () -> copy(dst, src, bytes, kind, stream));
    }

    public static int cudaMemset(Pointer pointer, int value, long bytes) {
        return RUNTIME.call("cudaMemset", () -> {
            long address = JCudaObjects.deviceAddress(pointer);
            session().gpuOf(address).memsetD8(address, (byte) value, bytes);
        });
    }

    public static int cudaMemsetAsync(Pointer pointer, int value, long bytes, cudaStream_t stream) {
        return RUNTIME.call("cudaMemsetAsync", () -> {
            session()
                    .onStream(
                            stream,
                            (gpu, queue) ->
                                    gpu.memsetD8Async(JCudaObjects.deviceAddress(pointer), (byte) value, bytes, queue));
        });
    }

    public static int cudaStreamCreate(cudaStream_t stream) {
        return RUNTIME.call("cudaStreamCreate", () -> session().streamCreate(stream));
    }

    public static int cudaStreamSynchronize(cudaStream_t stream) {
        return RUNTIME.call("cudaStreamSynchronize", () -> session().streamSynchronize(stream));
    }

    /** cudaErrorNotReady while work or a host function queued on the stream has not finished. */
    public static int cudaStreamQuery(cudaStream_t stream) {
        return RUNTIME.call(
                "cudaStreamQuery",
                () -> session().streamQuery(stream) ? cudaError.cudaSuccess : cudaError.cudaErrorNotReady);
    }

    public static int cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, int flags) {
        return RUNTIME.call(
                "cudaStreamWaitEvent", () -> session().streamWaitEvent(stream, event, "cudaStreamWaitEvent"));
    }

    /** As {@code cuStreamAddCallback} ({@link JCudaDriverShim#cuStreamAddCallback}). */
    public static int cudaStreamAddCallback(
            cudaStream_t stream, cudaStreamCallback callback, Object userData, int flags) {
        return RUNTIME.call("cudaStreamAddCallback", () -> {
            StreamHostFunctions.requireCallback(callback, flags, "cudaStreamAddCallback");
            session().addHostFunction(stream, RUNTIME, false, status -> callback.call(stream, status, userData));
        });
    }

    /** As {@code cuLaunchHostFunc} ({@link JCudaDriverShim#cuLaunchHostFunc}). */
    public static int cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn function, Object userData) {
        return RUNTIME.call("cudaLaunchHostFunc", () -> {
            StreamHostFunctions.requireCallback(function, 0, "cudaLaunchHostFunc");
            session().addHostFunction(stream, RUNTIME, true, status -> function.call(userData));
        });
    }

    public static int cudaStreamDestroy(cudaStream_t stream) {
        return RUNTIME.call("cudaStreamDestroy", () -> session().streamDestroy(stream));
    }

    public static int cudaEventCreate(cudaEvent_t event) {
        return RUNTIME.call("cudaEventCreate", () -> session().eventCreate(event));
    }

    public static int cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
        return RUNTIME.call("cudaEventRecord", () -> session().eventRecord(event, stream));
    }

    /** cudaErrorNotReady while the work before the event's last record has not finished. */
    public static int cudaEventQuery(cudaEvent_t event) {
        return RUNTIME.call(
                "cudaEventQuery",
                () -> session().eventQuery(event) ? cudaError.cudaSuccess : cudaError.cudaErrorNotReady);
    }

    public static int cudaEventSynchronize(cudaEvent_t event) {
        return RUNTIME.call("cudaEventSynchronize", () -> session().eventSynchronize(event));
    }

    public static int cudaEventElapsedTime(float[] milliseconds, cudaEvent_t start, cudaEvent_t end) {
        return RUNTIME.call("cudaEventElapsedTime", () -> session().eventElapsedTime(milliseconds, start, end));
    }

    public static int cudaEventDestroy(cudaEvent_t event) {
        return RUNTIME.call("cudaEventDestroy", () -> session().eventDestroy(event));
    }

    /** cudaMemcpy's four directions; cudaMemcpyDefault tells them by whether each side is a device pointer. */
    private static void copy(Pointer dst, Pointer src, long bytes, int kind, cudaStream_t stream) {
        boolean toDevice = kind == cudaMemcpyKind.cudaMemcpyDefault
                ? JCudaObjects.isDevicePointer(dst)
                : kind == cudaMemcpyKind.cudaMemcpyHostToDevice || kind == cudaMemcpyKind.cudaMemcpyDeviceToDevice;
        boolean fromDevice = kind == cudaMemcpyKind.cudaMemcpyDefault
                ? JCudaObjects.isDevicePointer(src)
                : kind == cudaMemcpyKind.cudaMemcpyDeviceToHost || kind == cudaMemcpyKind.cudaMemcpyDeviceToDevice;
        if (kind < cudaMemcpyKind.cudaMemcpyHostToHost || kind > cudaMemcpyKind.cudaMemcpyDefault) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "no cudaMemcpyKind " + kind);
        }
        if (toDevice && fromDevice) {
            long to = JCudaObjects.deviceAddress(dst);
            long from = JCudaObjects.deviceAddress(src);
            if (stream == null) {
                JCudaCopies.deviceToDevice(to, from, bytes);
            } else {
                JCudaCopies.deviceToDeviceAsync(to, from, bytes, stream);
            }
        } else if (toDevice) {
            if (stream == null) {
                JCudaCopies.hostToDevice(JCudaObjects.deviceAddress(dst), src, bytes);
            } else {
                JCudaCopies.hostToDeviceAsync(JCudaObjects.deviceAddress(dst), src, bytes, stream);
            }
        } else if (fromDevice) {
            if (stream == null) {
                JCudaCopies.deviceToHost(dst, JCudaObjects.deviceAddress(src), bytes);
            } else {
                JCudaCopies.deviceToHostAsync(dst, JCudaObjects.deviceAddress(src), bytes, stream);
            }
        } else {
            MemorySegment.copy(
                    JCudaObjects.hostMemory(src, bytes, "source"),
                    0,
                    JCudaObjects.hostMemory(dst, bytes, "destination"),
                    0,
                    bytes);
        }
    }
}
