package org.vgpu.job;

import java.io.IOException;
import java.io.InputStream;
import java.lang.instrument.Instrumentation;
import java.lang.reflect.InvocationTargetException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Premain-Class of vgpu's jar: checks that the JVM it runs in is of the Java release the interposer ({@link
 * InterposerPremain}) is compiled for, then hands over to it. Compiled for Java 8 (the build's one class that is), so
 * that an older JVM, which cannot load the interposer's classes and would stop with "FATAL ERROR in native method:
 * processing of -javaagent failed", loads this one and ends with one line saying which Java it is and what to do. Of
 * use where {@code vgpu run}'s command is a script or a tool that starts java in turn ({@link ProgramJava} checks a
 * command that is a java binary before it starts); a JVM older than 17 stops before any agent, at the {@code
 * --enable-native-access} that {@code JAVA_TOOL_OPTIONS} holds.
 *
 * <p>Written in Java 8's language and API; it names the interposer's classes only by name, since javac compiling
 * for Java 8 cannot read their class files.
 */
public final class PremainJavaCheck {
    /** Exit status of a JVM too old for the interposer. */
    static final int TOO_OLD_STATUS = 2;

    private static final String INTERPOSER = "org.vgpu.job.InterposerPremain";
    private static final Pattern RELEASE = Pattern.compile("^(\\d+)(?:\\.(\\d+))?");

    private PremainJavaCheck() {}

    /** Called by the JVM before the program's main: {@link InterposerPremain#premain} if the JVM is new enough. */
    public static void premain(String arguments, Instrumentation instrumentation) throws Throwable {
        int needed = neededRelease();
        String version = System.getProperty("java.version", "");
        int release = release(System.getProperty("java.specification.version", version));
        if (release < needed) {
            String line = "vgpu: this program's JVM (" + System.getProperty("java.home") + ") is Java " + version
                    + "; the vgpu interposer needs Java " + needed + " or later in the program's JVM: start the program"
                    + " with a Java " + needed + " (set JAVA_HOME, or PATH, to one for the script or tool that starts"
                    + " java)";
            System.err.println(line);
            System.exit(TOO_OLD_STATUS);
        }
        try {
            Class.forName(INTERPOSER)
                    .getMethod("premain", String.class, Instrumentation.class)
                    .invoke(null, arguments, instrumentation);
        } catch (InvocationTargetException e) {
            throw e.getCause(); // the interposer's own failure, as the JVM would have reported it
        }
    }

    /** The Java release the interposer's classes need: their class files' major version less 44. */
    static int neededRelease() {
        InputStream classfile =
                PremainJavaCheck.class.getResourceAsStream("/" + INTERPOSER.replace('.', '/') + ".class");
        if (classfile == null) {
            return Integer.MAX_VALUE; // no interposer on the class path: nothing here can run it
        }
        try (InputStream in = classfile) {
            byte[] header = new byte[8];
            int read = 0;
            while (read < header.length) {
                int n = in.read(header, read, header.length - read);
                if (n < 0) {
                    throw new IOException("a class file of " + read + " bytes");
                }
                read += n;
            }
            return (((header[6] & 0xff) << 8) | (header[7] & 0xff)) - 44;
        } catch (IOException e) {
            return Integer.MAX_VALUE;
        }
    }

    /**
     * The release a Java version names: 17 for {@code 17.0.15} or {@code 17}, 8 for {@code 1.8.0_392} or {@code 1.8}, 25
     * for {@code 25-ea}; 0 for text that names none.
     */
    static int release(String version) {
        Matcher numbers = RELEASE.matcher(version);
        if (!numbers.find()) {
            return 0;
        }
        int first = Integer.parseInt(numbers.group(1));
        return first == 1 && numbers.group(2) != null ? Integer.parseInt(numbers.group(2)) : first;
    }
}
