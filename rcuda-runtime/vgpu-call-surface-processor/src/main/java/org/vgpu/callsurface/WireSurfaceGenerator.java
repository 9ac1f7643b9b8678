package org.vgpu.callsurface;

import java.util.Comparator;
import java.util.List;
import java.util.Map;
import javax.annotation.processing.ProcessingEnvironment;
import javax.lang.model.element.AnnotationMirror;
import javax.lang.model.element.ExecutableElement;
import javax.lang.model.element.TypeElement;
import javax.lang.model.type.DeclaredType;
import javax.lang.model.type.TypeKind;
import javax.lang.model.type.TypeMirror;

import org.vgpu.callsurface.WireTable.Frame;
import org.vgpu.callsurface.WireTable.Names;

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

    private final ProcessingEnvironment env;

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
        SurfaceDiagnostics diagnostics = new SurfaceDiagnostics(env);
        WireSurfaceReader reader = new WireSurfaceReader(env, diagnostics);
        Map<String, ExecutableElement> codecMethods = WireSurfaceReader.codecMethods(codecs);
        List<Frame> frames = reader.surfaceFrames(surface, codecMethods);
        TypeMirror api = (TypeMirror) Mirrors.value(env.getElementUtils(), mirror, "api");
        OneToOneGenerator.Ends ends = null;
        if (api.getKind() == TypeKind.DECLARED) {
            ends = reader.oneToOneEnds(surface, mirror);
            if (ends != null) {
                frames.addAll(reader.apiFrames(
                        (TypeElement) ((DeclaredType) api).asElement(), ends.validation(), codecMethods));
            }
        }
        reader.checkTable(frames);
        if (diagnostics.failed()) {
            return;
        }
        frames.sort(Comparator.comparingInt(Frame::code));
        String pkg =
                env.getElementUtils().getPackageOf(surface).getQualifiedName().toString();
        Names names = new Names(pkg, surface, codecs.getSimpleName().toString(), opcodes, visitor, encoder, dispatch);
        WireSurfaceWriter writer = new WireSurfaceWriter(env, diagnostics, names, frames);
        Sources.write(env, surface, pkg + "." + opcodes, writer.opcodes());
        Sources.write(env, surface, pkg + "." + visitor, writer.visitor());
        Sources.write(env, surface, pkg + "." + encoder, writer.encoder());
        Sources.write(env, surface, pkg + "." + dispatch, writer.dispatch());
        new WireHeaderWriter(env, names, codecs, frames).write();
        if (ends != null) {
            new OneToOneGenerator(env, names, ends).generate(frames);
        }
    }
}
