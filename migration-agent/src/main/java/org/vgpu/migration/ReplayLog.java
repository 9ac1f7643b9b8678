package org.vgpu.migration;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntPredicate;
import java.util.function.Supplier;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.EventHandle;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VgpuException;

/**
 * What a replay needs, and nothing more: the settings (the last of each key, see
 * {@code @ReplayedSetting}: the context's, and those of live functions such as their attributes),
 * the live modules (their images and the addresses of the variables looked up in them), functions
 * (module and name), streams, events and allocations (address and size) of one vGPU. Unload, destroy and free remove entries, so the log
 * is proportional to the live state, not to the number of calls.
 * Memory contents are not recorded; the migration copies them.
 *
 * <p>The app sees handles with ids issued here; each entry holds the current backend's handle,
 * which a migration replaces after replaying on the target. Replaying in the same order on a fresh
 * backend would not yield the same ids once anything has been destroyed, hence the explicit map.
 * Lookups are lock-free hash lookups because every launch does one or two.
 */
final class ReplayLog {

    static final class ModuleEntry {
        final byte[] image;
        /** The module's variables the app looked up, by name, at the addresses it was given. */
        final Map<String, DeviceRegion> globals = new ConcurrentHashMap<>();

        volatile ModuleHandle current;

        ModuleEntry(byte[] image, ModuleHandle current) {
            this.image = image;
            this.current = current;
        }
    }

    static final class FunctionEntry {
        final int moduleId;
        final String name;

        volatile FunctionHandle current;

        FunctionEntry(int moduleId, String name, FunctionHandle current) {
            this.moduleId = moduleId;
            this.name = name;
            this.current = current;
        }
    }

    static final class StreamEntry {
        volatile StreamHandle current;

        StreamEntry(StreamHandle current) {
            this.current = current;
        }
    }

    static final class EventEntry {
        volatile EventHandle current;

        EventEntry(EventHandle current) {
            this.current = current;
        }
    }

    private record FunctionKey(int moduleId, String name) {}

    /** The settings by key, in the order they were last set; none names a handle that is gone. Guarded by itself. */
    private final Map<Object, GatedVirtualGpu.Setting> settings = new LinkedHashMap<>();

    private final AtomicInteger nextModuleId = new AtomicInteger(1);
    private final AtomicInteger nextFunctionId = new AtomicInteger(1);
    // Stream id 0 is the default stream, which every backend has and nobody creates.
    private final AtomicInteger nextStreamId = new AtomicInteger(1);
    private final AtomicInteger nextEventId = new AtomicInteger(1);
    private final ConcurrentHashMap<Integer, ModuleEntry> modules = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Integer, FunctionEntry> functions = new ConcurrentHashMap<>();
    /** The app's handle for each (module, kernel name), so repeated lookups do not grow the log. */
    private final ConcurrentHashMap<FunctionKey, FunctionHandle> functionsByName = new ConcurrentHashMap<>();

    private final ConcurrentHashMap<Integer, StreamEntry> streams = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Integer, EventEntry> events = new ConcurrentHashMap<>();
    /**
     * Kept in address order as they are recorded: a migration needs them sorted (the replay and
     * mem-sync both walk them in order) while the app waits, and sorting 16384 of them then took
     * milliseconds; an insert here costs far less than the allocation it records.
     */
    private final ConcurrentSkipListMap<Long, Long> allocations = new ConcurrentSkipListMap<>();

    /**
     * Counts the changes to what a replay makes, each counted after it is made: a replay that read
     * the count before it read the log, and finds it unchanged later, knows the log is as it read it.
     */
    private final AtomicLong changes = new AtomicLong();

    /** Counts the same changes as {@link #changes}, each before it is made: where the two differ, one is under way. */
    private final AtomicLong changesBegun = new AtomicLong();

    /** Tries of {@link #settledRegions} before it gives up on an app that keeps allocating and freeing. */
    private static final int SETTLED_TRIES = 8;

    /** The count of changes made so far; see {@link #changes}. */
    long changes() {
        return changes.get();
    }

    /** A change begins; every change of the log is one {@code changing()} before it and one {@link #changed()} after. */
    void changing() {
        changesBegun.incrementAndGet();
    }

    /** A change has been made; see {@link #changing()}. */
    void changed() {
        changes.incrementAndGet();
    }

    /** Makes one change of the log between {@link #changing()} and {@link #changed()}, the latter also where it throws. */
    private <T> T change(Supplier<T> mutation) {
        changing();
        try {
            return mutation.get();
        } finally {
            changed();
        }
    }

    private void change(Runnable mutation) {
        change(() -> {
            mutation.run();
            return null;
        });
    }

    // ---- modules and functions

    ModuleHandle addModule(byte[] image, ModuleHandle current) {
        int id = nextModuleId.getAndIncrement();
        change(() -> modules.put(id, new ModuleEntry(image, current)));
        return new ModuleHandle(id);
    }

    ModuleEntry module(ModuleHandle module) {
        ModuleEntry entry = modules.get(module.id());
        if (entry == null) {
            throw unknown("module", module.id());
        }
        return entry;
    }

    /** Records a variable's lookup: the replay gives it the same address, mem-sync copies its contents. */
    void addGlobal(ModuleHandle module, String name, DeviceRegion region) {
        ModuleEntry entry = module(module);
        change(() -> entry.globals.put(name, region));
    }

    /** The module variables the app looked up, which a migration copies as it copies allocations. */
    List<DeviceRegion> globals() {
        List<DeviceRegion> globals = new ArrayList<>();
        for (ModuleEntry module : modules.values()) {
            globals.addAll(module.globals.values());
        }
        return globals;
    }

    /** Forgets a module and the functions looked up in it, which CUDA invalidates with it. */
    void removeModule(ModuleHandle module) {
        change(() -> {
            modules.remove(module.id());
            functions.values().removeIf(function -> function.moduleId == module.id());
            functionsByName.keySet().removeIf(key -> key.moduleId() == module.id());
            forgetSettingsOfGoneHandles();
        });
    }

    /** The handle an earlier lookup of {@code name} in {@code module} returned; null when there was none. */
    FunctionHandle knownFunction(ModuleHandle module, String name) {
        return functionsByName.get(new FunctionKey(module.id(), name));
    }

    /**
     * Records a lookup. As {@code cuModuleGetFunction} does, a second lookup of the same kernel gets
     * the same handle: when two threads race, the first recorded wins and the other backend handle
     * is simply not used.
     */
    FunctionHandle addFunction(ModuleHandle module, String name, FunctionHandle current) {
        FunctionKey key = new FunctionKey(module.id(), name);
        return functionsByName.computeIfAbsent(key, unused -> {
            int id = nextFunctionId.getAndIncrement();
            change(() -> functions.put(id, new FunctionEntry(module.id(), name, current)));
            return new FunctionHandle(id, name);
        });
    }

    FunctionHandle backendFunction(FunctionHandle function) {
        FunctionEntry entry = functions.get(function.id());
        if (entry == null) {
            throw unknown("function", function.id());
        }
        return entry.current;
    }

    /**
     * Records a setting, once the backend has taken it: it replaces the last one of its key. One of
     * a handle that another thread destroyed meanwhile is not kept: what it set is gone with it.
     */
    void setSetting(GatedVirtualGpu.Setting setting) {
        change(() -> {
            synchronized (settings) {
                settings.remove(setting.key());
                if (setting.handles().stream().allMatch(this::live)) {
                    settings.put(setting.key(), setting);
                }
            }
        });
    }

    /** Forgets the settings of handles destroyed (an unloaded module's functions, a destroyed stream or event). */
    private void forgetSettingsOfGoneHandles() {
        synchronized (settings) {
            settings.values().removeIf(setting -> !setting.handles().stream().allMatch(this::live));
        }
    }

    /** Whether the app's {@code handle} stands for a live object of this vGPU. */
    private boolean live(Object handle) {
        return holds(handle, modules::containsKey, functions::containsKey, streams::containsKey, events::containsKey);
    }

    /**
     * Whether a table of the app's handles holds {@code handle}: the table of its kind, asked by id
     * (the default stream, which nobody creates, is always held).
     */
    static boolean holds(
            Object handle, IntPredicate modules, IntPredicate functions, IntPredicate streams, IntPredicate events) {
        return switch (handle) {
            case ModuleHandle module -> modules.test(module.id());
            case FunctionHandle function -> functions.test(function.id());
            case StreamHandle stream -> stream.id() == StreamHandle.DEFAULT.id() || streams.test(stream.id());
            case EventHandle event -> events.test(event.id());
            default -> throw new IllegalArgumentException("a setting names " + handle + ", which is no handle");
        };
    }

    // ---- streams and events

    StreamHandle addStream(StreamHandle current) {
        int id = nextStreamId.getAndIncrement();
        change(() -> streams.put(id, new StreamEntry(current)));
        return new StreamHandle(id);
    }

    /** The backend's handle of an app stream; the default stream (id 0, or null) is the same everywhere. */
    StreamHandle backendStream(StreamHandle stream) {
        if (stream == null || stream.id() == StreamHandle.DEFAULT.id()) {
            return StreamHandle.DEFAULT;
        }
        StreamEntry entry = streams.get(stream.id());
        if (entry == null) {
            throw unknown("stream", stream.id());
        }
        return entry.current;
    }

    void removeStream(StreamHandle stream) {
        change(() -> {
            streams.remove(stream.id());
            forgetSettingsOfGoneHandles();
        });
    }

    EventHandle addEvent(EventHandle current) {
        int id = nextEventId.getAndIncrement();
        change(() -> events.put(id, new EventEntry(current)));
        return new EventHandle(id);
    }

    EventHandle backendEvent(EventHandle event) {
        EventEntry entry = events.get(event.id());
        if (entry == null) {
            throw unknown("event", event.id());
        }
        return entry.current;
    }

    void removeEvent(EventHandle event) {
        change(() -> {
            events.remove(event.id());
            forgetSettingsOfGoneHandles();
        });
    }

    // ---- allocations

    void addAllocation(long address, long bytes) {
        change(() -> allocations.put(address, bytes));
    }

    /** @return the bytes of the allocation removed, null when none was at {@code address} */
    Long removeAllocation(long address) {
        return change(() -> allocations.remove(address));
    }

    /**
     * The live allocations as {@link #regions()} gives them, read while no change was under way
     * (the app may be allocating and freeing meanwhile: a list read across a free and the allocation
     * after it could hold both, overlapping); empty when the app changed the log during every one of a
     * few tries, which a replay ahead of the lock leaves to its catch-up under it.
     */
    Optional<List<DeviceRegion>> settledRegions() {
        for (int tries = 0; tries < SETTLED_TRIES; tries++) {
            // begun first: where finished equals it, every change begun before was finished (one begun later
            // moves begun on, which the last read sees)
            long begun = changesBegun.get();
            if (changes.get() != begun) {
                Thread.onSpinWait();
                continue;
            }
            List<DeviceRegion> regions = regions();
            if (changesBegun.get() == begun) {
                return Optional.of(regions);
            }
        }
        return Optional.empty();
    }

    /** The live allocations as the app asked for them, in address order. */
    List<DeviceRegion> regions() {
        List<DeviceRegion> regions = new ArrayList<>(allocations.size());
        for (Map.Entry<Long, Long> allocation : allocations.entrySet()) {
            regions.add(new DeviceRegion(allocation.getKey(), allocation.getValue()));
        }
        return regions;
    }

    long liveBytes() {
        long total = 0;
        for (long bytes : allocations.values()) {
            total += bytes;
        }
        return total;
    }

    int allocationCount() {
        return allocations.size();
    }

    /**
     * How many calls a replay makes: one per setting (of the context, or of a function such as its
     * attributes), module, module variable looked up, function, stream and event, and one for all
     * allocations.
     */
    int replayCalls() {
        int settingCount;
        synchronized (settings) {
            settingCount = settings.size();
        }
        return modules.size()
                + globals().size()
                + functions.size()
                + settingCount
                + streams.size()
                + events.size()
                + (allocations.isEmpty() ? 0 : 1);
    }

    // ---- what a replay reads

    /** The settings, the last of each key, in the order they were set. */
    List<GatedVirtualGpu.Setting> settings() {
        synchronized (settings) {
            return List.copyOf(settings.values());
        }
    }

    /** The live modules by id; a live view (entries come and go while the app runs). */
    Map<Integer, ModuleEntry> modules() {
        return Collections.unmodifiableMap(modules);
    }

    /** The live functions by id; a live view. */
    Map<Integer, FunctionEntry> functions() {
        return Collections.unmodifiableMap(functions);
    }

    /** The live streams by id; a live view. */
    Map<Integer, StreamEntry> streams() {
        return Collections.unmodifiableMap(streams);
    }

    /** The live events by id; a live view. */
    Map<Integer, EventEntry> events() {
        return Collections.unmodifiableMap(events);
    }

    /** An entry of the log and the handle a target made for it. */
    record Rebound<E, H>(E entry, H handle) {}

    /** The target's handles for every entry, applied at the switch in one go. */
    static final class Rebinding {
        private final List<Rebound<ModuleEntry, ModuleHandle>> modules;
        private final List<Rebound<FunctionEntry, FunctionHandle>> functions;
        private final List<Rebound<StreamEntry, StreamHandle>> streams;
        private final List<Rebound<EventEntry, EventHandle>> events;

        Rebinding(
                Collection<Rebound<ModuleEntry, ModuleHandle>> modules,
                Collection<Rebound<FunctionEntry, FunctionHandle>> functions,
                Collection<Rebound<StreamEntry, StreamHandle>> streams,
                Collection<Rebound<EventEntry, EventHandle>> events) {
            this.modules = List.copyOf(modules);
            this.functions = List.copyOf(functions);
            this.streams = List.copyOf(streams);
            this.events = List.copyOf(events);
        }

        /** Points every app handle at the target's object. Cannot fail. */
        void commit() {
            modules.forEach(rebound -> rebound.entry().current = rebound.handle());
            functions.forEach(rebound -> rebound.entry().current = rebound.handle());
            streams.forEach(rebound -> rebound.entry().current = rebound.handle());
            events.forEach(rebound -> rebound.entry().current = rebound.handle());
        }
    }

    private static VgpuException unknown(String kind, int id) {
        return new VgpuException(ErrorCode.CUDA_ERROR_INVALID_HANDLE, kind + " " + id + " is not live on this vGPU");
    }
}
