/*
 * Requests on a vGPU's session with the local worker, in the remote GPU worker's frames
 * (vgpu_wire.h, generated from the protocol's one description): big-endian, a header of length,
 * opcode, flags and request id, then the body. A synchronous request is answered by OK (with a
 * result), ERROR (code, name, detail) or, for a copy from the device, DATA frames; an asynchronous
 * one (FLAG_ASYNC) by nothing, its failure kept by the worker for the next synchronizing request.
 */
#include "serving.h"
#include "vgpu_wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Copies to the device travel in chunks of this size: well under a frame's limit. */
#define CHUNK_BYTES (4u << 20)

static void reserve(struct vgpu_request *request, size_t more)
{
    if (request->failed || request->length + more <= request->capacity) {
        return;
    }
    size_t capacity = request->capacity == 0 ? 256 : request->capacity;
    while (capacity < request->length + more) {
        capacity *= 2;
    }
    uint8_t *data = realloc(request->data, capacity);
    if (data == NULL) {
        request->failed = 1;
        return;
    }
    request->data = data;
    request->capacity = capacity;
}

void vgpu_put_bytes(struct vgpu_request *request, const void *bytes, size_t length)
{
    reserve(request, length);
    if (!request->failed && length > 0) {
        memcpy(request->data + request->length, bytes, length);
        request->length += length;
    }
}

void vgpu_put_u8(struct vgpu_request *request, uint8_t value)
{
    vgpu_put_bytes(request, &value, 1);
}

void vgpu_put_u16(struct vgpu_request *request, uint16_t value)
{
    uint8_t bytes[2] = {(uint8_t)(value >> 8), (uint8_t)value};
    vgpu_put_bytes(request, bytes, sizeof bytes);
}

void vgpu_put_u32(struct vgpu_request *request, uint32_t value)
{
    uint8_t bytes[4] = {(uint8_t)(value >> 24), (uint8_t)(value >> 16), (uint8_t)(value >> 8), (uint8_t)value};
    vgpu_put_bytes(request, bytes, sizeof bytes);
}

void vgpu_put_u64(struct vgpu_request *request, uint64_t value)
{
    vgpu_put_u32(request, (uint32_t)(value >> 32));
    vgpu_put_u32(request, (uint32_t)value);
}

void vgpu_put_string(struct vgpu_request *request, const char *text)
{
    size_t length = strlen(text);
    vgpu_put_u32(request, (uint32_t)length);
    vgpu_put_bytes(request, text, length);
}

void vgpu_request_begin(struct vgpu_request *request, int opcode)
{
    memset(request, 0, sizeof *request);
    vgpu_put_u32(request, 0); /* the length, set when sent */
    vgpu_put_u16(request, (uint16_t)opcode);
    vgpu_put_u16(request, 0); /* flags */
    vgpu_put_u32(request, 0); /* the request id, set when sent */
}

void vgpu_request_free(struct vgpu_request *request)
{
    free(request->data);
    memset(request, 0, sizeof *request);
}

static const uint8_t *take(struct vgpu_reply *reply, size_t bytes)
{
    if (reply->truncated || reply->length - reply->read < bytes) {
        reply->truncated = 1;
        return NULL;
    }
    const uint8_t *at = reply->body + reply->read;
    reply->read += bytes;
    return at;
}

uint8_t vgpu_get_u8(struct vgpu_reply *reply)
{
    const uint8_t *at = take(reply, 1);
    return at == NULL ? 0 : at[0];
}

uint16_t vgpu_get_u16(struct vgpu_reply *reply)
{
    const uint8_t *at = take(reply, 2);
    return at == NULL ? 0 : (uint16_t)(at[0] << 8 | at[1]);
}

uint32_t vgpu_get_u32(struct vgpu_reply *reply)
{
    const uint8_t *at = take(reply, 4);
    return at == NULL ? 0 : (uint32_t)at[0] << 24 | (uint32_t)at[1] << 16 | (uint32_t)at[2] << 8 | at[3];
}

uint64_t vgpu_get_u64(struct vgpu_reply *reply)
{
    uint64_t high = vgpu_get_u32(reply);
    return high << 32 | vgpu_get_u32(reply);
}

void vgpu_get_string(struct vgpu_reply *reply, char *text, size_t size)
{
    uint32_t length = vgpu_get_u32(reply);
    const uint8_t *at = take(reply, length);
    size_t kept = at == NULL ? 0 : (length < size - 1 ? length : size - 1);
    if (kept > 0) {
        memcpy(text, at, kept);
    }
    text[kept] = '\0';
}

CUresult vgpu_reply_ok(const struct vgpu_reply *reply)
{
    if (reply->truncated) {
        vgpu_say("the local worker's answer is shorter than its kind says: the session is not usable");
        return CUDA_ERROR_UNKNOWN;
    }
    return CUDA_SUCCESS;
}

void vgpu_reply_free(struct vgpu_reply *reply)
{
    free(reply->body);
    memset(reply, 0, sizeof *reply);
}

/* Writes a request's bytes; an asynchronous one served in process may wait for the next request that is answered. */
static int write_all(struct vgpu_device *device, const void *bytes, size_t length, int asynchronous)
{
    if (device->in_process != NULL) {
        return vgpu_in_process_write(device, bytes, length, asynchronous);
    }
    int fd = device->fd;
    const uint8_t *at = bytes;
    while (length > 0) {
        ssize_t wrote = send(fd, at, length, MSG_NOSIGNAL);
        if (wrote < 0 && errno == EINTR) {
            continue;
        }
        if (wrote <= 0) {
            return -1;
        }
        at += wrote;
        length -= (size_t)wrote;
    }
    return 0;
}

static int read_all(struct vgpu_device *device, void *bytes, size_t length)
{
    if (device->in_process != NULL) {
        return vgpu_in_process_read(device, bytes, length);
    }
    int fd = device->fd;
    uint8_t *at = bytes;
    while (length > 0) {
        ssize_t got = recv(fd, at, length, 0);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            return -1;
        }
        at += got;
        length -= (size_t)got;
    }
    return 0;
}

/* A frame read whole: its opcode, flags, request id and body (malloc'd). */
struct frame {
    int opcode;
    int flags;
    uint32_t request_id;
    struct vgpu_reply body;
};

static CUresult lost(struct vgpu_device *device, const char *what)
{
    if (vgpu_in_process_closed_at_exit()) {
        /* the program's exit closed the session: nothing broke, and nothing is said */
        vgpu_disconnect(device);
        device->open_failure = CUDA_ERROR_DEINITIALIZED;
        return CUDA_ERROR_DEINITIALIZED;
    }
    vgpu_say("vGPU %d: the session with the local worker broke while %s (%s): its calls fail from here on",
             device->index, what, errno != 0 ? strerror(errno) : "closed");
    vgpu_disconnect(device);
    device->open_failure = CUDA_ERROR_LAUNCH_FAILED;
    return CUDA_ERROR_LAUNCH_FAILED;
}

static CUresult read_frame(struct vgpu_device *device, struct frame *frame)
{
    uint8_t header[VGPU_WIRE_HEADER_BYTES];
    errno = 0;
    if (read_all(device, header, sizeof header) != 0) {
        return lost(device, "reading an answer");
    }
    uint32_t length = (uint32_t)header[0] << 24 | (uint32_t)header[1] << 16 | (uint32_t)header[2] << 8 | header[3];
    if (length < VGPU_WIRE_HEADER_BYTES - 4 || length > VGPU_WIRE_MAX_BODY_BYTES + VGPU_WIRE_HEADER_BYTES) {
        vgpu_say("vGPU %d: the local worker sent a frame of %u bytes, which the protocol does not allow", device->index,
                 length);
        return lost(device, "reading an answer");
    }
    frame->opcode = header[4] << 8 | header[5];
    frame->flags = header[6] << 8 | header[7];
    frame->request_id = (uint32_t)header[8] << 24 | (uint32_t)header[9] << 16 | (uint32_t)header[10] << 8 | header[11];
    memset(&frame->body, 0, sizeof frame->body);
    frame->body.length = length - (VGPU_WIRE_HEADER_BYTES - 4);
    frame->body.body = malloc(frame->body.length + 1);
    if (frame->body.body == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (read_all(device, frame->body.body, frame->body.length) != 0) {
        vgpu_reply_free(&frame->body);
        return lost(device, "reading an answer");
    }
    return CUDA_SUCCESS;
}

/* vgpu's own conditions (org.vgpu.runtime.api.ErrorCode, numbers above VGPU_CODES_FROM) are no CUresult a program or
   the CUDA runtime can name: each is answered as the CUDA error nearest in meaning. */
#define VGPU_CODES_FROM 10000u
static CUresult cuda_result_of(uint32_t code)
{
    switch (code) {
    case 0:
        return CUDA_ERROR_UNKNOWN; /* an ERROR frame says something failed */
    case 10001: /* VGPU_WINDOW_UNAVAILABLE */
    case 10002: /* VGPU_WINDOW_FULL */
        return CUDA_ERROR_OUT_OF_MEMORY;
    case 10003: /* VGPU_NO_KERNEL_TWIN: the emulation has no code for the kernel */
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    case 10004: /* VGPU_BACKEND_UNAVAILABLE */
        return CUDA_ERROR_NO_DEVICE;
    case 10005: /* VGPU_CLOSED */
        return CUDA_ERROR_DEINITIALIZED;
    case 10007: /* VGPU_AUTH_FAILED */
        return CUDA_ERROR_NOT_PERMITTED;
    case 10008: /* VGPU_WORKER_LOST: as a broken session (lost) */
        return CUDA_ERROR_LAUNCH_FAILED;
    default: /* VGPU_PROTOCOL_ERROR, VGPU_MIGRATION_FAILED, and codes of a newer worker */
        return code > VGPU_CODES_FROM ? CUDA_ERROR_UNKNOWN : (CUresult)code;
    }
}

/* The CUresult of an ERROR frame: its number where it is CUDA's; vgpu's own said once each, with what stands for it. */
static CUresult error_of(struct vgpu_device *device, struct frame *frame)
{
    static uint32_t said[16]; /* vgpu's codes already said, by their number above VGPU_CODES_FROM */
    uint32_t code = vgpu_get_u32(&frame->body);
    char name[64];
    char detail[512];
    vgpu_get_string(&frame->body, name, sizeof name);
    vgpu_get_string(&frame->body, detail, sizeof detail);
    CUresult result = cuda_result_of(code);
    if (vgpu_verbose) {
        vgpu_say("vGPU %d: %s: %s", device->index, name, detail);
    } else if (code > VGPU_CODES_FROM &&
               (code - VGPU_CODES_FROM >= 16 || !__atomic_exchange_n(&said[code - VGPU_CODES_FROM], 1, __ATOMIC_RELAXED))) {
        const char *standing = NULL;
        vgpu_served_cuGetErrorName(result, &standing);
        vgpu_say("vGPU %d: %s: %s (the program is answered %s)", device->index, name, detail,
                 standing != NULL ? standing : "an error");
    }
    return result;
}

/* Sends request as (one frame of) request id, with flags. */
static CUresult send_request(struct vgpu_device *device, struct vgpu_request *request, int flags, uint32_t id)
{
    if (request->failed) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    uint32_t length = (uint32_t)(request->length - 4);
    uint8_t *d = request->data;
    d[0] = (uint8_t)(length >> 24);
    d[1] = (uint8_t)(length >> 16);
    d[2] = (uint8_t)(length >> 8);
    d[3] = (uint8_t)length;
    d[6] = (uint8_t)(flags >> 8);
    d[7] = (uint8_t)flags;
    d[8] = (uint8_t)(id >> 24);
    d[9] = (uint8_t)(id >> 16);
    d[10] = (uint8_t)(id >> 8);
    d[11] = (uint8_t)id;
    errno = 0;
    int asynchronous = (flags & (VGPU_WIRE_FLAG_ASYNC | VGPU_WIRE_FLAG_MORE)) == VGPU_WIRE_FLAG_ASYNC;
    return write_all(device, request->data, request->length, asynchronous) == 0 ? CUDA_SUCCESS
                                                                                 : lost(device, "sending a request");
}

/* The next frame that answers request id (an earlier request's late word is skipped: a kept failure is
   reported by the next request); an ERROR is returned as its CUresult. */
static CUresult read_answer(struct vgpu_device *device, uint32_t id, struct frame *frame)
{
    for (;;) {
        CUresult result = read_frame(device, frame);
        if (result != CUDA_SUCCESS) {
            return result;
        }
        if (frame->request_id != id) {
            vgpu_reply_free(&frame->body);
            continue;
        }
        /* the worker takes a session's requests in order: it has taken every asynchronous one sent before */
        device->unanswered = 0;
        if (frame->opcode == VGPU_OP_ERROR) {
            result = error_of(device, frame);
            vgpu_reply_free(&frame->body);
            return result;
        }
        return CUDA_SUCCESS;
    }
}

/* Waits for the answer to request id: OK (its body to reply) or ERROR. */
static CUresult await_answer(struct vgpu_device *device, uint32_t id, struct vgpu_reply *reply)
{
    struct frame frame;
    CUresult result = read_answer(device, id, &frame);
    if (result != CUDA_SUCCESS) {
        return result;
    }
    if (frame.opcode != VGPU_OP_OK && frame.opcode != VGPU_OP_WELCOME) {
        vgpu_reply_free(&frame.body);
        vgpu_say("vGPU %d: the local worker answered with opcode 0x%04x where OK or ERROR was due", device->index,
                 frame.opcode);
        return lost(device, "reading an answer");
    }
    if (reply != NULL) {
        *reply = frame.body;
    } else {
        vgpu_reply_free(&frame.body);
    }
    return CUDA_SUCCESS;
}

CUresult vgpu_call(struct vgpu_device *device, struct vgpu_request *request, struct vgpu_reply *reply)
{
    uint32_t id = device->next_request_id++;
    CUresult result = device->fd < 0 ? device->open_failure : send_request(device, request, 0, id);
    vgpu_request_free(request);
    if (result != CUDA_SUCCESS) {
        return result;
    }
    return await_answer(device, id, reply);
}

/* A question the worker answers in its turn, after the requests sent before it, without running anything: when
   it is answered, the worker has taken those. Not synchronizing, so it leaves a kept failure for the program's
   next synchronizing call. */
static CUresult await_taken(struct vgpu_device *device)
{
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_DEVICE_GET_ATTRIBUTE);
    vgpu_put_u32(&request, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    return vgpu_call(device, &request, NULL);
}

/* Before an asynchronous request: the session is open and the window has room (else the worker is asked to catch
   up). */
static CUresult room_in_window(struct vgpu_device *device)
{
    CUresult result = device->fd < 0 ? device->open_failure : CUDA_SUCCESS;
    if (result == CUDA_SUCCESS && device->unanswered >= VGPU_ASYNC_WINDOW) {
        result = await_taken(device);
    }
    return result;
}

/* After an asynchronous request went: one more unanswered, and its failure is for the next served synchronization. */
static void sent_async(struct vgpu_device *device)
{
    device->unanswered++;
    vgpu_direct_served_async(device);
}

CUresult vgpu_send_async(struct vgpu_device *device, struct vgpu_request *request)
{
    CUresult result = room_in_window(device);
    if (result == CUDA_SUCCESS) {
        result = send_request(device, request, VGPU_WIRE_FLAG_ASYNC, device->next_request_id++);
    }
    if (result == CUDA_SUCCESS) {
        sent_async(device);
    }
    vgpu_request_free(request);
    return result;
}

/* The chunks of one copy to the device, as request id on stream, each with flags (and MORE on all but the last). */
static CUresult send_chunks(struct vgpu_device *device, int stream, uint64_t dst, const void *src, size_t bytes,
                            int flags, uint32_t id)
{
    size_t offset = 0;
    do {
        size_t chunk = bytes - offset < CHUNK_BYTES ? bytes - offset : CHUNK_BYTES;
        int more = offset + chunk < bytes;
        struct vgpu_request request;
        vgpu_request_begin(&request, VGPU_OP_MEMCPY_HTOD);
        vgpu_put_u32(&request, (uint32_t)stream);
        vgpu_put_u64(&request, dst + offset);
        vgpu_put_bytes(&request, (const uint8_t *)src + offset, chunk);
        CUresult result = send_request(device, &request, flags | (more ? VGPU_WIRE_FLAG_MORE : 0), id);
        vgpu_request_free(&request);
        if (result != CUDA_SUCCESS) {
            return result;
        }
        offset += chunk;
    } while (offset < bytes);
    return CUDA_SUCCESS;
}

CUresult vgpu_send_to_device(struct vgpu_device *device, uint64_t dst, const void *src, size_t bytes)
{
    if (device->fd < 0) {
        return device->open_failure;
    }
    uint32_t id = device->next_request_id++; /* every chunk of the copy carries it */
    CUresult result = send_chunks(device, 0, dst, src, bytes, 0, id); /* the default stream */
    return result == CUDA_SUCCESS ? await_answer(device, id, NULL) : result;
}

CUresult vgpu_send_to_device_async(struct vgpu_device *device, int stream, uint64_t dst, const void *src, size_t bytes)
{
    CUresult result = room_in_window(device);
    if (result == CUDA_SUCCESS) {
        result = send_chunks(device, stream, dst, src, bytes, VGPU_WIRE_FLAG_ASYNC, device->next_request_id++);
    }
    if (result == CUDA_SUCCESS) {
        sent_async(device);
    }
    return result;
}

/* A scatter chunk names at most this many pieces (RequestDecoder.MAX_SCATTER_PIECES). */
#define MAX_SCATTER_PIECES 65536u
/* A gather names at most this many regions: their table fills one frame's body (RequestDecoder.MAX_GATHER_REGIONS). */
#define MAX_GATHER_REGIONS ((VGPU_WIRE_MAX_BODY_BYTES - 12u) / 16u)

/* A place in rows: the byte at column of row. */
struct place {
    size_t row;
    size_t column;
};

/* The piece of rows that starts at *at and holds at most room bytes (the rest of the row, or less); *at moves past
   it. */
static size_t next_piece(const struct vgpu_rows *rows, struct place *at, size_t room)
{
    size_t left = rows->width - at->column;
    size_t piece = left < room ? left : room;
    at->column += piece;
    if (at->column == rows->width) {
        at->row++;
        at->column = 0;
    }
    return piece;
}

CUresult vgpu_send_rows_to_device(struct vgpu_device *device, const struct vgpu_rows *dst, const void *src,
                                  size_t src_pitch)
{
    if (device->fd < 0) {
        return device->open_failure;
    }
    uint32_t id = device->next_request_id++; /* every chunk of the copy carries it */
    struct place start = {0, 0};
    do {
        /* the chunk's pieces: whole rows, or parts of a long one, up to a chunk's bytes or a chunk's pieces */
        struct place end = start;
        uint32_t pieces = 0;
        size_t bytes = 0;
        while (end.row < dst->height && bytes < CHUNK_BYTES && pieces < MAX_SCATTER_PIECES) {
            bytes += next_piece(dst, &end, CHUNK_BYTES - bytes);
            pieces++;
        }
        struct vgpu_request request;
        vgpu_request_begin(&request, VGPU_OP_MEMCPY_HTOD_SCATTER);
        vgpu_put_u32(&request, 0); /* the default stream */
        vgpu_put_u32(&request, pieces);
        /* the pieces again, as the loop above cut them: each the rest of its row, the last maybe less */
        struct place at = start;
        size_t named = 0;
        for (uint32_t i = 0; i < pieces; i++) {
            vgpu_put_u64(&request, dst->start + at.row * dst->pitch + at.column);
            size_t piece = next_piece(dst, &at, bytes - named);
            vgpu_put_u64(&request, piece);
            named += piece;
        }
        at = start;
        size_t sent = 0;
        for (uint32_t i = 0; i < pieces; i++) {
            const uint8_t *from = (const uint8_t *)src + at.row * src_pitch + at.column;
            size_t piece = next_piece(dst, &at, bytes - sent);
            vgpu_put_bytes(&request, from, piece);
            sent += piece;
        }
        int more = end.row < dst->height;
        CUresult result = send_request(device, &request, more ? VGPU_WIRE_FLAG_MORE : 0, id);
        vgpu_request_free(&request);
        if (result != CUDA_SUCCESS) {
            return result;
        }
        start = end;
    } while (start.row < dst->height);
    return await_answer(device, id, NULL);
}

/* Lands length bytes of a copy from the device, at offset of its bytes taken back to back, in the program's memory. */
typedef void (*lands_bytes)(void *to, uint64_t offset, const uint8_t *bytes, size_t length);

/* Reads the DATA frames that answer request id, bytes in all, and lands each with land. */
static CUresult land_data(struct vgpu_device *device, uint32_t id, size_t bytes, lands_bytes land, void *to)
{
    for (;;) {
        struct frame frame;
        CUresult result = read_answer(device, id, &frame);
        if (result != CUDA_SUCCESS) {
            return result;
        }
        if (frame.opcode != VGPU_OP_DATA) {
            vgpu_reply_free(&frame.body);
            return lost(device, "reading a copy's data");
        }
        uint64_t offset = vgpu_get_u64(&frame.body);
        size_t length = frame.body.length - frame.body.read;
        if (frame.body.truncated || offset > bytes || length > bytes - offset) {
            vgpu_reply_free(&frame.body);
            vgpu_say("vGPU %d: the local worker sent data outside the copy's %zu bytes", device->index, bytes);
            return lost(device, "reading a copy's data");
        }
        land(to, offset, frame.body.body + frame.body.read, length);
        int more = (frame.flags & VGPU_WIRE_FLAG_MORE) != 0;
        vgpu_reply_free(&frame.body);
        if (!more) {
            return CUDA_SUCCESS;
        }
    }
}

static void land_contiguous(void *to, uint64_t offset, const uint8_t *bytes, size_t length)
{
    memcpy((uint8_t *)to + offset, bytes, length);
}

CUresult vgpu_fetch_from_device(struct vgpu_device *device, uint64_t src, void *dst, size_t bytes)
{
    if (device->fd < 0) {
        return device->open_failure;
    }
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_MEMCPY_DTOH);
    vgpu_put_u32(&request, 0); /* the default stream */
    vgpu_put_u64(&request, src);
    vgpu_put_u64(&request, bytes);
    vgpu_put_u32(&request, CHUNK_BYTES);
    uint32_t id = device->next_request_id++;
    CUresult result = send_request(device, &request, 0, id);
    vgpu_request_free(&request);
    if (result != CUDA_SUCCESS) {
        return result;
    }
    return land_data(device, id, bytes, land_contiguous, dst);
}

/* Where the rows of a gathered copy land: rows of width bytes, pitch bytes apart from start. */
struct row_landing {
    uint8_t *start;
    size_t pitch;
    size_t width;
};

static void land_in_rows(void *to, uint64_t offset, const uint8_t *bytes, size_t length)
{
    const struct row_landing *rows = to;
    while (length > 0) {
        size_t row = offset / rows->width;
        size_t column = offset % rows->width;
        size_t piece = rows->width - column < length ? rows->width - column : length;
        memcpy(rows->start + row * rows->pitch + column, bytes, piece);
        bytes += piece;
        offset += piece;
        length -= piece;
    }
}

CUresult vgpu_fetch_rows_from_device(struct vgpu_device *device, const struct vgpu_rows *src, void *dst,
                                     size_t dst_pitch)
{
    if (device->fd < 0) {
        return device->open_failure;
    }
    /* one gather per table of rows that fits a frame: a few for a million rows */
    for (size_t first = 0; first < src->height; first += MAX_GATHER_REGIONS) {
        size_t rows = src->height - first < MAX_GATHER_REGIONS ? src->height - first : MAX_GATHER_REGIONS;
        struct vgpu_request request;
        vgpu_request_begin(&request, VGPU_OP_MEMCPY_DTOH_GATHER);
        vgpu_put_u32(&request, 0); /* the default stream */
        vgpu_put_u32(&request, CHUNK_BYTES);
        vgpu_put_u32(&request, (uint32_t)rows);
        for (size_t row = first; row < first + rows; row++) {
            vgpu_put_u64(&request, src->start + row * src->pitch);
            vgpu_put_u64(&request, src->width);
        }
        uint32_t id = device->next_request_id++;
        CUresult result = send_request(device, &request, 0, id);
        vgpu_request_free(&request);
        if (result == CUDA_SUCCESS) {
            struct row_landing landing = {(uint8_t *)dst + first * dst_pitch, dst_pitch, src->width};
            result = land_data(device, id, rows * src->width, land_in_rows, &landing);
        }
        if (result != CUDA_SUCCESS) {
            return result;
        }
    }
    return CUDA_SUCCESS;
}

/* Says HELLO on the session just opened (a socket's, or one in this process) and keeps its WELCOME. */
static CUresult hello(struct vgpu_device *device);

CUresult vgpu_connect(struct vgpu_device *device, const char *socket_path)
{
    if (vgpu_in_process_chosen()) {
        CUresult opened = vgpu_in_process_open(device);
        if (opened != CUDA_SUCCESS) {
            return opened;
        }
        device->fd = VGPU_FD_IN_PROCESS;
        CUresult welcomed = hello(device);
        if (welcomed == CUDA_SUCCESS) {
            vgpu_direct_offer(device);
        }
        return welcomed;
    }
    struct sockaddr_un address;
    memset(&address, 0, sizeof address);
    address.sun_family = AF_UNIX;
    if (strlen(socket_path) >= sizeof address.sun_path) {
        vgpu_say("the local worker's socket path %s is too long for a Unix socket", socket_path);
        return CUDA_ERROR_NO_DEVICE;
    }
    strcpy(address.sun_path, socket_path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        vgpu_say("vGPU %d: cannot reach the local worker of `vgpu run` at %s: %s", device->index, socket_path,
                 strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return CUDA_ERROR_NO_DEVICE;
    }
    device->fd = fd;
    return hello(device);
}

static CUresult hello(struct vgpu_device *device)
{
    struct vgpu_request hello;
    vgpu_request_begin(&hello, VGPU_OP_HELLO);
    vgpu_put_u32(&hello, VGPU_WIRE_MAGIC);
    vgpu_put_u16(&hello, VGPU_WIRE_PROTOCOL_VERSION);
    vgpu_put_u32(&hello, (uint32_t)device->index);
    vgpu_put_u64(&hello, device->window_base);
    vgpu_put_u64(&hello, device->window_size);
    vgpu_put_string(&hello, ""); /* no token: the local worker admits its own user's processes */
    /* from version 2: no ring of shared slots for the bytes of copies (page-locked memory is shared by region) */
    vgpu_put_u8(&hello, 0);
    struct vgpu_reply welcome;
    CUresult result = vgpu_call(device, &hello, &welcome);
    if (result != CUDA_SUCCESS) {
        vgpu_say("vGPU %d: the local worker refused to open it (%d)%s", device->index, (int)result,
                 vgpu_verbose ? "" : "; VGPU_LIBCUDA_VERBOSE=1 shows its words");
        vgpu_disconnect(device);
        return result == CUDA_ERROR_LAUNCH_FAILED ? CUDA_ERROR_NO_DEVICE : result;
    }
    char worker[128];
    vgpu_get_u16(&welcome); /* the protocol version */
    vgpu_get_string(&welcome, worker, sizeof worker);
    vgpu_get_u32(&welcome); /* the idle timeout: a local session has none */
    vgpu_get_string(&welcome, device->name, sizeof device->name);
    device->total_memory = vgpu_get_u64(&welcome);
    device->compute_major = (int)vgpu_get_u32(&welcome);
    device->compute_minor = (int)vgpu_get_u32(&welcome);
    device->multiprocessors = (int)vgpu_get_u32(&welcome);
    device->max_threads_per_block = (int)vgpu_get_u32(&welcome);
    device->warp_size = (int)vgpu_get_u32(&welcome);
    device->emulated = vgpu_get_u8(&welcome);
    result = vgpu_reply_ok(&welcome);
    vgpu_reply_free(&welcome);
    return result;
}

void vgpu_disconnect(struct vgpu_device *device)
{
    atomic_store_explicit(&device->opened, 0, memory_order_release);
    if (device->in_process != NULL) {
        vgpu_direct_end(device);
        vgpu_in_process_close(device);
        device->fd = -1;
    } else if (device->fd >= 0) {
        close(device->fd);
        device->fd = -1;
    }
}
