package org.vgpu.tracker.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.vgpu.common.contract.BridgeContract.MOVE_KEY_BLOCKED_MS;
import static org.vgpu.common.contract.BridgeContract.MOVE_KEY_BYTES;
import static org.vgpu.common.contract.BridgeContract.MOVE_KEY_FROM;
import static org.vgpu.common.contract.BridgeContract.MOVE_KEY_ID;
import static org.vgpu.common.contract.BridgeContract.MOVE_KEY_STATE;
import static org.vgpu.common.contract.BridgeContract.MOVE_KEY_TO;
import static org.vgpu.common.contract.BridgeContract.MOVE_KEY_WHAT;
import static org.vgpu.common.contract.BridgeContract.REPLY_ERROR_WORD;
import static org.vgpu.common.contract.BridgeContract.REPLY_OK_WORD;
import static org.vgpu.common.contract.BridgeContract.REQUEST_DRAIN;
import static org.vgpu.common.contract.BridgeContract.REQUEST_HOOK;
import static org.vgpu.common.contract.BridgeContract.REQUEST_MIGRATE;
import static org.vgpu.common.contract.BridgeContract.REQUEST_MIGRATION;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;

import org.apache.commons.cli.ParseException;
import org.junit.jupiter.api.Test;

import org.vgpu.common.line.TrackerAdminClient;
import org.vgpu.tracker.Transcripts;

/**
 * The admin client against the golden admin transcripts (slurm-spank-bridge/contract/admin-transcripts.txt), which
 * the tracker's tests replay against the real protocol: {@code vgpu migrate}, {@code vgpu drain} and {@code vgpu hook}
 * send each request that their operands make exactly as the transcripts write it, and the client reads from the
 * replies whether the tracker accepted, which migration a migrate started, and that migration's state.
 */
class AdminClientTranscriptsTest {
    @Test
    void theClientFormatsEachRequestAndReadsEachReplyOfTheAdminTranscripts() {
        int formatted = 0;
        int followed = 0;
        Set<Long> started = new HashSet<>();
        Transcripts transcripts = Transcripts.read(Transcripts.ADMIN_FILE);
        for (List<Transcripts.Exchange> exchanges : transcripts.scenarios().values()) {
            for (Transcripts.Exchange exchange : exchanges) {
                String where = Transcripts.ADMIN_FILE + ":" + exchange.line();
                List<String> words = List.of(exchange.request().split(" "));
                Optional<String> sent = clientRequest(words);
                if (sent.isPresent()) {
                    assertEquals(exchange.request(), sent.get(), where);
                    formatted++;
                }
                String reply = exchange.replies().getLast();
                assertTrue(
                        reply.startsWith(REPLY_OK_WORD + " ") || reply.startsWith(REPLY_ERROR_WORD + " "),
                        where + ": an admin reply is ok or error with text");
                OptionalLong id = TrackerAdminClient.startedMigration(reply);
                if (id.isPresent()) {
                    assertEquals(REQUEST_MIGRATE, words.getFirst(), where + ": only a migrate starts one");
                    started.add(id.getAsLong());
                }
                if (words.getFirst().equals(REQUEST_MIGRATION) && reply.startsWith(REPLY_OK_WORD + " ")) {
                    Map<String, String> fields = TrackerAdminClient.fields(reply);
                    assertEquals(words.get(1), fields.get(MOVE_KEY_ID), where);
                    assertTrue(started.contains(Long.parseLong(words.get(1))), where + ": one a migrate started");
                    for (String key :
                            List.of(MOVE_KEY_FROM, MOVE_KEY_TO, MOVE_KEY_BLOCKED_MS, MOVE_KEY_BYTES, MOVE_KEY_WHAT)) {
                        assertTrue(fields.containsKey(key), where + ": " + key);
                    }
                    assertFalse(TrackerAdminClient.finished(fields.get(MOVE_KEY_STATE)), where + ": still claiming");
                    assertFalse(TrackerAdminClient.moved(fields), where);
                    followed++;
                }
            }
        }
        assertTrue(formatted >= 15, "requests the client formats: " + formatted);
        assertEquals(Set.of(1L), started);
        assertEquals(1, followed);
    }

    /** What {@code vgpu migrate}, {@code vgpu drain} or {@code vgpu hook} sends for these words, if it takes them. */
    private static Optional<String> clientRequest(List<String> words) {
        List<String> operands = words.subList(1, words.size());
        try {
            return switch (words.getFirst()) {
                case REQUEST_MIGRATE ->
                    operands.size() == 2 || operands.size() == 3
                            ? Optional.of(TrackerAdminClient.migrateRequest(operands))
                            : Optional.empty();
                case REQUEST_DRAIN -> Optional.of(new DrainCommand().request(operands));
                case REQUEST_HOOK -> Optional.of(new HookCommand().request(operands));
                case REQUEST_MIGRATION ->
                    operands.size() == 1 && operands.getFirst().matches("[0-9]+")
                            ? Optional.of(TrackerAdminClient.migrationRequest(Long.parseLong(operands.getFirst())))
                            : Optional.empty();
                default -> throw new AssertionError("not an admin request: " + words);
            };
        } catch (ParseException e) {
            // The command refuses these operands itself: it sends nothing.
            return Optional.empty();
        }
    }
}
