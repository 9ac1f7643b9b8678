package org.vgpu.common.line;

import java.util.regex.Pattern;

/** Text made safe for a line protocol's reply or a log line. */
public final class LineText {
    /**
     * A session token ({@code v3.PAYLOAD.MAC}, or any part of one from its version on) or a MUNGE credential, wherever it
     * stands in a line: a word of its own, after {@code #} in a remote entry, after {@code munge=}.
     */
    private static final Pattern SECRET = Pattern.compile("(?<![A-Za-z0-9])v[0-9]+\\.[A-Za-z0-9_.\\-]*|MUNGE:\\S*");

    static final String HIDDEN = "<secret>";

    private LineText() {}

    /**
     * {@link #printable} with every session token and MUNGE credential in {@code text} replaced by {@value #HIDDEN}
     * first, whole (so no prefix of one is left by the cut at {@code maxChars}): for echoing a request into a log line
     * or an error message, which any reader of the log or the message may see.
     */
    public static String withoutSecrets(String text, int maxChars) {
        return printable(SECRET.matcher(text).replaceAll(HIDDEN), maxChars);
    }

    /**
     * {@code text} on one line of printable ASCII, at most {@code maxChars} long: line breaks become
     * " | ", other characters outside 0x20..0x7e '?'. Peers' words echoed in a reply cannot forge lines.
     */
    public static String printable(String text, int maxChars) {
        String oneLine = text.replaceAll("\\s*\\R\\s*", " | ");
        StringBuilder cleaned = new StringBuilder(Math.min(oneLine.length(), maxChars));
        for (int i = 0; i < oneLine.length() && cleaned.length() < maxChars; i++) {
            char c = oneLine.charAt(i);
            cleaned.append(c >= ' ' && c <= '~' ? c : '?');
        }
        return cleaned.toString();
    }
}
