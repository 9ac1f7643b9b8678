package org.vgpu.tracker.ledger;

import java.util.regex.Pattern;

/**
 * What the ledger's records may hold, checked where a record is made: the writer then never writes a value the
 * reader refuses (a worker id such as {@code $(id)} was once read, and the tracker then failed rewriting
 * it), and a line the reader refuses says what was expected and what it found.
 */
final class LedgerValues {
    /** Node, user, worker and reason words: what Slurm allows in names, and nothing that could split a field. */
    private static final Pattern WORD = Pattern.compile("[A-Za-z0-9._@+-]{1,128}");

    /** How much of a refused value a message shows. */
    private static final int SHOWN_CHARS = 64;

    private LedgerValues() {}

    /**
     * @param what how messages name the value, e.g. {@code worker id}
     * @throws IllegalArgumentException "WHAT: expected ..., found ..."
     */
    static String word(String what, String value) {
        if (value == null || !WORD.matcher(value).matches()) {
            throw new IllegalArgumentException(
                    what + ": expected 1 to 128 of A-Z a-z 0-9 . _ @ + -, found " + shown(value));
        }
        return value;
    }

    /**
     * @throws IllegalArgumentException "WHAT: expected a number in MIN..MAX, found ..."
     */
    static long atLeast(String what, long value, long min) {
        if (value < min) {
            throw new IllegalArgumentException(
                    what + ": expected a number in " + min + ".." + Long.MAX_VALUE + ", found " + value);
        }
        return value;
    }

    /** A value for a message: quoted, cut short when long (a damaged line can hold anything). */
    static String shown(String value) {
        if (value == null) {
            return "nothing";
        }
        return value.length() <= SHOWN_CHARS
                ? "'" + value + "'"
                : "'" + value.substring(0, SHOWN_CHARS) + "...' (" + value.length() + " characters)";
    }
}
