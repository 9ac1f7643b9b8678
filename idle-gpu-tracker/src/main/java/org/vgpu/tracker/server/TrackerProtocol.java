package org.vgpu.tracker.server;

import static org.vgpu.common.contract.BridgeContract.CREDENTIAL_PREFIX;
import static org.vgpu.common.contract.BridgeContract.KEY_LOCAL;
import static org.vgpu.common.contract.BridgeContract.KEY_REMOTE;
import static org.vgpu.common.contract.BridgeContract.KEY_VGPUS;
import static org.vgpu.common.contract.BridgeContract.MOVE_KEY_BLOCKED_MS;
import static org.vgpu.common.contract.BridgeContract.MOVE_KEY_BY;
import static org.vgpu.common.contract.BridgeContract.MOVE_KEY_BYTES;
import static org.vgpu.common.contract.BridgeContract.MOVE_KEY_ENDED;
import static org.vgpu.common.contract.BridgeContract.MOVE_KEY_FROM;
import static org.vgpu.common.contract.BridgeContract.MOVE_KEY_ID;
import static org.vgpu.common.contract.BridgeContract.MOVE_KEY_JOB;
import static org.vgpu.common.contract.BridgeContract.MOVE_KEY_REASON;
import static org.vgpu.common.contract.BridgeContract.MOVE_KEY_STARTED;
import static org.vgpu.common.contract.BridgeContract.MOVE_KEY_STATE;
import static org.vgpu.common.contract.BridgeContract.MOVE_KEY_TO;
import static org.vgpu.common.contract.BridgeContract.MOVE_KEY_VGPU;
import static org.vgpu.common.contract.BridgeContract.MOVE_KEY_WHAT;
import static org.vgpu.common.contract.BridgeContract.REPLY_ERROR_WORD;
import static org.vgpu.common.contract.BridgeContract.REPLY_LINE_BYTES;
import static org.vgpu.common.contract.BridgeContract.REPLY_OK_WORD;
import static org.vgpu.common.contract.BridgeContract.REPLY_WAIT_WORD;
import static org.vgpu.common.contract.BridgeContract.REQUEST_ASSEMBLY;
import static org.vgpu.common.contract.BridgeContract.REQUEST_DONE;
import static org.vgpu.common.contract.BridgeContract.REQUEST_DRAIN;
import static org.vgpu.common.contract.BridgeContract.REQUEST_HOOK;
import static org.vgpu.common.contract.BridgeContract.REQUEST_MIGRATE;
import static org.vgpu.common.contract.BridgeContract.REQUEST_MIGRATION;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.agent.AgentChannel;
import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.line.BoundedLineReader;
import org.vgpu.common.line.LineService;
import org.vgpu.common.line.LineText;
import org.vgpu.common.net.Endpoint;
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
 * A job's migration agent sends {@code agent ...}, admins {@code migrate}, {@code drain}, {@code hook} and
 * {@code migration} (contract/admin-transcripts.txt). {@link TrackerRequest} parses each after its credential is
 * checked; anything else, a malformed field, or a request cut at the length limit gets one {@code error} line and
 * changes nothing. Replies are printable ASCII on one line each, whatever the request held.
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
    /** Requests that change where vGPUs run: with MUNGE only root and trusted users may send them. */
    private static final Set<String> ADMIN_REQUESTS = Set.of(REQUEST_MIGRATE, REQUEST_DRAIN, REQUEST_HOOK);

    private static final int MAX_ECHOED_CHARS = 40;

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
            LOG.error("tracker request '{}' failed", LineText.withoutSecrets(request.text(), MAX_ECHOED_CHARS), e);
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
            return List.of(error("empty request; commands: " + TrackerRequest.COMMANDS));
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
                LOG.warn("refused '{}': {}", LineText.withoutSecrets(unsigned, MAX_ECHOED_CHARS), check.refusal());
                return List.of(line(new Answer.Unauthenticated(check.refusal())));
            }
            who = check.who();
        }
        TrackerRequest parsed;
        try {
            parsed = TrackerRequest.parse(unsigned);
        } catch (TrackerRequest.Malformed e) {
            return List.of(error(e.getMessage()));
        }
        return switch (parsed) {
            case TrackerRequest.Assembly(long job, String node) -> List.of(line(tracker.assembly(job, node)));
            case TrackerRequest.Done done -> List.of(done(done));
            case TrackerRequest.Worker(long job, int vgpu, Endpoint endpoint, String workerId, String proof) ->
                List.of(line(tracker.worker(job, vgpu, endpoint, workerId, proof)));
            // A holder's worker whose holder is being cancelled: see Tracker#workerLeaving.
            case TrackerRequest.WorkerLeaving(long job, int vgpu, String workerId, String proof) ->
                List.of(line(tracker.workerLeaving(job, vgpu, workerId, proof)));
            case TrackerRequest.Agent(AgentChannel.Request agent) -> List.of(agent(agent));
            case TrackerRequest.Migrate(long job, int vgpu, Optional<String> node) ->
                List.of(reply(tracker.migrate(job, vgpu, node, who)));
            case TrackerRequest.Drain(String node) -> List.of(reply(tracker.drain(node, who)));
            case TrackerRequest.Hook(boolean pause) -> List.of(reply(tracker.pauseHook(pause, who)));
            case TrackerRequest.MigrationQuery(long id) -> List.of(migration(id));
            case TrackerRequest.Status(boolean json) ->
                json ? ReportJson.replyLines(Report.of(tracker.status())) : lines(tracker.status());
        };
    }

    private String done(TrackerRequest.Done done) {
        Answer answer = tracker.done(done.job(), done.node(), done.status());
        wakeTracker.run();
        return line(answer);
    }

    /** A job's migration agent: parsed by the channel's one codec, answered by the tracker. */
    private String agent(AgentChannel.Request request) {
        return switch (request) {
            case AgentChannel.Poll poll -> tracker.agentPoll(poll).format();
            case AgentChannel.Done done -> tracker.agentDone(done).format();
            case AgentChannel.Bye bye -> tracker.agentBye(bye).format();
        };
    }

    /** {@code migration <id>}: one migration's state, for {@code vgpu migrate}'s progress; needs no credential. */
    private String migration(long id) {
        return tracker.migration(id)
                .map(TrackerProtocol::moveLine)
                .map(text -> REPLY_OK_WORD + " " + text)
                .orElseGet(() -> error("the tracker knows no migration " + id));
    }

    /** One migration as a line of {@code key=value} words, the reason and explanation last. */
    public static String moveLine(MoveRecord move) {
        return REQUEST_MIGRATION + " " + MOVE_KEY_ID + "=" + move.id() + " " + MOVE_KEY_JOB + "=" + move.job() + " "
                + MOVE_KEY_VGPU + "=" + move.vgpu() + " " + MOVE_KEY_FROM + "=" + move.from() + " " + MOVE_KEY_TO + "="
                + move.to() + " " + MOVE_KEY_BY + "=" + move.by() + " " + MOVE_KEY_STATE + "=" + move.state() + " "
                + MOVE_KEY_STARTED + "=" + move.started()
                + move.ended().map(at -> " " + MOVE_KEY_ENDED + "=" + at).orElse("") + " " + MOVE_KEY_BLOCKED_MS
                + "=" + move.blockedMs() + " " + MOVE_KEY_BYTES + "=" + move.bytes() + " " + MOVE_KEY_WHAT + "="
                + move.explanation().replace(' ', '_')
                + " " + MOVE_KEY_REASON + "=" + move.reason().replace(' ', '_');
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
                && TrackerRequest.jobProblem(words[1]) == null
                && tracker.owner(Long.parseLong(words[1]))
                        .filter(sender.user()::equals)
                        .isPresent()) {
            return null;
        }
        return "user " + sender.user() + " (uid " + sender.uid() + ") is not the job's owner, root or a trusted user";
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
