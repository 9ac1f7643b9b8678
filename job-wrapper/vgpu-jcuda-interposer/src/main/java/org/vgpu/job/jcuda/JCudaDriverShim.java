package org.vgpu.job.jcuda;

import static org.vgpu.job.jcuda.JCudaApi.DRIVER;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

import jcuda.LogLevel;
import jcuda.Pointer;
import jcuda.driver.CUDA_MEMCPY2D;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUdevprop;
import jcuda.driver.CUevent;
import jcuda.driver.CUfunction;
import jcuda.driver.CUhostFn;
import jcuda.driver.CUmodule;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import jcuda.driver.CUstreamCallback;

import org.vgpu.job.jcuda.JCudaSession.Handle;
import org.vgpu.runtime.api.ContextLimit;
import org.vgpu.runtime.api.DeviceAttribute;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.FunctionAttribute;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.MemoryInfo;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.PointerAttribute;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * {@code jcuda.driver.JCudaDriver}'s calls on the job's vGPUs: a program's {@code JCudaDriver.cuXxx(...)} becomes
 * {@code JCudaDriverShim.cuXxx(...)}, same name, same descriptor ({@link JCudaCallSites}). Each method is JCuda's
 * call's meaning on {@link VirtualGpu}; a JCudaDriver method not here fails by name. See README (JCuda programs) for
 * where vgpu differs.
 */
public final class JCudaDriverShim {
    private JCudaDriverShim() {}

    private static JCudaSession session() {
        return JCudaSession.get();
    }

    public static void setExceptionsEnabled(boolean enabled) {
        DRIVER.setExceptionsEnabled(enabled);
    }

    /** JCuda's native log level: the program's calls reach no JCuda native code under vgpu, so there is nothing to log. */
    public static void setLogLevel(LogLevel level) {}

    /** JCuda's helper: {@code value} rounded up to a multiple of {@code alignment}, a power of two. */
    public static int align(int value, int alignment) {
        return (value + alignment - 1) & -alignment;
    }

    // ---- devices and contexts

    public static int cuInit(int flags) {
        return DRIVER.call("cuInit", () -> {
            session();
        });
    }

    public static int cuDeviceGetCount(int[] count) {
        return DRIVER.call("cuDeviceGetCount", () -> {
            count[0] = session().deviceCount();
        });
    }

    public static int cuDeviceGet(CUdevice device, int ordinal) {
        return DRIVER.call("cuDeviceGet", () -> {
            session().device(ordinal);
            JCudaObjects.setNativePointer(device, ordinal);
        });
    }

    /** The name of the device behind the vGPU, as its driver gives it (the emulation's says it is one). */
    public static int cuDeviceGetName(byte[] name, int length, CUdevice device) {
        return DRIVER.call("cuDeviceGetName", () -> JCudaDeviceQueries.name(gpu(device), name, length));
    }

    public static int cuDeviceTotalMem(long[] bytes, CUdevice device) {
        return DRIVER.call("cuDeviceTotalMem", () -> {
            bytes[0] = gpu(device).deviceProperties().totalMemory();
        });
    }

    public static int cuDeviceComputeCapability(int[] major, int[] minor, CUdevice device) {
        return DRIVER.call("cuDeviceComputeCapability", () -> {
            VirtualGpu gpu = gpu(device);
            major[0] = gpu.deviceGetAttribute(DeviceAttribute.COMPUTE_CAPABILITY_MAJOR);
            minor[0] = gpu.deviceGetAttribute(DeviceAttribute.COMPUTE_CAPABILITY_MINOR);
        });
    }

    public static int cuDeviceGetAttribute(int[] value, int attribute, CUdevice device) {
        return DRIVER.call("cuDeviceGetAttribute", () -> {
            value[0] = gpu(device).deviceGetAttribute(DeviceAttribute.fromCuda(attribute));
        });
    }

    public static int cuDeviceGetProperties(CUdevprop properties, CUdevice device) {
        return DRIVER.call("cuDeviceGetProperties", () -> JCudaDeviceQueries.fill(gpu(device), properties));
    }

    public static int cuCtxCreate(CUcontext context, int flags, CUdevice device) {
        return DRIVER.call("cuCtxCreate", () -> {
            int ordinal = ordinal(device);
            session().makeCurrent(ordinal);
            JCudaObjects.setNativePointer(context, ordinal + 1L);
        });
    }

    public static int cuDevicePrimaryCtxRetain(CUcontext context, CUdevice device) {
        return DRIVER.call("cuDevicePrimaryCtxRetain", () -> {
            JCudaObjects.setNativePointer(context, ordinal(device) + 1L);
        });
    }

    public static int cuDevicePrimaryCtxRelease(CUdevice device) {
        return DRIVER.call("cuDevicePrimaryCtxRelease", () -> {
            ordinal(device);
        });
    }

    public static int cuCtxSetCurrent(CUcontext context) {
        return DRIVER.call("cuCtxSetCurrent", () -> {
            session().makeCurrent(contextDevice(context));
        });
    }

    public static int cuCtxGetCurrent(CUcontext context) {
        return DRIVER.call("cuCtxGetCurrent", () -> {
            JCudaObjects.setNativePointer(context, session().currentDevice() + 1L);
        });
    }

    public static int cuCtxGetDevice(CUdevice device) {
        return DRIVER.call("cuCtxGetDevice", () -> {
            JCudaObjects.setNativePointer(device, session().currentGpu().ctxGetDevice());
        });
    }

    public static int cuCtxSynchronize() {
        return DRIVER.call("cuCtxSynchronize", () -> session().synchronize());
    }

    /** As {@code cuCtxSetLimit} on the current device; a migration sets it again on the GPU the vGPU moves to. */
    public static int cuCtxSetLimit(int limit, long value) {
        return DRIVER.call(
                "cuCtxSetLimit", () -> session().currentGpu().ctxSetLimit(ContextLimit.fromCuda(limit), value));
    }

    public static int cuCtxGetLimit(long[] value, int limit) {
        return DRIVER.call("cuCtxGetLimit", () -> {
            value[0] = session().currentGpu().ctxGetLimit(ContextLimit.fromCuda(limit));
        });
    }

    public static int cuCtxDestroy(CUcontext context) {
        return DRIVER.call("cuCtxDestroy", () -> {
            session().reset(contextDevice(context));
            JCudaObjects.setNativePointer(context, 0);
        });
    }

    // ---- modules and functions

    public static int cuModuleLoad(CUmodule module, String fileName) {
        return DRIVER.call("cuModuleLoad", () -> {
            byte[] image;
            try {
                image = Files.readAllBytes(Path.of(fileName));
            } catch (NoSuchFileException e) {
                throw new VgpuException(ErrorCode.CUDA_ERROR_FILE_NOT_FOUND, "no module file " + fileName);
            } catch (IOException e) {
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_FILE_NOT_FOUND, "module file " + fileName + " cannot be read: " + e);
            }
            load(module, image);
        });
    }

    public static int cuModuleLoadData(CUmodule module, byte[] image) {
        return DRIVER.call("cuModuleLoadData", () -> load(module, image));
    }

    public static int cuModuleLoadData(CUmodule module, String image) {
        return DRIVER.call("cuModuleLoadData", () -> load(module, image.getBytes(StandardCharsets.UTF_8)));
    }

    /** The JIT options are not passed on: vgpu's backends choose their own (a migration loads the image again). */
    public static int cuModuleLoadDataEx(
            CUmodule module, Pointer image, int numOptions, int[] options, Pointer optionValues) {
        return DRIVER.call("cuModuleLoadDataEx", () -> {
            load(module, JCudaObjects.hostBytes(image, "module image"));
        });
    }

    public static int cuModuleLoadDataEx(
            CUmodule module, String image, int numOptions, int[] options, Pointer optionValues) {
        return cuModuleLoadData(module, image);
    }

    public static int cuModuleUnload(CUmodule module) {
        return DRIVER.call("cuModuleUnload", () -> {
            JCudaSession session = session();
            Handle<ModuleHandle> loaded = session.take(session.modules(), module, "module");
            session.device(loaded.device()).moduleUnload(loaded.handle());
        });
    }

    public static int cuModuleGetFunction(CUfunction function, CUmodule module, String name) {
        return DRIVER.call("cuModuleGetFunction", () -> {
            JCudaSession session = session();
            Handle<ModuleHandle> loaded = session.find(session.modules(), module, "module");
            FunctionHandle handle = session.device(loaded.device()).moduleGetFunction(loaded.handle(), name);
            session.give(session.functions(), function, loaded.device(), handle);
        });
    }

    public static int cuModuleGetGlobal(CUdeviceptr address, long[] bytes, CUmodule module, String name) {
        return DRIVER.call("cuModuleGetGlobal", () -> {
            JCudaSession session = session();
            Handle<ModuleHandle> loaded = session.find(session.modules(), module, "module");
            DeviceRegion global = session.device(loaded.device()).moduleGetGlobal(loaded.handle(), name);
            if (address != null) {
                JCudaObjects.setNativePointer(address, global.address());
            }
            if (bytes != null) {
                bytes[0] = global.bytes();
            }
        });
    }

    public static int cuFuncGetAttribute(int[] value, int attribute, CUfunction function) {
        return DRIVER.call("cuFuncGetAttribute", () -> {
            Handle<FunctionHandle> found = function(function);
            value[0] = session()
                    .device(found.device())
                    .funcGetAttribute(FunctionAttribute.fromCuda(attribute), found.handle());
        });
    }

    public static int cuFuncSetAttribute(CUfunction function, int attribute, int value) {
        return DRIVER.call("cuFuncSetAttribute", () -> {
            Handle<FunctionHandle> found = function(function);
            session()
                    .device(found.device())
                    .funcSetAttribute(found.handle(), FunctionAttribute.fromCuda(attribute), value);
        });
    }

    // ---- memory

    public static int cuMemGetInfo(long[] free, long[] total) {
        return DRIVER.call("cuMemGetInfo", () -> {
            MemoryInfo info = session().currentGpu().memGetInfo();
            free[0] = info.free();
            total[0] = info.total();
        });
    }

    public static int cuMemAlloc(CUdeviceptr pointer, long bytes) {
        return DRIVER.call("cuMemAlloc", () -> {
            long address = session().allocate(bytes);
            JCudaObjects.setNativePointer(pointer, address);
        });
    }

    public static int cuMemFree(CUdeviceptr pointer) {
        return DRIVER.call("cuMemFree", () -> session().free(JCudaObjects.deviceAddress(pointer)));
    }

    public static int cuMemAllocHost(Pointer pointer, long bytes) {
        return DRIVER.call("cuMemAllocHost", () -> session().allocateHost(pointer, bytes, 0));
    }

    /** Flags as {@link HostAllocFlags} says: portable and write-combined give pinned memory, mapped is refused. */
    public static int cuMemHostAlloc(Pointer pointer, long bytes, int flags) {
        return DRIVER.call("cuMemHostAlloc", () -> {
            HostAllocFlags.DRIVER.check(flags);
            session().allocateHost(pointer, bytes, flags);
        });
    }

    /** The flags the memory was allocated with; never CU_MEMHOSTALLOC_DEVICEMAP, which vgpu refuses. */
    public static int cuMemHostGetFlags(int[] flags, Pointer pointer) {
        return DRIVER.call("cuMemHostGetFlags", () -> {
            flags[0] = session().hostFlags(pointer);
        });
    }

    /** Refused, naming the call: a vGPU maps no host memory ({@link HostAllocFlags}). */
    public static int cuMemHostGetDevicePointer(CUdeviceptr devicePointer, Pointer pointer, int flags) {
        return DRIVER.call("cuMemHostGetDevicePointer", () -> {
            throw HostAllocFlags.DRIVER.mappedRefused("cuMemHostGetDevicePointer");
        });
    }

    public static int cuMemFreeHost(Pointer pointer) {
        return DRIVER.call("cuMemFreeHost", () -> session().freeHost(pointer));
    }

    public static int cuMemGetAddressRange(CUdeviceptr base, long[] size, CUdeviceptr pointer) {
        return DRIVER.call("cuMemGetAddressRange", () -> {
            long address = JCudaObjects.deviceAddress(pointer);
            DeviceRegion range = session().gpuOf(address).memGetAddressRange(address);
            if (base != null) {
                JCudaObjects.setNativePointer(base, range.address());
            }
            if (size != null) {
                size[0] = range.bytes();
            }
        });
    }

    public static int cuPointerGetAttribute(Pointer data, int attribute, CUdeviceptr pointer) {
        return DRIVER.call("cuPointerGetAttribute", () -> {
            long address = JCudaObjects.deviceAddress(pointer);
            PointerAttribute which = PointerAttribute.fromCuda(attribute);
            long value = session().gpuOf(address).pointerGetAttribute(which, address);
            boolean wide = which == PointerAttribute.DEVICE_POINTER
                    || which == PointerAttribute.RANGE_START_ADDR
                    || which == PointerAttribute.RANGE_SIZE;
            MemorySegment out = JCudaObjects.hostMemory(data, wide ? Long.BYTES : Integer.BYTES, "attribute value");
            if (wide) {
                out.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, value);
            } else {
                out.set(ValueLayout.JAVA_INT_UNALIGNED, 0, (int) value);
            }
        });
    }

    // ---- copies and memsets

    public static int cuMemcpyHtoD(CUdeviceptr dst, Pointer src, long bytes) {
        return DRIVER.call("cuMemcpyHtoD", () -> JCudaCopies.hostToDevice(JCudaObjects.deviceAddress(dst), src, bytes));
    }

    public static int cuMemcpyDtoH(Pointer dst, CUdeviceptr src, long bytes) {
        return DRIVER.call("cuMemcpyDtoH", () -> JCudaCopies.deviceToHost(dst, JCudaObjects.deviceAddress(src), bytes));
    }

    public static int cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, long bytes) {
        return DRIVER.call(
                "cuMemcpyDtoD",
                () -> JCudaCopies.deviceToDevice(
                        JCudaObjects.deviceAddress(dst), JCudaObjects.deviceAddress(src), bytes));
    }

    public static int cuMemcpyHtoDAsync(CUdeviceptr dst, Pointer src, long bytes, CUstream stream) {
        return DRIVER.call(
                "cuMemcpyHtoDAsync",
                () -> JCudaCopies.hostToDeviceAsync(JCudaObjects.deviceAddress(dst), src, bytes, stream));
    }

    public static int cuMemcpyDtoHAsync(Pointer dst, CUdeviceptr src, long bytes, CUstream stream) {
        return DRIVER.call(
                "cuMemcpyDtoHAsync",
                () -> JCudaCopies.deviceToHostAsync(dst, JCudaObjects.deviceAddress(src), bytes, stream));
    }

    public static int cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, long bytes, CUstream stream) {
        return DRIVER.call(
                "cuMemcpyDtoDAsync",
                () -> JCudaCopies.deviceToDeviceAsync(
                        JCudaObjects.deviceAddress(dst), JCudaObjects.deviceAddress(src), bytes, stream));
    }

    /** Host and device sides (CU_MEMORYTYPE_HOST, DEVICE, or UNIFIED with a device pointer); CUDA arrays are refused. */
    public static int cuMemcpy2D(CUDA_MEMCPY2D copy) {
        return DRIVER.call("cuMemcpy2D", () -> JCudaCopies.pitched(copy));
    }

    public static int cuMemsetD8(CUdeviceptr dst, byte value, long count) {
        return DRIVER.call("cuMemsetD8", () -> {
            long address = JCudaObjects.deviceAddress(dst);
            session().gpuOf(address).memsetD8(address, value, count);
        });
    }

    public static int cuMemsetD16(CUdeviceptr dst, short value, long count) {
        return DRIVER.call("cuMemsetD16", () -> {
            long address = JCudaObjects.deviceAddress(dst);
            session().gpuOf(address).memsetD16(address, value, count);
        });
    }

    public static int cuMemsetD32(CUdeviceptr dst, int value, long count) {
        return DRIVER.call("cuMemsetD32", () -> {
            long address = JCudaObjects.deviceAddress(dst);
            session().gpuOf(address).memsetD32(address, value, count);
        });
    }

    public static int cuMemsetD8Async(CUdeviceptr dst, byte value, long count, CUstream stream) {
        return DRIVER.call("cuMemsetD8Async", () -> {
            session()
                    .onStream(
                            stream,
                            (gpu, queue) -> gpu.memsetD8Async(JCudaObjects.deviceAddress(dst), value, count, queue));
        });
    }

    public static int cuMemsetD16Async(CUdeviceptr dst, short value, long count, CUstream stream) {
        return DRIVER.call("cuMemsetD16Async", () -> {
            session()
                    .onStream(
                            stream,
                            (gpu, queue) -> gpu.memsetD16Async(JCudaObjects.deviceAddress(dst), value, count, queue));
        });
    }

    public static int cuMemsetD32Async(CUdeviceptr dst, int value, long count, CUstream stream) {
        return DRIVER.call("cuMemsetD32Async", () -> {
            session()
                    .onStream(
                            stream,
                            (gpu, queue) -> gpu.memsetD32Async(JCudaObjects.deviceAddress(dst), value, count, queue));
        });
    }

    // ---- launch

    public static int cuLaunchKernel(
            CUfunction function,
            int gridX,
            int gridY,
            int gridZ,
            int blockX,
            int blockY,
            int blockZ,
            int sharedMemBytes,
            CUstream stream,
            Pointer kernelParams,
            Pointer extra) {
        return DRIVER.call("cuLaunchKernel", () -> {
            if (extra != null) {
                throw JCudaApi.unsupported("cuLaunchKernel with 'extra' (pass the parameters as kernelParams)");
            }
            JCudaSession session = session();
            Handle<FunctionHandle> kernel = function(function);
            VirtualGpu gpu = session.device(kernel.device());
            StreamHandle queue = JCudaObjects.nativePointer(stream) == 0
                    ? StreamHandle.DEFAULT
                    : session.find(session.streams(), stream, "stream").handle();
            session.awaitHostFunctions(kernel.device(), queue);
            gpu.launchKernel(
                    kernel.handle(),
                    new Dim3(gridX, gridY, gridZ),
                    new Dim3(blockX, blockY, blockZ),
                    sharedMemBytes,
                    queue,
                    JCudaObjects.kernelArguments(session.signature(kernel), kernelParams));
        });
    }

    // ---- streams and events

    public static int cuStreamCreate(CUstream stream, int flags) {
        return DRIVER.call("cuStreamCreate", () -> session().streamCreate(stream));
    }

    public static int cuStreamSynchronize(CUstream stream) {
        return DRIVER.call("cuStreamSynchronize", () -> session().streamSynchronize(stream));
    }

    public static int cuStreamQuery(CUstream stream) {
        return DRIVER.call(
                "cuStreamQuery",
                () -> session().streamQuery(stream) ? CUresult.CUDA_SUCCESS : CUresult.CUDA_ERROR_NOT_READY);
    }

    /**
     * {@code callback} runs in this JVM once the stream's earlier work is done, with its status; the stream's later
     * work waits for it ({@link StreamHostFunctions}).
     */
    public static int cuStreamAddCallback(CUstream stream, CUstreamCallback callback, Object userData, int flags) {
        return DRIVER.call("cuStreamAddCallback", () -> {
            StreamHostFunctions.requireCallback(callback, flags, "cuStreamAddCallback");
            session().addHostFunction(stream, DRIVER, false, status -> callback.call(stream, status, userData));
        });
    }

    /** As {@link #cuStreamAddCallback}, but not called when the stream's earlier work failed, as in CUDA. */
    public static int cuLaunchHostFunc(CUstream stream, CUhostFn function, Object userData) {
        return DRIVER.call("cuLaunchHostFunc", () -> {
            StreamHostFunctions.requireCallback(function, 0, "cuLaunchHostFunc");
            session().addHostFunction(stream, DRIVER, true, status -> function.call(userData));
        });
    }

    public static int cuStreamWaitEvent(CUstream stream, CUevent event, int flags) {
        return DRIVER.call("cuStreamWaitEvent", () -> session().streamWaitEvent(stream, event, "cuStreamWaitEvent"));
    }

    public static int cuStreamDestroy(CUstream stream) {
        return DRIVER.call("cuStreamDestroy", () -> session().streamDestroy(stream));
    }

    public static int cuEventCreate(CUevent event, int flags) {
        return DRIVER.call("cuEventCreate", () -> session().eventCreate(event));
    }

    public static int cuEventRecord(CUevent event, CUstream stream) {
        return DRIVER.call("cuEventRecord", () -> session().eventRecord(event, stream));
    }

    public static int cuEventQuery(CUevent event) {
        return DRIVER.call("cuEventQuery", () -> {
            return session().eventQuery(event) ? CUresult.CUDA_SUCCESS : CUresult.CUDA_ERROR_NOT_READY;
        });
    }

    public static int cuEventSynchronize(CUevent event) {
        return DRIVER.call("cuEventSynchronize", () -> session().eventSynchronize(event));
    }

    public static int cuEventElapsedTime(float[] milliseconds, CUevent start, CUevent end) {
        return DRIVER.call("cuEventElapsedTime", () -> session().eventElapsedTime(milliseconds, start, end));
    }

    public static int cuEventDestroy(CUevent event) {
        return DRIVER.call("cuEventDestroy", () -> session().eventDestroy(event));
    }

    // ---- helpers

    private static int ordinal(CUdevice device) {
        int ordinal = (int) JCudaObjects.nativePointer(device);
        session().device(ordinal);
        return ordinal;
    }

    private static VirtualGpu gpu(CUdevice device) {
        return session().device(ordinal(device));
    }

    private static int contextDevice(CUcontext context) {
        long value = JCudaObjects.nativePointer(context);
        if (value == 0) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_CONTEXT, "the context is null");
        }
        return (int) value - 1;
    }

    private static Handle<FunctionHandle> function(CUfunction function) {
        return session().find(session().functions(), function, "function");
    }

    private static void load(CUmodule module, byte[] image) {
        JCudaSession session = session();
        int device = session.currentDevice();
        session.give(session.modules(), module, device, session.device(device).moduleLoadData(image));
    }
}
