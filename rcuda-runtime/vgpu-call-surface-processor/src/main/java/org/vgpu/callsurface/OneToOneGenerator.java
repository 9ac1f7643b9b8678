package org.vgpu.callsurface;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import javax.annotation.processing.ProcessingEnvironment;
import javax.lang.model.element.ExecutableElement;
import javax.lang.model.element.Modifier;
import javax.lang.model.element.TypeElement;
import javax.lang.model.type.TypeMirror;
import javax.lang.model.util.ElementFilter;

import org.vgpu.callsurface.WireTable.Field;
import org.vgpu.callsurface.WireTable.Frame;
import org.vgpu.callsurface.WireTable.Kind;
import org.vgpu.callsurface.WireTable.Names;

/**
 * Writes both ends of an API's one-to-one calls ({@code @RemoteCall}), which are the frames of the
 * table that carry an API method: the call is made on the client, validated there by the
 * surface's {@code validation} class, reaches that class's primitive {@code doX}, travels as its
 * operands, and is made again on the worker's local vGPU. Four classes:
 *
 * <ul>
 *   <li>the result encoder (next to the surface): the abstract superclass of the hand-written reply
 *       encoder, holding its buffer {@code out}, {@code ok(requestId)} and one method per call with a
 *       result, writing the OK reply through the result type's codec;</li>
 *   <li>the result decoder: one static reader per call with a result, through the hand-written reply
 *       decoder's {@code read(result, what, reader)};</li>
 *   <li>the client's abstract superclass: the validation class with its type variables, one hook per
 *       handle a call takes giving its backend object's id on the wire ({@code streamId(S)} for a
 *       {@code StreamHandle}), implementing each call's primitive exactly as a hand-written client
 *       does: {@code connection().send(lambda)} for an asynchronous call, {@code call(lambda,
 *       decoder)} for the others, the lambda writing the request through the encoder;</li>
 *   <li>the worker's abstract superclass, implementing each call's visitor method as straight-line
 *       code: report a kept failure (synchronizing calls only), make the call on {@code gpu()} with
 *       every id translated by the handle's hook ({@code stream(int)} for a {@code StreamHandle}),
 *       answer OK with the result unless the request came asynchronous, and hand a failure to
 *       {@code failed}.</li>
 * </ul>
 *
 * A call that destroys its handle's object ({@code @RemoteCall(destroys = true)}) adds two hooks: the
 * client's primitive sends nothing while {@code closing()}, and the worker, once the call succeeded,
 * forgets the id ({@code forgetStream(int)} for a {@code StreamHandle}). A call that creates the object
 * of the handle it returns ({@code creates = true}) adds three: the client's primitive sends the id
 * {@code newId()} gives and returns, without waiting for a result, the backend object
 * {@code createdStream(int)} makes of it; the worker registers the handle its call returned under that
 * id ({@code registerStream(int, StreamHandle)}) and, when that fails, destroys the handle again with
 * the API's destroying call for its type.
 *
 * The client frames through a {@code WorkerConnection} of its package ({@code send(Request)},
 * {@code call(Request, Function<ByteBuf, T>)}) and the surface package's {@code ReplyDecoder}
 * ({@code empty}, {@code read}). The hooks are abstract methods the hand-written subclass implements; it being final, each is a
 * monomorphic call the JIT inlines. The generated methods are final: a call that needs more than
 * this is not one to one and is written by hand, in the surface as a {@code @Call}.
 */
final class OneToOneGenerator {
    private static final String BYTE_BUF = "io.netty.buffer.ByteBuf";

    /** Where the ends go: the validation class the client extends, and the generated classes' names. */
    record Ends(TypeElement validation, String client, String worker, String resultEncoder, String resultDecoder) {}

    private final ProcessingEnvironment env;
    private final Names names;
    private final Ends ends;

    OneToOneGenerator(ProcessingEnvironment env, Names names, Ends ends) {
        this.env = env;
        this.names = names;
        this.ends = ends;
    }

    void generate(List<Frame> table) {
        List<Frame> calls = table.stream().filter(f -> f.oneToOne() != null).toList();
        Sources.write(env, names.surface(), names.pkg() + "." + ends.resultEncoder(), writeResultEncoder(calls));
        Sources.write(env, names.surface(), names.pkg() + "." + ends.resultDecoder(), writeResultDecoder(calls));
        Sources.write(env, names.surface(), ends.client(), writeClient(calls));
        Sources.write(env, names.surface(), ends.worker(), writeWorker(calls));
    }

    // ---- results

    private String writeResultEncoder(List<Frame> calls) {
        SourceWriter out = new SourceWriter(names.pkg());
        String byteBuf = out.type(BYTE_BUF);
        out.line("/**");
        out.line(" * The OK replies: without a result, and with the result of each one-to-one call, written through");
        out.line(
                " * {@link " + names.codecs() + "}. The hand-written reply encoder extends it with the other replies.");
        out.line(" */");
        out.generatedAnnotation();
        out.line("public abstract class " + ends.resultEncoder() + " {");
        out.line("    /** Where the next reply is written, at its writer index. */");
        out.line("    protected " + byteBuf + " out;");
        out.blank();
        out.line("    /** Success without a result. */");
        out.line("    public void ok(int requestId) {");
        out.line("        Frames.finish(out, Frames.begin(out, " + names.opcodes() + ".OK, 0, requestId));");
        out.line("    }");
        for (Frame call : calls) {
            if (!call.oneToOne().returns()) {
                continue;
            }
            out.blank();
            out.line("    /** OK to {@link " + names.opcodes() + "#" + call.constant() + "}. */");
            out.line("    public void " + call.method() + "(int requestId, "
                    + out.type(call.oneToOne().result()) + " result) {");
            out.line("        int start = Frames.begin(out, " + names.opcodes() + ".OK, 0, requestId);");
            out.line("        " + names.codecs() + "."
                    + call.oneToOne().resultWriter().getSimpleName() + "(out, result);");
            out.line("        Frames.finish(out, start);");
            out.line("    }");
        }
        out.line("}");
        return out.toSource(names.origin());
    }

    private String writeResultDecoder(List<Frame> calls) {
        SourceWriter out = new SourceWriter(names.pkg());
        String byteBuf = out.type(BYTE_BUF);
        out.line(
                "/** Reads the result of each one-to-one call from its OK reply; a malformed one is a VGPU_PROTOCOL_ERROR. */");
        out.generatedAnnotation();
        out.line("public final class " + ends.resultDecoder() + " {");
        out.line("    private " + ends.resultDecoder() + "() {");
        out.line("    }");
        for (Frame call : calls) {
            if (!call.oneToOne().returns()) {
                continue;
            }
            out.blank();
            out.line("    /** The result of {@link " + names.opcodes() + "#" + call.constant() + "}. */");
            out.line("    public static " + out.type(call.oneToOne().result()) + " " + call.method() + "(" + byteBuf
                    + " result) {");
            ExecutableElement reader = call.oneToOne().resultReader();
            String read = reader.getParameters().size() == 1
                    ? names.codecs() + "::" + reader.getSimpleName()
                    : "in -> " + names.codecs() + "." + reader.getSimpleName() + "(in, "
                            + WireTable.classLiteral(call.oneToOne().result()) + ")";
            out.line("        return ReplyDecoder.read(result, \"" + call.constant() + "\", " + read + ");");
            out.line("    }");
        }
        out.line("}");
        return out.toSource(names.origin());
    }

    // ---- the client

    private String writeClient(List<Frame> calls) {
        String pkg = packageOf(ends.client());
        String name = simpleName(ends.client());
        SourceWriter out = new SourceWriter(pkg);
        Map<String, String> wireIds = new LinkedHashMap<>();
        for (Frame call : calls) {
            call.fields().stream()
                    .filter(f -> f.handle() != null && f.parameter() != null)
                    .forEach(f -> wireIds.putIfAbsent(hook(f.handle()) + "Id", f.handleVariable()));
        }
        List<String> variables = ends.validation().getTypeParameters().stream()
                .map(variable -> variable.getSimpleName().toString())
                .toList();
        String validation = out.type(ends.validation().getQualifiedName().toString());
        String replyDecoder = out.type(names.pkg() + ".ReplyDecoder");
        String resultDecoder = out.type(names.pkg() + "." + ends.resultDecoder());
        out.line("/**");
        out.line(" * The client's side of the one-to-one calls of {@code "
                + names.surface().getSimpleName() + "}'s table: each");
        out.line(" * primitive of {@link " + validation + "} sends its operands as the request, a handle's backend");
        out.line(" * object as its id on the wire, and returns the worker's result.");
        out.line(" */");
        out.generatedAnnotation();
        String typeVariables = variables.isEmpty() ? "" : "<" + String.join(", ", variables) + ">";
        out.line("abstract class " + name + typeVariables + " extends " + validation + typeVariables + " {");
        for (ExecutableElement constructor :
                ElementFilter.constructorsIn(ends.validation().getEnclosedElements())) {
            if (constructor.getModifiers().contains(Modifier.PRIVATE)) {
                continue;
            }
            String parameters = constructor.getParameters().stream()
                    .map(p -> out.type(p.asType()) + " " + p.getSimpleName())
                    .collect(Collectors.joining(", "));
            String arguments = constructor.getParameters().stream()
                    .map(p -> p.getSimpleName().toString())
                    .collect(Collectors.joining(", "));
            out.blank();
            out.line("    protected " + name + "(" + parameters + ") {");
            out.line("        super(" + arguments + ");");
            out.line("    }");
        }
        out.blank();
        out.line("    /** The connection to the worker, in whose batch the requests are written. */");
        out.line("    abstract WorkerConnection connection();");
        if (calls.stream().anyMatch(call -> call.oneToOne().destroys())) {
            out.blank();
            out.line(
                    "    /** Whether the vGPU is closing: the worker frees everything at the session's end, not one by one. */");
            out.line("    abstract boolean closing();");
        }
        for (Map.Entry<String, String> wireId : wireIds.entrySet()) {
            out.blank();
            out.line("    /** The id on the wire of a handle whose backend object here is {@code handle}. */");
            out.line("    abstract int " + wireId.getKey() + "(" + wireId.getValue() + " handle);");
        }
        List<Field> created = createdFields(calls);
        if (!created.isEmpty()) {
            out.blank();
            out.line("    /** An id for an object the worker is asked to create, which this session has not used. */");
            out.line("    abstract int newId();");
        }
        for (Field field : created) {
            out.blank();
            out.line("    /** The backend object here of what the worker creates under the id {@code id}. */");
            out.line("    abstract " + field.handleVariable() + " " + createdHook(field.handle()) + "(int id);");
        }
        for (Frame call : calls) {
            ExecutableElement primitive = call.oneToOne().primitive();
            List<String> parameters = new ArrayList<>();
            List<String> arguments = new ArrayList<>(List.of("requestId"));
            if (call.kind().mayBeAsync) {
                arguments.add("true");
            }
            int operand = 0;
            for (Field field : call.fields()) {
                if (field.parameter() == null) {
                    arguments.add(field.name());
                    continue;
                }
                TypeMirror type = primitive.getParameters().get(operand++).asType();
                parameters.add(out.type(type) + " " + field.parameter());
                arguments.add(
                        field.handle() != null
                                ? hook(field.handle()) + "Id(" + field.parameter() + ")"
                                : field.parameter());
            }
            Field createdId = call.oneToOne().created(call.fields());
            String request =
                    "(encoder, requestId) -> encoder." + call.method() + "(" + String.join(", ", arguments) + ")";
            out.blank();
            out.line("    /** {@link " + names.pkg() + "." + names.opcodes() + "#" + call.constant() + "}. */");
            out.line("    @Override");
            String returned = createdId != null
                    ? createdId.handleVariable()
                    : out.type(call.oneToOne().result());
            out.line("    protected final " + returned + " " + primitive.getSimpleName() + "("
                    + String.join(", ", parameters) + ") {");
            if (createdId != null) {
                out.line("        int " + createdId.name() + " = newId();");
            }
            String indent = "        ";
            if (call.oneToOne().destroys()) {
                out.line("        if (!closing()) {");
                indent += "    ";
            }
            if (call.kind() == Kind.ASYNC) {
                out.line(indent + "connection().send(" + request + ");");
            } else if (call.oneToOne().returns()) {
                out.line(indent + "return connection().call(" + request + ", " + resultDecoder + "::" + call.method()
                        + ");");
            } else {
                out.line(indent + "connection().call(" + request + ", " + replyDecoder + "::empty);");
            }
            if (call.oneToOne().destroys()) {
                out.line("        }");
            }
            if (createdId != null) {
                out.line("        return " + createdHook(createdId.handle()) + "(" + createdId.name() + ");");
            }
            out.line("    }");
        }
        out.line("}");
        return out.toSource(names.origin());
    }

    // ---- the worker

    private String writeWorker(List<Frame> calls) {
        String pkg = packageOf(ends.worker());
        String name = simpleName(ends.worker());
        SourceWriter out = new SourceWriter(pkg);
        String visitor = out.type(names.pkg() + "." + names.visitor());
        String frame = out.type(names.pkg() + ".Frame");
        String resultEncoder = out.type(names.pkg() + "." + ends.resultEncoder());
        Map<String, TypeMirror> handles = new LinkedHashMap<>();
        String api = null;
        for (Frame call : calls) {
            api = out.type(((TypeElement) call.oneToOne().call().getEnclosingElement())
                    .getQualifiedName()
                    .toString());
            for (Field field : call.fields()) {
                if (field.handle() != null && field.parameter() != null) {
                    handles.put(hook(field.handle()), field.handle());
                }
            }
        }
        out.line("/**");
        out.line(" * The worker's side of the one-to-one calls of {@code "
                + names.surface().getSimpleName() + "}'s table: each");
        out.line(" * request makes its call on the session's vGPU, with the client's ids turned back into handles,");
        out.line(" * and is answered with the result, or its failure reported or kept. Straight-line code, no");
        out.line(" * object per request.");
        out.line(" */");
        out.generatedAnnotation();
        out.line("abstract class " + name + " implements " + visitor + " {");
        if (api != null) {
            out.blank();
            out.line("    /** The session's vGPU; a protocol violation before the session is open. */");
            out.line("    abstract " + api + " gpu();");
        }
        out.blank();
        out.line("    /** Where the answer is written. */");
        out.line("    abstract " + resultEncoder + " reply();");
        out.blank();
        out.line(
                "    /** Whether a synchronizing request was answered with a kept asynchronous failure instead of running. */");
        out.line("    abstract boolean answeredWithKeptFailure(" + frame + " frame);");
        out.blank();
        out.line("    /** A request failed: its failure is answered, or kept when the request came asynchronous. */");
        out.line("    abstract void failed(" + frame + " frame, RuntimeException failure);");
        for (Map.Entry<String, TypeMirror> handle : handles.entrySet()) {
            out.blank();
            out.line(
                    "    /** The handle the client's id {@code id} stands for in this session; CUDA_ERROR_INVALID_HANDLE if none. */");
            out.line("    abstract " + out.type(handle.getValue()) + " " + handle.getKey() + "(int id);");
        }
        for (String destroyed : destroyedHooks(calls)) {
            out.blank();
            out.line(
                    "    /** The client's id {@code id} no longer stands for a handle of this session: its object is destroyed. */");
            out.line("    abstract void " + destroyed + "(int id);");
        }
        for (Field created : createdFields(calls)) {
            out.blank();
            out.line("    /**");
            out.line(
                    "     * The client's id {@code id} stands for {@code handle}, just created, from now on in this session;");
            out.line(
                    "     * CUDA_ERROR_INVALID_VALUE, and nothing registered, when it cannot (it stands for another already).");
            out.line("     */");
            out.line("    abstract void " + registerHook(created.handle()) + "(int id, " + out.type(created.handle())
                    + " handle);");
        }
        for (Frame call : calls) {
            String fields = call.fields().stream()
                    .map(f -> ", " + out.type(f.type()) + " " + f.name())
                    .collect(Collectors.joining());
            String arguments = call.fields().stream()
                    .filter(f -> f.parameter() != null)
                    .sorted(Comparator.comparingInt(Field::position))
                    .map(f -> f.handle() != null ? hook(f.handle()) + "(" + f.name() + ")" : f.name())
                    .collect(Collectors.joining(", "));
            String invocation = "gpu()." + call.method() + "(" + arguments + ");";
            out.blank();
            out.line("    @Override");
            out.line("    public final void " + call.method() + "(" + frame + " frame" + fields + ") {");
            if (call.kind().synchronizing) {
                out.line("        if (answeredWithKeptFailure(frame)) {");
                out.line("            return;");
                out.line("        }");
            }
            out.line("        try {");
            Field createdId = call.oneToOne().created(call.fields());
            if (createdId != null) {
                writeRegistration(out, createdId, invocation, calls);
            }
            if (call.oneToOne().returns()) {
                out.line("            " + out.type(call.oneToOne().result()) + " result = " + invocation);
                out.line("            reply()." + call.method() + "(frame.requestId(), result);");
            } else {
                if (createdId == null) {
                    out.line("            " + invocation);
                }
                if (call.oneToOne().destroys()) {
                    Field destroyed = call.fields().getFirst();
                    out.line("            " + forget(destroyed.handle()) + "(" + destroyed.name() + ");");
                }
                if (call.kind().mayBeAsync) {
                    out.line("            if (!frame.isAsync()) {");
                    out.line("                reply().ok(frame.requestId());");
                    out.line("            }");
                } else {
                    out.line("            reply().ok(frame.requestId());");
                }
            }
            out.line("        } catch (RuntimeException failure) {");
            out.line("            failed(frame, failure);");
            out.line("        }");
            out.line("    }");
        }
        out.line("}");
        return out.toSource(names.origin());
    }

    /**
     * A creation's call on the worker, and the registration of the handle it returned under the client's
     * id; a failed registration destroys the handle again, when the API has a destroying call for its type.
     */
    private static void writeRegistration(SourceWriter out, Field createdId, String invocation, List<Frame> calls) {
        String register = registerHook(createdId.handle()) + "(" + createdId.name() + ", created);";
        out.line("            " + out.type(createdId.handle()) + " created = " + invocation);
        Frame destroying = calls.stream()
                .filter(other -> other.oneToOne().destroys()
                        && other.fields()
                                .getFirst()
                                .handle()
                                .toString()
                                .equals(createdId.handle().toString()))
                .findFirst()
                .orElse(null);
        if (destroying == null) {
            out.line("            " + register);
            return;
        }
        out.line("            try {");
        out.line("                " + register);
        out.line("            } catch (RuntimeException taken) {");
        out.line("                try {");
        out.line("                    gpu()." + destroying.method() + "(created);");
        out.line("                } catch (RuntimeException undo) {");
        out.line("                    taken.addSuppressed(undo);");
        out.line("                }");
        out.line("                throw taken;");
        out.line("            }");
    }

    /** The id fields of the creations, one per handle type some call creates. */
    private static List<Field> createdFields(List<Frame> calls) {
        Map<String, Field> created = new LinkedHashMap<>();
        for (Frame call : calls) {
            Field field = call.oneToOne().created(call.fields());
            if (field != null) {
                created.putIfAbsent(field.handle().toString(), field);
            }
        }
        return List.copyOf(created.values());
    }

    /** StreamHandle -> createdStream: the client's hook that makes the backend object of a created handle. */
    private static String createdHook(TypeMirror handle) {
        return "created" + WireTable.capitalized(hook(handle));
    }

    /** StreamHandle -> registerStream: the worker's hook that registers a created handle under the client's id. */
    private static String registerHook(TypeMirror handle) {
        return "register" + WireTable.capitalized(hook(handle));
    }

    /** The worker's hooks that forget a destroyed handle's id, one per handle type some call destroys. */
    private static List<String> destroyedHooks(List<Frame> calls) {
        return calls.stream()
                .filter(call -> call.oneToOne().destroys())
                .map(call -> forget(call.fields().getFirst().handle()))
                .distinct()
                .toList();
    }

    /** StreamHandle -> forgetStream: the worker's hook that forgets the id of a destroyed handle of that type. */
    private static String forget(TypeMirror handle) {
        return "forget" + WireTable.capitalized(hook(handle));
    }

    /** StreamHandle -> stream: the worker's hook that turns an id into that handle. */
    private static String hook(TypeMirror handle) {
        return WireTable.handleName(handle);
    }

    private static String packageOf(String qualifiedName) {
        return qualifiedName.substring(0, qualifiedName.lastIndexOf('.'));
    }

    private static String simpleName(String qualifiedName) {
        return qualifiedName.substring(qualifiedName.lastIndexOf('.') + 1);
    }
}
