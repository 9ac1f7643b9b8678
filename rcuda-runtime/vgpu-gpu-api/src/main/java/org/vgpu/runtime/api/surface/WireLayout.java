package org.vgpu.runtime.api.surface;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * How a codec of the surface's codecs class lays out its value on the wire, in the words of the protocol's
 * description ({@code int32}, {@code int64}, {@code string}, all big-endian): put on the codec's {@code readX}, it is
 * what the generated C header ({@code META-INF/vgpu/vgpu_wire.h}) tells a peer in C, which writes its own encoders
 * from it.
 */
@Retention(RetentionPolicy.SOURCE)
@Target(ElementType.METHOD)
public @interface WireLayout {
    String value();
}
