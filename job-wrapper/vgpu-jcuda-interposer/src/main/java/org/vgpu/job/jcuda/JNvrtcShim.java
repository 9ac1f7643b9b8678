package org.vgpu.job.jcuda;

import static org.vgpu.job.jcuda.JCudaApi.NVRTC;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import jcuda.LogLevel;
import jcuda.nvrtc.nvrtcProgram;
import jcuda.nvrtc.nvrtcResult;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * {@code jcuda.nvrtc.JNvrtc}'s calls for programs that compile their kernels at run time. JCuda 12.6's own NVRTC
 * binding needs libnvrtc.so.12, which a machine with CUDA 13 lacks, so the shim calls the machine's NVRTC directly
 * ({@link NvrtcLibrary}, through java.lang.foreign) where a vGPU of the job is a GPU. Where all of them are the CPU
 * emulation, no GPU code is needed: "compiling" yields a PTX text that declares the source's {@code extern "C"}
 * kernels and module variables ({@link EmulatedNvrtc}), which the emulation loads, running the kernels' Java twins.
 */
public final class JNvrtcShim {
    /** A program's source, name, name expressions and, once compiled, its PTX, log and lowered names. */
    private static final class Program {
        final String source;
        final String name;
        final List<String> nameExpressions = new ArrayList<>();
        String ptx;
        String log = "";
        Map<String, String> loweredNames = Map.of();

        Program(String source, String name) {
            this.source = source;
            this.name = name;
        }
    }

    private static final Map<Long, Program> PROGRAMS = new ConcurrentHashMap<>();
    private static final AtomicLong NEXT_ID = new AtomicLong(1);

    private JNvrtcShim() {}

    public static void setExceptionsEnabled(boolean enabled) {
        NVRTC.setExceptionsEnabled(enabled);
    }

    /** JCuda's native log level: the program's calls reach no JCuda native code under vgpu, so there is nothing to log. */
    public static void setLogLevel(LogLevel level) {}

    public static String nvrtcGetErrorString(int result) {
        return nvrtcResult.stringFor(result);
    }

    public static int nvrtcCreateProgram(
            nvrtcProgram program, String source, String name, int numHeaders, String[] headers, String[] includeNames) {
        return NVRTC.call("nvrtcCreateProgram", () -> {
            if (numHeaders > 0) {
                throw JCudaApi.unsupported("nvrtcCreateProgram with headers (put them into the source)");
            }
            if (source == null) {
                throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "the source is null");
            }
            long id = NEXT_ID.getAndIncrement();
            PROGRAMS.put(id, new Program(source, name == null ? "default_program" : name));
            JCudaObjects.setNativePointer(program, id);
        });
    }

    public static int nvrtcDestroyProgram(nvrtcProgram program) {
        return NVRTC.call("nvrtcDestroyProgram", () -> {
            find(program);
            PROGRAMS.remove(JCudaObjects.nativePointer(program));
            JCudaObjects.setNativePointer(program, 0);
        });
    }

    public static int nvrtcCompileProgram(nvrtcProgram program, int numOptions, String[] options) {
        return NVRTC.call("nvrtcCompileProgram", () -> {
            Program compiled = find(program);
            List<String> given = options == null ? List.of() : List.of(options).subList(0, numOptions);
            if (JCudaSession.get().allEmulated()) {
                EmulatedNvrtc.Compiled declared = EmulatedNvrtc.compile(compiled.source, compiled.nameExpressions);
                compiled.ptx = declared.ptx();
                compiled.loweredNames = declared.loweredNames();
                compiled.log = "";
                return nvrtcResult.NVRTC_SUCCESS;
            }
            NvrtcLibrary.Compiled result =
                    NvrtcLibrary.get().compile(compiled.source, compiled.name, given, compiled.nameExpressions);
            compiled.log = result.log();
            compiled.ptx = result.ptx();
            compiled.loweredNames = result.loweredNames();
            return result.ptx() == null ? nvrtcResult.NVRTC_ERROR_COMPILATION : nvrtcResult.NVRTC_SUCCESS;
        });
    }

    /** As NVRTC's: before the compile, a name expression whose lowered name the program asks for after it. */
    public static int nvrtcAddNameExpression(nvrtcProgram program, String nameExpression) {
        return NVRTC.call("nvrtcAddNameExpression", () -> {
            Program found = find(program);
            if (nameExpression == null) {
                return nvrtcResult.NVRTC_ERROR_INVALID_INPUT;
            }
            if (found.ptx != null) {
                return nvrtcResult.NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION;
            }
            found.nameExpressions.add(nameExpression);
            return nvrtcResult.NVRTC_SUCCESS;
        });
    }

    /**
     * The lowered (mangled) name of a name expression added before the compile: NVRTC's where a GPU compiled it, the
     * Itanium C++ ABI's on the CPU emulation ({@link LoweredNames}).
     */
    public static int nvrtcGetLoweredName(nvrtcProgram program, String nameExpression, String[] loweredName) {
        return NVRTC.call("nvrtcGetLoweredName", () -> {
            Program found = find(program);
            if (found.ptx == null) {
                return nvrtcResult.NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION;
            }
            String lowered = found.loweredNames.get(nameExpression);
            if (lowered == null) {
                return nvrtcResult.NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID;
            }
            loweredName[0] = lowered;
            return nvrtcResult.NVRTC_SUCCESS;
        });
    }

    public static int nvrtcGetPTXSize(nvrtcProgram program, long[] size) {
        return NVRTC.call("nvrtcGetPTXSize", () -> {
            size[0] = ptx(program).length() + 1L;
        });
    }

    public static int nvrtcGetPTX(nvrtcProgram program, String[] ptx) {
        return NVRTC.call("nvrtcGetPTX", () -> {
            ptx[0] = ptx(program);
        });
    }

    public static int nvrtcGetProgramLogSize(nvrtcProgram program, long[] size) {
        return NVRTC.call("nvrtcGetProgramLogSize", () -> {
            size[0] = find(program).log.length() + 1L;
        });
    }

    public static int nvrtcGetProgramLog(nvrtcProgram program, String[] log) {
        return NVRTC.call("nvrtcGetProgramLog", () -> {
            log[0] = find(program).log;
        });
    }

    private static Program find(nvrtcProgram program) {
        Program found = PROGRAMS.get(JCudaObjects.nativePointer(program));
        if (found == null) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "not a program nvrtcCreateProgram made");
        }
        return found;
    }

    private static String ptx(nvrtcProgram program) {
        Program found = find(program);
        if (found.ptx == null) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "the program is not compiled");
        }
        return found.ptx;
    }
}
