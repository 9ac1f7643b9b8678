package org.vgpu.runtime.api.surface;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/** A request of a {@link CallSurface}: its opcode, how it may be sent, and the name of its opcode constant. */
@Retention(RetentionPolicy.SOURCE)
@Target(ElementType.METHOD)
public @interface Call {
    /** The value in the frame header; fixed forever once released, since it is what old peers send. */
    int opcode();

    Kind kind();

    /** The opcode constant; by default the method's name in upper snake case (memAllocAt: MEM_ALLOC_AT). */
    String name() default "";

    /** How a request may be sent, and so what its encoder takes. */
    enum Kind {
        /** Always answered; never asynchronous. */
        SYNC,
        /** May be sent asynchronous (no answer on success, its failure kept for the next synchronizing request). */
        ASYNC,
        /** Always answered, and reports a kept asynchronous failure instead of executing. */
        SYNCHRONIZING,
        /** May be asynchronous; sent without, it is synchronizing. */
        ASYNC_OR_SYNCHRONIZING,
        /** As {@link #ASYNC_OR_SYNCHRONIZING}, sent in chunks; the last parameter is the chunk's bytes. */
        CHUNKED
    }
}
