// Test kernels of vgpu: the benchmark's empty kernel and the demo/conformance workloads.
//
// Every kernel here has a Java twin (org.vgpu.runtime.kernels) that the CPU emulation runs in
// its place, and a GPU test (TwinAgreementTest) asserts that twin and PTX produce the same bytes.
// That is only possible because the float arithmetic is pinned down:
//   * compiled with --fmad=false, so a*b+c stays a rounded multiply then a rounded add (Java
//     never fuses), and with IEEE division and square root (-prec-div=true -prec-sqrt=true,
//     -ftz=false, the defaults without --use_fast_math);
//   * no rsqrtf, __expf, __fdividef or other approximate intrinsics;
//   * every sum accumulates in one thread in a fixed order (no float atomics, no tree reductions),
//     and every expression is written with the evaluation order the twin repeats.
// Kernels are extern "C" so their PTX entry names are the plain names the twins are registered by.
//
// Regenerate the PTX resource after editing this file (needs nvcc 13.x):
//     rcuda-runtime/vgpu-backend-native/src/main/cuda/build-ptx.sh
// and commit this file, the script and
//     rcuda-runtime/vgpu-test-workloads/src/main/resources/org/vgpu/kernels/test_kernels.ptx
// together.

// Global x index of this thread; 1-D kernels give one element to each.
__device__ __forceinline__ int globalIndexX() {
    return blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ int globalIndexY() {
    return blockIdx.y * blockDim.y + threadIdx.y;
}

// Does nothing: the benchmarks time launch overhead with it.
extern "C" __global__ void emptyKernel() {
}

// c[i] = a[i] + b[i] for i < n.
extern "C" __global__ void vectorAdd(const float* a, const float* b, float* c, int n) {
    int i = globalIndexX();
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}

// y[i] = a * x[i] + y[i] for i < n: multiply rounded, then add rounded.
extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
    int i = globalIndexX();
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}

// C = A * B for square row-major n x n matrices; thread (x = column, y = row) computes one
// element, summing over k in increasing order starting from 0.0f.
extern "C" __global__ void matMul(const float* A, const float* B, float* C, int n) {
    int col = globalIndexX();
    int row = globalIndexY();
    if (row < n && col < n) {
        float sum = 0.0f;
        for (int k = 0; k < n; k++) {
            sum += A[row * n + k] * B[k * n + col];
        }
        C[row * n + col] = sum;
    }
}

// out (cols x rows) = transpose of in (rows x cols), both row-major; thread (x = column,
// y = row of in) moves one element.
extern "C" __global__ void transpose(const float* in, float* out, int rows, int cols) {
    int col = globalIndexX();
    int row = globalIndexY();
    if (row < rows && col < cols) {
        out[col * rows + row] = in[row * cols + col];
    }
}

// One velocity update of an all-pairs gravitational n-body system (G = 1).
// pos: 4 floats per body (x, y, z, mass); vel: 3 floats per body (vx, vy, vz).
// Body i accumulates the acceleration from every body j in increasing j, itself included: with
// softening its own term is 0 * finite = 0, which saves a branch in the inner loop.
extern "C" __global__ void nbodyStep(const float* pos, float* vel, int n, float dt, float softeningSquared) {
    int i = globalIndexX();
    if (i < n) {
        float xi = pos[4 * i];
        float yi = pos[4 * i + 1];
        float zi = pos[4 * i + 2];
        float ax = 0.0f;
        float ay = 0.0f;
        float az = 0.0f;
        for (int j = 0; j < n; j++) {
            float dx = pos[4 * j] - xi;
            float dy = pos[4 * j + 1] - yi;
            float dz = pos[4 * j + 2] - zi;
            float distanceSquared = dx * dx + dy * dy + dz * dz + softeningSquared;
            float inverseDistance = 1.0f / sqrtf(distanceSquared);
            float inverseCube = inverseDistance * inverseDistance * inverseDistance;
            float strength = pos[4 * j + 3] * inverseCube;
            ax += dx * strength;
            ay += dy * strength;
            az += dz * strength;
        }
        vel[3 * i] = vel[3 * i] + ax * dt;
        vel[3 * i + 1] = vel[3 * i + 1] + ay * dt;
        vel[3 * i + 2] = vel[3 * i + 2] + az * dt;
    }
}

// Moves every body by vel * dt; a separate launch so nbodyStep reads positions nobody writes.
extern "C" __global__ void nbodyIntegrate(float* pos, const float* vel, int n, float dt) {
    int i = globalIndexX();
    if (i < n) {
        pos[4 * i] = pos[4 * i] + vel[3 * i] * dt;
        pos[4 * i + 1] = pos[4 * i + 1] + vel[3 * i + 1] * dt;
        pos[4 * i + 2] = pos[4 * i + 2] + vel[3 * i + 2] * dt;
    }
}

// One anti-diagonal (i + j == diag) of the Smith-Waterman local-alignment matrix with a linear
// gap penalty. H is (lenA + 1) x (lenB + 1), row-major, with row 0 and column 0 zero; the host
// launches diag = 2 .. lenA + lenB in order, so both cells a diagonal reads are final.
// Thread t takes the t-th cell of the diagonal counted from its smallest row.
// mismatch is the score added on a mismatch (negative); gap is the penalty subtracted (positive).
extern "C" __global__ void swAntiDiagonal(const char* seqA, const char* seqB, int* H, int lenA, int lenB,
                                          int diag, int match, int mismatch, int gap) {
    int firstRow = max(1, diag - lenB);
    int lastRow = min(lenA, diag - 1);
    int i = firstRow + globalIndexX();
    if (i <= lastRow) {
        int j = diag - i;
        int width = lenB + 1;
        int score = H[(i - 1) * width + (j - 1)] + (seqA[i - 1] == seqB[j - 1] ? match : mismatch);
        score = max(score, H[(i - 1) * width + j] - gap);
        score = max(score, H[i * width + (j - 1)] - gap);
        H[i * width + j] = max(score, 0);
    }
}

// ---- Lennard-Jones molecular dynamics, LAMMPS style (reduced units, epsilon = sigma = mass = 1).
// A velocity-Verlet step is five small launches, as a LAMMPS timestep is a sequence of fixes and
// computes: ljInitialIntegrate, ljApplyPeriodic, ljForces, ljFinalIntegrate, ljKineticEnergy.
// Positions, velocities and forces hold 3 floats per atom.

// First half-kick and drift: v += dtf * f; x += dt * v (dtf = dt / 2 for unit mass).
extern "C" __global__ void ljInitialIntegrate(float* pos, float* vel, const float* force, int n, float dtf, float dt) {
    int i = globalIndexX();
    if (i < n) {
        for (int k = 3 * i; k < 3 * i + 3; k++) {
            vel[k] = vel[k] + dtf * force[k];
            pos[k] = pos[k] + dt * vel[k];
        }
    }
}

// Wraps every coordinate back into [0, box) after a drift of less than one box length.
extern "C" __global__ void ljApplyPeriodic(float* pos, int n, float box) {
    int i = globalIndexX();
    if (i < n) {
        for (int k = 3 * i; k < 3 * i + 3; k++) {
            float x = pos[k];
            if (x >= box) {
                x = x - box;
            } else if (x < 0.0f) {
                x = x + box;
            }
            pos[k] = x;
        }
    }
}

// Shortest periodic image of a coordinate difference between two wrapped coordinates.
__device__ __forceinline__ float minimumImage(float d, float box, float halfBox) {
    if (d > halfBox) {
        return d - box;
    }
    if (d < -halfBox) {
        return d + box;
    }
    return d;
}

// Force on atom i and its potential energy (half of each pair's, so the per-atom energies sum
// to the total) from every other atom within the cutoff, using the minimum image in a cubic box.
// energyShift is the pair energy at the cutoff, subtracted so the energy is continuous there
// (LAMMPS "pair_modify shift yes"). Full all-pairs loop in increasing j: each pair is computed
// twice, once per atom, which keeps every sum inside one thread.
extern "C" __global__ void ljForces(const float* pos, float* force, float* potential, int n, float box,
                                    float cutoffSquared, float energyShift) {
    int i = globalIndexX();
    if (i < n) {
        float halfBox = 0.5f * box;
        float xi = pos[3 * i];
        float yi = pos[3 * i + 1];
        float zi = pos[3 * i + 2];
        float fx = 0.0f;
        float fy = 0.0f;
        float fz = 0.0f;
        float energy = 0.0f;
        for (int j = 0; j < n; j++) {
            if (j == i) {
                continue;
            }
            float dx = minimumImage(xi - pos[3 * j], box, halfBox);
            float dy = minimumImage(yi - pos[3 * j + 1], box, halfBox);
            float dz = minimumImage(zi - pos[3 * j + 2], box, halfBox);
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
        force[3 * i] = fx;
        force[3 * i + 1] = fy;
        force[3 * i + 2] = fz;
        potential[i] = 0.5f * energy;
    }
}

// Second half-kick: v += dtf * f with the forces at the new positions.
extern "C" __global__ void ljFinalIntegrate(float* vel, const float* force, int n, float dtf) {
    int i = globalIndexX();
    if (i < n) {
        for (int k = 3 * i; k < 3 * i + 3; k++) {
            vel[k] = vel[k] + dtf * force[k];
        }
    }
}

// Kinetic energy of each atom, 0.5 * |v|^2, for the thermodynamic output of the step.
extern "C" __global__ void ljKineticEnergy(const float* vel, float* kinetic, int n) {
    int i = globalIndexX();
    if (i < n) {
        float vx = vel[3 * i];
        float vy = vel[3 * i + 1];
        float vz = vel[3 * i + 2];
        kinetic[i] = 0.5f * (vx * vx + vy * vy + vz * vz);
    }
}

// Follows pointers stored in device memory. A node is two 64-bit words: the device address of
// the next node, then a payload. Thread i starts at node address starts[i], follows `steps`
// next-pointers and writes the payload of the node it reaches to payloads[i]. Because the
// addresses live in device memory, this checks that a vGPU's memory is at the same addresses
// after a migration.
extern "C" __global__ void pointerChase(const unsigned long long* starts, unsigned long long* payloads, int n,
                                        int steps) {
    int i = globalIndexX();
    if (i < n) {
        const unsigned long long* node = (const unsigned long long*) starts[i];
        for (int s = 0; s < steps; s++) {
            node = (const unsigned long long*) node[0];
        }
        payloads[i] = node[1];
    }
}
