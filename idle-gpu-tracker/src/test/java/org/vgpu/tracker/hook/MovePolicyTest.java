package org.vgpu.tracker.hook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import org.vgpu.siteconfig.MigrationPolicy;
import org.vgpu.tracker.hook.MovePolicy.Candidate;
import org.vgpu.tracker.hook.MovePolicy.Counters;
import org.vgpu.tracker.hook.MovePolicy.Decision;
import org.vgpu.tracker.hook.MovePolicy.Situation;

class MovePolicyTest {
    private static final Instant NOW = Instant.parse("2026-11-25T04:00:00Z");
    private static final long GB = 1_000_000_000L;
    /** 10 GB/s, 1 s replay, 5 min cooldown and end guard: the defaults. */
    private static final MovePolicy POLICY = new MovePolicy(MigrationPolicy.defaults());

    /** A job that has run 100 s of a 1 h limit. */
    private static Situation situation(List<Integer> free, boolean migrating, Candidate... candidates) {
        return new Situation(
                NOW,
                Duration.ofSeconds(100),
                Optional.of(Duration.ofHours(1)),
                Optional.empty(),
                free,
                migrating,
                List.of(candidates));
    }

    private static Candidate measured(int vgpu, long remoteWaitMillis, long liveBytes) {
        return new Candidate(vgpu, Optional.of(new Counters(remoteWaitMillis, liveBytes)), Optional.empty());
    }

    @Test
    void aVgpuWaitingOnItsRemoteMovesToTheLowestFreeGpu() {
        // 10 s waited in 100 s: 0.1 s per s, over 3500 s left = 350 s saved; 20 GB at 10 GB/s + 1 s = 3 s.
        Decision decision = POLICY.decide(situation(List.of(3, 2), false, measured(1, 10_000, 20 * GB)));

        Decision.Move move = assertInstanceOf(Decision.Move.class, decision);
        assertEquals(1, move.vgpu());
        assertEquals(2, move.gpu());
        assertEquals(350.0, move.benefitSeconds(), 1e-9);
        assertEquals(3.0, move.costSeconds(), 1e-9);
        assertEquals(
                "vGPU 1 moves home to GPU 2: saves 350.0 s (100.0 ms remote wait per s over 3500 s left), costs 3.0 s"
                        + " (20000000000 live bytes)",
                move.reason());
    }

    @Test
    void aMoveThatCostsMoreThanItSavesDoesNotHappen() {
        // 0.1 ms waited in 100 s over 3500 s left = 3.5 ms saved; 1 s replay alone costs more.
        Decision decision = POLICY.decide(situation(List.of(0), false, measured(1, 0, 0), measured(2, 10, 1)));

        assertEquals(
                "vGPU 1: the move does not pay: saves 0.0 s (0.0 ms remote wait per s over 3500 s left), costs 1.0 s"
                        + " (0 live bytes); vGPU 2: the move does not pay: saves 0.4 s (0.1 ms remote wait per s over"
                        + " 3500 s left), costs 1.0 s (1 live bytes)",
                assertInstanceOf(Decision.Stay.class, decision).reason());
    }

    @Test
    void benefitEqualToCostIsNotEnough() {
        // 1 s replay; benefit = 3500 s × w / 100 s = 1 s at w = 28.571..; pick bytes so cost = benefit exactly.
        MovePolicy noReplay = new MovePolicy(
                new MigrationPolicy(true, Duration.ofMinutes(5), Duration.ofMinutes(5), 1000, Duration.ZERO));
        // 2 ms in 100 s over 3500 s = 0.07 s; 70 bytes at 1000 B/s = 0.07 s.
        assertInstanceOf(Decision.Stay.class, noReplay.decide(situation(List.of(0), false, measured(1, 2, 70))));
        assertInstanceOf(Decision.Move.class, noReplay.decide(situation(List.of(0), false, measured(1, 2, 69))));
    }

    @Test
    void theLargestNetGainMovesFirstAndTiesGoToTheLowestVgpu() {
        Decision bigger = POLICY.decide(
                situation(List.of(0), false, measured(1, 10_000, 0), measured(2, 20_000, 0), measured(3, 20_000, 0)));
        assertEquals(2, assertInstanceOf(Decision.Move.class, bigger).vgpu());

        Decision tie = POLICY.decide(situation(List.of(0), false, measured(3, 10_000, 0), measured(2, 10_000, 0)));
        assertEquals(2, assertInstanceOf(Decision.Move.class, tie).vgpu());
    }

    @Test
    void aVgpuWithoutAReportDoesNotMove() {
        Decision decision = POLICY.decide(
                situation(List.of(0), false, new Candidate(1, Optional.empty(), Optional.empty()), measured(2, 10, 0)));

        assertTrue(
                assertInstanceOf(Decision.Stay.class, decision)
                        .reason()
                        .startsWith("vGPU 1: its agent has not reported yet; vGPU 2: the move does not pay"),
                decision.reason());
    }

    @Test
    void aVgpuMovedWithinTheCooldownStaysAndMayMoveAfterIt() {
        Candidate recent = new Candidate(
                1,
                Optional.of(new Counters(10_000, 0)),
                Optional.of(NOW.minus(Duration.ofMinutes(5)).plusMillis(1)));
        assertEquals(
                "vGPU 1: moved less than migration_cooldown (300 s) ago",
                POLICY.decide(situation(List.of(0), false, recent)).reason());

        Candidate cooled =
                new Candidate(1, Optional.of(new Counters(10_000, 0)), Optional.of(NOW.minus(Duration.ofMinutes(5))));
        assertInstanceOf(Decision.Move.class, POLICY.decide(situation(List.of(0), false, cooled)));
    }

    @Test
    void nothingMovesInTheLastMinutesOfTheTimeLimit() {
        Situation late = new Situation(
                NOW,
                Duration.ofMinutes(56),
                Optional.of(Duration.ofHours(1)),
                Optional.empty(),
                List.of(0),
                false,
                List.of(measured(1, 3_000_000, 0)));
        assertEquals(
                "less than migration_end_guard (300 s) of the job's time limit is left (240 s)",
                POLICY.decide(late).reason());

        Situation past = new Situation(
                NOW,
                Duration.ofMinutes(70),
                Optional.of(Duration.ofHours(1)),
                Optional.empty(),
                List.of(0),
                false,
                List.of(measured(1, 3_000_000, 0)));
        assertEquals(
                "less than migration_end_guard (300 s) of the job's time limit is left (0 s)",
                POLICY.decide(past).reason());
    }

    @Test
    void aJobWithoutATimeLimitCountsOneDayLeft() {
        // 1 ms waited in 100 s (1e-5) over 86400 s = 0.864 s < 1 s; 2 ms gives 1.728 s > 1 s.
        assertInstanceOf(Decision.Stay.class, POLICY.decide(unlimited(measured(1, 1, 0))));
        assertInstanceOf(Decision.Move.class, POLICY.decide(unlimited(measured(1, 2, 0))));
    }

    /** A job that has run 100 s, without a time limit or a hint, GPU 0 free beside it. */
    private static Situation unlimited(Candidate candidate) {
        return new Situation(
                NOW,
                Duration.ofSeconds(100),
                Optional.empty(),
                Optional.empty(),
                List.of(0),
                false,
                List.of(candidate));
    }

    /** A job that has run 100 s of {@code limit}, with the user's hint of its end {@code hintIn} from now. */
    private static Situation hinted(Optional<Duration> limit, Duration hintIn, Candidate candidate) {
        return new Situation(
                NOW,
                Duration.ofSeconds(100),
                limit,
                Optional.of(NOW.plus(hintIn)),
                List.of(0),
                false,
                List.of(candidate));
    }

    @Test
    void aHintedEndBeforeTheTimeLimitStopsAMoveTheLimitAloneWouldMake() {
        // 0.5 s waited in 100 s: 5 ms per s; 20 GB at 10 GB/s + 1 s = 3 s. Over the limit's 3500 s it saves 17.5 s,
        // over the hint's 400 s only 2 s.
        Candidate waiting = measured(1, 500, 20 * GB);
        assertInstanceOf(Decision.Move.class, POLICY.decide(situation(List.of(0), false, waiting)));

        Decision decision = POLICY.decide(hinted(Optional.of(Duration.ofHours(1)), Duration.ofSeconds(400), waiting));
        assertEquals(
                "vGPU 1: the move does not pay: saves 2.0 s (5.0 ms remote wait per s over 400 s left: hinted end in 6"
                        + " min), costs 3.0 s (20000000000 live bytes)",
                assertInstanceOf(Decision.Stay.class, decision).reason());
    }

    @Test
    void aHintedEndAfterTheTimeLimitLeavesTheLimitToCountAndTheTextSaysSo() {
        Decision decision = POLICY.decide(
                hinted(Optional.of(Duration.ofHours(1)), Duration.ofHours(2), measured(1, 10_000, 20 * GB)));

        Decision.Move move = assertInstanceOf(Decision.Move.class, decision);
        assertEquals(350.0, move.benefitSeconds(), 1e-9);
        assertEquals(
                "vGPU 1 moves home to GPU 0: saves 350.0 s (100.0 ms remote wait per s over 3500 s left: time limit in"
                        + " 58 min), costs 3.0 s (20000000000 live bytes)",
                move.reason());
    }

    @Test
    void nothingMovesInTheLastMinutesBeforeTheHintedEnd() {
        Candidate paying = measured(1, 3_000_000, 0);
        assertEquals(
                "less than migration_end_guard (300 s) is left before the job's hinted end (240 s)",
                POLICY.decide(hinted(Optional.of(Duration.ofHours(1)), Duration.ofMinutes(4), paying))
                        .reason());
        assertEquals(
                "less than migration_end_guard (300 s) is left before the job's hinted end (0 s)",
                POLICY.decide(hinted(Optional.empty(), Duration.ofMinutes(-10), paying))
                        .reason());
        assertInstanceOf(
                Decision.Move.class,
                POLICY.decide(hinted(Optional.of(Duration.ofHours(1)), Duration.ofMinutes(5), paying)),
                "exactly the end guard left is enough");
    }

    @Test
    void aJobWithoutATimeLimitCountsItsHintedEndInsteadOfOneDay() {
        // 2 ms waited in 100 s (2e-5): over one day 1.728 s > 1 s moves; over a hinted 2 h, 0.144 s does not.
        Candidate waiting = measured(1, 2, 0);
        assertInstanceOf(Decision.Move.class, POLICY.decide(unlimited(waiting)));

        Decision decision = POLICY.decide(hinted(Optional.empty(), Duration.ofHours(2), waiting));
        assertEquals(
                "vGPU 1: the move does not pay: saves 0.1 s (0.0 ms remote wait per s over 7200 s left: hinted end in 2"
                        + " h), costs 1.0 s (0 live bytes)",
                assertInstanceOf(Decision.Stay.class, decision).reason());

        // 100 ms in 100 s over a hinted 3 d 4 h pays.
        Decision.Move move = assertInstanceOf(
                Decision.Move.class,
                POLICY.decide(hinted(Optional.empty(), Duration.ofHours(76).plusMinutes(30), measured(1, 100, 0))));
        assertTrue(move.reason().contains("over 275400 s left: hinted end in 3 d 4 h"), move.reason());
    }

    @Test
    void timesLeftReadAsAPersonSaysThem() {
        assertEquals("0 s", MovePolicy.humanly(Duration.ofSeconds(-3)));
        assertEquals("59 s", MovePolicy.humanly(Duration.ofSeconds(59)));
        assertEquals("1 min", MovePolicy.humanly(Duration.ofSeconds(119)));
        assertEquals("59 min", MovePolicy.humanly(Duration.ofMinutes(59).plusSeconds(59)));
        assertEquals("1 h", MovePolicy.humanly(Duration.ofHours(1)));
        assertEquals("2 h 5 min", MovePolicy.humanly(Duration.ofMinutes(125)));
        assertEquals("1 d", MovePolicy.humanly(Duration.ofDays(1)));
        assertEquals("3 d 4 h", MovePolicy.humanly(Duration.ofHours(76).plusMinutes(30)));
    }

    @Test
    void jobLevelReasonsComeBeforeAnyVgpu() {
        Candidate paying = measured(1, 10_000, 0);
        assertEquals(
                "a migration of this job is in progress",
                POLICY.decide(situation(List.of(0), true, paying)).reason());
        assertEquals(
                "no free GPU on the job's node",
                POLICY.decide(situation(List.of(), false, paying)).reason());
        assertEquals(
                "no borrowed vGPU", POLICY.decide(situation(List.of(0), false)).reason());
        assertEquals(
                "the job has not run long enough to measure its remote penalty",
                POLICY.decide(new Situation(
                                NOW,
                                Duration.ZERO,
                                Optional.empty(),
                                Optional.empty(),
                                List.of(0),
                                false,
                                List.of(paying)))
                        .reason());
        MovePolicy off = new MovePolicy(new MigrationPolicy(
                false, Duration.ofMinutes(5), Duration.ofMinutes(5), 10 * GB, Duration.ofSeconds(1)));
        assertEquals(
                "migrate_home is off",
                off.decide(situation(List.of(0), false, paying)).reason());
    }

    /**
     * Every combination of free GPUs, counters and last migrations of three vGPUs: a move always
     * names a free GPU (the lowest) and a vGPU that has counters, is past its cooldown and pays
     * more than every other such vGPU; the decision does not depend on the candidates' order.
     */
    @Test
    void exhaustively() {
        List<Optional<Counters>> counters = List.of(
                Optional.empty(),
                Optional.of(new Counters(0, 0)),
                Optional.of(new Counters(10_000, 40 * GB)),
                Optional.of(new Counters(10_000, 0)),
                Optional.of(new Counters(500, 10 * GB)));
        List<Optional<Instant>> lasts =
                List.of(Optional.empty(), Optional.of(NOW.minusSeconds(10)), Optional.of(NOW.minusSeconds(3600)));
        List<List<Integer>> frees = List.of(List.of(), List.of(1), List.of(3, 0, 2));
        int moves = 0;
        for (List<Integer> free : frees) {
            List<Candidate> all = new ArrayList<>();
            for (Optional<Counters> a : counters) {
                for (Optional<Instant> last : lasts) {
                    all.add(new Candidate(all.size() % 3 + 1, a, last));
                }
            }
            for (int i = 0; i + 2 < all.size(); i += 1) {
                List<Candidate> three =
                        List.of(withVgpu(all.get(i), 1), withVgpu(all.get(i + 1), 2), withVgpu(all.get(i + 2), 3));
                Decision decision = POLICY.decide(situation(free, false, three.toArray(Candidate[]::new)));
                Decision reversed =
                        POLICY.decide(situation(free, false, three.reversed().toArray(Candidate[]::new)));
                if (decision instanceof Decision.Move move) {
                    moves++;
                    assertEquals(free.stream().mapToInt(Integer::intValue).min().orElseThrow(), move.gpu());
                    Candidate moved = three.get(move.vgpu() - 1);
                    assertTrue(moved.counters().isPresent());
                    assertTrue(moved.lastMigration().isEmpty()
                            || moved.lastMigration().get().isBefore(NOW.minusSeconds(299)));
                    assertTrue(move.benefitSeconds() > move.costSeconds());
                    assertEquals(move, reversed, "order of candidates must not matter");
                } else {
                    assertInstanceOf(Decision.Stay.class, reversed);
                }
            }
        }
        assertTrue(moves > 10, "the grid must contain moves, got " + moves);
    }

    private static Candidate withVgpu(Candidate candidate, int vgpu) {
        return new Candidate(vgpu, candidate.counters(), candidate.lastMigration());
    }
}
