package org.vgpu.runtime.core;

import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;
import java.util.function.Consumer;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.KernelSignature;
import org.vgpu.runtime.api.ModuleHandle;

/**
 * The modules and functions a vGPU has loaded, by the ids the app holds: the backend's objects, the
 * images they came from, the signatures launches are checked against, and the addresses of the
 * modules' variables ({@link ModuleGlobals}), given back when their module is unloaded.
 */
final class LoadedModules<M, F> {
    private final HandleTable<LoadedModule<M>> modules = new HandleTable<>("module");
    private final HandleTable<LoadedFunction<F>> functions = new HandleTable<>("function");
    private final ModuleGlobals globals;

    LoadedModules(ModuleGlobals globals) {
        this.globals = globals;
    }

    ModuleHandle add(M module, ModuleImage image) {
        return new ModuleHandle(modules.add(new LoadedModule<>(module, image, new ConcurrentHashMap<>())));
    }

    LoadedModule<M> module(ModuleHandle module) {
        return modules.get(module.id());
    }

    /** Forgets the module and its variables' addresses; returns it for the backend to unload. */
    LoadedModule<M> remove(ModuleHandle module) {
        LoadedModule<M> removed = modules.remove(module.id());
        globals.forget(removed);
        return removed;
    }

    /** See {@link ModuleGlobals#place}; {@code name} checked given once the module is known. */
    DeviceRegion global(ModuleHandle module, String name, Long at, BiFunction<M, String, DeviceRegion> lookup) {
        LoadedModule<M> loaded = module(module);
        OperandChecks.given(name, "cuModuleGetGlobal", "name");
        return globals.place(loaded, name, at, backendModule -> lookup.apply(backendModule, name));
    }

    /**
     * Adds kernel {@code kernelName} of {@code module}, found by {@code find}; its signature comes
     * from the PTX text, or from {@code binarySignature} for a module of another format.
     */
    FunctionHandle addFunction(
            ModuleHandle module,
            String kernelName,
            BiFunction<M, String, F> find,
            BiFunction<F, String, KernelSignature> binarySignature) {
        LoadedModule<M> loaded = module(module);
        boolean ptx = loaded.image().format() == ModuleImage.Format.PTX;
        KernelSignature ptxSignature = ptx ? loaded.image().ptxSignature(kernelName) : null;
        F function = find.apply(loaded.module(), kernelName);
        KernelSignature signature = ptx ? ptxSignature : binarySignature.apply(function, kernelName);
        return new FunctionHandle(functions.add(new LoadedFunction<>(function, signature, module.id())), kernelName);
    }

    LoadedFunction<F> function(FunctionHandle function) {
        return functions.get(function.id());
    }

    /** Forgets every function and module, handing each module to {@code unload}, as the vGPU closes. */
    void removeAll(FailureCollector failures, Consumer<M> unload) {
        functions.drain();
        for (LoadedModule<M> module : modules.drain()) {
            globals.forget(module);
            failures.attempt(() -> unload.accept(module.module()));
        }
    }
}
