package org.vgpu.tracker.server;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.vgpu.tracker.process.BoundedCommand;

/**
 * Checks the MUNGE credentials the SPANK bridge sends with {@code auth=munge}, through munge's own
 * {@code unmunge} (so munged decodes each credential exactly once: expired and replayed ones are
 * refused there). A credential is good when it decodes and its payload is the request line without
 * the credential, byte for byte; the caller then checks who sent it.
 */
public final class MungeVerifier {
    /** What munge says about a good credential: who encoded it. */
    public record Sender(String user, long uid) {}

    /** Why a credential was refused, in words for the {@code error unauthenticated ...} reply. */
    public static final class Refused extends Exception {
        private static final long serialVersionUID = 1L;

        Refused(String reason) {
            super(reason);
        }
    }

    private static final Pattern UID = Pattern.compile("(?m)^UID:\\s+(\\S+) \\((\\d+)\\)\\s*$");
    private static final Pattern STATUS = Pattern.compile("(?m)^STATUS:\\s+(.*?)\\s*$");
    private static final Duration TIMEOUT = Duration.ofSeconds(5);
    /** uid_t is 32 bits unsigned. */
    private static final long MAX_UID = 0xFFFF_FFFFL;

    private static final int MAX_UID_DIGITS = Long.toString(MAX_UID).length();

    /** Runs {@code unmunge} on one credential: what it printed and its exit status. */
    @FunctionalInterface
    public interface Unmunge {
        /** @throws BoundedCommand.Failure when it could not be run or did not finish in time */
        BoundedCommand.Result decode(String credential) throws BoundedCommand.Failure;
    }

    private final Unmunge unmunge;

    /**
     * @param unmunge the {@code unmunge} program
     * @param socket  munged's socket, when not libmunge's default
     */
    public MungeVerifier(Path unmunge, Optional<Path> socket) {
        List<String> words = new ArrayList<>(List.of(unmunge.toString()));
        socket.ifPresent(path -> words.add("--socket=" + path));
        List<String> command = List.copyOf(words);
        this.unmunge = credential -> BoundedCommand.run(command, credential, TIMEOUT);
    }

    /**
     * A verifier that reads what {@code unmunge} gives back, however it is run: everything the verdict depends on is
     * that output, which is outside input (the fuzz target {@code TrackerProtocolFuzzTest#munge} feeds it).
     */
    public MungeVerifier(Unmunge unmunge) {
        this.unmunge = Objects.requireNonNull(unmunge, "unmunge");
    }

    /**
     * @throws Refused when munge cannot decode the credential (forged, expired, replayed, another
     *         cluster's key) or its payload is not {@code expectedPayload}
     */
    public Sender verify(String credential, String expectedPayload) throws Refused {
        String output = decode(credential);
        int blank = output.indexOf("\n\n");
        if (blank < 0) {
            throw new Refused("unmunge printed no payload");
        }
        String payload = output.substring(blank + 2);
        payload = payload.endsWith("\n") ? payload.substring(0, payload.length() - 1) : payload;
        if (!payload.equals(expectedPayload)) {
            throw new Refused("the credential was made for another request");
        }
        Matcher uid = UID.matcher(output.substring(0, blank));
        if (!uid.find()) {
            throw new Refused("unmunge printed no UID");
        }
        return new Sender(uid.group(1), uid(uid.group(2)));
    }

    /** A uid as munge prints it: decimal digits of a 32-bit unsigned uid_t (found by fuzzing: a longer one overflowed). */
    private static long uid(String digits) throws Refused {
        if (digits.length() > MAX_UID_DIGITS || Long.parseLong(digits) > MAX_UID) {
            throw new Refused("unmunge printed a UID out of range: "
                    + (digits.length() > MAX_UID_DIGITS ? digits.substring(0, MAX_UID_DIGITS) + "..." : digits)
                    + " (at most " + MAX_UID + ")");
        }
        return Long.parseLong(digits);
    }

    private String decode(String credential) throws Refused {
        BoundedCommand.Result result;
        try {
            result = unmunge.decode(credential);
        } catch (BoundedCommand.Failure e) {
            throw new Refused(e.getMessage() + " (is munged running?)");
        }
        if (result.exitCode() != 0) {
            Matcher status = STATUS.matcher(result.stdout());
            String why = result.stderr().strip();
            throw new Refused(
                    status.find() ? status.group(1) : why.isEmpty() ? "unmunge exit " + result.exitCode() : why);
        }
        return result.stdout();
    }
}
