/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ListObjects (v1), ListObjectsV2 and ListObjectVersions over the ordered
 * index: one omap listing per page of up to 1,000 entries, in UTF-8 byte
 * order (an entry's key is "<key>\0", so it sorts as the key does). With a
 * delimiter, a common prefix is emitted once and the scan jumps past it
 * (start after "<prefix>\xff", above every key under it) instead of
 * reading its keys: a bucket of a million keys under a thousand prefixes
 * lists in about a thousand seeks.
 */
#include "rgw_int.h"
#include "cm/err.h"
#include "cm/log.h"

#include <openssl/evp.h>

CM_LOG_SUBSYS(rgw);

#define XMLNS      "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""
#define XMLHD      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define PAGE       1000
#define ROUNDS_MAX 4096 /* omap listings per request (a bound: each is one page) */

enum lkind { L_V1, L_V2, L_VERSIONS };

struct lst {
	enum lkind kind;
	const char *prefix, *delim, *marker, *token, *start_after;
	size_t plen, dlen;
	unsigned max;
	bool url, owner;
	struct s3_shard shard;
	struct rgw_str start; /* the next listing starts after this omap key */
	struct cairn_kv *kvs;
	size_t n;
	bool more;
	int rval;
	struct rgw_str contents, prefixes, last_cp, next;
	bool next_is_cp;
	bool versioned;                 /* the bucket has (had) versioning: delete markers */
	const char *vmarker;            /* version-id-marker */
	char next_vid[RGW_VID_LEN + 1]; /* the last version listed */
	struct s3_vread vr;             /* the marker version's key (where to start) */
	unsigned count;
	bool truncated, peeking, done;
	int rounds;
};

static void
lst_free(struct s3_req *q)
{
	struct lst *l = q->op;

	if (!l)
		return;
	cairn_kvs_free(l->kvs, l->n);
	rgw_str_fini(&l->start);
	rgw_str_fini(&l->contents);
	rgw_str_fini(&l->prefixes);
	rgw_str_fini(&l->last_cp);
	rgw_str_fini(&l->next);
	s3_vread_fini(&l->vr);
	free(l);
	q->op = NULL;
}

/* A key or prefix in the response, url-encoded when asked. */
static void
put_text(struct lst *l, struct rgw_str *x, const char *b, size_t n)
{
	if (l->url)
		rgw_str_uri(x, b, n, true);
	else
		rgw_str_xml(x, b, n);
}

static void
elem(struct lst *l, struct rgw_str *x, const char *name, const char *v, bool enc)
{
	if (!v)
		return;
	rgw_str_addf(x, "<%s>", name);
	if (enc)
		put_text(l, x, v, strlen(v));
	else
		rgw_str_xml(x, v, strlen(v));
	rgw_str_addf(x, "</%s>", name);
}

static void
add_entry(struct s3_req *q, struct lst *l, const char *key, size_t klen, const struct rgw_entry *e,
	  bool latest)
{
	struct rgw_str *x = &l->contents;
	bool dm = e->flags & RGW_ENTRY_DELETE_MARKER;
	char etag[64], when[40];

	rgw_entry_etag(e, etag, sizeof(etag));
	rgw__iso8601(e->mtime_ns, when, sizeof(when));
	rgw_str_adds(x, l->kind != L_VERSIONS ? "<Contents><Key>"
			: dm                  ? "<DeleteMarker><Key>"
					      : "<Version><Key>");
	put_text(l, x, key, klen);
	rgw_str_adds(x, "</Key>");
	if (l->kind == L_VERSIONS) {
		rgw_str_addf(x, "<VersionId>%s</VersionId><IsLatest>%s</IsLatest>",
			     e->vid[0] ? e->vid : "null", latest ? "true" : "false");
		if (dm) {
			rgw_str_addf(x, "<LastModified>%s</LastModified>", when);
			s3_owner_xml(x, e->owner && *e->owner ? e->owner : q->b.owner);
			rgw_str_adds(x, "</DeleteMarker>");
			return;
		}
	}
	rgw_str_addf(x, "<LastModified>%s</LastModified><ETag>", when);
	rgw_str_xml(x, etag, strlen(etag));
	rgw_str_addf(x, "</ETag><Size>%" PRIu64 "</Size>", e->size);
	if (l->kind != L_V2 || l->owner)
		s3_owner_xml(x, e->owner && *e->owner ? e->owner : q->b.owner);
	rgw_str_adds(x, "<StorageClass>STANDARD</StorageClass>");
	rgw_str_adds(x, l->kind == L_VERSIONS ? "</Version>" : "</Contents>");
}

static void
b64(struct rgw_str *x, const struct rgw_str *v)
{
	size_t n = 4 * ((v->len + 2) / 3) + 1;
	unsigned char *o = malloc(n);

	if (!o) {
		x->oom = true;
		return;
	}
	EVP_EncodeBlock(o, (const unsigned char *)v->p, (int)v->len);
	rgw_str_adds(x, (char *)o);
	free(o);
}

static void
finish(struct s3_req *q, struct lst *l)
{
	struct rgw_str x;
	const char *root = l->kind == L_VERSIONS ? "ListVersionsResult" : "ListBucketResult";
	char nm[16];

	rgw_str_init(&x);
	rgw_str_addf(&x, XMLHD "<%s " XMLNS "><Name>", root);
	rgw_str_xml(&x, q->bucket, strlen(q->bucket));
	rgw_str_adds(&x, "</Name>");
	elem(l, &x, "Prefix", l->prefix ? l->prefix : "", true);
	if (l->kind == L_V1)
		elem(l, &x, "Marker", l->marker ? l->marker : "", true);
	if (l->kind == L_VERSIONS) {
		elem(l, &x, "KeyMarker", l->marker ? l->marker : "", true);
		elem(l, &x, "VersionIdMarker", l->vmarker ? l->vmarker : "", false);
	}
	if (l->kind == L_V2) {
		rgw_str_addf(&x, "<KeyCount>%u</KeyCount>", l->count);
		if (l->token)
			elem(l, &x, "ContinuationToken", l->token, false);
		if (l->start_after)
			elem(l, &x, "StartAfter", l->start_after, true);
	}
	snprintf(nm, sizeof(nm), "%u", l->max);
	elem(l, &x, "MaxKeys", nm, false);
	if (l->delim)
		elem(l, &x, "Delimiter", l->delim, true);
	if (l->url)
		rgw_str_adds(&x, "<EncodingType>url</EncodingType>");
	rgw_str_addf(&x, "<IsTruncated>%s</IsTruncated>", l->truncated ? "true" : "false");
	if (l->truncated && l->next.len) {
		if (l->kind == L_V2) {
			struct rgw_str tok;

			rgw_str_init(&tok);
			rgw_str_addc(&tok, l->next_is_cp ? 'p' : 'k');
			rgw_str_add(&tok, l->next.p, l->next.len);
			rgw_str_adds(&x, "<NextContinuationToken>");
			b64(&x, &tok);
			rgw_str_adds(&x, "</NextContinuationToken>");
			rgw_str_fini(&tok);
		} else if (l->kind == L_V1 && l->delim) {
			rgw_str_adds(&x, "<NextMarker>");
			put_text(l, &x, l->next.p, l->next.len);
			rgw_str_adds(&x, "</NextMarker>");
		} else if (l->kind == L_VERSIONS) {
			rgw_str_adds(&x, "<NextKeyMarker>");
			put_text(l, &x, l->next.p, l->next.len);
			rgw_str_adds(&x, "</NextKeyMarker>");
			if (!l->next_is_cp)
				rgw_str_addf(&x, "<NextVersionIdMarker>%s</NextVersionIdMarker>",
					     l->next_vid);
		}
	}
	rgw_str_add(&x, l->contents.p, l->contents.len);
	rgw_str_add(&x, l->prefixes.p, l->prefixes.len);
	rgw_str_addf(&x, "</%s>", root);
	if (x.oom || l->contents.oom || l->prefixes.oom) {
		rgw_str_fini(&x);
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	s3_respond_xml(q, 200, NULL, &x);
	rgw_str_fini(&x);
}

static void list_round(struct s3_req *q);

static int
bcmp_(const void *a, size_t alen, const void *b, size_t blen)
{
	size_t n = CM_MIN(alen, blen);
	int c = n ? memcmp(a, b, n) : 0; /* (an empty start is a NULL buffer) */

	return c ? c : alen < blen ? -1 : alen > blen;
}

/*
 * After the shard l read ended: whether the next shard may hold more of
 * the listing (it exists, and its keys may still have the prefix); if so
 * the listing goes on from its lowest key.
 */
static bool
next_shard(struct lst *l)
{
	size_t hl = 0;
	const char *hi = s3_shard_hi(&l->shard, &hl);

	if (!hi || (l->plen && (hl < l->plen || memcmp(hi, l->prefix, l->plen)) &&
		    bcmp_(hi, hl, l->prefix, l->plen) > 0))
		return false;
	if (bcmp_(l->start.p, l->start.len, hi, hl) < 0) {
		/* (start after hi itself: its entries are "hi\0...", all above it) */
		rgw_str_reset(&l->start);
		rgw_str_add(&l->start, hi, hl);
	}
	return !l->start.oom;
}

/* Where the next round reads: the shard of the start's key, or of the prefix if above. */
static void
pick_shard(struct s3_req *q, struct lst *l)
{
	const char *z = l->start.len ? memchr(l->start.p, '\0', l->start.len) : NULL;
	size_t sl = z ? (size_t)(z - l->start.p) : l->start.len;

	if (l->plen && bcmp_(l->start.p, sl, l->prefix, l->plen) < 0)
		s3_shard_pick(&q->b, &q->bc, l->prefix, l->plen, &l->shard);
	else
		s3_shard_pick(&q->b, &q->bc, l->start.len ? l->start.p : "", sl, &l->shard);
}

static bool
starts_with(const void *b, size_t n, const struct rgw_str *p)
{
	return p->len && n >= p->len && !memcmp(b, p->p, p->len);
}

static void
round_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct lst *l = q->op;
	size_t i, hl = 0;
	const char *hi;
	bool next = false;

	q->pending--;
	if (!rc && s3_shard_moved(q, &l->shard))
		return; /* (split or merged since the map was read: again with the new one) */
	if (!rc && l->rval)
		rc = l->rval;
	if (rc) {
		s3_error_rc(q, rc, "listing the index");
		return;
	}
	hi = s3_shard_hi(&l->shard, &hl);
	for (i = 0; i < l->n; i++) {
		const uint8_t *k = l->kvs[i].key;
		size_t kl = l->kvs[i].klen, klen;
		const uint8_t *z;
		struct rgw_entry e;
		bool latest;

		if (!kl || k[0] == 0xff) {
			l->more = false; /* (the system region: past every key) */
			break;
		}
		z = memchr(k, 0, kl);
		if (!z)
			continue;
		if (hi && bcmp_(k, (size_t)(z - k), hi, hl) >= 0) {
			/* (past the shard's range: entries a split has copied to the next
			 * shard and not yet trimmed here, listed there) */
			l->more = false;
			break;
		}
		latest = (size_t)(z - k) + 1 == kl;
		if (!latest && (l->kind != L_VERSIONS || z[1] != 1))
			continue; /* (an older version: ListObjectVersions' only) */
		if (latest && l->kind != L_VERSIONS && l->versioned) {
			int f = rgw_entry_raw_flags(l->kvs[i].val, l->kvs[i].vlen);

			if (f > 0 && (f & RGW_ENTRY_DELETE_MARKER))
				continue; /* (the key's latest version is a delete marker) */
		}
		klen = (size_t)(z - k);
		if (starts_with(k, klen, &l->last_cp))
			continue;
		if (l->peeking) {
			l->truncated = true;
			l->done = true;
			break;
		}
		if (l->delim && l->dlen) {
			const uint8_t *d = NULL;

			for (size_t j = l->plen; j + l->dlen <= klen; j++)
				if (!memcmp(k + j, l->delim, l->dlen)) {
					d = k + j;
					break;
				}
			if (d) {
				size_t cpl = (size_t)(d - k) + l->dlen;

				if (l->count == l->max) {
					l->truncated = true;
					l->done = true;
					break;
				}
				rgw_str_reset(&l->last_cp);
				rgw_str_add(&l->last_cp, k, cpl);
				rgw_str_adds(&l->prefixes, "<CommonPrefixes><Prefix>");
				put_text(l, &l->prefixes, (const char *)k, cpl);
				rgw_str_adds(&l->prefixes, "</Prefix></CommonPrefixes>");
				l->count++;
				rgw_str_reset(&l->next);
				rgw_str_add(&l->next, k, cpl);
				l->next_is_cp = true;
				continue;
			}
		}
		if (l->count == l->max) {
			l->truncated = true;
			l->done = true;
			break;
		}
		if (rgw_entry_decode(l->kvs[i].val, l->kvs[i].vlen, &e)) {
			CM_ERR("bucket %s: the index entry of %.*s does not decode: skipped",
			       q->bucket, (int)klen, (const char *)k);
			continue;
		}
		add_entry(q, l, (const char *)k, klen, &e, latest);
		snprintf(l->next_vid, sizeof(l->next_vid), "%s", e.vid[0] ? e.vid : "null");
		rgw_entry_fini(&e);
		l->count++;
		rgw_str_reset(&l->next);
		rgw_str_add(&l->next, k, klen);
		l->next_is_cp = false;
	}
	if (!l->done && l->n && l->more) {
		/* Next page: after the last entry, or past the prefix it was under. */
		rgw_str_reset(&l->start);
		if (l->last_cp.len &&
		    starts_with(l->kvs[l->n - 1].key, l->kvs[l->n - 1].klen, &l->last_cp)) {
			rgw_str_add(&l->start, l->last_cp.p, l->last_cp.len);
			rgw_str_addc(&l->start, (char)0xff);
		} else {
			const struct cairn_kv *lk = &l->kvs[l->n - 1];
			const uint8_t *z = memchr(lk->key, 0, lk->klen);

			if (l->kind != L_VERSIONS && z &&
			    (size_t)(z - (const uint8_t *)lk->key) + 1 < lk->klen) {
				/* (an older version's record: past all of the key's) */
				rgw_str_add(&l->start, lk->key,
					    (size_t)(z - (const uint8_t *)lk->key) + 1);
				rgw_str_addc(&l->start, '\2');
			} else {
				rgw_str_add(&l->start, lk->key, lk->klen);
			}
		}
		if (l->count == l->max)
			l->peeking = true; /* (one more look: is there anything after?) */
		next = true;
	} else if (!l->done && !l->more && next_shard(l)) {
		next = true; /* (this shard's keys ended: the next one's follow, all above) */
	}
	if (next) {
		cairn_kvs_free(l->kvs, l->n);
		l->kvs = NULL;
		l->n = 0;
		if (++l->rounds < ROUNDS_MAX) {
			list_round(q);
			return;
		}
		l->truncated = true;
	}
	finish(q, l);
}

static void
list_round(struct s3_req *q)
{
	struct lst *l = q->op;
	cairn_op_t *op = cairn_op_create();
	int rc;

	if (!op) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	pick_shard(q, l);
	s3_shard_read(&l->shard, op);
	cairn_op_omap_list(op, l->start.len ? l->start.p : NULL, l->start.len,
			   l->plen ? l->prefix : NULL, l->plen, l->peeking ? 64 : PAGE, &l->kvs,
			   &l->n, &l->more, &l->rval);
	if ((rc = rgw__aio(q->t, q->g->meta, l->shard.oid, op, round_done, q))) {
		s3_error_rc(q, rc, "listing the index");
		return;
	}
	q->pending++;
}

/* ListObjectVersions from key-marker's version version-id-marker: start after it. */
static void
marker_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct lst *l = q->op;
	const struct cairn_kv *cur, *np;
	struct rgw_entry e;
	size_t ml = strlen(l->marker);
	bool null = !strcmp(l->vmarker, "null");

	q->pending--;
	if (!rc && s3_shard_moved(q, &l->shard))
		return;
	if (!rc)
		rc = s3_vread_rc(&l->vr);
	if (rc) {
		s3_error_rc(q, rc, "listing the index");
		return;
	}
	cur = s3_vread_cur(&l->vr);
	np = s3_vread_nptr(&l->vr);
	rgw_str_reset(&l->start);
	if (cur && rgw_entry_decode(cur->val, cur->vlen, &e) == 0) {
		bool match = null ? !e.vid[0] : !strcmp(e.vid, l->vmarker);

		rgw_entry_fini(&e);
		if (match) {
			/* (the latest: its older versions come next) */
			s3_entry_key(l->marker, ml, &l->start);
			list_round(q);
			return;
		}
	}
	if (!null) {
		s3_version_key(l->marker, ml, l->vmarker, &l->start);
	} else if (np && np->vlen == RGW_NPTR_VLEN) {
		char sk[RGW_VID_LEN + 1];

		memcpy(sk, np->val, RGW_VID_LEN);
		sk[RGW_VID_LEN] = '\0';
		s3_version_key(l->marker, ml, sk, &l->start);
	} else {
		/* (no such version any more: after all of the key's) */
		rgw_str_add(&l->start, l->marker, ml);
		rgw_str_add(&l->start, "\0\2", 2);
	}
	if (l->start.oom) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	list_round(q);
}

void
s3_list_objects(struct s3_req *q)
{
	struct lst *l = calloc(1, sizeof(*l));
	const char *lt = rgw_uri_q(&q->u, "list-type");
	const char *mk = rgw_uri_q(&q->u, "max-keys");
	const char *enc = rgw_uri_q(&q->u, "encoding-type");
	const char *fo = rgw_uri_q(&q->u, "fetch-owner");

	if (!l) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	q->op = l;
	q->op_free = lst_free;
	rgw_str_init(&l->start);
	rgw_str_init(&l->contents);
	rgw_str_init(&l->prefixes);
	rgw_str_init(&l->last_cp);
	rgw_str_init(&l->next);
	l->versioned = s3_vmode(&q->b) != S3_V_NEVER;
	if (rgw_uri_q(&q->u, "versions")) {
		l->kind = L_VERSIONS;
		q->op_name = "ListObjectVersions";
		l->marker = rgw_uri_q(&q->u, "key-marker");
		l->vmarker = rgw_uri_q(&q->u, "version-id-marker");
		if (l->vmarker && !*l->vmarker)
			l->vmarker = NULL;
		if (l->vmarker && (!l->marker || !*l->marker)) {
			s3_error(q, 400, "InvalidArgument",
				 "a version-id-marker cannot be specified without a key-marker");
			return;
		}
		if (l->vmarker && strcmp(l->vmarker, "null") && !rgw_vid_ok(l->vmarker)) {
			s3_error(q, 400, "InvalidArgument", "invalid version id specified");
			return;
		}
	} else if (lt && !strcmp(lt, "2")) {
		l->kind = L_V2;
		q->op_name = "ListObjectsV2";
	} else if (lt) {
		s3_error(q, 400, "InvalidArgument", "list-type must be 2");
		return;
	} else {
		l->kind = L_V1;
		q->op_name = "ListObjects";
		l->marker = rgw_uri_q(&q->u, "marker");
	}
	l->prefix = rgw_uri_q(&q->u, "prefix");
	l->plen = l->prefix ? strlen(l->prefix) : 0;
	l->delim = rgw_uri_q(&q->u, "delimiter");
	l->dlen = l->delim ? strlen(l->delim) : 0;
	if (l->delim && !l->dlen)
		l->delim = NULL;
	l->max = 1000;
	if (mk) {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(mk, &end, 10);
		if (!*mk || *end || errno || *mk == '-') {
			s3_error(q, 400, "InvalidArgument", "max-keys is not a number");
			return;
		}
		l->max = v > 1000 ? 1000 : (unsigned)v;
	}
	if (enc) {
		if (strcmp(enc, "url")) {
			s3_error(q, 400, "InvalidArgument", "encoding-type must be url");
			return;
		}
		l->url = true;
	}
	l->owner = fo && !strcmp(fo, "true");
	if (l->kind == L_V2) {
		l->token = rgw_uri_q(&q->u, "continuation-token");
		l->start_after = rgw_uri_q(&q->u, "start-after");
		if (l->token) {
			size_t tl = strlen(l->token);
			unsigned char *d = malloc(tl + 4);
			int n;

			if (!d) {
				s3_error(q, 503, "SlowDown", "out of memory");
				return;
			}
			n = tl ? EVP_DecodeBlock(d, (const unsigned char *)l->token, (int)tl) : -1;
			/* (EVP_DecodeBlock counts the padding's zero bytes) */
			while (n > 0 && tl && l->token[tl - 1] == '=') {
				n--;
				tl--;
			}
			if (n < 2 || (d[0] != 'k' && d[0] != 'p')) {
				free(d);
				s3_error(q, 400, "InvalidArgument",
					 "the continuation token is not valid");
				return;
			}
			rgw_str_add(&l->start, d + 1, (size_t)n - 1);
			/* (past the key's older versions too: "\0\2") */
			if (d[0] == 'p')
				rgw_str_addc(&l->start, (char)0xff);
			else
				rgw_str_add(&l->start, "\0\2", 2);
			free(d);
		} else if (l->start_after && *l->start_after) {
			rgw_str_adds(&l->start, l->start_after);
			rgw_str_add(&l->start, "\0\2", 2);
		}
	} else if (l->marker && *l->marker) {
		size_t ml = strlen(l->marker);

		rgw_str_add(&l->start, l->marker, ml);
		/* A marker that is a common prefix: past every key under it. */
		if (l->delim && ml >= l->dlen &&
		    !memcmp(l->marker + ml - l->dlen, l->delim, l->dlen)) {
			rgw_str_addc(&l->start, (char)0xff);
		} else {
			rgw_str_add(&l->start, "\0\2", 2); /* (past all of the key's versions) */
		}
	}
	/* (the marker version's shard: its key's) */
	if (l->kind == L_VERSIONS && l->vmarker && l->marker)
		s3_shard_pick(&q->b, &q->bc, l->marker, strlen(l->marker), &l->shard);
	if (l->start.oom) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	if (l->max == 0) {
		l->peeking = true;
	}
	if (l->kind == L_VERSIONS && l->vmarker && l->marker) {
		/* Where the marker's version is: the key's latest, or which record. */
		cairn_op_t *op;
		int rc;

		if (s3_vread_init(&l->vr, l->marker, strlen(l->marker), true, NULL, false) ||
		    !(op = cairn_op_create())) {
			s3_error(q, 503, "SlowDown", "out of memory");
			return;
		}
		s3_shard_read(&l->shard, op);
		s3_vread_op(&l->vr, op);
		if ((rc = rgw__aio(q->t, q->g->meta, l->shard.oid, op, marker_done, q))) {
			s3_error_rc(q, rc, "listing the index");
			return;
		}
		q->pending++;
		return;
	}
	list_round(q);
}
