package org.vgpu.common.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.junit.jupiter.api.Test;

class SubcommandRunnerTest {
    /** A command with a required option, as {@code vgpu worker} has. */
    private static final Subcommand NEEDS_LISTEN = new Subcommand() {
        @Override
        public String name() {
            return "worker";
        }

        @Override
        public String summary() {
            return "serves a GPU";
        }

        @Override
        public Options options() {
            return new Options()
                    .addOption(Option.builder()
                            .longOpt("listen")
                            .hasArg()
                            .required()
                            .desc("where to listen")
                            .get());
        }

        @Override
        public int run(CommandLine line, PrintStream out, PrintStream err) {
            return 0;
        }
    };

    @Test
    void helpIsAnsweredWithoutTheRequiredOptions() {
        for (String help : new String[] {"--help", "-h"}) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();

            int status = SubcommandRunner.run(
                    NEEDS_LISTEN, new String[] {help}, new PrintStream(out, true), new PrintStream(err, true));

            assertEquals(0, status, err.toString(StandardCharsets.UTF_8));
            assertTrue(out.toString(StandardCharsets.UTF_8).contains("--listen"), out.toString(StandardCharsets.UTF_8));
            assertEquals("", err.toString(StandardCharsets.UTF_8));
        }
    }

    @Test
    void aMissingRequiredOptionIsStillAUsageError() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();

        int status = SubcommandRunner.run(
                NEEDS_LISTEN, new String[0], new PrintStream(new ByteArrayOutputStream()), new PrintStream(err, true));

        assertEquals(2, status);
        assertTrue(
                err.toString(StandardCharsets.UTF_8).startsWith("vgpu worker: Missing required option: listen"),
                err.toString(StandardCharsets.UTF_8));
    }
}
