package org.vgpu.runtime.api;

/**
 * What a vGPU reports about the device behind it.
 *
 * @param emulated true for the CPU emulation; every report that shows a device shows this flag
 */
public record DeviceProperties(
        String name,
        long totalMemory,
        int computeCapabilityMajor,
        int computeCapabilityMinor,
        int multiprocessorCount,
        int maxThreadsPerBlock,
        int warpSize,
        boolean emulated) {

    /** One line for listings; emulated devices are labelled as such. */
    public String describe() {
        return String.format(
                "%s, %d MiB, compute %d.%d, %d SMs%s",
                name,
                totalMemory >> 20,
                computeCapabilityMajor,
                computeCapabilityMinor,
                multiprocessorCount,
                emulated ? " [CPU EMULATION, not a GPU]" : "");
    }
}
