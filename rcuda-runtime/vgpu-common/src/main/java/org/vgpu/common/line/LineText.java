package org.vgpu.common.line;

/** Text made safe for a line protocol's reply or a log line. */
public final class LineText {
    private LineText() {}

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
