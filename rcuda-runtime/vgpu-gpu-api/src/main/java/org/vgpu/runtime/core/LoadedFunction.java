package org.vgpu.runtime.core;

import org.vgpu.runtime.api.KernelSignature;

/** A function with the signature launches are checked against, and the module it came from. */
record LoadedFunction<F>(F function, KernelSignature signature, int moduleId) {}
