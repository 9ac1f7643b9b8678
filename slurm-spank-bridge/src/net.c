#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "net.h"

void vgpu_deadline_in(struct vgpu_deadline *d, unsigned seconds)
{
	clock_gettime(CLOCK_MONOTONIC, &d->at);
	d->at.tv_sec += (time_t)seconds;
}

int vgpu_deadline_left_ms(const struct vgpu_deadline *d)
{
	struct timespec now;
	long long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (long long)(d->at.tv_sec - now.tv_sec) * 1000
	     + (d->at.tv_nsec - now.tv_nsec) / 1000000;
	if (ms <= 0)
		return 0;
	return ms > 3600000 ? 3600000 : (int)ms;
}

/* Waits for events on fd until the deadline; 0 ready, -1 timeout or error. */
static int wait_fd(int fd, short events, const struct vgpu_deadline *d,
		   const char *what, char *err, size_t errlen)
{
	struct pollfd p = { .fd = fd, .events = events };

	for (;;) {
		const int left = vgpu_deadline_left_ms(d);
		int rc;

		if (left == 0)
			return vgpu_fail(err, errlen, "timed out %s", what);
		rc = poll(&p, 1, left);
		if (rc > 0)
			return 0;
		if (rc < 0 && errno != EINTR)
			return vgpu_fail(err, errlen, "poll while %s: %s", what, strerror(errno));
	}
}

static int connect_addr(const struct sockaddr *sa, socklen_t salen, int family,
			const struct vgpu_deadline *d, char *err, size_t errlen)
{
	int fd;
	int soerr = 0;
	socklen_t slen = sizeof(soerr);

	fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return vgpu_fail(err, errlen, "socket: %s", strerror(errno));
	if (connect(fd, sa, salen) == 0)
		return fd;
	if (errno != EINPROGRESS && errno != EAGAIN) {
		vgpu_fail(err, errlen, "connect: %s", strerror(errno));
		goto fail;
	}
	if (wait_fd(fd, POLLOUT, d, "connecting", err, errlen) != 0)
		goto fail;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &slen) != 0) {
		vgpu_fail(err, errlen, "getsockopt: %s", strerror(errno));
		goto fail;
	}
	if (soerr != 0) {
		vgpu_fail(err, errlen, "connect: %s", strerror(soerr));
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

int vgpu_connect(const struct vgpu_config *cfg, const struct vgpu_deadline *d,
		 char *err, size_t errlen)
{
	struct addrinfo hints;
	struct addrinfo *res = NULL;
	struct addrinfo *ai;
	int fd = -1;
	int rc;

	if (cfg->tracker_kind == VGPU_TRACKER_UNIX) {
		struct sockaddr_un sun;

		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		/* the config parser bounded the path to sizeof(sun_path) - 1 */
		memcpy(sun.sun_path, cfg->tracker_path, strnlen(cfg->tracker_path, sizeof(sun.sun_path) - 1));
		return connect_addr((const struct sockaddr *)&sun, sizeof(sun), AF_UNIX, d, err, errlen);
	}

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	rc = getaddrinfo(cfg->tracker_host, cfg->tracker_port, &hints, &res);
	if (rc != 0)
		return vgpu_fail(err, errlen, "cannot resolve %s: %s", cfg->tracker_host, gai_strerror(rc));
	for (ai = res; ai != NULL && fd < 0; ai = ai->ai_next)
		fd = connect_addr(ai->ai_addr, ai->ai_addrlen, ai->ai_family, d, err, errlen);
	freeaddrinfo(res);
	return fd;
}

int vgpu_write_all(int fd, const char *buf, size_t len, const struct vgpu_deadline *d,
		   char *err, size_t errlen)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n;

		if (wait_fd(fd, POLLOUT, d, "sending the request", err, errlen) != 0)
			return -1;
		/* MSG_NOSIGNAL: a tracker that hangs up must not SIGPIPE slurmstepd */
		n = send(fd, buf + done, len - done, MSG_NOSIGNAL);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		return vgpu_fail(err, errlen, "send: %s", n < 0 ? strerror(errno) : "no progress");
	}
	return 0;
}

int vgpu_read_line(int fd, char *buf, size_t cap, const struct vgpu_deadline *d,
		   char *err, size_t errlen)
{
	size_t used = 0;

	if (cap < 2 || cap > VGPU_LINE_MAX)
		return vgpu_fail(err, errlen, "line buffer of %zu bytes", cap);
	for (;;) {
		ssize_t n;
		char *nl;

		if (used == cap - 1)
			return vgpu_fail(err, errlen, "reply line longer than %zu bytes", cap - 2);
		/* poll first, so that a blocking descriptor cannot outlive the deadline */
		if (wait_fd(fd, POLLIN, d, "waiting for the reply", err, errlen) != 0)
			return -1;
		n = read(fd, buf + used, cap - 1 - used);
		if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (n < 0)
			return vgpu_fail(err, errlen, "read: %s", strerror(errno));
		if (n == 0)
			return vgpu_fail(err, errlen, used == 0 ? "connection closed without a reply"
						      : "connection closed in the middle of the reply line");
		if (memchr(buf + used, '\0', (size_t)n) != NULL)
			return vgpu_fail(err, errlen, "reply contains a NUL byte");
		nl = memchr(buf + used, '\n', (size_t)n);
		used += (size_t)n;
		if (nl != NULL) {
			const size_t len = (size_t)(nl - buf);

			if (len + 1 != used)
				return vgpu_fail(err, errlen, "%zu byte(s) after the reply line",
						 used - len - 1);
			*nl = '\0';
			/* A line up to cap - 2 bytes plus the newline fits in cap - 1. */
			return (int)len;
		}
	}
}

int vgpu_tracker_call(const struct vgpu_config *cfg, const char *request, char *reply,
		      size_t cap, char *err, size_t errlen)
{
	struct vgpu_deadline d;
	char why[VGPU_ERR_MAX];
	char where[VGPU_HOST_BYTES + 16];
	int fd;
	int n = -1;

	vgpu_config_describe_tracker(cfg, where, sizeof(where));
	vgpu_deadline_in(&d, cfg->timeout_s);
	fd = vgpu_connect(cfg, &d, why, sizeof(why));
	if (fd < 0)
		goto fail;
	if (vgpu_write_all(fd, request, strnlen(request, VGPU_LINE_MAX), &d, why, sizeof(why)) != 0)
		goto fail;
	n = vgpu_read_line(fd, reply, cap, &d, why, sizeof(why));
	if (n < 0)
		goto fail;
	close(fd);
	return n;
fail:
	if (fd >= 0)
		close(fd);
	return vgpu_fail(err, errlen, "tracker %s (timeout %us): %s", where, cfg->timeout_s, why);
}
