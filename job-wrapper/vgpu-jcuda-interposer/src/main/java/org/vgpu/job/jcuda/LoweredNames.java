package org.vgpu.job.jcuda;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * The lowered (mangled) name of a kernel an NVRTC name expression names ({@code "scale<float>"}, {@code "&sum<int,
 * 4>"}, {@code "fill"}), where no NVRTC compiles the source: on the CPU emulation. The names are those of the Itanium
 * C++ ABI, which NVRTC follows on Linux ({@code _Z5scaleIfEvPT_S0_i}), so a kernel's Java twin is registered under the
 * name it has on a GPU. What it lowers: a {@code __global__} function at namespace scope, a template of type and
 * integer parameters, or not one; its parameters of C's arithmetic types, the template's type parameters and pointers
 * to them, {@code const} or not. Anything else (a class type, a reference, an overloaded name) is refused naming the
 * expression; the same program on a GPU gets NVRTC's own answer.
 */
final class LoweredNames {
    /** A kernel of the source: its template's parameters (empty when it is none), name and parameter declarations. */
    record Kernel(List<String> templateParameters, boolean externC, String name, List<String> parameters) {}

    /** A name expression, lowered: the name, and the kernel's parameter declarations with the template's arguments. */
    record Lowered(String name, List<String> parameters) {}

    private static final Pattern EXPRESSION =
            Pattern.compile("&?\\s*([A-Za-z_]\\w*)\\s*(?:<(.*)>)?\\s*", Pattern.DOTALL);
    private static final Pattern TOKEN = Pattern.compile("\\*|[A-Za-z_]\\w*");
    private static final Pattern INTEGER = Pattern.compile("-?\\d+");
    private static final Map<String, String> BUILTIN = Map.ofEntries(
            Map.entry("void", "v"),
            Map.entry("bool", "b"),
            Map.entry("char", "c"),
            Map.entry("signed char", "a"),
            Map.entry("int8_t", "a"),
            Map.entry("unsigned char", "h"),
            Map.entry("uint8_t", "h"),
            Map.entry("short", "s"),
            Map.entry("short int", "s"),
            Map.entry("int16_t", "s"),
            Map.entry("unsigned short", "t"),
            Map.entry("uint16_t", "t"),
            Map.entry("int", "i"),
            Map.entry("signed", "i"),
            Map.entry("signed int", "i"),
            Map.entry("int32_t", "i"),
            Map.entry("unsigned", "j"),
            Map.entry("unsigned int", "j"),
            Map.entry("uint32_t", "j"),
            Map.entry("long", "l"),
            Map.entry("long int", "l"),
            Map.entry("int64_t", "l"),
            Map.entry("unsigned long", "m"),
            Map.entry("size_t", "m"),
            Map.entry("uint64_t", "m"),
            Map.entry("long long", "x"),
            Map.entry("unsigned long long", "y"),
            Map.entry("float", "f"),
            Map.entry("double", "d"));
    /** Words that are part of a type, never a parameter's name. */
    private static final List<String> TYPE_WORDS =
            List.of("unsigned", "signed", "int", "long", "short", "char", "float", "double", "bool", "void");

    private LoweredNames() {}

    /** {@code expression} lowered, among the source's {@code kernels}. */
    static Lowered lower(String expression, List<Kernel> kernels) {
        Matcher parsed = EXPRESSION.matcher(expression);
        if (!parsed.matches()) {
            throw refused(expression, "it is not a kernel's name, with or without template arguments");
        }
        String name = parsed.group(1);
        List<Kernel> named =
                kernels.stream().filter(kernel -> kernel.name().equals(name)).toList();
        if (named.size() != 1) {
            throw refused(
                    expression,
                    named.isEmpty() ? "the source has no __global__ function " + name : name + " is overloaded");
        }
        Kernel kernel = named.getFirst();
        List<String> arguments = parsed.group(2) == null ? List.of() : split(parsed.group(2));
        if (arguments.size() != kernel.templateParameters().size()) {
            throw refused(
                    expression,
                    name + " takes " + kernel.templateParameters().size() + " template arguments, the expression gives "
                            + arguments.size());
        }
        if (kernel.externC() && arguments.isEmpty()) {
            return new Lowered(name, kernel.parameters());
        }
        return new Lowered(mangled(expression, kernel, arguments), substituted(kernel, arguments));
    }

    private static String mangled(String expression, Kernel kernel, List<String> arguments) {
        List<String> typeParameters = new ArrayList<>();
        StringBuilder templateArguments = new StringBuilder();
        for (int i = 0; i < arguments.size(); i++) {
            String[] parameter = kernel.templateParameters().get(i).strip().split("\\s+");
            String argument = arguments.get(i);
            String parameterName = parameter[parameter.length - 1];
            String kind = String.join(" ", List.of(parameter).subList(0, parameter.length - 1));
            if (kind.equals("typename") || kind.equals("class")) {
                typeParameters.add(parameterName);
                templateArguments.append(builtin(expression, argument));
            } else {
                typeParameters.add(null); // a value parameter: no type names it
                if (!INTEGER.matcher(argument).matches()) {
                    throw refused(expression, "template argument " + argument + " is not an integer");
                }
                templateArguments
                        .append('L')
                        .append(builtin(expression, kind))
                        .append(argument.replace('-', 'n'))
                        .append('E');
            }
        }
        Substitutions substitutions = new Substitutions();
        StringBuilder name =
                new StringBuilder("_Z").append(kernel.name().length()).append(kernel.name());
        if (!arguments.isEmpty()) {
            substitutions.add("template " + kernel.name());
            name.append('I').append(templateArguments).append("Ev"); // a function template's name has its return type
        }
        List<String> parameters = kernel.parameters();
        if (parameters.isEmpty()) {
            return name.append('v').toString();
        }
        for (String parameter : parameters) {
            name.append(type(expression, parameter, typeParameters, substitutions));
        }
        return name.toString();
    }

    /**
     * A parameter's type, as the ABI writes it in a function's signature: top-level {@code const} and {@code
     * __restrict__} dropped, every pointer and qualified type a substitution candidate in the order it is written.
     */
    private static String type(
            String expression, String declaration, List<String> typeParameters, Substitutions substitutions) {
        if (declaration.contains("&") || declaration.contains("[") || declaration.contains("volatile")) {
            throw refused(expression, "parameter '" + declaration.strip() + "' is not of a type vgpu lowers");
        }
        List<String> tokens = new ArrayList<>();
        Matcher token = TOKEN.matcher(declaration);
        while (token.find()) {
            String word = token.group();
            if (!word.equals("__restrict__") && !word.equals("restrict")) {
                tokens.add(word);
            }
        }
        int firstPointer = tokens.indexOf("*");
        List<String> baseWords = new ArrayList<>(firstPointer < 0 ? tokens : tokens.subList(0, firstPointer));
        boolean baseConst = baseWords.remove("const");
        if (firstPointer < 0 && baseWords.size() > 1 && !TYPE_WORDS.contains(baseWords.getLast())) {
            baseWords.removeLast(); // the parameter's name
        }
        String base = String.join(" ", baseWords);
        int templateParameter = typeParameters.indexOf(base);
        String canonical;
        String encoded;
        if (templateParameter >= 0) {
            canonical = "T" + (templateParameter == 0 ? "" : Integer.toString(templateParameter - 1)) + "_";
            encoded = substitutions.encode(canonical, canonical); // a template parameter is a candidate itself
        } else {
            canonical = builtin(expression, base);
            encoded = canonical;
        }
        if (firstPointer < 0) {
            return encoded;
        }
        List<String> levels = tokens.subList(firstPointer, tokens.size());
        boolean qualified = baseConst;
        for (int i = 0; i < levels.size(); i++) {
            if (!levels.get(i).equals("*")) {
                continue;
            }
            if (qualified) {
                canonical = "K" + canonical;
                encoded = substitutions.encode(canonical, "K" + encoded);
            }
            canonical = "P" + canonical;
            encoded = substitutions.encode(canonical, "P" + encoded);
            qualified = i + 1 < levels.size() && levels.get(i + 1).equals("const");
        }
        return encoded;
    }

    /** The substitution candidates seen so far ({@code S_}, {@code S0_}, {@code S1_}, ...), by their full encoding. */
    private static final class Substitutions {
        private final List<String> seen = new ArrayList<>();

        void add(String candidate) {
            seen.add(candidate);
        }

        /** {@code written} (built of earlier encodings), or the substitution of {@code canonical} if it was seen. */
        String encode(String canonical, String written) {
            int index = seen.indexOf(canonical);
            if (index >= 0) {
                return "S" + (index == 0 ? "" : Integer.toString(index - 1, 36).toUpperCase(Locale.ROOT)) + "_";
            }
            seen.add(canonical);
            return written;
        }
    }

    private static String builtin(String expression, String type) {
        String code = BUILTIN.get(type.strip().replaceAll("\\s+", " "));
        if (code == null) {
            throw refused(expression, "type '" + type.strip() + "' is not one vgpu lowers");
        }
        return code;
    }

    /** The kernel's parameter declarations with each type parameter's argument in its place, for their sizes. */
    private static List<String> substituted(Kernel kernel, List<String> arguments) {
        List<String> parameters = new ArrayList<>();
        for (String parameter : kernel.parameters()) {
            String declaration = parameter;
            for (int i = 0; i < arguments.size(); i++) {
                String[] words = kernel.templateParameters().get(i).strip().split("\\s+");
                declaration = declaration.replaceAll(
                        "\\b" + Pattern.quote(words[words.length - 1]) + "\\b", arguments.get(i));
            }
            parameters.add(declaration);
        }
        return parameters;
    }

    private static List<String> split(String arguments) {
        List<String> each = new ArrayList<>();
        for (String argument : arguments.split(",")) {
            each.add(argument.strip().replaceAll("\\s+", " "));
        }
        return each;
    }

    private static VgpuException refused(String expression, String why) {
        return new VgpuException(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                "nvrtcGetLoweredName on the CPU emulation: name expression '" + expression + "': " + why);
    }
}
