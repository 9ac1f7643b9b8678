package org.vgpu.tracker;

import java.time.Clock;
import java.time.Duration;
import java.util.Optional;
import java.util.function.LongFunction;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.agent.AgentChannel;
import org.vgpu.tracker.hook.AgentMailbox;
import org.vgpu.tracker.hook.MigrationHook;

/**
 * The jobs' migration agents' requests ({@code agent poll}, {@code done}, {@code bye}), each authenticated by the
 * session token of one of the job's borrowed vGPUs and handed to the migration hook; a poll is held until a command
 * for the job is queued. Called from the socket's threads; takes the tracker's lock only to read or record, never
 * while a poll waits.
 */
final class AgentRequests {
    /** The tracker's log lines keep the one logger name admins filter on. */
    private static final Logger LOG = LoggerFactory.getLogger(Tracker.class);

    private final Object lock;
    private final MigrationHook hook;
    private final Duration hold;
    private final Clock clock;

    /**
     * @param lock the tracker's lock, which guards the hook
     * @param hold how long a poll is held waiting for a command
     */
    AgentRequests(Object lock, MigrationHook hook, Duration hold, Clock clock) {
        this.lock = lock;
        this.hook = hook;
        this.hold = hold;
        this.clock = clock;
    }

    /** See {@link Tracker#agentPoll}. */
    AgentChannel.PollReply poll(AgentChannel.Poll poll) {
        AgentChannel.Credential credential = poll.credential();
        long job = Long.parseLong(credential.job());
        synchronized (lock) {
            Optional<AgentChannel.Refused> refused = refused("poll", credential);
            if (refused.isPresent()) {
                return refused.get();
            }
            hook.report(job, poll.stats(), poll.expectedEnd(), clock.instant());
        }
        Optional<AgentMailbox.Order> order;
        try {
            order = hook.mailbox().take(job, AgentMailbox.Agent.of(credential, poll.stats()), hold);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new AgentChannel.Idle();
        }
        if (order.isEmpty()) {
            return new AgentChannel.Idle();
        }
        // The target's toString leaves a remote target's session token out.
        LOG.info(
                "migration {}: sent to job {}'s agent: vGPU {} to {}",
                order.get().id(),
                job,
                order.get().vgpu(),
                order.get().target());
        return AgentChannel.Migrate.signed(
                credential.token(),
                poll.nonce(),
                order.get().id(),
                order.get().vgpu(),
                order.get().target());
    }

    /** Why an agent's request with {@code credential} is refused (logged), or empty; guarded by the lock. */
    private Optional<AgentChannel.Refused> refused(String request, AgentChannel.Credential credential) {
        long job = Long.parseLong(credential.job());
        Optional<String> refusal = hook.refusal(job, credential.vgpu(), credential.token());
        refusal.ifPresent(
                why -> LOG.warn("agent {} for vGPU {} of job {} refused: {}", request, credential.vgpu(), job, why));
        return refusal.map(AgentChannel.Refused::because);
    }

    /** See {@link Tracker#agentDone}. */
    AgentChannel.DoneReply done(AgentChannel.Done done) {
        return answered("done", done.credential(), job -> hook.done(job, done.id(), done.outcome(), clock.instant()));
    }

    /** See {@link Tracker#agentBye}. */
    AgentChannel.DoneReply bye(AgentChannel.Bye bye) {
        return answered("bye", bye.credential(), job -> {
            LOG.info("job {}'s migration agent stopped (its app ended)", job);
            return hook.bye(job, bye.credential().vgpu(), clock.instant());
        });
    }

    /** {@code answer} for the credential's job under the lock, or why its {@code request} is refused. */
    private AgentChannel.DoneReply answered(
            String request, AgentChannel.Credential credential, LongFunction<AgentChannel.DoneReply> answer) {
        synchronized (lock) {
            Optional<AgentChannel.Refused> refused = refused(request, credential);
            return refused.isPresent() ? refused.get() : answer.apply(Long.parseLong(credential.job()));
        }
    }
}
