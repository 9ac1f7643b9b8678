package org.vgpu.runtime.api;

/** A kernel looked up in a module. Runtime-owned id; {@link #name()} is the kernel's entry name. */
public record FunctionHandle(int id, String name) {}
