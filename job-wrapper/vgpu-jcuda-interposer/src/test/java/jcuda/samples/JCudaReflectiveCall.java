package jcuda.samples;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Method;

import jcuda.driver.JCudaDriver;

/**
 * A program that calls JCuda's driver API through reflection, as a program that looks its calls up by name would: with
 * {@code method-handle}, through {@code MethodHandles.Lookup.findStatic}; otherwise through {@code Method.invoke}. With
 * {@code own} it calls a private method of its own by reflection, which a class may do without {@code setAccessible}.
 */
public class JCudaReflectiveCall {
    public static void main(String[] args) throws Throwable {
        if (args.length > 0 && args[0].equals("own")) {
            System.out.println(
                    JCudaReflectiveCall.class.getDeclaredMethod("own").invoke(null));
            return;
        }
        System.out.println("calling cuInit by reflection");
        if (args.length > 0 && args[0].equals("method-handle")) {
            MethodHandle init = MethodHandles.lookup()
                    .findStatic(JCudaDriver.class, "cuInit", MethodType.methodType(int.class, int.class));
            System.out.println("cuInit through a method handle: " + (int) init.invokeExact(0));
        } else {
            Method init = JCudaDriver.class.getMethod("cuInit", int.class);
            System.out.println("cuInit through Method.invoke: " + init.invoke(null, 0));
        }
    }

    @SuppressWarnings("UnusedMethod") // called by reflection
    private static String own() {
        return "a program's own reflection works";
    }
}
