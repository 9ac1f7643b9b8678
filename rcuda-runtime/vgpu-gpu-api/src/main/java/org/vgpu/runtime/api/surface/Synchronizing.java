package org.vgpu.runtime.api.surface;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * A call that reports an earlier asynchronous call's failure, as CUDA's synchronizing calls (which
 * wait for earlier work) and its queries do. Kept in the class file: forwarders generated in other modules read it.
 */
@Documented
@Retention(RetentionPolicy.CLASS)
@Target(ElementType.METHOD)
public @interface Synchronizing {}
