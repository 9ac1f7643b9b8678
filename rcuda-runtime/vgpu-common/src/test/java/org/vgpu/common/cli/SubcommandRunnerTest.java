package org.vgpu.common.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

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

    /** A command with a bug: it throws what no command expects. */
    private static final Subcommand BROKEN = new Subcommand() {
        @Override
        public String name() {
            return "broken";
        }

        @Override
        public String summary() {
            return "fails by a bug";
        }

        @Override
        public Options options() {
            return new Options();
        }

        @Override
        public int run(CommandLine line, PrintStream out, PrintStream err) {
            throw new IllegalStateException("slot 7 held twice");
        }
    };

    @Test
    void anUnexpectedFailureIsOneLineNamingTheFileWithItsStackTrace() throws IOException {
        ByteArrayOutputStream err = new ByteArrayOutputStream();

        int status = SubcommandRunner.run(
                BROKEN, new String[0], new PrintStream(new ByteArrayOutputStream()), new PrintStream(err, true));

        assertEquals(1, status);
        String said = err.toString(StandardCharsets.UTF_8);
        assertEquals(1, said.lines().count(), said);
        assertTrue(said.startsWith("vgpu broken: internal error, a bug in vgpu"), said);
        assertFalse(said.contains("Exception") || said.contains("\tat "), said);
        Matcher file =
                Pattern.compile("its details are in (\\S+), please report them").matcher(said);
        assertTrue(file.find(), said);
        Path report = Path.of(file.group(1));
        try {
            String details = Files.readString(report);
            assertTrue(details.contains("java.lang.IllegalStateException: slot 7 held twice"), details);
            assertTrue(details.contains("SubcommandRunnerTest"), "the stack trace: " + details);
        } finally {
            Files.deleteIfExists(report);
        }
    }

    @Test
    void anUnexpectedFailureWhoseDetailsCannotBeWrittenPrintsThemRatherThanLoseThem(@TempDir Path dir)
            throws IOException {
        Path notADirectory = Files.writeString(dir.resolve("file"), "");
        ByteArrayOutputStream err = new ByteArrayOutputStream();

        SubcommandRunner.internalError(
                BROKEN, new IllegalStateException("slot 7 held twice"), new PrintStream(err, true), notADirectory);

        String said = err.toString(StandardCharsets.UTF_8);
        assertTrue(said.startsWith("vgpu broken: internal error, a bug in vgpu"), said);
        assertTrue(said.contains("could not be written to " + notADirectory), said);
        assertTrue(said.contains("java.lang.IllegalStateException: slot 7 held twice"), said);
    }

    @Test
    void aMissingRequiredOptionIsStillAUsageError() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();

        int status = SubcommandRunner.run(
                NEEDS_LISTEN, new String[0], new PrintStream(new ByteArrayOutputStream()), new PrintStream(err, true));

        assertEquals(2, status);
        assertEquals(
                "vgpu worker: Missing required option: listen\nsee `vgpu worker --help`\n",
                err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void aUsageErrorIsOneLineAndWhereHelpIsNotTheWholeHelp() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();

        int status = SubcommandRunner.run(
                NEEDS_LISTEN,
                new String[] {"--listen", "x", "--colour"},
                new PrintStream(new ByteArrayOutputStream()),
                new PrintStream(err, true));

        assertEquals(2, status);
        assertEquals(
                "vgpu worker: Unrecognized option: --colour\nsee `vgpu worker --help`\n",
                err.toString(StandardCharsets.UTF_8));
    }
}
