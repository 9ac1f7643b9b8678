package org.vgpu.runtime.remote.protocol;

import java.util.Objects;

/**
 * What a worker answers, in its WELCOME, to a HELLO that offered to stripe bulk bytes over extra connections: how
 * many stripe connections the session takes and the random key each must present (in a HELLO that joins the
 * session as a stripe) to be attached to it, or none and why not.
 *
 * @param stripes how many stripe connections the client opens, 0 when the bulk bytes do not go striped
 * @param key     the session's stripe key, empty when there are no stripes; a credential, never logged
 * @param note    why there are no stripes, empty when there are
 */
public record StripeOffer(int stripes, String key, String note) {
    /** The note of a WELCOME to a HELLO that offered no stripes: such a WELCOME carries no answer about them. */
    public static final String NOT_ASKED = "the client did not offer stripes";

    /** No stripes, for the reason {@code note}. */
    public static StripeOffer none(String note) {
        return new StripeOffer(0, "", note);
    }

    public StripeOffer {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(note, "note");
    }

    /** Whether the worker takes stripes. */
    public boolean offered() {
        return stripes > 0;
    }

    @Override
    public String toString() {
        return offered() ? "StripeOffer[" + stripes + " stripes]" : "StripeOffer[none: " + note + "]";
    }
}
