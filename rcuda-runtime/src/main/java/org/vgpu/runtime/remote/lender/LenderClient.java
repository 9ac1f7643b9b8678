package org.vgpu.runtime.remote.lender;

import java.time.Duration;
import java.util.List;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.control.LineClient;
import org.vgpu.runtime.control.LineText;

/** The tracker's side of a lender's control socket ({@link ControlProtocol}). */
public final class LenderClient {
    /** A worker the lender handed out: where it listens and the id a session token must name. */
    public record OpenedWorker(Endpoint endpoint, String workerId) {
    }

    private LenderClient() {
    }

    /**
     * Asks the lender at {@code lender} for a worker on {@code device}.
     *
     * @param timeout for connecting and for the reply, which may wait for a worker to start
     * @throws VgpuException CUDA_ERROR_UNKNOWN naming the lender when it is unreachable, refuses, or answers garbage
     */
    public static OpenedWorker open(Endpoint lender, int device, Duration timeout) {
        List<String> reply = LineClient.request(lender, "open " + device, timeout);
        String last = reply.getLast();
        String[] words = last.split(" ");
        if (reply.size() != 1 || words.length != 3 || !words[0].equals("ok")) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_UNKNOWN, "lender " + lender + " answered 'open " + device + "' with '"
                    + LineText.printable(last, 300) + "'");
        }
        try {
            return new OpenedWorker(Endpoint.parse(words[1]), words[2]);
        } catch (RuntimeException e) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_UNKNOWN, "lender " + lender + " named a worker endpoint '"
                    + LineText.printable(words[1], 100) + "' that is not HOST:PORT", e);
        }
    }

    /**
     * Asks the lender at {@code lender} to stop its lent worker {@code workerId}.
     *
     * @throws VgpuException CUDA_ERROR_UNKNOWN naming the lender when it is unreachable or refuses
     *         (for example because the worker has ended already)
     */
    public static void close(Endpoint lender, String workerId, Duration timeout) {
        String reply = LineClient.request(lender, "close " + workerId, timeout).getLast();
        if (!reply.equals("ok closed " + workerId)) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_UNKNOWN, "lender " + lender + " answered 'close " + workerId + "' with '"
                    + LineText.printable(reply, 300) + "'");
        }
    }
}
