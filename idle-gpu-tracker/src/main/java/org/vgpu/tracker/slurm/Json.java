package org.vgpu.tracker.slurm;

import java.io.IOException;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;

/**
 * Slurm's {@code --json} output read with Jackson's streaming parser into plain values: objects
 * become unmodifiable {@link Map}s in document order, arrays {@link List}s, numbers
 * {@link BigDecimal}, and {@code true}/{@code false}/{@code null} {@link Boolean} and {@code null}.
 * Jackson checks the syntax (RFC 8259, strict: no comments, no trailing commas, no leading zeroes);
 * this class says what is wrong in words an admin reads, with the line and column.
 */
final class Json {
    /** Slurm's documents nest a few levels; a bound keeps hostile input from exhausting the stack. */
    private static final int MAX_DEPTH = 64;

    private static final JsonFactory FACTORY = JsonFactory.builder()
            // Parse errors name the line and column, never a snippet of the input (it may be long or binary).
            .disable(StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION)
            .build();

    /** Jackson's phrases for a syntax error and the same in this product's words, first match wins. */
    private static final List<Map.Entry<String, String>> PROBLEMS = List.of(
            Map.entry("was expecting comma to separate Object entries", "expected ',' or '}' after a member"),
            Map.entry("was expecting comma to separate Array entries", "expected ',' or ']' after an element"),
            Map.entry("was expecting double-quote to start field name", "expected a member name in quotes"),
            Map.entry("was expecting a colon to separate field name and value", "expected ':' after a member name"),
            Map.entry("expected a value", "expected a value"),
            Map.entry("end-of-input", "the document ends where more was expected (truncated output?)"),
            Map.entry("Unrecognized token", "not a JSON value (true, false, null, a number, a string, [ or {)"),
            Map.entry("Leading zeroes", "a number with a leading zero"),
            Map.entry("Decimal point not followed by a digit", "a number ends in its decimal point"),
            Map.entry("Unrecognized character escape", "an unknown escape in a string"),
            Map.entry("expected a hex-digit", "a \\u escape needs four hex digits"),
            Map.entry("Illegal unquoted character", "a control character inside a string must be escaped"),
            Map.entry("Illegal character", "a character that cannot start a JSON value"),
            Map.entry("Unexpected close marker", "a closing bracket that closes nothing open"),
            Map.entry("Unexpected character", "a character that does not belong here"));

    private final String source;
    private final JsonParser parser;

    private Json(String source, JsonParser parser) {
        this.source = source;
        this.parser = parser;
    }

    /**
     * @param source names the command that printed the text, for error messages
     * @throws SlurmException at the first syntax error, with its line and column
     */
    static Object parse(String source, String text) {
        try (JsonParser parser = FACTORY.createParser(text)) {
            Json json = new Json(source, parser);
            if (parser.nextToken() == null) {
                throw json.error(parser.currentLocation(), "the document is empty (no output?)");
            }
            Object value = json.value(1);
            if (parser.nextToken() != null) {
                throw json.error(parser.currentTokenLocation(), "unexpected text after the JSON document");
            }
            return value;
        } catch (JsonProcessingException e) {
            throw syntaxError(source, e);
        } catch (IOException e) {
            // A String source cannot fail to be read; Jackson's API declares it all the same.
            throw SlurmException.badOutput(source, "it could not be read");
        }
    }

    /** The value whose first token the parser is on. */
    private Object value(int depth) throws IOException {
        JsonToken token = parser.currentToken();
        if (token.isStructStart() && depth > MAX_DEPTH) {
            throw error(parser.currentTokenLocation(), "nested deeper than " + MAX_DEPTH + " levels");
        }
        return switch (token) {
            case START_OBJECT -> object(depth);
            case START_ARRAY -> array(depth);
            case VALUE_STRING -> parser.getText();
            case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> parser.getDecimalValue();
            case VALUE_TRUE -> true;
            case VALUE_FALSE -> false;
            case VALUE_NULL -> null;
            default -> throw error(parser.currentTokenLocation(), "expected a value");
        };
    }

    private Map<String, Object> object(int depth) throws IOException {
        Map<String, Object> members = new LinkedHashMap<>();
        for (JsonToken token = parser.nextToken(); token != JsonToken.END_OBJECT; token = parser.nextToken()) {
            String name = parser.currentName();
            parser.nextToken();
            members.put(name, value(depth + 1));
        }
        return Collections.unmodifiableMap(members);
    }

    private List<Object> array(int depth) throws IOException {
        List<Object> elements = new ArrayList<>();
        for (JsonToken token = parser.nextToken(); token != JsonToken.END_ARRAY; token = parser.nextToken()) {
            elements.add(value(depth + 1));
        }
        return Collections.unmodifiableList(elements);
    }

    private SlurmException error(JsonLocation at, String problem) {
        return SlurmException.badOutput(
                source, "line " + at.getLineNr() + " column " + at.getColumnNr() + ": " + problem);
    }

    private static SlurmException syntaxError(String source, JsonProcessingException e) {
        String original = e.getOriginalMessage() == null ? "" : e.getOriginalMessage();
        String problem = PROBLEMS.stream()
                .filter(entry -> original.contains(entry.getKey()))
                .map(Map.Entry::getValue)
                .findFirst()
                .orElse("not valid JSON");
        String got = unexpectedCharacter(original);
        return SlurmException.badOutput(
                source,
                whereReadingStopped(e.getLocation()) + ": " + problem + (got.isEmpty() ? "" : ", got '" + got + "'"));
    }

    /** The character Jackson names in "Unexpected character ('X' (code N))", when printable; else empty. */
    private static String unexpectedCharacter(String message) {
        String marker = "Unexpected character ('";
        int at = message.indexOf(marker);
        if (at < 0 || message.length() < at + marker.length() + 1) {
            return "";
        }
        char c = message.charAt(at + marker.length());
        return c >= ' ' && c <= '~' ? String.valueOf(c) : "";
    }

    /** Where Jackson stopped reading: the offending character, or the end of the offending word. */
    private static String whereReadingStopped(JsonLocation at) {
        return at == null ? "line ? column ?" : "line " + at.getLineNr() + " column " + at.getColumnNr();
    }
}
