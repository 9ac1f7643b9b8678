package org.vgpu.tracker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.line.BoundedLineReader;
import org.vgpu.common.security.SiteKey;
import org.vgpu.common.security.ThrowawaySiteKey;
import org.vgpu.siteconfig.SiteConfig;
import org.vgpu.tracker.ledger.Ledger;
import org.vgpu.tracker.server.TrackerProtocol;

/**
 * The tracker's end of the migration agent's channel against its golden transcripts (vgpu-common's
 * contract/agent-channel/transcripts.txt, which vgpu-common's codec tests replay too): the real protocol, on a tracker
 * without assemblies, answers every request of the scenario "nothing" word for word.
 */
class AgentChannelTranscriptTest {
    static final Path FILE =
            Path.of("..", "rcuda-runtime", "vgpu-common", "contract", "agent-channel", "transcripts.txt");

    @TempDir
    Path dir;

    @Test
    void aTrackerWithoutAssembliesAnswersTheMigrationAgentsRequestsWordForWord() throws Exception {
        InMemorySlurm slurm = new InMemorySlurm();
        try (ThrowawaySiteKey key = ThrowawaySiteKey.create("agent-channel-transcripts");
                Ledger ledger = Ledger.open(dir.resolve("tracker.ledger"))) {
            SiteConfig site = TestCluster.configure(dir, key, slurm, "", "[slurm]\njob_partition = gpu\n");
            Tracker tracker = new Tracker(
                    site,
                    slurm,
                    ledger,
                    SiteKey.load(key.keyFile()),
                    Tracker.Settings.defaults(),
                    Clock.fixed(Instant.parse("2026-11-21T12:00:00Z"), ZoneOffset.UTC));
            TrackerProtocol protocol = new TrackerProtocol(
                    tracker, () -> {}, BridgeContract.REQUEST_LINE_BYTES, Optional.empty(), Set.of());
            List<Transcripts.Exchange> exchanges =
                    Transcripts.read(FILE).scenarios().get("nothing");
            assertFalse(exchanges.isEmpty());
            for (Transcripts.Exchange exchange : exchanges) {
                List<String> replies =
                        protocol.answer(new BoundedLineReader.Line(exchange.request(), false), "127.0.0.1");
                assertEquals(
                        exchange.replies(), replies, FILE + ":" + exchange.line() + " '" + exchange.request() + "'");
            }
        }
    }
}
