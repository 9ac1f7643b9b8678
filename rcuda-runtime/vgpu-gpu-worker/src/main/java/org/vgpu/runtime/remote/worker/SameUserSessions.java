package org.vgpu.runtime.remote.worker;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipal;
import java.util.Optional;

import org.vgpu.common.error.AuthException;
import org.vgpu.common.error.IoReasons;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.remote.transport.PeerUser;

/**
 * The sessions of a local worker: those of processes of the user who owns the worker's socket directory, as the kernel
 * says of the connecting process (SO_PEERCRED). The directory's permissions (0700) keep other users from the socket;
 * this check refuses them too where the directory was made wider, and needs no token: a HELLO's token may be empty and
 * is not read. Over a connection that names no peer user (TCP) every session is refused.
 */
public final class SameUserSessions implements SessionAuthenticator {
    private final int uid;
    private final UserPrincipal user;

    SameUserSessions(int uid, UserPrincipal user) {
        this.uid = uid;
        this.user = user;
    }

    /**
     * Sessions of the user who owns {@code directory}, where the worker's socket is.
     *
     * @throws IOException when the directory's owner cannot be read (its message says what failed)
     */
    public static SameUserSessions ownerOf(Path directory) throws IOException {
        try {
            return new SameUserSessions(
                    (Integer) Files.getAttribute(directory, "unix:uid", LinkOption.NOFOLLOW_LINKS),
                    Files.getOwner(directory, LinkOption.NOFOLLOW_LINKS));
        } catch (UnsupportedOperationException e) {
            throw new IOException(directory + " has no Unix owner: " + e.getMessage(), e);
        } catch (IOException e) {
            throw new IOException("cannot read the owner of " + directory + ": " + IoReasons.of(e), e);
        }
    }

    @Override
    public void authenticate(String token, VaWindow window) {
        throw new AuthException("a local worker serves only the processes of its own user, which only a Unix domain"
                + " socket names; this connection names none");
    }

    @Override
    public void authenticate(String token, VaWindow window, Optional<PeerUser> peer) {
        if (peer.isEmpty()) {
            authenticate(token, window);
            return;
        }
        if (!peer.get().is(uid, user)) {
            throw new AuthException("a local worker serves only the processes of its own user (uid " + uid
                    + "), and this connection comes from " + peer.get().describe());
        }
    }
}
