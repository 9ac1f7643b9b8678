package org.vgpu.tracker.slurm;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small, strict JSON reader (RFC 8259) for Slurm's {@code --json} output, so vgpu needs no JSON
 * library. Objects become unmodifiable {@link Map}s in document order, arrays {@link List}s, numbers
 * {@link BigDecimal}, and {@code true}/{@code false}/{@code null} {@link Boolean} and {@code null}.
 */
final class Json {
    /** Slurm's documents nest a few levels; a bound keeps hostile input from exhausting the stack. */
    private static final int MAX_DEPTH = 64;

    private final String source;
    private final String text;
    private int position;

    private Json(String source, String text) {
        this.source = source;
        this.text = text;
    }

    /**
     * @param source names the command that printed the text, for error messages
     * @throws SlurmException at the first syntax error, with its line and column
     */
    static Object parse(String source, String text) {
        Json json = new Json(source, text);
        json.skipWhitespace();
        Object value = json.value(0);
        json.skipWhitespace();
        if (json.position != text.length()) {
            throw json.error("unexpected text after the JSON document");
        }
        return value;
    }

    private Object value(int depth) {
        if (depth > MAX_DEPTH) {
            throw error("nested deeper than " + MAX_DEPTH + " levels");
        }
        if (position >= text.length()) {
            throw error("the document ends where a value was expected (truncated output?)");
        }
        char c = text.charAt(position);
        return switch (c) {
            case '{' -> object(depth);
            case '[' -> array(depth);
            case '"' -> string();
            case 't' -> literal("true", Boolean.TRUE);
            case 'f' -> literal("false", Boolean.FALSE);
            case 'n' -> literal("null", null);
            default -> {
                if (c == '-' || (c >= '0' && c <= '9')) {
                    yield number();
                }
                throw error("unexpected character '" + c + "'");
            }
        };
    }

    private Map<String, Object> object(int depth) {
        position++;
        Map<String, Object> members = new LinkedHashMap<>();
        skipWhitespace();
        if (peek() == '}') {
            position++;
            return Collections.unmodifiableMap(members);
        }
        while (true) {
            skipWhitespace();
            if (peek() != '"') {
                throw error("expected a member name in quotes");
            }
            String name = string();
            skipWhitespace();
            expect(':');
            skipWhitespace();
            members.put(name, value(depth + 1));
            skipWhitespace();
            char next = next("',' or '}'");
            if (next == '}') {
                return Collections.unmodifiableMap(members);
            }
            if (next != ',') {
                throw errorBefore("expected ',' or '}' after a member, got '" + next + "'");
            }
        }
    }

    private List<Object> array(int depth) {
        position++;
        List<Object> elements = new ArrayList<>();
        skipWhitespace();
        if (peek() == ']') {
            position++;
            return Collections.unmodifiableList(elements);
        }
        while (true) {
            skipWhitespace();
            elements.add(value(depth + 1));
            skipWhitespace();
            char next = next("',' or ']'");
            if (next == ']') {
                return Collections.unmodifiableList(elements);
            }
            if (next != ',') {
                throw errorBefore("expected ',' or ']' after an element, got '" + next + "'");
            }
        }
    }

    private String string() {
        position++;
        StringBuilder value = new StringBuilder();
        while (true) {
            char c = next("a closing '\"'");
            if (c == '"') {
                return value.toString();
            }
            if (c < 0x20) {
                throw errorBefore("control character in a string");
            }
            if (c != '\\') {
                value.append(c);
                continue;
            }
            char escaped = next("an escaped character");
            switch (escaped) {
                case '"', '\\', '/' -> value.append(escaped);
                case 'b' -> value.append('\b');
                case 'f' -> value.append('\f');
                case 'n' -> value.append('\n');
                case 'r' -> value.append('\r');
                case 't' -> value.append('\t');
                case 'u' -> {
                    if (position + 4 > text.length()) {
                        throw error("truncated \\u escape");
                    }
                    try {
                        value.append((char) Integer.parseInt(text.substring(position, position + 4), 16));
                    } catch (NumberFormatException e) {
                        throw error("bad \\u escape '" + text.substring(position, position + 4) + "'");
                    }
                    position += 4;
                }
                default -> throw errorBefore("unknown escape '\\" + escaped + "'");
            }
        }
    }

    private BigDecimal number() {
        int start = position;
        while (position < text.length() && "+-0123456789.eE".indexOf(text.charAt(position)) >= 0) {
            position++;
        }
        String literal = text.substring(start, position);
        if (!literal.matches("-?(0|[1-9]\\d*)(\\.\\d+)?([eE][+-]?\\d+)?")) {
            position = start;
            throw error("malformed number '" + literal + "'");
        }
        return new BigDecimal(literal);
    }

    private Object literal(String word, Object value) {
        if (!text.startsWith(word, position)) {
            throw error("unexpected word; expected a value");
        }
        position += word.length();
        return value;
    }

    private void expect(char wanted) {
        char c = next("'" + wanted + "'");
        if (c != wanted) {
            throw errorBefore("expected '" + wanted + "', got '" + c + "'");
        }
    }

    private char peek() {
        return position < text.length() ? text.charAt(position) : '\0';
    }

    private char next(String expected) {
        if (position >= text.length()) {
            throw error("the document ends where " + expected + " was expected (truncated output?)");
        }
        return text.charAt(position++);
    }

    private void skipWhitespace() {
        while (position < text.length() && " \t\r\n".indexOf(text.charAt(position)) >= 0) {
            position++;
        }
    }

    private SlurmException errorBefore(String problem) {
        position--;
        return error(problem);
    }

    private SlurmException error(String problem) {
        int line = 1;
        int column = 1;
        for (int i = 0; i < Math.min(position, text.length()); i++) {
            if (text.charAt(i) == '\n') {
                line++;
                column = 1;
            } else {
                column++;
            }
        }
        return SlurmException.badOutput(source, "line " + line + " column " + column + ": " + problem);
    }
}
