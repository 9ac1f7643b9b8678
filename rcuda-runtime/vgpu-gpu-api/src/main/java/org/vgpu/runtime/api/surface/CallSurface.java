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
 *
 * <p>With an {@link #api}, the table also holds that interface's {@link RemoteCall} methods, and the
 * build generates both ends of them ({@code OneToOneGenerator}): the results' encoder and decoder
 * next to this interface, the {@link #client}'s abstract superclass and the {@link #worker}'s.
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

    /** The interface whose {@link RemoteCall} methods travel one to one; {@code void} for none. */
    Class<?> api() default void.class;

    /** The abstract implementation of {@link #api} whose {@code doX} primitives a client implements. */
    Class<?> validation() default void.class;

    /** The qualified name of the client's generated superclass. */
    String client() default "";

    /** The qualified name of the worker's generated superclass. */
    String worker() default "";

    /** The generated superclass of the hand-written reply encoder: the OK replies carrying a result. */
    String resultEncoder() default "ResultEncoder";

    /** The generated reader of those results. */
    String resultDecoder() default "ResultDecoder";
}
