package org.vgpu.runtime.kernels;

import static org.vgpu.runtime.kernels.TwinMemory.FLOAT;

import java.lang.foreign.MemorySegment;

import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.emulated.EmulatedMemory;

/** Twins of nbodyStep and nbodyIntegrate in test_kernels.cu; pos holds (x, y, z, mass), vel (vx, vy, vz) per body. */
final class NBodyTwins {
    private NBodyTwins() {}

    /** {@code nbodyStep(const float* pos, float* vel, int n, float dt, float softeningSquared)}. */
    static void nbodyStep(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        ThreadGrid threads = new ThreadGrid(grid, block);
        int n = args.i32(2);
        int active = threads.activeX(n);
        if (active == 0) {
            return;
        }
        float dt = args.f32(3);
        float softeningSquared = args.f32(4);
        // Every active body reads every body.
        MemorySegment pos = TwinMemory.floats(memory, args.pointer(0), 4L * n);
        MemorySegment vel = TwinMemory.floats(memory, args.pointer(1), 3L * active);
        for (long copy = 0; copy < threads.threadsPerX(); copy++) {
            for (int i = 0; i < active; i++) {
                float xi = pos.getAtIndex(FLOAT, 4L * i);
                float yi = pos.getAtIndex(FLOAT, 4L * i + 1);
                float zi = pos.getAtIndex(FLOAT, 4L * i + 2);
                float ax = 0.0f;
                float ay = 0.0f;
                float az = 0.0f;
                for (int j = 0; j < n; j++) {
                    float dx = pos.getAtIndex(FLOAT, 4L * j) - xi;
                    float dy = pos.getAtIndex(FLOAT, 4L * j + 1) - yi;
                    float dz = pos.getAtIndex(FLOAT, 4L * j + 2) - zi;
                    float distanceSquared = dx * dx + dy * dy + dz * dz + softeningSquared;
                    // sqrt of a float widened to double, rounded back, is the correctly rounded float sqrt.
                    float inverseDistance = 1.0f / (float) Math.sqrt(distanceSquared);
                    float inverseCube = inverseDistance * inverseDistance * inverseDistance;
                    float strength = pos.getAtIndex(FLOAT, 4L * j + 3) * inverseCube;
                    ax += dx * strength;
                    ay += dy * strength;
                    az += dz * strength;
                }
                vel.setAtIndex(FLOAT, 3L * i, vel.getAtIndex(FLOAT, 3L * i) + ax * dt);
                vel.setAtIndex(FLOAT, 3L * i + 1, vel.getAtIndex(FLOAT, 3L * i + 1) + ay * dt);
                vel.setAtIndex(FLOAT, 3L * i + 2, vel.getAtIndex(FLOAT, 3L * i + 2) + az * dt);
            }
        }
    }

    /** {@code nbodyIntegrate(float* pos, const float* vel, int n, float dt)}. */
    static void nbodyIntegrate(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        ThreadGrid threads = new ThreadGrid(grid, block);
        int active = threads.activeX(args.i32(2));
        if (active == 0) {
            return;
        }
        float dt = args.f32(3);
        // The last active body's mass is not touched, so the range ends at its z.
        MemorySegment pos = TwinMemory.floats(memory, args.pointer(0), 4L * active - 1);
        MemorySegment vel = TwinMemory.floats(memory, args.pointer(1), 3L * active);
        for (long copy = 0; copy < threads.threadsPerX(); copy++) {
            for (int i = 0; i < active; i++) {
                for (int k = 0; k < 3; k++) {
                    pos.setAtIndex(
                            FLOAT,
                            4L * i + k,
                            pos.getAtIndex(FLOAT, 4L * i + k) + vel.getAtIndex(FLOAT, 3L * i + k) * dt);
                }
            }
        }
    }
}
