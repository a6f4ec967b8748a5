/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Entities in etcd and the auth commands (mon/auth.h). A key is sealed
 * with AES-256-GCM under the KEK with "cairn-auth <name>" as associated
 * data, so a sealed key copied to another name does not open.
 */
#include "mon/auth.h"
#include "cm/caps.h"
#include "cm/err.h"

#include <cairn/mon.pb-c.h>
#include <openssl/crypto.h>

#define AAD_MAX (CM_AUTH_NAME_MAX + 16)

static size_t
aad(const char *name, char out[AAD_MAX])
{
	return (size_t)snprintf(out, AAD_MAX, "cairn-auth %s", name);
}

void
mon_auth_entry_fini(struct mon_auth_entry *a)
{
	free(a->caps);
	OPENSSL_cleanse(a, sizeof(*a));
}

int
mon_auth_key(const char *fsid, const char *name, char *out, size_t len)
{
	int n = snprintf(out, len, "/cairn/%s/auth/%s", fsid, name ? name : "");

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int
mon_auth_decode(const uint8_t *kek, const char *name, const void *val, size_t len,
		struct mon_auth_entry *out)
{
	Cairn__Mon__AuthEntity *a = cairn__mon__auth_entity__unpack(NULL, len, val);
	struct cm_caps caps;
	char a_d[AAD_MAX], cerr[8];
	uint8_t *key = NULL;
	size_t klen = 0;
	int rc = -EBADMSG;

	memset(out, 0, sizeof(*out));
	if (!a)
		return -EBADMSG;
	if (!a->name || strcmp(a->name, name) || !cm_auth_valid_name(a->name) ||
	    cm_caps_parse(a->caps, &caps, cerr, sizeof(cerr)))
		goto out;
	cm_caps_fini(&caps);
	if (kek) {
		if (cm_auth_open(kek, a_d, aad(name, a_d), a->key_sealed.data, a->key_sealed.len,
				 &key, &klen) ||
		    klen != CM_AUTH_KEY_LEN)
			goto out;
		memcpy(out->key, key, CM_AUTH_KEY_LEN);
	}
	out->caps = strdup(a->caps);
	if (!out->caps) {
		rc = -ENOMEM;
		goto out;
	}
	snprintf(out->name, sizeof(out->name), "%s", name);
	out->created_ns = a->created_ns;
	rc = 0;
out:
	if (key) {
		OPENSSL_cleanse(key, klen);
		free(key);
	}
	if (rc)
		mon_auth_entry_fini(out);
	cairn__mon__auth_entity__free_unpacked(a, NULL);
	return rc;
}

/* The canonical form of caps into out. \return 0 or -EINVAL (err says why). */
static int
canon_caps(const char *caps, char *out, size_t len, char *err, size_t errlen)
{
	struct cm_caps c;
	int rc = cm_caps_parse(caps, &c, err, errlen);

	if (rc)
		return rc;
	rc = cm_caps_format(&c, out, len) < 0 ? -EINVAL : 0;
	if (rc)
		snprintf(err, errlen, "caps: longer than %d bytes in canonical form", CM_CAPS_MAX);
	cm_caps_fini(&c);
	return rc;
}

/* Pack name's record into *buf (malloc'd). */
static int
pack(const uint8_t kek[CM_AUTH_KEY_LEN], const char *name, const uint8_t key[CM_AUTH_KEY_LEN],
     const char *caps, uint64_t created_ns, uint8_t **buf, size_t *len)
{
	Cairn__Mon__AuthEntity a = CAIRN__MON__AUTH_ENTITY__INIT;
	char a_d[AAD_MAX];
	uint8_t *sealed;
	size_t slen;
	int rc = cm_auth_seal(kek, a_d, aad(name, a_d), key, CM_AUTH_KEY_LEN, &sealed, &slen);

	if (rc)
		return rc;
	a.name = (char *)name;
	a.key_sealed.data = sealed;
	a.key_sealed.len = slen;
	a.caps = (char *)caps;
	a.created_ns = created_ns;
	*len = cairn__mon__auth_entity__get_packed_size(&a);
	*buf = malloc(*len ? *len : 1);
	if (*buf)
		cairn__mon__auth_entity__pack(&a, *buf);
	free(sealed);
	return *buf ? 0 : -ENOMEM;
}

static uint64_t
wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int
mon_auth_put(struct cm_etcd *e, const char *fsid, const uint8_t kek[CM_AUTH_KEY_LEN],
	     const char *name, const uint8_t key[CM_AUTH_KEY_LEN], const char *caps,
	     bool create_only)
{
	char k[256], cn[CM_CAPS_MAX + 64], cerr[160];
	uint8_t *buf;
	size_t len;
	bool ok = true;
	int rc;

	if (!cm_auth_valid_name(name) || canon_caps(caps, cn, sizeof(cn), cerr, sizeof(cerr)))
		return -EINVAL;
	rc = mon_auth_key(fsid, name, k, sizeof(k));
	if (rc)
		return rc;
	rc = pack(kek, name, key, cn, wall_ns(), &buf, &len);
	if (rc)
		return rc;
	if (create_only) {
		struct cm_etcd_cmp absent = { .key = k,
					      .key_len = strlen(k),
					      .target = CM_ETCD_CREATE,
					      .result = CM_ETCD_EQUAL };
		struct cm_etcd_op put = { .type = CM_ETCD_OP_PUT,
					  .key = k,
					  .key_len = strlen(k),
					  .value = buf,
					  .value_len = len };

		rc = cm_etcd_txn(e, &absent, 1, &put, 1, NULL, 0, &ok, NULL);
	} else {
		rc = cm_etcd_put(e, k, strlen(k), buf, len, 0, NULL);
	}
	OPENSSL_cleanse(buf, len);
	free(buf);
	return rc ? rc : ok ? 0 : -EEXIST;
}

int
mon_auth_get(struct cm_etcd *e, const char *fsid, const uint8_t *kek, const char *name,
	     struct mon_auth_entry *out)
{
	struct cm_etcd_range r;
	char k[256];
	int rc;

	if (!cm_auth_valid_name(name))
		return -ENOENT;
	rc = mon_auth_key(fsid, name, k, sizeof(k));
	if (rc)
		return rc;
	rc = cm_etcd_get(e, k, strlen(k), NULL, 0, 0, &r);
	if (rc)
		return rc;
	rc = r.count ? mon_auth_decode(kek, name, r.kvs[0].value, r.kvs[0].value_len, out)
		     : -ENOENT;
	cm_etcd_range_free(&r);
	return rc;
}

static int
cmp_entry(const void *x, const void *y)
{
	return strcmp(((const struct mon_auth_entry *)x)->name,
		      ((const struct mon_auth_entry *)y)->name);
}

int
mon_auth_list(struct cm_etcd *e, const char *fsid, const uint8_t *kek, struct mon_auth_entry **v,
	      size_t *n)
{
	struct cm_etcd_range r;
	struct mon_auth_entry *a;
	char k[256], *end;
	size_t plen, elen, m = 0;
	int rc = mon_auth_key(fsid, NULL, k, sizeof(k));

	*v = NULL;
	*n = 0;
	if (rc)
		return rc;
	plen = strlen(k);
	end = cm_etcd_prefix_end(k, plen, &elen);
	if (!end)
		return -ENOMEM;
	rc = cm_etcd_get(e, k, plen, end, elen, 0, &r);
	free(end);
	if (rc)
		return rc;
	a = calloc(r.count ? r.count : 1, sizeof(*a));
	if (!a) {
		cm_etcd_range_free(&r);
		return -ENOMEM;
	}
	for (size_t i = 0; i < r.count; i++) {
		char name[CM_AUTH_NAME_MAX + 1];
		size_t nl = r.kvs[i].key_len - plen;

		/* A record that does not decode is skipped, not fatal: the rest
		 * of the cluster's entities still authenticate. */
		if (r.kvs[i].key_len <= plen || nl > CM_AUTH_NAME_MAX)
			continue;
		memcpy(name, r.kvs[i].key + plen, nl);
		name[nl] = 0;
		if (mon_auth_decode(kek, name, r.kvs[i].value, r.kvs[i].value_len, &a[m]) == 0)
			m++;
	}
	cm_etcd_range_free(&r);
	qsort(a, m, sizeof(*a), cmp_entry);
	*v = a;
	*n = m;
	return 0;
}

void
mon_auth_list_free(struct mon_auth_entry *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		mon_auth_entry_fini(&v[i]);
	free(v);
}

int
mon_auth_rm(struct cm_etcd *e, const char *fsid, const char *name)
{
	char k[256];
	int64_t del = 0;
	int rc;

	if (!cm_auth_valid_name(name))
		return -ENOENT;
	rc = mon_auth_key(fsid, name, k, sizeof(k));
	if (rc)
		return rc;
	rc = cm_etcd_delete(e, k, strlen(k), NULL, 0, &del);
	return rc ? rc : del ? 0 : -ENOENT;
}

int
mon_auth_builtin(struct cm_etcd *e, const char *fsid, const char *cluster_key)
{
	static const struct {
		const char *name, *caps;
	} b[] = { { CM_AUTH_ADMIN, "admin" }, { CM_AUTH_BOOTSTRAP_OSD, "profile bootstrap-osd" } };

	uint8_t kek[CM_AUTH_KEY_LEN], key[CM_AUTH_KEY_LEN];
	int rc = cm_auth_kek(cluster_key, kek);

	for (size_t i = 0; !rc && i < sizeof(b) / sizeof(b[0]); i++) {
		rc = cm_auth_entity_key(cluster_key, b[i].name, key);
		if (!rc)
			rc = mon_auth_put(e, fsid, kek, b[i].name, key, b[i].caps, true);
		if (rc == -EEXIST)
			rc = 0;
	}
	if (!rc) {
		struct timespec ts;
		bool changed;

		clock_gettime(CLOCK_REALTIME, &ts);
		rc = mon_auth_rotate(e, fsid, kek,
				     (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec,
				     &changed);
	}
	OPENSSL_cleanse(kek, sizeof(kek));
	OPENSSL_cleanse(key, sizeof(key));
	return rc;
}

/* ---------- the commands ---------- */

/* argv[from..] joined by single spaces into out. */
static int
join(int argc, char **argv, int from, char *out, size_t len)
{
	size_t off = 0;

	out[0] = 0;
	for (int i = from; i < argc; i++) {
		int n = snprintf(out + off, len - off, "%s%s", i > from ? " " : "", argv[i]);

		if (n < 0 || off + (size_t)n >= len)
			return -E2BIG;
		off += (size_t)n;
	}
	return 0;
}

static void
print_keyring(FILE *out, json_t **res, bool json, const struct mon_auth_entry *a)
{
	char b64[CM_AUTH_KEY_B64 + 1];

	cm_auth_key_encode(a->key, b64);
	if (json)
		*res = json_pack("{s:s, s:s, s:s}", "name", a->name, "key", b64, "caps", a->caps);
	else
		fprintf(out, "[%s]\n\tkey = %s\n\tcaps = \"%s\"\n", a->name, b64, a->caps);
	OPENSSL_cleanse(b64, sizeof(b64));
}

static int
auth_err(char *err, size_t errlen, int rc, const char *what, const char *name)
{
	if (rc == -ENOENT)
		snprintf(err, errlen, "no entity %s", name);
	else if (rc == -EEXIST)
		snprintf(err, errlen, "%s exists already (auth get prints its key)", name);
	else if (rc == -EBADMSG)
		snprintf(err, errlen, "%s's record does not open with this cluster's key", name);
	else
		snprintf(err, errlen, "%s %s: %s", what, name, cm_strerror(rc));
	return rc;
}

static int
cmd_add(struct cm_etcd *e, const char *fsid, const uint8_t *kek, int argc, char **argv, bool json,
	FILE *out, json_t **res, char *err, size_t errlen, bool or_get)
{
	struct mon_auth_entry a;
	char caps[CM_CAPS_MAX + 64], cerr[160];
	const char *name = argv[2];
	uint8_t key[CM_AUTH_KEY_LEN];
	int rc;

	if (!cm_auth_valid_name(name)) {
		snprintf(err, errlen,
			 "bad entity name '%.80s' (TYPE.ID: client, osd, mds or mon, then letters, "
			 "digits, '.', '_' or '-', at most %d bytes)",
			 name, CM_AUTH_NAME_MAX);
		return -EINVAL;
	}
	if (join(argc, argv, 3, caps, sizeof(caps))) {
		snprintf(err, errlen, "caps: longer than %d bytes", CM_CAPS_MAX);
		return -EINVAL;
	}
	{
		char cn[CM_CAPS_MAX + 64];

		rc = canon_caps(caps, cn, sizeof(cn), cerr, sizeof(cerr));
		if (rc) {
			snprintf(err, errlen, "%s", cerr);
			return rc;
		}
		snprintf(caps, sizeof(caps), "%s", cn);
	}
	if (or_get) {
		rc = mon_auth_get(e, fsid, kek, name, &a);
		if (rc == 0) {
			if (argc > 3 && strcmp(a.caps, caps)) {
				snprintf(
					err, errlen,
					"%s exists with other caps ('%.200s'; auth caps changes them)",
					name, a.caps);
				mon_auth_entry_fini(&a);
				return -EEXIST;
			}
			print_keyring(out, res, json, &a);
			mon_auth_entry_fini(&a);
			return 0;
		}
		if (rc != -ENOENT)
			return auth_err(err, errlen, rc, "auth get", name);
	}
	rc = cm_auth_key_random(key);
	if (!rc)
		rc = mon_auth_put(e, fsid, kek, name, key, caps, true);
	OPENSSL_cleanse(key, sizeof(key));
	if (rc == -EEXIST && or_get)
		return cmd_add(e, fsid, kek, argc, argv, json, out, res, err, errlen, true);
	if (rc)
		return auth_err(err, errlen, rc, "auth add", name);
	rc = mon_auth_get(e, fsid, kek, name, &a);
	if (rc)
		return auth_err(err, errlen, rc, "auth get", name);
	print_keyring(out, res, json, &a);
	mon_auth_entry_fini(&a);
	return 0;
}

/* Change name's caps, guarded on its record's revision (no lost update). */
static int
set_caps(struct cm_etcd *e, const char *fsid, const uint8_t *kek, const char *name,
	 const char *caps)
{
	for (int tries = 0; tries < 10; tries++) {
		struct cm_etcd_range r;
		struct mon_auth_entry a;
		char k[256];
		uint8_t *buf;
		size_t len;
		bool ok;
		int rc = mon_auth_key(fsid, name, k, sizeof(k));

		if (rc)
			return rc;
		rc = cm_etcd_get(e, k, strlen(k), NULL, 0, 0, &r);
		if (rc)
			return rc;
		if (!r.count) {
			cm_etcd_range_free(&r);
			return -ENOENT;
		}
		rc = mon_auth_decode(kek, name, r.kvs[0].value, r.kvs[0].value_len, &a);
		if (!rc)
			rc = pack(kek, name, a.key, caps, a.created_ns, &buf, &len);
		mon_auth_entry_fini(&a);
		if (rc) {
			cm_etcd_range_free(&r);
			return rc;
		}
		struct cm_etcd_cmp same = { .key = k,
					    .key_len = strlen(k),
					    .target = CM_ETCD_MOD,
					    .result = CM_ETCD_EQUAL,
					    .number = r.kvs[0].mod_revision };
		struct cm_etcd_op put = { .type = CM_ETCD_OP_PUT,
					  .key = k,
					  .key_len = strlen(k),
					  .value = buf,
					  .value_len = len };

		cm_etcd_range_free(&r);
		rc = cm_etcd_txn(e, &same, 1, &put, 1, NULL, 0, &ok, NULL);
		OPENSSL_cleanse(buf, len);
		free(buf);
		if (rc || ok)
			return rc;
	}
	return -EAGAIN;
}

int
mon_auth_command(struct cm_etcd *e, const char *fsid, const uint8_t *kek, int argc, char **argv,
		 bool json, FILE *out, json_t **res, char *err, size_t errlen)
{
	const char *verb = argc > 1 ? argv[1] : "";
	int rc;

	if (!kek) {
		snprintf(err, errlen, "this monitor holds no cluster key: it cannot open keys");
		return -EPERM;
	}
	if (!strcmp(verb, "ls") && argc == 2) {
		struct mon_auth_entry *v;
		size_t n;
		json_t *arr;

		rc = mon_auth_list(e, fsid, NULL, &v, &n);
		if (rc)
			return auth_err(err, errlen, rc, "auth ls", "");
		arr = json ? json_array() : NULL;
		for (size_t i = 0; i < n; i++) {
			if (json)
				json_array_append_new(arr, json_pack("{s:s, s:s}", "name",
								     v[i].name, "caps", v[i].caps));
			else
				fprintf(out, "%s\t%s\n", v[i].name, v[i].caps);
		}
		if (json)
			*res = json_pack("{s:o}", "entities", arr);
		mon_auth_list_free(v, n);
		return 0;
	}
	if ((!strcmp(verb, "add") || !strcmp(verb, "get-or-create")) && argc >= 3)
		return cmd_add(e, fsid, kek, argc, argv, json, out, res, err, errlen,
			       !strcmp(verb, "get-or-create"));
	if (!strcmp(verb, "get") && argc == 3) {
		struct mon_auth_entry a;

		rc = mon_auth_get(e, fsid, kek, argv[2], &a);
		if (rc)
			return auth_err(err, errlen, rc, "auth get", argv[2]);
		print_keyring(out, res, json, &a);
		mon_auth_entry_fini(&a);
		return 0;
	}
	if (!strcmp(verb, "rm") && argc == 3) {
		if (!strcmp(argv[2], CM_AUTH_ADMIN)) {
			snprintf(err, errlen, "%s cannot be removed (it is how an admin gets in)",
				 CM_AUTH_ADMIN);
			return -EPERM;
		}
		rc = mon_auth_rm(e, fsid, argv[2]);
		if (rc)
			return auth_err(err, errlen, rc, "auth rm", argv[2]);
		if (!json)
			fprintf(out, "removed %s\n", argv[2]);
		return 0;
	}
	if (!strcmp(verb, "caps") && argc >= 3) {
		char caps[CM_CAPS_MAX + 64], cn[CM_CAPS_MAX + 64], cerr[160] = "";

		if (join(argc, argv, 3, caps, sizeof(caps)) ||
		    canon_caps(caps, cn, sizeof(cn), cerr, sizeof(cerr))) {
			snprintf(err, errlen, "%s", cerr[0] ? cerr : "caps: too long");
			return -EINVAL;
		}
		if (!strcmp(argv[2], CM_AUTH_ADMIN) && strcmp(cn, "admin")) {
			snprintf(err, errlen, "%s keeps its caps ('admin')", CM_AUTH_ADMIN);
			return -EPERM;
		}
		rc = set_caps(e, fsid, kek, argv[2], cn);
		if (rc)
			return auth_err(err, errlen, rc, "auth caps", argv[2]);
		if (!json)
			fprintf(out, "%s: caps '%s'\n", argv[2], cn);
		return 0;
	}
	snprintf(err, errlen,
		 "usage: auth ls | auth add NAME [CAPS] | auth get NAME | auth get-or-create NAME "
		 "[CAPS] | auth rm NAME | auth caps NAME CAPS");
	return -EINVAL;
}

/* ---------- service secrets and tickets ---------- */

uint64_t
mon_auth_gen(uint64_t now_ns)
{
	return now_ns / 1000000000ull / MON_AUTH_GEN_S;
}

const uint8_t *
mon_secrets_find(const struct mon_secrets *s, uint64_t gen)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].gen == gen)
			return s->v[i].key;
	return NULL;
}

int
mon_secrets_seal(const uint8_t key[CM_AUTH_KEY_LEN], const char *aad_s, const struct mon_secrets *s,
		 uint8_t **out, size_t *len)
{
	Cairn__Mon__ServiceSecrets ss = CAIRN__MON__SERVICE_SECRETS__INIT;
	Cairn__Mon__ServiceSecret v[MON_AUTH_SECRETS_MAX], *vp[MON_AUTH_SECRETS_MAX];
	uint8_t *buf;
	size_t n;
	int rc;

	for (size_t i = 0; i < s->n; i++) {
		cairn__mon__service_secret__init(&v[i]);
		v[i].gen = s->v[i].gen;
		v[i].secret.data = (uint8_t *)s->v[i].key;
		v[i].secret.len = CM_AUTH_KEY_LEN;
		vp[i] = &v[i];
	}
	ss.n_secrets = s->n;
	ss.secrets = vp;
	n = cairn__mon__service_secrets__get_packed_size(&ss);
	buf = malloc(n ? n : 1);
	if (!buf)
		return -ENOMEM;
	cairn__mon__service_secrets__pack(&ss, buf);
	rc = cm_auth_seal(key, aad_s, strlen(aad_s), buf, n, out, len);
	OPENSSL_cleanse(buf, n);
	free(buf);
	return rc;
}

int
mon_secrets_open(const uint8_t key[CM_AUTH_KEY_LEN], const char *aad_s, const uint8_t *in,
		 size_t len, struct mon_secrets *s)
{
	Cairn__Mon__ServiceSecrets *ss;
	uint8_t *pt;
	size_t n;
	int rc = cm_auth_open(key, aad_s, strlen(aad_s), in, len, &pt, &n);

	memset(s, 0, sizeof(*s));
	if (rc)
		return rc;
	ss = cairn__mon__service_secrets__unpack(NULL, n, pt);
	OPENSSL_cleanse(pt, n);
	free(pt);
	if (!ss)
		return -EBADMSG;
	rc = ss->n_secrets > MON_AUTH_SECRETS_MAX ? -EBADMSG : 0;
	for (size_t i = 0; !rc && i < ss->n_secrets; i++) {
		if (ss->secrets[i]->secret.len != CM_AUTH_KEY_LEN ||
		    (i && ss->secrets[i]->gen <= ss->secrets[i - 1]->gen)) {
			rc = -EBADMSG;
			break;
		}
		s->v[i].gen = ss->secrets[i]->gen;
		memcpy(s->v[i].key, ss->secrets[i]->secret.data, CM_AUTH_KEY_LEN);
		s->n++;
	}
	cairn__mon__service_secrets__free_unpacked(ss, NULL);
	if (rc)
		OPENSSL_cleanse(s, sizeof(*s));
	return rc;
}

#define ROT_AAD "cairn-rotating"

static int
rotating_read(struct cm_etcd *e, const char *fsid, const uint8_t kek[CM_AUTH_KEY_LEN],
	      struct mon_secrets *s, int64_t *mod)
{
	struct cm_etcd_range r;
	char k[256];
	int n = snprintf(k, sizeof(k), "/cairn/%s/auth_rotating", fsid), rc;

	memset(s, 0, sizeof(*s));
	*mod = 0;
	if (n < 0 || (size_t)n >= sizeof(k))
		return -ENAMETOOLONG;
	rc = cm_etcd_get(e, k, strlen(k), NULL, 0, 0, &r);
	if (rc)
		return rc;
	if (!r.count)
		rc = -ENOENT;
	else {
		*mod = r.kvs[0].mod_revision;
		rc = mon_secrets_open(kek, ROT_AAD, r.kvs[0].value, r.kvs[0].value_len, s);
	}
	cm_etcd_range_free(&r);
	return rc;
}

int
mon_auth_rotating_get(struct cm_etcd *e, const char *fsid, const uint8_t kek[CM_AUTH_KEY_LEN],
		      struct mon_secrets *s)
{
	int64_t mod;

	return rotating_read(e, fsid, kek, s, &mod);
}

int
mon_auth_rotate(struct cm_etcd *e, const char *fsid, const uint8_t kek[CM_AUTH_KEY_LEN],
		uint64_t now_ns, bool *changed)
{
	uint64_t cur = mon_auth_gen(now_ns);

	*changed = false;
	for (int tries = 0; tries < 5; tries++) {
		struct mon_secrets old, nw = { .n = 0 };
		char k[256];
		int64_t mod;
		uint8_t *buf;
		size_t len;
		bool ok, same;
		int rc = rotating_read(e, fsid, kek, &old, &mod);

		if (rc && rc != -ENOENT)
			return rc;
		/* cur - 1, cur, cur + 1: the ones kept are carried, the rest made. */
		for (uint64_t g = cur ? cur - 1 : 0; g <= cur + 1; g++) {
			const uint8_t *have = mon_secrets_find(&old, g);

			nw.v[nw.n].gen = g;
			if (have)
				memcpy(nw.v[nw.n].key, have, CM_AUTH_KEY_LEN);
			else if (cm_auth_key_random(nw.v[nw.n].key))
				return -EIO;
			nw.n++;
		}
		same = old.n == nw.n;
		for (size_t i = 0; same && i < nw.n; i++)
			same = old.v[i].gen == nw.v[i].gen;
		OPENSSL_cleanse(&old, sizeof(old));
		if (same) {
			OPENSSL_cleanse(&nw, sizeof(nw));
			return 0;
		}
		rc = mon_secrets_seal(kek, ROT_AAD, &nw, &buf, &len);
		OPENSSL_cleanse(&nw, sizeof(nw));
		if (rc)
			return rc;
		snprintf(k, sizeof(k), "/cairn/%s/auth_rotating", fsid);
		struct cm_etcd_cmp guard = { .key = k,
					     .key_len = strlen(k),
					     .target = mod ? CM_ETCD_MOD : CM_ETCD_CREATE,
					     .result = CM_ETCD_EQUAL,
					     .number = mod };
		struct cm_etcd_op put = { .type = CM_ETCD_OP_PUT,
					  .key = k,
					  .key_len = strlen(k),
					  .value = buf,
					  .value_len = len };

		rc = cm_etcd_txn(e, &guard, 1, &put, 1, NULL, 0, &ok, NULL);
		free(buf);
		if (rc)
			return rc;
		if (ok) {
			*changed = true;
			return 0;
		}
		/* Another mon rotated meanwhile: look again. */
	}
	return -EAGAIN;
}

void
mon_ticket_fini(struct mon_ticket *t)
{
	free(t->caps);
	OPENSSL_cleanse(t, sizeof(*t));
}

#define TICKET_AAD "cairn-ticket"

static size_t
session_aad(const char *entity, char out[AAD_MAX])
{
	return (size_t)snprintf(out, AAD_MAX, "cairn-session %s", entity);
}

int
mon_ticket_make(const struct mon_secrets *s, uint64_t now_ns, uint64_t life_ns, const char *entity,
		const uint8_t ekey[CM_AUTH_KEY_LEN], const char *caps, uint64_t auth_epoch,
		Cairn__Mon__AuthTicketReply *r)
{
	Cairn__Mon__Ticket t = CAIRN__MON__TICKET__INIT;
	uint64_t gen = mon_auth_gen(now_ns);
	const uint8_t *secret = mon_secrets_find(s, gen);
	uint8_t skey[CM_AUTH_KEY_LEN], *buf;
	char a_d[AAD_MAX];
	size_t n;
	int rc;

	if (!secret)
		return -EAGAIN;
	rc = cm_auth_key_random(skey);
	if (rc)
		return rc;
	t.entity = (char *)entity;
	t.caps = (char *)caps;
	t.session_key.data = skey;
	t.session_key.len = sizeof(skey);
	t.expires_ns = now_ns + life_ns;
	t.auth_epoch = auth_epoch;
	n = cairn__mon__ticket__get_packed_size(&t);
	buf = malloc(n ? n : 1);
	if (!buf) {
		OPENSSL_cleanse(skey, sizeof(skey));
		return -ENOMEM;
	}
	cairn__mon__ticket__pack(&t, buf);
	rc = cm_auth_seal(secret, TICKET_AAD, strlen(TICKET_AAD), buf, n, &r->ticket.data,
			  &r->ticket.len);
	OPENSSL_cleanse(buf, n);
	free(buf);
	if (!rc)
		rc = cm_auth_seal(ekey, a_d, session_aad(entity, a_d), skey, sizeof(skey),
				  &r->session_key_sealed.data, &r->session_key_sealed.len);
	OPENSSL_cleanse(skey, sizeof(skey));
	if (rc) {
		mon_ticket_reply_fini(r);
		return rc;
	}
	r->gen = gen;
	r->expires_ns = t.expires_ns;
	r->auth_epoch = auth_epoch;
	return 0;
}

void
mon_ticket_reply_fini(Cairn__Mon__AuthTicketReply *r)
{
	free(r->ticket.data);
	free(r->session_key_sealed.data);
	r->ticket.data = r->session_key_sealed.data = NULL;
	r->ticket.len = r->session_key_sealed.len = 0;
}

int
mon_ticket_open(const struct mon_secrets *s, uint64_t gen, const uint8_t *blob, size_t len,
		struct mon_ticket *t)
{
	const uint8_t *secret = mon_secrets_find(s, gen);
	Cairn__Mon__Ticket *p;
	uint8_t *pt;
	size_t n;
	int rc;

	memset(t, 0, sizeof(*t));
	if (!secret)
		return -ENOENT;
	rc = cm_auth_open(secret, TICKET_AAD, strlen(TICKET_AAD), blob, len, &pt, &n);
	if (rc)
		return rc;
	p = cairn__mon__ticket__unpack(NULL, n, pt);
	OPENSSL_cleanse(pt, n);
	free(pt);
	if (!p)
		return -EBADMSG;
	rc = -EBADMSG;
	if (p->entity && cm_auth_valid_name(p->entity) && p->session_key.len == CM_AUTH_KEY_LEN &&
	    p->caps) {
		snprintf(t->entity, sizeof(t->entity), "%s", p->entity);
		memcpy(t->session_key, p->session_key.data, CM_AUTH_KEY_LEN);
		t->expires_ns = p->expires_ns;
		t->auth_epoch = p->auth_epoch;
		t->caps = strdup(p->caps);
		rc = t->caps ? 0 : -ENOMEM;
	}
	OPENSSL_cleanse(p->session_key.data, p->session_key.len);
	cairn__mon__ticket__free_unpacked(p, NULL);
	if (rc)
		mon_ticket_fini(t);
	return rc;
}

int
mon_ticket_session_key(const uint8_t ekey[CM_AUTH_KEY_LEN], const char *entity,
		       const Cairn__Mon__AuthTicketReply *r, uint8_t out[CM_AUTH_KEY_LEN])
{
	char a_d[AAD_MAX];
	uint8_t *pt;
	size_t n;
	int rc = cm_auth_open(ekey, a_d, session_aad(entity, a_d), r->session_key_sealed.data,
			      r->session_key_sealed.len, &pt, &n);

	if (rc)
		return rc;
	if (n == CM_AUTH_KEY_LEN)
		memcpy(out, pt, CM_AUTH_KEY_LEN);
	OPENSSL_cleanse(pt, n);
	free(pt);
	return n == CM_AUTH_KEY_LEN ? 0 : -EBADMSG;
}
