package org.vgpu.runtime.api;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * An enum of CUDA constants vgpu answers for ({@link DeviceAttribute}, {@link FunctionAttribute},
 * {@link PointerAttribute}, ...), each with CUDA's number, which JCuda programs pass; the remote
 * protocol carries every such enum as that number, by one codec.
 */
public interface CudaNumbered {

    /** CUDA's value of the constant. */
    int cudaNumber();

    /**
     * The constants of one such enum by CUDA's number; a number that is none of them is
     * CUDA_ERROR_INVALID_VALUE naming the call, the number and what vgpu answers instead.
     */
    final class Index<E extends Enum<E> & CudaNumbered> {
        private final Map<Integer, E> byNumber = new HashMap<>();
        private final String call;
        private final String what;
        private final String known;

        public Index(String call, E[] values) {
            this(call, values, null);
        }

        /**
         * @param known what the refusal of an unknown number says is known instead; null lists every
         *     constant, which suits a short enum
         */
        public Index(String call, E[] values, String known) {
            this.call = call;
            // What a constant is, by the enum's name: DeviceAttribute's are attributes, ContextLimit's limits.
            String type = values.getClass().getComponentType().getSimpleName();
            this.what = type.substring(type.replaceAll("[A-Z][a-z0-9]*$", "").length())
                    .toLowerCase(Locale.ROOT);
            for (E value : values) {
                byNumber.put(value.cudaNumber(), value);
            }
            this.known = known != null
                    ? known
                    : "it answers "
                            + Arrays.stream(values)
                                    .map(value -> value.name() + " (" + value.cudaNumber() + ")")
                                    .collect(Collectors.joining(", "));
        }

        public E of(int number) {
            E value = byNumber.get(number);
            if (value == null) {
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_INVALID_VALUE,
                        call + ": " + what + " " + number + " is not one vgpu answers; " + known);
            }
            return value;
        }
    }
}
