package org.vgpu.tracker.server;

import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.vgpu.runtime.control.BoundedLineReader;
import org.vgpu.runtime.control.LineService;
import org.vgpu.runtime.control.LineText;
import org.vgpu.tracker.Tracker;

/**
 * The tracker's socket: the SPANK bridge's line protocol (slurm-spank-bridge/README.md, "Tracker
 * line protocol") plus {@code status} for {@code vgpu report}:
 * <pre>
 *   assembly JOB NODE        -&gt; ok vgpus=N [local=I,...] [remote=K@HOST:PORT#TOKEN,...] | wait REASON | error REASON
 *   done JOB NODE STATUS     -&gt; ok | error REASON
 *   status                   -&gt; assembly ... / waiting ... / ended ... lines, then ok assemblies=A waiting=W
 * </pre>
 * Anything else, a malformed field, or a request cut at the length limit gets one {@code error}
 * line and changes nothing. Replies are printable ASCII on one line each, whatever the request held.
 * A request carrying a MUNGE credential ({@code munge=...}, the bridge's {@code auth=munge}) is
 * refused: this tracker cannot check credentials yet, and accepting one unchecked would pretend a
 * protection that is not there.
 */
public final class TrackerProtocol implements LineService {
    private static final Logger LOG = LoggerFactory.getLogger(TrackerProtocol.class);
    static final String COMMANDS = "assembly <job> <node>, done <job> <node> <status>, status";
    /** The bridge's reply limit is 8190 bytes before the newline. */
    private static final int MAX_REPLY_CHARS = 8190;
    private static final int MAX_ECHOED_CHARS = 40;
    private static final Pattern JOB = Pattern.compile("[1-9][0-9]{0,9}");
    private static final Pattern NODE = Pattern.compile("[A-Za-z0-9._-]{1,128}");
    private static final Pattern STATUS = Pattern.compile("-1|0|[1-9][0-9]{0,9}");
    private static final long MAX_JOB_ID = 0xFFFF_FFFFL;

    private final Tracker tracker;
    private final Runnable wakeTracker;
    private final int maxRequestBytes;

    /**
     * @param wakeTracker makes the tracker act on a {@code done} now rather than at its next poll
     */
    public TrackerProtocol(Tracker tracker, Runnable wakeTracker, int maxRequestBytes) {
        this.tracker = Objects.requireNonNull(tracker, "tracker");
        this.wakeTracker = Objects.requireNonNull(wakeTracker, "wakeTracker");
        this.maxRequestBytes = maxRequestBytes;
    }

    @Override
    public List<String> answer(BoundedLineReader.Line request, String localHost) {
        try {
            return answerOrThrow(request).stream().map(line -> LineText.printable(line, MAX_REPLY_CHARS)).toList();
        } catch (RuntimeException e) {
            LOG.error("tracker request '{}' failed", LineText.printable(request.text(), MAX_ECHOED_CHARS), e);
            return List.of(error("tracker failed to answer: " + e.getMessage()));
        }
    }

    private List<String> answerOrThrow(BoundedLineReader.Line request) {
        if (request.truncated()) {
            return List.of(error("request longer than " + maxRequestBytes + " bytes"));
        }
        String text = request.text();
        if (text.isEmpty()) {
            return List.of(error("empty request; commands: " + COMMANDS));
        }
        if (!text.chars().allMatch(c -> c >= ' ' && c <= '~')) {
            return List.of(error("request holds characters that are not printable ASCII"));
        }
        String[] words = text.split(" ", -1);
        if (words[words.length - 1].startsWith("munge=")) {
            return List.of(error("unauthenticated: this tracker does not verify MUNGE credentials yet; configure the SPANK"
                    + " bridge with auth=none and keep the tracker's port out of reach of job processes"));
        }
        return switch (words[0]) {
            case "assembly" -> List.of(assembly(words));
            case "done" -> List.of(done(words));
            case "status" -> words.length == 1 ? tracker.status() : List.of(error("usage: status"));
            default -> List.of(error("unknown command '" + LineText.printable(words[0], MAX_ECHOED_CHARS) + "'; commands: "
                    + COMMANDS));
        };
    }

    private String assembly(String[] words) {
        if (words.length != 3) {
            return error("usage: assembly <job> <node>");
        }
        String problem = checkJobAndNode(words[1], words[2]);
        return problem != null ? error(problem) : tracker.assembly(Long.parseLong(words[1]), words[2]);
    }

    private String done(String[] words) {
        if (words.length != 4) {
            return error("usage: done <job> <node> <status>");
        }
        String problem = checkJobAndNode(words[1], words[2]);
        if (problem != null) {
            return error(problem);
        }
        if (!STATUS.matcher(words[3]).matches() || Long.parseLong(words[3]) > Integer.MAX_VALUE) {
            return error("status must be -1 or an exit status 0.." + Integer.MAX_VALUE + ", got '"
                    + LineText.printable(words[3], MAX_ECHOED_CHARS) + "'");
        }
        String reply = tracker.done(Long.parseLong(words[1]), words[2], Integer.parseInt(words[3]));
        wakeTracker.run();
        return reply;
    }

    private static String checkJobAndNode(String job, String node) {
        if (!JOB.matcher(job).matches() || Long.parseLong(job) > MAX_JOB_ID) {
            return "job must be a Slurm job id 1.." + MAX_JOB_ID + ", got '" + LineText.printable(job, MAX_ECHOED_CHARS) + "'";
        }
        if (!NODE.matcher(node).matches()) {
            return "node must be a Slurm node name ([A-Za-z0-9._-], 1 to 128), got '" + LineText.printable(node, MAX_ECHOED_CHARS)
                    + "'";
        }
        return null;
    }

    private static String error(String reason) {
        return "error " + reason;
    }
}
