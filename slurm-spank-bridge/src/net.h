/* Talking to the tracker: one request line, one reply line, bounded in time and size. */
#ifndef VGPU_NET_H
#define VGPU_NET_H

#include <stddef.h>
#include <time.h>

#include "config.h"

/* A point on CLOCK_MONOTONIC after which every wait gives up. */
struct vgpu_deadline {
	struct timespec at;
};

void vgpu_deadline_in(struct vgpu_deadline *d, unsigned seconds);
/* Milliseconds left, 0 when passed. */
int vgpu_deadline_left_ms(const struct vgpu_deadline *d);

/* Connected, blocking-free socket to the tracker, or -1 with err. */
int vgpu_connect(const struct vgpu_config *cfg, const struct vgpu_deadline *d,
		 char *err, size_t errlen);

/* Writes all of buf[0..len) before the deadline. */
int vgpu_write_all(int fd, const char *buf, size_t len, const struct vgpu_deadline *d,
		   char *err, size_t errlen);

/*
 * Reads one '\n'-terminated line into buf (cap bytes). The newline is
 * replaced by a NUL; returns the line's length. Fails on timeout, on end of
 * stream before the newline, on a line that does not fit in cap - 1 bytes,
 * on a NUL byte, and on bytes after the newline (one reply per connection).
 */
int vgpu_read_line(int fd, char *buf, size_t cap, const struct vgpu_deadline *d,
		   char *err, size_t errlen);

/*
 * Connect, send request, read one reply line, close. Returns the reply's
 * length or -1 with err (which names the tracker).
 */
int vgpu_tracker_call(const struct vgpu_config *cfg, const char *request, char *reply,
		      size_t cap, char *err, size_t errlen);

#endif
