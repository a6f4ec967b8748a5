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
