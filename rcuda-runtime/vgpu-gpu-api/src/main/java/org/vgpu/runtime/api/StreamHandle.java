package org.vgpu.runtime.api;

/** A stream. Runtime-owned id; id 0 is the default (legacy, NULL) stream. */
public record StreamHandle(int id) {
    public static final StreamHandle DEFAULT = new StreamHandle(0);
}
