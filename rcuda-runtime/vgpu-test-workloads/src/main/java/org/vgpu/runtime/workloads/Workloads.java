package org.vgpu.runtime.workloads;

import java.util.List;
import java.util.Optional;

/** The catalogue of test workloads, in the order the demo runs them. */
public final class Workloads {
    private Workloads() {}

    public static List<Workload> all() {
        return List.of(
                new VectorAddWorkload(),
                new SaxpyWorkload(),
                new MatMulWorkload(),
                new TransposeWorkload(),
                new NBodyWorkload(),
                new SmithWatermanWorkload(),
                new LennardJonesWorkload(),
                new PointerChaseWorkload());
    }

    public static List<String> names() {
        return all().stream().map(Workload::name).toList();
    }

    public static Optional<Workload> named(String name) {
        return all().stream().filter(workload -> workload.name().equals(name)).findFirst();
    }
}
