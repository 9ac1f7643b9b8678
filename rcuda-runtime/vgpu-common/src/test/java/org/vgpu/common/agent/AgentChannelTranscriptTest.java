package org.vgpu.common.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import org.vgpu.common.agent.AgentChannel.Migrate;
import org.vgpu.common.agent.AgentChannel.ParseError;
import org.vgpu.common.agent.AgentChannel.Poll;
import org.vgpu.common.agent.AgentChannel.Request;
import org.vgpu.common.contract.BridgeContract;

/**
 * Replays contract/agent-channel/transcripts.txt (the file says its format) on both ends of the codec: the migration
 * agent's (formats requests, parses replies) and the tracker's (parses requests, formats replies).
 */
class AgentChannelTranscriptTest {
    static final Path FILE = Path.of("contract", "agent-channel", "transcripts.txt");

    /** One request and the reply the tracker gives it, with the line of the file it starts at. */
    record Exchange(int line, String request, String reply) {}

    @Test
    void everyGoldenLineParsesAndFormatsBackWordForWord() throws IOException {
        int replayed = 0;
        for (List<Exchange> exchanges : read().values()) {
            for (Exchange exchange : exchanges) {
                String where = FILE + ":" + exchange.line() + " '" + exchange.request() + "'";
                Request request;
                try {
                    request = AgentChannel.parseRequest(exchange.request());
                } catch (ParseError refused) {
                    // as the tracker's protocol answers a line it cannot parse
                    assertEquals(BridgeContract.REPLY_ERROR_WORD + " " + refused.detail(), exchange.reply(), where);
                    replayed++;
                    continue;
                }
                assertEquals(exchange.request(), request.format(), where);
                assertEquals(request, AgentChannel.parseRequest(request.format()), where);
                if (request instanceof Poll poll) {
                    AgentChannel.PollReply reply = AgentChannel.parsePollReply(exchange.reply());
                    assertEquals(exchange.reply(), reply.format(), where);
                    if (reply instanceof Migrate command) {
                        assertTrue(
                                AgentChannel.verify(poll.credential().token(), poll.nonce(), command),
                                where + ": the mac verifies under the poll's token and nonce");
                    }
                } else {
                    assertEquals(
                            exchange.reply(),
                            AgentChannel.parseDoneReply(exchange.reply()).format(),
                            where);
                }
                replayed++;
            }
        }
        assertTrue(replayed > 20, replayed + " exchanges");
    }

    @Test
    void theTranscriptsHoldTheCodecsScenarioAndTheTrackersOne() throws IOException {
        Map<String, List<Exchange>> scenarios = read();
        assertEquals(List.of("codec", "nothing"), List.copyOf(scenarios.keySet()));
        scenarios.values().forEach(exchanges -> assertFalse(exchanges.isEmpty()));
    }

    /** The exchanges by scenario, in the file's order. */
    static Map<String, List<Exchange>> read() throws IOException {
        List<String> lines = Files.readAllLines(FILE);
        Map<String, List<Exchange>> scenarios = new LinkedHashMap<>();
        List<Exchange> current = null;
        String request = null;
        int requestLine = 0;
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            String rest = line.length() > 2 ? line.substring(2) : "";
            switch (line.isEmpty() ? '#' : line.charAt(0)) {
                case '#' -> {
                    // a comment
                }
                case '@' -> {
                    current = new ArrayList<>();
                    scenarios.put(rest, current);
                }
                case '>' -> {
                    request = rest;
                    requestLine = i + 1;
                }
                case '<' -> {
                    assertTrue(current != null && request != null, FILE + ":" + (i + 1) + ": a reply to no request");
                    current.add(new Exchange(requestLine, request, rest));
                    request = null;
                }
                default -> throw new IllegalArgumentException(FILE + ":" + (i + 1) + ": unknown line '" + line + "'");
            }
        }
        return scenarios;
    }
}
