package org.vgpu.tracker.server;

import static org.vgpu.common.contract.BridgeContract.CREDENTIAL_PREFIX;
import static org.vgpu.common.contract.BridgeContract.JOB_ID_MAX;
import static org.vgpu.common.contract.BridgeContract.KEY_LOCAL;
import static org.vgpu.common.contract.BridgeContract.KEY_REMOTE;
import static org.vgpu.common.contract.BridgeContract.KEY_VGPUS;
import static org.vgpu.common.contract.BridgeContract.NODE_CHARS;
import static org.vgpu.common.contract.BridgeContract.NODE_CHAR_CLASS;
import static org.vgpu.common.contract.BridgeContract.NODE_NAME_BYTES;
import static org.vgpu.common.contract.BridgeContract.REPLY_ERROR_WORD;
import static org.vgpu.common.contract.BridgeContract.REPLY_LINE_BYTES;
import static org.vgpu.common.contract.BridgeContract.REPLY_OK_WORD;
import static org.vgpu.common.contract.BridgeContract.REPLY_WAIT_WORD;
import static org.vgpu.common.contract.BridgeContract.REQUEST_ASSEMBLY;
import static org.vgpu.common.contract.BridgeContract.REQUEST_DONE;
import static org.vgpu.common.contract.BridgeContract.REQUEST_STATUS;
import static org.vgpu.common.contract.BridgeContract.REQUEST_WORKER;
import static org.vgpu.common.contract.BridgeContract.REQUEST_WORKER_LEAVING;
import static org.vgpu.common.contract.BridgeContract.STATUS_JSON_LINE_WORD;
import static org.vgpu.common.contract.BridgeContract.VGPUS_MAX;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.agent.AgentChannel;
import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.line.BoundedLineReader;
import org.vgpu.common.line.LineService;
import org.vgpu.common.line.LineText;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.SessionToken;
import org.vgpu.tracker.Answer;
import org.vgpu.tracker.StatusReport;
import org.vgpu.tracker.Tracker;
import org.vgpu.tracker.hook.MigrationHook;
import org.vgpu.tracker.hook.MoveRecord;
import org.vgpu.tracker.ledger.LedgerLines;
import org.vgpu.tracker.report.Report;
import org.vgpu.tracker.report.ReportJson;

/**
 * The tracker's socket: the SPANK bridge's line protocol (slurm-spank-bridge/contract/grammar.conf,
 * with the limits of limits.conf) plus {@code status} for shell scripts and {@code status json} for
 * {@code vgpu report} (the {@link Report} document, see {@link ReportJson}). The {@link Tracker}
 * decides and returns {@link Answer}s and a {@link StatusReport}; this class alone writes lines. The
 * requests are {@code assembly} and {@code done} (the bridge's), {@code worker} and {@code worker-leaving} (a
 * holder's worker, see HolderAnnouncement) and {@code status}; contract/transcripts.txt shows what each is answered.
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
    static final String MIGRATE = "migrate";
    static final String DRAIN = "drain";
    static final String HOOK = "hook";
    static final String MIGRATION = "migration";
    static final String COMMANDS = REQUEST_ASSEMBLY + " <job> <node>, " + REQUEST_DONE + " <job> <node> <status>, "
            + REQUEST_WORKER + " <job> <vgpu> <host:port> <worker-id> <proof>, " + REQUEST_WORKER_LEAVING
            + " <job> <vgpu> <worker-id> <proof>, " + REQUEST_STATUS + " ["
            + STATUS_JSON_LINE_WORD + "], " + AgentChannel.WORD + " " + AgentChannel.POLL + "|" + AgentChannel.DONE
            + " ..., " + MIGRATE + " <job> <vgpu> [<node>], " + DRAIN + " <node>, " + HOOK + " pause|resume, "
            + MIGRATION + " <id>";
    /** Requests that change where vGPUs run: with MUNGE only root and trusted users may send them. */
    private static final Set<String> ADMIN_REQUESTS = Set.of(MIGRATE, DRAIN, HOOK);

    private static final int MAX_ECHOED_CHARS = 40;
    private static final Pattern DECIMAL = Pattern.compile("0|[1-9][0-9]{0,9}");
    private static final Pattern NODE = Pattern.compile(NODE_CHAR_CLASS + "{1," + NODE_NAME_BYTES + "}");
    private static final Pattern STATUS = Pattern.compile("-1|" + DECIMAL.pattern());

    private static final String CREDENTIAL_FIELD = " " + CREDENTIAL_PREFIX;

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
    public TrackerProtocol(
            Tracker tracker,
            Runnable wakeTracker,
            int maxRequestBytes,
            Optional<MungeVerifier> munge,
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
            return answerOrThrow(request).stream()
                    .map(line -> LineText.printable(line, REPLY_LINE_BYTES))
                    .toList();
        } catch (RuntimeException e) {
            LOG.error("tracker request '{}' failed", LineText.printable(request.text(), MAX_ECHOED_CHARS), e);
            // A Slurm or ledger failure says what failed in the product's words; anything else is in the log only.
            return List.of(error("tracker failed to answer: "
                    + (e instanceof VgpuFailure failure
                            ? failure.detail()
                            : "an internal error, logged by the tracker")));
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
        boolean admin = ADMIN_REQUESTS.contains(words[0]);
        boolean needsAuthentication = words[0].equals(REQUEST_ASSEMBLY) || words[0].equals(REQUEST_DONE) || admin;
        if (munge.isEmpty() && credentialAt >= 0) {
            return List.of(error("unauthenticated: the request carries a MUNGE credential but this tracker runs with"
                    + " --auth none; start it with --auth munge, as the SPANK bridge's auth=munge expects"));
        }
        String who = "an unauthenticated admin (the tracker runs with --auth none)";
        if (munge.isPresent() && needsAuthentication) {
            String credential = credentialAt < 0 ? null : text.substring(credentialAt + CREDENTIAL_FIELD.length());
            AdminCheck check = admin
                    ? adminCheck(unsigned, credential)
                    : new AdminCheck(authenticationProblem(unsigned, words, credential), who);
            if (check.refusal() != null) {
                LOG.warn("refused '{}': {}", LineText.printable(unsigned, MAX_ECHOED_CHARS), check.refusal());
                return List.of(line(new Answer.Unauthenticated(check.refusal())));
            }
            who = check.who();
        }
        return switch (words[0]) {
            case REQUEST_ASSEMBLY -> List.of(assembly(words));
            case REQUEST_DONE -> List.of(done(words));
            case REQUEST_WORKER -> List.of(worker(words));
            case REQUEST_WORKER_LEAVING -> List.of(workerLeaving(words));
            case AgentChannel.WORD -> List.of(agent(unsigned));
            case MIGRATE -> List.of(migrate(words, who));
            case DRAIN -> List.of(drain(words, who));
            case HOOK -> List.of(hook(words, who));
            case MIGRATION -> List.of(migration(words));
            case REQUEST_STATUS -> status(words);
            default ->
                List.of(error("unknown command '" + LineText.printable(words[0], MAX_ECHOED_CHARS) + "'; commands: "
                        + COMMANDS));
        };
    }

    private List<String> status(String[] words) {
        if (words.length == 1) {
            return lines(tracker.status());
        }
        if (words.length == 2 && words[1].equals(STATUS_JSON_LINE_WORD)) {
            return ReportJson.replyLines(Report.of(tracker.status()));
        }
        return List.of(error("usage: " + REQUEST_STATUS + " [" + STATUS_JSON_LINE_WORD + "]"));
    }

    private String assembly(String[] words) {
        if (words.length != 3) {
            return error("usage: " + REQUEST_ASSEMBLY + " <job> <node>");
        }
        String problem = checkJobAndNode(words[1], words[2]);
        return problem != null ? error(problem) : line(tracker.assembly(Long.parseLong(words[1]), words[2]));
    }

    private String done(String[] words) {
        if (words.length != 4) {
            return error("usage: " + REQUEST_DONE + " <job> <node> <status>");
        }
        String problem = checkJobAndNode(words[1], words[2]);
        if (problem != null) {
            return error(problem);
        }
        if (!STATUS.matcher(words[3]).matches() || Long.parseLong(words[3]) > Integer.MAX_VALUE) {
            return error("status must be -1 or an exit status 0.." + Integer.MAX_VALUE + ", got '"
                    + LineText.printable(words[3], MAX_ECHOED_CHARS) + "'");
        }
        Answer answer = tracker.done(Long.parseLong(words[1]), words[2], Integer.parseInt(words[3]));
        wakeTracker.run();
        return line(answer);
    }

    private String worker(String[] words) {
        if (words.length != 6) {
            return error("usage: " + REQUEST_WORKER + " <job> <vgpu> <host:port> <worker-id> <proof>");
        }
        String problem = checkJobVgpuAndWorker(words[1], words[2], words[4]);
        if (problem != null) {
            return error(problem);
        }
        Endpoint endpoint;
        try {
            endpoint = Endpoint.parse(words[3]);
        } catch (VgpuFailure e) {
            return error(e.detail());
        }
        return line(tracker.worker(Long.parseLong(words[1]), Integer.parseInt(words[2]), endpoint, words[4], words[5]));
    }

    /** A holder's worker whose holder is being cancelled: see {@link Tracker#workerLeaving}. */
    private String workerLeaving(String[] words) {
        if (words.length != 5) {
            return error("usage: " + REQUEST_WORKER_LEAVING + " <job> <vgpu> <worker-id> <proof>");
        }
        String problem = checkJobVgpuAndWorker(words[1], words[2], words[3]);
        if (problem != null) {
            return error(problem);
        }
        return line(tracker.workerLeaving(Long.parseLong(words[1]), Integer.parseInt(words[2]), words[3], words[4]));
    }

    /** What is wrong with a worker request's job, vGPU and worker id, or null. */
    private static String checkJobVgpuAndWorker(String job, String vgpu, String workerId) {
        String problem = checkJob(job);
        if (problem != null) {
            return problem;
        }
        if (!DECIMAL.matcher(vgpu).matches() || Long.parseLong(vgpu) >= VGPUS_MAX) {
            return "vgpu must be a vGPU index 0.." + (VGPUS_MAX - 1) + ", got '"
                    + LineText.printable(vgpu, MAX_ECHOED_CHARS) + "'";
        }
        try {
            SessionToken.requireId("worker id", workerId);
        } catch (VgpuFailure e) {
            return e.detail();
        }
        return null;
    }

    /** A job's migration agent: parsed by the channel's one codec, answered by the tracker. */
    private String agent(String text) {
        AgentChannel.Request request;
        try {
            request = AgentChannel.parseRequest(text);
        } catch (AgentChannel.ParseError e) {
            return error(e.detail());
        }
        return switch (request) {
            case AgentChannel.Poll poll -> tracker.agentPoll(poll).format();
            case AgentChannel.Done done -> tracker.agentDone(done).format();
            case AgentChannel.Bye bye -> tracker.agentBye(bye).format();
        };
    }

    private String migrate(String[] words, String who) {
        if (words.length < 3 || words.length > 4) {
            return error("usage: " + MIGRATE + " <job> <vgpu> [<node>]");
        }
        String problem = checkJob(words[1]);
        if (problem == null && (!DECIMAL.matcher(words[2]).matches() || Long.parseLong(words[2]) >= VGPUS_MAX)) {
            problem = "vgpu must be a vGPU index 0.." + (VGPUS_MAX - 1) + ", got '"
                    + LineText.printable(words[2], MAX_ECHOED_CHARS) + "'";
        }
        if (problem == null && words.length == 4 && !NODE.matcher(words[3]).matches()) {
            problem = nodeProblem(words[3]);
        }
        if (problem != null) {
            return error(problem);
        }
        return reply(tracker.migrate(
                Long.parseLong(words[1]),
                Integer.parseInt(words[2]),
                words.length == 4 ? Optional.of(words[3]) : Optional.empty(),
                who));
    }

    private String drain(String[] words, String who) {
        if (words.length != 2) {
            return error("usage: " + DRAIN + " <node>");
        }
        if (!NODE.matcher(words[1]).matches()) {
            return error(nodeProblem(words[1]));
        }
        return reply(tracker.drain(words[1], who));
    }

    private String hook(String[] words, String who) {
        if (words.length != 2 || !(words[1].equals("pause") || words[1].equals("resume"))) {
            return error("usage: " + HOOK + " pause|resume");
        }
        return reply(tracker.pauseHook(words[1].equals("pause"), who));
    }

    /** {@code migration <id>}: one migration's state, for {@code vgpu migrate}'s progress; needs no credential. */
    private String migration(String[] words) {
        if (words.length != 2 || !DECIMAL.matcher(words[1]).matches()) {
            return error("usage: " + MIGRATION + " <id>");
        }
        long id = Long.parseLong(words[1]);
        return tracker.migration(id)
                .map(TrackerProtocol::moveLine)
                .map(text -> REPLY_OK_WORD + " " + text)
                .orElseGet(() -> error("the tracker knows no migration " + id));
    }

    /** One migration as a line of {@code key=value} words, the reason and explanation last. */
    public static String moveLine(MoveRecord move) {
        return "migration id=" + move.id() + " job=" + move.job() + " vgpu=" + move.vgpu() + " from=" + move.from()
                + " to=" + move.to() + " by=" + move.by() + " state=" + move.state() + " started="
                + move.started() + move.ended().map(at -> " ended=" + at).orElse("") + " blocked_ms="
                + move.blockedMs() + " bytes=" + move.bytes() + " what="
                + move.explanation().replace(' ', '_')
                + " reason=" + move.reason().replace(' ', '_');
    }

    private static String reply(MigrationHook.Reply reply) {
        return reply.ok() ? REPLY_OK_WORD + " " + reply.text() : error(reply.text());
    }

    /** Why a request is refused (null when it is not), and who sent it. */
    private record AdminCheck(String refusal, String who) {}

    /**
     * Admin requests: only root and trusted users. MUNGE decodes each credential once (a second decode is a
     * replay), so one check yields both the verdict and the sender.
     */
    private AdminCheck adminCheck(String request, String credential) {
        if (credential == null) {
            return new AdminCheck(
                    "a MUNGE credential is required (munge=... at the end; vgpu's admin commands take --auth munge)",
                    null);
        }
        try {
            MungeVerifier.Sender sender = munge.orElseThrow().verify(credential, request);
            String who = sender.user() + " (uid " + sender.uid() + ")";
            if (sender.uid() == 0 || trustedUsers.contains(sender.user())) {
                return new AdminCheck(null, who);
            }
            return new AdminCheck("user " + who + " may not move vGPUs: only root and trusted users may", who);
        } catch (MungeVerifier.Refused e) {
            return new AdminCheck("MUNGE refused the credential: " + e.getMessage(), null);
        }
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
        if (words.length >= 2
                && checkJob(words[1]) == null
                && tracker.owner(Long.parseLong(words[1]))
                        .filter(sender.user()::equals)
                        .isPresent()) {
            return null;
        }
        return "user " + sender.user() + " (uid " + sender.uid() + ") is not the job's owner, root or a trusted user";
    }

    private static String checkJob(String job) {
        if (!DECIMAL.matcher(job).matches() || Long.parseLong(job) < 1 || Long.parseLong(job) > JOB_ID_MAX) {
            return "job must be a Slurm job id 1.." + JOB_ID_MAX + ", got '" + LineText.printable(job, MAX_ECHOED_CHARS)
                    + "'";
        }
        return null;
    }

    private static String checkJobAndNode(String job, String node) {
        String problem = checkJob(job);
        if (problem != null) {
            return problem;
        }
        if (!NODE.matcher(node).matches()) {
            return nodeProblem(node);
        }
        return null;
    }

    private static String nodeProblem(String node) {
        return "node must be a Slurm node name (1 to " + NODE_NAME_BYTES + " letters, digits and " + NODE_CHARS
                + "), got '" + LineText.printable(node, MAX_ECHOED_CHARS) + "'";
    }

    /** The reply line of an answer: {@code ok ...}, {@code wait REASON} or {@code error REASON}. */
    public static String line(Answer answer) {
        return switch (answer) {
            case Answer.Assembled assembled -> assembledLine(assembled);
            case Answer.Accepted() -> REPLY_OK_WORD;
            case Answer.Evacuating(String what) -> REPLY_OK_WORD + " " + what;
            case Answer.NotYet(String reason) -> REPLY_WAIT_WORD + " " + reason;
            case Answer.Refused(String reason) -> error(reason);
            case Answer.Unauthenticated(String reason) -> error("unauthenticated: " + reason);
        };
    }

    /** {@code ok vgpus=N [local=I,...] [remote=K@HOST:PORT#TOKEN,...]}: the window base is left at the bridge's default. */
    private static String assembledLine(Answer.Assembled assembled) {
        StringBuilder line = new StringBuilder(REPLY_OK_WORD)
                .append(' ')
                .append(KEY_VGPUS)
                .append('=')
                .append(assembled.vgpus());
        if (!assembled.localGpus().isEmpty()) {
            line.append(' ').append(KEY_LOCAL).append('=').append(joined(assembled.localGpus()));
        }
        if (!assembled.borrowed().isEmpty()) {
            line.append(' ')
                    .append(KEY_REMOTE)
                    .append('=')
                    .append(String.join(
                            ",",
                            assembled.borrowed().stream()
                                    .map(borrowed -> borrowed.vgpu() + "@" + borrowed.worker() + "#" + borrowed.token())
                                    .toList()));
        }
        return line.toString();
    }

    /**
     * The reply to {@code status}: one {@code assembly} line per live assembly (the ledger's own record,
     * which names no token) followed by a {@code lost} line when Slurm shows some of its holders ended,
     * one {@code waiting} line per held job, the recent {@code ended} lines, and {@code ok assemblies=A waiting=W}.
     */
    public static List<String> lines(StatusReport status) {
        List<String> lines = new ArrayList<>();
        for (StatusReport.Live live : status.assemblies()) {
            lines.add(LedgerLines.assembly(live.assembly()));
            if (!live.lostHolders().isEmpty()) {
                lines.add("lost job=" + live.assembly().job() + " holders=" + joined(live.lostHolders()));
            }
        }
        for (StatusReport.Waiting job : status.waiting()) {
            lines.add("waiting job=" + job.job() + " user=" + job.user() + " vgpus=" + job.vgpus() + " reason="
                    + job.reason());
        }
        for (StatusReport.Ended ended : status.ended()) {
            lines.add("ended job=" + ended.job() + " user=" + ended.user() + " node=" + ended.node() + " vgpus="
                    + ended.vgpus()
                    + " borrowed=" + ended.borrowed() + " why=" + ended.why() + " at=" + ended.at()
                    + ended.reason().map(reason -> " reason=" + reason).orElse(""));
        }
        lines.add(REPLY_OK_WORD + " assemblies=" + status.assemblies().size() + " waiting="
                + status.waiting().size());
        return lines;
    }

    private static String joined(List<? extends Number> numbers) {
        return String.join(",", numbers.stream().map(String::valueOf).toList());
    }

    private static String error(String reason) {
        return REPLY_ERROR_WORD + " " + reason;
    }
}
