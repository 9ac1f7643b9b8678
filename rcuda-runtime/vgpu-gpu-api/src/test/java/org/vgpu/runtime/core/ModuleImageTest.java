package org.vgpu.runtime.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.List;

import org.junit.jupiter.api.Test;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.VgpuException;

class ModuleImageTest {
    private static final String PTX = """
            //
            .version 8.0
            .target sm_80
            .address_size 64

            .visible .entry noArgs()
            {
                ret;
            }
            .visible .entry mixed(
                .param .u64 .ptr .global .align 4 mixed_param_0,
                .param .u32 mixed_param_1,
                .param .f64 mixed_param_2,
                .param .align 4 .b8 mixed_param_3[12],
                .param .u8 mixed_param_4
            )
            {
                ret;
            }
            """;

    @Test
    void readsKernelSignaturesFromPtx() {
        ModuleImage image = ModuleImage.parse(PTX.getBytes(StandardCharsets.US_ASCII));
        assertEquals(ModuleImage.Format.PTX, image.format());
        assertEquals(List.of(), image.ptxSignature("noArgs").parameterSizes());
        assertEquals(List.of(8, 4, 8, 12, 1), image.ptxSignature("mixed").parameterSizes());
        assertEquals(
                ErrorCode.CUDA_ERROR_NOT_FOUND,
                assertThrows(VgpuException.class, () -> image.ptxSignature("other"))
                        .code());
    }

    @Test
    void signaturesCheckArgumentSizes() {
        var signature =
                ModuleImage.parse(PTX.getBytes(StandardCharsets.US_ASCII)).ptxSignature("mixed");
        signature.check(KernelArgs.builder()
                .pointer(1)
                .i32(2)
                .f64(3)
                .bytes(new byte[12])
                .bytes(new byte[1])
                .build());
        assertThrows(
                VgpuException.class,
                () -> signature.check(KernelArgs.builder()
                        .pointer(1)
                        .i32(2)
                        .f32(3)
                        .bytes(new byte[12])
                        .bytes(new byte[1])
                        .build()));
    }

    @Test
    void readsModuleVariablesWithTheirSizesAndInitialValues() {
        String ptx = """
                .version 8.0
                .target sm_80
                .address_size 64
                .visible .global .align 4 .f32 scale = 0f40000000;
                .global .align 8 .b8 table[12];
                .visible .const .align 4 .u32 coefficients[3] = {1, 0x100, -1};
                .const .align 8 .f64 half = 0d3FE0000000000000;
                .extern .global .align 4 .u32 elsewhere;
                .visible .entry k(.param .u64 p)
                {
                    ld.global.f32 %f1, [scale];
                    ret;
                }
                """;
        ModuleImage image = ModuleImage.parse(ptx.getBytes(StandardCharsets.US_ASCII));
        assertEquals(
                java.util.Set.of("scale", "table", "coefficients", "half"),
                image.ptxGlobals().keySet());
        assertArrayEquals(new byte[] {0, 0, 0, 0x40}, image.ptxGlobal("scale").initialValue(), "2.0f, little-endian");
        assertArrayEquals(new byte[12], image.ptxGlobal("table").initialValue());
        assertArrayEquals(
                new byte[] {1, 0, 0, 0, 0, 1, 0, 0, -1, -1, -1, -1},
                image.ptxGlobal("coefficients").initialValue());
        assertEquals(
                0.5,
                java.nio.ByteBuffer.wrap(image.ptxGlobal("half").initialValue())
                        .order(java.nio.ByteOrder.LITTLE_ENDIAN)
                        .getDouble());
        assertEquals(
                ErrorCode.CUDA_ERROR_NOT_FOUND,
                assertThrows(VgpuException.class, () -> image.ptxGlobal("elsewhere"))
                        .code(),
                "an extern variable is defined by another module");
        String tooMany = ptx.replace("{1, 0x100, -1}", "{1, 2, 3, 4}");
        VgpuException e =
                assertThrows(VgpuException.class, () -> ModuleImage.parse(tooMany.getBytes(StandardCharsets.US_ASCII)));
        assertEquals(ErrorCode.CUDA_ERROR_INVALID_PTX, e.code());
    }

    @Test
    void classifiesBinaryImagesAndTerminatesPtx() {
        assertEquals(
                ModuleImage.Format.CUBIN,
                ModuleImage.parse(new byte[] {0x7f, 'E', 'L', 'F', 0}).format());
        assertEquals(
                ModuleImage.Format.FATBIN,
                ModuleImage.parse(new byte[] {0x50, (byte) 0xed, 0x55, (byte) 0xba, 1})
                        .format());
        byte[] driverImage =
                ModuleImage.parse(PTX.getBytes(StandardCharsets.US_ASCII)).driverImage();
        assertEquals(0, driverImage[driverImage.length - 1]);
    }

    @Test
    void garbageIsAnInvalidImage() {
        for (byte[] garbage : new byte[][] {null, new byte[0], "hello world".getBytes(StandardCharsets.US_ASCII)}) {
            assertEquals(
                    ErrorCode.CUDA_ERROR_INVALID_IMAGE,
                    assertThrows(VgpuException.class, () -> ModuleImage.parse(garbage))
                            .code());
        }
        byte[] badParam = ".version 8.0\n.target sm_80\n.entry k(.param .weird x)".getBytes(StandardCharsets.US_ASCII);
        assertEquals(
                ErrorCode.CUDA_ERROR_INVALID_PTX,
                assertThrows(VgpuException.class, () -> ModuleImage.parse(badParam))
                        .code());
    }
}
