package org.vgpu.runtime.workloads;

import java.util.SplittableRandom;

import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.kernels.TestKernels;

/**
 * A linked list whose links are device addresses stored in device memory: one random cycle through
 * all nodes, scattered over several allocations, chased by one thread per node. It checks what a
 * migration must preserve (pointers inside device memory stay valid) and is exact.
 */
public final class PointerChaseWorkload implements Workload {
    static final int DEFAULT_NODES = 1 << 14;
    /** Nodes are spread over this many allocations, so links cross allocation boundaries. */
    static final int ALLOCATIONS = 4;

    static final int HOPS = 32;
    /** A node is its next node's device address, then its payload. */
    private static final int NODE_BYTES = 2 * Long.BYTES;

    @Override
    public String name() {
        return "pointer-chase";
    }

    @Override
    public String description() {
        return "random cycle of 16 384 nodes per scale unit linked by stored device addresses over 4 allocations,"
                + " 32 hops per thread; exact";
    }

    @Override
    public WorkloadResult run(VirtualGpu gpu, int scale, long seed) {
        int nodes = Workload.scaled(DEFAULT_NODES, scale);
        int nodesPerAllocation = nodes / ALLOCATIONS; // exact: DEFAULT_NODES is a multiple of ALLOCATIONS
        SplittableRandom random = new SplittableRandom(seed);
        int[] cycle = RandomInputs.permutation(random, nodes);
        int[] next = new int[nodes];
        for (int t = 0; t < nodes; t++) {
            next[cycle[t]] = cycle[(t + 1) % nodes];
        }
        // Node k sits in slot slotOf[k]; slot s is entry s % nodesPerAllocation of allocation s / nodesPerAllocation.
        int[] slotOf = RandomInputs.permutation(random, nodes);
        long[] payload = new long[nodes];
        for (int k = 0; k < nodes; k++) {
            payload[k] = random.nextLong();
        }

        var run = DeviceScope.run(gpu, device -> {
            long[] base = new long[ALLOCATIONS];
            for (int a = 0; a < ALLOCATIONS; a++) {
                base[a] = device.allocate((long) nodesPerAllocation * NODE_BYTES);
            }
            long[] address = new long[nodes];
            for (int k = 0; k < nodes; k++) {
                address[k] =
                        base[slotOf[k] / nodesPerAllocation] + (long) (slotOf[k] % nodesPerAllocation) * NODE_BYTES;
            }
            long[][] images = new long[ALLOCATIONS][];
            for (int a = 0; a < ALLOCATIONS; a++) {
                images[a] = new long[2 * nodesPerAllocation];
            }
            for (int k = 0; k < nodes; k++) {
                long[] image = images[slotOf[k] / nodesPerAllocation];
                int entry = slotOf[k] % nodesPerAllocation;
                image[2 * entry] = address[next[k]];
                image[2 * entry + 1] = payload[k];
            }
            for (int a = 0; a < ALLOCATIONS; a++) {
                device.write(base[a], images[a]);
            }
            long starts = device.upload(address);
            long results = device.allocate((long) nodes * Long.BYTES);
            device.launch1D(
                    TestKernels.POINTER_CHASE,
                    nodes,
                    KernelArgs.builder()
                            .pointer(starts)
                            .pointer(results)
                            .i32(nodes)
                            .i32(HOPS)
                            .build());
            return device.readLongs(results, nodes);
        });

        long[] expected = new long[nodes];
        for (int i = 0; i < nodes; i++) {
            int node = i;
            for (int hop = 0; hop < HOPS; hop++) {
                node = next[node];
            }
            expected[i] = payload[node];
        }
        return new WorkloadResult(
                name(),
                gpu.backendName(),
                Comparison.exact("payload", expected, run.output()),
                run.elapsed(),
                String.format(
                        "%d nodes in %d allocations, %d hops per thread, %d launch",
                        nodes, ALLOCATIONS, HOPS, run.launches()));
    }
}
