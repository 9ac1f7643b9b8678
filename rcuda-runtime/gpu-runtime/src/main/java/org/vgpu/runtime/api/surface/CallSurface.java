package org.vgpu.runtime.api.surface;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks the one description of a wire protocol's requests and replies, from which the build
 * generates the opcode table, the request encoder, the request dispatch and the visitor it calls
 * (vgpu-call-surface-processor; the rules are in its {@code WireSurfaceGenerator}). Each request is
 * a {@link Call} method whose parameters are its body's fields in wire order, each reply a
 * {@link Reply} constant; a request's doc comment, which states its body's layout, becomes its
 * opcode's.
 */
@Retention(RetentionPolicy.SOURCE)
@Target(ElementType.TYPE)
public @interface CallSurface {
    /** The class whose static {@code readX}, {@code writeX} and {@code checkX} methods are the codec of each field type {@code X}. */
    Class<?> codecs();

    String opcodes() default "Opcode";

    String visitor() default "RequestVisitor";

    String encoder() default "RequestEncoder";

    String dispatch() default "RequestDispatch";
}
