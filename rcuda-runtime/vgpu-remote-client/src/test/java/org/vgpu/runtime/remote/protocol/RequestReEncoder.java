package org.vgpu.runtime.remote.protocol;

import java.lang.foreign.MemorySegment;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;

/**
 * Writes a decoded request back out through the generated {@link RequestEncoder}, for round trips:
 * the frame goes through the generated {@link RequestDispatch} into a {@link RequestVisitor} made
 * by reflection, whose every call goes to the encoder method of its name (its name and
 * {@code Chunk} for a request whose data follows its fields, given as the whole data), the frame's
 * request id and flags filling the encoder's {@code requestId}, {@code async} and {@code more}.
 * Built from the two generated classes alone, so a new request is round-tripped without a line here.
 */
final class RequestReEncoder {
    /** The encoder method of each visitor method, by the visitor method's name. */
    private static final Map<String, Method> ENCODERS = Arrays.stream(RequestVisitor.class.getMethods())
            .collect(Collectors.toMap(Method::getName, RequestReEncoder::encoderFor));

    private RequestReEncoder() {}

    /** Appends {@code frame}, as the generated encoder writes what the generated decoder read from it, to {@code out}. */
    static void encode(Frame frame, ByteBuf out) {
        RequestEncoder encoder = new RequestEncoder().wrap(out);
        RequestVisitor visitor = (RequestVisitor) Proxy.newProxyInstance(
                RequestVisitor.class.getClassLoader(),
                new Class<?>[] {RequestVisitor.class},
                (proxy, call, fields) -> invoke(encoder, ENCODERS.get(call.getName()), frame, fields));
        RequestDispatch.dispatch(frame, visitor);
    }

    private static Method encoderFor(Method call) {
        Function<String, Method> named = name -> Arrays.stream(RequestEncoder.class.getMethods())
                .filter(method -> method.getName().equals(name))
                .findFirst()
                .orElse(null);
        Method encoder = named.apply(call.getName());
        encoder = encoder != null ? encoder : named.apply(call.getName() + "Chunk");
        if (encoder == null) {
            throw new AssertionError("RequestEncoder has no method for RequestVisitor." + call.getName());
        }
        return encoder;
    }

    private static Object invoke(RequestEncoder encoder, Method method, Frame frame, Object[] fields) throws Throwable {
        try {
            method.invoke(encoder, arguments(method, frame, fields));
            return null;
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /**
     * The encoder's arguments: the frame's request id and flags where the encoder takes them, the
     * decoded fields (after the frame) in order, a data buffer as bytes or as a segment with its
     * offset and length.
     */
    private static Object[] arguments(Method encoder, Frame frame, Object[] fields) {
        Parameter[] parameters = encoder.getParameters();
        List<Object> arguments = new ArrayList<>();
        int field = 1;
        for (int i = 0; i < parameters.length; i++) {
            switch (parameters[i].getName()) {
                case "requestId" -> arguments.add(frame.requestId());
                case "async" -> arguments.add(frame.isAsync());
                case "more" -> arguments.add(frame.hasMore());
                default -> {
                    Object value = fields[field++];
                    if (value instanceof ByteBuf data) {
                        byte[] bytes = ByteBufUtil.getBytes(data);
                        if (parameters[i].getType() == byte[].class) {
                            arguments.add(bytes);
                        } else {
                            arguments.addAll(List.of(MemorySegment.ofArray(bytes), 0L, bytes.length));
                            i += 2;
                        }
                    } else {
                        arguments.add(value);
                    }
                }
            }
        }
        if (field != fields.length || arguments.size() != parameters.length) {
            throw new AssertionError(encoder + " does not take the " + (fields.length - 1) + " fields decoded");
        }
        return arguments.toArray();
    }
}
