/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Object names: a namespace, a locator key and a name, as one store name.
 *
 * The store, the PG log, recovery and the wire's OsdOp.oid all carry the
 * store name; only placement and listing look inside it.
 *
 *   default namespace, no key:  the bare name (what every object written
 *                                before namespaces is called)
 *   otherwise:                   \x02 nspace \x1f key \x1f name
 *
 * Names are 1..CRUSH_ONAME_NAME_MAX bytes and never start with \x01 (the
 * OSD's own objects: PG meta, EC stashes) or \x02 (the form above); they
 * may hold any other byte but NUL, \x1f included (the name comes last).
 * Namespaces (0..CRUSH_ONAME_NS_MAX bytes) and keys (0..CRUSH_ONAME_KEY_MAX)
 * hold no \x1f; "" is the default namespace, and no key.
 *
 * Placement hashes the key instead of the name when there is one, and
 * "nspace\037" before it in a namespace: objects sharing a key (in one
 * namespace) share a PG.
 *
 * Order: store names sort bytewise. One namespace's objects are the
 * contiguous range of names starting with \x02 nspace \x1f; the default
 * namespace's are two ranges: \x02 \x1f ... (with a key) and every name
 * from \x03 on (bare names). A listing walks the store in order and uses
 * crush_oname_list_start/step to skip what is not its namespace in jumps.
 */
#ifndef CRUSH_ONAME_H
#define CRUSH_ONAME_H

#include <stddef.h>
#include <stdint.h>

#include "crush/placement.h"

#define CRUSH_ONAME_NAME_MAX 2048u /* an S3 key (1024) with room for a front-end's suffixes */
#define CRUSH_ONAME_NS_MAX   256u
#define CRUSH_ONAME_KEY_MAX  2048u
/* The longest store name: \x02 ns \x1f key \x1f name. */
#define CRUSH_ONAME_MAX (3u + CRUSH_ONAME_NS_MAX + CRUSH_ONAME_KEY_MAX + CRUSH_ONAME_NAME_MAX)

#define CRUSH_ONAME_NS_MARK '\x02'
#define CRUSH_ONAME_SEP     '\x1f'

/* A store name's parts: pointers into it with their lengths (not NUL-terminated). */
struct crush_oname {
	const char *nspace, *key, *name;
	size_t nslen, keylen, namelen;
};

/*
 * Check the parts (nspace and key may be NULL: ""). \return 0,
 * -ENAMETOOLONG (a part over its limit), -EINVAL (an empty name, a name
 * starting with \x01 or \x02, a \x1f in nspace or key).
 */
int crush_oname_check(const char *nspace, const char *key, const char *name);

/*
 * The store name of (nspace, key, name), checked as crush_oname_check does,
 * in out (out_size >= CRUSH_ONAME_MAX + 1 always suffices). \return its
 * length, or a negative errno (also -ENOBUFS: out too small).
 */
int crush_oname_encode(const char *nspace, const char *key, const char *name, char *out,
		       size_t out_size);

/*
 * Split a store name (NUL-terminated) into its parts. \return 0, -EINVAL
 * (empty, an OSD-internal \x01 name, a \x02 form without its two
 * separators or with an empty name, or a part that crush_oname_check
 * refuses), -ENAMETOOLONG.
 */
int crush_oname_decode(const char *store_name, struct crush_oname *o);

/* The PG seed of a store name in pool p (crush_object_to_pg on its parts). \return 0, -errno. */
int crush_oname_to_pg(const struct crush_pool *p, const char *store_name, uint32_t *pg);

/* A store name's placement hash (crush_object_hash on its parts). \return 0, -errno. */
int crush_oname_hash(const char *store_name, uint32_t *ps);

/*
 * Where a listing of namespace nspace ("": the default one; NULL: every
 * namespace) scans from, exclusively, to continue after store name `after`
 * ("" at the beginning): into out (CRUSH_ONAME_MAX + 2 bytes).
 */
void crush_oname_list_start(const char *nspace, const char *after, char *out);

enum { CRUSH_ONAME_TAKE, CRUSH_ONAME_SKIP, CRUSH_ONAME_END };

/*
 * A listing of nspace (as above) met store name s: TAKE it (s is in the
 * namespace), SKIP it and scan on, exclusively, from resume (>= s, in
 * max(strlen(s) + 1, CRUSH_ONAME_MAX + 2) bytes: a jump past other namespaces), or END (no
 * name from s on is in the namespace).
 */
int crush_oname_list_step(const char *nspace, const char *s, char *resume);

#endif
