package org.vgpu.runtime.api;

/** Free and total device memory in bytes, as {@code cuMemGetInfo}. */
public record MemoryInfo(long free, long total) {}
