// vgpu's own copy kernels: many small device regions packed into, or unpacked from, one buffer of
// page-locked host memory in a single launch.
//
// A migration moves every live allocation of a vGPU. Copied one by one, each region costs one
// driver copy (a few microseconds of CPU and copy-engine setup) on the side that reads it and one
// on the side that writes it, whatever its size, so ten thousand 4 KiB regions spend far longer in
// setup than on the wire. These kernels read or write the mapped host buffer directly (zero-copy
// through unified addressing), one block row per region, so a batch of up to COPY_TABLE_REGIONS
// regions costs one launch.
//
// The region table travels by value as a kernel parameter: the driver copies it at launch, so the
// caller may reuse its memory at once and nothing has to be allocated or freed per batch. Its size
// stays under the 4 KiB parameter limit that every driver and architecture accepts, and
// __grid_constant__ lets threads index it where it lies instead of each taking a private copy.
//
// Regenerate the PTX resource after editing this file (needs nvcc 13.x):
//     rcuda-runtime/vgpu-backend-native/src/main/cuda/build-ptx.sh
// and commit this file, the script and
//     rcuda-runtime/vgpu-backend-native/src/main/resources/org/vgpu/nativegpu/copy_kernels.ptx
// together. org.vgpu.runtime.nativegpu.RegionCopyKernels must agree with COPY_TABLE_REGIONS.

#define COPY_TABLE_REGIONS 240

// One launch's regions: region r is device[r] .. device[r] + (end[r] - start(r)) on the device and
// start(r) .. end[r] in the packed host buffer, where start(0) = 0 and start(r) = end[r - 1].
struct RegionTable {
    unsigned long long device[COPY_TABLE_REGIONS];
    unsigned int end[COPY_TABLE_REGIONS];
};

// Copies bytes with the threads of every block of this grid row (blockIdx.x = 0 .. gridDim.x - 1),
// 16 bytes per thread and step when both sides allow it, else byte by byte.
__device__ __forceinline__ void copyRegion(unsigned char* to, const unsigned char* from, unsigned int bytes) {
    unsigned int thread = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int threads = gridDim.x * blockDim.x;
    unsigned int done = 0;
    if ((((unsigned long long) to | (unsigned long long) from) & 15) == 0) {
        unsigned int vectors = bytes / 16;
        uint4* toVectors = (uint4*) to;
        const uint4* fromVectors = (const uint4*) from;
        for (unsigned int i = thread; i < vectors; i += threads) {
            toVectors[i] = fromVectors[i];
        }
        done = vectors * 16;
    }
    for (unsigned int i = done + thread; i < bytes; i += threads) {
        to[i] = from[i];
    }
}

__device__ __forceinline__ unsigned int regionStart(const RegionTable& table, unsigned int region) {
    return region == 0 ? 0 : table.end[region - 1];
}

// Device regions -> packed host buffer (a migration's read of its source). Grid: y = region.
extern "C" __global__ void vgpuGatherRegions(unsigned char* packed, const __grid_constant__ RegionTable table) {
    unsigned int region = blockIdx.y;
    unsigned int start = regionStart(table, region);
    copyRegion(packed + start, (const unsigned char*) table.device[region], table.end[region] - start);
}

// Packed host buffer -> device regions (a migration's write of its target). Grid: y = region.
extern "C" __global__ void vgpuScatterRegions(const unsigned char* packed, const __grid_constant__ RegionTable table) {
    unsigned int region = blockIdx.y;
    unsigned int start = regionStart(table, region);
    copyRegion((unsigned char*) table.device[region], packed + start, table.end[region] - start);
}
