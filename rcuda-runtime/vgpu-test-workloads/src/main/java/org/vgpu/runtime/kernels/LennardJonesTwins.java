package org.vgpu.runtime.kernels;

import static org.vgpu.runtime.kernels.TwinMemory.FLOAT;

import java.lang.foreign.MemorySegment;

import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.emulated.EmulatedMemory;

/**
 * Twins of the Lennard-Jones kernels in test_kernels.cu (ljInitialIntegrate, ljApplyPeriodic,
 * ljForces, ljFinalIntegrate, ljKineticEnergy); positions, velocities and forces hold 3 floats per atom.
 */
final class LennardJonesTwins {
    private LennardJonesTwins() {}

    /** {@code ljInitialIntegrate(float* pos, float* vel, const float* force, int n, float dtf, float dt)}. */
    static void ljInitialIntegrate(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        ThreadGrid threads = new ThreadGrid(grid, block);
        int active = threads.activeX(args.i32(3));
        if (active == 0) {
            return;
        }
        float dtf = args.f32(4);
        float dt = args.f32(5);
        MemorySegment pos = TwinMemory.floats(memory, args.pointer(0), 3L * active);
        MemorySegment vel = TwinMemory.floats(memory, args.pointer(1), 3L * active);
        MemorySegment force = TwinMemory.floats(memory, args.pointer(2), 3L * active);
        for (long copy = 0; copy < threads.threadsPerX(); copy++) {
            for (long k = 0; k < 3L * active; k++) {
                float v = vel.getAtIndex(FLOAT, k) + dtf * force.getAtIndex(FLOAT, k);
                vel.setAtIndex(FLOAT, k, v);
                pos.setAtIndex(FLOAT, k, pos.getAtIndex(FLOAT, k) + dt * v);
            }
        }
    }

    /** {@code ljApplyPeriodic(float* pos, int n, float box)}. */
    static void ljApplyPeriodic(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        ThreadGrid threads = new ThreadGrid(grid, block);
        int active = threads.activeX(args.i32(1));
        if (active == 0) {
            return;
        }
        float box = args.f32(2);
        MemorySegment pos = TwinMemory.floats(memory, args.pointer(0), 3L * active);
        for (long copy = 0; copy < threads.threadsPerX(); copy++) {
            for (long k = 0; k < 3L * active; k++) {
                float x = pos.getAtIndex(FLOAT, k);
                if (x >= box) {
                    x = x - box;
                } else if (x < 0.0f) {
                    x = x + box;
                }
                pos.setAtIndex(FLOAT, k, x);
            }
        }
    }

    /**
     * {@code ljForces(const float* pos, float* force, float* potential, int n, float box, float cutoffSquared,
     * float energyShift)}.
     */
    static void ljForces(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        ThreadGrid threads = new ThreadGrid(grid, block);
        int n = args.i32(3);
        int active = threads.activeX(n);
        if (active == 0) {
            return;
        }
        float box = args.f32(4);
        float cutoffSquared = args.f32(5);
        float energyShift = args.f32(6);
        float halfBox = 0.5f * box;
        // Every active atom reads every atom.
        MemorySegment pos = TwinMemory.floats(memory, args.pointer(0), 3L * n);
        MemorySegment force = TwinMemory.floats(memory, args.pointer(1), 3L * active);
        MemorySegment potential = TwinMemory.floats(memory, args.pointer(2), active);
        for (long copy = 0; copy < threads.threadsPerX(); copy++) {
            for (int i = 0; i < active; i++) {
                float xi = pos.getAtIndex(FLOAT, 3L * i);
                float yi = pos.getAtIndex(FLOAT, 3L * i + 1);
                float zi = pos.getAtIndex(FLOAT, 3L * i + 2);
                float fx = 0.0f;
                float fy = 0.0f;
                float fz = 0.0f;
                float energy = 0.0f;
                for (int j = 0; j < n; j++) {
                    if (j == i) {
                        continue;
                    }
                    float dx = minimumImage(xi - pos.getAtIndex(FLOAT, 3L * j), box, halfBox);
                    float dy = minimumImage(yi - pos.getAtIndex(FLOAT, 3L * j + 1), box, halfBox);
                    float dz = minimumImage(zi - pos.getAtIndex(FLOAT, 3L * j + 2), box, halfBox);
                    float rSquared = dx * dx + dy * dy + dz * dz;
                    if (rSquared < cutoffSquared) {
                        float r2inv = 1.0f / rSquared;
                        float r6inv = r2inv * r2inv * r2inv;
                        float forcePair = r6inv * (48.0f * r6inv - 24.0f) * r2inv;
                        fx += dx * forcePair;
                        fy += dy * forcePair;
                        fz += dz * forcePair;
                        energy += r6inv * (4.0f * r6inv - 4.0f) - energyShift;
                    }
                }
                force.setAtIndex(FLOAT, 3L * i, fx);
                force.setAtIndex(FLOAT, 3L * i + 1, fy);
                force.setAtIndex(FLOAT, 3L * i + 2, fz);
                potential.setAtIndex(FLOAT, i, 0.5f * energy);
            }
        }
    }

    /** {@code ljFinalIntegrate(float* vel, const float* force, int n, float dtf)}. */
    static void ljFinalIntegrate(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        ThreadGrid threads = new ThreadGrid(grid, block);
        int active = threads.activeX(args.i32(2));
        if (active == 0) {
            return;
        }
        float dtf = args.f32(3);
        MemorySegment vel = TwinMemory.floats(memory, args.pointer(0), 3L * active);
        MemorySegment force = TwinMemory.floats(memory, args.pointer(1), 3L * active);
        for (long copy = 0; copy < threads.threadsPerX(); copy++) {
            for (long k = 0; k < 3L * active; k++) {
                vel.setAtIndex(FLOAT, k, vel.getAtIndex(FLOAT, k) + dtf * force.getAtIndex(FLOAT, k));
            }
        }
    }

    /** {@code ljKineticEnergy(const float* vel, float* kinetic, int n)}. */
    static void ljKineticEnergy(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        ThreadGrid threads = new ThreadGrid(grid, block);
        int active = threads.activeX(args.i32(2));
        if (active == 0) {
            return;
        }
        MemorySegment vel = TwinMemory.floats(memory, args.pointer(0), 3L * active);
        MemorySegment kinetic = TwinMemory.floats(memory, args.pointer(1), active);
        for (long copy = 0; copy < threads.threadsPerX(); copy++) {
            for (int i = 0; i < active; i++) {
                float vx = vel.getAtIndex(FLOAT, 3L * i);
                float vy = vel.getAtIndex(FLOAT, 3L * i + 1);
                float vz = vel.getAtIndex(FLOAT, 3L * i + 2);
                kinetic.setAtIndex(FLOAT, i, 0.5f * (vx * vx + vy * vy + vz * vz));
            }
        }
    }

    /** The kernel's {@code minimumImage}: the shortest periodic image of a coordinate difference. */
    private static float minimumImage(float d, float box, float halfBox) {
        if (d > halfBox) {
            return d - box;
        }
        if (d < -halfBox) {
            return d + box;
        }
        return d;
    }
}
