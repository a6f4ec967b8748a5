/* SPDX-License-Identifier: Apache-2.0 */
#include "rgw/str.h"

void
rgw_str_init(struct rgw_str *s)
{
	memset(s, 0, sizeof(*s));
}

void
rgw_str_fini(struct rgw_str *s)
{
	free(s->p);
	memset(s, 0, sizeof(*s));
}

void
rgw_str_reset(struct rgw_str *s)
{
	s->len = 0;
	s->oom = false;
}

static bool
grow(struct rgw_str *s, size_t n)
{
	size_t want;
	char *p;

	if (s->oom)
		return false;
	if (s->len + n + 1 <= s->cap)
		return true;
	want = s->cap ? s->cap : 256;
	while (want < s->len + n + 1) {
		if (want > SIZE_MAX / 2) {
			s->oom = true;
			return false;
		}
		want *= 2;
	}
	if (!(p = realloc(s->p, want))) {
		s->oom = true;
		return false;
	}
	s->p = p;
	s->cap = want;
	return true;
}

void
rgw_str_add(struct rgw_str *s, const void *b, size_t n)
{
	if (!n || !grow(s, n))
		return;
	memcpy(s->p + s->len, b, n);
	s->len += n;
}

void
rgw_str_adds(struct rgw_str *s, const char *z)
{
	rgw_str_add(s, z, strlen(z));
}

void
rgw_str_addc(struct rgw_str *s, char c)
{
	if (!grow(s, 1))
		return;
	s->p[s->len++] = c;
}

void
rgw_str_addf(struct rgw_str *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (s->oom)
		return;
	va_start(ap, fmt);
	n = vsnprintf(s->p ? s->p + s->len : NULL, s->p ? s->cap - s->len : 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		s->oom = true;
		return;
	}
	if (s->p && s->len + (size_t)n < s->cap) {
		s->len += (size_t)n;
		return;
	}
	if (!grow(s, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(s->p + s->len, s->cap - s->len, fmt, ap);
	va_end(ap);
	s->len += (size_t)n;
}

const char *
rgw_str_cstr(struct rgw_str *s)
{
	if (!grow(s, 0))
		return NULL;
	s->p[s->len] = '\0';
	return s->p;
}

char *
rgw_str_take(struct rgw_str *s, size_t *len)
{
	char *p;

	if (!rgw_str_cstr(s)) {
		rgw_str_fini(s);
		return NULL;
	}
	p = s->p;
	if (len)
		*len = s->len;
	memset(s, 0, sizeof(*s));
	return p;
}

void
rgw_str_xml(struct rgw_str *s, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)b[i];

		switch (c) {
		case '&':
			rgw_str_adds(s, "&amp;");
			break;
		case '<':
			rgw_str_adds(s, "&lt;");
			break;
		case '>':
			rgw_str_adds(s, "&gt;");
			break;
		case '"':
			rgw_str_adds(s, "&quot;");
			break;
		case '\'':
			rgw_str_adds(s, "&apos;");
			break;
		default:
			if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
				rgw_str_addf(s, "&#x%X;", c); /* (XML 1.0 refuses these; clients use
								 encoding-type=url) */
			else
				rgw_str_addc(s, (char)c);
		}
	}
}

void
rgw_str_uri(struct rgw_str *s, const char *b, size_t n, bool keep_slash)
{
	static const char hx[] = "0123456789ABCDEF";

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)b[i];

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
			rgw_str_addc(s, (char)c);
		} else {
			rgw_str_addc(s, '%');
			rgw_str_addc(s, hx[c >> 4]);
			rgw_str_addc(s, hx[c & 15]);
		}
	}
}

int
rgw_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
rgw_str_unescape(struct rgw_str *s, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (b[i] == '%') {
			int hi, lo;

			if (i + 2 >= n || (hi = rgw_hexval(b[i + 1])) < 0 ||
			    (lo = rgw_hexval(b[i + 2])) < 0)
				return -EINVAL;
			rgw_str_addc(s, (char)(hi << 4 | lo));
			i += 2;
		} else {
			rgw_str_addc(s, b[i]);
		}
	}
	return 0;
}

void
rgw_hex(const uint8_t *b, size_t n, char *out)
{
	static const char hx[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hx[b[i] >> 4];
		out[2 * i + 1] = hx[b[i] & 15];
	}
	out[2 * n] = '\0';
}

void
rgw_str_hex(struct rgw_str *s, const uint8_t *b, size_t n)
{
	static const char hx[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		rgw_str_addc(s, hx[b[i] >> 4]);
		rgw_str_addc(s, hx[b[i] & 15]);
	}
}

int
rgw_unhex(const char *s, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int hi = rgw_hexval(s[2 * i]), lo;

		if (hi < 0 || (lo = rgw_hexval(s[2 * i + 1])) < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}
