package org.vgpu.tracker;

import java.util.List;
import java.util.Objects;

import org.vgpu.common.net.Endpoint;

/**
 * What the {@link Tracker} decided on a request of the SPANK bridge or of a holder's worker. Only
 * {@code TrackerProtocol} turns it into a reply line, with the words of the bridge contract
 * (slurm-spank-bridge/contract).
 */
public sealed interface Answer {

    /** The job's assembly on its node: its node GPUs in vGPU order, then its borrowed vGPUs. */
    record Assembled(int vgpus, List<Integer> localGpus, List<Borrowed> borrowed) implements Answer {
        public Assembled {
            localGpus = List.copyOf(localGpus);
            borrowed = List.copyOf(borrowed);
        }
    }

    /** A borrowed vGPU: the worker that serves it and a fresh session token for the job. */
    record Borrowed(int vgpu, Endpoint worker, String token) {
        public Borrowed {
            Objects.requireNonNull(worker, "worker");
            Objects.requireNonNull(token, "token");
        }

        /** Tokens stay out of logs and test reports. */
        @Override
        public String toString() {
            return "Borrowed[vgpu=" + vgpu + ", worker=" + worker + "]";
        }
    }

    /** Taken: a {@code done}, or a worker's announcement. */
    record Accepted() implements Answer {}

    /** A leaving worker's vGPU moves away, as {@code what} says: the worker serves its session until it ends. */
    record Evacuating(String what) implements Answer {
        public Evacuating {
            Objects.requireNonNull(what, "what");
        }
    }

    /** Not ready yet; the bridge asks again. */
    record NotYet(String reason) implements Answer {
        public NotYet {
            Objects.requireNonNull(reason, "reason");
        }
    }

    /** Refused, in the tracker's words. */
    record Refused(String reason) implements Answer {
        public Refused {
            Objects.requireNonNull(reason, "reason");
        }
    }

    /** Refused because the sender could not prove who it is. */
    record Unauthenticated(String reason) implements Answer {
        public Unauthenticated {
            Objects.requireNonNull(reason, "reason");
        }
    }
}
