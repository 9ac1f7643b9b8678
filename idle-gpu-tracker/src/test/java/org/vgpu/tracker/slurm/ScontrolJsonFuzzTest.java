package org.vgpu.tracker.slurm;

import java.nio.charset.StandardCharsets;

import com.code_intelligence.jazzer.junit.FuzzTest;

/**
 * Fuzz target for the reader of scontrol's JSON (docs/fuzzing.md): any bytes, read as the nodes and as the jobs
 * of each data_parser version the tracker knows, may be refused only with {@link SlurmException}; never another
 * exception, never a hang.
 */
class ScontrolJsonFuzzTest {
    @FuzzTest(maxDuration = "1m")
    void documents(byte[] input) {
        String json = new String(input, StandardCharsets.UTF_8);
        for (DataParser parser : DataParser.values()) {
            ScontrolJson reader = new ScontrolJson(parser);
            try {
                reader.nodes(json);
            } catch (SlurmException refused) {
                // the product's refusal
            }
            try {
                reader.jobs(json);
            } catch (SlurmException refused) {
                // the product's refusal
            }
        }
    }
}
