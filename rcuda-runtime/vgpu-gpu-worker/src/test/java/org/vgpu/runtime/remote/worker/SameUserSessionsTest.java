package org.vgpu.runtime.remote.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipal;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.error.AuthException;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.remote.transport.PeerUser;

class SameUserSessionsTest {
    private static final VaWindow WINDOW = VaWindow.forVgpu(0);

    @TempDir
    Path directory;

    @Test
    void theDirectoryOwnersProcessesAreServedWithoutAToken() throws IOException {
        int uid = (Integer) Files.getAttribute(directory, "unix:uid");
        UserPrincipal owner = Files.getOwner(directory);
        SameUserSessions sessions = SameUserSessions.ownerOf(directory);

        sessions.authenticate("", WINDOW, Optional.of(PeerUser.ofUid(uid)));
        sessions.authenticate("", WINDOW, Optional.of(PeerUser.ofPrincipal(owner)));
    }

    @Test
    void anotherUsersProcessIsRefusedSayingWhoItIs() throws IOException {
        int uid = (Integer) Files.getAttribute(directory, "unix:uid");
        SameUserSessions sessions = SameUserSessions.ownerOf(directory);

        AuthException refused = assertThrows(
                AuthException.class,
                () -> sessions.authenticate("a-token-changes-nothing", WINDOW, Optional.of(PeerUser.ofUid(uid + 1))));
        assertEquals(
                "a local worker serves only the processes of its own user (uid " + uid
                        + "), and this connection comes from uid " + (uid + 1),
                refused.detail());
    }

    @Test
    void aConnectionThatNamesNoUserIsRefused() throws IOException {
        SameUserSessions sessions = SameUserSessions.ownerOf(directory);

        AuthException overTcp =
                assertThrows(AuthException.class, () -> sessions.authenticate("", WINDOW, Optional.empty()));
        assertEquals(
                "a local worker serves only the processes of its own user, which only a Unix domain socket names;"
                        + " this connection names none",
                overTcp.detail());
    }

    @Test
    void aDirectoryThatIsNotThereIsSaidSo() {
        IOException missing =
                assertThrows(IOException.class, () -> SameUserSessions.ownerOf(directory.resolve("gone")));
        assertEquals(
                "cannot read the owner of " + directory.resolve("gone") + ": no such file or directory",
                missing.getMessage());
    }
}
