package jcuda.runtime.samples;

import static jcuda.driver.JCudaDriver.*;
import static jcuda.runtime.JCuda.*;

import java.nio.ByteOrder;
import java.nio.FloatBuffer;

import jcuda.Pointer;
import jcuda.Sizeof;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.CUstream;
import jcuda.driver.JCudaDriver;
import jcuda.runtime.JCuda;
import jcuda.runtime.cudaMemcpyKind;
import jcuda.runtime.cudaStream_t;
import jcudaprograms.Results;

/**
 * cudaStreamAddCallback on two streams: each chunk goes up, is scaled and comes back into pinned memory, then a
 * callback takes the chunk out of the pinned memory, and the work queued after the callback on that stream clears
 * the chunk on the device and copies the zeros back over it. The callbacks see the scaled values only if each runs
 * after the copy before it and before the work after it. Takes the directory of scale.ptx and, optionally, how often
 * to repeat.
 */
public class JCudaStreamCallbacks {
    private static final int CHUNKS = 6;
    private static final int CHUNK = 1 << 14;

    public static void main(String[] args) {
        Results.repeat(args, () -> run(args[0]));
    }

    private static void run(String ptxDirectory) {
        JCuda.setExceptionsEnabled(true);
        JCudaDriver.setExceptionsEnabled(true);
        cuInit(0);
        CUdevice device = new CUdevice();
        cuDeviceGet(device, 0);
        CUcontext context = new CUcontext();
        cuCtxCreate(context, 0, device);
        CUmodule module = new CUmodule();
        cuModuleLoad(module, ptxDirectory + "/scale.ptx");
        CUfunction scale = new CUfunction();
        cuModuleGetFunction(scale, module, "scale");

        int n = CHUNKS * CHUNK;
        long bytes = (long) n * Sizeof.FLOAT;
        long chunkBytes = (long) CHUNK * Sizeof.FLOAT;
        Pointer host = new Pointer();
        cudaHostAlloc(host, bytes, cudaHostAllocDefault);
        FloatBuffer values =
                host.getByteBuffer(0, bytes).order(ByteOrder.nativeOrder()).asFloatBuffer();
        for (int i = 0; i < n; i++) {
            values.put(i, i % 500);
        }
        Pointer data = new Pointer();
        cudaMalloc(data, bytes);
        cudaStream_t[] streams = {new cudaStream_t(), new cudaStream_t()};
        for (cudaStream_t stream : streams) {
            cudaStreamCreate(stream);
        }

        float[] seen = new float[n];
        int[] failedStatus = new int[1];
        for (int chunk = 0; chunk < CHUNKS; chunk++) {
            cudaStream_t stream = streams[chunk % 2];
            long offset = chunk * chunkBytes;
            Pointer part = data.withByteOffset(offset);
            Pointer hostPart = host.withByteOffset(offset);
            cudaMemcpyAsync(part, hostPart, chunkBytes, cudaMemcpyKind.cudaMemcpyHostToDevice, stream);
            Pointer parameters =
                    Pointer.to(Pointer.to(part), Pointer.to(new float[] {2.0f + chunk}), Pointer.to(new int[] {CHUNK}));
            cuLaunchKernel(scale, CHUNK / 256, 1, 1, 256, 1, 1, 0, new CUstream(stream), parameters, null);
            cudaMemcpyAsync(hostPart, part, chunkBytes, cudaMemcpyKind.cudaMemcpyDeviceToHost, stream);
            cudaStreamAddCallback(
                    stream,
                    (calledOn, status, userData) -> {
                        int done = (Integer) userData;
                        if (status != 0) {
                            failedStatus[0] = status;
                        }
                        values.get(done * CHUNK, seen, done * CHUNK, CHUNK);
                    },
                    chunk,
                    0);
            cudaMemsetAsync(part, 0, chunkBytes, stream);
            cudaMemcpyAsync(hostPart, part, chunkBytes, cudaMemcpyKind.cudaMemcpyDeviceToHost, stream);
        }
        cudaDeviceSynchronize();

        float[] expected = new float[n];
        boolean cleared = true;
        for (int i = 0; i < n; i++) {
            int chunk = i / CHUNK;
            expected[i] = (i % 500) * (2.0f + chunk) + 1.0f;
            cleared &= values.get(i) == 0.0f;
        }
        Results.report("runtime stream callbacks", seen, expected, 0f);
        System.out.println("runtime stream callbacks: every status success: " + (failedStatus[0] == 0)
                + ", the work after the callbacks cleared the pinned memory: " + cleared);

        for (cudaStream_t stream : streams) {
            cudaStreamDestroy(stream);
        }
        cudaFree(data);
        cudaFreeHost(host);
        cuCtxDestroy(context);
    }
}
