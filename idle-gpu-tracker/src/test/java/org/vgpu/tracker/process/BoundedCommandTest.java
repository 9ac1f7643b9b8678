package org.vgpu.tracker.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;

/** Commands that cannot run are reported in vgpu's words, not the JDK's. */
class BoundedCommandTest {

    @Test
    void aMissingProgramIsNamedWithoutTheJdksText() {
        BoundedCommand.Failure failure = assertThrows(
                BoundedCommand.Failure.class,
                () -> BoundedCommand.run(
                        List.of("/nonexistent/vgpu-no-such-command", "show"), "", Duration.ofSeconds(5)));

        assertEquals("cannot run '/nonexistent/vgpu-no-such-command show': no such program", failure.getMessage());
    }

    @Test
    void aCommandPastItsTimeIsKilledAndSaysSo() {
        BoundedCommand.Failure failure = assertThrows(
                BoundedCommand.Failure.class,
                () -> BoundedCommand.run(List.of("sleep", "30"), "", Duration.ofSeconds(1)));

        assertEquals("'sleep 30' did not finish within 1 s", failure.getMessage());
    }

    /** scontrol without its slurm.conf retries for a minute, saying why on stderr: the reason is what an admin needs. */
    @Test
    void aCommandPastItsTimeSaysWhatItLastWroteOnStderr() {
        BoundedCommand.Failure failure = assertThrows(
                BoundedCommand.Failure.class,
                () -> BoundedCommand.run(
                        List.of("sh", "-c", "echo starting >&2; echo 'cannot stat file x.conf' >&2; exec sleep 30"),
                        "",
                        Duration.ofSeconds(1)));

        assertEquals(
                "'sh -c echo starting >&2; echo 'cannot stat file x.conf' >&2; exec sleep 30' did not finish within 1 s;"
                        + " it last said: cannot stat file x.conf",
                failure.getMessage());
    }
}
