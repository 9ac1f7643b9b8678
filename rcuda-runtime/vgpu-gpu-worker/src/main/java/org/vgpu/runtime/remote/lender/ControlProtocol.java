package org.vgpu.runtime.remote.lender;

import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.error.AuthException;
import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.line.BoundedLineReader;
import org.vgpu.common.line.LineService;
import org.vgpu.common.line.LineText;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.SignedRequest;
import org.vgpu.common.security.SiteKey;

/**
 * The lender's control requests, one line each, answered with one line (or, for {@code status},
 * one line per worker and a closing {@code ok} line):
 * <pre>
 *   open DEVICE   -&gt; ok HOST:PORT WORKER-ID      hands out a worker of DEVICE (a warm one when there is one)
 *   close WORKER-ID -&gt; ok closed WORKER-ID        stops a lent worker whose lend has ended
 *   status        -&gt; worker DEVICE WORKER-ID HOST:PORT|- starting|warm|lent AGEs   (per worker)
 *                    ok COUNT
 *   anything else -&gt; error REASON                  and nothing changes
 * </pre>
 * Every request is signed with the site key ({@link SignedRequest}, purpose {@value #PURPOSE}); one that is not, or
 * whose signature is wrong, expired or seen before, gets {@code error unauthenticated: REASON} and changes nothing:
 * only a holder of the key may list workers, take a lend slot or end a lend.
 * Workers are started before anyone asks for them, so their ids are the lender's choice and
 * {@code open} reports the id: a session token must be issued for that id. A worker that
 * listens on a wildcard address is reported at the address the request reached the lender on.
 * An {@code open} whose requester closed the connection before the reply gives its worker back at once.
 * Replies are printable ASCII and never span lines, whatever the request held.
 */
final class ControlProtocol implements LineService {
    private static final Logger LOG = LoggerFactory.getLogger(ControlProtocol.class);
    static final String COMMANDS = "open <device>, close <worker-id>, status";
    /** Errors can carry a worker's stderr; the cap keeps replies readable. */
    private static final int MAX_REPLY_CHARS = 2000;

    private static final int MAX_ECHOED_CHARS = 40;

    /** What the lender's control requests are signed for: a signature for another socket is refused here. */
    static final String PURPOSE = "vgpu-lender-control";

    /** An {@code open}'s reply: {@code ok HOST:PORT WORKER-ID}. */
    private static final Pattern OPENED = Pattern.compile("ok \\S+:[0-9]+ (\\S+)");

    private final Lender lender;
    private final int maxRequestBytes;
    private final SignedRequest.Verifier signatures;

    ControlProtocol(Lender lender, int maxRequestBytes, SiteKey key) {
        this.lender = lender;
        this.maxRequestBytes = maxRequestBytes;
        this.signatures = new SignedRequest.Verifier(key, PURPOSE, Clock.systemUTC());
    }

    /** A worker handed out to a requester who left before the reply would serve nobody: its slot is freed now. */
    @Override
    public void peerLeftBeforeReply(List<String> reply) {
        Matcher opened = OPENED.matcher(reply.getLast());
        if (opened.matches()) {
            LOG.info("the requester of worker {} left before the reply; the worker is stopped", opened.group(1));
            try {
                lender.closeLent(opened.group(1));
            } catch (VgpuFailure endedAlready) {
                LOG.debug("worker {}: {}", opened.group(1), endedAlready.detail());
            }
        }
    }

    /**
     * The reply lines to one request; never throws.
     *
     * @param localHost the address the request arrived at, reported for workers on a wildcard address
     */
    @Override
    public List<String> answer(BoundedLineReader.Line request, String localHost) {
        try {
            return answerOrThrow(request, localHost);
        } catch (VgpuFailure e) {
            return List.of(error(e.detail()));
        } catch (RuntimeException e) {
            LOG.error(
                    "control request '{}' failed unexpectedly",
                    LineText.withoutSecrets(request.text(), MAX_ECHOED_CHARS),
                    e);
            return List.of(error(VgpuFailure.describe(e)));
        }
    }

    private List<String> answerOrThrow(BoundedLineReader.Line request, String localHost) {
        if (request.truncated()) {
            return List.of(error("request longer than " + maxRequestBytes + " bytes"));
        }
        String text = request.text().strip();
        if (text.isEmpty()) {
            return List.of(error("empty request; commands: " + COMMANDS));
        }
        if (!text.chars().allMatch(c -> c == '\t' || (c >= ' ' && c <= '~'))) {
            return List.of(error("request holds characters that are not printable ASCII"));
        }
        String unsigned;
        try {
            unsigned = signatures.verify(text);
        } catch (AuthException e) {
            LOG.warn("refused control request '{}': {}", LineText.withoutSecrets(text, MAX_ECHOED_CHARS), e.detail());
            return List.of(error("unauthenticated: " + e.detail()));
        }
        String[] words = unsigned.split("[ \t]+");
        return switch (words[0]) {
            case "open" ->
                words.length == 2 ? List.of(open(words[1], localHost)) : List.of(error("usage: open <device>"));
            case "close" -> words.length == 2 ? List.of(close(words[1])) : List.of(error("usage: close <worker-id>"));
            case "status" -> words.length == 1 ? status() : List.of(error("usage: status"));
            default ->
                List.of(error("unknown command '" + LineText.printable(words[0], MAX_ECHOED_CHARS) + "'; commands: "
                        + COMMANDS));
        };
    }

    private String open(String deviceWord, String localHost) {
        int device;
        try {
            device = Integer.parseInt(deviceWord);
        } catch (NumberFormatException e) {
            return error("device must be a number, got '" + LineText.printable(deviceWord, MAX_ECHOED_CHARS) + "'");
        }
        LentWorker lent = lender.open(device);
        Endpoint endpoint = lent.endpoint().isWildcard() ? lent.endpoint().withHost(localHost) : lent.endpoint();
        return "ok " + endpoint + " " + lent.workerId();
    }

    private String close(String workerId) {
        lender.closeLent(workerId);
        return "ok closed " + workerId;
    }

    private List<String> status() {
        List<String> lines = new ArrayList<>();
        for (WorkerStatus worker : lender.status()) {
            lines.add("worker " + worker.device() + " " + worker.workerId() + " "
                    + worker.endpoint().map(Endpoint::toString).orElse("-") + " "
                    + worker.state().name().toLowerCase(Locale.ROOT)
                    + " " + worker.age().toSeconds() + "s");
        }
        lines.add("ok " + lines.size());
        return lines;
    }

    private static String error(String reason) {
        return LineText.printable("error " + reason, MAX_REPLY_CHARS);
    }
}
