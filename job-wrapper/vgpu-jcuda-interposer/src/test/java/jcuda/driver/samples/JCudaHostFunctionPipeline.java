package jcuda.driver.samples;

import static jcuda.driver.JCudaDriver.*;

import java.nio.ByteOrder;
import java.nio.FloatBuffer;

import jcuda.Pointer;
import jcuda.Sizeof;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUhostFn;
import jcuda.driver.CUmodule;
import jcuda.driver.CUstream;
import jcudaprograms.Results;

/**
 * cuLaunchHostFunc as a host stage between two device stages, on two streams: a kernel scales each half, the half is
 * copied into pinned memory, a host function takes the square root of each value there, the half goes back up and a
 * second kernel scales it again. Right only if each host function ran after the copy before it and before the copy
 * after it. Takes the directory of scale.ptx and, optionally, how often to repeat.
 */
public class JCudaHostFunctionPipeline {
    private static final int N = 1 << 16;

    public static void main(String[] args) {
        Results.repeat(args, () -> run(args[0]));
    }

    private static void run(String ptxDirectory) {
        setExceptionsEnabled(true);
        cuInit(0);
        CUdevice device = new CUdevice();
        cuDeviceGet(device, 0);
        CUcontext context = new CUcontext();
        cuCtxCreate(context, 0, device);
        CUmodule module = new CUmodule();
        cuModuleLoad(module, ptxDirectory + "/scale.ptx");
        CUfunction scale = new CUfunction();
        cuModuleGetFunction(scale, module, "scale");

        long bytes = (long) N * Sizeof.FLOAT;
        int half = N / 2;
        long halfBytes = (long) half * Sizeof.FLOAT;
        float[] input = new float[N];
        for (int i = 0; i < N; i++) {
            input[i] = i % 300;
        }
        CUdeviceptr data = new CUdeviceptr();
        cuMemAlloc(data, bytes);
        cuMemcpyHtoD(data, Pointer.to(input), bytes);
        Pointer pinned = new Pointer();
        cuMemAllocHost(pinned, bytes);
        FloatBuffer values =
                pinned.getByteBuffer(0, bytes).order(ByteOrder.nativeOrder()).asFloatBuffer();
        CUhostFn squareRoots = userData -> {
            int first = (Integer) userData;
            for (int i = first; i < first + half; i++) {
                values.put(i, (float) Math.sqrt(values.get(i)));
            }
        };

        CUstream[] streams = {new CUstream(), new CUstream()};
        for (int s = 0; s < 2; s++) {
            CUstream stream = streams[s];
            cuStreamCreate(stream, 0);
            CUdeviceptr part = data.withByteOffset(s * halfBytes);
            Pointer hostPart = pinned.withByteOffset(s * halfBytes);
            launchScale(scale, part, 3.0f, half, stream);
            cuMemcpyDtoHAsync(hostPart, part, halfBytes, stream);
            cuLaunchHostFunc(stream, squareRoots, s * half);
            cuMemcpyHtoDAsync(part, hostPart, halfBytes, stream);
            launchScale(scale, part, 2.0f, half, stream);
        }
        float[] result = new float[N];
        cuCtxSynchronize();
        cuMemcpyDtoH(Pointer.to(result), data, bytes);

        float[] expected = new float[N];
        for (int i = 0; i < N; i++) {
            expected[i] = (float) Math.sqrt(input[i] * 3.0f + 1.0f) * 2.0f + 1.0f;
        }
        Results.report("host function pipeline", result, expected, 1e-6f);

        for (CUstream stream : streams) {
            cuStreamDestroy(stream);
        }
        cuMemFreeHost(pinned);
        cuMemFree(data);
        cuCtxDestroy(context);
    }

    private static void launchScale(CUfunction scale, CUdeviceptr part, float factor, int n, CUstream stream) {
        Pointer parameters = Pointer.to(Pointer.to(part), Pointer.to(new float[] {factor}), Pointer.to(new int[] {n}));
        cuLaunchKernel(scale, (n + 255) / 256, 1, 1, 256, 1, 1, 0, stream, parameters, null);
    }
}
