package org.vgpu.runtime.remote.worker;

import java.util.HashMap;
import java.util.Map;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.EventHandle;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VgpuException;

/**
 * The session's module, function, stream and event ids, chosen by the client, and the handles of
 * the worker's vGPU they stand for. GPU thread only, so plain maps.
 */
final class SessionHandles {
    final Map<Integer, ModuleHandle> modules = new HashMap<>();
    final Map<Integer, FunctionHandle> functions = new HashMap<>();
    final Map<Integer, StreamHandle> streams = new HashMap<>();
    final Map<Integer, EventHandle> events = new HashMap<>();

    /** Stream id 0 is the default stream, which exists without being created. */
    StreamHandle stream(int id) {
        return id == StreamHandle.DEFAULT.id() ? StreamHandle.DEFAULT : lookup(streams, id, "stream");
    }

    EventHandle event(int id) {
        return lookup(events, id, "event");
    }

    FunctionHandle function(int id) {
        return lookup(functions, id, "function");
    }

    ModuleHandle module(int id) {
        return lookup(modules, id, "module");
    }

    static <T> T lookup(Map<Integer, T> handles, int id, String kind) {
        T handle = handles.get(id);
        if (handle == null) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_HANDLE, kind + " " + id + " is not live in this session");
        }
        return handle;
    }

    static <T> void register(Map<Integer, T> handles, int id, String kind, T handle) {
        if (handles.putIfAbsent(id, handle) != null) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, kind + " id " + id + " is already in use");
        }
    }
}
