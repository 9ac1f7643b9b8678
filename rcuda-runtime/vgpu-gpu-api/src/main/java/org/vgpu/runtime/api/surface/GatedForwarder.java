package org.vgpu.runtime.api.surface;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Generates {@code Gated<Interface>}, the abstract superclass of the annotated class, holding every
 * call of {@link #value} the class does not write itself, each as straight-line code with no
 * object allocated per call:
 * {@code slot = enter(); try { beforeSynchronizing(); return current().call(translate(a)); } finally { exit(slot); }}.
 * The hooks are the annotated class's methods below, declared abstract in the superclass; the
 * {@link BeforeSynchronizing} hook runs only in {@link Synchronizing} calls, the {@link Record} hook
 * only in {@link ReplayedSetting} calls.
 */
@Retention(RetentionPolicy.SOURCE)
@Target(ElementType.TYPE)
public @interface GatedForwarder {
    /** The interface whose calls are forwarded. */
    Class<?> value();

    /** Enters the gate; what it returns is handed to {@link Exit}. */
    @Retention(RetentionPolicy.SOURCE)
    @Target(ElementType.METHOD)
    @interface Enter {}

    @Retention(RetentionPolicy.SOURCE)
    @Target(ElementType.METHOD)
    @interface Exit {}

    /** The object calls go to now. */
    @Retention(RetentionPolicy.SOURCE)
    @Target(ElementType.METHOD)
    @interface Current {}

    @Retention(RetentionPolicy.SOURCE)
    @Target(ElementType.METHOD)
    @interface BeforeSynchronizing {}

    /**
     * Keeps what a {@link ReplayedSetting} call set: takes the generated {@code Gated<Interface>.Setting}
     * of each such call once the call succeeded, for a migration to replay.
     */
    @Retention(RetentionPolicy.SOURCE)
    @Target(ElementType.METHOD)
    @SuppressWarnings("JavaLangClash") // an annotation, always written GatedForwarder.Record
    @interface Record {}

    /** Maps an argument of its type (a handle) to what the target knows it by. */
    @Retention(RetentionPolicy.SOURCE)
    @Target(ElementType.METHOD)
    @interface Translate {}
}
