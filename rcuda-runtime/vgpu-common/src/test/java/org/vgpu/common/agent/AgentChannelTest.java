package org.vgpu.common.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import org.vgpu.common.agent.AgentChannel.Accepted;
import org.vgpu.common.agent.AgentChannel.Bye;
import org.vgpu.common.agent.AgentChannel.Credential;
import org.vgpu.common.agent.AgentChannel.Done;
import org.vgpu.common.agent.AgentChannel.Failed;
import org.vgpu.common.agent.AgentChannel.Idle;
import org.vgpu.common.agent.AgentChannel.LocalGpu;
import org.vgpu.common.agent.AgentChannel.Migrate;
import org.vgpu.common.agent.AgentChannel.ParseError;
import org.vgpu.common.agent.AgentChannel.Poll;
import org.vgpu.common.agent.AgentChannel.Refused;
import org.vgpu.common.agent.AgentChannel.RemoteTarget;
import org.vgpu.common.agent.AgentChannel.RemoteWorker;
import org.vgpu.common.agent.AgentChannel.Stat;
import org.vgpu.common.agent.AgentChannel.Succeeded;
import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.net.Endpoint;

class AgentChannelTest {
    private static final String TOKEN = "v1.AAAAAjQyAAAAAQ.c2lnbmF0dXJl-_";
    private static final String NONCE = "0123456789abcdef0123456789abcdef";
    private static final Credential CREDENTIAL = new Credential("42", 1, TOKEN);

    @Test
    void pollRoundTrips() {
        Poll poll = new Poll(
                CREDENTIAL,
                NONCE,
                List.of(
                        new Stat(0, new LocalGpu(3), 0, 0, 0, 1024),
                        new Stat(1, new RemoteWorker(new Endpoint("n2.cluster", 7100)), 12, 3456, 78, 9),
                        new Stat(2, new RemoteWorker(new Endpoint("::1", 7101)), 1, 2, 3, 4)));
        String line = poll.format();
        assertEquals(
                "agent poll 42 1 " + TOKEN + " " + NONCE + " v0=local:3,0,0,0,1024"
                        + " v1=remote:n2.cluster:7100,12,3456,78,9 v2=remote:[::1]:7101,1,2,3,4",
                line);
        assertEquals(poll, AgentChannel.parseRequest(line));
    }

    @Test
    void pollWithTheJobsExpectedEndRoundTrips() {
        Instant end = Instant.parse("2026-11-25T09:00:00Z");
        Poll poll = new Poll(CREDENTIAL, NONCE, Optional.of(end), List.of(new Stat(0, new LocalGpu(3), 0, 0, 0, 1)));
        String line = poll.format();
        assertEquals(
                "agent poll 42 1 " + TOKEN + " " + NONCE + " end=" + end.getEpochSecond() + " v0=local:3,0,0,0,1",
                line);
        Poll parsed = (Poll) AgentChannel.parseRequest(line);
        assertEquals(poll, parsed);
        assertEquals(Optional.of(end), parsed.expectedEnd());

        Poll hintOnly = new Poll(CREDENTIAL, NONCE, Optional.of(AgentChannel.END_MAX), List.of());
        assertEquals(hintOnly, AgentChannel.parseRequest(hintOnly.format()));
    }

    @Test
    void aPollWithoutAnEndMeansNoHint() {
        String oldAgentsPoll = "agent poll 42 1 " + TOKEN + " " + NONCE + " v0=local:3,0,0,0,1";
        assertEquals(Optional.empty(), ((Poll) AgentChannel.parseRequest(oldAgentsPoll)).expectedEnd());
    }

    @Test
    void pollWithoutStatsRoundTrips() {
        Poll poll = new Poll(CREDENTIAL, NONCE, List.of());
        assertEquals(poll, AgentChannel.parseRequest(poll.format()));
    }

    @Test
    void doneRoundTripsBothOutcomes() {
        Done ok = new Done(CREDENTIAL, 7, new Succeeded(120, 1 << 20));
        assertEquals("agent done 42 1 " + TOKEN + " 7 ok 120 1048576", ok.format());
        assertEquals(ok, AgentChannel.parseRequest(ok.format()));

        Done failed = new Done(CREDENTIAL, 8, new Failed("GPU 2 of node n1 is not granted: out of memory"));
        assertEquals(failed, AgentChannel.parseRequest(failed.format()));
    }

    @Test
    void byeRoundTrips() {
        Bye bye = new Bye(CREDENTIAL);
        assertEquals("agent bye 42 1 " + TOKEN, bye.format());
        assertEquals(bye, AgentChannel.parseRequest(bye.format()));
    }

    @Test
    void pollRepliesRoundTrip() {
        assertEquals("ok idle", new Idle().format());
        assertEquals(new Idle(), AgentChannel.parsePollReply("ok idle"));

        Migrate local = Migrate.signed(TOKEN, NONCE, 5, 1, new LocalGpu(2));
        assertTrue(local.format().startsWith("ok migrate 5 1 local:2 mac="));
        assertEquals(local, AgentChannel.parsePollReply(local.format()));

        Migrate remote = Migrate.signed(TOKEN, NONCE, 6, 1, new RemoteTarget(new Endpoint("n3", 7200), "v1.abc.def"));
        assertTrue(remote.format().startsWith("ok migrate 6 1 remote:n3:7200:v1.abc.def mac="));
        assertEquals(remote, AgentChannel.parsePollReply(remote.format()));

        Migrate ipv6 = Migrate.signed(TOKEN, NONCE, 9, 0, new RemoteTarget(new Endpoint("fe80::2", 1), "t"));
        assertEquals(ipv6, AgentChannel.parsePollReply(ipv6.format()));

        Refused refused = new Refused("job 42 has no borrowed vGPU 1");
        assertEquals(refused, AgentChannel.parsePollReply(refused.format()));
    }

    @Test
    void doneRepliesRoundTrip() {
        assertEquals(new Accepted(), AgentChannel.parseDoneReply("ok"));
        assertEquals(new Refused("unknown migration 7"), AgentChannel.parseDoneReply("error unknown migration 7"));
    }

    @Test
    void macVerifiesOnlyTheCommandItSigned() {
        Migrate command = Migrate.signed(TOKEN, NONCE, 5, 1, new LocalGpu(2));
        assertTrue(AgentChannel.verify(TOKEN, NONCE, command));

        assertFalse(AgentChannel.verify(TOKEN + "x", NONCE, command), "another token");
        assertFalse(AgentChannel.verify(TOKEN, "f" + NONCE.substring(1), command), "another poll's nonce");
        assertFalse(
                AgentChannel.verify(TOKEN, NONCE, new Migrate(6, 1, command.target(), command.mac())), "another id");
        assertFalse(
                AgentChannel.verify(TOKEN, NONCE, new Migrate(5, 0, command.target(), command.mac())), "another vGPU");
        assertFalse(
                AgentChannel.verify(TOKEN, NONCE, new Migrate(5, 1, new LocalGpu(3), command.mac())), "another target");
        String flipped =
                (command.mac().charAt(0) == '0' ? "1" : "0") + command.mac().substring(1);
        assertFalse(AgentChannel.verify(TOKEN, NONCE, new Migrate(5, 1, command.target(), flipped)), "a forged mac");
    }

    @Test
    void macIsHmacSha256OfTheDocumentedData() throws Exception {
        Mac hmac = Mac.getInstance("HmacSHA256");
        hmac.init(new SecretKeySpec(TOKEN.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
        String expected = HexFormat.of()
                .formatHex(hmac.doFinal((NONCE + " migrate 5 1 local:2").getBytes(StandardCharsets.UTF_8)));
        assertEquals(expected, AgentChannel.mac(TOKEN, NONCE, 5, 1, new LocalGpu(2)));
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "''|empty line",
                "agent|starts with 'agent poll'",
                "poll 42 1 tok 0123456789abcdef|starts with 'agent poll'",
                "agent ping 42 1 tok 0123456789abcdef|unknown agent request 'ping'",
                "agent poll 42 1 tok|usage: agent poll",
                "agent poll 042 1 tok 0123456789abcdef|the job must be a Slurm job id",
                "agent poll 0 1 tok 0123456789abcdef|the job must be a Slurm job id",
                "agent poll 4294967296 1 tok 0123456789abcdef|the job must be a Slurm job id",
                "agent poll x 1 tok 0123456789abcdef|the job must be a Slurm job id",
                "agent poll 42 64 tok 0123456789abcdef|the vGPU index must be in 0..63",
                "agent poll 42 -1 tok 0123456789abcdef|the vGPU index must be a decimal count",
                "agent poll 42 01 tok 0123456789abcdef|the vGPU index must be a decimal count",
                "agent poll 42 1 to,k 0123456789abcdef|a session token has only letters",
                "agent poll 42 1 tok 0123456789abcde|the nonce must be 16 to 64",
                "agent poll 42 1 tok 0123456789ABCDEF|the nonce must be 16 to 64",
                "agent poll 42 1 tok 0123456789abcdeg|the nonce must be 16 to 64",
                "agent poll 42 1 tok 0123456789abcdef x0=local:1,0,0,0,0|a stat is v<vgpu>",
                "agent poll 42 1 tok 0123456789abcdef v0local:1|a stat is v<vgpu>",
                "agent poll 42 1 tok 0123456789abcdef v99=local:1,0,0,0,0|the vGPU index must be in 0..63",
                "agent poll 42 1 tok 0123456789abcdef v0=local:1,0,0,0|has 4 comma-separated parts",
                "agent poll 42 1 tok 0123456789abcdef v0=gpu:1,0,0,0,0|local:<gpu> or remote:<host>:<port>",
                "agent poll 42 1 tok 0123456789abcdef v0=local:1024,0,0,0,0|the GPU index must be in 0..1023",
                "agent poll 42 1 tok 0123456789abcdef v0=remote:n2,0,0,0,0|a worker is <host>:<port>",
                "agent poll 42 1 tok 0123456789abcdef v0=remote:n2:0,0,0,0,0|the worker's port must be in 1..65535",
                "agent poll 42 1 tok 0123456789abcdef v0=remote:-n2:1,0,0,0,0|a worker host is",
                "agent poll 42 1 tok 0123456789abcdef v0=remote:n_2:1,0,0,0,0|a worker host is",
                "agent poll 42 1 tok 0123456789abcdef v0=remote:[zz]:1,0,0,0,0|must be an IPv6 address",
                "agent poll 42 1 tok 0123456789abcdef v0=local:1,x,0,0,0|calls must be a decimal count",
                "agent poll 42 1 tok 0123456789abcdef v0=local:1,0,-5,0,0|bytes must be a decimal count",
                "agent poll 42 1 tok 0123456789abcdef v0=local:1,0,0,99999999999999999999,0|remote-wait-ms must be",
                "agent poll 42 1 tok 0123456789abcdef v0=local:1,0,0,0,9223372036854775808|live-bytes 9223372036854775808"
                        + " is larger than",
                "agent poll 42 1 tok 0123456789abcdef v0=local:1,0,0,0,0 v0=local:2,0,0,0,0|vGPU 0 has two",
                "agent poll 42 1 tok 0123456789abcdef end=|the job's expected end (end=) must be a decimal count",
                "agent poll 42 1 tok 0123456789abcdef end=soon|the job's expected end (end=) must be a decimal count",
                "agent poll 42 1 tok 0123456789abcdef end=-5|the job's expected end (end=) must be a decimal count",
                "agent poll 42 1 tok 0123456789abcdef end=01|the job's expected end (end=) must be a decimal count",
                "agent poll 42 1 tok 0123456789abcdef end=1.5|the job's expected end (end=) must be a decimal count",
                "agent poll 42 1 tok 0123456789abcdef end=0|the job's expected end (end=, seconds since 1970) must be"
                        + " in 1..253402300799, got 0",
                "agent poll 42 1 tok 0123456789abcdef end=253402300800|must be in 1..253402300799, got 253402300800",
                "agent poll 42 1 tok 0123456789abcdef end=99999999999999999999|the job's expected end (end=) must be",
                "agent poll 42 1 tok 0123456789abcdef end=9223372036854775808|is larger than",
                "agent poll 42 1 tok 0123456789abcdef end=5 end=6|a stat is v<vgpu>",
                "agent poll 42 1 tok 0123456789abcdef v0=local:1,0,0,0,0 end=5|a stat is v<vgpu>",
                "agent poll 42  1 tok 0123456789abcdef|exactly one space",
                "'agent poll 42 1 tok 0123456789abcdef '|exactly one space",
                "' agent poll 42 1 tok 0123456789abcdef'|exactly one space",
                "agent done 42 1 tok 7|usage: agent done",
                "agent done 42 1 tok 7 ok 1|expected '... ok <blocked-ms> <bytes>'",
                "agent done 42 1 tok 7 ok 1 2 3|expected '... ok <blocked-ms> <bytes>'",
                "agent done 42 1 tok x ok 1 2|the migration id must be a decimal count",
                "agent done 42 1 tok 7 ok x 2|blocked-ms must be a decimal count",
                "agent done 42 1 tok 7 ok 1 2.5|bytes must be a decimal count",
                "agent done 42 1 tok 7 maybe 1 2|outcome is 'ok' or 'failed'",
                "agent done 42 1 tok 7 failed|needs a reason after 'failed'",
                "agent bye 42 1|usage: agent bye <job> <vgpu> <token>",
                "agent bye 42 1 tok extra|usage: agent bye <job> <vgpu> <token>",
                "agent bye 042 1 tok|the job must be a Slurm job id",
                "agent bye 42 64 tok|the vGPU index must be in 0..63",
                "agent bye 42 1 to,k|a session token has only letters",
            })
    void malformedRequestsAreRefusedNamingTheField(String line, String expected) {
        ParseError error = assertThrows(ParseError.class, () -> AgentChannel.parseRequest(line));
        assertTrue(
                error.getMessage().contains(expected),
                () -> "'" + error.getMessage() + "' should say '" + expected + "'");
        assertEquals("AGENT_CHANNEL_MALFORMED", error.codeName());
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "''|empty line",
                "ok|'ok idle', 'ok migrate ...'",
                "wait a while|'ok idle', 'ok migrate ...'",
                "ok busy|'ok idle' or 'ok migrate ...'",
                "ok idle now|expected 'ok idle'",
                "error|needs a reason",
                "ok migrate 5 1 local:2|expected 'ok migrate <id> <vgpu> <target> mac=<hex>'",
                "ok migrate x 1 local:2 mac=00|the migration id must be",
                "ok migrate 5 64 local:2 mac=00|the vGPU index must be in 0..63",
                "ok migrate 5 1 gpu:2 mac=00|a migration target is local:<gpu> or remote",
                "ok migrate 5 1 local:-2 mac=00|the GPU index must be a decimal count",
                "ok migrate 5 1 remote:n3:7200 mac=00|a worker is <host>:<port>",
                "ok migrate 5 1 remote:n3 mac=00|without a session token",
                "ok migrate 5 1 remote:n3:0:tok mac=00|the worker's port must be in 1..65535",
                "ok migrate 5 1 local:2 sig=00|ends with mac=<hex>",
                "ok migrate 5 1 local:2 mac=00|the mac must be 64 lowercase hex digits",
            })
    void malformedPollRepliesAreRefusedNamingTheField(String line, String expected) {
        ParseError error = assertThrows(ParseError.class, () -> AgentChannel.parsePollReply(line));
        assertTrue(
                error.getMessage().contains(expected),
                () -> "'" + error.getMessage() + "' should say '" + expected + "'");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "ok idle", "okay", "error", "ok "})
    void malformedDoneRepliesAreRefused(String line) {
        assertThrows(ParseError.class, () -> AgentChannel.parseDoneReply(line));
    }

    @Test
    void overlongLinesAreRefusedBeforeAnythingElse() {
        String request = "agent poll 42 1 tok " + NONCE + " " + "v0=local:1,0,0,0,0".repeat(300);
        ParseError error = assertThrows(ParseError.class, () -> AgentChannel.parseRequest(request));
        assertTrue(error.getMessage().contains("at most " + BridgeContract.REQUEST_LINE_BYTES), error.getMessage());

        String reply = "error " + "x".repeat(BridgeContract.REPLY_LINE_BYTES);
        assertThrows(ParseError.class, () -> AgentChannel.parsePollReply(reply));
        assertThrows(ParseError.class, () -> AgentChannel.parseDoneReply(reply));

        String overlongToken = "t".repeat(BridgeContract.TOKEN_BYTES + 1);
        ParseError tokenError = assertThrows(
                ParseError.class, () -> AgentChannel.parseRequest("agent poll 42 1 " + overlongToken + " " + NONCE));
        assertFalse(tokenError.getMessage().contains(overlongToken), "a token is never echoed");
    }

    @Test
    void nonPrintableCharactersAreRefused() {
        assertThrows(ParseError.class, () -> AgentChannel.parseRequest("agent poll 42 1 tok\t" + NONCE));
        assertThrows(ParseError.class, () -> AgentChannel.parsePollReply("error caf\u00e9"));
    }

    @Test
    void aPollKeepsTheStatsThatFitItsLine() {
        List<Stat> stats = new ArrayList<>();
        String longHost = "h".repeat(200);
        for (int k = 0; k < 40; k++) {
            stats.add(new Stat(k, new RemoteWorker(new Endpoint(longHost, 7000 + k)), 1, 2, 3, 4));
        }
        Credential credential = new Credential("42", 1, "t".repeat(BridgeContract.TOKEN_BYTES));
        assertThrows(IllegalArgumentException.class, () -> new Poll(credential, NONCE, stats));
        Poll poll = Poll.fitting(credential, NONCE, Optional.empty(), stats);
        assertTrue(poll.format().length() <= BridgeContract.REQUEST_LINE_BYTES);
        assertTrue(
                poll.stats().size() > 5 && poll.stats().size() < 40,
                () -> poll.stats().size() + " stats kept");
        assertEquals(stats.subList(0, poll.stats().size()), poll.stats());
        assertEquals(poll, AgentChannel.parseRequest(poll.format()));
    }

    @Test
    void aPollThatDropsStatsToFitKeepsItsHint() {
        List<Stat> stats = new ArrayList<>();
        for (int k = 0; k < 40; k++) {
            stats.add(new Stat(k, new RemoteWorker(new Endpoint("h".repeat(200), 7000 + k)), 1, 2, 3, 4));
        }
        Credential credential = new Credential("42", 1, "t".repeat(BridgeContract.TOKEN_BYTES));
        Optional<Instant> end = Optional.of(AgentChannel.END_MAX);
        Poll hinted = Poll.fitting(credential, NONCE, end, stats);
        assertTrue(hinted.format().length() <= BridgeContract.REQUEST_LINE_BYTES);
        assertEquals(end, hinted.expectedEnd());
        assertEquals(hinted, AgentChannel.parseRequest(hinted.format()));
        assertTrue(
                hinted.stats().size() > 5 && hinted.stats().size() < 40,
                () -> hinted.stats().size() + " kept");
        assertEquals(stats.subList(0, hinted.stats().size()), hinted.stats());
    }

    @Test
    void reasonsAreCleanedIntoOnePrintableLine() {
        Failed failed = Failed.because("  copy failed:\n  out of  memory\u00e9  ");
        assertEquals("copy failed: | out of memory?", failed.reason());
        assertEquals(failed, ((Done) AgentChannel.parseRequest(new Done(CREDENTIAL, 1, failed).format())).outcome());
        assertEquals("no reason given", Refused.because(" ").reason());
        assertEquals(
                AgentChannel.REASON_MAX_CHARS,
                Failed.because("y".repeat(5000)).reason().length());
        assertThrows(IllegalArgumentException.class, () -> new Failed("two  spaces"));
    }

    @Test
    void valuesOffTheGrammarCannotBeBuilt() {
        assertThrows(IllegalArgumentException.class, () -> new Credential("0", 1, TOKEN));
        assertThrows(IllegalArgumentException.class, () -> new Credential("42", 1, "has space"));
        assertThrows(IllegalArgumentException.class, () -> new LocalGpu(-1));
        assertThrows(IllegalArgumentException.class, () -> new RemoteWorker(new Endpoint("n2", 0)));
        assertThrows(IllegalArgumentException.class, () -> new Poll(CREDENTIAL, "short", List.of()));
        assertThrows(
                IllegalArgumentException.class,
                () -> new Poll(CREDENTIAL, NONCE, Optional.of(Instant.EPOCH), List.of()));
        assertThrows(
                IllegalArgumentException.class,
                () -> new Poll(CREDENTIAL, NONCE, Optional.of(AgentChannel.END_MAX.plusSeconds(1)), List.of()));
        assertThrows(
                IllegalArgumentException.class,
                () -> new Poll(CREDENTIAL, NONCE, Optional.of(Instant.parse("2026-11-25T09:00:00.5Z")), List.of()));
        assertThrows(IllegalArgumentException.class, () -> new Stat(0, new LocalGpu(1), -1, 0, 0, 0));
    }

    @Test
    void toStringNeverShowsATokenOrSessionToken() {
        assertFalse(CREDENTIAL.toString().contains(TOKEN));
        assertFalse(new RemoteTarget(new Endpoint("n3", 7200), TOKEN).toString().contains(TOKEN));
        assertInstanceOf(Poll.class, AgentChannel.parseRequest(new Poll(CREDENTIAL, NONCE, List.of()).format()));
    }
}
