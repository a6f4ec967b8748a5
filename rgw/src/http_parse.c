/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The request parser: llhttp does the HTTP/1.1 grammar (request line,
 * headers, Content-Length, chunked framing); this file only collects a
 * head's pieces into struct rgw_http_head under fixed limits and pauses
 * llhttp after a head and after a request's end, so the server acts on one
 * request at a time.
 */
#include "rgw/http.h"

#include <llhttp.h>

struct rgw_http_parser {
	llhttp_t ll;
	llhttp_settings_t set;
	const struct rgw_http_parser_ops *ops;
	void *arg;
	struct rgw_http_head *h;
	int err;            /* our own error (limits, an op's) */
	const char *reason; /* for -E2BIG / -EBADMSG */
	bool in_head;       /* between message begin and headers complete */
	bool in_msg;        /* between message begin and message complete */
	int hstate;         /* the header being collected: 0 none, 1 its name, 2 its value */
	size_t name_off;    /* its name's offset in the head's buffer */
	size_t value_off;   /* its value's */
	bool target_done;
};

static struct rgw_http_parser *
of(llhttp_t *ll)
{
	return CM_CONTAINER_OF(ll, struct rgw_http_parser, ll);
}

static int
fail(struct rgw_http_parser *p, int err, const char *reason)
{
	p->err = err;
	p->reason = reason;
	return HPE_USER;
}

/* Append len bytes to the head's buffer (lower-cased with lower). */
static int
put(struct rgw_http_parser *p, const char *at, size_t len, bool lower)
{
	struct rgw_http_head *h = p->h;

	if (len > sizeof(h->buf) - 1 - h->used)
		return fail(p, -E2BIG, "request head over 64 KiB");
	if (lower) {
		for (size_t i = 0; i < len; i++) {
			char c = at[i];

			h->buf[h->used + i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
		}
	} else {
		memcpy(h->buf + h->used, at, len);
	}
	h->used += len;
	return 0;
}

static int
term(struct rgw_http_parser *p)
{
	if (p->h->used >= sizeof(p->h->buf) - 1)
		return fail(p, -E2BIG, "request head over 64 KiB");
	p->h->buf[p->h->used++] = '\0';
	return 0;
}

static int
on_begin(llhttp_t *ll)
{
	struct rgw_http_parser *p = of(ll);
	struct rgw_http_head *h = p->h;

	h->used = 0;
	h->nhdrs = 0;
	h->target = NULL;
	h->target_len = 0;
	h->content_length = 0;
	h->has_length = false;
	h->chunked = false;
	h->expect_continue = false;
	h->keep_alive = false;
	p->in_head = true;
	p->in_msg = true;
	p->hstate = 0;
	p->target_done = false;
	return 0;
}

static int
on_url(llhttp_t *ll, const char *at, size_t len)
{
	struct rgw_http_parser *p = of(ll);

	return put(p, at, len, false);
}

static int
on_url_complete(llhttp_t *ll)
{
	struct rgw_http_parser *p = of(ll);
	int rc = term(p);

	if (rc)
		return rc;
	p->h->target = p->h->buf;
	p->h->target_len = p->h->used - 1;
	p->target_done = true;
	/* (the head's buffer only grows: the target stays at offset 0) */
	return 0;
}

static int
on_field(llhttp_t *ll, const char *at, size_t len)
{
	struct rgw_http_parser *p = of(ll);

	if (p->hstate != 1) {
		if (p->h->nhdrs >= RGW_HTTP_HEADERS)
			return fail(p, -E2BIG, "more than 100 headers");
		p->name_off = p->h->used;
		p->hstate = 1;
	}
	if (p->h->used + len - p->name_off > RGW_HTTP_HEADER_MAX)
		return fail(p, -E2BIG, "a header over 8 KiB");
	return put(p, at, len, true);
}

static int
on_field_complete(llhttp_t *ll)
{
	struct rgw_http_parser *p = of(ll);
	int rc = term(p);

	if (rc)
		return rc;
	p->value_off = p->h->used;
	p->hstate = 2;
	return 0;
}

static int
on_value(llhttp_t *ll, const char *at, size_t len)
{
	struct rgw_http_parser *p = of(ll);

	if (p->hstate != 2)
		return fail(p, -EBADMSG, "a header value without a name");
	if (p->h->used + len - p->name_off > RGW_HTTP_HEADER_MAX)
		return fail(p, -E2BIG, "a header over 8 KiB");
	return put(p, at, len, false);
}

static bool
is_ws(char c)
{
	return c == ' ' || c == '\t';
}

static int
on_value_complete(llhttp_t *ll)
{
	struct rgw_http_parser *p = of(ll);
	struct rgw_http_head *h = p->h;
	struct rgw_http_hdr *hd;
	size_t b, e;
	int rc;

	if (p->hstate != 2)
		return fail(p, -EBADMSG, "a header value without a name");
	b = p->value_off;
	e = h->used;
	while (b < e && is_ws(h->buf[b]))
		b++;
	while (e > b && is_ws(h->buf[e - 1]))
		e--;
	h->used = e;
	if ((rc = term(p)))
		return rc;
	hd = &h->hdrs[h->nhdrs++];
	hd->name = h->buf + p->name_off;
	hd->value = h->buf + b;
	hd->vlen = e - b;
	p->hstate = 0;
	if (!strcmp(hd->name, "expect") && !strcasecmp(hd->value, "100-continue"))
		h->expect_continue = true;
	return 0;
}

static int
on_headers_complete(llhttp_t *ll)
{
	struct rgw_http_parser *p = of(ll);
	struct rgw_http_head *h = p->h;
	int rc;

	if (!p->target_done)
		return fail(p, -EBADMSG, "no request target");
	switch (llhttp_get_method(ll)) {
	case HTTP_GET:
		h->method = RGW_M_GET;
		break;
	case HTTP_HEAD:
		h->method = RGW_M_HEAD;
		break;
	case HTTP_PUT:
		h->method = RGW_M_PUT;
		break;
	case HTTP_POST:
		h->method = RGW_M_POST;
		break;
	case HTTP_DELETE:
		h->method = RGW_M_DELETE;
		break;
	case HTTP_OPTIONS:
		h->method = RGW_M_OPTIONS;
		break;
	default:
		h->method = RGW_M_OTHER;
		break;
	}
	h->method_name = llhttp_method_name((llhttp_method_t)llhttp_get_method(ll));
	h->http_minor = llhttp_get_http_minor(ll);
	h->keep_alive = llhttp_should_keep_alive(ll);
	h->chunked = (ll->flags & F_CHUNKED) != 0;
	if (ll->flags & F_CONTENT_LENGTH) {
		h->has_length = true;
		h->content_length = ll->content_length;
	}
	p->in_head = false;
	if ((rc = p->ops->head(p, h)))
		return fail(p, rc, "refused by the handler");
	return HPE_PAUSED;
}

static int
on_body(llhttp_t *ll, const char *at, size_t len)
{
	struct rgw_http_parser *p = of(ll);
	int rc = p->ops->body(p, at, len);

	return rc ? fail(p, rc, "refused by the handler") : 0;
}

static int
on_complete(llhttp_t *ll)
{
	struct rgw_http_parser *p = of(ll);
	int rc;

	p->in_msg = false;
	if ((rc = p->ops->end(p)))
		return fail(p, rc, "refused by the handler");
	return HPE_PAUSED;
}

int
rgw_http_parser_create(const struct rgw_http_parser_ops *ops, void *arg, struct rgw_http_head *h,
		       struct rgw_http_parser **pp)
{
	struct rgw_http_parser *p = calloc(1, sizeof(*p));

	*pp = NULL;
	if (!p)
		return -ENOMEM;
	p->ops = ops;
	p->arg = arg;
	p->h = h;
	llhttp_settings_init(&p->set);
	p->set.on_message_begin = on_begin;
	p->set.on_url = on_url;
	p->set.on_url_complete = on_url_complete;
	p->set.on_header_field = on_field;
	p->set.on_header_field_complete = on_field_complete;
	p->set.on_header_value = on_value;
	p->set.on_header_value_complete = on_value_complete;
	p->set.on_headers_complete = on_headers_complete;
	p->set.on_body = on_body;
	p->set.on_message_complete = on_complete;
	llhttp_init(&p->ll, HTTP_REQUEST, &p->set);
	*pp = p;
	return 0;
}

void
rgw_http_parser_destroy(struct rgw_http_parser *p)
{
	free(p);
}

void *
rgw_http_parser_arg(const struct rgw_http_parser *p)
{
	return p->arg;
}

const char *
rgw_http_parser_error(const struct rgw_http_parser *p)
{
	return p->reason ? p->reason : "malformed request";
}

int
rgw_http_parser_feed(struct rgw_http_parser *p, const char *data, size_t len, size_t *used)
{
	llhttp_errno_t e;

	*used = 0;
	if (p->err)
		return p->err;
	if (llhttp_get_errno(&p->ll) == HPE_PAUSED)
		llhttp_resume(&p->ll);
	/* (even with no bytes: a resumed parse may have a request's end to report) */
	e = llhttp_execute(&p->ll, data, len);
	if (e == HPE_OK) {
		*used = len;
		return 0;
	}
	if (e == HPE_PAUSED) {
		*used = (size_t)(llhttp_get_error_pos(&p->ll) - data);
		return 1;
	}
	if (e == HPE_USER && p->err)
		return p->err;
	p->reason = llhttp_get_error_reason(&p->ll);
	p->err = -EBADMSG;
	return -EBADMSG;
}

bool
rgw_http_parser_paused(const struct rgw_http_parser *p)
{
	return llhttp_get_errno(&p->ll) == HPE_PAUSED;
}

int
rgw_http_parser_eof(struct rgw_http_parser *p)
{
	return p->in_msg ? -EBADMSG : 0;
}

const char *
rgw_http_hdr(const struct rgw_http_head *h, const char *name)
{
	for (unsigned i = 0; i < h->nhdrs; i++)
		if (!strcmp(h->hdrs[i].name, name))
			return h->hdrs[i].value;
	return NULL;
}
