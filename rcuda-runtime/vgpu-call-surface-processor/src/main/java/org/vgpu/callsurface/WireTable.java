package org.vgpu.callsurface;

import java.util.List;
import java.util.Locale;
import javax.lang.model.element.Element;
import javax.lang.model.element.ExecutableElement;
import javax.lang.model.element.TypeElement;
import javax.lang.model.type.DeclaredType;
import javax.lang.model.type.TypeKind;
import javax.lang.model.type.TypeMirror;

/**
 * The remote protocol's frame table as {@link WireSurfaceReader} reads it from a call surface and
 * {@link WireSurfaceWriter} and {@link OneToOneGenerator} turn it into code: the frames, their
 * fields and kinds, and the names the generated classes take.
 */
final class WireTable {
    static final String BYTE_BUF = "io.netty.buffer.ByteBuf";
    /** Opcodes index a table of this many entries. */
    static final int MAX_CODE = 0xFF;

    private WireTable() {}

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
     * One field of a request body. {@code parameter}, {@code position} and {@code handle} are set for a
     * one-to-one call's field: the API parameter it carries and that parameter's position in the
     * call (the fields follow the primitive's order, which may differ) and, when it is a handle, the
     * handle's type (the field is then its int32 id) and the validation class's type variable for its
     * backend object. The field of a creation that carries the id the client chose for the new object
     * has a handle but no parameter (position -1).
     */
    record Field(
            String name,
            TypeMirror type,
            ExecutableElement reader,
            ExecutableElement writer,
            ExecutableElement checker,
            String parameter,
            int position,
            TypeMirror handle,
            String handleVariable) {
        Field(
                String name,
                TypeMirror type,
                ExecutableElement reader,
                ExecutableElement writer,
                ExecutableElement checker) {
            this(name, type, reader, writer, checker, null, -1, null, null);
        }
    }

    /**
     * What a one-to-one call adds to its frame: the API method, the validation class's primitive it
     * reaches, its result's type and codec (none for {@code void}, nor for a creation, whose result
     * does not travel), whether it destroys its one handle's object ({@code @RemoteCall(destroys =
     * true)}) and whether it creates the object of the handle it returns ({@code creates = true}).
     */
    record OneToOne(
            ExecutableElement call,
            ExecutableElement primitive,
            TypeMirror result,
            String resultCodec,
            ExecutableElement resultReader,
            ExecutableElement resultWriter,
            boolean destroys,
            boolean creates) {
        /** Whether the OK reply carries the result. */
        boolean returns() {
            return !creates && result.getKind() != TypeKind.VOID;
        }

        /** The field of a creation's request that carries the id the client chose; null for another call. */
        Field created(List<Field> fields) {
            return creates
                    ? fields.stream()
                            .filter(f -> f.parameter() == null)
                            .findFirst()
                            .orElse(null)
                    : null;
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

    /** The generated classes' package, the surface they come from and the names the surface gives them. */
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

    /** StreamHandle -> stream: how the hooks of a handle type are named ({@code stream(int)}, {@code streamId(S)}). */
    static String handleName(TypeMirror handle) {
        String simple = handle.toString().substring(handle.toString().lastIndexOf('.') + 1);
        String base = simple.endsWith("Handle") && simple.length() > "Handle".length()
                ? simple.substring(0, simple.length() - "Handle".length())
                : simple;
        return Character.toLowerCase(base.charAt(0)) + base.substring(1);
    }

    /** stream -> Stream. */
    static String capitalized(String name) {
        return Character.toUpperCase(name.charAt(0)) + name.substring(1);
    }

    /** memAllocAt -> MEM_ALLOC_AT. */
    static String constantName(String method) {
        return method.replaceAll("([a-z0-9])([A-Z])", "$1_$2").toUpperCase(Locale.ROOT);
    }

    /** {@code X.class} for a declared type, by its qualified name. */
    static String classLiteral(TypeMirror type) {
        return ((TypeElement) ((DeclaredType) type).asElement()).getQualifiedName() + ".class";
    }

    /** The codec a type travels by when nothing names another: Int32, Int64, Float32, Boolean or its simple name. */
    static String defaultCodec(TypeMirror type) {
        return switch (type.getKind()) {
            case INT -> "Int32";
            case LONG -> "Int64";
            case FLOAT -> "Float32";
            case BOOLEAN -> "Boolean";
            case DECLARED -> ((DeclaredType) type).asElement().getSimpleName().toString();
            default -> type.toString();
        };
    }

    static List<Frame> requests(List<Frame> frames) {
        return frames.stream().filter(Frame::request).toList();
    }
}
