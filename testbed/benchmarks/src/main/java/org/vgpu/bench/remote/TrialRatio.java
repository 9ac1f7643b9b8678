package org.vgpu.bench.remote;

/** A ratio or time computed from one trial's samples. */
@FunctionalInterface
interface TrialRatio {
    double at(int trial);
}
