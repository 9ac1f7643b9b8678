package org.vgpu.job;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;

import org.vgpu.common.agent.AgentChannel;
import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.line.BoundedLineReader;
import org.vgpu.common.line.LineServer;
import org.vgpu.common.net.Endpoint;

/**
 * The tracker's side of the agent channel, as far as a job sees it: a line server that speaks {@link AgentChannel}
 * with the codec, holds each poll until the test queues a command (or a short hold passes) and keeps every poll and
 * done it received.
 */
final class FakeTracker implements AutoCloseable {
    /** Makes the reply to a poll: the poll and the nonce it carries in, the command out. */
    interface Command extends BiFunction<AgentChannel.Poll, String, AgentChannel.Migrate> {}

    private static final Duration HOLD = Duration.ofMillis(200);

    final List<AgentChannel.Poll> polls = new CopyOnWriteArrayList<>();
    final BlockingQueue<AgentChannel.Done> dones = new LinkedBlockingQueue<>();
    final List<AgentChannel.Bye> byes = new CopyOnWriteArrayList<>();
    private final BlockingQueue<Command> commands = new LinkedBlockingQueue<>();
    private final LineServer server;

    FakeTracker() {
        server = LineServer.start(
                new Endpoint("127.0.0.1", 0),
                new LineServer.Limits("fake tracker", BridgeContract.REQUEST_LINE_BYTES, 8, Duration.ofMinutes(1)),
                this::answer);
    }

    /** VGPU_TRACKER for the job. */
    String address() {
        return server.endpoint().toString();
    }

    /** The next poll is answered with {@code command}. */
    void send(Command command) {
        commands.add(command);
    }

    /** The next done the job reports, waiting up to 30 s. */
    AgentChannel.Done nextDone() throws InterruptedException {
        AgentChannel.Done done = dones.poll(30, TimeUnit.SECONDS);
        if (done == null) {
            throw new AssertionError("the job reported no migration's outcome within 30 s; polls: " + polls);
        }
        return done;
    }

    private List<String> answer(BoundedLineReader.Line line, String localHost) {
        try {
            return List.of(
                    switch (AgentChannel.parseRequest(line.text())) {
                        case AgentChannel.Poll poll -> {
                            polls.add(poll);
                            Command command = commands.poll(HOLD.toMillis(), TimeUnit.MILLISECONDS);
                            yield command == null
                                    ? new AgentChannel.Idle().format()
                                    : command.apply(poll, poll.nonce()).format();
                        }
                        case AgentChannel.Done done -> {
                            dones.add(done);
                            yield new AgentChannel.Accepted().format();
                        }
                        case AgentChannel.Bye bye -> {
                            byes.add(bye);
                            yield new AgentChannel.Accepted().format();
                        }
                    });
        } catch (AgentChannel.ParseError e) {
            return List.of(AgentChannel.Refused.because(e.getMessage()).format());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return List.of(
                    AgentChannel.Refused.because("the fake tracker is closing").format());
        }
    }

    @Override
    public void close() {
        server.close();
    }
}
