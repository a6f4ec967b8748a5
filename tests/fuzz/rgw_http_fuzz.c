/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gateway's request parser (llhttp and our head collection) on
 * arbitrary bytes, fed in pieces whose sizes come from the input, going on
 * after every stop as the server does: no crash, no read past the input,
 * every head's strings inside the head's buffer, bodies never longer than
 * what was fed.
 */
#include "rgw/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t g_body;

static int
on_head(struct rgw_http_parser *p, struct rgw_http_head *h)
{
	(void)p;
	if (!h->target || strlen(h->target) != h->target_len || h->nhdrs > RGW_HTTP_HEADERS)
		__builtin_trap();
	for (unsigned i = 0; i < h->nhdrs; i++)
		if (h->hdrs[i].name < h->buf ||
		    h->hdrs[i].value + h->hdrs[i].vlen > h->buf + h->used ||
		    strlen(h->hdrs[i].value) != h->hdrs[i].vlen)
			__builtin_trap();
	(void)rgw_http_hdr(h, "host");
	return 0;
}

static int
on_body(struct rgw_http_parser *p, const char *d, size_t n)
{
	(void)p;
	(void)d;
	g_body += n;
	return 0;
}

static int
on_end(struct rgw_http_parser *p)
{
	(void)p;
	return 0;
}

static const struct rgw_http_parser_ops ops = { on_head, on_body, on_end };

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rgw_http_head h;
	struct rgw_http_parser *p;
	size_t off = 0, step;
	int rc = 0;

	if (size < 1)
		return 0;
	step = (size_t)(data[0] % 64) + 1;
	data++;
	size--;
	g_body = 0;
	if (rgw_http_parser_create(&ops, NULL, &h, &p))
		return 0;
	for (int guard = 0; guard < 100000; guard++) {
		size_t used = 0, n = CM_MIN(step, size - off);

		if (off == size && !rgw_http_parser_paused(p))
			break;
		rc = rgw_http_parser_feed(p, (const char *)data + off, n, &used);
		if (used > n)
			__builtin_trap();
		off += used;
		if (rc < 0) {
			(void)rgw_http_parser_error(p);
			break;
		}
	}
	if (g_body > size)
		__builtin_trap();
	(void)rgw_http_parser_eof(p);
	rgw_http_parser_destroy(p);
	return 0;
}
