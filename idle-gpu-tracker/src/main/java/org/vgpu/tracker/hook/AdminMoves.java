package org.vgpu.tracker.hook;

import static org.vgpu.common.contract.BridgeContract.MOVE_STARTED_WORD;
import static org.vgpu.common.contract.BridgeContract.REQUEST_MIGRATION;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.tracker.ledger.Assembly;
import org.vgpu.tracker.ledger.Ledger;
import org.vgpu.tracker.ledger.Lend;
import org.vgpu.tracker.ledger.Migration;
import org.vgpu.tracker.slurm.SlurmInventory;
import org.vgpu.tracker.slurm.SlurmNode;

/**
 * The moves that admins and cancelled holders ask for, whatever the cost model says: {@code vgpu migrate},
 * {@code vgpu drain}, the evacuation of a vGPU whose holder is being cancelled, and {@code vgpu hook pause|resume},
 * which stops the hook's own moves only. Each checks what it can before the {@link MoveMachine} starts the move, and
 * answers why not otherwise. Not thread-safe: the tracker calls it under its lock.
 */
final class AdminMoves {
    // The hook's log, as admins know it: its parts write under one name.
    private static final Logger LOG = LoggerFactory.getLogger(MigrationHook.class);

    private final Ledger ledger;
    private final MigrationHook.Lenders lenders;
    private final AgentReports reports;
    private final MoveMachine machine;
    private boolean paused;

    AdminMoves(Ledger ledger, MigrationHook.Lenders lenders, AgentReports reports, MoveMachine machine) {
        this.ledger = Objects.requireNonNull(ledger, "ledger");
        this.lenders = Objects.requireNonNull(lenders, "lenders");
        this.reports = Objects.requireNonNull(reports, "reports");
        this.machine = Objects.requireNonNull(machine, "machine");
    }

    boolean paused() {
        return paused;
    }

    /** See {@link MigrationHook#pause}. */
    MigrationHook.Reply pause(boolean pause, String who) {
        boolean was = paused;
        paused = pause;
        LOG.info("hook {} by {}", pause ? "paused" : "resumed", who);
        return MigrationHook.Reply.ok(
                (pause ? "hook paused" : "hook running") + (was == pause ? " (it was already)" : ""));
    }

    /** See {@link MigrationHook#migrate}. */
    MigrationHook.Reply migrate(
            long job, int vgpu, Optional<String> targetNode, SlurmInventory inventory, Instant now, String who) {
        Optional<Assembly> assembly = ledger.assembly(job);
        if (assembly.isEmpty() || assembly.get().phase() != Assembly.Phase.RELEASED) {
            return MigrationHook.Reply.refused("job " + job + " has no running vGPU assembly at this tracker");
        }
        Optional<Lend> lend = assembly.get().lend(vgpu);
        if (lend.isEmpty()) {
            return MigrationHook.Reply.refused("vGPU " + vgpu + " of job " + job + " is not borrowed (job " + job
                    + " borrows "
                    + assembly.get().lends().stream()
                            .filter(l -> !l.home())
                            .map(Lend::vgpu)
                            .toList() + ")");
        }
        if (lend.get().home()) {
            return MigrationHook.Reply.refused("vGPU " + vgpu + " of job " + job + " runs on GPU "
                    + lend.get().gpu().getAsInt() + " of its own node "
                    + assembly.get().node() + " already");
        }
        Optional<Migration> under = ledger.migrations().stream()
                .filter(migration -> migration.job() == job)
                .findFirst();
        if (under.isPresent()) {
            return MigrationHook.Reply.refused("job " + job + " has migration "
                    + under.get().id() + " (vGPU " + under.get().vgpu() + ") under way; one at a time");
        }
        Optional<String> gone = reports.agentGone(job, vgpu);
        if (gone.isPresent()) {
            return MigrationHook.Reply.refused(
                    gone.get() + "; nothing was started, vGPU " + vgpu + " stays where it is");
        }
        String node = assembly.get().node();
        if (targetNode.isPresent() && !targetNode.get().equals(node)) {
            String lender = targetNode.get();
            if (lender.equals(lend.get().node())) {
                return MigrationHook.Reply.refused(
                        "vGPU " + vgpu + " of job " + job + " is served from " + lender + " already");
            }
            if (!canLend(inventory, lender)) {
                return MigrationHook.Reply.refused("node " + lender + " cannot lend a GPU now (not in the lend"
                        + " partition, or no free GPU and CPU)");
            }
            long id = machine.start(assembly.get(), vgpu, lender, true, now, "admin", "asked by " + who);
            return MigrationHook.Reply.ok(started(id) + "vGPU " + vgpu + " of job " + job + " moves from "
                    + lend.get().node() + " to " + lender);
        }
        if (FreeGpus.on(inventory, node).isEmpty()) {
            return MigrationHook.Reply.refused(
                    "node " + node + " has no free GPU for vGPU " + vgpu + " of job " + job + " now");
        }
        long id = machine.start(assembly.get(), vgpu, node, false, now, "admin", "asked by " + who);
        return MigrationHook.Reply.ok(started(id) + "vGPU " + vgpu + " of job " + job + " moves home to " + node);
    }

    /** See {@link MigrationHook#drain}. */
    MigrationHook.Reply drain(String node, SlurmInventory inventory, Instant now, String who) {
        List<String> started = new ArrayList<>();
        List<String> staying = new ArrayList<>();
        for (Assembly assembly : ledger.assemblies()) {
            for (Lend lend : assembly.lends()) {
                if (lend.home() || !lend.node().equals(node) || assembly.phase() != Assembly.Phase.RELEASED) {
                    continue;
                }
                MigrationHook.Reply reply =
                        moveAway(assembly, lend, inventory, now, who + " (drain " + node + ")", started.size());
                (reply.ok() ? started : staying)
                        .add("job " + assembly.job() + " vGPU " + lend.vgpu() + ": " + reply.text());
            }
        }
        if (started.isEmpty() && staying.isEmpty()) {
            // a misspelt node would otherwise look drained
            if (inventory.nodes().stream().noneMatch(known -> known.name().equals(node))) {
                return MigrationHook.Reply.refused("Slurm has no node " + node + ": nothing to drain");
            }
            return MigrationHook.Reply.ok("node " + node + " serves no borrowed vGPU");
        }
        List<String> all = new ArrayList<>(started);
        all.addAll(staying);
        String summary = started.size() + " moving, " + staying.size() + " staying: " + String.join("; ", all);
        return started.isEmpty()
                ? MigrationHook.Reply.refused("nothing moves off " + node + ": " + summary)
                : MigrationHook.Reply.ok(summary);
    }

    /** See {@link MigrationHook#evacuate}. */
    MigrationHook.Reply evacuate(long job, int vgpu, long holder, SlurmInventory inventory, Instant now) {
        Optional<Assembly> assembly = ledger.assembly(job);
        Optional<Lend> lend = assembly.flatMap(current -> current.lend(vgpu));
        if (assembly.isEmpty() || lend.isEmpty()) {
            return MigrationHook.Reply.refused("job " + job + " has no borrowed vGPU " + vgpu);
        }
        Optional<Migration> under = ledger.migrations().stream()
                .filter(migration -> migration.job() == job && migration.vgpu() == vgpu)
                .findFirst();
        if (under.isPresent()) {
            machine.evacuating(under.get().id());
            return MigrationHook.Reply.ok(
                    "migration " + under.get().id() + " of vGPU " + vgpu + " of job " + job + " is under way already");
        }
        MigrationHook.Reply reply =
                moveAway(assembly.get(), lend.get(), inventory, now, "the cancel of holder " + holder, 0);
        if (reply.ok()) {
            ledger.migrations().stream()
                    .filter(migration -> migration.job() == job && migration.vgpu() == vgpu)
                    .forEach(migration -> machine.evacuating(migration.id()));
        } else {
            boolean noLender = FreeGpus.on(inventory, assembly.get().node()).isEmpty();
            machine.lose(new MigrationHook.Lost(
                    job,
                    vgpu,
                    "its holder " + holder + " is being cancelled and it cannot be evacuated: " + reply.text()
                            + (noLender ? ", and no other node can lend a GPU" : "")));
        }
        return reply;
    }

    /** The start of the reply to a move started, which {@code vgpu migrate} reads the migration's id from. */
    private static String started(long id) {
        return REQUEST_MIGRATION + " " + id + " " + MOVE_STARTED_WORD + ": ";
    }

    /** Moves {@code lend} off its lender: home when the job's node has a free GPU, else to the nearest other lender. */
    private MigrationHook.Reply moveAway(
            Assembly assembly, Lend lend, SlurmInventory inventory, Instant now, String who, int takenLenders) {
        Optional<String> target = FreeGpus.on(inventory, assembly.node()).isEmpty()
                ? nearestLender(inventory, assembly.node(), lend.node(), takenLenders)
                : Optional.empty();
        return migrate(assembly.job(), lend.vgpu(), target, inventory, now, who);
    }

    /** Whether {@code node} can run a holder now: in the lend partition, a free GPU and a free CPU. */
    private boolean canLend(SlurmInventory inventory, String node) {
        Optional<SlurmNode> view = inventory.node(node);
        return view.isPresent()
                && view.get().partitions().contains(lenders.partition())
                && view.get().idleCpus() > 0
                && !FreeGpus.on(inventory, node).isEmpty();
    }

    /**
     * The lender nearest to {@code jobNode} (site distances, then name) other than {@code draining} that can lend,
     * skipping the first {@code taken} such (GPUs this drain claimed already).
     */
    private Optional<String> nearestLender(SlurmInventory inventory, String jobNode, String draining, int taken) {
        return inventory.nodes().stream()
                .map(SlurmNode::name)
                .filter(name -> !name.equals(jobNode) && !name.equals(draining))
                .filter(name -> canLend(inventory, name))
                .sorted(Comparator.comparingInt((String name) -> lenders.distance(jobNode, name))
                        .thenComparing(Comparator.naturalOrder()))
                .skip(taken)
                .findFirst();
    }
}
