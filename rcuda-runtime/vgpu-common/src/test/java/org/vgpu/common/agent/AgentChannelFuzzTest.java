package org.vgpu.common.agent;

import java.io.ByteArrayInputStream;
import java.io.IOException;

import com.code_intelligence.jazzer.junit.FuzzTest;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.line.BoundedLineReader;

/**
 * Fuzz target for the agent channel's codec (docs/fuzzing.md): each line of an input, read as the line servers read
 * them, goes to the tracker's parser of agent requests and to the agent's parsers of the tracker's replies. A line may
 * be refused only with {@link AgentChannel.ParseError}; a request that parses must format to a line that parses back
 * to the same request, since the agent formats what the tracker parses.
 */
class AgentChannelFuzzTest {
    @FuzzTest(maxDuration = "1m")
    void lines(byte[] input) throws IOException {
        BoundedLineReader reader =
                new BoundedLineReader(new ByteArrayInputStream(input), BridgeContract.REQUEST_LINE_BYTES);
        for (BoundedLineReader.Line line = reader.readLine(); line != null; line = reader.readLine()) {
            String text = line.text();
            try {
                AgentChannel.Request request = AgentChannel.parseRequest(text);
                AgentChannel.Request again = AgentChannel.parseRequest(request.format());
                if (!again.equals(request)) {
                    throw new AssertionError("'" + text + "' read as " + request + " but its line as " + again);
                }
            } catch (AgentChannel.ParseError refused) {
                // the product's refusal, answered as an error line
            }
            try {
                AgentChannel.parsePollReply(text);
            } catch (AgentChannel.ParseError refused) {
                // the agent reports the tracker's garbage and polls again
            }
            try {
                AgentChannel.parseDoneReply(text);
            } catch (AgentChannel.ParseError refused) {
                // as above
            }
        }
    }
}
