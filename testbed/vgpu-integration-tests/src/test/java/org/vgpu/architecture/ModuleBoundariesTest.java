package org.vgpu.architecture;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAnyPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.CompositeArchRule;
import org.junit.jupiter.api.Test;

/**
 * The package boundaries of vgpu's production code, checked on every build. The integration tests see every
 * module's classes, so the rules live here; tests are left out, since they may use any module's test helpers.
 * The Maven graph itself (which module may depend on which) is the enforcer's module-boundaries execution.
 *
 * <p>A module's <em>internals</em> are its packages that are not in its {@link Module#exports() exports}: like a
 * JPMS module's unexported packages, only the module itself may use them, whatever their classes' visibility.
 * A package that another module starts to need is added to the exports here, in the same change, where a
 * reviewer sees it.
 */
class ModuleBoundariesTest {
    /** Imported once for all rules. */
    private static final JavaClasses PRODUCTION = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            // A module's test-jar (the tracker's, with its in-memory Slurm, for the job tests) is test classes too.
            .withImportOption(location -> !location.contains("-tests.jar"))
            .importPackages("org.vgpu");

    /**
     * One Maven module: the packages its classes live in ({@code roots}), the packages every other module may use
     * ({@code exports}) and those only some other modules may use ({@code exportsTo}: package to module names,
     * JPMS's "exports P to M"), all in ArchUnit's package syntax ({@code p..} is p and its subpackages).
     */
    record Module(String name, List<String> roots, List<String> exports, Map<String, List<String>> exportsTo) {
        /** A module whose classes all lie in {@code root} and its subpackages. */
        Module(String name, String root, String... exports) {
            this(name, List.of(root + ".."), List.of(exports), Map.of());
        }

        /** This module, letting {@code consumer} too, besides itself and those let before, use {@code packages}. */
        Module exportingTo(String consumer, String... packages) {
            Map<String, List<String>> more = new HashMap<>(exportsTo);
            Arrays.stream(packages)
                    .forEach(exported -> more.merge(
                            exported,
                            List.of(consumer),
                            (before, added) -> Stream.concat(before.stream(), added.stream())
                                    .toList()));
            return new Module(name, roots, exports, Map.copyOf(more));
        }

        String[] rootPackages() {
            return roots.toArray(String[]::new);
        }

        ArchRule keepsItsInternals() {
            String[] usable =
                    Stream.concat(exports.stream(), exportsTo.keySet().stream()).toArray(String[]::new);
            List<ArchRule> rules = new ArrayList<>();
            rules.add(noClasses()
                    .that()
                    .resideOutsideOfPackages(rootPackages())
                    .should()
                    .dependOnClassesThat(resideInAnyPackage(rootPackages()).and(not(resideInAnyPackage(usable))))
                    .as("no other module uses " + name + "'s internals")
                    .because(name + " exports only " + exports + " (ModuleBoundariesTest.MODULES)"));
            exportsTo.forEach((exported, consumers) -> rules.add(noClasses()
                    .that()
                    .resideOutsideOfPackages(Stream.concat(
                                    Arrays.stream(rootPackages()),
                                    consumers.stream()
                                            .flatMap(consumer -> Arrays.stream(
                                                    module(consumer).rootPackages())))
                            .toArray(String[]::new))
                    .should()
                    .dependOnClassesThat()
                    .resideInAPackage(exported)
                    .as("only " + String.join(", ", consumers) + " use " + exported + " of " + name)
                    .because(name + " exports it to " + consumers + " alone (ModuleBoundariesTest.MODULES)")));
            return CompositeArchRule.of(rules);
        }
    }

    private static Module module(String name) {
        return MODULES.stream()
                .filter(module -> module.name().equals(name))
                .findFirst()
                .orElseThrow();
    }

    static final List<Module> MODULES = List.of(
            // the shared module: all of it is for the others
            new Module("vgpu-common", "org.vgpu.common", "org.vgpu.common.."),
            // memory, nativegpu, remote.protocol and remote.security are how the backends work, not what they offer
            new Module(
                            "vgpu-gpu-api",
                            List.of("org.vgpu.runtime.api..", "org.vgpu.runtime.core..", "org.vgpu.runtime.memory.."),
                            List.of("org.vgpu.runtime.api..", "org.vgpu.runtime.core"),
                            Map.of())
                    .exportingTo("vgpu-backend-native", "org.vgpu.runtime.memory")
                    .exportingTo("vgpu-backend-emulated", "org.vgpu.runtime.memory")
                    .exportingTo("vgpu-remote-client", "org.vgpu.runtime.memory"),
            new Module("vgpu-backend-native", "org.vgpu.runtime.nativegpu")
                    .exportingTo("vgpu-backends", "org.vgpu.runtime.nativegpu")
                    // bench measures the native backend against raw JCuda
                    .exportingTo("vgpu-benchmarks", "org.vgpu.runtime.nativegpu"),
            new Module("vgpu-backend-emulated", "org.vgpu.runtime.emulated", "org.vgpu.runtime.emulated"),
            new Module(
                    "vgpu-test-workloads",
                    List.of("org.vgpu.runtime.kernels..", "org.vgpu.runtime.workloads.."),
                    List.of("org.vgpu.runtime.kernels", "org.vgpu.runtime.workloads"),
                    Map.of()),
            // org.vgpu.runtime itself, not its subpackages: the choice of the local backend
            new Module("vgpu-backends", List.of("org.vgpu.runtime"), List.of("org.vgpu.runtime"), Map.of()),
            new Module(
                            "vgpu-remote-client",
                            List.of(
                                    "org.vgpu.runtime.remote",
                                    "org.vgpu.runtime.remote.client..",
                                    "org.vgpu.runtime.remote.protocol..",
                                    "org.vgpu.runtime.remote.security..",
                                    "org.vgpu.runtime.remote.transport.."),
                            List.of("org.vgpu.runtime.remote.client", "org.vgpu.runtime.remote.transport"),
                            Map.of())
                    .exportingTo(
                            "vgpu-gpu-worker",
                            "org.vgpu.runtime.remote",
                            "org.vgpu.runtime.remote.protocol",
                            "org.vgpu.runtime.remote.security")
                    // remote-bench sets the remote tuning; its --tls-cost worker has a self-signed certificate
                    .exportingTo("vgpu-benchmarks", "org.vgpu.runtime.remote", "org.vgpu.runtime.remote.security"),
            new Module(
                    "vgpu-gpu-worker",
                    List.of(
                            "org.vgpu.runtime.remote.worker..",
                            "org.vgpu.runtime.remote.lender..",
                            "org.vgpu.runtime.cli.."),
                    List.of("org.vgpu.runtime.remote.worker", "org.vgpu.runtime.remote.lender", "org.vgpu.runtime.cli"),
                    Map.of()),
            // render writes Slurm's and systemd's files; others read the configuration, not how it is written out
            new Module("site-config", "org.vgpu.siteconfig", "org.vgpu.siteconfig", "org.vgpu.siteconfig.cli"),
            new Module(
                    "migration-agent",
                    "org.vgpu.migration",
                    "org.vgpu.migration",
                    "org.vgpu.migration.agent",
                    "org.vgpu.migration.cli"),
            // the ledger, placement, Slurm parsing and the server are the tracker's own business
            new Module("idle-gpu-tracker", "org.vgpu.tracker", "org.vgpu.tracker", "org.vgpu.tracker.cli")
                    // the simulator drives the tracker's own planner, idle clock and hook on a simulated cluster
                    .exportingTo(
                            "vgpu-simulator",
                            "org.vgpu.tracker.placement",
                            "org.vgpu.tracker.cluster",
                            "org.vgpu.tracker.hook",
                            "org.vgpu.tracker.slurm"),
            // javac runs it; no module calls it
            new Module("vgpu-call-surface-processor", "org.vgpu.callsurface"),
            // the launcher finds the benchmarks' commands through ServiceLoader, by their interface in vgpu-common
            new Module("vgpu-benchmarks", "org.vgpu.bench"),
            // vgpu simulate: what it reads (workload), what it gives (result), its engine and its command
            new Module("vgpu-simulator", "org.vgpu.simulator", "org.vgpu.simulator.."),
            // the top of the graph: no module uses it (org.vgpu.api is for users' own programs)
            new Module(
                    "job-wrapper", List.of("org.vgpu.job..", "org.vgpu.cli..", "org.vgpu.api.."), List.of(), Map.of()));

    @Test
    void everyClassBelongsToAModule() {
        classes()
                .should()
                .resideInAnyPackage(MODULES.stream()
                        .flatMap(module -> Arrays.stream(module.rootPackages()))
                        .toArray(String[]::new))
                .as("every class lies in a module's packages")
                .because("a new top-level package needs a row in ModuleBoundariesTest.MODULES, with what it exports")
                .check(PRODUCTION);
    }

    @Test
    void gpuApiImportsNothingAboveIt() {
        classes()
                .that()
                .resideInAPackage("org.vgpu.runtime.api..")
                .should()
                .onlyDependOnClassesThat()
                .resideInAnyPackage("java..", "org.vgpu.common..", "org.vgpu.runtime.api..")
                .as("the GPU API (org.vgpu.runtime.api) uses only the JDK, vgpu-common and itself")
                .because("every backend, the migration layer and the launcher build on it, and it on none of them")
                .check(PRODUCTION);
    }

    @Test
    void commonUsesNoOtherModule() {
        noClasses()
                .that()
                .resideInAPackage("org.vgpu.common..")
                .should()
                .dependOnClassesThat(resideInAnyPackage("org.vgpu..").and(not(resideInAnyPackage("org.vgpu.common.."))))
                .as("vgpu-common (org.vgpu.common) uses no other vgpu package")
                .because("every module may use it, so it may use none of them")
                .check(PRODUCTION);
    }

    @Test
    void noModuleReachesIntoAnothersInternals() {
        CompositeArchRule.of(MODULES.stream().map(Module::keepsItsInternals).toList())
                .check(PRODUCTION);
    }

    @Test
    void packagesAreFreeOfCycles() {
        slices().matching("org.vgpu.(**)")
                .should()
                .beFreeOfCycles()
                .as("no import cycles between vgpu packages")
                .because("a cycle makes two packages one, and the next change to either touches both")
                .check(PRODUCTION);
    }
}
