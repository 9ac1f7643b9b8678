package org.vgpu.tracker.slurm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ScontrolReadersTest {
    /** What Slurm 24.11.5's {@code scontrol --json=list} prints (captured on the testbed). */
    private static final String SLURM_24_11_PARSERS =
            "Possible data_parser plugins:\ndata_parser/v0.0.42\ndata_parser/v0.0.40\ndata_parser/v0.0.41\n";

    private static String notAsked() {
        throw new AssertionError("a Slurm without data_parsers was asked for them");
    }

    @Test
    void slurm2211ReadsTheNewestDataParserItOffers() {
        ScontrolReaders.Choice choice = ScontrolReaders.choose("slurm-wlm 24.11.5\n", () -> SLURM_24_11_PARSERS);
        ScontrolJson reader = assertInstanceOf(ScontrolJson.class, choice.reader());
        assertEquals(DataParser.V0_0_42, reader.parser());
        assertFalse(choice.fallback());
        assertEquals(
                "Slurm 24.11.5 offers data_parser v0.0.42, v0.0.40, v0.0.41: reading JSON of v0.0.42", choice.reason());
    }

    @Test
    void slurm2205ReadsText() {
        ScontrolReaders.Choice choice = ScontrolReaders.choose("slurm-wlm 22.05.8\n", ScontrolReadersTest::notAsked);
        assertInstanceOf(ScontrolText.class, choice.reader());
        assertFalse(choice.fallback());
        assertEquals("Slurm 22.05.8 has no data_parser (they came with 23.02): reading text", choice.reason());
    }

    @Test
    void aNewerSlurmReadsTheNewestVersionBothKnow() {
        ScontrolReaders.Choice choice = ScontrolReaders.choose(
                "slurm 25.05.3", () -> "data_parser/v0.0.43\ndata_parser/v0.0.41\ndata_parser/v0.0.42\n");
        assertEquals(
                DataParser.V0_0_42,
                assertInstanceOf(ScontrolJson.class, choice.reader()).parser());

        ScontrolReaders.Choice older = ScontrolReaders.choose("slurm 23.11.10", () -> "data_parser/v0.0.40\n");
        assertEquals(
                DataParser.V0_0_40,
                assertInstanceOf(ScontrolJson.class, older.reader()).parser());
    }

    @Test
    void aSlurmOfferingNoVersionTheTrackerReadsFallsBackToTextWithAWarning() {
        ScontrolReaders.Choice choice = ScontrolReaders.choose("slurm 23.02.7", () -> "data_parser/v0.0.39\n");
        assertInstanceOf(ScontrolText.class, choice.reader());
        assertTrue(choice.fallback());
        assertEquals(
                "Slurm 23.02.7 offers data_parser v0.0.39, none of those this tracker reads (v0.0.40, v0.0.41,"
                        + " v0.0.42): reading text",
                choice.reason());
    }

    @Test
    void anUnreadableVersionIsRefused() {
        SlurmException e = assertThrows(
                SlurmException.class,
                () -> ScontrolReaders.choose("scontrol: command not found", ScontrolReadersTest::notAsked));
        assertEquals(
                "cannot read the output of scontrol --version: 'scontrol: command not found', expected"
                        + " 'slurm MAJOR.MINOR.MICRO' such as 'slurm 24.11.5'",
                e.getMessage());
    }
}
