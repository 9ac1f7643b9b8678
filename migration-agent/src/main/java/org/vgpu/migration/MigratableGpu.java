package org.vgpu.migration;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;

import org.vgpu.common.error.InputException;
import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.DirectDriverCalls;
import org.vgpu.runtime.api.DriverHandles;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.EventHandle;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.api.surface.GatedForwarder;
import org.vgpu.runtime.core.FailureCollector;
import org.vgpu.runtime.remote.client.RemoteCounters;
import org.vgpu.runtime.remote.client.RemoteGpu;

/**
 * A vGPU that can move, live, to another backend: it passes every call to its current backend and
 * records what a replay needs ({@link ReplayLog}); {@link #migrate} moves it. The app keeps its
 * handles and device pointers and never learns it moved.
 *
 * <p>What the app sees across a migration:
 * <ul>
 *   <li>Device pointers keep their values (same window, same addresses) and memory its contents,
 *       pointers stored in device memory included.</li>
 *   <li>Module, function, stream and event handles keep their ids.</li>
 *   <li>{@link #deviceProperties}, {@link #deviceGetAttribute}, {@link #backendName} and
 *       {@link #memGetInfo} describe the device behind the vGPU now, as a device query after a move
 *       tells the truth. The app sized its launches by what it was shown when the vGPU opened, so a
 *       target that cannot honour that (another warp size, smaller blocks, lower compute capability,
 *       emulation instead of a GPU or the reverse) is refused.</li>
 *   <li>Events keep their times: {@code eventElapsedTime} between an event recorded before a move and
 *       one recorded after it counts the GPU's time on each side and the move's wall-clock time between
 *       ({@link EventTimes}). An event recorded before the move is complete on the target.</li>
 *   <li>Pinned host memory ({@link #memAllocHost}) stays valid: the backend that allocated it is
 *       kept, without its device memory, until the app frees the last such buffer or closes the
 *       vGPU. A native source kept for that reason still holds its window reservation in this
 *       process, so a later migration back to a local GPU waits for those buffers to be freed.</li>
 *   <li>An error of asynchronous work that the migration's synchronize of the source brings up
 *       aborts the migration (nothing moved) and is raised to the app at its next synchronizing
 *       call, as CUDA would have raised it.</li>
 * </ul>
 *
 * <p>Wrap a freshly opened backend: calls made on it before wrapping are not in the log.
 */
@GatedForwarder(VirtualGpu.class)
public final class MigratableGpu extends GatedVirtualGpu implements DirectDriverCalls {
    private static final VarHandle DEFERRED_ERROR;

    static {
        try {
            DEFERRED_ERROR =
                    MethodHandles.lookup().findVarHandle(MigratableGpu.class, "deferredError", VgpuException.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final VaWindow window;
    private final DeviceProperties properties;
    private final CallGate gate;
    private final ReplayLog log = new ReplayLog();
    private final EventTimes eventTimes = new EventTimes();
    private final TargetResolver resolver;
    private final MigrationConfig config;
    private final MigrationListener listener;
    private final MigrationFaults faults;
    private final ReentrantLock migrationLock = new ReentrantLock();
    private final AtomicInteger migrations = new AtomicInteger();
    private final PinnedHostOwners pinnedHost = new PinnedHostOwners();
    private volatile VirtualGpu backend;
    private volatile MigrationTarget location;
    /** What the remote backends this vGPU left behind had counted; changed only by the switch, under the gate. */
    private volatile RemoteCounters formerRemotes = RemoteCounters.ZERO;

    @SuppressWarnings("unused") // through DEFERRED_ERROR
    private volatile VgpuException deferredError;

    /** A production vGPU: default configuration, no fault injection. */
    public MigratableGpu(
            VirtualGpu initial, MigrationTarget location, TargetResolver resolver, MigrationListener listener) {
        this(initial, location, resolver, MigrationConfig.DEFAULTS, listener, MigrationFaults.NONE);
    }

    /**
     * @param initial  a freshly opened backend of the vGPU; the wrapper owns and closes it
     * @param location where {@code initial} runs, for status and reports
     * @param faults   {@link MigrationFaults#NONE} except in tests
     */
    public MigratableGpu(
            VirtualGpu initial,
            MigrationTarget location,
            TargetResolver resolver,
            MigrationConfig config,
            MigrationListener listener,
            MigrationFaults faults) {
        this.backend = Objects.requireNonNull(initial, "initial backend");
        this.location = Objects.requireNonNull(location, "location");
        this.resolver = Objects.requireNonNull(resolver, "resolver");
        this.config = Objects.requireNonNull(config, "config");
        this.listener = Objects.requireNonNull(listener, "listener");
        this.faults = Objects.requireNonNull(faults, "faults");
        this.window = initial.window();
        this.properties = initial.deviceProperties();
        this.gate = new CallGate("vGPU " + window.vgpuIndex());
    }

    // ---- migration

    /**
     * Moves this vGPU to {@code target}: lock, drain, replay, copy, switch, unlock, release the
     * source. Callable from any thread except from inside a call of this vGPU; one migration of a
     * vGPU at a time, while other vGPUs of the process migrate independently.
     *
     * @return the report, also given to the listener
     * @throws MigrationException when a step failed; the vGPU then runs on its source as before
     * @throws VgpuException CUDA_ERROR_NOT_PERMITTED when this vGPU is already migrating
     * @throws InputException when {@code target} is where the vGPU runs: a migration there would copy the vGPU onto
     *         itself (a local GPU) or ask its own worker for a second session (a worker serves one)
     */
    public MigrationReport migrate(MigrationTarget target) {
        Objects.requireNonNull(target, "target");
        if (!migrationLock.tryLock()) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_NOT_PERMITTED,
                    "vGPU " + vgpuIndex() + " is already migrating; try again when that migration has finished");
        }
        try {
            // Read under the migration lock: only a migration changes the location.
            if (target.equals(location)) {
                throw new InputException(
                        "vGPU " + vgpuIndex() + " already runs on " + location() + ": there is nothing to migrate");
            }
            MigrationReport report = new Migration(new Subject(), target, resolver, config, faults, listener).run();
            migrations.incrementAndGet();
            return report;
        } finally {
            migrationLock.unlock();
        }
    }

    /** Whether a migration of this vGPU is under way (from taking its lock to releasing it). */
    public boolean migrating() {
        return migrationLock.isLocked();
    }

    /** Where the vGPU runs now, e.g. "gpu 1 (native)" or "lender-3:7400 (remote)". */
    public String location() {
        return location + " (" + backend.backendName() + ")";
    }

    /** Where the vGPU runs now, as its migrations name targets: a node GPU or a worker's endpoint. */
    public MigrationTarget placement() {
        return location;
    }

    /**
     * What the app forwarded to remote workers and waited for, cumulative since the vGPU was opened, while it runs
     * remote; zero while it runs on a GPU of this node (the tracker's cost model weighs remote vGPUs only).
     */
    public RemoteCounters remoteCounters() {
        return backend instanceof RemoteGpu remote ? formerRemotes.plus(remote.counters()) : RemoteCounters.ZERO;
    }

    /** Bytes the app has allocated on this vGPU: what a migration copies. */
    public long liveBytes() {
        return log.liveBytes();
    }

    public int liveAllocations() {
        return log.allocationCount();
    }

    /** Successful migrations so far. */
    public int migrationCount() {
        return migrations.get();
    }

    // ---- direct driver calls (vgpu's libcuda.so.1 in the program's process)

    /**
     * The handles of the GPU of this process the vGPU runs on now, in the backend's terms (the app's handles
     * translated as every gated call translates them); inside the gate, so no migration switches the backend under
     * {@code use}.
     */
    @Override
    public <T> Optional<T> withDriverHandles(Function<DriverHandles, T> use) {
        CallGate.Slot slot = gate.enter();
        try {
            if (!(backend instanceof DriverHandles onGpu)) {
                return Optional.empty();
            }
            return Optional.of(use.apply(new AppDriverHandles(onGpu, log)));
        } finally {
            gate.exit(slot);
        }
    }

    /** Stopped before the gate shuts for a migration, resumed when it opens ({@link CallGate#addDirectCallers}). */
    @Override
    public void addDirectCallers(DirectCallers callers) {
        gate.addDirectCallers(callers);
    }

    @Override
    public void removeDirectCallers(DirectCallers callers) {
        gate.removeDirectCallers(callers);
    }

    /** The backend every gated call goes to; the generated forwarder reads it once per call, inside the gate. */
    @GatedForwarder.Current
    @Override
    VirtualGpu currentBackend() {
        return backend;
    }

    /**
     * What a {@link Migration} needs of this vGPU. A nested class rather than an {@code implements}
     * clause: the interface's methods would be public here, and the app must not reach the gate, the
     * backend behind it or the switch.
     */
    private final class Subject implements MigrationSubject {

        @Override
        public VaWindow window() {
            return window;
        }

        @Override
        public DeviceProperties shownProperties() {
            return properties;
        }

        @Override
        public String location() {
            return MigratableGpu.this.location();
        }

        @Override
        public VirtualGpu currentBackend() {
            return backend;
        }

        @Override
        public ReplayLog log() {
            return log;
        }

        @Override
        public EventTimes eventTimes() {
            return eventTimes;
        }

        @Override
        public CallGate gate() {
            return gate;
        }

        @Override
        public void deferError(VgpuException error) {
            DEFERRED_ERROR.compareAndSet(MigratableGpu.this, null, error);
        }

        /** The gate is shut, so no call sees a half-switched state. */
        @Override
        public void switchTo(VirtualGpu target, MigrationTarget newLocation, ReplayLog.Rebinding rebinding) {
            rebinding.commit();
            if (backend instanceof RemoteGpu remote) {
                formerRemotes = formerRemotes.plus(remote.counters());
            }
            backend = target;
            location = newLocation;
        }

        /** Runs after the switch, so the app no longer allocates on {@code source} ({@link PinnedHostOwners#release}). */
        @Override
        public void release(VirtualGpu source, List<DeviceRegion> regions) {
            pinnedHost.release(source, regions);
        }
    }

    // ---- VirtualGpu

    @Override
    public VaWindow window() {
        return window;
    }

    @Override
    public String backendName() {
        return backend.backendName();
    }

    @Override
    public DeviceProperties deviceProperties() {
        return backend.deviceProperties();
    }

    // Every call passes the gate the same way, written out each time rather than through a helper
    // taking a lambda: this is the path every call of every job takes, and its cost (measured at 60
    // to 85 ns a call on the H200 machines, the goal is 1 %) must not depend on the JIT removing a
    // capturing lambda's allocation. The calls that only pass the gate are generated so, in
    // GatedVirtualGpu, from this class's @GatedForwarder hooks (monomorphic calls the JIT inlines);
    // those below also keep the replay log or the pinned buffers' owners, so they are written here.

    @Override
    public ModuleHandle moduleLoadData(byte[] image) {
        CallGate.Slot slot = gate.enter();
        try {
            // The app may reuse its array; the replay needs the bytes as they were loaded.
            byte[] copy = image == null ? null : image.clone();
            return log.addModule(copy, backend.moduleLoadData(copy));
        } finally {
            gate.exit(slot);
        }
    }

    @Override
    public void moduleUnload(ModuleHandle module) {
        CallGate.Slot slot = gate.enter();
        try {
            backend.moduleUnload(log.module(module).current);
            log.removeModule(module);
        } finally {
            gate.exit(slot);
        }
    }

    @Override
    public FunctionHandle moduleGetFunction(ModuleHandle module, String kernelName) {
        CallGate.Slot slot = gate.enter();
        try {
            FunctionHandle known = log.knownFunction(module, kernelName);
            if (known != null) {
                return known;
            }
            return log.addFunction(
                    module, kernelName, backend.moduleGetFunction(log.module(module).current, kernelName));
        } finally {
            gate.exit(slot);
        }
    }

    @Override
    public DeviceRegion moduleGetGlobal(ModuleHandle module, String name) {
        return lookUpGlobal(module, name, null);
    }

    @Override
    public DeviceRegion moduleGetGlobalAt(ModuleHandle module, String name, long address) {
        return lookUpGlobal(module, name, address);
    }

    /** Looks a module variable up on the backend, at {@code at} when given, and records its address for the replay. */
    private DeviceRegion lookUpGlobal(ModuleHandle module, String name, Long at) {
        CallGate.Slot slot = gate.enter();
        try {
            ModuleHandle current = log.module(module).current;
            DeviceRegion region =
                    at == null ? backend.moduleGetGlobal(current, name) : backend.moduleGetGlobalAt(current, name, at);
            log.addGlobal(module, name, region);
            return region;
        } finally {
            gate.exit(slot);
        }
    }

    @Override
    public long memAlloc(long bytes) {
        CallGate.Slot slot = gate.enter();
        try {
            long address = backend.memAlloc(bytes);
            log.addAllocation(address, bytes);
            return address;
        } finally {
            gate.exit(slot);
        }
    }

    @Override
    public void memAllocAt(long address, long bytes) {
        CallGate.Slot slot = gate.enter();
        try {
            backend.memAllocAt(address, bytes);
            log.addAllocation(address, bytes);
        } finally {
            gate.exit(slot);
        }
    }

    @Override
    public void memAllocAllAt(List<DeviceRegion> allocations) {
        CallGate.Slot slot = gate.enter();
        try {
            backend.memAllocAllAt(allocations);
            for (DeviceRegion allocation : allocations) {
                log.addAllocation(allocation.address(), allocation.bytes());
            }
        } finally {
            gate.exit(slot);
        }
    }

    @Override
    public void memFree(long address) {
        CallGate.Slot slot = gate.enter();
        try {
            // Out of the log before the backend may give the address out again: another thread's allocation there
            // would otherwise be recorded first and then taken out by this free, and lost to every later replay.
            Long bytes = log.removeAllocation(address);
            try {
                backend.memFree(address);
            } catch (RuntimeException e) {
                if (bytes != null) {
                    log.addAllocation(address, bytes);
                }
                throw e;
            }
        } finally {
            gate.exit(slot);
        }
    }

    @Override
    public MemorySegment memAllocHost(long bytes) {
        CallGate.Slot slot = gate.enter();
        try {
            return pinnedHost.allocate(backend, bytes);
        } finally {
            gate.exit(slot);
        }
    }

    @Override
    public void memFreeHost(MemorySegment hostMemory) {
        CallGate.Slot slot = gate.enter();
        try {
            pinnedHost.free(hostMemory);
        } finally {
            gate.exit(slot);
        }
    }

    @Override
    public StreamHandle streamCreate() {
        CallGate.Slot slot = gate.enter();
        try {
            return log.addStream(backend.streamCreate());
        } finally {
            gate.exit(slot);
        }
    }

    @Override
    public void streamDestroy(StreamHandle stream) {
        CallGate.Slot slot = gate.enter();
        try {
            if (stream.id() == StreamHandle.DEFAULT.id()) {
                throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_HANDLE, "the default stream cannot be destroyed");
            }
            backend.streamDestroy(log.backendStream(stream));
            log.removeStream(stream);
        } finally {
            gate.exit(slot);
        }
    }

    @Override
    public EventHandle eventCreate() {
        CallGate.Slot slot = gate.enter();
        try {
            return log.addEvent(backend.eventCreate());
        } finally {
            gate.exit(slot);
        }
    }

    @Override
    public void eventDestroy(EventHandle event) {
        CallGate.Slot slot = gate.enter();
        try {
            backend.eventDestroy(log.backendEvent(event));
            log.removeEvent(event);
            eventTimes.forget(event);
        } finally {
            gate.exit(slot);
        }
    }

    @Override
    public void eventRecord(EventHandle event, StreamHandle stream) {
        CallGate.Slot slot = gate.enter();
        try {
            backend.eventRecord(log.backendEvent(event), log.backendStream(stream));
            eventTimes.recorded(event);
        } finally {
            gate.exit(slot);
        }
    }

    /** Between events recorded on either side of a move too, on the clock {@link EventTimes} carries over. */
    @Override
    public float eventElapsedTime(EventHandle start, EventHandle end) {
        CallGate.Slot slot = gate.enter();
        try {
            return eventTimes.elapsed(start, end, backend, log::backendEvent);
        } finally {
            gate.exit(slot);
        }
    }

    /**
     * Waits for calls in flight, refuses later ones with VGPU_CLOSED, and closes the backend and
     * every former backend kept for pinned host buffers. Idempotent. A migration in progress
     * finishes (or rolls back) first.
     */
    @Override
    public void close() {
        migrationLock.lock();
        try {
            gate.closeForever();
            FailureCollector failures = new FailureCollector();
            pinnedHost.closeAll(backend, failures);
            failures.rethrow();
        } finally {
            migrationLock.unlock();
        }
    }

    // ---- the hooks of GatedVirtualGpu's calls

    @GatedForwarder.Enter
    @Override
    CallGate.Slot enterGate() {
        return gate.enter();
    }

    @GatedForwarder.Exit
    @Override
    void exitGate(CallGate.Slot slot) {
        gate.exit(slot);
    }

    /** A synchronizing call reports an error the source raised while a migration drained it. */
    @GatedForwarder.BeforeSynchronizing
    @Override
    void raiseDeferredError() {
        VgpuException error = deferredError;
        if (error != null && DEFERRED_ERROR.compareAndSet(this, error, null)) {
            throw error;
        }
    }

    /** A setting the backend took ({@code @ReplayedSetting}), for the replay. */
    @GatedForwarder.Record
    @Override
    void recordSetting(GatedVirtualGpu.Setting setting) {
        log.setSetting(setting);
    }

    @GatedForwarder.Translate
    @Override
    StreamHandle backendStream(StreamHandle stream) {
        return log.backendStream(stream);
    }

    @GatedForwarder.Translate
    @Override
    EventHandle backendEvent(EventHandle event) {
        return log.backendEvent(event);
    }

    @GatedForwarder.Translate
    @Override
    FunctionHandle backendFunction(FunctionHandle function) {
        return log.backendFunction(function);
    }
}
