package org.vgpu.job;

import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.error.ConfigException;
import org.vgpu.migration.FaultPoint;
import org.vgpu.migration.MigrationFaults;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * TEST ONLY: {@value #VARIABLE}={@code <fault point>} makes every migration of {@code vgpu run} fail at that point
 * (open-target, replay-allocation, mem-sync-batch, verify), so that a testbed scenario can watch a failed move on real
 * Slurm. Read only when the variable is set; {@code vgpu run} then says so loudly at start. Without it the job's
 * vGPUs migrate with {@link MigrationFaults#NONE}, as in production.
 */
final class TestMigrationFault {
    static final String VARIABLE = BridgeContract.ENV_TEST_MIGRATION_FAULT;

    private TestMigrationFault() {}

    /**
     * The fault the environment asks for; empty when {@value #VARIABLE} is unset.
     *
     * @throws ConfigException when it names no fault point
     */
    static Optional<FaultPoint> from(Map<String, String> environment) {
        String value = environment.get(VARIABLE);
        if (value == null) {
            return Optional.empty();
        }
        return Arrays.stream(FaultPoint.values())
                .filter(point -> name(point).equals(value))
                .findFirst()
                .or(() -> {
                    throw JobAssembly.invalid(VARIABLE + " must be one of "
                            + String.join(
                                    ", ",
                                    Arrays.stream(FaultPoint.values())
                                            .map(TestMigrationFault::name)
                                            .toList())
                            + " (a test-only fault), got '" + value + "'");
                });
    }

    /** Fails the first time a migration reaches {@code point}, as a target that breaks there would. */
    static MigrationFaults at(FaultPoint point) {
        return (reached, index, target) -> {
            if (reached == point && index == 0) {
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_UNKNOWN,
                        "test-only fault injected at " + name(point) + " (" + VARIABLE + " is set)");
            }
        };
    }

    /** The loud line {@code vgpu run} prints at start when a fault is set. */
    static String warning(FaultPoint point) {
        return "vgpu run: TEST-ONLY FAULT: every migration of this job fails at " + name(point) + " because " + VARIABLE
                + " is set; never set it outside tests";
    }

    static String name(FaultPoint point) {
        return point.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }
}
