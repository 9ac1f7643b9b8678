package org.vgpu.tracker.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;

import org.vgpu.tracker.Transcripts;

/**
 * Every request of the golden transcripts that parses formats back to its own line and parses to the same request:
 * the round trip that the fuzz target checks on arbitrary input, here on one request of each kind at least.
 */
class TrackerRequestTest {
    @Test
    void eachTranscriptRequestThatParsesFormatsToItsLineAndParsesAlike() throws TrackerRequest.Malformed {
        Set<Class<?>> kinds = new HashSet<>();
        for (Transcripts transcripts :
                List.of(Transcripts.read(Transcripts.FILE), Transcripts.read(Transcripts.ADMIN_FILE))) {
            for (List<Transcripts.Exchange> exchanges : transcripts.scenarios().values()) {
                for (Transcripts.Exchange exchange : exchanges) {
                    TrackerRequest request;
                    try {
                        request = TrackerRequest.parse(exchange.request());
                    } catch (TrackerRequest.Malformed e) {
                        continue;
                    }
                    assertEquals(exchange.request(), request.format(), transcripts.file() + ":" + exchange.line());
                    assertEquals(request, TrackerRequest.parse(request.format()));
                    kinds.add(request.getClass());
                }
            }
        }
        assertEquals(
                Set.of(
                        TrackerRequest.Assembly.class,
                        TrackerRequest.Done.class,
                        TrackerRequest.Worker.class,
                        TrackerRequest.Status.class,
                        TrackerRequest.Migrate.class,
                        TrackerRequest.Drain.class,
                        TrackerRequest.Hook.class,
                        TrackerRequest.MigrationQuery.class),
                kinds);
    }
}
