package org.vgpu.runtime.api;

/** An event. Runtime-owned id. */
public record EventHandle(int id) {}
