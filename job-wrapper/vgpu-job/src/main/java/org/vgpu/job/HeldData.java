package org.vgpu.job;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.core.FailureCollector;

/**
 * Data left on every vGPU while {@code vgpu run --hold} waits, so that a migration during the hold
 * has memory to carry: reading it back unchanged afterwards shows the vGPU moved with its contents,
 * not merely that it works where it ended up. The workloads cannot show that, as each frees its
 * memory before it returns.
 */
final class HeldData implements AutoCloseable {
    static final int BYTES = 1 << 20;

    private final List<? extends VirtualGpu> vgpus;
    private final List<Long> addresses = new ArrayList<>();

    private HeldData(List<? extends VirtualGpu> vgpus) {
        this.vgpus = vgpus;
    }

    /** Writes {@link #BYTES} of vGPU k's own pattern to each vGPU k. */
    static HeldData place(List<? extends VirtualGpu> vgpus) {
        HeldData held = new HeldData(vgpus);
        try {
            for (int k = 0; k < vgpus.size(); k++) {
                VirtualGpu gpu = vgpus.get(k);
                long address = gpu.memAlloc(BYTES);
                held.addresses.add(address);
                gpu.memcpyHtoD(address, MemorySegment.ofArray(pattern(k)), BYTES);
            }
            return held;
        } catch (RuntimeException e) {
            try {
                held.close();
            } catch (RuntimeException freeing) {
                e.addSuppressed(freeing);
            }
            throw e;
        }
    }

    /** Whether vGPU k still holds its pattern. */
    boolean intact(int k) {
        byte[] read = new byte[BYTES];
        vgpus.get(k).memcpyDtoH(MemorySegment.ofArray(read), addresses.get(k), BYTES);
        return Arrays.equals(read, pattern(k));
    }

    private static byte[] pattern(int k) {
        byte[] bytes = new byte[BYTES];
        new SplittableRandom(0x5eed + k).nextBytes(bytes);
        return bytes;
    }

    @Override
    public void close() {
        FailureCollector failures = new FailureCollector();
        for (int k = 0; k < addresses.size(); k++) {
            VirtualGpu gpu = vgpus.get(k);
            long address = addresses.get(k);
            failures.attempt(() -> gpu.memFree(address));
        }
        addresses.clear();
        failures.rethrow();
    }
}
