package org.vgpu.migration;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.EventHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * The times of one vGPU's recorded events on one clock across its migrations, so that the time elapsed between an
 * event recorded before a move and one recorded after it is what the app lived through: the GPU's time on each
 * backend and, between them, the move's own wall-clock time.
 *
 * <p>The rule: two events recorded on the backend the vGPU runs on now are timed by that backend, as without a move.
 * An event recorded on a backend the vGPU has left has a time that was fixed as it left: with that backend drained, a
 * last event recorded there, and each event's time measured back from it. The clock goes on across the move by the
 * wall-clock time from that last event to an event recorded on the new backend as the move switches to it, from which
 * the events recorded there are measured. A vGPU that never recorded an event pays nothing at a move.
 *
 * <p>What a move cannot fix (the source failed to time an event, or the new backend to record the clock's start) is
 * lost for the events concerned only: their times across the move are refused, saying why, and the move itself goes
 * on. A clock that could not be carried over starts again: events of the same clock stay comparable.
 */
final class EventTimes {
    private static final Logger LOG = LoggerFactory.getLogger(EventTimes.class);

    /**
     * Where an event was last recorded: in which stay (0 on the first backend, one more after each move) and, once the
     * vGPU has left that backend, its time in milliseconds on a clock (NaN where it could not be read).
     */
    private record Mark(int stay, int clock, double fixedMillis) {}

    /** What a move read from its source before the switch; applied by {@link #arrived}, dropped by a rollback. */
    record Departure(Map<Integer, Double> fixedMillis, int clock, double endMillis, long endNanos) {
        static final Departure NOTHING_RECORDED = new Departure(Map.of(), -1, Double.NaN, 0);
    }

    private final Map<Integer, Mark> marks = new ConcurrentHashMap<>();
    private final AtomicInteger stay = new AtomicInteger();
    private final AtomicInteger clocks = new AtomicInteger();

    // Changed only by a move, with the vGPU's gate shut. The current stay's clock and its start there: the backend's
    // event recorded as the vGPU arrived, and its time on that clock; null when the stay carries no clock (the
    // first backend, or a start that failed): its events then start a new clock as the vGPU leaves.
    private volatile int clock;
    private volatile EventHandle stayStart;
    private volatile double stayStartMillis = Double.NaN;

    /** After the app's event was recorded on the current backend. */
    void recorded(EventHandle event) {
        marks.put(event.id(), new Mark(stay.get(), -1, Double.NaN));
    }

    /** After the app destroyed its event. */
    void forget(EventHandle event) {
        marks.remove(event.id());
    }

    /**
     * The milliseconds from {@code start} to {@code end}; {@code toBackend} gives the current backend's handle of an
     * event of the app.
     */
    float elapsed(EventHandle start, EventHandle end, VirtualGpu backend, UnaryOperator<EventHandle> toBackend) {
        Mark from = marks.get(start.id());
        Mark to = marks.get(end.id());
        int now = stay.get();
        if (from == null || to == null || (from.stay() == now && to.stay() == now)) {
            return backend.eventElapsedTime(toBackend.apply(start), toBackend.apply(end));
        }
        if (clockOf(from, now) != clockOf(to, now)) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_HANDLE,
                    "events " + start.id() + " and " + end.id() + " were recorded on either side of a move of this"
                            + " vGPU that could not carry their clock over");
        }
        return (float)
                (onTheClock(end, to, now, backend, toBackend) - onTheClock(start, from, now, backend, toBackend));
    }

    private int clockOf(Mark mark, int now) {
        return mark.stay() == now ? (stayStart == null ? -1 : clock) : mark.clock();
    }

    private double onTheClock(
            EventHandle event, Mark mark, int now, VirtualGpu backend, UnaryOperator<EventHandle> toBackend) {
        if (mark.stay() == now) {
            return stayStartMillis + backend.eventElapsedTime(stayStart, toBackend.apply(event));
        }
        if (Double.isNaN(mark.fixedMillis())) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_HANDLE,
                    "event " + event.id() + " was recorded before a move of this vGPU that could not read its time");
        }
        return mark.fixedMillis();
    }

    /**
     * Fixes the times of the events recorded on {@code source}, which the move has drained; the app's calls are held.
     * Never fails the move: an event whose time cannot be read gets none.
     */
    Departure leaving(VirtualGpu source, UnaryOperator<EventHandle> toBackend) {
        if (marks.isEmpty()) {
            return Departure.NOTHING_RECORDED;
        }
        int now = stay.get();
        EventHandle since = stayStart;
        int clockLeft = since == null ? clocks.incrementAndGet() : clock;
        Map<Integer, Double> fixed = new HashMap<>();
        EventHandle end = null;
        double endMillis = Double.NaN;
        try {
            end = source.eventCreate();
            source.eventRecord(end, StreamHandle.DEFAULT);
            source.eventSynchronize(end);
            endMillis = since == null ? 0 : stayStartMillis + source.eventElapsedTime(since, end);
        } catch (RuntimeException e) {
            LOG.warn("the clock of the vGPU's events could not be read on its source: {}", VgpuFailure.describe(e));
        }
        long endNanos = System.nanoTime();
        for (Map.Entry<Integer, Mark> mark : marks.entrySet()) {
            if (mark.getValue().stay() == now) {
                fixed.put(mark.getKey(), before(end, endMillis, mark.getKey(), source, toBackend));
            }
        }
        if (end != null) {
            try {
                source.eventDestroy(end);
            } catch (RuntimeException e) {
                LOG.debug("the move's last event on its source was not destroyed: {}", VgpuFailure.describe(e));
            }
        }
        return new Departure(fixed, clockLeft, endMillis, endNanos);
    }

    private static double before(
            EventHandle end, double endMillis, int id, VirtualGpu source, UnaryOperator<EventHandle> toBackend) {
        if (Double.isNaN(endMillis)) {
            return Double.NaN;
        }
        try {
            return endMillis - source.eventElapsedTime(toBackend.apply(new EventHandle(id)), end);
        } catch (RuntimeException e) {
            return Double.NaN; // its time across the move is refused, saying so, when the app asks for it
        }
    }

    /** Starts the clock on {@code target}, the vGPU's backend now; with the app's calls still held. */
    void arrived(VirtualGpu target, Departure departure) {
        int left = stay.get();
        EventHandle start = null;
        if (!Double.isNaN(departure.endMillis())) { // NaN: nothing was recorded, or the source's clock was not read
            try {
                start = target.eventCreate();
                target.eventRecord(start, StreamHandle.DEFAULT);
            } catch (RuntimeException e) {
                LOG.warn(
                        "the clock of the vGPU's events could not be started on its target: {}",
                        VgpuFailure.describe(e));
                start = null;
            }
        }
        double startMillis = departure.endMillis() + (System.nanoTime() - departure.endNanos()) / 1e6;
        departure
                .fixedMillis()
                .forEach((id, millis) -> marks.computeIfPresent(
                        id, (key, mark) -> mark.stay() == left ? new Mark(left, departure.clock(), millis) : mark));
        clock = departure.clock();
        stayStartMillis = startMillis;
        stayStart = start;
        stay.incrementAndGet();
    }
}
