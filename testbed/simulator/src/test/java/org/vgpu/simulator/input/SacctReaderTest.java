package org.vgpu.simulator.input;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.function.Function;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.simulator.workload.SimJob;
import org.vgpu.simulator.workload.WorkloadException;

class SacctReaderTest {
    private static final String HEADER = "JobID|User|Account|Submit|Start|End|Timelimit|AllocTRES|NodeList|State";
    private static final String GOOD = "7|alice|physics|2026-11-30T10:00:00|2026-11-30T10:01:00|2026-11-30T10:11:00"
            + "|00:30:00|billing=1,cpu=4,gres/gpu=2,node=1|n1|COMPLETED";

    @TempDir
    Path dir;

    private static Path resource(String name) throws URISyntaxException {
        return Path.of(SacctReaderTest.class.getResource("/sacct/" + name).toURI());
    }

    @Test
    void readsTheTestbedsRealSacctOutputOfSlurm2205() throws Exception {
        LoadedWorkload loaded = SacctReader.read(resource("testbed-22.05.txt"), ClusterSpec.parse("3x4x8"));
        Map<String, SimJob> jobs =
                loaded.workload().jobs().stream().collect(Collectors.toMap(SimJob::id, Function.identity()));
        // 20 jobs (12 never became eligible in the window): 7 used no GPU, 20 was cancelled before it started, 21 still
        // ran when sacct ran
        assertEquals(17, jobs.size(), jobs.keySet().toString());
        assertTrue(
                loaded.summary().contains("skipped 1 jobs that used no GPU (no gres/gpu or gres/vgpu in AllocTRES)"),
                loaded.summary().toString());
        assertTrue(loaded.summary().contains("skipped 1 jobs that never started (Start Unknown or None)"));
        assertTrue(loaded.summary().contains("skipped 1 jobs that had not ended when sacct ran (End Unknown)"));
        assertTrue(loaded.summary().contains("1 jobs had an unlimited time limit, taken as 365 days"));
        // the batch steps of the 19 jobs that started, and job 5's two srun steps
        assertTrue(
                loaded.summary().contains("passed over 21 job steps (JobID with a dot)"),
                loaded.summary().toString());

        SimJob first = jobs.get("1");
        assertEquals(0, first.submitSecond());
        assertEquals(OptionalLong.of(1), first.recordedStartSecond());
        assertEquals(4, first.gpus());
        assertEquals(50, first.runSeconds());
        assertEquals(180, first.timeLimitSeconds());
        assertEquals(86_400, jobs.get("3").timeLimitSeconds());
        assertEquals(3, jobs.get("13").gpus(), "a vgpu job's GPUs are its gres/vgpu");
        assertEquals("nobody", jobs.get("15").user());
        assertEquals(60, jobs.get("11").runSeconds(), "the job that reached its 1-minute limit");
        assertEquals(365L * 86_400, jobs.get("4").timeLimitSeconds());
    }

    @Test
    void readsTheTestbedsRealSacctOutputOfSlurm2411() throws Exception {
        LoadedWorkload loaded = SacctReader.read(resource("testbed-24.11.txt"), ClusterSpec.parse("3x4x8"));
        Map<String, SimJob> jobs =
                loaded.workload().jobs().stream().collect(Collectors.toMap(SimJob::id, Function.identity()));
        // 15 jobs: 7 used no GPU, 13 was cancelled before it started, 15 still ran when sacct ran
        assertEquals(12, jobs.size(), jobs.keySet().toString());
        assertTrue(loaded.summary().contains("skipped 1 jobs that never started (Start Unknown or None)"));
        assertTrue(
                loaded.summary().contains("passed over 16 job steps (JobID with a dot)"),
                loaded.summary().toString());
        assertEquals(3, jobs.get("11").gpus(), "the vgpu job");
        assertEquals(OptionalLong.of(21), jobs.get("9").recordedStartSecond());
        assertEquals(55, jobs.get("14").runSeconds(), "the job cancelled while it ran");
    }

    @Test
    void everyMalformedLineIsReportedWithItsLine() throws IOException {
        Path file = dir.resolve("sacct.txt");
        Files.writeString(
                file,
                String.join(
                                "\n",
                                HEADER,
                                GOOD,
                                "8|bob|physics|2026-11-30T10:00:00|2026-11-30T10:01:00",
                                GOOD.replace("2026-11-30T10:01:00", "30/11/2026 10:01"),
                                GOOD.replace("00:30:00", "half an hour"),
                                GOOD.replace("gres/gpu=2", "gres/gpu=two"),
                                GOOD.replace("2026-11-30T10:11:00", "2026-11-30T09:00:00"))
                        + "\n");
        WorkloadException error =
                assertThrows(WorkloadException.class, () -> SacctReader.read(file, ClusterSpec.parse("2x4")));
        List<String> problems = error.problems();
        assertEquals(5, problems.size(), problems.toString());
        assertTrue(problems.get(0).startsWith(file + ":3: 5 fields; expected 10 separated by |"), problems.get(0));
        assertTrue(
                problems.get(1)
                        .startsWith(file + ":4: Start '30/11/2026 10:01' is no time stamp; expected a Slurm"
                                + " time stamp YYYY-MM-DDTHH:MM:SS"),
                problems.get(1));
        assertTrue(
                problems.get(2)
                        .startsWith(file + ":5: Timelimit 'half an hour' is no Slurm time limit; expected"
                                + " [days-]hours:minutes:seconds"),
                problems.get(2));
        assertTrue(
                problems.get(3).startsWith(file + ":6: AllocTRES entry 'gres/gpu=two' has no whole count"),
                problems.get(3));
        assertTrue(problems.get(4).startsWith(file + ":7: Submit, Start and End are out of order"), problems.get(4));
    }

    @Test
    void aFileWithoutSacctsHeaderIsRefusedAtLineOne() throws IOException {
        Path file = dir.resolve("noheader.txt");
        Files.writeString(file, GOOD + "\n");
        WorkloadException error =
                assertThrows(WorkloadException.class, () -> SacctReader.read(file, ClusterSpec.parse("2x4")));
        assertTrue(error.problems().getFirst().startsWith(file + ":1: '7|alice|"), error.getMessage());
        assertTrue(error.getMessage().contains("without -n"), error.getMessage());
    }

    @Test
    void aFileOfNoGpuJobIsRefusedRatherThanSimulatedEmpty() throws IOException {
        Path file = dir.resolve("cpu.txt");
        Files.writeString(file, HEADER + "\n" + GOOD.replace(",gres/gpu=2", "") + "\n");
        WorkloadException error =
                assertThrows(WorkloadException.class, () -> SacctReader.read(file, ClusterSpec.parse("2x4")));
        assertEquals(
                List.of(file + ": no job that ran on GPUs is left to simulate; expected sacct lines of jobs with"
                        + " gres/gpu or gres/vgpu in AllocTRES, a Start and an End"),
                error.problems());
    }

    @Test
    void jobsThatSpanNodesOrFitNoNodeAreCountedAndLeftOut() throws Exception {
        Path file = dir.resolve("big.txt");
        Files.writeString(
                file,
                String.join(
                        "\n",
                        HEADER,
                        GOOD,
                        GOOD.replace("7|", "8|").replace("node=1", "node=2"),
                        GOOD.replace("7|", "9|").replace("gres/gpu=2", "gres/gpu=8"),
                        GOOD.replace("7|", "10|").replace("00:30:00", "00:05:00")));
        LoadedWorkload loaded = SacctReader.read(file, ClusterSpec.parse("2x4"));
        assertEquals(
                List.of("7", "10"),
                loaded.workload().jobs().stream().map(SimJob::id).toList());
        assertTrue(loaded.summary()
                .contains("skipped 1 jobs that spanned nodes (the simulator places a job on one"
                        + " node, as vgpu jobs are)"));
        assertTrue(loaded.summary().contains("skipped 1 jobs " + NodeFit.TOO_BIG));
        assertTrue(loaded.summary()
                .contains(
                        "1 jobs ran past their time limit (OverTimeLimit, KillWait): their run taken as their limit"));
        assertEquals(600, loaded.workload().jobs().getLast().timeLimitSeconds());
    }

    private static final String WITH_COMMENT = HEADER + "|Comment";

    /** A job of user alice, submitted at 10:00:00 plus {@code submit} seconds, with the AllocTRES and Comment given. */
    private static String line(String id, int submit, String tres, String comment) {
        return id + "|alice|physics|2026-11-30T10:00:0" + submit + "|2026-11-30T10:00:09|2026-11-30T10:01:00"
                + "|00:05:00|billing=1,cpu=1," + tres + ",node=1|n2|COMPLETED|" + comment;
    }

    @Test
    void holdersAreKnownByTheirCommentAndAVgpuJobsGpusAreItsVgpus() throws Exception {
        Path file = dir.resolve("borrowing.txt");
        Files.writeString(
                file,
                String.join(
                                "\n",
                                WITH_COMMENT,
                                line("4", 0, "gres/gpu=2,gres/vgpu=4", "vgpu: assembled on n2: 2 local GPU(s)"),
                                line(
                                        "6",
                                        1,
                                        "gres/gpu=1",
                                        "vgpu holder: a GPU of n1 lent to job 4 as its vGPU 2 (user alice, account"
                                                + " physics)"),
                                line(
                                        "8",
                                        1,
                                        "gres/gpu=1",
                                        "vgpu holder: a GPU of n3 lent to job 4 as its vGPU 3 (user alice, account"
                                                + " physics)"),
                                line(
                                        "9",
                                        2,
                                        "gres/gpu=1",
                                        "vgpu grant: a GPU of n2 granted to job 4 for its vGPU 2 (user alice)"),
                                line("10", 3, "gres/gpu=1,gres/vgpu=1", ""),
                                line("11", 4, "gres/gpu=3", "a user's own comment"))
                        + "\n");
        LoadedWorkload asRan = SacctReader.read(file, ClusterSpec.parse("3x4x4"), SacctReader.Borrowers.VGPU_JOBS);
        Map<String, SimJob> jobs =
                asRan.workload().jobs().stream().collect(Collectors.toMap(SimJob::id, Function.identity()));
        assertEquals(List.of("10", "11", "4"), jobs.keySet().stream().sorted().toList(), "the holders are no jobs");
        assertEquals(4, jobs.get("4").gpus(), "gres/vgpu=4, of which gres/gpu=2 local: 4 GPUs, not 6");
        assertEquals(1, jobs.get("10").gpus());
        assertEquals(3, jobs.get("11").gpus());
        assertTrue(jobs.get("4").mayBorrow());
        assertTrue(jobs.get("10").mayBorrow());
        assertFalse(jobs.get("11").mayBorrow(), "a plain gres/gpu job borrows nothing as the history ran");
        assertTrue(
                asRan.summary()
                        .contains("passed over 2 holder jobs of 1 vgpu jobs and 1 grant holders (Comment 'vgpu holder:"
                                + " ...', 'vgpu grant: ...'): GPUs the tracker kept for vgpu jobs, counted in those"
                                + " jobs' own"),
                asRan.summary().toString());
        assertTrue(asRan.summary()
                .contains("2 of the kept jobs asked vgpu (gres/vgpu); the borrowing policies borrow"
                        + " for those alone (--borrowers vgpu-jobs)"));

        LoadedWorkload whatIf = SacctReader.read(file, ClusterSpec.parse("3x4x4"));
        assertTrue(whatIf.workload().jobs().stream().allMatch(SimJob::mayBorrow), "every job may borrow by default");
    }

    @Test
    void aGarbledHoldersCommentAndMoreLocalGpusThanVgpusAreReportedWithTheirLines() throws IOException {
        Path file = dir.resolve("garbled.txt");
        Files.writeString(
                file,
                String.join(
                                "\n",
                                WITH_COMMENT,
                                line("4", 0, "gres/gpu=2,gres/vgpu=4", ""),
                                line("6", 1, "gres/gpu=1", "vgpu holder: a GPU of n1 lent to job 4"),
                                line("7", 1, "gres/gpu=3,gres/vgpu=2", ""))
                        + "\n");
        WorkloadException error =
                assertThrows(WorkloadException.class, () -> SacctReader.read(file, ClusterSpec.parse("3x4x4")));
        List<String> problems = error.problems();
        assertEquals(2, problems.size(), problems.toString());
        assertTrue(
                problems.get(0)
                        .startsWith(file + ":3: Comment 'vgpu holder: a GPU of n1 lent to job 4' begins as a vgpu"
                                + " holder's; expected 'vgpu holder: a GPU of NODE lent to job JOB as its vGPU K"),
                problems.get(0));
        assertTrue(
                problems.get(1)
                        .startsWith(file + ":4: AllocTRES has gres/gpu=3 beside gres/vgpu=2; expected a vgpu job's"
                                + " gres/gpu"),
                problems.get(1));
    }
}
