package org.vgpu.callsurface;

import static org.vgpu.callsurface.WireTable.BYTE_BUF;
import static org.vgpu.callsurface.WireTable.MAX_CODE;
import static org.vgpu.callsurface.WireTable.classLiteral;
import static org.vgpu.callsurface.WireTable.defaultCodec;
import static org.vgpu.callsurface.WireTable.requests;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;
import javax.annotation.processing.ProcessingEnvironment;
import javax.lang.model.element.TypeElement;
import javax.lang.model.element.VariableElement;
import javax.lang.model.type.DeclaredType;
import javax.lang.model.type.TypeKind;
import javax.lang.model.type.TypeMirror;

import org.vgpu.callsurface.WireTable.Field;
import org.vgpu.callsurface.WireTable.Frame;
import org.vgpu.callsurface.WireTable.Names;

/**
 * Writes the four classes of a frame table: the opcode enum, the visitor, the request encoder (a
 * flyweight in the Aeron/SBE sense) and the request dispatch that decodes bodies for the visitor.
 */
final class WireSurfaceWriter {
    private final ProcessingEnvironment env;
    private final SurfaceDiagnostics diagnostics;
    private final Names names;
    private final List<Frame> frames;

    WireSurfaceWriter(ProcessingEnvironment env, SurfaceDiagnostics diagnostics, Names names, List<Frame> frames) {
        this.env = env;
        this.diagnostics = diagnostics;
        this.names = names;
        this.frames = frames;
    }

    // ---- the opcode table

    String opcodes() {
        SourceWriter out = new SourceWriter(names.pkg());
        out.javadoc("", env.getElementUtils().getDocComment(names.surface()));
        out.generatedAnnotation();
        out.line("public enum " + names.opcodes() + " {");
        for (int i = 0; i < frames.size(); i++) {
            Frame frame = frames.get(i);
            out.javadoc("    ", doc(frame));
            out.line(String.format(
                    "    %s(0x%04X, Direction.%s, %s, %s, %s)%s",
                    frame.constant(),
                    frame.code(),
                    frame.request() ? "REQUEST" : "REPLY",
                    frame.kind() != null && frame.kind().mayBeAsync,
                    frame.kind() != null && frame.kind().synchronizing,
                    frame.chunked(),
                    i == frames.size() - 1 ? ";" : ","));
        }
        String opcode = names.opcodes();
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

    String visitor() {
        SourceWriter out = new SourceWriter(names.pkg());
        out.line("/**");
        out.line(" * Receives decoded requests from {@link " + names.dispatch()
                + "#dispatch}, one method per request of");
        out.line(" * {@link " + names.opcodes()
                + "}. The {@code frame} gives the request id and flags. Buffers passed in");
        out.line(" * belong to the frame: use them during the call, or retain them.");
        out.line(" */");
        out.generatedAnnotation();
        out.line("public interface " + names.visitor() + " {");
        for (Frame frame : requests(frames)) {
            out.blank();
            out.line("    /** {@link " + names.opcodes() + "#" + frame.constant() + "}. */");
            String fields = frame.fields().stream()
                    .map(f -> ", " + out.type(f.type()) + " " + f.name())
                    .collect(Collectors.joining());
            out.line("    void " + frame.method() + "(Frame frame" + fields + ");");
        }
        out.line("}");
        return out.toSource(names.origin());
    }

    // ---- the encoder

    String encoder() {
        SourceWriter out = new SourceWriter(names.pkg());
        String byteBuf = out.type(BYTE_BUF);
        out.line("/**");
        out.line(" * Writes request frames (layouts: {@link " + names.opcodes()
                + "}) straight into a buffer, one method per");
        out.line(" * request, without building a message object first: a flyweight in the Aeron/SBE sense,");
        out.line(" * {@link #wrap}ped around whatever buffer collects the next write. Not thread-safe; one per");
        out.line(" * connection, used under the connection's batch lock. Fields are written by {@link " + names.codecs()
                + "}.");
        out.line(" */");
        out.generatedAnnotation();
        out.line("public final class " + names.encoder() + " {");
        out.line("    private " + byteBuf + " out;");
        out.blank();
        out.line("    /** Directs the following writes to {@code buffer}, at its writer index. */");
        out.line("    public " + names.encoder() + " wrap(" + byteBuf + " buffer) {");
        out.line("        this.out = buffer;");
        out.line("        return this;");
        out.line("    }");
        boolean anyChunked = false;
        for (Frame frame : requests(frames)) {
            out.blank();
            List<String> parameters = new ArrayList<>(List.of("int requestId"));
            if (frame.kind().mayBeAsync) {
                parameters.add("boolean async");
            }
            if (frame.kind().chunked) {
                parameters.add("boolean more");
            }
            for (Field field : frame.header()) {
                TypeMirror written = field.writer().getParameters().get(1).asType();
                boolean inherited = field.type().getKind() == TypeKind.DECLARED
                        && !env.getTypeUtils().isSameType(written, field.type())
                        && env.getTypeUtils().isAssignable(field.type(), written);
                parameters.add(out.type(inherited ? field.type() : written) + " " + field.name());
            }
            String flags =
                    frame.kind().chunked ? "flags(async, more)" : frame.kind().mayBeAsync ? "flags(async, false)" : "0";
            String method = frame.kind().chunked ? frame.method() + "ChunkHeader" : frame.method();
            if (frame.kind().chunked) {
                anyChunked = true;
                parameters.add("int dataBytes");
                out.line("    /**");
                out.line("     * The header of one chunk of {@link " + names.opcodes() + "#" + frame.constant()
                        + "}, whose");
                out.line(
                        "     * {@code dataBytes} the caller supplies right after it, in this buffer (see {@link #chunkBytes})");
                out.line(
                        "     * or as the next buffer written to the connection, so that the caller's memory can be sent");
                out.line("     * without a copy.");
                out.line("     */");
            } else {
                out.line("    /** {@link " + names.opcodes() + "#" + frame.constant() + "}. */");
            }
            out.line("    public void " + method + "(" + String.join(", ", parameters) + ") {");
            for (Field field : frame.header()) {
                if (field.checker() != null) {
                    out.line("        " + names.codecs() + "." + field.checker().getSimpleName() + "(" + field.name()
                            + ");");
                }
            }
            String opcode = names.opcodes() + "." + frame.constant();
            out.line("        int start = Frames.begin(out, " + opcode + ", " + flags + ", requestId);");
            for (Field field : frame.header()) {
                out.line("        " + names.codecs() + "." + field.writer().getSimpleName() + "(out, " + field.name()
                        + ");");
            }
            out.line(
                    frame.kind().chunked
                            ? "        Frames.finishWithTrailing(out, start, dataBytes);"
                            : "        Frames.finish(out, start);");
            out.line("    }");
            if (frame.kind().chunked) {
                String segment = out.type("java.lang.foreign.MemorySegment");
                List<String> chunkParameters = new ArrayList<>(parameters.subList(0, parameters.size() - 1));
                chunkParameters.addAll(List.of(segment + " chunkSource", "long chunkOffset", "int chunkLength"));
                List<String> arguments = new ArrayList<>(List.of("requestId", "async", "more"));
                frame.header().forEach(f -> arguments.add(f.name()));
                arguments.add("chunkLength");
                out.blank();
                out.line("    /**");
                out.line("     * One chunk of {@link " + names.opcodes() + "#" + frame.constant()
                        + "} with its bytes copied from");
                out.line("     * {@code chunkSource} at {@code chunkOffset}.");
                out.line("     */");
                out.line("    public void " + frame.method() + "Chunk(" + String.join(", ", chunkParameters) + ") {");
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

    String dispatch() {
        SourceWriter out = new SourceWriter(names.pkg());
        String byteBuf = out.type(BYTE_BUF);
        out.line("/**");
        out.line(" * Reads request bodies (layouts: {@link " + names.opcodes() + "}) and hands the fields to a");
        out.line(" * {@link " + names.visitor() + "}.");
        out.line(" * A body that is too short, too long or holds impossible values (as {@link " + names.codecs()
                + "} judges");
        out.line(" * them) is a VGPU_PROTOCOL_ERROR raised before the visitor is called; what the values mean is for");
        out.line(" * the visitor to judge.");
        out.line(" */");
        out.generatedAnnotation();
        out.line("public final class " + names.dispatch() + " {");
        out.line("    private " + names.dispatch() + "() {");
        out.line("    }");
        out.blank();
        out.line(
                "    /** Decodes {@code frame} and calls the visitor method of its opcode. The frame stays the caller's. */");
        out.line("    public static void dispatch(Frame frame, " + names.visitor() + " visitor) {");
        out.line("        " + byteBuf + " in = frame.body().duplicate();");
        out.line("        try {");
        out.line("            switch (frame.opcode()) {");
        for (Frame frame : requests(frames)) {
            out.line("                case " + frame.constant() + " -> {");
            for (Field field : frame.fields()) {
                String arguments = field.reader().getParameters().stream()
                        .map(p -> readerArgument(p, field))
                        .collect(Collectors.joining(", "));
                out.line("                    " + out.type(field.type()) + " " + field.name() + " = " + names.codecs()
                        + "." + field.reader().getSimpleName() + "(" + arguments + ");");
            }
            out.line("                    Frames.requireConsumed(frame, in);");
            String fields = frame.fields().stream().map(f -> ", " + f.name()).collect(Collectors.joining());
            out.line("                    visitor." + frame.method() + "(frame" + fields + ");");
            out.line("                }");
        }
        String replies =
                frames.stream().filter(f -> !f.request()).map(Frame::constant).collect(Collectors.joining(", "));
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
            return "\"" + field.name() + "\"";
        }
        if (((DeclaredType) parameter.asType()).asElement().getSimpleName().contentEquals("Frame")) {
            return "frame";
        }
        if (type.startsWith("java.lang.Class")) {
            return classLiteral(field.type());
        }
        diagnostics.error(
                field.reader(),
                "a reader takes the Frame, the body's ByteBuf, the field's name or its type's Class, not " + type);
        return "null";
    }

    /** A frame's doc comment: the surface's own, or for a one-to-one call its layout and the call it carries. */
    private String doc(Frame frame) {
        if (frame.oneToOne() == null) {
            return env.getElementUtils().getDocComment(frame.element());
        }
        String body = frame.fields().stream()
                .map(f -> f.parameter() == null
                        ? "int32 " + words(f.name()) + " (chosen by the client)"
                        : f.handle() != null
                                ? "int32 " + words(f.parameter()) + " id"
                                : layout(defaultCodec(f.type())) + " " + words(f.parameter()))
                .collect(Collectors.joining(", "));
        String call = ((TypeElement) frame.element().getEnclosingElement()).getQualifiedName() + "#" + frame.method();
        return " One to one: {@link " + call + "}. " + (body.isEmpty() ? "Empty" : "{@code " + body + "}")
                + (frame.oneToOne().returns()
                        ? "; OK: {@code " + layout(frame.oneToOne().resultCodec()) + "}."
                        : ".");
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
}
