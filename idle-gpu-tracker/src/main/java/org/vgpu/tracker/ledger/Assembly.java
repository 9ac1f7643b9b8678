package org.vgpu.tracker.ledger;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The GPUs of one vgpu job: its first {@code localGpus} vGPUs are GPUs of its own node
 * {@code node} (Slurm allocates them to the job itself), the others are {@code lends}.
 *
 * @param phase    {@link Phase#SECURING} until every lend has a running holder and the job is
 *                 released; {@link Phase#RELEASED} after
 * @param released when the tracker released the job; empty while securing
 */
public record Assembly(
        long job,
        String user,
        String node,
        int vgpus,
        int localGpus,
        Phase phase,
        Instant planned,
        Optional<Instant> released,
        List<Lend> lends) {
    public enum Phase {
        SECURING,
        RELEASED
    }

    public Assembly {
        Objects.requireNonNull(user, "user");
        Objects.requireNonNull(node, "node");
        Objects.requireNonNull(phase, "phase");
        Objects.requireNonNull(planned, "planned");
        Objects.requireNonNull(released, "released");
        LedgerValues.atLeast("job", job, 1);
        LedgerValues.word("user", user);
        LedgerValues.word("node", node);
        lends = List.copyOf(lends);
        if (localGpus < 0 || localGpus + lends.size() != vgpus || vgpus < 1) {
            throw new IllegalArgumentException("assembly of job " + job + ": " + localGpus + " local GPU(s) and "
                    + lends.size() + " lend(s) do not make " + vgpus + " vGPU(s)");
        }
        for (int i = 0; i < lends.size(); i++) {
            if (lends.get(i).vgpu() != localGpus + i) {
                throw new IllegalArgumentException("assembly of job " + job + ": lend " + i + " is for vGPU "
                        + lends.get(i).vgpu() + ", expected " + (localGpus + i) + " (local GPUs come first)");
            }
        }
        if (released.isPresent() != (phase == Phase.RELEASED)) {
            throw new IllegalArgumentException(
                    "assembly of job " + job + ": released time and phase " + phase + " disagree");
        }
    }

    public Assembly withLend(Lend lend) {
        List<Lend> changed = new ArrayList<>(lends);
        changed.set(lend.vgpu() - localGpus, lend);
        return new Assembly(job, user, node, vgpus, localGpus, phase, planned, released, changed);
    }

    public Assembly releasedAt(Instant when) {
        return new Assembly(job, user, node, vgpus, localGpus, Phase.RELEASED, planned, Optional.of(when), lends);
    }

    /** The lend of vGPU {@code vgpu}, when it is not one of the job's own GPUs. */
    public Optional<Lend> lend(int vgpu) {
        return lends.stream().filter(lend -> lend.vgpu() == vgpu).findFirst();
    }

    /**
     * The lends still served from another node: a lend that moved home runs on a GPU of the job's own node
     * (kept by its grant holder) and is no longer borrowed.
     */
    public List<Lend> borrowedLends() {
        return lends.stream().filter(lend -> !lend.home()).toList();
    }

    /** The holder jobs submitted for this assembly. */
    public List<Long> holders() {
        return lends.stream()
                .map(Lend::holder)
                .filter(OptionalLong::isPresent)
                .map(OptionalLong::getAsLong)
                .toList();
    }
}
