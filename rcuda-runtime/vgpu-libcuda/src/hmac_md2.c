/*
 * HMAC (RFC 2104) over MD2 (RFC 1319): the digest the CUDA runtime expects from the driver's integrity table
 * (served_tables.c), which it computes itself from the same inputs and compares.
 */
#include "served_tables.h"

#include <string.h>

/* RFC 1319's substitution table, built from the digits of pi. */
static const uint8_t PI_SUBSTITUTION[256] = {
    41,  46,  67,  201, 162, 216, 124, 1,   61,  54,  84,  161, 236, 240, 6,   19,  98,  167, 5,   243, 192, 199,
    115, 140, 152, 147, 43,  217, 188, 76,  130, 202, 30,  155, 87,  60,  253, 212, 224, 22,  103, 66,  111, 24,
    138, 23,  229, 18,  190, 78,  196, 214, 218, 158, 222, 73,  160, 251, 245, 142, 187, 47,  238, 122, 169, 104,
    121, 145, 21,  178, 7,   63,  148, 194, 16,  137, 11,  34,  95,  33,  128, 127, 93,  154, 90,  144, 50,  39,
    53,  62,  204, 231, 191, 247, 151, 3,   255, 25,  48,  179, 72,  165, 181, 209, 215, 94,  146, 42,  172, 86,
    170, 198, 79,  184, 56,  210, 150, 164, 125, 182, 118, 252, 107, 226, 156, 116, 4,   241, 69,  157, 112, 89,
    100, 113, 135, 32,  134, 91,  207, 101, 230, 45,  168, 2,   27,  96,  37,  173, 174, 176, 185, 246, 28,  70,
    97,  105, 52,  64,  126, 15,  85,  71,  163, 35,  221, 81,  175, 58,  195, 92,  249, 206, 186, 197, 234, 38,
    44,  83,  13,  110, 133, 40,  132, 9,   211, 223, 205, 244, 65,  129, 77,  82,  106, 220, 55,  200, 108, 193,
    171, 250, 36,  225, 123, 8,   12,  189, 177, 74,  120, 136, 149, 139, 227, 99,  232, 109, 233, 203, 213, 254,
    59,  0,   29,  57,  242, 239, 183, 14,  102, 88,  208, 228, 166, 119, 114, 248, 235, 117, 75,  10,  49,  68,
    80,  180, 143, 237, 31,  26,  219, 153, 141, 51,  159, 17,  131, 20};

#define MD2_BLOCK 16

struct md2 {
    uint8_t state[3 * MD2_BLOCK];
    uint8_t checksum[MD2_BLOCK];
    uint8_t pending[MD2_BLOCK];
    size_t pending_length;
};

static void md2_compress(struct md2 *md2, const uint8_t *block)
{
    for (int j = 0; j < MD2_BLOCK; j++) {
        md2->state[MD2_BLOCK + j] = block[j];
        md2->state[2 * MD2_BLOCK + j] = (uint8_t)(md2->state[j] ^ block[j]);
    }
    uint8_t t = 0;
    for (int round = 0; round < 18; round++) {
        for (int k = 0; k < 3 * MD2_BLOCK; k++) {
            md2->state[k] ^= PI_SUBSTITUTION[t];
            t = md2->state[k];
        }
        t = (uint8_t)(t + round);
    }
    uint8_t last = md2->checksum[MD2_BLOCK - 1];
    for (int j = 0; j < MD2_BLOCK; j++) {
        md2->checksum[j] ^= PI_SUBSTITUTION[block[j] ^ last];
        last = md2->checksum[j];
    }
}

static void md2_update(struct md2 *md2, const uint8_t *bytes, size_t length)
{
    for (size_t i = 0; i < length; i++) {
        md2->pending[md2->pending_length++] = bytes[i];
        if (md2->pending_length == MD2_BLOCK) {
            md2_compress(md2, md2->pending);
            md2->pending_length = 0;
        }
    }
}

static void md2_final(struct md2 *md2, uint8_t digest[MD2_BLOCK])
{
    uint8_t padding[MD2_BLOCK];
    size_t pad = MD2_BLOCK - md2->pending_length; /* 1..16 bytes, each of that value */
    memset(padding, (int)pad, pad);
    md2_update(md2, padding, pad);
    uint8_t checksum[MD2_BLOCK];
    memcpy(checksum, md2->checksum, sizeof checksum);
    md2_update(md2, checksum, sizeof checksum);
    memcpy(digest, md2->state, MD2_BLOCK);
}

void vgpu_hmac_md2(const uint8_t key[16], const uint8_t *message, size_t length, uint8_t digest[16])
{
    uint8_t padded_key[MD2_BLOCK];
    struct md2 inner = {0};
    for (int i = 0; i < MD2_BLOCK; i++) {
        padded_key[i] = key[i] ^ 0x36;
    }
    md2_update(&inner, padded_key, sizeof padded_key);
    md2_update(&inner, message, length);
    uint8_t inner_digest[MD2_BLOCK];
    md2_final(&inner, inner_digest);

    struct md2 outer = {0};
    for (int i = 0; i < MD2_BLOCK; i++) {
        padded_key[i] = key[i] ^ 0x5c;
    }
    md2_update(&outer, padded_key, sizeof padded_key);
    md2_update(&outer, inner_digest, sizeof inner_digest);
    md2_final(&outer, digest);
}
