package org.vgpu.job.jcuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The list of the JCuda calls vgpu serves (docs/jcuda-programs.md, "The calls served") is the shims' own: each class's
 * bullet names exactly the public static methods of its shim.
 */
class ServedCallsDocumentTest {
    private static final Path LIST = Path.of("..", "..", "docs", "jcuda-programs.md");

    /** A call of JCuda's API as a document names it: `cuMemAlloc`, `cudaMalloc`, `nvrtcGetPTX`, and JCuda's helpers. */
    private static final Pattern CALL =
            Pattern.compile("`((?:cu|cuda|nvrtc)[A-Z]\\w*|setExceptionsEnabled|setLogLevel|align)`");

    @ParameterizedTest
    @ValueSource(strings = {"jcuda.driver.JCudaDriver", "jcuda.runtime.JCuda", "jcuda.nvrtc.JNvrtc"})
    void theListNamesExactlyTheCallsTheShimDefines(String jcudaClass) throws IOException {
        String bullet = bullet(section(Files.readString(LIST), "## The calls served"), "(`" + jcudaClass + "`)");

        assertEquals(
                shimCalls(JCudaCallSites.SHIMS.get(jcudaClass.replace('.', '/'))),
                calls(bullet),
                LIST + ", " + jcudaClass);
    }

    private static Set<String> shimCalls(Class<?> shim) {
        return Stream.of(shim.getDeclaredMethods())
                .filter(method -> Modifier.isPublic(method.getModifiers()) && Modifier.isStatic(method.getModifiers()))
                .map(Method::getName)
                .collect(Collectors.toCollection(TreeSet::new));
    }

    private static Set<String> calls(String text) {
        Matcher call = CALL.matcher(text);
        Set<String> calls = new TreeSet<>();
        while (call.find()) {
            calls.add(call.group(1));
        }
        return calls;
    }

    /** The text from {@code heading} to the next heading of its level or above. */
    private static String section(String document, String heading) {
        int start = document.indexOf("\n" + heading + "\n");
        assertTrue(start >= 0, "the document has the section " + heading);
        String level = heading.substring(0, heading.indexOf(' '));
        Matcher next = Pattern.compile("\n#{1," + level.length() + "} ").matcher(document);
        int end = next.find(start + heading.length() + 1) ? next.start() : document.length();
        return document.substring(start, end);
    }

    /** The list item (a line starting "- ", with its continuation lines) that contains {@code mark}. */
    private static String bullet(String section, String mark) {
        for (String item : section.split("\n(?=- )|\n\n")) {
            if (item.contains(mark)) {
                return item;
            }
        }
        throw new AssertionError("no list item names " + mark + " in\n" + section);
    }
}
