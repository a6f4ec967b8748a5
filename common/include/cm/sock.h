/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Socket helpers: address parsing ("127.0.0.1:6789", "[::1]:6789",
 * "localhost:0") and non-blocking listen/connect sockets. Numeric addresses
 * only: name resolution would block a reactor.
 */
#ifndef CM_SOCK_H
#define CM_SOCK_H

#include "cm/stdinc.h"
#include <sys/socket.h>

/* \return 0, -EINVAL for a malformed address or port. */
int cm_sock_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len);

/* "ip:port" of ss into buf. */
void cm_sock_addr_str(const struct sockaddr *sa, char *buf, size_t len);

/*
 * A non-blocking, close-on-exec listening TCP socket bound to addr (port 0
 * picks a free one, returned in *port). \return 0 or a negative errno.
 */
int cm_sock_listen(const char *addr, int backlog, int *fdp, uint16_t *port);

/*
 * A TCP port free on ip now, for tools and tests that hand ports to other
 * processes: one below the kernel's ephemeral range (which bind to port 0
 * would pick, and which any outgoing connection may take before the other
 * process binds it), tried at random; bind to port 0 if none is found.
 * \return 0 or a negative errno.
 */
int cm_sock_free_port(const char *ip, uint16_t *port);

/* A non-blocking TCP socket for addr's family, TCP_NODELAY set. */
int cm_sock_stream(int family, int *fdp);

/* Set TCP_NODELAY and large buffers on a connected socket. */
void cm_sock_tune(int fd);

#endif
