package org.vgpu.runtime.api;

/** A loaded module. Runtime-owned id, so it survives a migration of its vGPU unchanged. */
public record ModuleHandle(int id) {}
