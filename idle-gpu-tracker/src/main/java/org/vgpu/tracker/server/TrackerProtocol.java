package org.vgpu.tracker.server;

import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.vgpu.common.line.BoundedLineReader;
import org.vgpu.common.line.LineService;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.common.line.LineText;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.SessionToken;
import org.vgpu.tracker.Tracker;
import org.vgpu.common.error.VgpuFailure;

/**
 * The tracker's socket: the SPANK bridge's line protocol (slurm-spank-bridge/README.md, "Tracker
 * line protocol") plus {@code status} for {@code vgpu report}:
 * <pre>
 *   assembly JOB NODE        -&gt; ok vgpus=N [local=I,...] [remote=K@HOST:PORT#TOKEN,...] | wait REASON | error REASON
 *   done JOB NODE STATUS     -&gt; ok | error REASON
 *   worker JOB VGPU HOST:PORT WORKER-ID PROOF -&gt; ok | error REASON   (a holder's worker, see HolderAnnouncement)
 *   status                   -&gt; assembly ... / waiting ... / ended ... lines, then ok assemblies=A waiting=W
 * </pre>
 * Anything else, a malformed field, or a request cut at the length limit gets one {@code error}
 * line and changes nothing. Replies are printable ASCII on one line each, whatever the request held.
 *
 * <p>With a {@link MungeVerifier} (the bridge's {@code auth=munge}) every {@code assembly} and
 * {@code done} must end in {@code munge=CREDENTIAL}, made by munged for the rest of the line, and
 * sent by root, a trusted user (SlurmUser) or the job's owner; anything else is answered
 * {@code error unauthenticated: ...}. {@code status} needs no credential: it shows no token. Without
 * a verifier a request that carries a credential is refused too, so a bridge and a tracker that
 * disagree about authentication fail loudly rather than pretend a protection that is not there.
 */
public final class TrackerProtocol implements LineService {
    private static final Logger LOG = LoggerFactory.getLogger(TrackerProtocol.class);
    static final String COMMANDS = "assembly <job> <node>, done <job> <node> <status>, worker <job> <vgpu> <host:port>"
            + " <worker-id> <proof>, status";
    /** The bridge's reply limit is 8190 bytes before the newline. */
    private static final int MAX_REPLY_CHARS = 8190;
    private static final int MAX_ECHOED_CHARS = 40;
    private static final Pattern JOB = Pattern.compile("[1-9][0-9]{0,9}");
    private static final Pattern NODE = Pattern.compile("[A-Za-z0-9._-]{1,128}");
    private static final Pattern VGPU = Pattern.compile("[0-9]|[1-5][0-9]|6[0-3]");
    private static final Pattern STATUS = Pattern.compile("-1|0|[1-9][0-9]{0,9}");
    private static final long MAX_JOB_ID = 0xFFFF_FFFFL;

    private static final String CREDENTIAL_FIELD = " munge=";

    private final Tracker tracker;
    private final Runnable wakeTracker;
    private final int maxRequestBytes;
    private final Optional<MungeVerifier> munge;
    private final Set<String> trustedUsers;

    /**
     * @param wakeTracker  makes the tracker act on a {@code done} now rather than at its next poll
     * @param munge        checks credentials; empty: requests are not authenticated ({@code auth=none})
     * @param trustedUsers besides a job's owner, who may ask for or end any job's assembly (root, SlurmUser)
     */
    public TrackerProtocol(Tracker tracker, Runnable wakeTracker, int maxRequestBytes, Optional<MungeVerifier> munge,
            Set<String> trustedUsers) {
        this.tracker = Objects.requireNonNull(tracker, "tracker");
        this.wakeTracker = Objects.requireNonNull(wakeTracker, "wakeTracker");
        this.maxRequestBytes = maxRequestBytes;
        this.munge = Objects.requireNonNull(munge, "munge");
        this.trustedUsers = Set.copyOf(trustedUsers);
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
        int credentialAt = text.lastIndexOf(CREDENTIAL_FIELD);
        String unsigned = credentialAt < 0 ? text : text.substring(0, credentialAt);
        String[] words = unsigned.split(" ", -1);
        boolean needsAuthentication = words[0].equals("assembly") || words[0].equals("done");
        if (munge.isEmpty() && credentialAt >= 0) {
            return List.of(error("unauthenticated: the request carries a MUNGE credential but this tracker runs with"
                    + " --auth none; start it with --auth munge, as the SPANK bridge's auth=munge expects"));
        }
        if (munge.isPresent() && needsAuthentication) {
            String refusal = authenticationProblem(unsigned, words, credentialAt < 0 ? null
                    : text.substring(credentialAt + CREDENTIAL_FIELD.length()));
            if (refusal != null) {
                LOG.warn("refused '{}': {}", LineText.printable(unsigned, MAX_ECHOED_CHARS), refusal);
                return List.of(error("unauthenticated: " + refusal));
            }
        }
        return switch (words[0]) {
            case "assembly" -> List.of(assembly(words));
            case "done" -> List.of(done(words));
            case "worker" -> List.of(worker(words));
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

    private String worker(String[] words) {
        if (words.length != 6) {
            return error("usage: worker <job> <vgpu> <host:port> <worker-id> <proof>");
        }
        String problem = checkJob(words[1]);
        if (problem != null) {
            return error(problem);
        }
        if (!VGPU.matcher(words[2]).matches()) {
            return error("vgpu must be a vGPU index 0..63, got '" + LineText.printable(words[2], MAX_ECHOED_CHARS) + "'");
        }
        Endpoint endpoint;
        try {
            endpoint = Endpoint.parse(words[3]);
            SessionToken.requireId("worker id", words[4]);
        } catch (VgpuFailure e) {
            return error(e.detail());
        }
        return tracker.worker(Long.parseLong(words[1]), Integer.parseInt(words[2]), endpoint, words[4], words[5]);
    }

    /** Why an {@code assembly} or {@code done} is not to be answered, or null when its sender may ask it. */
    private String authenticationProblem(String request, String[] words, String credential) {
        if (credential == null) {
            return "a MUNGE credential is required (munge=... at the end, the SPANK bridge's auth=munge)";
        }
        MungeVerifier.Sender sender;
        try {
            sender = munge.orElseThrow().verify(credential, request);
        } catch (MungeVerifier.Refused e) {
            return "MUNGE refused the credential: " + e.getMessage();
        }
        if (sender.uid() == 0 || trustedUsers.contains(sender.user())) {
            return null;
        }
        if (words.length >= 2 && JOB.matcher(words[1]).matches() && Long.parseLong(words[1]) <= MAX_JOB_ID
                && tracker.owner(Long.parseLong(words[1])).filter(sender.user()::equals).isPresent()) {
            return null;
        }
        return "user " + sender.user() + " (uid " + sender.uid() + ") is not the job's owner, root or a trusted user";
    }

    private static String checkJob(String job) {
        if (!JOB.matcher(job).matches() || Long.parseLong(job) > MAX_JOB_ID) {
            return "job must be a Slurm job id 1.." + MAX_JOB_ID + ", got '" + LineText.printable(job, MAX_ECHOED_CHARS) + "'";
        }
        return null;
    }

    private static String checkJobAndNode(String job, String node) {
        String problem = checkJob(job);
        if (problem != null) {
            return problem;
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
