/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemons' own small HTTP endpoints (/metrics). Requests are parsed by
 * Debian's http-parser; this is not the S3 front-end.
 */
#ifndef CM_HTTP_H
#define CM_HTTP_H

#include "cm/metrics.h"
#include "cm/reactor.h"

#define CM_HTTP_MAX_REQUEST 8192

struct cm_http_req {
	char method[16];
	char path[512];
	bool keep_alive;
	size_t consumed; /* bytes of buf the request used */
};

/*
 * Parse one request from the start of buf.
 * \return 0 (complete); -EAGAIN (incomplete: read more); -EBADMSG
 * (malformed); -E2BIG (longer than CM_HTTP_MAX_REQUEST or a path over 511).
 */
int cm_http_req_parse(const char *buf, size_t len, struct cm_http_req *req);

struct cm_http_metrics;

/*
 * Serve GET /metrics (Prometheus text) for m on addr, on reactor r.
 * \return 0 or a negative errno (e.g. -EADDRINUSE).
 */
int cm_http_metrics_start(struct cm_reactor *r, struct cm_metrics *m, const char *addr,
			  uint16_t *port, struct cm_http_metrics **hp);

/* Stop and free; runs r until open connections are gone. NULL is a no-op. */
void cm_http_metrics_stop(struct cm_http_metrics *h);

#endif
