package org.vgpu.migration;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Predicate;

import org.vgpu.migration.ReplayLog.EventEntry;
import org.vgpu.migration.ReplayLog.FunctionEntry;
import org.vgpu.migration.ReplayLog.ModuleEntry;
import org.vgpu.migration.ReplayLog.Rebound;
import org.vgpu.migration.ReplayLog.StreamEntry;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.EventHandle;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * Replays one vGPU's {@link ReplayLog} onto a migration's target in two passes, so that the app
 * waits for the second only.
 *
 * <p>{@link #ahead} runs before the migration lock, while the app goes on calling its source: it
 * sets the context's settings and recreates every object live at that moment: modules loaded,
 * variables placed, functions looked up, streams and events created, allocations placed and their
 * chunks mapped (on a GPU, the driver calls that make a replay cost milliseconds).
 * {@link #catchUp} runs under the lock, where the log stands still, and makes the target equal to
 * the log as it is then: what the app destroyed since is undone on the target (unloaded,
 * destroyed, freed) before what it created since is done there, so the lock is held for the
 * difference only, nothing at all for an app that created nothing meanwhile.
 *
 * <p>The rule that makes the first pass safe without the lock: the target is the migration's own
 * until the switch, an entry is known by its id, which the log never gives out twice, and the log's
 * tables may be read while the app changes them. Whatever the first pass saw (an object created
 * during it may be in or not), the second compares with the settled log and keeps, adds or
 * removes accordingly. Allocations are the exception: two read across a free and the allocation
 * that reused its place could overlap, so the first pass places them only as read while no change
 * was under way ({@link ReplayLog#settledRegions}), or else leaves them all to the second pass. A failure
 * in either pass leaves the caller to close the target, which frees everything replayed on it.
 */
final class Replay implements GatedVirtualGpu.TargetHandles {
    private final ReplayLog log;
    private final VirtualGpu target;

    /** The settings set on the target, by key (a setting of a handle holds the app's handle). */
    private final Map<Object, GatedVirtualGpu.Setting> settings = new HashMap<>();

    private final Map<Integer, Rebound<ModuleEntry, ModuleHandle>> modules = new HashMap<>();
    /** The variables placed on the target, by module id. */
    private final Map<Integer, Set<String>> globals = new HashMap<>();

    private final Map<Integer, Rebound<FunctionEntry, FunctionHandle>> functions = new HashMap<>();

    private final Map<Integer, Rebound<StreamEntry, StreamHandle>> streams = new HashMap<>();
    private final Map<Integer, Rebound<EventEntry, EventHandle>> events = new HashMap<>();
    /** The allocations placed on the target, in address order. */
    private List<DeviceRegion> allocations = List.of();
    /** The log's count of changes, read before the last pass read the log. */
    private long changesSeen = -1;
    /** The target's handles as the last pass left them, made while the app runs where it can be. */
    private ReplayLog.Rebinding rebinding;
    /** Allocations replayed so far, the index {@link FaultPoint#REPLAY_ALLOCATION} counts with. */
    private int allocationsReplayed;

    Replay(ReplayLog log, VirtualGpu target) {
        this.log = log;
        this.target = target;
    }

    /**
     * The first pass, before the lock: recreates on the target everything live in the log now.
     *
     * @throws VgpuException the target's failure; the caller closes it
     */
    void ahead(MigrationFaults faults) {
        changesSeen = log.changes();
        replayObjects();
        // read with no free or allocation under way, else left to the catch-up (a list read across a
        // free and the allocation that took its place could hold both, and the target would refuse it)
        Optional<List<DeviceRegion>> settled = log.settledRegions();
        if (settled.isPresent()) {
            placeAllocations(settled.get(), faults);
            allocations = settled.get();
        } else {
            // whatever the count says then, the catch-up compares: the target has none of the allocations
            changesSeen = -1;
        }
        rebinding = rebinding();
    }

    /**
     * The second pass, under the lock: brings the target up to the log as it is now. Where the log
     * has not changed since the first pass read it (no call of the app's created, destroyed or set
     * anything; launches and copies change nothing here), there is nothing to compare.
     *
     * @return the target's handle for every live entry, which the switch applies
     * @throws VgpuException the target's failure; the caller closes it
     */
    ReplayLog.Rebinding catchUp(MigrationFaults faults) {
        long changes = log.changes();
        if (changes != changesSeen) {
            changesSeen = changes;
            removeGone();
            replayObjects();
            List<DeviceRegion> live = log.regions();
            List<DeviceRegion> added = new ArrayList<>();
            for (DeviceRegion gone : difference(allocations, live, added)) {
                target.memFree(gone.address());
            }
            placeAllocations(added, faults);
            allocations = live;
            rebinding = rebinding();
        }
        return rebinding;
    }

    /**
     * The live allocations, in address order, as the last pass left them on the target: after
     * {@link #catchUp}, the log's under the lock, which mem-sync copies (one walk of the log for both).
     */
    List<DeviceRegion> allocations() {
        return allocations;
    }

    /** Undoes on the target what the app destroyed since the first pass; functions went with their modules. */
    private void removeGone() {
        dropGone(modules, log.modules(), target::moduleUnload);
        globals.keySet().retainAll(modules.keySet());
        dropGone(functions, log.functions(), unloadedWithItsModule -> {});
        settings.values().removeIf(setting -> !setting.handles().stream().allMatch(this::replayed));
        dropGone(streams, log.streams(), target::streamDestroy);
        dropGone(events, log.events(), target::eventDestroy);
    }

    /** Forgets the replayed entries that {@code live} no longer has, each after {@code destroy} of its target handle. */
    private static <E, H> void dropGone(
            Map<Integer, Rebound<E, H>> replayed, Map<Integer, E> live, Consumer<H> destroy) {
        replayed.entrySet().removeIf(entry -> {
            boolean gone = live.get(entry.getKey()) != entry.getValue().entry();
            if (gone) {
                destroy.accept(entry.getValue().handle());
            }
            return gone;
        });
    }

    /**
     * Makes on the target what the log has and the target has not yet: context settings that
     * differ, modules, variables looked up, functions each with its settings that differ, streams
     * and events, and any other setting of a handle.
     */
    private void replayObjects() {
        replaySettings(setting -> setting.handles().isEmpty());
        for (Map.Entry<Integer, ModuleEntry> module : log.modules().entrySet()) {
            if (!modules.containsKey(module.getKey())) {
                ModuleHandle handle = target.moduleLoadData(module.getValue().image);
                modules.put(module.getKey(), new Rebound<>(module.getValue(), handle));
            }
        }
        for (Map.Entry<Integer, Rebound<ModuleEntry, ModuleHandle>> module : modules.entrySet()) {
            Set<String> placed = globals.computeIfAbsent(module.getKey(), unused -> new HashSet<>());
            for (Map.Entry<String, DeviceRegion> global :
                    module.getValue().entry().globals.entrySet()) {
                if (placed.add(global.getKey())) {
                    target.moduleGetGlobalAt(
                            module.getValue().handle(),
                            global.getKey(),
                            global.getValue().address());
                }
            }
        }
        for (Map.Entry<Integer, FunctionEntry> function : log.functions().entrySet()) {
            FunctionEntry entry = function.getValue();
            Rebound<ModuleEntry, ModuleHandle> module = modules.get(entry.moduleId);
            if (module == null) {
                // its module was loaded after this pass looked at the modules: the next pass replays both
                continue;
            }
            Rebound<FunctionEntry, FunctionHandle> replayed = functions.computeIfAbsent(
                    function.getKey(),
                    unused -> new Rebound<>(entry, target.moduleGetFunction(module.handle(), entry.name)));
            FunctionHandle appHandle = new FunctionHandle(function.getKey(), replayed.entry().name);
            replaySettings(setting -> setting.handles().contains(appHandle));
        }
        for (Map.Entry<Integer, StreamEntry> stream : log.streams().entrySet()) {
            streams.computeIfAbsent(stream.getKey(), unused -> new Rebound<>(stream.getValue(), target.streamCreate()));
        }
        for (Map.Entry<Integer, EventEntry> event : log.events().entrySet()) {
            events.computeIfAbsent(event.getKey(), unused -> new Rebound<>(event.getValue(), target.eventCreate()));
        }
        replaySettings(setting -> true);
    }

    /**
     * Sets on the target each of the log's settings that {@code which} picks, differs from what
     * was set there, and names only handles the target has made, with the target's handles.
     */
    private void replaySettings(Predicate<GatedVirtualGpu.Setting> which) {
        for (GatedVirtualGpu.Setting setting : log.settings()) {
            if (which.test(setting)
                    && !setting.equals(settings.get(setting.key()))
                    && setting.handles().stream().allMatch(this::replayed)) {
                setting.onTarget(this).replayOn(target);
                settings.put(setting.key(), setting);
            }
        }
    }

    /** Whether the target has made the object the app's {@code handle} stands for. */
    private boolean replayed(Object handle) {
        return ReplayLog.holds(
                handle, modules::containsKey, functions::containsKey, streams::containsKey, events::containsKey);
    }

    @Override
    public FunctionHandle backendFunction(FunctionHandle function) {
        return functions.get(function.id()).handle();
    }

    @Override
    public StreamHandle backendStream(StreamHandle stream) {
        return stream.id() == StreamHandle.DEFAULT.id()
                ? StreamHandle.DEFAULT
                : streams.get(stream.id()).handle();
    }

    @Override
    public EventHandle backendEvent(EventHandle event) {
        return events.get(event.id()).handle();
    }

    /** Places {@code regions} on the target in one call, which maps the chunks they lie in (a remote target: one request). */
    private void placeAllocations(List<DeviceRegion> regions, MigrationFaults faults) {
        for (int index = 0; index < regions.size(); index++) {
            faults.reached(FaultPoint.REPLAY_ALLOCATION, allocationsReplayed + index, target);
        }
        if (!regions.isEmpty()) {
            target.memAllocAllAt(regions);
        }
        allocationsReplayed += regions.size();
    }

    /**
     * Compares two lists of allocations, each in address order.
     *
     * @param added gets those of {@code now} that {@code before} lacks (the same address with
     *              another size counts as freed and allocated again)
     * @return those of {@code before} that {@code now} lacks
     */
    private static List<DeviceRegion> difference(
            List<DeviceRegion> before, List<DeviceRegion> now, List<DeviceRegion> added) {
        List<DeviceRegion> gone = new ArrayList<>();
        int b = 0;
        int n = 0;
        while (b < before.size() || n < now.size()) {
            DeviceRegion old = b < before.size() ? before.get(b) : null;
            DeviceRegion current = n < now.size() ? now.get(n) : null;
            if (old != null && old.equals(current)) {
                b++;
                n++;
            } else if (current == null || (old != null && old.address() <= current.address())) {
                gone.add(old);
                b++;
            } else {
                added.add(current);
                n++;
            }
        }
        return gone;
    }

    /** The target's handle for every entry replayed, which {@link #catchUp} has made every live one. */
    private ReplayLog.Rebinding rebinding() {
        return new ReplayLog.Rebinding(modules.values(), functions.values(), streams.values(), events.values());
    }
}
