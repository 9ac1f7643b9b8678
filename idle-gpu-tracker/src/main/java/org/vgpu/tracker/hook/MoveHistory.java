package org.vgpu.tracker.hook;

import static org.vgpu.common.contract.BridgeContract.MOVE_CLAIMING;
import static org.vgpu.common.contract.BridgeContract.MOVE_SENT;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;

import org.vgpu.tracker.ledger.Ledger;
import org.vgpu.tracker.ledger.Migration;

/**
 * The migrations under way and the recent ended ones as {@code vgpu report} and {@code vgpu migrate}'s progress show
 * them ({@link MoveRecord}), and the listener told of each as it ends. Not thread-safe: used under the tracker's lock.
 */
final class MoveHistory {
    private static final int HISTORY = 200;

    private final Map<Long, MoveRecord> moves = new LinkedHashMap<>();
    private Consumer<MoveRecord> onEnded = move -> {};

    /** Starts with the migrations the ledger holds: those the tracker was carrying out when it stopped. */
    MoveHistory(Ledger ledger) {
        for (Migration migration : ledger.migrations()) {
            moves.put(
                    migration.id(),
                    new MoveRecord(
                            migration.id(),
                            migration.job(),
                            migration.vgpu(),
                            "?",
                            target(migration),
                            migration.remote() ? "remote" : "home",
                            migration.by(),
                            "found in the ledger at start",
                            migration.started(),
                            state(migration),
                            0,
                            0,
                            Optional.empty(),
                            "the tracker restarted during this migration"));
        }
    }

    /** Told of each migration as it ends, under the tracker's lock: it must not block. */
    void onEnded(Consumer<MoveRecord> listener) {
        onEnded = Objects.requireNonNull(listener, "listener");
    }

    /** Migrations under way and recently ended, oldest first. */
    List<MoveRecord> all() {
        return List.copyOf(moves.values());
    }

    Optional<MoveRecord> get(long id) {
        return Optional.ofNullable(moves.get(id));
    }

    /** A migration just started; the oldest ended ones beyond the history's length are forgotten. */
    void started(MoveRecord move) {
        moves.put(move.id(), move);
        var iterator = moves.entrySet().iterator();
        while (moves.size() > HISTORY && iterator.hasNext()) {
            if (iterator.next().getValue().finished()) {
                iterator.remove();
            }
        }
    }

    /** Changes what is shown of migration {@code id}, and tells the listener when this change ends it. */
    void change(long id, UnaryOperator<MoveRecord> change) {
        MoveRecord before = moves.get(id);
        if (before == null) {
            return;
        }
        MoveRecord after = change.apply(before);
        moves.put(id, after);
        if (after.finished() && !before.finished()) {
            onEnded.accept(after);
        }
    }

    /** {@code NODE:GPU} of the migration's target, {@code NODE:?} until its grant holder runs. */
    static String target(Migration migration) {
        return migration.node() + ":"
                + (migration.gpu().isPresent()
                        ? Integer.toString(migration.gpu().getAsInt())
                        : "?");
    }

    private static String state(Migration migration) {
        return migration.phase() == Migration.Phase.CLAIMING ? MOVE_CLAIMING : MOVE_SENT;
    }
}
