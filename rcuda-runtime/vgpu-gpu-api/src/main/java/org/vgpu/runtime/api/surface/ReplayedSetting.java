package org.vgpu.runtime.api.surface;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * A call that sets a value of the vGPU's context which a migration must set again on its target
 * (as {@code cuCtxSetLimit} does), keyed by its first parameter: the last such call for each value
 * of that parameter is replayed there. A gated forwarder generates the recording: after the call
 * succeeded it hands a record of the call's arguments to its {@link GatedForwarder.Record} hook;
 * the record makes the call again on a target. The parameters are values, not handles (a handle's
 * settings are replayed with the handle, by hand). Kept in the class file: forwarders generated in
 * other modules read it.
 */
@Documented
@Retention(RetentionPolicy.CLASS)
@Target(ElementType.METHOD)
public @interface ReplayedSetting {}
