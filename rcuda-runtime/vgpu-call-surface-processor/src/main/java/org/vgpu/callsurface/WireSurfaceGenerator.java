package org.vgpu.callsurface;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import javax.annotation.processing.ProcessingEnvironment;
import javax.lang.model.element.AnnotationMirror;
import javax.lang.model.element.Element;
import javax.lang.model.element.ElementKind;
import javax.lang.model.element.ExecutableElement;
import javax.lang.model.element.Modifier;
import javax.lang.model.element.TypeElement;
import javax.lang.model.element.VariableElement;
import javax.lang.model.type.DeclaredType;
import javax.lang.model.type.TypeKind;
import javax.lang.model.type.TypeMirror;
import javax.lang.model.util.ElementFilter;
import javax.tools.Diagnostic;

/**
 * Writes the remote protocol's mechanical parts from a {@code @CallSurface} interface: the opcode
 * table, the request encoder, the request dispatch (decoder) and the visitor it calls.
 *
 * <p>The interface lists the frames in opcode order: each request is a method annotated
 * {@code @Call(opcode, kind)}, each reply an int constant annotated {@code @Reply}. A request's
 * parameters are its body's fields in wire order; each travels through the codec its
 * {@code @Codec} names, or that of its type ({@code int}: Int32, {@code long}: Int64, a class: its
 * simple name; a class without a codec of that name: the codec of an interface it implements, such
 * as one codec for every enum of CUDA's numbered constants). A codec {@code X} is static methods of
 * the surface's codecs class: {@code readX} (its parameters may be the {@code Frame}, the body's
 * {@code ByteBuf}, a {@code String}, which gets the field's name, and a {@code Class}, which gets
 * the field's type; it returns the field), {@code writeX(ByteBuf, value)} and, optionally,
 * {@code checkX(value)}, which runs before anything of the frame is written so that a refused
 * request leaves no partial frame in a batch. A {@code CHUNKED} request's last parameter is the
 * chunk's bytes, which the caller writes after the generated header.
 *
 * <p>With an {@code api}, the table also holds that interface's {@code @RemoteCall} methods, the
 * calls a worker serves one to one: the parameters are the fields (a handle, which the
 * {@code validation} class's primitive {@code doX} takes as a type variable, travels as an int32
 * id named after its parameter), the result the OK reply's body, each through the codec of its
 * type; {@link OneToOneGenerator} writes both ends. The table is in opcode order, whichever of the
 * two lists a frame.
 *
 * <p>The generated code frames through the surface package's {@code Frames} ({@code begin},
 * {@code finish}, {@code finishWithTrailing}, {@code writeTrailing}, {@code requireConsumed},
 * {@code violation}, {@code FLAG_ASYNC}, {@code FLAG_MORE}) and reads {@code Frame}s
 * ({@code opcode()}, {@code body()}).
 */
final class WireSurfaceGenerator {
    static final String CALL_SURFACE = "org.vgpu.runtime.api.surface.CallSurface";
    static final String CALL = "org.vgpu.runtime.api.surface.Call";
    static final String REPLY = "org.vgpu.runtime.api.surface.Reply";
    static final String CODEC = "org.vgpu.runtime.api.surface.Codec";
    static final String REMOTE_CALL = "org.vgpu.runtime.api.surface.RemoteCall";
    private static final String BYTE_BUF = "io.netty.buffer.ByteBuf";
    /** Opcodes index a table of this many entries. */
    private static final int MAX_CODE = 0xFF;
    /** Names the generated dispatch code uses for its own variables. */
    private static final Set<String> RESERVED = Set.of(
            "frame",
            "in",
            "visitor",
            "out",
            "start",
            "requestId",
            "async",
            "more",
            "dataBytes",
            "chunkSource",
            "chunkOffset",
            "chunkLength",
            "encoder",
            "result",
            "failure");

    enum Kind {
        SYNC(false, false, false),
        ASYNC(true, false, false),
        SYNCHRONIZING(false, true, false),
        ASYNC_OR_SYNCHRONIZING(true, true, false),
        CHUNKED(true, true, true);

        final boolean mayBeAsync;
        final boolean synchronizing;
        final boolean chunked;

        Kind(boolean mayBeAsync, boolean synchronizing, boolean chunked) {
            this.mayBeAsync = mayBeAsync;
            this.synchronizing = synchronizing;
            this.chunked = chunked;
        }
    }

    /**
     * One field of a request body. {@code parameter} and {@code handle} are set for a one-to-one
     * call's field: the API parameter it carries and, when that is a handle, the handle's type (the
     * field is then its int32 id) and the validation class's type variable for its backend object.
     */
    record Field(
            String name,
            TypeMirror type,
            ExecutableElement reader,
            ExecutableElement writer,
            ExecutableElement checker,
            String parameter,
            TypeMirror handle,
            String handleVariable) {
        Field(
                String name,
                TypeMirror type,
                ExecutableElement reader,
                ExecutableElement writer,
                ExecutableElement checker) {
            this(name, type, reader, writer, checker, null, null, null);
        }
    }

    /**
     * What a one-to-one call adds to its frame: the API method, the validation class's primitive it
     * reaches, and its result's type and codec (none for {@code void}).
     */
    record OneToOne(
            ExecutableElement call,
            ExecutableElement primitive,
            TypeMirror result,
            String resultCodec,
            ExecutableElement resultReader,
            ExecutableElement resultWriter) {
        boolean returns() {
            return result.getKind() != TypeKind.VOID;
        }
    }

    /** One frame of the table: a request (with its method and fields) or a reply. */
    record Frame(
            Element element,
            String constant,
            int code,
            boolean request,
            Kind kind,
            boolean chunked,
            String method,
            List<Field> fields,
            OneToOne oneToOne) {

        /** The fields written by the encoder: a chunked request's last field is the caller's bytes. */
        List<Field> header() {
            return kind != null && kind.chunked ? fields.subList(0, fields.size() - 1) : fields;
        }
    }

    private final ProcessingEnvironment env;
    private boolean failed;

    WireSurfaceGenerator(ProcessingEnvironment env) {
        this.env = env;
    }

    /**
     * Writes the four classes (and, with an {@code api}, the one-to-one calls' ends), or reports
     * every mistake of the description and writes nothing.
     */
    void generate(TypeElement surface) {
        AnnotationMirror mirror = Mirrors.find(surface, CALL_SURFACE).orElseThrow();
        TypeElement codecs =
                (TypeElement) ((DeclaredType) Mirrors.value(env.getElementUtils(), mirror, "codecs")).asElement();
        String opcodes = (String) Mirrors.value(env.getElementUtils(), mirror, "opcodes");
        String visitor = (String) Mirrors.value(env.getElementUtils(), mirror, "visitor");
        String encoder = (String) Mirrors.value(env.getElementUtils(), mirror, "encoder");
        String dispatch = (String) Mirrors.value(env.getElementUtils(), mirror, "dispatch");
        Map<String, ExecutableElement> codecMethods = codecMethods(codecs);
        List<Frame> frames = read(surface, codecMethods);
        TypeMirror api = (TypeMirror) Mirrors.value(env.getElementUtils(), mirror, "api");
        OneToOneGenerator.Ends ends = null;
        if (api.getKind() == TypeKind.DECLARED) {
            ends = oneToOneEnds(surface, mirror);
            if (ends != null) {
                frames.addAll(readApi((TypeElement) ((DeclaredType) api).asElement(), ends.validation(), codecMethods));
            }
        }
        checkTable(frames);
        if (failed) {
            return;
        }
        frames.sort(Comparator.comparingInt(Frame::code));
        String pkg =
                env.getElementUtils().getPackageOf(surface).getQualifiedName().toString();
        Names names = new Names(pkg, surface, codecs.getSimpleName().toString(), opcodes, visitor, encoder, dispatch);
        Sources.write(env, surface, pkg + "." + opcodes, writeOpcodes(names, frames));
        Sources.write(env, surface, pkg + "." + visitor, writeVisitor(names, frames));
        Sources.write(env, surface, pkg + "." + encoder, writeEncoder(names, frames));
        Sources.write(env, surface, pkg + "." + dispatch, writeDispatch(names, frames));
        if (ends != null) {
            new OneToOneGenerator(env, names, ends).generate(frames);
        }
    }

    record Names(
            String pkg,
            TypeElement surface,
            String codecs,
            String opcodes,
            String visitor,
            String encoder,
            String dispatch) {
        String origin() {
            return surface.getQualifiedName().toString();
        }
    }

    // ---- reading the description

    private static Map<String, ExecutableElement> codecMethods(TypeElement codecs) {
        Map<String, ExecutableElement> codecMethods = new HashMap<>();
        for (ExecutableElement method : ElementFilter.methodsIn(codecs.getEnclosedElements())) {
            if (method.getModifiers().contains(Modifier.STATIC)) {
                codecMethods.put(method.getSimpleName().toString(), method);
            }
        }
        return codecMethods;
    }

    private List<Frame> read(TypeElement surface, Map<String, ExecutableElement> codecMethods) {
        List<Frame> frames = new ArrayList<>();
        for (Element element : surface.getEnclosedElements()) {
            Frame frame = switch (element.getKind()) {
                case METHOD ->
                    Mirrors.find(element, CALL)
                            .map(call -> request((ExecutableElement) element, call, codecMethods))
                            .orElse(null);
                case FIELD ->
                    Mirrors.find(element, REPLY)
                            .map(reply -> reply((VariableElement) element, reply))
                            .orElse(null);
                default -> null;
            };
            if (frame == null) {
                if (element.getKind() == ElementKind.METHOD || element.getKind() == ElementKind.FIELD) {
                    error(element, "a call surface lists only @Call methods and @Reply constants");
                }
                continue;
            }
            frames.add(frame);
        }
        return frames;
    }

    /** Every opcode in range and taken once, every constant named once, over the surface's and the API's frames. */
    private void checkTable(List<Frame> frames) {
        Map<Integer, String> codes = new HashMap<>();
        Set<String> constants = new HashSet<>();
        for (Frame frame : frames) {
            if (frame.code < 1 || frame.code > MAX_CODE) {
                error(frame.element, String.format("opcode 0x%04X is outside [0x0001, 0x%04X]", frame.code, MAX_CODE));
            }
            String taken = codes.putIfAbsent(frame.code, frame.constant);
            if (taken != null) {
                error(frame.element, String.format("opcode 0x%04X is already %s", frame.code, taken));
            }
            if (!constants.add(frame.constant)) {
                error(frame.element, "a second frame is named " + frame.constant);
            }
        }
    }

    // ---- the API's one-to-one calls

    private OneToOneGenerator.Ends oneToOneEnds(TypeElement surface, AnnotationMirror mirror) {
        TypeMirror validation = (TypeMirror) Mirrors.value(env.getElementUtils(), mirror, "validation");
        String client = (String) Mirrors.value(env.getElementUtils(), mirror, "client");
        String worker = (String) Mirrors.value(env.getElementUtils(), mirror, "worker");
        if (validation.getKind() != TypeKind.DECLARED || client.isEmpty() || worker.isEmpty()) {
            error(surface, "a call surface with an api names its validation class, client and worker");
            return null;
        }
        return new OneToOneGenerator.Ends(
                (TypeElement) ((DeclaredType) validation).asElement(),
                client,
                worker,
                (String) Mirrors.value(env.getElementUtils(), mirror, "resultEncoder"),
                (String) Mirrors.value(env.getElementUtils(), mirror, "resultDecoder"));
    }

    private List<Frame> readApi(TypeElement api, TypeElement validation, Map<String, ExecutableElement> codecs) {
        List<Frame> frames = new ArrayList<>();
        for (ExecutableElement method : ElementFilter.methodsIn(api.getEnclosedElements())) {
            Mirrors.find(method, REMOTE_CALL)
                    .map(call -> oneToOne(method, call, validation, codecs))
                    .ifPresent(frames::add);
        }
        return frames;
    }

    private Frame oneToOne(
            ExecutableElement method,
            AnnotationMirror call,
            TypeElement validation,
            Map<String, ExecutableElement> codecs) {
        int code = (Integer) Mirrors.value(env.getElementUtils(), call, "opcode");
        VariableElement kindConstant = (VariableElement) Mirrors.value(env.getElementUtils(), call, "kind");
        Kind kind = Kind.valueOf(kindConstant.getSimpleName().toString());
        String name = method.getSimpleName().toString();
        boolean synchronizing = Mirrors.has(method, ForwarderGenerator.SYNCHRONIZING);
        TypeMirror result = method.getReturnType();
        if (kind != Kind.ASYNC && kind != Kind.SYNC && kind != Kind.SYNCHRONIZING) {
            error(method, "a one-to-one call is ASYNC, SYNC or SYNCHRONIZING; a " + kind + " call is written by hand");
        } else if (synchronizing != (kind == Kind.SYNCHRONIZING)) {
            error(method, "a @Synchronizing call is SYNCHRONIZING on the wire, and only such a call is");
        } else if (kind == Kind.ASYNC && result.getKind() != TypeKind.VOID) {
            error(method, "an ASYNC call has no result to answer");
        }
        ExecutableElement primitive = primitive(validation, method);
        List<Field> fields = new ArrayList<>();
        if (primitive == null) {
            return new Frame(method, constantName(name), code, true, kind, false, name, fields, null);
        }
        List<? extends VariableElement> parameters = method.getParameters();
        for (int i = 0; i < parameters.size(); i++) {
            VariableElement parameter = parameters.get(i);
            TypeMirror backend = primitive.getParameters().get(i).asType();
            String parameterName = parameter.getSimpleName().toString();
            if (backend.getKind() == TypeKind.TYPEVAR) {
                Field id = field(
                        parameter,
                        parameterName + "Id",
                        "Int32",
                        env.getTypeUtils().getPrimitiveType(TypeKind.INT),
                        codecs,
                        false);
                fields.add(new Field(
                        id.name(),
                        id.type(),
                        id.reader(),
                        id.writer(),
                        id.checker(),
                        parameterName,
                        parameter.asType(),
                        backend.toString()));
            } else if (env.getTypeUtils().isSameType(backend, parameter.asType())) {
                Field value = field(parameter, codecs, false);
                fields.add(new Field(
                        value.name(),
                        value.type(),
                        value.reader(),
                        value.writer(),
                        value.checker(),
                        parameterName,
                        null,
                        null));
            } else {
                error(
                        parameter,
                        validation.getSimpleName() + "." + primitive.getSimpleName() + " takes " + backend
                                + " here, neither the same type nor a handle's backend object");
            }
        }
        if (!env.getTypeUtils().isSameType(primitive.getReturnType(), result)) {
            error(
                    method,
                    validation.getSimpleName() + "." + primitive.getSimpleName() + " returns "
                            + primitive.getReturnType() + ", not " + result);
        }
        OneToOne oneToOne = new OneToOne(method, primitive, result, null, null, null);
        if (result.getKind() != TypeKind.VOID) {
            String codec = codecOf(result, codecs);
            ExecutableElement reader = codecs.get("read" + codec);
            ExecutableElement writer = codecs.get("write" + codec);
            if (reader == null
                    || writer == null
                    || !(reader.getParameters().size() == 1
                            || (reader.getParameters().size() == 2
                                    && reader.getParameters()
                                            .get(1)
                                            .asType()
                                            .toString()
                                            .startsWith("java.lang.Class")))
                    || !reader.getParameters().getFirst().asType().toString().equals(BYTE_BUF)) {
                error(
                        method,
                        "a result of type " + result + " needs static read" + codec
                                + "(ByteBuf) (or (ByteBuf, Class) for an interface's codec) and write" + codec
                                + " methods in the surface's codecs class");
            }
            oneToOne = new OneToOne(method, primitive, result, codec, reader, writer);
        }
        return new Frame(method, constantName(name), code, true, kind, false, name, fields, oneToOne);
    }

    /** The validation class's {@code doX} that API call {@code x} reaches once validated. */
    private ExecutableElement primitive(TypeElement validation, ExecutableElement call) {
        String name = call.getSimpleName().toString();
        String primitive = "do" + Character.toUpperCase(name.charAt(0)) + name.substring(1);
        for (ExecutableElement method :
                ElementFilter.methodsIn(env.getElementUtils().getAllMembers(validation))) {
            if (method.getSimpleName().contentEquals(primitive)
                    && method.getParameters().size() == call.getParameters().size()
                    && !method.getModifiers().contains(Modifier.PRIVATE)) {
                return method;
            }
        }
        error(
                call,
                validation.getSimpleName() + " has no " + primitive + " with "
                        + call.getParameters().size()
                        + " parameters for the client to implement: a call without one is written by hand");
        return null;
    }

    private Frame reply(VariableElement constant, AnnotationMirror reply) {
        if (!(constant.getConstantValue() instanceof Integer code)) {
            error(constant, "a @Reply is an int constant holding its opcode");
            return new Frame(
                    constant, constant.getSimpleName().toString(), 0, false, null, false, null, List.of(), null);
        }
        boolean chunked = (Boolean) Mirrors.value(env.getElementUtils(), reply, "chunked");
        return new Frame(
                constant, constant.getSimpleName().toString(), code, false, null, chunked, null, List.of(), null);
    }

    private Frame request(ExecutableElement method, AnnotationMirror call, Map<String, ExecutableElement> codecs) {
        int code = (Integer) Mirrors.value(env.getElementUtils(), call, "opcode");
        VariableElement kindConstant = (VariableElement) Mirrors.value(env.getElementUtils(), call, "kind");
        Kind kind = Kind.valueOf(kindConstant.getSimpleName().toString());
        String name = (String) Mirrors.value(env.getElementUtils(), call, "name");
        String methodName = method.getSimpleName().toString();
        String constant = name.isEmpty() ? constantName(methodName) : name;
        List<Field> fields = new ArrayList<>();
        List<? extends VariableElement> parameters = method.getParameters();
        for (int i = 0; i < parameters.size(); i++) {
            boolean trailing = kind.chunked && i == parameters.size() - 1;
            fields.add(field(parameters.get(i), codecs, trailing));
        }
        if (kind.chunked && parameters.isEmpty()) {
            error(method, "a CHUNKED call's last parameter is the chunk's bytes");
        }
        if (method.getReturnType().getKind() != TypeKind.VOID) {
            error(method, "a call's answer is a reply frame, not a return value: declare it void");
        }
        return new Frame(method, constant, code, true, kind, kind.chunked, methodName, fields, null);
    }

    private Field field(VariableElement parameter, Map<String, ExecutableElement> codecs, boolean trailing) {
        String codec = Mirrors.find(parameter, CODEC)
                .map(c -> (String) Mirrors.value(env.getElementUtils(), c, "value"))
                .orElseGet(() -> codecOf(parameter.asType(), codecs));
        return field(parameter, parameter.getSimpleName().toString(), codec, parameter.asType(), codecs, trailing);
    }

    /** The field {@code name} of {@code type}, carrying {@code parameter} through {@code codec}. */
    private Field field(
            VariableElement parameter,
            String name,
            String codec,
            TypeMirror type,
            Map<String, ExecutableElement> codecs,
            boolean trailing) {
        if (RESERVED.contains(name)) {
            error(parameter, "'" + name + "' is a name the generated code uses; call the field otherwise");
        }
        ExecutableElement reader = codecs.get("read" + codec);
        ExecutableElement writer = trailing ? null : codecs.get("write" + codec);
        if (reader == null || (!trailing && writer == null)) {
            error(
                    parameter,
                    "codec " + codec + " needs static read" + codec + (trailing ? "" : " and write" + codec)
                            + " methods in the surface's codecs class");
            return new Field(name, type, null, null, null);
        }
        if (reader.getReturnType().getKind() != TypeKind.TYPEVAR
                && !env.getTypeUtils().isSameType(reader.getReturnType(), type)) {
            error(parameter, "read" + codec + " returns " + reader.getReturnType() + ", not " + type);
        } else if (writer != null
                && (writer.getParameters().size() != 2
                        || !writer.getParameters()
                                .getFirst()
                                .asType()
                                .toString()
                                .equals(BYTE_BUF))) {
            error(parameter, "write" + codec + " must take (ByteBuf out, value)");
        }
        return new Field(name, type, reader, writer, trailing ? null : codecs.get("check" + codec));
    }

    /**
     * The codec of a type without an {@code @Codec}: its own ({@link #defaultCodec}), or else that of
     * an interface it implements, whose reader is generic and takes the type's {@code Class} (every
     * enum of CUDA's constants travels by one codec so; a type with a codec of its own keeps it).
     */
    private String codecOf(TypeMirror type, Map<String, ExecutableElement> codecs) {
        String own = defaultCodec(type);
        if (codecs.containsKey("read" + own) || type.getKind() != TypeKind.DECLARED) {
            return own;
        }
        for (TypeMirror implemented : ((TypeElement) ((DeclaredType) type).asElement()).getInterfaces()) {
            String inherited = defaultCodec(implemented);
            if (codecs.containsKey("read" + inherited)) {
                return inherited;
            }
        }
        return own;
    }

    private static String defaultCodec(TypeMirror type) {
        return switch (type.getKind()) {
            case INT -> "Int32";
            case LONG -> "Int64";
            case FLOAT -> "Float32";
            case BOOLEAN -> "Boolean";
            case DECLARED -> ((DeclaredType) type).asElement().getSimpleName().toString();
            default -> type.toString();
        };
    }

    /** memAllocAt -> MEM_ALLOC_AT. */
    static String constantName(String method) {
        return method.replaceAll("([a-z0-9])([A-Z])", "$1_$2").toUpperCase(Locale.ROOT);
    }

    // ---- the opcode table

    private String writeOpcodes(Names names, List<Frame> frames) {
        SourceWriter out = new SourceWriter(names.pkg);
        out.javadoc("", env.getElementUtils().getDocComment(names.surface));
        out.generatedAnnotation();
        out.line("public enum " + names.opcodes + " {");
        for (int i = 0; i < frames.size(); i++) {
            Frame frame = frames.get(i);
            out.javadoc("    ", doc(frame));
            out.line(String.format(
                    "    %s(0x%04X, Direction.%s, %s, %s, %s)%s",
                    frame.constant,
                    frame.code,
                    frame.request ? "REQUEST" : "REPLY",
                    frame.kind != null && frame.kind.mayBeAsync,
                    frame.kind != null && frame.kind.synchronizing,
                    frame.chunked,
                    i == frames.size() - 1 ? ";" : ","));
        }
        String opcode = names.opcodes;
        out.line("""

                    /** Who sends a frame: the client (requests) or the worker (replies). */
                    public enum Direction { REQUEST, REPLY }

                    private static final %1$s[] BY_CODE = new %1$s[0x%2$X];

                    static {
                        for (%1$s opcode : values()) {
                            BY_CODE[opcode.code] = opcode;
                        }
                    }

                    private final int code;
                    private final Direction direction;
                    private final boolean mayBeAsync;
                    private final boolean synchronizing;
                    private final boolean chunked;

                    %1$s(int code, Direction direction, boolean mayBeAsync, boolean synchronizing, boolean chunked) {
                        this.code = code;
                        this.direction = direction;
                        this.mayBeAsync = mayBeAsync;
                        this.synchronizing = synchronizing;
                        this.chunked = chunked;
                    }

                    /** The value in the frame header. */
                    public int code() {
                        return code;
                    }

                    public Direction direction() {
                        return direction;
                    }

                    /** Whether the request may carry {@link Frames#FLAG_ASYNC}. */
                    public boolean mayBeAsync() {
                        return mayBeAsync;
                    }

                    /** Whether the request, sent without {@link Frames#FLAG_ASYNC}, reports a kept asynchronous failure. */
                    public boolean synchronizing() {
                        return synchronizing;
                    }

                    /** Whether the frame may carry {@link Frames#FLAG_MORE}: one of several chunks of one request or reply. */
                    public boolean chunked() {
                        return chunked;
                    }

                    /** The opcode with header value {@code code}, or null when there is none. */
                    public static %1$s fromCode(int code) {
                        return code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
                    }
                }""".formatted(opcode, MAX_CODE + 1));
        return out.toSource(names.origin());
    }

    // ---- the visitor

    private String writeVisitor(Names names, List<Frame> frames) {
        SourceWriter out = new SourceWriter(names.pkg);
        out.line("/**");
        out.line(
                " * Receives decoded requests from {@link " + names.dispatch + "#dispatch}, one method per request of");
        out.line(" * {@link " + names.opcodes
                + "}. The {@code frame} gives the request id and flags. Buffers passed in");
        out.line(" * belong to the frame: use them during the call, or retain them.");
        out.line(" */");
        out.generatedAnnotation();
        out.line("public interface " + names.visitor + " {");
        for (Frame frame : requests(frames)) {
            out.blank();
            out.line("    /** {@link " + names.opcodes + "#" + frame.constant + "}. */");
            String fields = frame.fields.stream()
                    .map(f -> ", " + out.type(f.type) + " " + f.name)
                    .collect(Collectors.joining());
            out.line("    void " + frame.method + "(Frame frame" + fields + ");");
        }
        out.line("}");
        return out.toSource(names.origin());
    }

    // ---- the encoder

    private String writeEncoder(Names names, List<Frame> frames) {
        SourceWriter out = new SourceWriter(names.pkg);
        String byteBuf = out.type(BYTE_BUF);
        out.line("/**");
        out.line(" * Writes request frames (layouts: {@link " + names.opcodes
                + "}) straight into a buffer, one method per");
        out.line(" * request, without building a message object first: a flyweight in the Aeron/SBE sense,");
        out.line(" * {@link #wrap}ped around whatever buffer collects the next write. Not thread-safe; one per");
        out.line(" * connection, used under the connection's batch lock. Fields are written by {@link " + names.codecs
                + "}.");
        out.line(" */");
        out.generatedAnnotation();
        out.line("public final class " + names.encoder + " {");
        out.line("    private " + byteBuf + " out;");
        out.blank();
        out.line("    /** Directs the following writes to {@code buffer}, at its writer index. */");
        out.line("    public " + names.encoder + " wrap(" + byteBuf + " buffer) {");
        out.line("        this.out = buffer;");
        out.line("        return this;");
        out.line("    }");
        boolean anyChunked = false;
        for (Frame frame : requests(frames)) {
            out.blank();
            List<String> parameters = new ArrayList<>(List.of("int requestId"));
            if (frame.kind.mayBeAsync) {
                parameters.add("boolean async");
            }
            if (frame.kind.chunked) {
                parameters.add("boolean more");
            }
            for (Field field : frame.header()) {
                TypeMirror written = field.writer.getParameters().get(1).asType();
                boolean inherited = field.type.getKind() == TypeKind.DECLARED
                        && !env.getTypeUtils().isSameType(written, field.type)
                        && env.getTypeUtils().isAssignable(field.type, written);
                parameters.add(out.type(inherited ? field.type : written) + " " + field.name);
            }
            String flags =
                    frame.kind.chunked ? "flags(async, more)" : frame.kind.mayBeAsync ? "flags(async, false)" : "0";
            String method = frame.kind.chunked ? frame.method + "ChunkHeader" : frame.method;
            if (frame.kind.chunked) {
                anyChunked = true;
                parameters.add("int dataBytes");
                out.line("    /**");
                out.line("     * The header of one chunk of {@link " + names.opcodes + "#" + frame.constant
                        + "}, whose");
                out.line(
                        "     * {@code dataBytes} the caller supplies right after it, in this buffer (see {@link #chunkBytes})");
                out.line(
                        "     * or as the next buffer written to the connection, so that the caller's memory can be sent");
                out.line("     * without a copy.");
                out.line("     */");
            } else {
                out.line("    /** {@link " + names.opcodes + "#" + frame.constant + "}. */");
            }
            out.line("    public void " + method + "(" + String.join(", ", parameters) + ") {");
            for (Field field : frame.header()) {
                if (field.checker != null) {
                    out.line("        " + names.codecs + "." + field.checker.getSimpleName() + "(" + field.name + ");");
                }
            }
            String opcode = names.opcodes + "." + frame.constant;
            out.line("        int start = Frames.begin(out, " + opcode + ", " + flags + ", requestId);");
            for (Field field : frame.header()) {
                out.line("        " + names.codecs + "." + field.writer.getSimpleName() + "(out, " + field.name + ");");
            }
            out.line(
                    frame.kind.chunked
                            ? "        Frames.finishWithTrailing(out, start, dataBytes);"
                            : "        Frames.finish(out, start);");
            out.line("    }");
            if (frame.kind.chunked) {
                String segment = out.type("java.lang.foreign.MemorySegment");
                List<String> chunkParameters = new ArrayList<>(parameters.subList(0, parameters.size() - 1));
                chunkParameters.addAll(List.of(segment + " chunkSource", "long chunkOffset", "int chunkLength"));
                List<String> arguments = new ArrayList<>(List.of("requestId", "async", "more"));
                frame.header().forEach(f -> arguments.add(f.name));
                arguments.add("chunkLength");
                out.blank();
                out.line("    /**");
                out.line("     * One chunk of {@link " + names.opcodes + "#" + frame.constant
                        + "} with its bytes copied from");
                out.line("     * {@code chunkSource} at {@code chunkOffset}.");
                out.line("     */");
                out.line("    public void " + frame.method + "Chunk(" + String.join(", ", chunkParameters) + ") {");
                out.line("        " + method + "(" + String.join(", ", arguments) + ");");
                out.line("        chunkBytes(chunkSource, chunkOffset, chunkLength);");
                out.line("    }");
            }
        }
        if (anyChunked) {
            String segment = out.type("java.lang.foreign.MemorySegment");
            out.blank();
            out.line("    /** The bytes of a chunk whose header was just written, copied from {@code src} at"
                    + " {@code offset}. */");
            out.line("    public void chunkBytes(" + segment + " src, long offset, int bytes) {");
            out.line("        Frames.writeTrailing(out, src, offset, bytes);");
            out.line("    }");
        }
        out.blank();
        out.line("    private static int flags(boolean async, boolean more) {");
        out.line("        return (async ? Frames.FLAG_ASYNC : 0) | (more ? Frames.FLAG_MORE : 0);");
        out.line("    }");
        out.line("}");
        return out.toSource(names.origin());
    }

    // ---- the decoder

    private String writeDispatch(Names names, List<Frame> frames) {
        SourceWriter out = new SourceWriter(names.pkg);
        String byteBuf = out.type(BYTE_BUF);
        out.line("/**");
        out.line(" * Reads request bodies (layouts: {@link " + names.opcodes + "}) and hands the fields to a");
        out.line(" * {@link " + names.visitor + "}.");
        out.line(" * A body that is too short, too long or holds impossible values (as {@link " + names.codecs
                + "} judges");
        out.line(" * them) is a VGPU_PROTOCOL_ERROR raised before the visitor is called; what the values mean is for");
        out.line(" * the visitor to judge.");
        out.line(" */");
        out.generatedAnnotation();
        out.line("public final class " + names.dispatch + " {");
        out.line("    private " + names.dispatch + "() {");
        out.line("    }");
        out.blank();
        out.line(
                "    /** Decodes {@code frame} and calls the visitor method of its opcode. The frame stays the caller's. */");
        out.line("    public static void dispatch(Frame frame, " + names.visitor + " visitor) {");
        out.line("        " + byteBuf + " in = frame.body().duplicate();");
        out.line("        try {");
        out.line("            switch (frame.opcode()) {");
        for (Frame frame : requests(frames)) {
            out.line("                case " + frame.constant + " -> {");
            for (Field field : frame.fields) {
                String arguments = field.reader.getParameters().stream()
                        .map(p -> readerArgument(p, field))
                        .collect(Collectors.joining(", "));
                out.line("                    " + out.type(field.type) + " " + field.name + " = " + names.codecs + "."
                        + field.reader.getSimpleName() + "(" + arguments + ");");
            }
            out.line("                    Frames.requireConsumed(frame, in);");
            String fields = frame.fields.stream().map(f -> ", " + f.name).collect(Collectors.joining());
            out.line("                    visitor." + frame.method + "(frame" + fields + ");");
            out.line("                }");
        }
        String replies =
                frames.stream().filter(f -> !f.request).map(Frame::constant).collect(Collectors.joining(", "));
        if (!replies.isEmpty()) {
            out.line("                case " + replies
                    + " -> throw Frames.violation(frame.opcode() + \" is not a request\");");
        }
        out.line("            }");
        out.line("        } catch (IndexOutOfBoundsException e) {");
        out.line("            throw Frames.violation(frame.opcode() + \" body of \" + frame.body().readableBytes()");
        out.line("                    + \" bytes is truncated\");");
        out.line("        }");
        out.line("    }");
        out.line("}");
        return out.toSource(names.origin());
    }

    private String readerArgument(VariableElement parameter, Field field) {
        String type = parameter.asType().toString();
        if (type.equals(BYTE_BUF)) {
            return "in";
        }
        if (type.equals("java.lang.String")) {
            return "\"" + field.name + "\"";
        }
        if (((DeclaredType) parameter.asType()).asElement().getSimpleName().contentEquals("Frame")) {
            return "frame";
        }
        if (type.startsWith("java.lang.Class")) {
            return classLiteral(field.type);
        }
        error(
                field.reader,
                "a reader takes the Frame, the body's ByteBuf, the field's name or its type's Class, not " + type);
        return "null";
    }

    /** {@code X.class} for a declared type, by its qualified name. */
    static String classLiteral(TypeMirror type) {
        return ((TypeElement) ((DeclaredType) type).asElement()).getQualifiedName() + ".class";
    }

    /** A frame's doc comment: the surface's own, or for a one-to-one call its layout and the call it carries. */
    private String doc(Frame frame) {
        if (frame.oneToOne == null) {
            return env.getElementUtils().getDocComment(frame.element);
        }
        String body = frame.fields.stream()
                .map(f -> f.handle != null
                        ? "int32 " + words(f.parameter) + " id"
                        : layout(defaultCodec(f.type)) + " " + words(f.parameter))
                .collect(Collectors.joining(", "));
        String call = ((TypeElement) frame.element.getEnclosingElement()).getQualifiedName() + "#" + frame.method;
        return " One to one: {@link " + call + "}. " + (body.isEmpty() ? "Empty" : "{@code " + body + "}")
                + (frame.oneToOne.returns() ? "; OK: {@code " + layout(frame.oneToOne.resultCodec()) + "}." : ".");
    }

    /** How a codec of the primitive types lays out its value; another codec by its name. */
    private static String layout(String codec) {
        return switch (codec) {
            case "Int32" -> "int32";
            case "Int64" -> "int64";
            case "Float32" -> "float32";
            case "Boolean" -> "uint8 (0 or 1)";
            default -> codec;
        };
    }

    /** startEvent -> start event. */
    private static String words(String name) {
        return name.replaceAll("([a-z0-9])([A-Z])", "$1 $2").toLowerCase(Locale.ROOT);
    }

    private static List<Frame> requests(List<Frame> frames) {
        return frames.stream().filter(Frame::request).toList();
    }

    private void error(Element element, String message) {
        failed = true;
        env.getMessager().printMessage(Diagnostic.Kind.ERROR, message, element);
    }
}
