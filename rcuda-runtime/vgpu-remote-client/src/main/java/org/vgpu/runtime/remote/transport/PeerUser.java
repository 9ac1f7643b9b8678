package org.vgpu.runtime.remote.transport;

import java.nio.file.attribute.UserPrincipal;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * The user of the process at the other end of a Unix domain socket, as the kernel gives it: a uid through epoll's
 * peer credentials, a user principal through the JDK's {@code SO_PEERCRED} (which hides the number). Either is
 * compared with the user this process is, given the same two ways ({@link #is}).
 *
 * @param uid       the peer's uid, where the transport says it
 * @param principal the peer's user, where the transport says it that way
 */
public record PeerUser(OptionalInt uid, Optional<UserPrincipal> principal) {
    public PeerUser {
        Objects.requireNonNull(uid, "uid");
        Objects.requireNonNull(principal, "principal");
        if (uid.isPresent() == principal.isPresent()) {
            throw new IllegalArgumentException("a peer's user is a uid or a principal, one of the two");
        }
    }

    public static PeerUser ofUid(int uid) {
        return new PeerUser(OptionalInt.of(uid), Optional.empty());
    }

    public static PeerUser ofPrincipal(UserPrincipal principal) {
        return new PeerUser(OptionalInt.empty(), Optional.of(principal));
    }

    /** Whether the peer is the user with uid {@code uid}, whose principal is {@code user}. */
    public boolean is(int uid, UserPrincipal user) {
        return this.uid.isPresent()
                ? this.uid.getAsInt() == uid
                : principal.orElseThrow().equals(user);
    }

    /** "uid 1000" or "user alice", for messages. */
    public String describe() {
        return uid.isPresent()
                ? "uid " + uid.getAsInt()
                : "user " + principal.orElseThrow().getName();
    }
}
