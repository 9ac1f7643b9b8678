package jcuda.driver.samples;

import static jcuda.driver.JCudaDriver.*;

import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.List;

import jcuda.Pointer;
import jcuda.Sizeof;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.CUstream;
import jcudaprograms.Results;

/**
 * cuStreamAddCallback on one stream, as an iterative solver reports its progress: each iteration scales the data on
 * the device and copies it into the same pinned buffer, and a callback sums the buffer on the host. Each sum is the
 * iteration's only if its callback ran after that iteration's copy and before the next one's. Takes the directory of
 * scale.ptx and, optionally, how often to repeat.
 */
public class JCudaDriverStreamCallbacks {
    private static final int ITERATIONS = 8;
    private static final int N = 1 << 15;

    /** What a callback is handed: its iteration, and where it puts its sum. */
    private record Progress(int iteration, float[] sums) {}

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
        float[] start = new float[N];
        for (int i = 0; i < N; i++) {
            start[i] = (i % 64) / 64.0f;
        }
        CUdeviceptr data = new CUdeviceptr();
        cuMemAlloc(data, bytes);
        cuMemcpyHtoD(data, Pointer.to(start), bytes);
        Pointer pinned = new Pointer();
        cuMemAllocHost(pinned, bytes);
        FloatBuffer values =
                pinned.getByteBuffer(0, bytes).order(ByteOrder.nativeOrder()).asFloatBuffer();
        CUstream stream = new CUstream();
        cuStreamCreate(stream, 0);

        float[] sums = new float[ITERATIONS];
        List<Integer> order = new ArrayList<>();
        for (int iteration = 0; iteration < ITERATIONS; iteration++) {
            Pointer parameters =
                    Pointer.to(Pointer.to(data), Pointer.to(new float[] {0.5f}), Pointer.to(new int[] {N}));
            cuLaunchKernel(scale, N / 256, 1, 1, 256, 1, 1, 0, stream, parameters, null);
            cuMemcpyDtoHAsync(pinned, data, bytes, stream);
            cuStreamAddCallback(
                    stream,
                    (calledOn, status, userData) -> {
                        Progress progress = (Progress) userData;
                        float sum = 0;
                        for (int i = 0; i < N; i++) {
                            sum += values.get(i);
                        }
                        progress.sums()[progress.iteration()] = status == 0 ? sum : Float.NaN;
                        synchronized (order) {
                            order.add(progress.iteration());
                        }
                    },
                    new Progress(iteration, sums),
                    0);
        }
        cuStreamSynchronize(stream);

        float[] expected = new float[ITERATIONS];
        float[] now = start.clone();
        for (int iteration = 0; iteration < ITERATIONS; iteration++) {
            float sum = 0;
            for (int i = 0; i < N; i++) {
                now[i] = now[i] * 0.5f + 1.0f;
                sum += now[i];
            }
            expected[iteration] = sum;
        }
        Results.report("driver stream callbacks", sums, expected, 0f);
        System.out.println("driver stream callbacks: called in stream order: " + order);

        cuStreamDestroy(stream);
        cuMemFreeHost(pinned);
        cuMemFree(data);
        cuCtxDestroy(context);
    }
}
