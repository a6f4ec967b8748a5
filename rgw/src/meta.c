/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Index entries: a magic byte and a version, then tag (1 byte), length
 * (4 bytes LE), value; unknown tags are skipped (newer writers), a length
 * past the end is refused. Bucket records: JSON (jansson).
 */
#include "rgw/meta.h"
#include "cm/random.h"

#include <jansson.h>

#define ENTRY_MAGIC 0xe1
#define ENTRY_V     1

enum {
	T_FLAGS = 1,
	T_INST,
	T_SIZE,
	T_MTIME,
	T_MD5,
	T_PARTS,
	T_CTYPE,
	T_OWNER,
	T_META,
	T_CKSUM, /* alg byte, then the base64 value */
	T_TAGS,  /* the packed tag set */
	T_ACL,   /* the canned ACL */
	T_VID,   /* the version id (absent: the null version) */
};

static void
tlv(struct rgw_str *out, uint8_t tag, const void *v, size_t n)
{
	uint8_t h[5] = { tag, (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16),
			 (uint8_t)(n >> 24) };

	rgw_str_add(out, h, 5);
	rgw_str_add(out, v, n);
}

static void
tlv64(struct rgw_str *out, uint8_t tag, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	tlv(out, tag, b, 8);
}

void
rgw_entry_encode(const struct rgw_entry *e, struct rgw_str *out)
{
	uint8_t hd[2] = { ENTRY_MAGIC, ENTRY_V };
	uint8_t p[4];

	rgw_str_add(out, hd, 2);
	tlv(out, T_FLAGS, &e->flags, 1);
	tlv(out, T_INST, e->inst, 16);
	tlv64(out, T_SIZE, e->size);
	tlv64(out, T_MTIME, (uint64_t)e->mtime_ns);
	tlv(out, T_MD5, e->md5, 16);
	if (e->parts) {
		for (int i = 0; i < 4; i++)
			p[i] = (uint8_t)(e->parts >> (8 * i));
		tlv(out, T_PARTS, p, 4);
	}
	if (e->ctype && *e->ctype)
		tlv(out, T_CTYPE, e->ctype, strlen(e->ctype));
	if (e->owner && *e->owner)
		tlv(out, T_OWNER, e->owner, strlen(e->owner));
	if (e->ck_alg && e->ck[0]) {
		uint8_t b[1 + sizeof(e->ck)];
		size_t n = strnlen(e->ck, sizeof(e->ck) - 1);

		b[0] = e->ck_alg;
		memcpy(b + 1, e->ck, n);
		tlv(out, T_CKSUM, b, 1 + n);
	}
	if (e->tags && e->tags_len)
		tlv(out, T_TAGS, e->tags, e->tags_len);
	if (e->acl && *e->acl)
		tlv(out, T_ACL, e->acl, strlen(e->acl));
	if (e->vid[0])
		tlv(out, T_VID, e->vid, strlen(e->vid));
	for (size_t i = 0; i < e->nmeta; i++) {
		size_t kl = strlen(e->meta[i].k), vl = strlen(e->meta[i].v);
		uint8_t h[5] = { T_META, (uint8_t)(kl + vl + 1), (uint8_t)((kl + vl + 1) >> 8),
				 (uint8_t)((kl + vl + 1) >> 16), (uint8_t)((kl + vl + 1) >> 24) };

		rgw_str_add(out, h, 5);
		rgw_str_add(out, e->meta[i].k, kl);
		rgw_str_addc(out, '\0');
		rgw_str_add(out, e->meta[i].v, vl);
	}
}

static uint64_t
le64(const uint8_t *b)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

int
rgw_entry_decode(const void *buf, size_t n, struct rgw_entry *e)
{
	const uint8_t *b = buf, *end = b + n;
	char *m;

	memset(e, 0, sizeof(*e));
	if (n < 2 || b[0] != ENTRY_MAGIC || b[1] != ENTRY_V)
		return -EBADMSG;
	/* (every string fits in n bytes plus a NUL each: at most n / 5 fields) */
	if (!(m = malloc(n + n / 5 + 8)))
		return -ENOMEM;
	e->mem = m;
	e->ctype = e->owner = e->acl = (char *)"";
	b += 2;
	while (b < end) {
		uint8_t tag;
		uint32_t len;

		if (end - b < 5)
			goto bad;
		tag = b[0];
		len = (uint32_t)b[1] | (uint32_t)b[2] << 8 | (uint32_t)b[3] << 16 |
		      (uint32_t)b[4] << 24;
		b += 5;
		if (len > (size_t)(end - b))
			goto bad;
		switch (tag) {
		case T_FLAGS:
			if (len != 1)
				goto bad;
			e->flags = b[0];
			break;
		case T_INST:
			if (len != 16)
				goto bad;
			memcpy(e->inst, b, 16);
			break;
		case T_SIZE:
			if (len != 8)
				goto bad;
			e->size = le64(b);
			break;
		case T_MTIME:
			if (len != 8)
				goto bad;
			e->mtime_ns = (int64_t)le64(b);
			break;
		case T_MD5:
			if (len != 16)
				goto bad;
			memcpy(e->md5, b, 16);
			break;
		case T_PARTS:
			if (len != 4)
				goto bad;
			e->parts = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
				   (uint32_t)b[3] << 24;
			break;
		case T_CTYPE:
		case T_OWNER:
		case T_ACL:
			if (memchr(b, 0, len))
				goto bad;
			memcpy(m, b, len);
			m[len] = '\0';
			if (tag == T_CTYPE)
				e->ctype = m;
			else if (tag == T_OWNER)
				e->owner = m;
			else
				e->acl = m;
			m += len + 1;
			break;
		case T_META: {
			const uint8_t *z = memchr(b, 0, len);

			if (!z || z == b || memchr(z + 1, 0, len - (size_t)(z + 1 - b)))
				goto bad;
			if (e->nmeta == RGW_ENTRY_MAX_META)
				goto bad;
			memcpy(m, b, len);
			m[len] = '\0';
			e->meta[e->nmeta].k = m;
			e->meta[e->nmeta].v = m + (z - b) + 1;
			e->nmeta++;
			m += len + 1;
			break;
		}
		case T_CKSUM:
			if (len < 2 || len > sizeof(e->ck) || memchr(b + 1, 0, len - 1))
				goto bad;
			e->ck_alg = b[0];
			memcpy(e->ck, b + 1, len - 1);
			e->ck[len - 1] = '\0';
			break;
		case T_VID:
			if (len != RGW_VID_LEN)
				goto bad;
			memcpy(e->vid, b, len);
			e->vid[len] = '\0';
			if (!rgw_vid_ok(e->vid))
				goto bad;
			break;
		case T_TAGS:
			if (rgw_tags_check((const char *)b, len) < 0)
				goto bad;
			memcpy(m, b, len);
			e->tags = m;
			e->tags_len = len;
			m += len + 1;
			break;
		default:
			break; /* (a newer writer's field) */
		}
		b += len;
	}
	return 0;
bad:
	rgw_entry_fini(e);
	return -EBADMSG;
}

int
rgw_entry_raw_flags(const void *buf, size_t n)
{
	const uint8_t *b = buf;

	/* (encode writes the flags first: magic, version, T_FLAGS, its length 1) */
	if (n < 8 || b[0] != ENTRY_MAGIC || b[1] != ENTRY_V || b[2] != T_FLAGS || b[3] != 1 ||
	    b[4] || b[5] || b[6])
		return -1;
	return b[7];
}

static void
hex16(uint64_t v, char *out)
{
	static const char d[] = "0123456789abcdef";

	for (int i = 15; i >= 0; i--, v >>= 4)
		out[i] = d[v & 15];
}

void
rgw_vid_make(int64_t ns, char out[RGW_VID_LEN + 1])
{
	uint8_t r[4];

	hex16(~(uint64_t)ns, out);
	cm_random_bytes(r, sizeof(r));
	rgw_hex(r, 4, out + 16);
	out[RGW_VID_LEN] = '\0';
}

bool
rgw_vid_ok(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == RGW_VID_LEN;
}

void
rgw_version_sk(const struct rgw_entry *e, char out[RGW_VID_LEN + 1])
{
	if (e->vid[0]) {
		memcpy(out, e->vid, RGW_VID_LEN + 1);
		return;
	}
	hex16(~(uint64_t)e->mtime_ns, out);
	memcpy(out + 16, "null", 5);
}

bool
rgw_key_ok(const char *key, size_t klen)
{
	for (size_t i = 0; i < klen; i++) {
		unsigned char c = (unsigned char)key[i];

		if (!c || c == 0xc0 || c == 0xc1 || c >= 0xf5)
			return false;
	}
	return true;
}

void
rgw_entry_fini(struct rgw_entry *e)
{
	free(e->mem);
	memset(e, 0, sizeof(*e));
}

void
rgw_entry_etag(const struct rgw_entry *e, char *out, size_t len)
{
	char h[33];

	for (int i = 0; i < 16; i++)
		snprintf(h + 2 * i, 3, "%02x", e->md5[i]);
	if (e->parts)
		snprintf(out, len, "\"%s-%u\"", h, e->parts);
	else
		snprintf(out, len, "\"%s\"", h);
}

char *
rgw_bucket_encode(const struct rgw_bucket *b)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:s, s:I, s:I}", "name", b->name,
			      "id", b->id, "owner", b->owner, "location", b->location, "created",
			      (json_int_t)b->created, "acl", b->acl, "versioning", b->versioning,
			      "quota_bytes", (json_int_t)b->quota_bytes, "quota_objects",
			      (json_int_t)b->quota_objects);
	char *s;

	if (!j)
		return NULL;
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

static int
copy_str(json_t *j, const char *k, char *out, size_t len, bool need)
{
	json_t *v = json_object_get(j, k);
	const char *s;

	if (!v) {
		out[0] = '\0';
		return need ? -EBADMSG : 0;
	}
	if (!json_is_string(v) || strlen(s = json_string_value(v)) >= len)
		return -EBADMSG;
	snprintf(out, len, "%s", s);
	return 0;
}

int
rgw_bucket_decode(const char *text, size_t n, struct rgw_bucket *b)
{
	json_t *j = json_loadb(text, n, 0, NULL);
	json_t *c;
	int rc;

	memset(b, 0, sizeof(*b));
	if (!j)
		return -EBADMSG;
	if (!json_is_object(j) || (rc = copy_str(j, "name", b->name, sizeof(b->name), true)) ||
	    (rc = copy_str(j, "id", b->id, sizeof(b->id), true)) ||
	    (rc = copy_str(j, "owner", b->owner, sizeof(b->owner), true)) ||
	    (rc = copy_str(j, "location", b->location, sizeof(b->location), false)) ||
	    (rc = copy_str(j, "acl", b->acl, sizeof(b->acl), false)) ||
	    (rc = copy_str(j, "versioning", b->versioning, sizeof(b->versioning), false))) {
		json_decref(j);
		return -EBADMSG;
	}
	c = json_object_get(j, "created");
	b->created = json_is_integer(c) ? (int64_t)json_integer_value(c) : 0;
	c = json_object_get(j, "quota_bytes");
	b->quota_bytes = json_is_integer(c) ? (int64_t)json_integer_value(c) : 0;
	c = json_object_get(j, "quota_objects");
	b->quota_objects = json_is_integer(c) ? (int64_t)json_integer_value(c) : 0;
	json_decref(j);
	if (b->quota_bytes < 0 || b->quota_objects < 0)
		return -EBADMSG;
	return strlen(b->id) == 32 ? 0 : -EBADMSG;
}

bool
rgw_bucket_name_ok(const char *s)
{
	size_t n = strlen(s);
	bool digits_dots = true;
	int dots = 0;

	if (n < 3 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-'))
			return false;
		if (c == '.') {
			dots++;
			if (i && s[i - 1] == '.')
				return false;
		} else if (!(c >= '0' && c <= '9')) {
			digits_dots = false;
		}
	}
	if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
		return false;
	if (!((s[n - 1] >= 'a' && s[n - 1] <= 'z') || (s[n - 1] >= '0' && s[n - 1] <= '9')))
		return false;
	if (digits_dots && dots == 3)
		return false; /* (an IP address) */
	if (!strncmp(s, "xn--", 4) || (n > 8 && !strcmp(s + n - 8, "-s3alias")))
		return false;
	return true;
}

/* ---- multipart: manifests and part records ---- */

#define MANIFEST_MAGIC "RGWM"
#define PART_V         1
#define MAX_PARTS      10000

static void
put64(uint8_t *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

void
rgw_manifest_encode(const struct rgw_mpart *p, size_t n, struct rgw_str *out)
{
	uint8_t h[RGW_MANIFEST_HDR] = { 'R',
					'G',
					'W',
					'M',
					1,
					(uint8_t)n,
					(uint8_t)(n >> 8),
					(uint8_t)(n >> 16),
					(uint8_t)(n >> 24) };

	rgw_str_add(out, h, sizeof(h));
	for (size_t i = 0; i < n; i++) {
		uint8_t b[24];

		memcpy(b, p[i].inst, 16);
		put64(b + 16, p[i].size);
		rgw_str_add(out, b, sizeof(b));
	}
}

int
rgw_manifest_decode(const void *buf, size_t len, struct rgw_mpart **parts, size_t *n)
{
	const uint8_t *b = buf;
	uint32_t cnt;
	struct rgw_mpart *p;

	*parts = NULL;
	*n = 0;
	if (len < RGW_MANIFEST_HDR || memcmp(b, MANIFEST_MAGIC, 4) || b[4] != 1)
		return -EBADMSG;
	cnt = (uint32_t)b[5] | (uint32_t)b[6] << 8 | (uint32_t)b[7] << 16 | (uint32_t)b[8] << 24;
	if (cnt == 0 || cnt > MAX_PARTS || len != RGW_MANIFEST_HDR + (size_t)cnt * 24)
		return -EBADMSG;
	if (!(p = calloc(cnt, sizeof(*p))))
		return -ENOMEM;
	b += RGW_MANIFEST_HDR;
	for (uint32_t i = 0; i < cnt; i++, b += 24) {
		memcpy(p[i].inst, b, 16);
		p[i].size = le64(b + 16);
	}
	*parts = p;
	*n = cnt;
	return 0;
}

/* UTF-8 characters in [s, s+n) with no control character, or -1. */
static ssize_t
utf8_chars(const char *s, size_t n)
{
	ssize_t c = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char b = (unsigned char)s[i];

		if (b < 0x20 || b == 0x7f)
			return -1;
		if ((b & 0xc0) != 0x80)
			c++;
	}
	return c;
}

bool
rgw_tags_next(const char *p, size_t len, size_t *pos, const char **k, const char **v)
{
	const char *z1, *z2;

	if (*pos >= len || !(z1 = memchr(p + *pos, 0, len - *pos)) ||
	    !(z2 = memchr(z1 + 1, 0, len - (size_t)(z1 + 1 - p))))
		return false;
	*k = p + *pos;
	*v = z1 + 1;
	*pos = (size_t)(z2 + 1 - p);
	return true;
}

int
rgw_tags_check(const char *p, size_t len)
{
	size_t pos = 0;
	const char *k, *v;
	int n = 0;

	while (rgw_tags_next(p, len, &pos, &k, &v)) {
		ssize_t kc = utf8_chars(k, strlen(k)), vc = utf8_chars(v, strlen(v));

		if (kc < 1 || kc > 128 || vc < 0 || vc > 256 || ++n > RGW_TAGS_MAX)
			return -EBADMSG;
	}
	return pos == len ? n : -EBADMSG;
}

int
rgw_tags_add(struct rgw_str *packed, const char *k, size_t kl, const char *v, size_t vl)
{
	return rgw_tags_add_n(packed, k, kl, v, vl, RGW_TAGS_MAX);
}

int
rgw_tags_add_n(struct rgw_str *packed, const char *k, size_t kl, const char *v, size_t vl, int max)
{
	ssize_t kc = utf8_chars(k, kl), vc = utf8_chars(v, vl);
	size_t pos = 0;
	const char *ok, *ov;
	int n = 0;

	if (kc < 1 || kc > 128 || vc < 0 || vc > 256 || memchr(k, 0, kl) || memchr(v, 0, vl))
		return -EINVAL;
	while (packed->p && rgw_tags_next(packed->p, packed->len, &pos, &ok, &ov)) {
		if (strlen(ok) == kl && !memcmp(ok, k, kl))
			return -EEXIST;
		n++;
	}
	if (n >= max)
		return -E2BIG;
	rgw_str_add(packed, k, kl);
	rgw_str_addc(packed, '\0');
	rgw_str_add(packed, v, vl);
	rgw_str_addc(packed, '\0');
	return packed->oom ? -ENOMEM : 0;
}

void
rgw_layout_single(struct rgw_layout *l, const uint8_t inst[16], uint64_t size)
{
	memset(l, 0, sizeof(*l));
	memcpy(l->one.inst, inst, 16);
	l->one.size = size;
	l->parts = &l->one;
	l->starts = &l->start0;
	l->np = 1;
}

int
rgw_layout_manifest(struct rgw_layout *l, const void *b, size_t n, uint64_t size)
{
	uint64_t off = 0;
	int rc;

	memset(l, 0, sizeof(*l));
	if ((rc = rgw_manifest_decode(b, n, &l->parts, &l->np)))
		return rc;
	if (!(l->starts = calloc(l->np, sizeof(*l->starts)))) {
		free(l->parts);
		memset(l, 0, sizeof(*l));
		return -ENOMEM;
	}
	for (size_t i = 0; i < l->np; i++) {
		l->starts[i] = off;
		off += l->parts[i].size;
	}
	if (off != size) {
		rgw_layout_fini(l);
		return -EBADMSG;
	}
	return 0;
}

size_t
rgw_layout_find(const struct rgw_layout *l, uint64_t off)
{
	size_t lo = 0, hi = l->np;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->starts[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

void
rgw_layout_fini(struct rgw_layout *l)
{
	if (l->parts != &l->one)
		free(l->parts);
	if (l->starts != &l->start0)
		free(l->starts);
	memset(l, 0, sizeof(*l));
}

void
rgw_part_key(uint32_t num, const uint8_t inst[16], char out[RGW_PART_KEY_LEN + 1])
{
	snprintf(out, 6, "%05u", num);
	rgw_hex(inst, 16, out + 5);
}

void
rgw_part_encode(const struct rgw_part *p, struct rgw_str *out)
{
	uint8_t b[1 + 16 + 8 + 8];

	b[0] = PART_V;
	memcpy(b + 1, p->md5, 16);
	put64(b + 17, p->size);
	put64(b + 25, (uint64_t)p->mtime_ns);
	rgw_str_add(out, b, sizeof(b));
	if (p->ck_alg && p->ck[0]) {
		/* (appended: an older reader skips it) alg, length, the base64 value */
		uint8_t h[2] = { p->ck_alg, (uint8_t)strnlen(p->ck, sizeof(p->ck) - 1) };

		rgw_str_add(out, h, 2);
		rgw_str_add(out, p->ck, h[1]);
	}
}

int
rgw_part_decode(const void *key, size_t klen, const void *val, size_t vlen, struct rgw_part *p)
{
	const char *k = key;
	const uint8_t *v = val;
	uint32_t num = 0;

	memset(p, 0, sizeof(*p));
	/* (a newer writer may append fields to the value: they are skipped) */
	if (klen != RGW_PART_KEY_LEN || vlen < 33 || v[0] != PART_V)
		return -EBADMSG;
	for (int i = 0; i < 5; i++) {
		if (k[i] < '0' || k[i] > '9')
			return -EBADMSG;
		num = num * 10 + (uint32_t)(k[i] - '0');
	}
	if (num < 1 || num > MAX_PARTS)
		return -EBADMSG;
	if (rgw_unhex(k + 5, p->inst, 16))
		return -EBADMSG;
	p->num = num;
	memcpy(p->md5, v + 1, 16);
	p->size = le64(v + 17);
	p->mtime_ns = (int64_t)le64(v + 25);
	if (vlen >= 35 && v[33] && v[34] && v[34] < sizeof(p->ck) && 35u + v[34] <= vlen &&
	    !memchr(v + 35, 0, v[34])) {
		p->ck_alg = v[33];
		memcpy(p->ck, v + 35, v[34]);
		p->ck[v[34]] = '\0';
	}
	return 0;
}
