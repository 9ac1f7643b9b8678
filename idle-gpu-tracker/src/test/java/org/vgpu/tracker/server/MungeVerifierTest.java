package org.vgpu.tracker.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;

import org.junit.jupiter.api.Test;

import org.vgpu.tracker.process.BoundedCommand;

/** What {@link MungeVerifier} makes of what {@code unmunge} gives back (the fuzz target {@code munge} feeds it more). */
class MungeVerifierTest {
    private static final String REQUEST = "done 42 n1 0";

    private static MungeVerifier printing(int exitCode, String stdout) {
        return new MungeVerifier(credential -> new BoundedCommand.Result(List.of("unmunge"), exitCode, stdout, ""));
    }

    private static String decoded(String uidLine, String payload) {
        return "STATUS:           Success (0)\nENCODE_HOST:      n1 (127.0.0.1)\n" + uidLine
                + "\nGID:              slurm (64030)\nLENGTH:           " + payload.length() + "\n\n" + payload + "\n";
    }

    @Test
    void aGoodCredentialForTheRequestNamesItsSender() throws Exception {
        assertEquals(
                new MungeVerifier.Sender("slurm", 64030),
                printing(0, decoded("UID:              slurm (64030)", REQUEST)).verify("MUNGE:x:", REQUEST));
        assertEquals(
                new MungeVerifier.Sender("nobody", 4294967295L),
                printing(0, decoded("UID:              nobody (4294967295)", REQUEST))
                        .verify("MUNGE:x:", REQUEST),
                "the largest uid_t");
    }

    /** Found by the fuzz target: a UID longer than a long overflowed into an internal error (crash-79a12656...). */
    @Test
    void aUidOutOfRangeIsRefusedNotAnInternalError() {
        MungeVerifier.Refused refused = assertThrows(
                MungeVerifier.Refused.class,
                () -> printing(0, decoded("UID:              slurm (64030" + "5".repeat(100) + ")", REQUEST))
                        .verify("MUNGE:x:", REQUEST));
        assertEquals("unmunge printed a UID out of range: 6403055555... (at most 4294967295)", refused.getMessage());
        refused = assertThrows(
                MungeVerifier.Refused.class,
                () -> printing(0, decoded("UID:              slurm (4294967296)", REQUEST))
                        .verify("MUNGE:x:", REQUEST));
        assertEquals("unmunge printed a UID out of range: 4294967296 (at most 4294967295)", refused.getMessage());
    }

    @Test
    void whatMungeRefusesIsRefusedInItsWords() {
        MungeVerifier.Refused refused = assertThrows(
                MungeVerifier.Refused.class,
                () -> printing(15, "STATUS:           Expired credential (15)\n")
                        .verify("MUNGE:x:", REQUEST));
        assertEquals("Expired credential (15)", refused.getMessage());
    }

    @Test
    void aCredentialForAnotherRequestOrWithoutPayloadOrUidIsRefused() {
        assertEquals(
                "the credential was made for another request",
                assertThrows(
                                MungeVerifier.Refused.class,
                                () -> printing(0, decoded("UID:              root (0)", "hook pause"))
                                        .verify("MUNGE:x:", REQUEST))
                        .getMessage());
        assertEquals(
                "unmunge printed no payload",
                assertThrows(
                                MungeVerifier.Refused.class,
                                () -> printing(0, "UID:              root (0)\n")
                                        .verify("MUNGE:x:", REQUEST))
                        .getMessage());
        assertEquals(
                "unmunge printed no UID",
                assertThrows(
                                MungeVerifier.Refused.class,
                                () -> printing(0, decoded("UID:              root", REQUEST))
                                        .verify("MUNGE:x:", REQUEST))
                        .getMessage());
    }
}
