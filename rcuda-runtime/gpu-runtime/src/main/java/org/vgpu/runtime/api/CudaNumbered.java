package org.vgpu.runtime.api;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * An enum of CUDA constants vgpu answers for ({@link DeviceAttribute}, {@link FunctionAttribute},
 * {@link PointerAttribute}), each with CUDA's number, which JCuda programs pass.
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
        private final String known;

        public Index(String call, E[] values) {
            this.call = call;
            for (E value : values) {
                byNumber.put(value.cudaNumber(), value);
            }
            this.known = Arrays.stream(values)
                    .map(value -> value.name() + " (" + value.cudaNumber() + ")")
                    .collect(Collectors.joining(", "));
        }

        public E of(int number) {
            E value = byNumber.get(number);
            if (value == null) {
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_INVALID_VALUE,
                        call + ": attribute " + number + " is not one vgpu answers; it answers " + known);
            }
            return value;
        }
    }
}
