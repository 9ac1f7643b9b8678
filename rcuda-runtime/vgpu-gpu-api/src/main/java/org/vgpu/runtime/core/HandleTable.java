package org.vgpu.runtime.core;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * Runtime-owned ids for backend objects (modules, functions, streams, events). Ids start at 1;
 * 0 stays free for the default stream. Lookups are lock-free since every launch does one.
 */
public final class HandleTable<T> {
    private final String kind;
    private final AtomicInteger nextId = new AtomicInteger(1);
    private final ConcurrentHashMap<Integer, T> entries = new ConcurrentHashMap<>();

    public HandleTable(String kind) {
        this.kind = kind;
    }

    public int add(T value) {
        int id = nextId.getAndIncrement();
        entries.put(id, value);
        return id;
    }

    public T get(int id) {
        T value = entries.get(id);
        if (value == null) {
            throw unknown(id);
        }
        return value;
    }

    public T remove(int id) {
        T value = entries.remove(id);
        if (value == null) {
            throw unknown(id);
        }
        return value;
    }

    /** Removes and returns every entry, for close. */
    public List<T> drain() {
        List<T> all = new ArrayList<>();
        for (Integer id : List.copyOf(entries.keySet())) {
            T value = entries.remove(id);
            if (value != null) {
                all.add(value);
            }
        }
        return all;
    }

    public int size() {
        return entries.size();
    }

    private VgpuException unknown(int id) {
        return new VgpuException(ErrorCode.CUDA_ERROR_INVALID_HANDLE, kind + " " + id + " is not live on this vGPU");
    }
}
