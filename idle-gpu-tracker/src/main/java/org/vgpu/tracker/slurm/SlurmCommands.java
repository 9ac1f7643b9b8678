package org.vgpu.tracker.slurm;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.tracker.process.BoundedCommand;
import org.vgpu.tracker.process.BoundedCommand.Result;

/**
 * {@link SlurmControl} through Slurm's client commands ({@code scontrol}, {@code sbatch},
 * {@code scancel}), found on the PATH and pointed at the cluster by the environment
 * ({@code SLURM_CONF}). Each call has a time limit: while slurmctld is down they would block for
 * minutes. The tracker runs as root (or SlurmUser): releasing held jobs and changing another
 * user's job needs it.
 *
 * <p>A holder job is the borrowing job's user's ({@code sbatch --uid --gid}, which only root may give), charged to
 * the borrowing job's account ({@code --account}), so that sacct, sreport, fairshare, {@code MaxTRESPerUser} and an
 * account's {@code GrpTRES=gres/gpu} count a borrowed GPU where it is used; its comment names the borrowing job, user
 * and account. The lend partition must admit the user's group for that (Slurm checks a partition against the job's
 * user, not its submitter); where it admits root alone (a lend partition rendered before holders ran as their
 * borrower), the holder is submitted again as the tracker's user, and the log says so. A site that keeps holders the
 * tracker's ({@code [cluster] holders_as_borrower = off}) gets that at once: the holder is charged to the borrower's
 * account under the tracker's user, whose association with that account Slurm requires where it enforces
 * associations; without one, the holder is charged to the tracker user's default account, and the log says which
 * association to add.
 *
 * <p>The holder's script goes to sbatch on its standard input: it holds the key of its lend, which a command line
 * would show every user of the tracker's host.
 */
public final class SlurmCommands implements SlurmControl {
    private static final Logger LOG = LoggerFactory.getLogger(SlurmCommands.class);
    private static final Pattern JOB_ID = Pattern.compile("(\\d+)(;.*)?");
    /** What scontrol says for a job id it no longer remembers; not a failure for a lookup or a cancel. */
    private static final Pattern UNKNOWN_JOB = Pattern.compile("(?i)invalid job id|job id .* not found|does not exist");
    /**
     * The memory a holder job asks for (sbatch {@code --mem}), in MiB. Under {@code ConstrainRAMSpace=yes} Slurm ends a
     * job that uses more. Confined to 512 MiB, a holder's worker (a JVM, its heap sized from the limit) used at most
     * 87 MiB of its own while it moved 256 MiB to its vGPU and back (docs/admin/accounting.md, "What a holder uses");
     * a grant holder only sleeps. The rest is room for what the CUDA driver keeps in host memory for the worker's
     * context on a real GPU, whose own memory does not count.
     */
    private static final int HOLDER_MEMORY_MIB = 512;
    /** What sbatch says when the lend partition does not admit the job's user (22.05 and 24.11 alike). */
    private static final Pattern PARTITION_REFUSES_USER = Pattern.compile("(?i)not permitted to use this partition");
    /** What sbatch says for an account the submitting user has no association with. */
    private static final Pattern INVALID_ACCOUNT = Pattern.compile("(?i)invalid account");

    private final CommandRunner runner;
    private final String lendPartition;
    private final Optional<String> lendQos;
    private final boolean holdersAsBorrower;
    private final HolderOutput holderOutput;
    /** Chosen at the first read: {@link #reader()}. */
    private ScontrolReader reader;
    /** Why the last reader was chosen, as logged. */
    private String lastChoice = "";

    /**
     * @param holdersAsBorrower whether holders are submitted as the borrowing job's user ({@code [cluster]
     *     holders_as_borrower}); else as the tracker's
     * @param holderOutput      where holder jobs write
     */
    public SlurmCommands(
            Duration timeout,
            String lendPartition,
            Optional<String> lendQos,
            boolean holdersAsBorrower,
            HolderOutput holderOutput) {
        this(
                (command, stdin) -> BoundedCommand.run(command, stdin, timeout),
                lendPartition,
                lendQos,
                holdersAsBorrower,
                holderOutput);
    }

    /** @param runner runs each of Slurm's commands (tests answer in Slurm's place) */
    SlurmCommands(
            CommandRunner runner,
            String lendPartition,
            Optional<String> lendQos,
            boolean holdersAsBorrower,
            HolderOutput holderOutput) {
        this.runner = runner;
        this.lendPartition = lendPartition;
        this.lendQos = lendQos;
        this.holdersAsBorrower = holdersAsBorrower;
        this.holderOutput = holderOutput;
    }

    @Override
    public HolderOutput holderOutput() {
        return holderOutput;
    }

    @Override
    public SlurmInventory inventory() {
        ScontrolReader reader = reader();
        try {
            String nodes = run(reader.showNodesCommand()).stdout();
            String jobs = run(reader.showJobsCommand(Optional.empty())).stdout();
            return new SlurmInventory(reader.nodes(nodes), reader.jobs(jobs));
        } catch (SlurmException e) {
            if (e.code() != SlurmException.Code.UNREACHABLE) {
                forgetReader();
            }
            throw e;
        }
    }

    @Override
    public Optional<SlurmJob> job(long id) {
        ScontrolReader reader = reader();
        Result result =
                runAllowingFailure(reader.showJobsCommand(Optional.of(id)).toArray(String[]::new));
        if (result.exitCode() != 0) {
            if (UNKNOWN_JOB.matcher(result.stderr()).find()) {
                return Optional.empty();
            }
            throw failed(result);
        }
        // The JSON of a job Slurm no longer knows is a document without jobs (exit status 0).
        return reader.jobs(result.stdout()).stream()
                .filter(job -> job.id() == id)
                .findFirst();
    }

    /**
     * The form of scontrol's output read from this Slurm, chosen at the first use by its version, and again after a
     * read it refused or scontrol failed: a Slurm upgraded under a running tracker may no longer offer the
     * data_parser version chosen.
     */
    private synchronized ScontrolReader reader() {
        if (reader == null) {
            ScontrolReaders.Choice choice =
                    ScontrolReaders.choose(run("scontrol", "--version").stdout(), () -> {
                        // Both streams, whatever the exit status: the list is what counts.
                        Result list = runAllowingFailure("scontrol", "--json=list");
                        return list.stdout() + "\n" + list.stderr();
                    });
            // Said once, and again only when it changes: a slurmctld that is down makes every poll choose anew.
            if (!choice.reason().equals(lastChoice)) {
                if (choice.fallback()) {
                    LOG.warn("{}", choice.reason());
                } else {
                    LOG.info("{}", choice.reason());
                }
                lastChoice = choice.reason();
            }
            reader = choice.reader();
        }
        return reader;
    }

    private synchronized void forgetReader() {
        reader = null;
    }

    @Override
    public boolean partitionExists(String partition) {
        Result result = runAllowingFailure("scontrol", "show", "partition", partition);
        return result.exitCode() == 0 && result.stdout().contains("PartitionName=" + partition);
    }

    @Override
    public long submitHolder(String node, long forJob, int vgpu, String script) {
        Borrower borrower = borrower(forJob);
        return submitLendJob(
                node,
                HOLDER_NAME_PREFIX + forJob + "-v" + vgpu,
                new LendJobComment(LendJobComment.Kind.HOLDER, node, forJob, vgpu, borrower.describe()).text(),
                borrower,
                script);
    }

    @Override
    public long submitGrant(String node, long forJob, int vgpu) {
        Borrower borrower = borrower(forJob);
        // The grant holder keeps the GPU in Slurm's books; job forJob's own process drives it.
        return submitLendJob(
                node,
                GRANT_NAME_PREFIX + forJob + "-v" + vgpu,
                new LendJobComment(LendJobComment.Kind.GRANT, node, forJob, vgpu, borrower.describe()).text(),
                borrower,
                "exec sleep infinity");
    }

    private Borrower borrower(long job) {
        Result result = runAllowingFailure("scontrol", "show", "job", Long.toString(job));
        if (result.exitCode() != 0) {
            throw failed(result);
        }
        return Borrower.fromScontrol(job, result.stdout());
    }

    @Override
    public Optional<JobTime> jobTime(long id) {
        Result result = runAllowingFailure("scontrol", "show", "job", Long.toString(id));
        if (result.exitCode() != 0) {
            if (UNKNOWN_JOB.matcher(result.stderr()).find()) {
                return Optional.empty();
            }
            throw failed(result);
        }
        String source = "scontrol show job " + id;
        return ScontrolRecords.parse(source, result.stdout()).stream()
                .findFirst()
                .map(job -> JobTime.parse(source, job.require("RunTime"), job.require("TimeLimit")));
    }

    private long submitLendJob(String node, String name, String comment, Borrower borrower, String script) {
        String batchScript = "#!/bin/sh\n" + script + "\n";
        Optional<String> account = borrower.account().map(charged -> "--account=" + charged);
        if (holdersAsBorrower) {
            List<String> asBorrower = new ArrayList<>(List.of("--uid=" + borrower.uid(), "--gid=" + borrower.gid()));
            account.ifPresent(asBorrower::add);
            Result owned = runWithInput(lendJobCommand(node, name, comment, asBorrower), batchScript);
            if (owned.exitCode() == 0) {
                return holderId(owned);
            }
            if (!PARTITION_REFUSES_USER.matcher(owned.stderr()).find()) {
                throw failed(owned);
            }
            LOG.warn(
                    "{} is submitted as the tracker's user, not as {} of the borrowing job: the lend partition {}"
                            + " admits root only ({}); render slurm.conf's lend partition anew"
                            + " (holders_as_borrower = on opens it to users, vgpu_job_submit.lua keeps them out)",
                    name,
                    borrower.user(),
                    lendPartition,
                    firstLine(owned.stderr()));
        }
        if (account.isPresent()) {
            Result charged = runWithInput(lendJobCommand(node, name, comment, List.of(account.get())), batchScript);
            if (charged.exitCode() == 0) {
                return holderId(charged);
            }
            if (!INVALID_ACCOUNT.matcher(charged.stderr()).find()) {
                throw failed(charged);
            }
            LOG.warn(
                    "{} is charged to the tracker user's default account, not to account {} of the borrowing job:"
                            + " Slurm refused that account for the tracker's user ({}); to charge it, give the"
                            + " tracker's user an association with it (sacctmgr add user root account={})",
                    name,
                    borrower.account().get(),
                    firstLine(charged.stderr()),
                    borrower.account().get());
        }
        Result submitted = runWithInput(lendJobCommand(node, name, comment, List.of()), batchScript);
        if (submitted.exitCode() != 0) {
            throw failed(submitted);
        }
        return holderId(submitted);
    }

    /** Runs {@code command} with {@code stdin} on its standard input (sbatch: the holder's script). */
    private Result runWithInput(List<String> command, String stdin) {
        LOG.debug("running {}", command);
        try {
            return runner.run(command, stdin);
        } catch (BoundedCommand.Failure e) {
            throw SlurmException.unreachable(
                    e.getMessage() + " (are Slurm's client commands on the PATH, is slurmctld up?)", e);
        }
    }

    /** @param whose the options that say whose the holder is and whom it charges */
    private List<String> lendJobCommand(String node, String name, String comment, List<String> whose) {
        List<String> command = new ArrayList<>(List.of(
                "sbatch",
                "--parsable",
                "--partition=" + lendPartition,
                "--nodelist=" + node,
                "--nodes=1",
                "--ntasks=1",
                "--cpus-per-task=1",
                "--mem=" + HOLDER_MEMORY_MIB + "M",
                "--gres=gpu:1",
                "--job-name=" + name,
                "--output=" + holderOutput.pattern(),
                "--comment=" + comment));
        command.addAll(whose);
        lendQos.ifPresent(qos -> command.add("--qos=" + qos));
        return command;
    }

    private static long holderId(Result submitted) {
        String out = submitted.stdout().strip();
        var matcher = JOB_ID.matcher(out);
        if (!matcher.matches()) {
            throw SlurmException.badOutput("sbatch", "'" + out + "' instead of the holder's job id");
        }
        return Long.parseLong(matcher.group(1));
    }

    @Override
    public void cancel(Collection<Long> jobs) {
        if (jobs.isEmpty()) {
            return;
        }
        List<String> command = new ArrayList<>(List.of("scancel"));
        jobs.forEach(job -> command.add(Long.toString(job)));
        Result result = runAllowingFailure(command.toArray(String[]::new));
        if (result.exitCode() != 0 && !UNKNOWN_JOB.matcher(result.stderr()).find()) {
            throw failed(result);
        }
    }

    @Override
    public void pin(long job, String node, int localGpus, int vgpus) {
        String gres = localGpus > 0 ? "gpu:" + localGpus + ",vgpu:" + vgpus : "vgpu:" + vgpus;
        run("scontrol", "update", "JobId=" + job, "Gres=" + gres, "NodeList=" + node);
    }

    @Override
    public void release(long job) {
        run("scontrol", "release", Long.toString(job));
    }

    @Override
    public void comment(long job, String text) {
        run("scontrol", "update", "JobId=" + job, "Comment=" + text);
    }

    private Result run(List<String> command) {
        return run(command.toArray(String[]::new));
    }

    private Result run(String... command) {
        Result result = runAllowingFailure(command);
        if (result.exitCode() != 0) {
            throw failed(result);
        }
        return result;
    }

    private static SlurmException failed(Result result) {
        return SlurmException.commandFailed("'" + result.commandLine() + "' failed with exit code " + result.exitCode()
                + ": " + firstLine(result.stderr().isBlank() ? result.stdout() : result.stderr()));
    }

    private Result runAllowingFailure(String... command) {
        return runWithInput(List.of(command), "");
    }

    /** Runs one of Slurm's client commands, {@code stdin} its input, to its end or its time limit. */
    @FunctionalInterface
    interface CommandRunner {
        Result run(List<String> command, String stdin) throws BoundedCommand.Failure;
    }

    private static String firstLine(String text) {
        String stripped = text.strip();
        int newline = stripped.indexOf('\n');
        return newline < 0 ? stripped : stripped.substring(0, newline);
    }
}
