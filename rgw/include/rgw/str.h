/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A growable string for responses, canonical requests and XML. An
 * allocation failure is sticky (oom) and checked once at the end.
 */
#ifndef RGW_STR_H
#define RGW_STR_H

#include "cm/stdinc.h"

struct rgw_str {
	char *p;
	size_t len, cap;
	bool oom;
};

void rgw_str_init(struct rgw_str *s);
void rgw_str_fini(struct rgw_str *s);
void rgw_str_reset(struct rgw_str *s);
void rgw_str_add(struct rgw_str *s, const void *b, size_t n);
void rgw_str_adds(struct rgw_str *s, const char *z);
void rgw_str_addc(struct rgw_str *s, char c);
__attribute__((format(printf, 2, 3))) void rgw_str_addf(struct rgw_str *s, const char *fmt, ...);
/* NUL-terminated contents ("" when empty), or NULL after an allocation failure. */
const char *rgw_str_cstr(struct rgw_str *s);
/* The buffer, now the caller's (free); s is empty again. NULL after oom. */
char *rgw_str_take(struct rgw_str *s, size_t *len);

/* XML text: & < > " ' escaped, and bytes XML 1.0 cannot carry as &#x..; (not NUL). */
void rgw_str_xml(struct rgw_str *s, const char *b, size_t n);
/* Percent-encode all but A-Za-z0-9-_.~ (and '/' with keep_slash), %XX in upper case. */
void rgw_str_uri(struct rgw_str *s, const char *b, size_t n, bool keep_slash);
/*
 * Percent-decode b into s ('+' stays '+'). \return 0, -EINVAL (a bad %
 * escape).
 */
int rgw_str_unescape(struct rgw_str *s, const char *b, size_t n);
void rgw_str_hex(struct rgw_str *s, const uint8_t *b, size_t n);

/* Lower-case hex of n bytes into out (2n + 1 bytes). */
void rgw_hex(const uint8_t *b, size_t n, char *out);
/* A hex digit's value (either case), or -1. */
int rgw_hexval(char c);
/* n bytes from 2n hex digits at s (either case). \return 0, -EINVAL. */
int rgw_unhex(const char *s, uint8_t *out, size_t n);

#endif
