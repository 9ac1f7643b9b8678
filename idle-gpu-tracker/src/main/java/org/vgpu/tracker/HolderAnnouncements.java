package org.vgpu.tracker;

import java.time.Clock;
import java.util.Optional;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.CertificatePin;
import org.vgpu.common.security.SessionToken;
import org.vgpu.common.security.SiteKey;
import org.vgpu.common.security.TokenVerifier;
import org.vgpu.tracker.hook.MigrationHook;
import org.vgpu.tracker.ledger.Assembly;
import org.vgpu.tracker.ledger.Ledger;
import org.vgpu.tracker.ledger.Lend;
import org.vgpu.tracker.slurm.SlurmControl;
import org.vgpu.tracker.slurm.SlurmInventory;

/**
 * What holders' workers tell the tracker, each authenticated by a proof (a token for exactly that job, vGPU and
 * worker, signed with the site key): where a worker listens ({@code worker}), recorded in its lend or handed to the
 * migration hook when a move waits for it; and that a worker leaves ({@code worker-leaving}), which evacuates its
 * vGPU. Called from the socket's threads; takes the tracker's lock only to read or record.
 */
final class HolderAnnouncements {
    /** The tracker's log lines keep the one logger name admins filter on. */
    private static final Logger LOG = LoggerFactory.getLogger(Tracker.class);

    private final Object lock;
    private final SlurmControl slurm;
    private final Ledger ledger;
    private final MigrationHook hook;
    private final HolderBook holders;
    private final SiteKey key;
    private final boolean workerTls;
    private final Clock clock;

    /**
     * @param lock      the tracker's lock, which guards the ledger, the hook and {@code holders}
     * @param workerTls {@code [cluster] worker_tls}: a worker whose proof pins no TLS certificate is refused
     */
    HolderAnnouncements(
            Object lock,
            SlurmControl slurm,
            Ledger ledger,
            MigrationHook hook,
            HolderBook holders,
            SiteKey key,
            boolean workerTls,
            Clock clock) {
        this.lock = lock;
        this.slurm = slurm;
        this.ledger = ledger;
        this.hook = hook;
        this.holders = holders;
        this.key = key;
        this.workerTls = workerTls;
        this.clock = clock;
    }

    /** See {@link Tracker#worker}. */
    Answer worker(long job, int vgpu, Endpoint endpoint, String workerId, String proof) {
        Proof checked = checkProof(job, vgpu, workerId, proof);
        if (checked.refusal().isPresent()) {
            return checked.refusal().get();
        }
        // the certificate the holder's worker made, signed into its proof with its lend's key
        Optional<CertificatePin> certificate = checked.granted().orElseThrow().workerCertificate();
        synchronized (lock) {
            Optional<Assembly> assembly = ledger.assembly(job);
            Optional<Lend> lend = assembly.flatMap(current -> current.lends().stream()
                    .filter(candidate -> candidate.vgpu() == vgpu)
                    .findFirst());
            if (lend.isEmpty()) {
                return new Answer.Refused(
                        "job " + job + " has no borrowed vGPU " + vgpu + " (its assembly ended or never had it)");
            }
            if (workerTls && certificate.isEmpty()) {
                LOG.warn(
                        "job {}: worker {} at {} proves no TLS certificate; refused (worker_tls is on)",
                        job,
                        workerId,
                        endpoint);
                return new Answer.Refused(
                        "worker " + workerId + " proves no TLS certificate, and [cluster] worker_tls is on"
                                + " (a worker started without --tls-self-signed: is vgpu on its node older than the tracker's?)");
            }
            if (hook.announce(job, vgpu, endpoint, workerId)) {
                certificate.ifPresent(pin -> ledger.recordCertificate(workerId, pin));
                return new Answer.Accepted();
            }
            if (lend.get().workerId().filter(id -> !id.equals(workerId)).isPresent()) {
                return new Answer.Refused("vGPU " + vgpu + " of job " + job + " is served by worker "
                        + lend.get().workerId().get());
            }
            ledger.record(assembly.get().withLend(lend.get().withWorker(endpoint, workerId)));
            certificate.ifPresent(pin -> ledger.recordCertificate(workerId, pin));
        }
        LOG.info(
                "job {}: worker {} at {} serves vGPU {} ({})",
                job,
                workerId,
                endpoint,
                vgpu,
                certificate.map(pin -> "TLS, certificate " + pin).orElse("plain TCP"));
        return new Answer.Accepted();
    }

    /**
     * Why a worker's request is refused: its proof must be a token for exactly that job, vGPU and worker, signed with
     * the key of that lend (HolderAnnouncement); empty when it is.
     */
    private Optional<Answer> proofRefusal(long job, int vgpu, String workerId, String proof) {
        return checkProof(job, vgpu, workerId, proof).refusal();
    }

    /** A worker's proof checked: what it grants, or why it is refused (exactly one of the two). */
    private record Proof(Optional<SessionToken> granted, Optional<Answer> refusal) {}

    private Proof checkProof(long job, int vgpu, String workerId, String proof) {
        try {
            SessionToken token =
                    new TokenVerifier(key.forLend(Long.toString(job), vgpu), workerId, clock).verify(proof, vgpu);
            if (!token.jobId().equals(Long.toString(job))) {
                return new Proof(
                        Optional.empty(),
                        Optional.of(new Answer.Refused("the proof is for job " + token.jobId() + ", not " + job)));
            }
            return new Proof(Optional.of(token), Optional.empty());
        } catch (VgpuFailure e) {
            return new Proof(Optional.empty(), Optional.of(new Answer.Unauthenticated(e.detail())));
        }
    }

    /** See {@link Tracker#workerLeaving}. */
    Answer workerLeaving(long job, int vgpu, String workerId, String proof) {
        Optional<Answer> refused = proofRefusal(job, vgpu, workerId, proof);
        if (refused.isPresent()) {
            return refused.get();
        }
        String notServed = "worker " + workerId + " does not serve vGPU " + vgpu + " of job " + job
                + " (the assembly ended, or the vGPU moved away already)";
        synchronized (lock) {
            // A holder the tracker cancelled itself (the job ended, the vGPU moved) is answered without asking Slurm.
            if (servedBy(job, vgpu, workerId).isEmpty()) {
                return new Answer.Refused(notServed);
            }
        }
        SlurmInventory inventory = slurm.inventory();
        synchronized (lock) {
            Optional<Lend> lend = servedBy(job, vgpu, workerId);
            if (lend.isEmpty()) {
                return new Answer.Refused(notServed);
            }
            long holder = lend.get().holder().orElse(-1);
            LOG.warn(
                    "job {}: worker {} of vGPU {} is leaving (holder {} is being cancelled): evacuating the vGPU",
                    job,
                    workerId,
                    vgpu,
                    holder);
            MigrationHook.Reply reply = hook.evacuate(job, vgpu, holder, inventory, clock.instant());
            if (reply.ok()) {
                holders.evacuating(holder);
            }
            return reply.ok() ? new Answer.Evacuating(reply.text()) : new Answer.Refused(reply.text());
        }
    }

    /** The lend of vGPU {@code vgpu} of job {@code job} when worker {@code workerId} serves it now; guarded by lock. */
    private Optional<Lend> servedBy(long job, int vgpu, String workerId) {
        return ledger.assembly(job)
                .flatMap(assembly -> assembly.lends().stream()
                        .filter(lend -> lend.vgpu() == vgpu)
                        .findFirst())
                .filter(lend -> !lend.home() && lend.workerId().equals(Optional.of(workerId)));
    }
}
