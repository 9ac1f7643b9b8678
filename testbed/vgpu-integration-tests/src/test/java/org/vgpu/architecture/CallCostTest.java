package org.vgpu.architecture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import org.vgpu.runtime.api.VirtualGpu;

/**
 * What a GPU call costs in hand-written files: for each call of {@link VirtualGpu}, the files a change to it
 * touches. Prints the table (call, count, files) and holds every call that has a remote form or is replayed to at
 * most {@value #MOST_FILES} files, but for the {@link #EXEMPT} calls, each with the reason it is written by hand.
 *
 * <p>The files are the hand-written main sources ({@code src/main/java}; the call-surface processor's output lies
 * in {@code target} and is not counted) of the call-surface modules: every module under {@code rcuda-runtime/} and
 * {@code migration-agent/}. A file counts for call {@code x} when at least one of these holds:
 * <ol>
 *   <li>it declares a method named {@code x}: the call itself, its checks, a backend's meaning of it, a
 *       forwarding or recording written by hand, a helper of that name;</li>
 *   <li>it declares a method named as one of {@code x}'s primitives: {@code doX}, and every {@code do...} method
 *       that the body of {@code AbstractVirtualGpu}'s {@code x} names ({@code moduleLoadData} reaches
 *       {@code doModuleLoad});</li>
 *   <li>it declares a method named as the hand-written remote request that serves {@code x}: the
 *       {@code RemoteCalls} request named {@code x}, or the one {@link #SHARED_REQUESTS} names for it;</li>
 *   <li>it replays {@code x}: it is {@code Replay} and makes {@code x} on the migration's target
 *       ({@code target.x(} or {@code target::x}).</li>
 * </ol>
 * A declaration is a line that starts, after annotations and modifiers, with a type, the method's name and its
 * opening parenthesis; comments and calls are not declarations. A call <em>has a remote form</em> when a request of
 * the wire ({@code RequestVisitor}, generated or written by hand) is named after it or {@link #SHARED_REQUESTS}
 * names it, and <em>is replayed</em> when rule 4 counts a file for it. So a call a worker serves one to one
 * ({@code @RemoteCall}) costs {@code VirtualGpu}, {@code AbstractVirtualGpu} and the backends that mean it; one
 * with a remote form of its own adds {@code RemoteCalls}, {@code RemoteGpu} and {@code RequestHandler}; one whose
 * state a migration carries by hand adds {@code MigratableGpu} and {@code Replay}.
 */
class CallCostTest {
    /** The most hand-written files a call may cost. */
    static final int MOST_FILES = 6;

    private static final Path ROOT = Path.of("..", "..");
    private static final List<String> CALL_SURFACE_MODULES = List.of("rcuda-runtime", "migration-agent");
    private static final String REMOTE_CALLS = "org.vgpu.runtime.remote.protocol.RemoteCalls";
    private static final String REQUEST_VISITOR = "org.vgpu.runtime.remote.protocol.RequestVisitor";
    private static final String REPLAY = "Replay.java";
    private static final String VALIDATION = "AbstractVirtualGpu.java";

    /** The session's own frames, which serve no call of the API. */
    private static final Set<String> SESSION_REQUESTS = Set.of("hello", "ping", "goodbye");

    /**
     * A worker's frames for page-locked memory it shares with a program on its host: they serve the C library's host
     * memory and its copies (cuMemHostAlloc, cuMemcpyHtoD/DtoH on such memory), and a Java remote vGPU's memAllocHost
     * and copies on its memory beside the requests those calls have anyway (memory of the process's own, the
     * copies' chunked requests): a second form of a call, not a call's cost, so they are left out here.
     */
    private static final Set<String> SHARED_HOST_MEMORY_REQUESTS =
            Set.of("hostRegionCreate", "hostRegionFree", "memcpyHtoDFromRegion", "memcpyDtoHToRegion");

    /** The hand-written requests that serve calls of other names: a request to the calls it serves. */
    private static final Map<String, List<String>> SHARED_REQUESTS = Map.of(
            "moduleLoad", List.of("moduleLoadData"),
            "memAllocAt", List.of("memAlloc", "memAllocAt"),
            "memcpyHtoD", List.of("memcpyHtoD", "memcpyHtoDAsync"),
            "memcpyDtoH", List.of("memcpyDtoH", "memcpyDtoHAsync"),
            "memcpyDtoD", List.of("memcpyDtoD", "memcpyDtoDAsync"),
            "memcpyDtoHGather", List.of("memcpyDtoHGatherAsync"),
            "memcpyHtoDScatter", List.of("memcpyHtoDScatterAsync"),
            "memset",
                    List.of("memsetD8", "memsetD16", "memsetD32", "memsetD8Async", "memsetD16Async", "memsetD32Async"));

    /**
     * The calls that cost more, and why each cannot be one to one. The list only shrinks: a call that costs
     * {@value #MOST_FILES} files or fewer is taken off it (the test says so).
     */
    static final Map<String, String> EXEMPT = exempt();

    private static Map<String, String> exempt() {
        Map<String, String> exempt = new LinkedHashMap<>();
        String streamed = "a bulk copy: chunked on the wire and streamed by the worker's BulkCopies, the client"
                + " landing or sending the chunks as they come";
        exempt.put("memcpyHtoD", streamed);
        exempt.put("memcpyDtoH", streamed);
        exempt.put("memcpyDtoHGatherAsync", streamed + ", many regions in one request");
        exempt.put("memcpyHtoDScatterAsync", streamed + ", many regions in one request");
        exempt.put(
                "launchKernel",
                "its arguments are packed against the kernel's signature; the migration agent counts launches");
        String created = "a creation: the client chooses the id, so that creating is pipelined, the worker registers"
                + " it in its handle table, and a migration recreates it on the target";
        exempt.put("moduleLoadData", created + " (from the module image it keeps)");
        exempt.put("moduleGetFunction", created + " (the worker answers the kernel's parameter sizes)");
        exempt.put(
                "streamSynchronize",
                "the client answers it without a request when the stream ends in a copy to the host");
        exempt.put("memcpyDtoD", "one request serves the synchronous and the asynchronous form");
        return exempt;
    }

    private static final Pattern DO_NAME = Pattern.compile("\\bdo[A-Z]\\w*");
    private static final Set<String> NOT_TYPES = Set.of("return", "new", "throw", "else", "yield", "case", "await");

    @Test
    void noCallWithARemoteFormOrAReplayCostsMoreThanSixHandWrittenFilesButTheExemptOnes() {
        Map<Path, String> sources = handWrittenSources();
        Map<String, List<String>> costs = costs(sources);
        Set<String> covered = covered(sources);
        System.out.println(table(costs, covered));
        List<String> tooDear = costs.entrySet().stream()
                .filter(cost -> covered.contains(cost.getKey())
                        && cost.getValue().size() > MOST_FILES
                        && !EXEMPT.containsKey(cost.getKey()))
                .map(cost -> cost.getKey() + " costs " + cost.getValue().size() + ": " + cost.getValue())
                .toList();
        assertEquals(List.of(), tooDear, "calls costing more than " + MOST_FILES + " hand-written files");
        List<String> needless = EXEMPT.keySet().stream()
                .filter(call -> !covered.contains(call) || costs.get(call).size() <= MOST_FILES)
                .toList();
        assertEquals(List.of(), needless, "exempt calls that need no exemption: take them off EXEMPT");
    }

    @Test
    void everyHandWrittenRequestServesACall() {
        Set<String> calls = calls();
        for (Map.Entry<String, List<String>> shared : SHARED_REQUESTS.entrySet()) {
            assertTrue(calls.containsAll(shared.getValue()), shared + " names a call VirtualGpu lacks");
        }
        List<String> unserved = requests(REMOTE_CALLS).stream()
                .filter(request -> !SESSION_REQUESTS.contains(request)
                        && !SHARED_HOST_MEMORY_REQUESTS.contains(request)
                        && !calls.contains(request)
                        && !SHARED_REQUESTS.containsKey(request))
                .toList();
        assertEquals(
                List.of(),
                unserved,
                "RemoteCalls requests named after no call: say in SHARED_REQUESTS which calls they serve");
    }

    @Test
    void aRemoteFormWrittenByHandAddsItsFiles() {
        Map<Path, String> sources = new TreeMap<>(handWrittenSources());
        int before = costs(sources).get("ctxSetLimit").size();
        sources.put(
                Path.of("RemoteCalls2.java"),
                "interface RemoteCalls2 {\n    @Call(opcode = 1, kind = SYNC)\n    void ctxSetLimit(int limit, long value);\n}\n");
        sources.put(
                Path.of("RemoteGpu2.java"),
                "class RemoteGpu2 {\n    @Override\n    protected void doCtxSetLimit(ContextLimit limit, long value) {\n        send();\n    }\n}\n");
        sources.put(
                Path.of("Mentions.java"),
                "class Mentions {\n    // ctxSetLimit(limit) is not declared here\n    void set() {\n        gpu.ctxSetLimit(l, 1);\n        return doCtxSetLimit(l, 1);\n    }\n}\n");
        assertEquals(before + 2, costs(sources).get("ctxSetLimit").size());
    }

    /** For each call, the names of the files it costs. */
    static Map<String, List<String>> costs(Map<Path, String> sources) {
        Map<String, List<String>> requestOf = new TreeMap<>();
        SHARED_REQUESTS.forEach((request, served) -> served.forEach(call ->
                requestOf.computeIfAbsent(call, unused -> new ArrayList<>()).add(request)));
        Map<String, List<String>> costs = new TreeMap<>();
        for (String call : calls()) {
            Set<String> names = new TreeSet<>(primitives(call, sources));
            names.add(call);
            names.addAll(requestOf.getOrDefault(call, List.of()));
            Pattern declared = declaration(names);
            costs.put(
                    call,
                    sources.entrySet().stream()
                            .filter(source ->
                                    declared.matcher(source.getValue()).find()
                                            || replays(source.getKey(), source.getValue(), call))
                            .map(source -> source.getKey().getFileName().toString())
                            .sorted()
                            .toList());
        }
        return costs;
    }

    /** The calls that have a remote form or are replayed. */
    static Set<String> covered(Map<Path, String> sources) {
        Set<String> requests = requests(REQUEST_VISITOR);
        Set<String> covered = new TreeSet<>();
        SHARED_REQUESTS.values().forEach(covered::addAll);
        for (String call : calls()) {
            if (requests.contains(call)
                    || sources.entrySet().stream()
                            .anyMatch(source -> replays(source.getKey(), source.getValue(), call))) {
                covered.add(call);
            }
        }
        return covered;
    }

    private static boolean replays(Path file, String source, String call) {
        return file.getFileName().toString().equals(REPLAY)
                && Pattern.compile("\\btarget(?:\\.|::)" + call + "\\b")
                        .matcher(source)
                        .find();
    }

    /** {@code doX} and the {@code do...} methods {@code AbstractVirtualGpu}'s declaration of {@code call} names. */
    private static Set<String> primitives(String call, Map<Path, String> sources) {
        Set<String> primitives = new TreeSet<>();
        primitives.add("do" + Character.toUpperCase(call.charAt(0)) + call.substring(1));
        Pattern declared = declaration(Set.of(call));
        sources.entrySet().stream()
                .filter(source -> source.getKey().getFileName().toString().equals(VALIDATION))
                .forEach(source -> {
                    Matcher declaration = declared.matcher(source.getValue());
                    while (declaration.find()) {
                        Matcher primitive = DO_NAME.matcher(body(source.getValue(), declaration.end()));
                        while (primitive.find()) {
                            primitives.add(primitive.group());
                        }
                    }
                });
        return primitives;
    }

    /** The body of the method whose declaration ends (at its opening parenthesis) at {@code from}; none for an abstract one. */
    private static String body(String source, int from) {
        int open = source.indexOf('{', from);
        int semicolon = source.indexOf(';', from);
        if (open < 0 || (semicolon >= 0 && semicolon < open)) {
            return "";
        }
        int depth = 0;
        for (int i = open; i < source.length(); i++) {
            char c = source.charAt(i);
            if (c == '"' || c == '\'') {
                i = endOfLiteral(source, i, c);
            } else if (c == '{') {
                depth++;
            } else if (c == '}' && --depth == 0) {
                return source.substring(open, i + 1);
            }
        }
        return source.substring(open);
    }

    private static int endOfLiteral(String source, int start, char quote) {
        for (int i = start + 1; i < source.length(); i++) {
            char c = source.charAt(i);
            if (c == '\\') {
                i++;
            } else if (c == quote || c == '\n') {
                return i;
            }
        }
        return source.length();
    }

    /** A line declaring a method of one of {@code names}: annotations, modifiers, a type, the name and its parenthesis. */
    private static Pattern declaration(Set<String> names) {
        return Pattern.compile(
                "^[ \\t]*(?:@\\w+(?:\\([^)]*\\))?\\s+)*"
                        + "(?:(?:public|protected|private|abstract|final|static|default|synchronized)\\s+)*"
                        + "(?:<[\\w<>\\[\\], .?&]+>\\s+)?"
                        + "(?!(?:" + String.join("|", NOT_TYPES) + ")\\b)[\\w.]+(?:<[\\w<>\\[\\], .?]*>)?(?:\\[\\])*"
                        + "\\s+(?:" + String.join("|", names) + ")\\s*\\(",
                Pattern.MULTILINE);
    }

    /** The calls of the API. */
    static Set<String> calls() {
        return Arrays.stream(VirtualGpu.class.getDeclaredMethods())
                .filter(method -> !Modifier.isStatic(method.getModifiers()) && !method.isSynthetic())
                .map(Method::getName)
                .collect(Collectors.toCollection(TreeSet::new));
    }

    /** The requests of interface {@code type}: {@code RemoteCalls}' (written by hand) or the visitor's (all). */
    static Set<String> requests(String type) {
        try {
            return Arrays.stream(Class.forName(type).getDeclaredMethods())
                    .map(Method::getName)
                    .collect(Collectors.toCollection(TreeSet::new));
        } catch (ClassNotFoundException e) {
            throw new AssertionError(type + " is not on the test class path", e);
        }
    }

    /** Every hand-written main source of the call-surface modules, by path. */
    static Map<Path, String> handWrittenSources() {
        Map<Path, String> sources = new TreeMap<>();
        for (String module : CALL_SURFACE_MODULES) {
            try (Stream<Path> files = Files.walk(ROOT.resolve(module))) {
                for (Path file : files.filter(CallCostTest::isMainSource).toList()) {
                    sources.put(file, Files.readString(file));
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        assertTrue(
                sources.keySet().stream().anyMatch(file -> file.endsWith("VirtualGpu.java")),
                "no sources under " + ROOT.toAbsolutePath());
        return sources;
    }

    private static boolean isMainSource(Path file) {
        String path = file.toString().replace('\\', '/');
        return path.endsWith(".java") && path.contains("/src/main/java/") && !path.contains("/target/");
    }

    private static String table(Map<String, List<String>> costs, Set<String> covered) {
        StringBuilder out = new StringBuilder("| call | files | which |\n| --- | --- | --- |\n");
        costs.entrySet().stream()
                .sorted(Map.Entry.<String, List<String>>comparingByValue((a, b) -> Integer.compare(b.size(), a.size()))
                        .thenComparing(Map.Entry.comparingByKey()))
                .forEach(cost -> out.append("| ")
                        .append(cost.getKey())
                        .append(EXEMPT.containsKey(cost.getKey()) ? " (exempt)" : "")
                        .append(covered.contains(cost.getKey()) ? "" : " (neither remote nor replayed)")
                        .append(" | ")
                        .append(cost.getValue().size())
                        .append(" | ")
                        .append(cost.getValue().stream()
                                .map(name -> name.replace(".java", ""))
                                .collect(Collectors.joining(", ")))
                        .append(" |\n"));
        return out.toString();
    }
}
