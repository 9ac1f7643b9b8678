package org.vgpu.runtime.memory;

/**
 * A live device allocation: what the app asked for ({@code requestedBytes}) and the
 * granularity-rounded range that backs it ({@code mappedBytes}). Together the live allocations are
 * the live-region table a migration copies.
 */
public record Allocation(long address, long requestedBytes, long mappedBytes) {
    public long end() {
        return address + requestedBytes;
    }

    public boolean contains(long start, long bytes) {
        return start >= address && bytes >= 0 && start + bytes <= end() && start + bytes >= start;
    }
}
