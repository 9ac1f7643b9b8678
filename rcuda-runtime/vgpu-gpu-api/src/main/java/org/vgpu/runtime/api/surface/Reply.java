package org.vgpu.runtime.api.surface;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/** A reply of a {@link CallSurface}: an int constant holding its opcode. */
@Retention(RetentionPolicy.SOURCE)
@Target(ElementType.FIELD)
public @interface Reply {
    /** Whether the reply may come in chunks of one request. */
    boolean chunked() default false;
}
