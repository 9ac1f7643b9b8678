package org.vgpu.runtime.api.surface;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * A call that waits for earlier work and so reports an earlier asynchronous call's failure, as
 * CUDA's synchronizing calls do. Kept in the class file: forwarders generated in other modules read it.
 */
@Documented
@Retention(RetentionPolicy.CLASS)
@Target(ElementType.METHOD)
public @interface Synchronizing {}
