package org.vgpu.job.jcuda;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * The machine's NVRTC library, called through java.lang.foreign: libnvrtc.so.13 (CUDA 13), else .12, else the
 * unversioned name. Only what a compile takes: create, the name expressions, compile, the PTX, the log and the lowered
 * names, destroy.
 */
@SuppressWarnings("restricted") // binding libnvrtc is this class's purpose; the launcher enables native access
final class NvrtcLibrary {
    /** The PTX (null when the compile failed), NVRTC's log and the lowered name of each name expression. */
    record Compiled(String ptx, String log, Map<String, String> loweredNames) {}

    private static final List<String> NAMES = List.of("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so");
    private static volatile NvrtcLibrary loaded;

    private final MethodHandle create;
    private final MethodHandle compile;
    private final MethodHandle ptxSize;
    private final MethodHandle ptx;
    private final MethodHandle logSize;
    private final MethodHandle log;
    private final MethodHandle destroy;
    private final MethodHandle addNameExpression;
    private final MethodHandle loweredName;

    private NvrtcLibrary(SymbolLookup library) {
        Linker linker = Linker.nativeLinker();
        ValueLayout.OfInt result = ValueLayout.JAVA_INT;
        ValueLayout address = ValueLayout.ADDRESS;
        create = linker.downcallHandle(
                find(library, "nvrtcCreateProgram"),
                FunctionDescriptor.of(result, address, address, address, ValueLayout.JAVA_INT, address, address));
        compile = linker.downcallHandle(
                find(library, "nvrtcCompileProgram"),
                FunctionDescriptor.of(result, address, ValueLayout.JAVA_INT, address));
        ptxSize = linker.downcallHandle(
                find(library, "nvrtcGetPTXSize"), FunctionDescriptor.of(result, address, address));
        ptx = linker.downcallHandle(find(library, "nvrtcGetPTX"), FunctionDescriptor.of(result, address, address));
        logSize = linker.downcallHandle(
                find(library, "nvrtcGetProgramLogSize"), FunctionDescriptor.of(result, address, address));
        log = linker.downcallHandle(
                find(library, "nvrtcGetProgramLog"), FunctionDescriptor.of(result, address, address));
        destroy = linker.downcallHandle(find(library, "nvrtcDestroyProgram"), FunctionDescriptor.of(result, address));
        addNameExpression = linker.downcallHandle(
                find(library, "nvrtcAddNameExpression"), FunctionDescriptor.of(result, address, address));
        loweredName = linker.downcallHandle(
                find(library, "nvrtcGetLoweredName"), FunctionDescriptor.of(result, address, address, address));
    }

    static NvrtcLibrary get() {
        NvrtcLibrary library = loaded;
        if (library == null) {
            synchronized (NvrtcLibrary.class) {
                if (loaded == null) {
                    loaded = new NvrtcLibrary(open());
                }
                library = loaded;
            }
        }
        return library;
    }

    private static SymbolLookup open() {
        for (String name : NAMES) {
            try {
                return SymbolLookup.libraryLookup(name, Arena.global());
            } catch (IllegalArgumentException notHere) {
                // the next name
            }
        }
        throw new VgpuException(
                ErrorCode.CUDA_ERROR_NOT_SUPPORTED, "no NVRTC library on this machine (tried " + NAMES + ")");
    }

    private static MemorySegment find(SymbolLookup library, String symbol) {
        return library.find(symbol)
                .orElseThrow(() ->
                        new VgpuException(ErrorCode.CUDA_ERROR_NOT_SUPPORTED, "the NVRTC library has no " + symbol));
    }

    /**
     * Compiles {@code source}; each of {@code nameExpressions} is added before and lowered after, while the program
     * is still there (NVRTC's lowered names are the program's own memory).
     */
    Compiled compile(String source, String name, List<String> options, List<String> nameExpressions) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment programSlot = arena.allocate(ValueLayout.ADDRESS);
            check("nvrtcCreateProgram", (int) create.invokeExact(
                    programSlot,
                    arena.allocateFrom(source),
                    arena.allocateFrom(name),
                    0,
                    MemorySegment.NULL,
                    MemorySegment.NULL));
            MemorySegment program = programSlot.get(ValueLayout.ADDRESS, 0);
            try {
                for (String expression : nameExpressions) {
                    check("nvrtcAddNameExpression", (int)
                            addNameExpression.invokeExact(program, arena.allocateFrom(expression)));
                }
                MemorySegment optionArray = arena.allocate(ValueLayout.ADDRESS, Math.max(1, options.size()));
                for (int i = 0; i < options.size(); i++) {
                    optionArray.setAtIndex(ValueLayout.ADDRESS, i, arena.allocateFrom(options.get(i)));
                }
                int compiled = (int) compile.invokeExact(program, options.size(), optionArray);
                String text = text(arena, program, logSize, log);
                if (compiled != 0) {
                    return new Compiled(null, text, Map.of());
                }
                Map<String, String> lowered = new LinkedHashMap<>();
                for (String expression : nameExpressions) {
                    MemorySegment loweredSlot = arena.allocate(ValueLayout.ADDRESS);
                    check("nvrtcGetLoweredName", (int)
                            loweredName.invokeExact(program, arena.allocateFrom(expression), loweredSlot));
                    lowered.put(
                            expression,
                            loweredSlot
                                    .get(ValueLayout.ADDRESS, 0)
                                    .reinterpret(Long.MAX_VALUE)
                                    .getString(0));
                }
                return new Compiled(text(arena, program, ptxSize, ptx), text, lowered);
            } finally {
                int ignored = (int) destroy.invokeExact(programSlot);
            }
        } catch (VgpuException e) {
            throw e;
        } catch (Throwable e) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_UNKNOWN, "NVRTC could not be called: " + e, e);
        }
    }

    private static String text(Arena arena, MemorySegment program, MethodHandle size, MethodHandle get)
            throws Throwable {
        MemorySegment bytes = arena.allocate(ValueLayout.JAVA_LONG);
        check("nvrtcGet size", (int) size.invokeExact(program, bytes));
        MemorySegment buffer = arena.allocate(Math.max(1, bytes.get(ValueLayout.JAVA_LONG, 0)));
        check("nvrtcGet", (int) get.invokeExact(program, buffer));
        return buffer.getString(0);
    }

    private static void check(String call, int result) {
        if (result != 0) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_UNKNOWN, call + " failed with NVRTC result " + result);
        }
    }
}
