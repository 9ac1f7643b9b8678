package org.vgpu.runtime.remote.worker;

import java.time.Duration;

import org.vgpu.runtime.api.DirectDriverCalls;

/**
 * The direct driver calls of vgpu's {@code libcuda.so.1} serving a CUDA program in the program's own process: while a
 * session's vGPU runs on a GPU of this process, the library makes its hottest calls (launches, copies,
 * synchronizations) to the node's driver itself, with the handles {@link InProcessWorker.Session} looks up, and every
 * migration of the vGPU stops them first ({@link DirectDriverCalls}). The native methods are the library's, registered
 * by it when it starts this process's JVM: nothing else creates this class.
 */
final class LibraryDirectCalls implements DirectDriverCalls.DirectCallers {
    /** A driver handle looked up while there is none to give: the call is served as every other one. */
    static final long NONE = -1;

    /** The job's index of the vGPU, as the library knows its devices. */
    private final int vgpu;

    LibraryDirectCalls(int vgpu) {
        this.vgpu = vgpu;
    }

    @Override
    public boolean stop(Duration timeout) {
        return stop(vgpu, timeout.toNanos());
    }

    @Override
    public void resume() {
        resume(vgpu);
    }

    /** The library stops vGPU {@code vgpu}'s direct calls: true once none is under way, false after the timeout. */
    private static native boolean stop(int vgpu, long timeoutNanos);

    /** The library lets vGPU {@code vgpu}'s direct calls start again, with handles asked anew. */
    private static native void resume(int vgpu);
}
