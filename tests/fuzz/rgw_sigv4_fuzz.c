/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SigV4 on arbitrary request heads: the input is a request head (parsed by
 * the gateway's parser); its credentials are parsed, the canonical request
 * built both ways, and the signature checked with a fixed secret. Nothing
 * may crash; a signature we did not compute must not verify.
 */
#include "rgw/http.h"
#include "rgw/sigv4.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
on_head(struct rgw_http_parser *p, struct rgw_http_head *h)
{
	struct rgw_sigv4 a;
	char err[160], seed[65];
	struct rgw_str cr;

	(void)p;
	if (rgw_sigv4_parse(h, &a, err, sizeof(err)))
		return 0;
	(void)rgw_sigv4_check_time(&a, a.time);
	for (int raw = 0; raw < 2; raw++) {
		rgw_str_init(&cr);
		(void)rgw_sigv4_canonical(h, &a, raw, &cr);
		rgw_str_fini(&cr);
	}
	/* (a signature that verifies by chance would be a broken HMAC) */
	if (rgw_sigv4_verify(h, &a, "fuzz-secret-key", seed) == 0 && strcmp(a.signature, seed))
		__builtin_trap();
	return 0;
}

static int
on_body(struct rgw_http_parser *p, const char *d, size_t n)
{
	(void)p;
	(void)d;
	(void)n;
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
	size_t used;

	if (rgw_http_parser_create(&ops, NULL, &h, &p))
		return 0;
	(void)rgw_http_parser_feed(p, (const char *)data, size, &used);
	rgw_http_parser_destroy(p);
	return 0;
}
