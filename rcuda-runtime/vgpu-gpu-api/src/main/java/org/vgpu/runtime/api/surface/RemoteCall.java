package org.vgpu.runtime.api.surface;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * A call of an API interface that a remote worker serves one to one: the client encodes its
 * operands (a handle as the id the worker knows it by), the worker makes the same call on its
 * local vGPU with the ids turned back into handles, and the reply carries the result. The
 * {@link CallSurface} naming the interface as its {@code api} puts the call in its opcode table and
 * generates both ends: the client's {@code do} method (the primitive of the surface's
 * {@code validation} class that the API call reaches once validated) and the worker's visitor method.
 *
 * <p>A call that {@link #destroys} its handle's object is one to one with two additions: the client
 * sends nothing while its vGPU closes (the worker frees everything at the session's end), and the
 * worker forgets the id once the call succeeded. A call that {@link #creates} the object of a handle
 * travels with the id the client chose for it, so that creating never waits for the worker. A call
 * whose remote form is anything else (its data in chunks, arguments packed, a shortcut on the
 * client) is a hand-written {@link Call} of the surface instead.
 * Kept in the class file: the surface, compiled in another module than this API, reads it there.
 */
@Retention(RetentionPolicy.CLASS)
@Target(ElementType.METHOD)
public @interface RemoteCall {
    /** The value in the frame header; fixed forever once released, since it is what old peers send. */
    int opcode();

    /**
     * {@link Call.Kind#ASYNC} (a call without result, batched), {@link Call.Kind#SYNC} or
     * {@link Call.Kind#SYNCHRONIZING}, which a call marked {@link Synchronizing} must be.
     */
    Call.Kind kind();

    /**
     * Whether the call destroys the object its one handle stands for ({@code cuStreamDestroy}): the
     * client's primitive sends nothing once its vGPU is closing, and the worker, once the call
     * succeeded, forgets the client's id for it. Such a call takes that one handle and returns nothing.
     */
    boolean destroys() default false;

    /**
     * Whether the call creates the object of the handle it returns ({@code cuStreamCreate}). Its
     * request carries, after the handles the call takes and before its other operands, the id the
     * client chose for the object: the client's primitive takes a fresh id and turns it into its
     * backend object without waiting, and the worker registers the handle its call returned under that
     * id, destroying it again (through the API's destroying call for that handle, if there is one)
     * when the id stands for a handle already. The result itself does not travel.
     */
    boolean creates() default false;
}
