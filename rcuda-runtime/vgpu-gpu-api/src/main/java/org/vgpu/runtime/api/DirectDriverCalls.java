package org.vgpu.runtime.api;

import java.time.Duration;
import java.util.Optional;
import java.util.function.Function;

/**
 * A vGPU whose calls a caller in this process may make to the node's driver itself, past vgpu's runtime, while the
 * vGPU runs on a GPU of this process ({@link DriverHandles}); and which stops those calls while it moves, since a move
 * replaces every handle behind the vGPU and may take it to a GPU of another process or host.
 *
 * <p>The rule: a direct call is made only between a {@link DirectCallers#resume} and the next {@link
 * DirectCallers#stop}, with handles asked after that resume; whatever was asked before a stop is asked again after it.
 */
public interface DirectDriverCalls {
    /**
     * Runs {@code use} with the driver's handles of the GPU this vGPU runs on now, while it cannot move; empty, without
     * running it, while the vGPU runs on no GPU of this process (a remote worker, the CPU emulation).
     *
     * @throws VgpuException as {@code use} does (a handle that is none of this vGPU's)
     */
    <T> Optional<T> withDriverHandles(Function<DriverHandles, T> use);

    /** Adds {@code callers}, stopped before each move of this vGPU and resumed after it (whether it moved or not). */
    void addDirectCallers(DirectCallers callers);

    /** Forgets {@code callers}: their program is done with this vGPU. */
    void removeDirectCallers(DirectCallers callers);

    /** Callers that call the driver past this vGPU's runtime. */
    interface DirectCallers {
        /**
         * Stops them: returns true once none of their calls is under way and none starts until {@link #resume}; false
         * when calls were still under way after {@code timeout} (they are stopped all the same until {@link #resume},
         * and the move does not happen).
         */
        boolean stop(Duration timeout);

        /** Lets them call again; they ask for the handles again before they do. */
        void resume();
    }
}
