package org.vgpu.job;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;

/**
 * The main of each MPJ Express rank under {@code vgpu run --ranks N} ({@link MpjRanks}): MPJ's multicore starter
 * calls it in the rank's thread with the rank, N and the device (what the program's {@code MPI.Init(args)} reads),
 * then the program's main class and its arguments; it calls that class's main, loaded by the rank's own class loader
 * (the thread's context loader, which MPJ's starter set), with the rank, N, the device and the arguments.
 *
 * <p>Why this step between MPJ's starter and the program: a rank whose main throws makes MPJ Express 0.44's starter
 * print the exception and exit with status 0, so a failed run looked like a good one. Here a rank that fails ends the
 * JVM, all ranks with it (an MPI program's other ranks would wait for it forever), with status 1.
 */
public final class RankMain {
    /** MPJ's own arguments before the program's: rank, number of ranks, device. */
    private static final int MPJ_ARGUMENTS = 3;

    private RankMain() {}

    public static void main(String[] args) {
        if (args.length <= MPJ_ARGUMENTS) {
            System.err.println("vgpu run: " + RankMain.class.getName() + " is started by vgpu run --ranks, with MPJ"
                    + " Express's rank, size, device and the program's main class");
            System.exit(2);
        }
        String rank = args[0];
        String mainClass = args[MPJ_ARGUMENTS];
        String[] programArgs = new String[args.length - 1];
        System.arraycopy(args, 0, programArgs, 0, MPJ_ARGUMENTS);
        System.arraycopy(args, MPJ_ARGUMENTS + 1, programArgs, MPJ_ARGUMENTS, args.length - MPJ_ARGUMENTS - 1);
        Method main;
        try {
            main = Class.forName(mainClass, true, Thread.currentThread().getContextClassLoader())
                    .getMethod("main", String[].class);
            if (!Modifier.isStatic(main.getModifiers())) {
                throw new NoSuchMethodException("main is not static");
            }
        } catch (ReflectiveOperationException | LinkageError e) {
            System.err.println("vgpu run: rank " + rank + " cannot run " + mainClass + " (from the class path given"
                    + " after -cp): " + e);
            System.exit(2);
            return;
        }
        try {
            main.invoke(null, (Object) programArgs);
        } catch (InvocationTargetException e) {
            System.err.println("vgpu run: rank " + rank + " failed; the run ends with all its ranks:");
            e.getCause().printStackTrace();
            System.exit(1);
        } catch (IllegalAccessException e) {
            System.err.println("vgpu run: rank " + rank + " cannot call " + mainClass + ".main: " + e.getMessage());
            System.exit(2);
        }
    }
}
