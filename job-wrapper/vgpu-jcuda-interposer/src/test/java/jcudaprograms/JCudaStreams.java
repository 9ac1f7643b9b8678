package jcudaprograms;

import static jcuda.driver.JCudaDriver.*;

import java.nio.ByteOrder;
import java.nio.FloatBuffer;

import jcuda.Pointer;
import jcuda.Sizeof;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;

/**
 * Copies and kernels overlapped on two streams: each chunk goes up, is scaled and comes back on its stream, from
 * page-locked host memory, twice: a warm-up pass, then one that events time, the second stream waiting for the
 * first one's last chunk.
 */
public class JCudaStreams {
    private static final int CHUNKS = 8;
    private static final int CHUNK = 1 << 14;

    public static void main(String[] args) {
        Results.repeat(args, () -> run(args));
    }

    static void run(String[] args) {
        setExceptionsEnabled(true);
        cuInit(0);
        CUdevice device = new CUdevice();
        cuDeviceGet(device, 0);
        CUcontext context = new CUcontext();
        cuCtxCreate(context, 0, device);
        CUmodule module = new CUmodule();
        cuModuleLoad(module, args[0] + "/scale.ptx");
        CUfunction scale = new CUfunction();
        cuModuleGetFunction(scale, module, "scale");

        int n = CHUNKS * CHUNK;
        long bytes = (long) n * Sizeof.FLOAT;
        Pointer host = new Pointer();
        cuMemAllocHost(host, bytes);
        FloatBuffer values =
                host.getByteBuffer(0, bytes).order(ByteOrder.nativeOrder()).asFloatBuffer();
        for (int i = 0; i < n; i++) {
            values.put(i, i % 1000);
        }
        CUdeviceptr data = new CUdeviceptr();
        cuMemAlloc(data, bytes);

        CUstream[] streams = {new CUstream(), new CUstream()};
        for (CUstream stream : streams) {
            cuStreamCreate(stream, 0);
        }
        CUevent start = new CUevent();
        CUevent firstDone = new CUevent();
        CUevent stop = new CUevent();
        cuEventCreate(start, 0);
        cuEventCreate(firstDone, 0);
        cuEventCreate(stop, 0);

        // the first pass warms up, untimed; the second is timed with events
        for (int pass = 0; pass < 2; pass++) {
            if (pass == 1) {
                cuEventRecord(start, streams[0]);
            }
            for (int chunk = 0; chunk < CHUNKS; chunk++) {
                CUstream stream = streams[chunk % 2];
                long offset = (long) chunk * CHUNK * Sizeof.FLOAT;
                CUdeviceptr part = data.withByteOffset(offset);
                Pointer hostPart = host.withByteOffset(offset);
                cuMemcpyHtoDAsync(part, hostPart, (long) CHUNK * Sizeof.FLOAT, stream);
                Pointer parameters = Pointer.to(
                        Pointer.to(part), Pointer.to(new float[] {2.0f + chunk}), Pointer.to(new int[] {CHUNK}));
                cuLaunchKernel(scale, CHUNK / 256, 1, 1, 256, 1, 1, 0, stream, parameters, null);
                cuMemcpyDtoHAsync(hostPart, part, (long) CHUNK * Sizeof.FLOAT, stream);
            }
            if (pass == 0) {
                cuCtxSynchronize();
            }
        }
        cuEventRecord(firstDone, streams[0]);
        cuStreamWaitEvent(streams[1], firstDone, 0);
        cuEventRecord(stop, streams[1]);
        cuEventSynchronize(stop);
        float[] milliseconds = new float[1];
        cuEventElapsedTime(milliseconds, start, stop);
        boolean idle = cuStreamQuery(streams[0]) == CUresult.CUDA_SUCCESS
                && cuStreamQuery(streams[1]) == CUresult.CUDA_SUCCESS
                && cuEventQuery(stop) == CUresult.CUDA_SUCCESS;

        float[] result = new float[n];
        values.get(0, result);
        float[] expected = new float[n];
        for (int i = 0; i < n; i++) {
            @SuppressWarnings("NarrowCalculation") // the chunk's number: i / CHUNK rounds down on purpose
            float factor = 2.0f + i / CHUNK;
            expected[i] = ((i % 1000) * factor + 1.0f) * factor + 1.0f;
        }
        Results.report("streams and events", result, expected, 0f);
        System.out.println("streams and events: both streams idle after the last event: " + idle
                + ", elapsed time measured: " + (milliseconds[0] >= 0));

        for (CUstream stream : streams) {
            cuStreamDestroy(stream);
        }
        cuEventDestroy(start);
        cuEventDestroy(firstDone);
        cuEventDestroy(stop);
        cuMemFree(data);
        cuMemFreeHost(host);
        cuCtxDestroy(context);
    }
}
