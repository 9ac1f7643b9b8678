package org.vgpu.tracker.report;

import static org.vgpu.common.contract.BridgeContract.REPLY_ERROR_WORD;
import static org.vgpu.common.contract.BridgeContract.REPLY_LINE_BYTES;
import static org.vgpu.common.contract.BridgeContract.REPLY_OK_WORD;
import static org.vgpu.common.contract.BridgeContract.STATUS_JSON_LINE_WORD;

import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.databind.ser.std.StdSerializer;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;

import org.vgpu.common.error.NetworkException;
import org.vgpu.common.line.LineText;

/**
 * The {@link Report} as JSON, written and read with Jackson: snake_case names, instants as
 * {@link Report#time} text, nulls written (a consumer sees every field, known or not), non-ASCII escaped so the text
 * is printable ASCII. On the tracker's socket the reply to {@code status json} carries the document
 * cut into lines of at most {@code REPLY_LINE_BYTES} ({@code json CHUNK} each; the chunks joined are
 * the document) and ends in {@code ok json_bytes=N}, so a report of any size fits the line protocol
 * and a reader can tell a complete one from a cut one.
 */
public final class ReportJson {
    /** Shared by every use: an ObjectMapper is thread-safe once configured. */
    static final ObjectMapper MAPPER = JsonMapper.builder()
            .addModule(new JavaTimeModule())
            .addModule(new SimpleModule("report-time").addSerializer(Instant.class, new TimeSerializer()))
            .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS)
            .enable(JsonWriteFeature.ESCAPE_NON_ASCII)
            // A newer tracker may add fields within one schema version; an older reader skips them.
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .enable(DeserializationFeature.FAIL_ON_MISSING_CREATOR_PROPERTIES)
            .build();

    private static final String CHUNK_PREFIX = STATUS_JSON_LINE_WORD + " ";
    private static final int CHUNK_CHARS = REPLY_LINE_BYTES - CHUNK_PREFIX.length();
    private static final Pattern OK_LINE = Pattern.compile(REPLY_OK_WORD + " json_bytes=([0-9]{1,10})");

    private ReportJson() {}

    /** Writes an instant as {@link Report#time}; JavaTimeModule reads it back (any ISO-8601 instant). */
    private static final class TimeSerializer extends StdSerializer<Instant> {
        private static final long serialVersionUID = 1L;

        TimeSerializer() {
            super(Instant.class);
        }

        @Override
        public void serialize(Instant value, JsonGenerator generator, SerializerProvider provider) throws IOException {
            generator.writeString(Report.time(value));
        }
    }

    /** The document on one line. */
    public static String line(Report report) {
        try {
            return MAPPER.writeValueAsString(report);
        } catch (JsonProcessingException e) {
            // Records of strings, numbers and instants always serialize; this is a bug, not an input.
            throw new IllegalStateException("cannot write the report as JSON", e);
        }
    }

    /** The document indented for a person (what {@code vgpu report --format json} prints). */
    public static String pretty(Report report) {
        try {
            return MAPPER.writerWithDefaultPrettyPrinter().writeValueAsString(report);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot write the report as JSON", e);
        }
    }

    /** The reply to {@code status json}: the document in {@code json CHUNK} lines, then {@code ok json_bytes=N}. */
    public static List<String> replyLines(Report report) {
        String json = line(report);
        List<String> lines = new ArrayList<>();
        for (int from = 0; from < json.length(); from += CHUNK_CHARS) {
            lines.add(CHUNK_PREFIX + json.substring(from, Math.min(json.length(), from + CHUNK_CHARS)));
        }
        lines.add(REPLY_OK_WORD + " json_bytes=" + json.length());
        return lines;
    }

    /**
     * Reads a reply to {@code status json} back into the document.
     *
     * @param peer who answered, for messages
     * @throws NetworkException (PROTOCOL) saying that {@code peer} is not a vgpu tracker, or answered an
     *         error, or sent a report cut short or not of this schema: never an empty report
     */
    public static Report fromReply(List<String> lines, String peer) {
        if (lines.isEmpty()) {
            throw notATracker(peer, "it answered nothing");
        }
        String last = lines.getLast();
        if (last.startsWith(REPLY_ERROR_WORD + " ")) {
            throw notATracker(
                    peer,
                    "it answered '" + LineText.printable(last.substring(REPLY_ERROR_WORD.length() + 1), 300) + "'");
        }
        Matcher ok = OK_LINE.matcher(last);
        if (!ok.matches()) {
            throw notATracker(peer, "its answer ends in '" + LineText.printable(last, 60) + "'");
        }
        StringBuilder json = new StringBuilder();
        for (String line : lines.subList(0, lines.size() - 1)) {
            if (!line.startsWith(CHUNK_PREFIX)) {
                throw notATracker(peer, "its answer holds the line '" + LineText.printable(line, 60) + "'");
            }
            json.append(line, CHUNK_PREFIX.length(), line.length());
        }
        if (json.length() != Long.parseLong(ok.group(1))) {
            throw notATracker(
                    peer, "its report has " + json.length() + " characters, it announced " + ok.group(1) + " (cut?)");
        }
        Report report;
        try {
            report = MAPPER.readValue(json.toString(), Report.class);
        } catch (JsonProcessingException e) {
            throw notATracker(peer, "its answer is not a vgpu report (" + problem(e) + ")");
        }
        if (report.schemaVersion() != Report.SCHEMA_VERSION) {
            throw new NetworkException(
                    NetworkException.Code.PROTOCOL,
                    peer + " sent a report of schema version " + report.schemaVersion() + "; this vgpu reads version "
                            + Report.SCHEMA_VERSION + " (use the vgpu of the tracker's version)");
        }
        return report;
    }

    /** Jackson's problem with the document, named by the JSON path where it lies, in the product's words. */
    private static String problem(JsonProcessingException e) {
        if (e instanceof com.fasterxml.jackson.databind.JsonMappingException mapping
                && !mapping.getPath().isEmpty()) {
            return "'" + path(mapping) + "' is missing or malformed";
        }
        return "not valid JSON at column "
                + (e.getLocation() == null ? "?" : e.getLocation().getColumnNr());
    }

    private static String path(com.fasterxml.jackson.databind.JsonMappingException mapping) {
        StringBuilder path = new StringBuilder();
        for (com.fasterxml.jackson.databind.JsonMappingException.Reference reference : mapping.getPath()) {
            if (reference.getFieldName() != null) {
                path.append(path.isEmpty() ? "" : ".").append(reference.getFieldName());
            } else if (reference.getIndex() >= 0) {
                path.append('[').append(reference.getIndex()).append(']');
            }
        }
        return path.toString();
    }

    private static NetworkException notATracker(String peer, String why) {
        return new NetworkException(
                NetworkException.Code.PROTOCOL, peer + " is not a vgpu tracker, or not one of this version: " + why);
    }
}
