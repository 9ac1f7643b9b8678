package org.vgpu.tracker.server;

import static org.vgpu.common.contract.BridgeContract.HOOK_PAUSE;
import static org.vgpu.common.contract.BridgeContract.HOOK_RESUME;
import static org.vgpu.common.contract.BridgeContract.JOB_ID_MAX;
import static org.vgpu.common.contract.BridgeContract.NODE_CHARS;
import static org.vgpu.common.contract.BridgeContract.NODE_CHAR_CLASS;
import static org.vgpu.common.contract.BridgeContract.NODE_NAME_BYTES;
import static org.vgpu.common.contract.BridgeContract.REQUEST_ASSEMBLY;
import static org.vgpu.common.contract.BridgeContract.REQUEST_DONE;
import static org.vgpu.common.contract.BridgeContract.REQUEST_DRAIN;
import static org.vgpu.common.contract.BridgeContract.REQUEST_HOOK;
import static org.vgpu.common.contract.BridgeContract.REQUEST_MIGRATE;
import static org.vgpu.common.contract.BridgeContract.REQUEST_MIGRATION;
import static org.vgpu.common.contract.BridgeContract.REQUEST_STATUS;
import static org.vgpu.common.contract.BridgeContract.REQUEST_WORKER;
import static org.vgpu.common.contract.BridgeContract.REQUEST_WORKER_LEAVING;
import static org.vgpu.common.contract.BridgeContract.STATUS_JSON_LINE_WORD;
import static org.vgpu.common.contract.BridgeContract.VGPUS_MAX;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

import org.vgpu.common.agent.AgentChannel;
import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.line.LineText;
import org.vgpu.common.line.TrackerAdminClient;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.SessionToken;

/**
 * One request of the tracker's line protocol (slurm-spank-bridge/contract/grammar.conf), its credential taken off:
 * {@link #parse} checks every field as the grammar says and says what is wrong in the words the requester gets back;
 * {@link #format} writes the line that parses to the same request.
 */
public sealed interface TrackerRequest {
    /** Every request, as the reply to an empty or unknown one lists them. */
    String COMMANDS = REQUEST_ASSEMBLY + " <job> <node>, " + REQUEST_DONE + " <job> <node> <status>, "
            + REQUEST_WORKER + " <job> <vgpu> <host:port> <worker-id> <proof>, " + REQUEST_WORKER_LEAVING
            + " <job> <vgpu> <worker-id> <proof>, " + REQUEST_STATUS + " ["
            + STATUS_JSON_LINE_WORD + "], " + AgentChannel.WORD + " " + AgentChannel.POLL + "|" + AgentChannel.DONE
            + " ..., " + REQUEST_MIGRATE + " <job> <vgpu> [<node>], " + REQUEST_DRAIN + " <node>, " + REQUEST_HOOK + " "
            + HOOK_PAUSE + "|" + HOOK_RESUME + ", " + REQUEST_MIGRATION + " <id>";

    /** The request line, without credential and newline. */
    String format();

    /** The SPANK bridge asks for job {@code job}'s assembly on {@code node}. */
    record Assembly(long job, String node) implements TrackerRequest {
        @Override
        public String format() {
            return REQUEST_ASSEMBLY + " " + job + " " + node;
        }
    }

    /** The SPANK bridge says job {@code job} ended on {@code node} with {@code status}. */
    record Done(long job, String node, int status) implements TrackerRequest {
        @Override
        public String format() {
            return REQUEST_DONE + " " + job + " " + node + " " + status;
        }
    }

    /** A holder's worker announces itself. */
    record Worker(long job, int vgpu, Endpoint endpoint, String workerId, String proof) implements TrackerRequest {
        @Override
        public String format() {
            return REQUEST_WORKER + " " + job + " " + vgpu + " " + endpoint + " " + workerId + " " + proof;
        }
    }

    /** A holder's worker whose holder is being cancelled. */
    record WorkerLeaving(long job, int vgpu, String workerId, String proof) implements TrackerRequest {
        @Override
        public String format() {
            return REQUEST_WORKER_LEAVING + " " + job + " " + vgpu + " " + workerId + " " + proof;
        }
    }

    /** The tracker's state, as lines or as the report's JSON. */
    record Status(boolean json) implements TrackerRequest {
        @Override
        public String format() {
            return json ? REQUEST_STATUS + " " + STATUS_JSON_LINE_WORD : REQUEST_STATUS;
        }
    }

    /** A job's migration agent, in the channel's own codec. */
    record Agent(AgentChannel.Request request) implements TrackerRequest {
        public Agent {
            Objects.requireNonNull(request, "request");
        }

        @Override
        public String format() {
            return request.format();
        }
    }

    /** An admin moves vGPU {@code vgpu} of job {@code job} home, or to {@code node}. */
    record Migrate(long job, int vgpu, Optional<String> node) implements TrackerRequest {
        public Migrate {
            Objects.requireNonNull(node, "node");
        }

        @Override
        public String format() {
            List<String> operands = new ArrayList<>(List.of(Long.toString(job), Integer.toString(vgpu)));
            node.ifPresent(operands::add);
            return TrackerAdminClient.migrateRequest(operands);
        }
    }

    /** An admin moves every vGPU served from {@code node} elsewhere. */
    record Drain(String node) implements TrackerRequest {
        @Override
        public String format() {
            return TrackerAdminClient.drainRequest(node);
        }
    }

    /** An admin pauses or resumes the migration hook. */
    record Hook(boolean pause) implements TrackerRequest {
        @Override
        public String format() {
            return TrackerAdminClient.hookRequest(pause);
        }
    }

    /** One migration's state. */
    record MigrationQuery(long id) implements TrackerRequest {
        @Override
        public String format() {
            return TrackerAdminClient.migrationRequest(id);
        }
    }

    /** Why a request line is not a request, in the words its sender gets back after {@code error}. */
    final class Malformed extends Exception {
        private static final long serialVersionUID = 1L;

        Malformed(String reason) {
            super(reason, null, false, false);
        }
    }

    /**
     * The request of one line of printable ASCII without its credential.
     *
     * @throws Malformed saying what is wrong with it
     */
    static TrackerRequest parse(String line) throws Malformed {
        String[] words = line.split(" ", -1);
        return switch (words[0]) {
            case REQUEST_ASSEMBLY -> {
                usage(words.length == 3, REQUEST_ASSEMBLY + " <job> <node>");
                yield new Assembly(job(words[1]), node(words[2]));
            }
            case REQUEST_DONE -> {
                usage(words.length == 4, REQUEST_DONE + " <job> <node> <status>");
                long job = job(words[1]);
                String node = node(words[2]);
                if (!Fields.STATUS.matcher(words[3]).matches() || Long.parseLong(words[3]) > Integer.MAX_VALUE) {
                    throw new Malformed("status must be -1 or an exit status 0.." + Integer.MAX_VALUE + ", got '"
                            + echoed(words[3]) + "'");
                }
                yield new Done(job, node, Integer.parseInt(words[3]));
            }
            case REQUEST_WORKER -> {
                usage(words.length == 6, REQUEST_WORKER + " <job> <vgpu> <host:port> <worker-id> <proof>");
                long job = job(words[1]);
                int vgpu = vgpu(words[2]);
                String workerId = workerId(words[4]);
                try {
                    yield new Worker(job, vgpu, Endpoint.parse(words[3]), workerId, words[5]);
                } catch (VgpuFailure e) {
                    throw new Malformed(e.detail());
                }
            }
            case REQUEST_WORKER_LEAVING -> {
                usage(words.length == 5, REQUEST_WORKER_LEAVING + " <job> <vgpu> <worker-id> <proof>");
                yield new WorkerLeaving(job(words[1]), vgpu(words[2]), workerId(words[3]), words[4]);
            }
            case AgentChannel.WORD -> {
                try {
                    yield new Agent(AgentChannel.parseRequest(line));
                } catch (AgentChannel.ParseError e) {
                    throw new Malformed(e.detail());
                }
            }
            case REQUEST_MIGRATE -> {
                usage(words.length == 3 || words.length == 4, REQUEST_MIGRATE + " <job> <vgpu> [<node>]");
                long job = job(words[1]);
                int vgpu = vgpu(words[2]);
                yield new Migrate(job, vgpu, words.length == 4 ? Optional.of(node(words[3])) : Optional.empty());
            }
            case REQUEST_DRAIN -> {
                usage(words.length == 2, REQUEST_DRAIN + " <node>");
                yield new Drain(node(words[1]));
            }
            case REQUEST_HOOK -> {
                usage(
                        words.length == 2 && (words[1].equals(HOOK_PAUSE) || words[1].equals(HOOK_RESUME)),
                        REQUEST_HOOK + " " + HOOK_PAUSE + "|" + HOOK_RESUME);
                yield new Hook(words[1].equals(HOOK_PAUSE));
            }
            case REQUEST_MIGRATION -> {
                usage(words.length == 2 && Fields.DECIMAL.matcher(words[1]).matches(), REQUEST_MIGRATION + " <id>");
                yield new MigrationQuery(Long.parseLong(words[1]));
            }
            case REQUEST_STATUS -> {
                usage(
                        words.length == 1 || (words.length == 2 && words[1].equals(STATUS_JSON_LINE_WORD)),
                        REQUEST_STATUS + " [" + STATUS_JSON_LINE_WORD + "]");
                yield new Status(words.length == 2);
            }
            default -> throw new Malformed("unknown command '" + echoed(words[0]) + "'; commands: " + COMMANDS);
        };
    }

    /** Why {@code job} is not a Slurm job id, or null when it is one. */
    static String jobProblem(String job) {
        if (!Fields.DECIMAL.matcher(job).matches() || Long.parseLong(job) < 1 || Long.parseLong(job) > JOB_ID_MAX) {
            return "job must be a Slurm job id 1.." + JOB_ID_MAX + ", got '" + echoed(job) + "'";
        }
        return null;
    }

    private static void usage(boolean fits, String usage) throws Malformed {
        if (!fits) {
            throw new Malformed("usage: " + usage);
        }
    }

    private static long job(String job) throws Malformed {
        String problem = jobProblem(job);
        if (problem != null) {
            throw new Malformed(problem);
        }
        return Long.parseLong(job);
    }

    private static String node(String node) throws Malformed {
        if (!Fields.NODE.matcher(node).matches()) {
            throw new Malformed("node must be a Slurm node name (1 to " + NODE_NAME_BYTES + " letters, digits and "
                    + NODE_CHARS + "), got '" + echoed(node) + "'");
        }
        return node;
    }

    private static int vgpu(String vgpu) throws Malformed {
        if (!Fields.DECIMAL.matcher(vgpu).matches() || Long.parseLong(vgpu) >= VGPUS_MAX) {
            throw new Malformed("vgpu must be a vGPU index 0.." + (VGPUS_MAX - 1) + ", got '" + echoed(vgpu) + "'");
        }
        return Integer.parseInt(vgpu);
    }

    private static String workerId(String workerId) throws Malformed {
        try {
            SessionToken.requireId("worker id", workerId);
        } catch (VgpuFailure e) {
            throw new Malformed(e.detail());
        }
        return workerId;
    }

    /** A field as a reply may echo it: printable and short. */
    private static String echoed(String field) {
        return LineText.withoutSecrets(field, Fields.MAX_ECHOED_CHARS);
    }

    /** The patterns of the fields (an interface's constants are public: these stay in this file). */
    final class Fields {
        static final int MAX_ECHOED_CHARS = 40;
        static final Pattern DECIMAL = Pattern.compile("0|[1-9][0-9]{0,9}");
        static final Pattern NODE = Pattern.compile(NODE_CHAR_CLASS + "{1," + NODE_NAME_BYTES + "}");
        static final Pattern STATUS = Pattern.compile("-1|" + DECIMAL.pattern());

        private Fields() {}
    }
}
