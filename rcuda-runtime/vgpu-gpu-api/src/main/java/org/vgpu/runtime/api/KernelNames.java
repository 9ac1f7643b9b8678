package org.vgpu.runtime.api;

import java.util.List;

/** The names of a module's kernels, as {@link VirtualGpu#moduleKernelNames} gives them. */
public record KernelNames(List<String> names) {
    public KernelNames {
        names = List.copyOf(names);
    }
}
