package org.vgpu.runtime.core;

import java.util.Map;

/**
 * A loaded module: the backend's object, the image it came from (a migration replays the load) and
 * the variables looked up in it, by name, which {@link ModuleGlobals} fills and empties under the
 * record's lock.
 */
record LoadedModule<M>(M module, ModuleImage image, Map<String, ModuleGlobals.Global> globals) {}
