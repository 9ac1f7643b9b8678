package org.vgpu.common.agent;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.util.function.Function;

import com.code_intelligence.jazzer.junit.FuzzTest;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.line.BoundedLineReader;

/**
 * Fuzz target for the codec of the migration agent's channel (docs/fuzzing.md): each line of an input, read as the
 * line servers read them, goes to the tracker's parser of requests and to the migration agent's parsers of the
 * tracker's replies. A line may be refused only with {@link AgentChannel.ParseError}; a line that parses is canonical,
 * since the grammar allows one spelling of each message: it formats back to itself, and that line parses to the same
 * message (the migration agent formats what the tracker parses, and the tracker formats what the agent parses).
 */
class AgentChannelFuzzTest {
    @FuzzTest(maxDuration = "1m")
    void lines(byte[] input) throws IOException {
        BoundedLineReader reader =
                new BoundedLineReader(new ByteArrayInputStream(input), BridgeContract.REQUEST_LINE_BYTES);
        for (BoundedLineReader.Line line = reader.readLine(); line != null; line = reader.readLine()) {
            String text = line.text();
            roundTrip(text, AgentChannel::parseRequest, AgentChannel.Request::format);
            roundTrip(text, AgentChannel::parsePollReply, AgentChannel.PollReply::format);
            roundTrip(text, AgentChannel::parseDoneReply, AgentChannel.DoneReply::format);
        }
    }

    /** parse → format gives the line again, and format → parse the same message; a refusal is the product's. */
    private static <T> void roundTrip(String text, Function<String, T> parse, Function<T, String> format) {
        T message;
        try {
            message = parse.apply(text);
        } catch (AgentChannel.ParseError refused) {
            return; // the tracker answers an error line; the migration agent reports the garbage and polls again
        }
        String formatted = format.apply(message);
        if (!formatted.equals(text)) {
            throw new AssertionError("'" + text + "' read as " + message + " formats as '" + formatted + "'");
        }
        T again = parse.apply(formatted);
        if (!again.equals(message)) {
            throw new AssertionError("'" + text + "' read as " + message + " but its line as " + again);
        }
    }
}
