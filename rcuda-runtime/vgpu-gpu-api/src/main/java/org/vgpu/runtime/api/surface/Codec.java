package org.vgpu.runtime.api.surface;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * The codec of a request field whose type alone does not say how it travels (a chunk size checked
 * against the protocol's limit, a region table that must fill the body, ...): the field is read by
 * {@code readX} and written by {@code writeX} of the surface's codecs class, {@code X} being this value.
 */
@Retention(RetentionPolicy.SOURCE)
@Target(ElementType.PARAMETER)
public @interface Codec {
    String value();
}
