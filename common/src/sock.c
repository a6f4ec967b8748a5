/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/sock.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

int
cm_sock_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *hs, *he;
	char *end;
	unsigned long port;

	memset(ss, 0, sizeof(*ss));
	if (!s)
		return -EINVAL;
	if (s[0] == '[') {
		hs = s + 1;
		he = strchr(hs, ']');
		if (!he || he[1] != ':')
			return -EINVAL;
		colon = he + 1;
	} else {
		hs = s;
		colon = strrchr(s, ':');
		if (!colon)
			return -EINVAL;
		he = colon;
	}
	if ((size_t)(he - hs) >= sizeof(host) || he == hs)
		return -EINVAL;
	memcpy(host, hs, (size_t)(he - hs));
	host[he - hs] = '\0';
	if (strcmp(host, "localhost") == 0)
		snprintf(host, sizeof(host), "127.0.0.1");
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || port > 65535)
		return -EINVAL;
	if (s[0] != '[') {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		if (inet_pton(AF_INET, host, &in->sin_addr) != 1)
			return -EINVAL;
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		*len = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
			return -EINVAL;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*in6);
	}
	return 0;
}

void
cm_sock_addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	char h[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &in->sin_addr, h, sizeof(h));
		snprintf(buf, len, "%s:%u", h, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, h, sizeof(h));
		snprintf(buf, len, "[%s]:%u", h, ntohs(in6->sin6_port));
	} else {
		snprintf(buf, len, "?");
	}
}

void
cm_sock_tune(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int
cm_sock_stream(int family, int *fdp)
{
	int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	cm_sock_tune(fd);
	*fdp = fd;
	return 0;
}

int
cm_sock_listen(const char *addr, int backlog, int *fdp, uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, rc, one = 1;

	rc = cm_sock_parse_addr(addr, &ss, &len);
	if (rc)
		return rc;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, backlog) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if (port) {
		len = sizeof(ss);
		getsockname(fd, (struct sockaddr *)&ss, &len);
		*port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
						      : ((struct sockaddr_in6 *)&ss)->sin6_port);
	}
	*fdp = fd;
	return 0;
}

int
cm_sock_free_port(const char *ip, uint16_t *port)
{
	char addr[64];
	int fd, rc;
	unsigned lo = 32768, hi = 60999;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	static _Atomic uint64_t calls; /* successive calls in a process try different ports */
	static uint16_t given[32];     /* the last ports returned (callers: one thread) */
	static unsigned ngiven;
	uint64_t seed = ((uint64_t)getpid() << 32 ^ (uint64_t)time(NULL) ^ (calls++ << 20)) *
			0x9e3779b97f4a7c15ull;

	if (f) {
		if (fscanf(f, "%u %u", &lo, &hi) != 2)
			lo = 32768;
		fclose(f);
	}
	for (int i = 0; lo > 11000 && i < 64; i++) {
		uint16_t want;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		want = (uint16_t)(10000 + (seed >> 33) % (lo - 10000));
		/* Not one handed out lately: its process may not have bound it yet. */
		for (int k = 0; k < (int)CM_ARRAY_SIZE(given); k++)
			if (given[k] == want)
				want = 0;
		if (!want)
			continue;
		snprintf(addr, sizeof(addr), "%s:%u", ip, want);
		if (!cm_sock_listen(addr, 1, &fd, port)) {
			close(fd);
			given[ngiven++ % CM_ARRAY_SIZE(given)] = want;
			return 0;
		}
	}
	snprintf(addr, sizeof(addr), "%s:0", ip);
	rc = cm_sock_listen(addr, 1, &fd, port);
	if (!rc)
		close(fd);
	return rc;
}
