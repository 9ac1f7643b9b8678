/* The driver's hidden tables (cuGetExportTable) as vgpu answers them on a vGPU: served_tables.c, hmac_md2.c. */
#ifndef VGPU_SERVED_TABLES_H
#define VGPU_SERVED_TABLES_H

#include "contract.h"
#include "libcuda_internal.h"

#include <stdint.h>

/* The answer to cuGetExportTable on a vGPU: vgpu's own table of that id, or a refusal naming the id. */
CUresult vgpu_served_export_table(const void **table, const CUuuid *id);

/* The devices the integrity digest covers at most: the job's vGPUs. */
#define VGPU_INTEGRITY_DEVICES_MAX VGPU_VGPUS_MAX

/* What the integrity table's digest covers, as the CUDA runtime computes it too. */
struct vgpu_integrity_input {
    uint32_t driver_version;
    uint32_t runtime_version;
    uint32_t process;
    uint32_t thread;
    uint64_t runtime_table;   /* the address of the table handed out for 6bd5fb6c-... */
    uint64_t integrity_table; /* the address of the integrity table itself */
    uint64_t function;        /* the address of the integrity function */
    uint64_t unix_seconds;
};

struct vgpu_integrity_device {
    CUuuid uuid;
    uint32_t pci_domain;
    uint32_t pci_bus;
    uint32_t pci_device;
};

/* The integrity digest of input and the devices (little-endian halves, as the runtime reads them). */
void vgpu_integrity_digest(const struct vgpu_integrity_input *input, const struct vgpu_integrity_device *devices,
                           int device_count, uint64_t digest[2]);

/* HMAC-MD2 of message under a 16-byte key. */
void vgpu_hmac_md2(const uint8_t key[16], const uint8_t *message, size_t length, uint8_t digest[16]);

#endif
