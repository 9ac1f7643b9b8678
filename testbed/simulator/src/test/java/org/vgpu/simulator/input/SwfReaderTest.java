package org.vgpu.simulator.input;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalLong;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.simulator.workload.SimJob;
import org.vgpu.simulator.workload.WorkloadException;

class SwfReaderTest {
    // job submit wait run alloc cpu mem req-procs req-time req-mem status user group exe queue partition prec think
    private static final String LOG = """
            ; Version: 2.2
            ; Computer: a test cluster
            ; MaxProcs: 64
            1 100 20 3000 8 -1 -1 8 3600 -1 1 3 1 -1 1 1 -1 -1
            2 160 0 600 -1 -1 -1 16 -1 -1 1 4 1 -1 1 1 -1 -1
            3 200 -1 -1 4 -1 -1 4 600 -1 5 3 1 -1 1 1 -1 -1

            4 260 10 900.0 2 12.5 -1 -1 600 -1 0 -1 1 -1 1 1 -1 -1
            5 300 5 100 64 -1 -1 64 600 -1 1 3 1 -1 1 1 -1 -1
            """;

    @TempDir
    Path dir;

    @Test
    void readsJobsMappingProcessorsToGpus() throws Exception {
        Path file = dir.resolve("log.swf");
        Files.writeString(file, LOG);
        LoadedWorkload loaded = SwfReader.read(file, ClusterSpec.parse("4x4"), 4);
        List<SimJob> jobs = loaded.workload().jobs();
        assertEquals(List.of("1", "2", "4"), jobs.stream().map(SimJob::id).toList());
        SimJob first = jobs.getFirst();
        assertEquals(new SimJob("1", 0, 2, 8, 3600, 3000, "user3", first.workloadClass(), OptionalLong.of(20)), first);
        // no requested time: the run rounded up to a minute; requested processors where given, else allocated
        assertEquals(4, jobs.get(1).gpus());
        assertEquals(600, jobs.get(1).timeLimitSeconds());
        assertEquals(1, jobs.get(2).gpus());
        assertEquals(900, jobs.get(2).timeLimitSeconds(), "ran past its requested 600 s");
        assertEquals("", jobs.get(2).user());
        assertTrue(loaded.summary().contains("skipped 1 jobs cancelled before they ran (status 5, no run time)"));
        assertTrue(
                loaded.summary().contains("skipped 1 jobs " + NodeFit.TOO_BIG),
                loaded.summary().toString());
        assertTrue(loaded.summary()
                .contains("1 jobs had no requested time: their run rounded up to a whole minute taken as their limit"));
    }

    @Test
    void linesWithMissingOrMalformedFieldsAreEachReported() throws IOException {
        Path file = dir.resolve("bad.swf");
        Files.writeString(file, """
                ; header
                1 100 20 3000 8 -1 -1 8 3600 -1 1 3 1 -1 1 1 -1 -1
                2 160 0 600 -1 -1 -1 16 -1
                3 -1 0 -1 4 -1 -1 -1 600 -1 1 3 1 -1 1 1 -1 -1
                4 200 0 60 x -1 -1 4 600 -1 1 3 1 -1 1 1 -1 -1
                """);
        WorkloadException error =
                assertThrows(WorkloadException.class, () -> SwfReader.read(file, ClusterSpec.parse("4x4"), 1));
        assertEquals(
                List.of(
                        file + ":3: 9 fields; expected the 18 whitespace-separated fields of the Standard Workload"
                                + " Format, -1 for a missing one",
                        file + ":4: job 3 has no submit time (field 2), no run time (field 4); expected each of them"
                                + " >= 0 (processors >= 1)",
                        file + ":5: field 5 'x' is no number; expected a number, or -1 where the value is missing"),
                error.problems());
    }
}
