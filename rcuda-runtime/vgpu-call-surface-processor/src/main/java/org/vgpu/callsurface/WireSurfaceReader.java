package org.vgpu.callsurface;

import static org.vgpu.callsurface.WireSurfaceGenerator.CALL;
import static org.vgpu.callsurface.WireSurfaceGenerator.CODEC;
import static org.vgpu.callsurface.WireSurfaceGenerator.REMOTE_CALL;
import static org.vgpu.callsurface.WireSurfaceGenerator.REPLY;
import static org.vgpu.callsurface.WireTable.BYTE_BUF;
import static org.vgpu.callsurface.WireTable.MAX_CODE;
import static org.vgpu.callsurface.WireTable.constantName;
import static org.vgpu.callsurface.WireTable.defaultCodec;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
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

import org.vgpu.callsurface.WireTable.Field;
import org.vgpu.callsurface.WireTable.Frame;
import org.vgpu.callsurface.WireTable.Kind;
import org.vgpu.callsurface.WireTable.OneToOne;

/**
 * Reads a call surface's description into the frame table: the surface's {@code @Call} requests and
 * {@code @Reply} constants, its API's {@code @RemoteCall} methods, each field's codec, and the checks
 * that every opcode and constant is taken once. Each mistake is reported where it was written.
 */
final class WireSurfaceReader {
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
            "failure",
            "created",
            "taken",
            "undo");

    private final ProcessingEnvironment env;
    private final SurfaceDiagnostics diagnostics;

    WireSurfaceReader(ProcessingEnvironment env, SurfaceDiagnostics diagnostics) {
        this.env = env;
        this.diagnostics = diagnostics;
    }

    static Map<String, ExecutableElement> codecMethods(TypeElement codecs) {
        Map<String, ExecutableElement> codecMethods = new HashMap<>();
        for (ExecutableElement method : ElementFilter.methodsIn(codecs.getEnclosedElements())) {
            if (method.getModifiers().contains(Modifier.STATIC)) {
                codecMethods.put(method.getSimpleName().toString(), method);
            }
        }
        return codecMethods;
    }

    List<Frame> surfaceFrames(TypeElement surface, Map<String, ExecutableElement> codecMethods) {
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
                    diagnostics.error(element, "a call surface lists only @Call methods and @Reply constants");
                }
                continue;
            }
            frames.add(frame);
        }
        return frames;
    }

    /** Every opcode in range and taken once, every constant named once, over the surface's and the API's frames. */
    void checkTable(List<Frame> frames) {
        Map<Integer, String> codes = new HashMap<>();
        Set<String> constants = new HashSet<>();
        for (Frame frame : frames) {
            if (frame.code() < 1 || frame.code() > MAX_CODE) {
                diagnostics.error(
                        frame.element(),
                        String.format("opcode 0x%04X is outside [0x0001, 0x%04X]", frame.code(), MAX_CODE));
            }
            String taken = codes.putIfAbsent(frame.code(), frame.constant());
            if (taken != null) {
                diagnostics.error(frame.element(), String.format("opcode 0x%04X is already %s", frame.code(), taken));
            }
            if (!constants.add(frame.constant())) {
                diagnostics.error(frame.element(), "a second frame is named " + frame.constant());
            }
        }
    }

    OneToOneGenerator.Ends oneToOneEnds(TypeElement surface, AnnotationMirror mirror) {
        TypeMirror validation = (TypeMirror) Mirrors.value(env.getElementUtils(), mirror, "validation");
        String client = (String) Mirrors.value(env.getElementUtils(), mirror, "client");
        String worker = (String) Mirrors.value(env.getElementUtils(), mirror, "worker");
        if (validation.getKind() != TypeKind.DECLARED || client.isEmpty() || worker.isEmpty()) {
            diagnostics.error(surface, "a call surface with an api names its validation class, client and worker");
            return null;
        }
        return new OneToOneGenerator.Ends(
                (TypeElement) ((DeclaredType) validation).asElement(),
                client,
                worker,
                (String) Mirrors.value(env.getElementUtils(), mirror, "resultEncoder"),
                (String) Mirrors.value(env.getElementUtils(), mirror, "resultDecoder"));
    }

    List<Frame> apiFrames(TypeElement api, TypeElement validation, Map<String, ExecutableElement> codecs) {
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
            diagnostics.error(
                    method,
                    "a one-to-one call is ASYNC, SYNC or SYNCHRONIZING; a " + kind + " call is written by hand");
        } else if (synchronizing != (kind == Kind.SYNCHRONIZING)) {
            diagnostics.error(method, "a @Synchronizing call is SYNCHRONIZING on the wire, and only such a call is");
        }
        boolean destroys = (Boolean) Mirrors.value(env.getElementUtils(), call, "destroys");
        boolean creates = (Boolean) Mirrors.value(env.getElementUtils(), call, "creates");
        if (kind == Kind.ASYNC && result.getKind() != TypeKind.VOID && !creates) {
            diagnostics.error(method, "an ASYNC call has no result to answer");
        }
        if (creates && (destroys || !isHandle(result, codecs))) {
            diagnostics.error(
                    method, "a call that creates returns the handle of what it creates, and destroys nothing");
        }
        if (destroys
                && (method.getParameters().size() != 1
                        || result.getKind() != TypeKind.VOID
                        || codecs.containsKey("read"
                                + codecOf(method.getParameters().getFirst().asType(), codecs)))) {
            diagnostics.error(method, "a call that destroys takes the one handle it destroys and returns nothing");
        }
        ExecutableElement primitive = primitive(validation, method);
        List<Field> fields = new ArrayList<>();
        if (primitive == null) {
            return new Frame(method, constantName(name), code, true, kind, false, name, fields, null);
        }
        List<? extends VariableElement> parameters = method.getParameters();
        int[] positions = operandPositions(method, primitive, validation, codecs);
        for (int j = 0; j < positions.length; j++) {
            VariableElement parameter = parameters.get(positions[j]);
            TypeMirror backend = primitive.getParameters().get(j).asType();
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
                        positions[j],
                        parameter.asType(),
                        backend.toString()));
            } else {
                Field value = field(parameter, codecs, false);
                fields.add(new Field(
                        value.name(),
                        value.type(),
                        value.reader(),
                        value.writer(),
                        value.checker(),
                        parameterName,
                        positions[j],
                        null,
                        null));
            }
        }
        if (creates) {
            if (primitive.getReturnType().getKind() != TypeKind.TYPEVAR) {
                diagnostics.error(
                        method,
                        validation.getSimpleName() + "." + primitive.getSimpleName()
                                + " returns the backend's object of what the call creates, a type variable, not "
                                + primitive.getReturnType());
            } else {
                Field id = createdId(method, result, primitive.getReturnType(), codecs);
                if (fields.stream().anyMatch(operand -> operand.name().equals(id.name()))) {
                    diagnostics.error(
                            method,
                            "the id the client chooses for what the call creates travels as " + id.name()
                                    + ", the name of another of its fields: rename that parameter");
                }
                fields.add(createdAt(fields), id);
            }
        } else if (!env.getTypeUtils().isSameType(primitive.getReturnType(), result)) {
            diagnostics.error(
                    method,
                    validation.getSimpleName() + "." + primitive.getSimpleName() + " returns "
                            + primitive.getReturnType() + ", not " + result);
        }
        OneToOne oneToOne = new OneToOne(method, primitive, result, null, null, null, destroys, creates);
        if (result.getKind() != TypeKind.VOID && !creates) {
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
                diagnostics.error(
                        method,
                        "a result of type " + result + " needs static read" + codec
                                + "(ByteBuf) (or (ByteBuf, Class) for an interface's codec) and write" + codec
                                + " methods in the surface's codecs class");
            }
            oneToOne = new OneToOne(method, primitive, result, codec, reader, writer, destroys, creates);
        }
        return new Frame(method, constantName(name), code, true, kind, false, name, fields, oneToOne);
    }

    /** Where a creation's request carries the id the client chose: after the handles the call takes. */
    private static int createdAt(List<Field> operands) {
        int at = 0;
        for (int i = 0; i < operands.size(); i++) {
            if (operands.get(i).handle() != null) {
                at = i + 1;
            }
        }
        return at;
    }

    /** The int32 field, named after the handle ({@code streamId}), carrying the id the client chose for what a call creates. */
    private Field createdId(
            ExecutableElement method, TypeMirror handle, TypeMirror backend, Map<String, ExecutableElement> codecs) {
        Field id = field(
                method,
                WireTable.handleName(handle) + "Id",
                "Int32",
                env.getTypeUtils().getPrimitiveType(TypeKind.INT),
                codecs,
                false);
        return new Field(
                id.name(), id.type(), id.reader(), id.writer(), id.checker(), null, -1, handle, backend.toString());
    }

    /** Whether {@code type} is a handle: a declared type without a codec, which travels as its int32 id. */
    private boolean isHandle(TypeMirror type, Map<String, ExecutableElement> codecs) {
        return type.getKind() == TypeKind.DECLARED && !codecs.containsKey("read" + codecOf(type, codecs));
    }

    /**
     * For each operand of {@code primitive}, the position of the call's parameter it takes: the
     * same position, or, for a primitive that takes them in another order ({@code
     * doFuncGetAttribute(function, attribute)} for {@code funcGetAttribute(attribute, function)}),
     * the one parameter left that fits it. A parameter fits an operand of its own type, and a handle
     * (a type without a codec) fits the backend object's type variable. The request's fields follow
     * the primitive's order; empty, with the mistake reported, when some operand fits no parameter
     * or several.
     */
    private int[] operandPositions(
            ExecutableElement call,
            ExecutableElement primitive,
            TypeElement validation,
            Map<String, ExecutableElement> codecs) {
        List<? extends VariableElement> parameters = call.getParameters();
        int[] positions = new int[parameters.size()];
        boolean[] taken = new boolean[parameters.size()];
        for (int j = 0; j < positions.length; j++) {
            TypeMirror backend = primitive.getParameters().get(j).asType();
            List<Integer> fitting = new ArrayList<>();
            for (int i = 0; i < parameters.size(); i++) {
                if (!taken[i] && fits(parameters.get(i).asType(), backend, codecs)) {
                    fitting.add(i);
                }
            }
            int position = fitting.contains(j) ? j : fitting.size() == 1 ? fitting.getFirst() : -1;
            if (position < 0) {
                diagnostics.error(
                        parameters.get(j),
                        validation.getSimpleName() + "." + primitive.getSimpleName() + " takes " + backend
                                + " here, and " + (fitting.isEmpty() ? "no" : "more than one")
                                + " parameter of the call is the same type or a handle's backend object");
                return new int[0];
            }
            positions[j] = position;
            taken[position] = true;
        }
        return positions;
    }

    /** Whether a call's parameter of type {@code parameter} can be a primitive's operand of type {@code operand}. */
    private boolean fits(TypeMirror parameter, TypeMirror operand, Map<String, ExecutableElement> codecs) {
        if (operand.getKind() == TypeKind.TYPEVAR) {
            return isHandle(parameter, codecs);
        }
        return env.getTypeUtils().isSameType(parameter, operand);
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
        diagnostics.error(
                call,
                validation.getSimpleName() + " has no " + primitive + " with "
                        + call.getParameters().size()
                        + " parameters for the client to implement: a call without one is written by hand");
        return null;
    }

    private Frame reply(VariableElement constant, AnnotationMirror reply) {
        if (!(constant.getConstantValue() instanceof Integer code)) {
            diagnostics.error(constant, "a @Reply is an int constant holding its opcode");
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
            diagnostics.error(method, "a CHUNKED call's last parameter is the chunk's bytes");
        }
        if (method.getReturnType().getKind() != TypeKind.VOID) {
            diagnostics.error(method, "a call's answer is a reply frame, not a return value: declare it void");
        }
        return new Frame(method, constant, code, true, kind, kind.chunked, methodName, fields, null);
    }

    private Field field(VariableElement parameter, Map<String, ExecutableElement> codecs, boolean trailing) {
        String codec = Mirrors.find(parameter, CODEC)
                .map(c -> (String) Mirrors.value(env.getElementUtils(), c, "value"))
                .orElseGet(() -> codecOf(parameter.asType(), codecs));
        return field(parameter, parameter.getSimpleName().toString(), codec, parameter.asType(), codecs, trailing);
    }

    /** The field {@code name} of {@code type}, carrying {@code parameter} (or, for a created id, its call's) through {@code codec}. */
    private Field field(
            Element parameter,
            String name,
            String codec,
            TypeMirror type,
            Map<String, ExecutableElement> codecs,
            boolean trailing) {
        if (RESERVED.contains(name)) {
            diagnostics.error(parameter, "'" + name + "' is a name the generated code uses; call the field otherwise");
        }
        ExecutableElement reader = codecs.get("read" + codec);
        ExecutableElement writer = trailing ? null : codecs.get("write" + codec);
        if (reader == null || (!trailing && writer == null)) {
            diagnostics.error(
                    parameter,
                    "codec " + codec + " needs static read" + codec + (trailing ? "" : " and write" + codec)
                            + " methods in the surface's codecs class");
            return new Field(name, type, null, null, null);
        }
        if (reader.getReturnType().getKind() != TypeKind.TYPEVAR
                && !env.getTypeUtils().isSameType(reader.getReturnType(), type)) {
            diagnostics.error(parameter, "read" + codec + " returns " + reader.getReturnType() + ", not " + type);
        } else if (writer != null
                && (writer.getParameters().size() != 2
                        || !writer.getParameters()
                                .getFirst()
                                .asType()
                                .toString()
                                .equals(BYTE_BUF))) {
            diagnostics.error(parameter, "write" + codec + " must take (ByteBuf out, value)");
        }
        return new Field(name, type, reader, writer, trailing ? null : codecs.get("check" + codec));
    }

    /**
     * The codec of a type without an {@code @Codec}: its own ({@link WireTable#defaultCodec}), or else that of
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
}
