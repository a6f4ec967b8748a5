/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SigV4 (rgw/sigv4.h), written from AWS's published description of the
 * canonical request, the string to sign and the signing key.
 */
#include "rgw/sigv4.h"
#include "rgw/uri.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#define ALGO "AWS4-HMAC-SHA256"

static void
hmac(const void *key, size_t klen, const void *d, size_t n, uint8_t out[32])
{
	unsigned olen = 32;

	HMAC(EVP_sha256(), key, (int)klen, d, n, out, &olen);
}

void
rgw_sha256(const void *b, size_t n, uint8_t out[32])
{
	unsigned olen = 32;

	EVP_Digest(b, n, out, &olen, EVP_sha256(), NULL);
}

bool
rgw_sigv4_equal(const char *a, const char *b)
{
	size_t n = strlen(a);

	return n == strlen(b) && CRYPTO_memcmp(a, b, n) == 0;
}

static int
seterr(char *err, size_t elen, const char *m)
{
	if (err && elen)
		snprintf(err, elen, "%s", m);
	return -EINVAL;
}

int
rgw_sigv4_parse_date(const char *s, int64_t *t)
{
	struct tm tm;
	int v[6];

	if (strlen(s) != 16 || s[8] != 'T' || s[15] != 'Z')
		return -EINVAL;
	for (int i = 0; i < 16; i++)
		if (i != 8 && i != 15 && (s[i] < '0' || s[i] > '9'))
			return -EINVAL;
	v[0] = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
	v[1] = (s[4] - '0') * 10 + (s[5] - '0');
	v[2] = (s[6] - '0') * 10 + (s[7] - '0');
	v[3] = (s[9] - '0') * 10 + (s[10] - '0');
	v[4] = (s[11] - '0') * 10 + (s[12] - '0');
	v[5] = (s[13] - '0') * 10 + (s[14] - '0');
	if (v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31 || v[3] > 23 || v[4] > 59 || v[5] > 60)
		return -EINVAL;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = v[0] - 1900;
	tm.tm_mon = v[1] - 1;
	tm.tm_mday = v[2];
	tm.tm_hour = v[3];
	tm.tm_min = v[4];
	tm.tm_sec = v[5];
	*t = (int64_t)timegm(&tm);
	return 0;
}

/* "AKID/20130524/us-east-1/s3/aws4_request" into a. */
static int
parse_cred(struct rgw_sigv4 *a, const char *c, size_t n, char *err, size_t elen)
{
	const char *parts[5];
	size_t lens[5];
	unsigned k = 0;
	const char *p = c, *end = c + n;

	/* The key may not hold '/', the other four never do: split from the right. */
	for (int i = 4; i >= 1; i--) {
		const char *s = end;

		while (s > p && s[-1] != '/')
			s--;
		if (s == p)
			return seterr(err, elen,
				      "Credential is not KEY/DATE/REGION/SERVICE/aws4_request");
		parts[i] = s;
		lens[i] = (size_t)(end - s);
		end = s - 1;
		k++;
	}
	parts[0] = p;
	lens[0] = (size_t)(end - p);
	(void)k;
	if (!lens[0] || lens[0] >= sizeof(a->access_key))
		return seterr(err, elen, "bad access key in Credential");
	if (lens[1] != 8 || lens[2] == 0 || lens[2] >= sizeof(a->region) || lens[3] == 0 ||
	    lens[3] >= sizeof(a->service) || lens[4] != 12 || memcmp(parts[4], "aws4_request", 12))
		return seterr(err, elen, "bad Credential scope");
	memcpy(a->access_key, parts[0], lens[0]);
	a->access_key[lens[0]] = '\0';
	memcpy(a->scope_date, parts[1], 8);
	a->scope_date[8] = '\0';
	memcpy(a->region, parts[2], lens[2]);
	a->region[lens[2]] = '\0';
	memcpy(a->service, parts[3], lens[3]);
	a->service[lens[3]] = '\0';
	for (int i = 0; i < 8; i++)
		if (a->scope_date[i] < '0' || a->scope_date[i] > '9')
			return seterr(err, elen, "bad Credential date");
	return 0;
}

static int
parse_signed(struct rgw_sigv4 *a, const char *s, size_t n, char *err, size_t elen)
{
	char *p;

	if (!n || n >= sizeof(a->signed_headers))
		return seterr(err, elen, "bad SignedHeaders");
	memcpy(a->signed_headers, s, n);
	a->signed_headers[n] = '\0';
	memcpy(a->signed_buf, s, n);
	a->signed_buf[n] = '\0';
	a->nsigned = 0;
	p = a->signed_buf;
	for (;;) {
		char *semi = strchr(p, ';');

		if (semi)
			*semi = '\0';
		if (!*p || a->nsigned == RGW_SIGV4_MAX_SIGNED)
			return seterr(err, elen, "bad SignedHeaders");
		for (char *q = p; *q; q++)
			if (*q >= 'A' && *q <= 'Z')
				return seterr(err, elen, "SignedHeaders must be lower case");
		if (a->nsigned && strcmp(a->signed_list[a->nsigned - 1], p) >= 0)
			return seterr(err, elen, "SignedHeaders must be sorted");
		a->signed_list[a->nsigned++] = p;
		if (!semi)
			break;
		p = semi + 1;
	}
	for (unsigned i = 0; i < a->nsigned; i++)
		if (!strcmp(a->signed_list[i], "host"))
			return 0;
	return seterr(err, elen, "SignedHeaders must include host");
}

static int
parse_sig(struct rgw_sigv4 *a, const char *s, size_t n, char *err, size_t elen)
{
	if (n != 64)
		return seterr(err, elen, "Signature is not 64 hex digits");
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return seterr(err, elen, "Signature is not 64 hex digits");
	memcpy(a->signature, s, 64);
	a->signature[64] = '\0';
	return 0;
}

static int
parse_header(const struct rgw_http_head *h, const char *auth, struct rgw_sigv4 *a, char *err,
	     size_t elen)
{
	const char *p = auth + strlen(ALGO);
	bool have_c = false, have_h = false, have_s = false;
	const char *d;
	int rc;

	if (*p != ' ')
		return seterr(err, elen, "bad Authorization algorithm");
	while (*p) {
		const char *b, *e, *eq;

		while (*p == ' ' || *p == ',')
			p++;
		if (!*p)
			break;
		b = p;
		while (*p && *p != ',')
			p++;
		e = p;
		while (e > b && e[-1] == ' ')
			e--;
		eq = memchr(b, '=', (size_t)(e - b));
		if (!eq)
			return seterr(err, elen, "bad Authorization component");
		if (eq - b == 10 && !memcmp(b, "Credential", 10)) {
			if ((rc = parse_cred(a, eq + 1, (size_t)(e - eq - 1), err, elen)))
				return rc;
			have_c = true;
		} else if (eq - b == 13 && !memcmp(b, "SignedHeaders", 13)) {
			if ((rc = parse_signed(a, eq + 1, (size_t)(e - eq - 1), err, elen)))
				return rc;
			have_h = true;
		} else if (eq - b == 9 && !memcmp(b, "Signature", 9)) {
			if ((rc = parse_sig(a, eq + 1, (size_t)(e - eq - 1), err, elen)))
				return rc;
			have_s = true;
		} else {
			return seterr(err, elen, "unknown Authorization component");
		}
	}
	if (!have_c || !have_h || !have_s)
		return seterr(err, elen,
			      "Authorization needs Credential, SignedHeaders, Signature");
	d = rgw_http_hdr(h, "x-amz-date");
	if (!d)
		return seterr(err, elen, "x-amz-date is missing");
	if (strlen(d) != 16 || rgw_sigv4_parse_date(d, &a->time))
		return seterr(err, elen, "x-amz-date is not YYYYMMDDTHHMMSSZ");
	memcpy(a->amz_date, d, 17);
	if (memcmp(a->amz_date, a->scope_date, 8))
		return seterr(err, elen, "the Credential's date is not x-amz-date's");
	a->payload = rgw_http_hdr(h, "x-amz-content-sha256");
	if (!a->payload)
		return seterr(err, elen, "x-amz-content-sha256 is missing");
	return 0;
}

static int
parse_query(const struct rgw_uri *u, struct rgw_sigv4 *a, char *err, size_t elen)
{
	const char *algo = rgw_uri_q(u, "X-Amz-Algorithm");
	const char *cred = rgw_uri_q(u, "X-Amz-Credential");
	const char *date = rgw_uri_q(u, "X-Amz-Date");
	const char *exp = rgw_uri_q(u, "X-Amz-Expires");
	const char *sh = rgw_uri_q(u, "X-Amz-SignedHeaders");
	const char *sig = rgw_uri_q(u, "X-Amz-Signature");
	char *end;
	int rc;

	if (!algo || strcmp(algo, ALGO))
		return seterr(err, elen, "X-Amz-Algorithm must be AWS4-HMAC-SHA256");
	if (!cred || !date || !exp || !sh || !sig)
		return seterr(err, elen,
			      "a presigned URL needs X-Amz-Credential, X-Amz-Date, X-Amz-Expires, "
			      "X-Amz-SignedHeaders and X-Amz-Signature");
	if ((rc = parse_cred(a, cred, strlen(cred), err, elen)) ||
	    (rc = parse_signed(a, sh, strlen(sh), err, elen)) ||
	    (rc = parse_sig(a, sig, strlen(sig), err, elen)))
		return rc;
	if (strlen(date) != 16 || rgw_sigv4_parse_date(date, &a->time))
		return seterr(err, elen, "X-Amz-Date is not YYYYMMDDTHHMMSSZ");
	memcpy(a->amz_date, date, 17);
	if (memcmp(a->amz_date, a->scope_date, 8))
		return seterr(err, elen, "the Credential's date is not X-Amz-Date's");
	errno = 0;
	if (!*exp || *exp == '-' || (a->expires = strtoull(exp, &end, 10), *end) || errno)
		return seterr(err, elen, "X-Amz-Expires is not a number");
	if (a->expires > RGW_SIGV4_MAX_EXPIRY)
		return seterr(err, elen, "X-Amz-Expires must be at most 604800 (7 days)");
	a->presigned = true;
	a->payload = "UNSIGNED-PAYLOAD";
	return 0;
}

int
rgw_sigv4_parse(const struct rgw_http_head *h, struct rgw_sigv4 *a, char *err, size_t elen)
{
	const char *auth = rgw_http_hdr(h, "authorization");
	struct rgw_uri u;
	int rc;

	memset(a, 0, sizeof(*a));
	if (auth) {
		if (!strncmp(auth, ALGO, strlen(ALGO)))
			return parse_header(h, auth, a, err, elen);
		if (!strncmp(auth, "AWS ", 4)) {
			seterr(err, elen, "SigV2 is not supported: sign with SigV4");
			return -EPROTONOSUPPORT;
		}
		return seterr(err, elen, "unknown Authorization scheme");
	}
	if ((rc = rgw_uri_parse(h->target, h->target_len, &u)))
		return seterr(err, elen, "bad request target");
	if (!rgw_uri_q(&u, "X-Amz-Algorithm") && !rgw_uri_q(&u, "X-Amz-Signature")) {
		rc = rgw_uri_q(&u, "AWSAccessKeyId") ? -EPROTONOSUPPORT : -ENOENT;
		if (rc == -EPROTONOSUPPORT)
			seterr(err, elen, "SigV2 presigned URLs are not supported");
		rgw_uri_fini(&u);
		return rc;
	}
	rc = parse_query(&u, a, err, elen);
	rgw_uri_fini(&u);
	return rc;
}

int
rgw_sigv4_check_time(const struct rgw_sigv4 *a, int64_t now)
{
	if (a->presigned) {
		if (a->time > now + RGW_SIGV4_SKEW_S)
			return -ETIMEDOUT;
		if (now > a->time + (int64_t)a->expires)
			return -EKEYEXPIRED;
		return 0;
	}
	if (a->time > now + RGW_SIGV4_SKEW_S || a->time < now - RGW_SIGV4_SKEW_S)
		return -ETIMEDOUT;
	return 0;
}

struct kv {
	const char *k, *v;
	size_t kl, vl;
	struct rgw_str ek, ev;
};

static int
kv_cmp(const void *x, const void *y)
{
	const struct kv *a = x, *b = y;
	size_t n = CM_MIN(a->ek.len, b->ek.len);
	int c = memcmp(a->ek.p ? a->ek.p : "", b->ek.p ? b->ek.p : "", n);

	if (c)
		return c;
	if (a->ek.len != b->ek.len)
		return a->ek.len < b->ek.len ? -1 : 1;
	n = CM_MIN(a->ev.len, b->ev.len);
	c = memcmp(a->ev.p ? a->ev.p : "", b->ev.p ? b->ev.p : "", n);
	if (c)
		return c;
	return a->ev.len < b->ev.len ? -1 : (a->ev.len > b->ev.len);
}

/* A header's value as SigV4 wants it: every instance joined by ',', runs of spaces as one. */
static void
canon_value(struct rgw_str *out, const struct rgw_http_head *h, const char *name)
{
	bool first = true;

	for (unsigned i = 0; i < h->nhdrs; i++) {
		const char *v = h->hdrs[i].value;
		bool sp = false;

		if (strcmp(h->hdrs[i].name, name))
			continue;
		if (!first)
			rgw_str_addc(out, ',');
		first = false;
		for (; *v; v++) {
			if (*v == ' ' || *v == '\t') {
				sp = true;
				continue;
			}
			if (sp)
				rgw_str_addc(out, ' ');
			sp = false;
			rgw_str_addc(out, *v);
		}
	}
}

int
rgw_sigv4_canonical(const struct rgw_http_head *h, const struct rgw_sigv4 *a, bool raw_path,
		    struct rgw_str *out)
{
	struct kv kvs[RGW_URI_MAX_PARAMS];
	struct rgw_uri u;
	size_t n = 0;
	int rc;

	if ((rc = rgw_uri_parse(h->target, h->target_len, &u)))
		return rc;
	rgw_str_adds(out, h->method_name);
	rgw_str_addc(out, '\n');
	if (raw_path)
		rgw_str_add(out, u.raw_path, u.raw_path_len);
	else
		rgw_str_uri(out, u.path, u.path_len, true);
	rgw_str_addc(out, '\n');
	for (size_t i = 0; i < u.nq; i++) {
		if (a->presigned && !strcmp(u.q[i].key, "X-Amz-Signature"))
			continue;
		kvs[n].k = u.q[i].key;
		kvs[n].kl = u.q[i].klen;
		kvs[n].v = u.q[i].val;
		kvs[n].vl = u.q[i].vlen;
		rgw_str_init(&kvs[n].ek);
		rgw_str_init(&kvs[n].ev);
		rgw_str_uri(&kvs[n].ek, kvs[n].k, kvs[n].kl, false);
		rgw_str_uri(&kvs[n].ev, kvs[n].v, kvs[n].vl, false);
		n++;
	}
	qsort(kvs, n, sizeof(kvs[0]), kv_cmp);
	for (size_t i = 0; i < n; i++) {
		if (i)
			rgw_str_addc(out, '&');
		rgw_str_add(out, kvs[i].ek.p, kvs[i].ek.len);
		rgw_str_addc(out, '=');
		rgw_str_add(out, kvs[i].ev.p, kvs[i].ev.len);
		rgw_str_fini(&kvs[i].ek);
		rgw_str_fini(&kvs[i].ev);
	}
	rgw_str_addc(out, '\n');
	rgw_uri_fini(&u);
	for (unsigned i = 0; i < a->nsigned; i++) {
		if (!rgw_http_hdr(h, a->signed_list[i]))
			return -EINVAL;
		rgw_str_adds(out, a->signed_list[i]);
		rgw_str_addc(out, ':');
		canon_value(out, h, a->signed_list[i]);
		rgw_str_addc(out, '\n');
	}
	rgw_str_addc(out, '\n');
	rgw_str_adds(out, a->signed_headers);
	rgw_str_addc(out, '\n');
	rgw_str_adds(out, a->payload);
	return out->oom ? -ENOMEM : 0;
}

void
rgw_sigv4_key(const char *secret, const struct rgw_sigv4 *a, uint8_t key[32])
{
	char k0[256];
	int n = snprintf(k0, sizeof(k0), "AWS4%s", secret);
	uint8_t t[32];

	if (n < 0 || (size_t)n >= sizeof(k0))
		n = (int)sizeof(k0) - 1;
	hmac(k0, (size_t)n, a->scope_date, strlen(a->scope_date), t);
	hmac(t, 32, a->region, strlen(a->region), t);
	hmac(t, 32, a->service, strlen(a->service), t);
	hmac(t, 32, "aws4_request", 12, key);
	OPENSSL_cleanse(k0, sizeof(k0));
}

static void
sign(const uint8_t key[32], const char *sts, size_t n, char out[65])
{
	uint8_t s[32];

	hmac(key, 32, sts, n, s);
	rgw_hex(s, 32, out);
}

/* The string to sign of canonical request cr. */
static void
string_to_sign(struct rgw_str *sts, const struct rgw_sigv4 *a, const struct rgw_str *cr)
{
	uint8_t hh[32];

	rgw_sha256(cr->p, cr->len, hh);
	rgw_str_adds(sts, ALGO "\n");
	rgw_str_adds(sts, a->amz_date);
	rgw_str_addf(sts, "\n%s/%s/%s/aws4_request\n", a->scope_date, a->region, a->service);
	rgw_str_hex(sts, hh, 32);
}

int
rgw_sigv4_verify(const struct rgw_http_head *h, const struct rgw_sigv4 *a, const char *secret,
		 char seed_hex[65])
{
	uint8_t key[32];
	int rc = -EPERM;

	rgw_sigv4_key(secret, a, key);
	for (int raw = 0; raw < 2 && rc == -EPERM; raw++) {
		struct rgw_str cr, sts;
		char sig[65];
		int r;

		rgw_str_init(&cr);
		rgw_str_init(&sts);
		if ((r = rgw_sigv4_canonical(h, a, raw, &cr)) == 0) {
			string_to_sign(&sts, a, &cr);
			if (sts.oom) {
				r = -ENOMEM;
			} else {
				sign(key, sts.p, sts.len, sig);
				if (rgw_sigv4_equal(sig, a->signature)) {
					rc = 0;
					if (seed_hex)
						memcpy(seed_hex, sig, 65);
				}
			}
		}
		rgw_str_fini(&cr);
		rgw_str_fini(&sts);
		if (r)
			rc = r;
	}
	OPENSSL_cleanse(key, sizeof(key));
	return rc;
}

void
rgw_sigv4_chunk_sig(const uint8_t key[32], const struct rgw_sigv4 *a, const char *kind,
		    const char *prev_hex, const uint8_t hash[32], char out_hex[65])
{
	static const char empty[] =
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
	char sts[512];
	char hh[65];
	int n;

	rgw_hex(hash, 32, hh);
	if (!strcmp(kind, "AWS4-HMAC-SHA256-TRAILER"))
		n = snprintf(sts, sizeof(sts), "%s\n%s\n%s/%s/%s/aws4_request\n%s\n%s", kind,
			     a->amz_date, a->scope_date, a->region, a->service, prev_hex, hh);
	else
		n = snprintf(sts, sizeof(sts), "%s\n%s\n%s/%s/%s/aws4_request\n%s\n%s\n%s", kind,
			     a->amz_date, a->scope_date, a->region, a->service, prev_hex, empty,
			     hh);
	if (n < 0 || (size_t)n >= sizeof(sts))
		n = (int)sizeof(sts) - 1;
	sign(key, sts, (size_t)n, out_hex);
}
