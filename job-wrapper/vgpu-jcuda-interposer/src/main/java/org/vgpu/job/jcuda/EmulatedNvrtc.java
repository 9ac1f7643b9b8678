package org.vgpu.job.jcuda;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * NVRTC on the CPU emulation: a PTX text declaring the {@code extern "C" __global__} kernels of a CUDA C source, with
 * their parameters' sizes, and its {@code __device__}/{@code __constant__} variables, with no instructions. The
 * emulation runs a kernel's Java twin by its name and checks a launch against the declared sizes, which is all it
 * reads of PTX, so a program that compiles with NVRTC runs there as one that loads a PTX file does.
 */
final class EmulatedNvrtc {
    private static final Pattern KERNEL = Pattern.compile(
            "(?:template\\s*<([^>]*)>\\s*)?(extern\\s*\"C\"\\s*)?__global__\\s+void\\s+([A-Za-z_]\\w*)\\s*\\(([^)]*)\\)",
            Pattern.DOTALL);
    private static final Pattern VARIABLE = Pattern.compile(
            "__(device|constant)__\\s+((?:unsigned\\s+|signed\\s+)?[A-Za-z_]\\w*(?:\\s+long)?)\\s+([A-Za-z_]\\w*)"
                    + "\\s*(?:\\[(\\d+)])?\\s*[;=]");

    private EmulatedNvrtc() {}

    /** The PTX of a compile, and the lowered name of each name expression the program added. */
    record Compiled(String ptx, Map<String, String> loweredNames) {}

    static String declarations(String source) {
        return compile(source, List.of()).ptx();
    }

    /**
     * The declarations of {@code source}'s kernels and variables: each kernel that is no template by its name, and
     * each kernel a name expression names by its lowered name ({@link LoweredNames}), with the parameters' sizes of
     * the template's arguments.
     */
    static Compiled compile(String source, List<String> nameExpressions) {
        String code = source.replaceAll("(?s)/\\*.*?\\*/", " ").replaceAll("//[^\\n]*", " ");
        StringBuilder ptx = new StringBuilder(
                "// vgpu: NVRTC on the CPU emulation: declarations only, the kernels run as Java twins\n"
                        + ".version 8.0\n.target sm_80\n.address_size 64\n\n");
        Matcher variable = VARIABLE.matcher(code);
        while (variable.find()) {
            int bits = bits(variable.group(2), variable.group(3));
            ptx.append(variable.group(1).equals("constant") ? ".const" : ".global")
                    .append(" .align ")
                    .append(bits / 8)
                    .append(" .b")
                    .append(bits)
                    .append(' ')
                    .append(variable.group(3))
                    .append(variable.group(4) == null ? "" : "[" + variable.group(4) + "]")
                    .append(";\n");
        }
        Matcher found = KERNEL.matcher(code);
        List<LoweredNames.Kernel> kernels = new ArrayList<>();
        Set<String> declared = new HashSet<>();
        while (found.find()) {
            String parameters = found.group(4).strip();
            LoweredNames.Kernel kernel = new LoweredNames.Kernel(
                    found.group(1) == null ? List.of() : List.of(found.group(1).split(",")),
                    found.group(2) != null,
                    found.group(3),
                    parameters.isEmpty() || parameters.equals("void") ? List.of() : List.of(parameters.split(",")));
            kernels.add(kernel);
            if (kernel.templateParameters().isEmpty() && declared.add(kernel.name())) {
                entry(ptx, kernel.name(), kernel.parameters());
            }
        }
        if (kernels.isEmpty()) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_SOURCE, "the source declares no __global__ void kernel");
        }
        Map<String, String> lowered = new LinkedHashMap<>();
        for (String expression : nameExpressions) {
            LoweredNames.Lowered name = LoweredNames.lower(expression, kernels);
            lowered.put(expression, name.name());
            if (declared.add(name.name())) {
                entry(ptx, name.name(), name.parameters());
            }
        }
        return new Compiled(ptx.toString(), lowered);
    }

    private static void entry(StringBuilder ptx, String name, List<String> parameters) {
        ptx.append("\n.visible .entry ").append(name).append("(");
        for (int i = 0; i < parameters.size(); i++) {
            ptx.append(i == 0 ? "\n" : ",\n")
                    .append("\t.param .b")
                    .append(bits(parameters.get(i), name))
                    .append(' ')
                    .append(name)
                    .append("_param_")
                    .append(i);
        }
        ptx.append("\n)\n{\n\tret;\n}\n");
    }

    /** The size in bits of a C parameter or variable type: pointers and 64-bit types 64, short 16, char 8, else 32. */
    private static int bits(String declaration, String where) {
        String type = declaration
                .replaceAll("\\b(const|volatile|__restrict__|restrict|unsigned|signed)\\b", " ")
                .strip();
        if (type.contains("*")) {
            return 64;
        }
        String base = type.split("\\s+")[0];
        return switch (base) {
            case "double", "size_t", "int64_t", "uint64_t", "long" -> 64;
            case "", "float", "int", "int32_t", "uint32_t" -> 32;
            case "short", "int16_t", "uint16_t", "half", "__half" -> 16;
            case "char", "bool", "int8_t", "uint8_t" -> 8;
            default ->
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_INVALID_SOURCE,
                        "the CPU emulation's NVRTC does not know the size of type '" + type + "' (in " + where + ")");
        };
    }
}
