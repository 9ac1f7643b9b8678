package org.vgpu.runtime.api.surface;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * A call that sets a value of the vGPU's context, or of one of its objects, which a migration must
 * set again on its target (as {@code cuCtxSetLimit} and {@code cuFuncSetAttribute} do), keyed by
 * the handles it takes and its first other parameter: the last such call for each key is replayed
 * there, once the target has made the objects the handles stand for, with the target's handles; it
 * is forgotten with any of them. A gated forwarder generates the recording: after the call
 * succeeded it hands a record of the call's arguments to its {@link GatedForwarder.Record} hook;
 * the record makes the call again on a target. A handle is a parameter whose type the gated
 * forwarder translates ({@link GatedForwarder.Translate}). Kept in the class file: forwarders
 * generated in other modules read it.
 */
@Documented
@Retention(RetentionPolicy.CLASS)
@Target(ElementType.METHOD)
public @interface ReplayedSetting {}
