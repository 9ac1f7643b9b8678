package org.vgpu.tracker.slurm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import org.vgpu.tracker.process.BoundedCommand.Result;

/**
 * The sbatch command lines of holder jobs: whose they are (the borrower's, or the tracker's where the site keeps them
 * so), whom they charge, what their comment says, and their script on sbatch's input.
 */
class SlurmCommandsTest {
    private static final String OUTPUT = "/var/log/vgpu/holders/%j.out";
    private static final String INVALID_ACCOUNT =
            "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified";

    /** Slurm's answers: scontrol show job from a capture, sbatch's from a list, one per call; every command kept. */
    private static final class FakeSlurm {
        private final String showJob;
        private final List<Result> sbatchAnswers;
        private final List<List<String>> commands = new ArrayList<>();
        private final List<String> sbatchInputs = new ArrayList<>();
        private final boolean holdersAsBorrower;

        /** A tracker that keeps holders its own ({@code holders_as_borrower = off}). */
        FakeSlurm(String showJob, Result... sbatchAnswers) {
            this(false, showJob, sbatchAnswers);
        }

        FakeSlurm(boolean holdersAsBorrower, String showJob, Result... sbatchAnswers) {
            this.holdersAsBorrower = holdersAsBorrower;
            this.showJob = showJob;
            this.sbatchAnswers = new ArrayList<>(List.of(sbatchAnswers));
        }

        Result run(List<String> command, String stdin) {
            commands.add(command);
            if (command.getFirst().equals("sbatch")) {
                sbatchInputs.add(stdin);
            }
            return switch (command.getFirst()) {
                case "scontrol" -> new Result(command, 0, showJob, "");
                case "sbatch" -> {
                    Result answer = sbatchAnswers.removeFirst();
                    yield new Result(command, answer.exitCode(), answer.stdout(), answer.stderr());
                }
                default -> throw new AssertionError("unexpected command " + command);
            };
        }

        List<List<String>> sbatchCommands() {
            return commands.stream()
                    .filter(command -> command.getFirst().equals("sbatch"))
                    .toList();
        }

        SlurmCommands slurm() {
            return new SlurmCommands(
                    this::run, "vgpu-lend", Optional.empty(), holdersAsBorrower, new HolderOutput(OUTPUT));
        }
    }

    private static Result answer(int exitCode, String stdout, String stderr) {
        return new Result(List.of(), exitCode, stdout, stderr);
    }

    private static String capture(String path) throws IOException {
        try (InputStream in = SlurmCommandsTest.class.getResourceAsStream(path)) {
            if (in == null) {
                throw new IOException("no test resource " + path);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    /** scontrol show job of job 1, which user nobody runs under account physics (Slurm 24.11 with accounting). */
    private static String nobodysJob() throws IOException {
        return capture("slurm-24.11/accounting/scontrol-show-job.txt");
    }

    private static List<String> optionsNamed(List<String> command, String... prefixes) {
        return command.stream()
                .filter(word -> List.of(prefixes).stream().anyMatch(word::startsWith))
                .toList();
    }

    @Test
    void aHolderRunsAsTheTrackersUserChargedToTheBorrowersAccountWithACommentNamingTheBorrower() throws IOException {
        FakeSlurm fake = new FakeSlurm(nobodysJob(), answer(0, "42\n", ""));

        long holder = fake.slurm().submitHolder("n2", 1, 1, "exec vgpu worker");

        assertEquals(42, holder);
        List<String> sbatch = fake.sbatchCommands().getFirst();
        assertEquals(
                List.of(
                        "sbatch",
                        "--parsable",
                        "--partition=vgpu-lend",
                        "--nodelist=n2",
                        "--nodes=1",
                        "--ntasks=1",
                        "--cpus-per-task=1",
                        "--mem=512M",
                        "--gres=gpu:1",
                        "--job-name=vgpu-holder-1-v1",
                        "--output=" + OUTPUT,
                        "--comment=vgpu holder: a GPU of n2 lent to job 1 as its vGPU 1 (user nobody, account physics)",
                        "--account=physics"),
                sbatch);
        // The script, which holds the lend's key, goes on sbatch's input, never on its command line.
        assertEquals(List.of("#!/bin/sh\nexec vgpu worker\n"), fake.sbatchInputs);
        assertEquals(List.of(), optionsNamed(sbatch, "--uid", "--gid"));
        assertEquals(1, fake.sbatchCommands().size());
    }

    @Test
    void aGrantHolderSleepsChargedToTheBorrowersAccount() throws IOException {
        FakeSlurm fake = new FakeSlurm(nobodysJob(), answer(0, "43;vgpu-testbed\n", ""));

        long holder = fake.slurm().submitGrant("n1", 1, 2);

        assertEquals(43, holder);
        List<String> sbatch = fake.sbatchCommands().getFirst();
        assertEquals(
                List.of(
                        "--job-name=vgpu-grant-1-v2",
                        "--comment=vgpu grant: a GPU of n1 granted to job 1 for its vGPU 2 (user nobody, account physics)",
                        "--account=physics"),
                optionsNamed(sbatch, "--job-name", "--comment", "--account"));
        assertEquals(List.of("#!/bin/sh\nexec sleep infinity\n"), fake.sbatchInputs);
        assertEquals(List.of(), optionsNamed(sbatch, "--uid", "--gid"));
    }

    @Test
    void aHolderAsTheBorrowerIsTheBorrowingUsersChargedToItsAccount() throws IOException {
        FakeSlurm fake = new FakeSlurm(true, nobodysJob(), answer(0, "42\n", ""), answer(0, "43\n", ""));

        assertEquals(42, fake.slurm().submitHolder("n2", 1, 1, "exec vgpu worker"));
        fake.slurm().submitGrant("n1", 1, 2);

        for (List<String> sbatch : fake.sbatchCommands()) {
            assertEquals(
                    List.of("--uid=65534", "--gid=65534", "--account=physics"),
                    optionsNamed(sbatch, "--uid", "--gid", "--account"));
            assertEquals(List.of("--partition=vgpu-lend"), optionsNamed(sbatch, "--partition"));
        }
        assertEquals(List.of("#!/bin/sh\nexec vgpu worker\n", "#!/bin/sh\nexec sleep infinity\n"), fake.sbatchInputs);
    }

    @Test
    void aLendPartitionThatAdmitsRootAloneGetsTheHolderAsTheTrackersUser() throws IOException {
        FakeSlurm fake = new FakeSlurm(
                true,
                nobodysJob(),
                answer(
                        1,
                        "",
                        "sbatch: error: Batch job submission failed: User's group not permitted to use this partition"),
                answer(0, "46\n", ""));

        assertEquals(46, fake.slurm().submitHolder("n2", 1, 1, "exec vgpu worker"));

        List<List<String>> sbatch = fake.sbatchCommands();
        assertEquals(2, sbatch.size());
        assertEquals(List.of("--uid=65534", "--gid=65534"), optionsNamed(sbatch.get(0), "--uid", "--gid"));
        assertEquals(List.of("--account=physics"), optionsNamed(sbatch.get(1), "--uid", "--gid", "--account"));
    }

    @Test
    void anotherRefusalOfTheBorrowersHolderIsAFailureAndNothingIsSubmittedAsRoot() throws IOException {
        FakeSlurm fake = new FakeSlurm(
                true,
                nobodysJob(),
                answer(1, "", "sbatch: error: Batch job submission failed: Invalid account or account/partition"));

        assertThrows(SlurmException.class, () -> fake.slurm().submitHolder("n2", 1, 1, "exec vgpu worker"));
        assertEquals(1, fake.sbatchCommands().size());
    }

    @Test
    void anAccountRefusedToTheTrackersUserIsLeftOutOnceAndTheHolderSubmittedAgain() throws IOException {
        FakeSlurm fake = new FakeSlurm(nobodysJob(), answer(1, "", INVALID_ACCOUNT), answer(0, "44\n", ""));

        long holder = fake.slurm().submitHolder("n3", 1, 2, "exec vgpu worker");

        assertEquals(44, holder);
        List<List<String>> sbatch = fake.sbatchCommands();
        assertEquals(2, sbatch.size());
        assertEquals(List.of("--account=physics"), optionsNamed(sbatch.get(0), "--account"));
        assertEquals(List.of(), optionsNamed(sbatch.get(1), "--account"));
        assertEquals(
                optionsNamed(sbatch.get(0), "--comment", "--job-name"),
                optionsNamed(sbatch.get(1), "--comment", "--job-name"));
    }

    @Test
    void anyOtherRefusalOfTheHolderIsAFailureWithSbatchsReasonAndNoSecondSubmission() throws IOException {
        FakeSlurm fake = new FakeSlurm(
                nobodysJob(),
                answer(
                        1,
                        "",
                        "sbatch: error: Batch job submission failed: Requested node configuration is not available"));

        SlurmException e =
                assertThrows(SlurmException.class, () -> fake.slurm().submitHolder("n2", 1, 1, "exec vgpu worker"));

        assertTrue(e.getMessage().contains("Requested node configuration is not available"), e.getMessage());
        assertEquals(1, fake.sbatchCommands().size());
    }

    @Test
    void aBorrowerWithoutAnAccountGetsNoAccountOption() throws IOException {
        // Slurm 22.05 without accounting: job 2, root's, Account=(null).
        FakeSlurm fake = new FakeSlurm(capture("assembled/scontrol-show-job-d.txt"), answer(0, "45\n", ""));

        fake.slurm().submitHolder("n2", 2, 1, "exec vgpu worker");

        List<String> sbatch = fake.sbatchCommands().getFirst();
        assertEquals(List.of(), optionsNamed(sbatch, "--account"));
        assertEquals(
                List.of("--comment=vgpu holder: a GPU of n2 lent to job 2 as its vGPU 1 (user root)"),
                optionsNamed(sbatch, "--comment"));
    }
}
