package org.vgpu.common.line;

import static org.vgpu.common.contract.BridgeContract.CREDENTIAL_PREFIX;
import static org.vgpu.common.contract.BridgeContract.HOOK_PAUSE;
import static org.vgpu.common.contract.BridgeContract.HOOK_RESUME;
import static org.vgpu.common.contract.BridgeContract.MOVE_FAILED;
import static org.vgpu.common.contract.BridgeContract.MOVE_GAVE_UP;
import static org.vgpu.common.contract.BridgeContract.MOVE_KEY_STATE;
import static org.vgpu.common.contract.BridgeContract.MOVE_KEY_WHAT;
import static org.vgpu.common.contract.BridgeContract.MOVE_OK;
import static org.vgpu.common.contract.BridgeContract.MOVE_STARTED_WORD;
import static org.vgpu.common.contract.BridgeContract.REPLY_ERROR_WORD;
import static org.vgpu.common.contract.BridgeContract.REPLY_OK_WORD;
import static org.vgpu.common.contract.BridgeContract.REQUEST_DRAIN;
import static org.vgpu.common.contract.BridgeContract.REQUEST_HOOK;
import static org.vgpu.common.contract.BridgeContract.REQUEST_MIGRATE;
import static org.vgpu.common.contract.BridgeContract.REQUEST_MIGRATION;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.vgpu.common.error.AuthException;
import org.vgpu.common.error.NetworkException;
import org.vgpu.common.net.Endpoint;

/**
 * The admin commands' side of the tracker's socket ({@code vgpu migrate JOB VGPU}, {@code vgpu drain}, {@code vgpu
 * hook}): one request line, signed with a MUNGE credential ({@code munge=...} at the end, made by munge's own
 * {@code munge} program for the rest of the line) when the tracker runs with {@code --auth munge}, and the
 * progress of a migration the tracker carries out. The words of the requests and replies are the contract's
 * (slurm-spank-bridge/contract/grammar.conf), which the tracker answers by too.
 */
public final class TrackerAdminClient {
    /** Final states of a migration in the tracker's {@code migration <id>} reply. */
    private static final Set<String> FINISHED = Set.of(MOVE_OK, MOVE_FAILED, MOVE_GAVE_UP);
    /** The start of the reply to a migrate that started a move, which names the migration. */
    private static final Pattern STARTED =
            Pattern.compile("^" + REPLY_OK_WORD + " " + REQUEST_MIGRATION + " (\\d+) " + MOVE_STARTED_WORD);

    private static final Duration MUNGE_TIMEOUT = Duration.ofSeconds(10);

    private TrackerAdminClient() {}

    /** How the tracker authenticates admins. */
    public enum Auth {
        NONE,
        MUNGE
    }

    /** {@code vgpu migrate JOB VGPU [NODE]}'s request: the operands as given, one word each. */
    public static String migrateRequest(List<String> operands) {
        return REQUEST_MIGRATE + " " + String.join(" ", operands);
    }

    /** {@code vgpu drain NODE}'s request. */
    public static String drainRequest(String node) {
        return REQUEST_DRAIN + " " + node;
    }

    /** {@code vgpu hook pause|resume}'s request. */
    public static String hookRequest(boolean pause) {
        return REQUEST_HOOK + " " + (pause ? HOOK_PAUSE : HOOK_RESUME);
    }

    /** The request for the state of migration {@code id}. */
    public static String migrationRequest(long id) {
        return REQUEST_MIGRATION + " " + id;
    }

    /** What an {@code ok} reply says, without its first word. */
    public static String text(String okReply) {
        return okReply.startsWith(REPLY_OK_WORD + " ") ? okReply.substring(REPLY_OK_WORD.length() + 1) : okReply;
    }

    /** The migration a {@code migrate} request started, named by its {@code ok} reply; empty when none started. */
    public static OptionalLong startedMigration(String okReply) {
        Matcher id = STARTED.matcher(okReply);
        return id.find() ? OptionalLong.of(Long.parseLong(id.group(1))) : OptionalLong.empty();
    }

    /** Whether the final fields of a migration ({@link #follow}) say that it moved its vGPU. */
    public static boolean moved(Map<String, String> fields) {
        return fields.getOrDefault(MOVE_KEY_STATE, "").equals(MOVE_OK);
    }

    /** Whether a migration in state {@code state} has ended. */
    public static boolean finished(String state) {
        return FINISHED.contains(state);
    }

    /**
     * Sends {@code request} and returns the tracker's reply line.
     *
     * @throws NetworkException when the tracker cannot be reached or answers {@code error} (REFUSED, its reason)
     * @throws AuthException when munge cannot make a credential
     */
    public static String request(Endpoint tracker, String request, Auth auth, Duration timeout) {
        String line = auth == Auth.MUNGE ? request + " " + CREDENTIAL_PREFIX + credential(request) : request;
        List<String> reply = LineClient.request(tracker, line, timeout);
        String last = reply.getLast();
        if (!last.startsWith(REPLY_OK_WORD)) {
            throw new NetworkException(
                    NetworkException.Code.REFUSED,
                    "the tracker at " + tracker + " refused: " + last.replaceFirst("^" + REPLY_ERROR_WORD + " ", ""));
        }
        return last;
    }

    /**
     * Follows migration {@code id} until it ends: prints each change of its state (on a terminal also a dot per poll
     * while it waits), then returns its final fields ({@code state}, {@code blocked_ms}, {@code bytes}, ...).
     *
     * @throws NetworkException when the tracker stops answering, forgets the migration, or it lasts beyond
     *         {@code limit}
     */
    public static Map<String, String> follow(
            Endpoint tracker, long id, PrintStream out, boolean terminal, Duration poll, Duration limit) {
        long deadline = System.nanoTime() + limit.toNanos();
        String shown = "";
        while (true) {
            Map<String, String> fields =
                    fields(request(tracker, migrationRequest(id), Auth.NONE, poll.plusSeconds(10)));
            String state = fields.getOrDefault(MOVE_KEY_STATE, "?");
            String what = fields.getOrDefault(MOVE_KEY_WHAT, "").replace('_', ' ');
            String now = state + ": " + what;
            boolean finished = finished(state);
            if (!now.equals(shown)) {
                // On a terminal the line stays open for the dots that follow; elsewhere each state is one line.
                out.print((terminal && !shown.isEmpty() ? "\n" : "") + "migration " + id + " " + now
                        + (terminal && !finished ? "" : "\n"));
                shown = now;
            } else if (terminal) {
                out.print('.');
                if (finished) {
                    out.print('\n');
                }
            }
            out.flush();
            if (finished) {
                return fields;
            }
            if (System.nanoTime() > deadline) {
                out.print(terminal ? "\n" : "");
                throw new NetworkException(
                        NetworkException.Code.UNREACHABLE,
                        "migration " + id + " did not end within " + limit.toSeconds() + " s; it goes on at the"
                                + " tracker: ask again with 'vgpu report'");
            }
            try {
                Thread.sleep(poll.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new NetworkException(
                        NetworkException.Code.UNREACHABLE, "interrupted while following migration " + id);
            }
        }
    }

    /** The {@code key=value} words of a reply line. */
    public static Map<String, String> fields(String line) {
        Map<String, String> fields = new TreeMap<>();
        for (String word : line.split(" ")) {
            int equals = word.indexOf('=');
            if (equals > 0) {
                fields.put(word.substring(0, equals), word.substring(equals + 1));
            }
        }
        return fields;
    }

    private static String credential(String payload) {
        Process munge;
        try {
            munge = new ProcessBuilder("munge", "-s", payload)
                    .redirectErrorStream(true)
                    .start();
        } catch (IOException e) {
            throw new AuthException(
                    "cannot run munge to sign the request (is MUNGE installed, munge on the PATH?): " + e.getMessage());
        }
        try (InputStream in = munge.getInputStream()) {
            String output = new String(in.readNBytes(64 * 1024), StandardCharsets.US_ASCII).strip();
            if (!munge.waitFor(MUNGE_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
                munge.destroyForcibly();
                throw new AuthException("munge did not answer within " + MUNGE_TIMEOUT.toSeconds() + " s");
            }
            if (munge.exitValue() != 0 || !output.startsWith("MUNGE:")) {
                throw new AuthException("munge could not sign the request: " + LineText.printable(output, 200));
            }
            return output;
        } catch (IOException e) {
            throw new AuthException("cannot read munge's credential: " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AuthException("interrupted while munge signed the request");
        }
    }
}
