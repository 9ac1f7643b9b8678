package org.vgpu.runtime.remote.worker;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

import org.apache.commons.cli.ParseException;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.error.NetworkException;
import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.line.LineClient;
import org.vgpu.common.line.LineText;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.CertificatePin;
import org.vgpu.common.security.SiteKey;
import org.vgpu.common.security.TokenIssuer;

/**
 * A worker in a holder job telling the tracker where it listens:
 * {@code worker JOB VGPU HOST:PORT WORKER-ID PROOF}. The proof is a session token for exactly that
 * job, vGPU and worker, valid for {@link #PROOF_TTL}, signed with the key the worker checks its tokens with (that
 * lend's key, {@link SiteKey#forLend}, in a holder the tracker started; else the site key): the tracker checks it
 * as a worker checks a client's token, so nobody without the key can point a job at their own worker. A worker with
 * TLS pins its certificate in the proof, and the tracker pins it in the tokens it gives the job for this worker.
 * When its holder is being cancelled it says {@code worker-leaving JOB VGPU WORKER-ID PROOF} ({@link #leave}),
 * proven alike, so that the tracker moves the vGPU away before the worker ends (see {@link HolderLeaving}).
 */
public record HolderAnnouncement(Endpoint tracker, String job, int vgpu) {
    /** Long enough for one request, short enough that a proof seen in a log is useless soon after. */
    public static final Duration PROOF_TTL = Duration.ofMinutes(2);

    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    /** A leaving worker has KillWait (30 s by default) in all: the tracker's answer may take only part of it. */
    private static final Duration LEAVING_TIMEOUT = Duration.ofSeconds(10);

    /** {@code --tracker HOST:PORT} and {@code --lend JOB:VGPU}. */
    static HolderAnnouncement parse(String tracker, String lend) throws ParseException {
        int colon = lend.lastIndexOf(':');
        try {
            if (colon < 1) {
                throw new NumberFormatException();
            }
            return new HolderAnnouncement(
                    Endpoint.parse(tracker), lend.substring(0, colon), Integer.parseInt(lend.substring(colon + 1)));
        } catch (NumberFormatException e) {
            throw new ParseException("--lend must be JOB:VGPU, e.g. 42:1; got '" + lend + "'");
        } catch (VgpuFailure e) {
            throw new ParseException("--tracker: " + e.detail());
        }
    }

    /**
     * @throws NetworkException when the tracker cannot be reached (UNREACHABLE) or does not take this
     *         worker (REFUSED)
     */
    void tell(Endpoint listening, String workerId, Optional<CertificatePin> certificate, SiteKey key) {
        List<String> reply;
        try {
            reply = request(BridgeContract.REQUEST_WORKER, listening.toString(), workerId, certificate, key, TIMEOUT);
        } catch (NetworkException e) {
            throw new NetworkException(
                    e.code(),
                    "cannot tell the tracker that worker " + workerId + " listens at " + listening + ": " + e.detail(),
                    e);
        }
        if (!reply.getLast().equals(BridgeContract.REPLY_OK_WORD)) {
            throw new NetworkException(
                    NetworkException.Code.REFUSED,
                    "the tracker " + tracker
                            + " did not take worker " + workerId + " at " + listening + " for job " + job + " vGPU "
                            + vgpu + ": "
                            + LineText.printable(reply.getLast(), 300));
        }
    }

    /** What the tracker answered {@code worker-leaving}: whether the vGPU moves away, and its words. */
    record Leaving(boolean evacuating, String reply) {}

    /**
     * Tells the tracker that this worker is leaving (its holder is being cancelled):
     * {@code worker-leaving JOB VGPU WORKER-ID PROOF}. Never throws: a tracker that cannot be reached moves nothing.
     */
    Leaving leave(String workerId, SiteKey key) {
        try {
            String reply = request(
                            BridgeContract.REQUEST_WORKER_LEAVING,
                            null,
                            workerId,
                            Optional.empty(),
                            key,
                            LEAVING_TIMEOUT)
                    .getLast();
            return new Leaving(
                    reply.startsWith(BridgeContract.REPLY_OK_WORD + " ") || reply.equals(BridgeContract.REPLY_OK_WORD),
                    LineText.printable(reply, 300));
        } catch (VgpuFailure e) {
            return new Leaving(
                    false,
                    "cannot tell the tracker " + tracker + " that worker " + workerId + " leaves: " + e.detail());
        }
    }

    /**
     * One request on the tracker's socket: {@code WORD JOB VGPU [LISTENING] WORKER-ID PROOF}, the proof fresh and
     * pinning {@code certificate} when the worker has one.
     */
    private List<String> request(
            String word,
            String listening,
            String workerId,
            Optional<CertificatePin> certificate,
            SiteKey key,
            Duration timeout) {
        String proof = new TokenIssuer(key, Clock.systemUTC()).issue(job, vgpu, workerId, certificate, PROOF_TTL);
        String request = listening == null
                ? String.join(" ", word, job, Integer.toString(vgpu), workerId, proof)
                : String.join(" ", word, job, Integer.toString(vgpu), listening, workerId, proof);
        return LineClient.request(tracker, request, timeout);
    }

    @Override
    public String toString() {
        return "job " + job + " vGPU " + vgpu + " (tracker " + tracker + ")";
    }
}
