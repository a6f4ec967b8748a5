/* SPDX-License-Identifier: Apache-2.0 */
#include "mon/map_store.h"
#include "mon/ec_pin.h"
#include "mon/incremental.h"
#include "mon/osdmap.h"
#include "cm/log.h"

CM_LOG_SUBSYS(mon);

#define UPDATE_TRIES 100

struct mon_map_store {
	struct cm_etcd *e;
	char key[160]; /* /cairn/<fsid>/osdmap */
	size_t key_len;
	char inc_prefix[160]; /* /cairn/<fsid>/osdmap_inc */
};

int
mon_map_store_open(struct cm_etcd *e, const char *fsid, struct mon_map_store **sp)
{
	struct mon_map_store *s;

	if (!fsid || !fsid[0] || strlen(fsid) > 100 || strchr(fsid, '/'))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->e = e;
	s->key_len = (size_t)snprintf(s->key, sizeof(s->key), "/cairn/%s/osdmap", fsid);
	snprintf(s->inc_prefix, sizeof(s->inc_prefix), "/cairn/%s/osdmap_inc", fsid);
	*sp = s;
	return 0;
}

void
mon_map_store_close(struct mon_map_store *s)
{
	free(s);
}

int
mon_map_set_str(char **field, const char *value)
{
	char *d = strdup(value);

	if (!d)
		return -ENOMEM;
	if (*field && *field != protobuf_c_empty_string)
		free(*field);
	*field = d;
	return 0;
}

static void
epoch_key(const struct mon_map_store *s, uint64_t epoch, char *out, size_t len)
{
	snprintf(out, len, "%s/%020" PRIu64, s->key, epoch);
}

static void
inc_key(const struct mon_map_store *s, uint64_t epoch, char *out, size_t len)
{
	snprintf(out, len, "%s/%020" PRIu64, s->inc_prefix, epoch);
}

static int
encode(const Cairn__Map__OsdMap *m, uint8_t **buf, size_t *len)
{
	*len = cairn__map__osd_map__get_packed_size(m);
	*buf = malloc(*len ? *len : 1);
	if (!*buf)
		return -ENOMEM;
	cairn__map__osd_map__pack(m, *buf);
	return 0;
}

static int
decode(const struct cm_etcd_kv *kv, Cairn__Map__OsdMap **mp)
{
	*mp = cairn__map__osd_map__unpack(NULL, kv->value_len, kv->value);
	return *mp ? 0 : -EBADMSG;
}

int
mon_map_create(struct mon_map_store *s, const Cairn__Map__OsdMap *initial)
{
	Cairn__Map__OsdMap m = *initial;
	char hkey[200];
	uint8_t *buf;
	size_t len;
	bool ok;
	int rc;

	m.epoch = 1;
	m.modified_ns = cm_now_ns();
	rc = encode(&m, &buf, &len);
	if (rc)
		return rc;
	epoch_key(s, 1, hkey, sizeof(hkey));
	struct cm_etcd_cmp absent = { .key = s->key,
				      .key_len = s->key_len,
				      .target = CM_ETCD_CREATE,
				      .result = CM_ETCD_EQUAL,
				      .number = 0 };
	struct cm_etcd_op puts[2] = {
		{ .type = CM_ETCD_OP_PUT,
		  .key = s->key,
		  .key_len = s->key_len,
		  .value = buf,
		  .value_len = len },
		{ .type = CM_ETCD_OP_PUT,
		  .key = hkey,
		  .key_len = strlen(hkey),
		  .value = buf,
		  .value_len = len },
	};

	rc = cm_etcd_txn(s->e, &absent, 1, puts, 2, NULL, 0, &ok, NULL);
	free(buf);
	if (rc)
		return rc;
	return ok ? 0 : -EEXIST;
}

/* Read a map; with cp, also a second, separately allocated copy (for an edit beside the original).
 */
static int
read_key2(struct mon_map_store *s, const char *key, size_t key_len, Cairn__Map__OsdMap **mp,
	  Cairn__Map__OsdMap **cp, int64_t *rev)
{
	struct cm_etcd_range r;
	int rc = cm_etcd_get(s->e, key, key_len, NULL, 0, 0, &r);

	if (rc)
		return rc;
	if (r.count == 0) {
		cm_etcd_range_free(&r);
		return -ENOENT;
	}
	rc = decode(&r.kvs[0], mp);
	if (!rc && cp && (rc = decode(&r.kvs[0], cp)) != 0)
		cairn__map__osd_map__free_unpacked(*mp, NULL);
	if (rev)
		*rev = r.kvs[0].mod_revision;
	cm_etcd_range_free(&r);
	return rc;
}

static int
read_key(struct mon_map_store *s, const char *key, size_t key_len, Cairn__Map__OsdMap **mp,
	 int64_t *rev)
{
	return read_key2(s, key, key_len, mp, NULL, rev);
}

int
mon_map_read(struct mon_map_store *s, Cairn__Map__OsdMap **mp)
{
	return read_key(s, s->key, s->key_len, mp, NULL);
}

int
mon_map_read_epoch(struct mon_map_store *s, uint64_t epoch, Cairn__Map__OsdMap **mp)
{
	char hkey[200];

	epoch_key(s, epoch, hkey, sizeof(hkey));
	return read_key(s, hkey, strlen(hkey), mp, NULL);
}

int
mon_map_read_inc(struct mon_map_store *s, uint64_t epoch, Cairn__Map__Incremental **incp)
{
	struct cm_etcd_range r;
	char k[200];
	int rc;

	inc_key(s, epoch, k, sizeof(k));
	rc = cm_etcd_get(s->e, k, strlen(k), NULL, 0, 0, &r);
	if (rc)
		return rc;
	if (r.count == 0) {
		cm_etcd_range_free(&r);
		return -ENOENT;
	}
	*incp = cairn__map__incremental__unpack(NULL, r.kvs[0].value_len, r.kvs[0].value);
	cm_etcd_range_free(&r);
	return *incp ? 0 : -EBADMSG;
}

int
mon_map_update(struct mon_map_store *s, mon_map_update_fn fn, void *arg, uint64_t *epoch)
{
	for (int attempt = 0; attempt < UPDATE_TRIES; attempt++) {
		Cairn__Map__OsdMap *m, *old;
		Cairn__Map__Incremental *inc = NULL;
		int64_t rev;
		uint8_t *buf, *ibuf;
		size_t len, ilen;
		char hkey[200], ikey[200], old_full[200], old_inc[200];
		struct cm_etcd_op ops[5];
		unsigned nops = 0;
		bool ok;
		int rc = read_key2(s, s->key, s->key_len, &old, &m, &rev);

		if (rc)
			return rc;
		rc = fn(arg, m);
		if (rc) {
			cairn__map__osd_map__free_unpacked(m, NULL);
			cairn__map__osd_map__free_unpacked(old, NULL);
			return rc; /* 1: nothing to change; < 0: refused */
		}
		m->epoch = old->epoch + 1;
		m->modified_ns = cm_now_ns();
		/* EC PGs move only the positions they must (mon/ec_pin.h). */
		rc = mon_ec_pin_hold(old, m);
		if (rc) {
			cairn__map__osd_map__free_unpacked(m, NULL);
			cairn__map__osd_map__free_unpacked(old, NULL);
			return rc;
		}
		mon_map_canonicalize(m); /* stored maps compare byte for byte */
		{
			char why[MON_ERRLEN];

			/* Never store a map the readers would refuse. */
			rc = mon_map_validate(m, why);
			if (rc) {
				CM_ERR("refusing to store map epoch=%" PRIu64 ": %s", m->epoch,
				       why);
				cairn__map__osd_map__free_unpacked(m, NULL);
				cairn__map__osd_map__free_unpacked(old, NULL);
				return rc;
			}
		}
		mon_map_canonicalize(old);
		rc = mon_map_diff(old, m, &inc);
		cairn__map__osd_map__free_unpacked(old, NULL);
		if (!rc)
			rc = encode(m, &buf, &len);
		if (rc) {
			if (inc)
				cairn__map__incremental__free_unpacked(inc, NULL);
			cairn__map__osd_map__free_unpacked(m, NULL);
			return rc;
		}
		ilen = cairn__map__incremental__get_packed_size(inc);
		ibuf = malloc(ilen ? ilen : 1);
		if (!ibuf) {
			free(buf);
			cairn__map__incremental__free_unpacked(inc, NULL);
			cairn__map__osd_map__free_unpacked(m, NULL);
			return -ENOMEM;
		}
		cairn__map__incremental__pack(inc, ibuf);
		cairn__map__incremental__free_unpacked(inc, NULL);
		epoch_key(s, m->epoch, hkey, sizeof(hkey));
		inc_key(s, m->epoch, ikey, sizeof(ikey));
		ops[nops++] = (struct cm_etcd_op){ .type = CM_ETCD_OP_PUT,
						   .key = s->key,
						   .key_len = s->key_len,
						   .value = buf,
						   .value_len = len };
		ops[nops++] = (struct cm_etcd_op){ .type = CM_ETCD_OP_PUT,
						   .key = hkey,
						   .key_len = strlen(hkey),
						   .value = buf,
						   .value_len = len };
		ops[nops++] = (struct cm_etcd_op){ .type = CM_ETCD_OP_PUT,
						   .key = ikey,
						   .key_len = strlen(ikey),
						   .value = ibuf,
						   .value_len = ilen };
		if (m->epoch > MON_MAP_HISTORY) {
			epoch_key(s, m->epoch - MON_MAP_HISTORY, old_full, sizeof(old_full));
			ops[nops++] = (struct cm_etcd_op){ .type = CM_ETCD_OP_DELETE,
							   .key = old_full,
							   .key_len = strlen(old_full) };
		}
		if (m->epoch > MON_INC_HISTORY) {
			inc_key(s, m->epoch - MON_INC_HISTORY, old_inc, sizeof(old_inc));
			ops[nops++] = (struct cm_etcd_op){ .type = CM_ETCD_OP_DELETE,
							   .key = old_inc,
							   .key_len = strlen(old_inc) };
		}
		struct cm_etcd_cmp same = { .key = s->key,
					    .key_len = s->key_len,
					    .target = CM_ETCD_MOD,
					    .result = CM_ETCD_EQUAL,
					    .number = rev };

		rc = cm_etcd_txn(s->e, &same, 1, ops, nops, NULL, 0, &ok, NULL);
		free(buf);
		free(ibuf);
		if (!rc && ok && epoch)
			*epoch = m->epoch;
		cairn__map__osd_map__free_unpacked(m, NULL);
		if (rc)
			return rc;
		if (ok)
			return 0;
		/* Someone else changed the map first: re-read and re-apply. */
		CM_DEBUG("map update conflict, retrying attempt=%d", attempt);
		usleep((useconds_t)(1000 + (cm_now_ns() % 4000)));
	}
	return -EAGAIN;
}
