package org.vgpu.job.jcuda;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.security.CodeSource;
import java.security.ProtectionDomain;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.stream.Collectors;

/**
 * Which loading classes are the program's, whose JCuda calls {@link JCudaCallSites} redirects: every class but JCuda's
 * own, vgpu's own and the JDK's.
 *
 * <ul>
 *   <li><b>JCuda's own</b>: the classes of the code source (jar or folder) that the class's loader loads JCuda's driver
 *       API ({@code jcuda/driver/JCudaDriver.class}) from: {@code jcuda-12.6.0.jar} on a class path, or vgpu's jar,
 *       which carries JCuda. Decided by where the class comes from, not by its package: JCuda's own samples, and the
 *       programs written from them, are in packages named {@code jcuda.*}, in jars of their own. In a jar that holds
 *       JCuda and a program together (a "fat" or "uber" jar, whose classes all have the jar's code source), only
 *       JCuda's own classes are JCuda's: those named as a class of the JCuda that vgpu is built with ({@code
 *       jcuda-classes.txt}, checked against JCuda's jar by a test), so a program's class in a package of JCuda's
 *       ({@code jcuda.driver.MyProgram}) is the program's too. A class of another JCuda version that 12.6 lacks is
 *       rewritten like the program's, which changes only calls of JCuda's API: they reach vgpu or throw.
 *   <li><b>vgpu's own</b>: package {@code org.vgpu}, vgpu's namespace, where no program lives; they must reach JCuda
 *       itself, since vgpu's native backend drives the GPU through it. Decided by name, not by jar, because vgpu's
 *       classes come from one jar in a job but from one folder or jar per module in a build.
 *   <li><b>the JDK's</b>: classes of the boot and platform class loaders.
 *   <li>Everything else is the program's, also a class with no code source (a class a program defines itself with
 *       {@code ClassLoader.defineClass}, a generated one): it is rewritten like any other. Hidden classes (lambdas'
 *       classes, {@code Lookup.defineHiddenClass}) are never shown to an agent; a method reference's target is
 *       redirected where the reference is made, in the class that makes it.
 * </ul>
 */
final class ProgramClasses {
    /** The class that marks a code source as JCuda's. */
    static final String JCUDA_MARKER = "jcuda/driver/JCudaDriver.class";

    /** The list of JCuda's classes, beside this class. */
    static final String JCUDA_CLASSES_RESOURCE = "jcuda-classes.txt";

    /** JCuda's own classes (internal names), which in a jar of JCuda and a program together tell them apart. */
    static final Set<String> JCUDA_CLASSES = jcudaClasses();

    private static final String VGPU_PACKAGE = "org/vgpu/";

    /** Per class loader: the location of JCuda's code source as {@code CodeSource.getLocation} writes it, if any. */
    private final Map<ClassLoader, Optional<String>> jcudaLocations = new WeakHashMap<>();

    /** Whether {@code className} (internal name), loading in {@code loader} from {@code domain}, is the program's. */
    boolean isProgramClass(ClassLoader loader, String className, ProtectionDomain domain) {
        if (loader == null || loader == ClassLoader.getPlatformClassLoader()) {
            return false;
        }
        if (className.startsWith(VGPU_PACKAGE)) {
            return false;
        }
        return !isJCudas(loader, className, domain);
    }

    private boolean isJCudas(ClassLoader loader, String className, ProtectionDomain domain) {
        CodeSource source = domain == null ? null : domain.getCodeSource();
        URL location = source == null ? null : source.getLocation();
        if (location == null) {
            return false;
        }
        Optional<String> jcuda = jcudaLocation(loader);
        if (jcuda.isEmpty() || !jcuda.get().equals(location.toString())) {
            return false;
        }
        return JCUDA_CLASSES.contains(className);
    }

    private Optional<String> jcudaLocation(ClassLoader loader) {
        synchronized (jcudaLocations) {
            return jcudaLocations.computeIfAbsent(loader, ProgramClasses::findJCuda);
        }
    }

    /**
     * Where {@code loader} loads JCuda from, as a code source's location: a resource's URL without the class's path
     * ({@code jar:file:/x/jcuda.jar!/jcuda/driver/JCudaDriver.class} is {@code file:/x/jcuda.jar}, {@code
     * file:/x/classes/jcuda/driver/JCudaDriver.class} is {@code file:/x/classes/}).
     */
    static Optional<String> findJCuda(ClassLoader loader) {
        URL marker = loader.getResource(JCUDA_MARKER);
        return marker == null ? Optional.empty() : Optional.of(codeSourceLocation(marker.toString()));
    }

    private static Set<String> jcudaClasses() {
        try (InputStream list = ProgramClasses.class.getResourceAsStream(JCUDA_CLASSES_RESOURCE)) {
            if (list == null) {
                throw new IllegalStateException("vgpu's jar lacks " + JCUDA_CLASSES_RESOURCE + "; rebuild it");
            }
            return new String(list.readAllBytes(), StandardCharsets.UTF_8)
                    .lines()
                    .map(String::strip)
                    .filter(name -> !name.isEmpty())
                    .collect(Collectors.toUnmodifiableSet());
        } catch (IOException e) {
            throw new UncheckedIOException("vgpu could not read " + JCUDA_CLASSES_RESOURCE, e);
        }
    }

    static String codeSourceLocation(String resource) {
        String base = resource.substring(0, resource.length() - JCUDA_MARKER.length());
        if (base.startsWith("jar:") && base.endsWith("!/") && base.indexOf("!/") == base.length() - 2) {
            return base.substring("jar:".length(), base.length() - 2);
        }
        return base;
    }
}
