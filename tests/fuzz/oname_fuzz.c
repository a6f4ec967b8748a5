/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Store names as an OSD reads them from a client (OsdOp.oid) and a client
 * from a listing (crush/oname.h): any bytes decode or are refused; what
 * decodes encodes back to the same bytes, places in a PG, and is taken by
 * a listing of its own namespace.
 */
#include "crush/oname.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *
part(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct crush_pool p = { .id = 1, .pg_num = 1, .pgp_num = 1 };
	char *s, *ns = NULL, *key = NULL, *name = NULL, *out = NULL, *res = NULL;
	struct crush_oname o;
	uint32_t pg;

	if (size < 1 || size > CRUSH_ONAME_MAX + 64)
		return 0;
	p.pg_num = p.pgp_num = 1u + data[0];
	s = part((const char *)data + 1, size - 1);
	if (!s)
		return 0;
	if (crush_oname_decode(s, &o) == 0) {
		ns = part(o.nspace, o.nslen);
		key = part(o.key, o.keylen);
		name = part(o.name, o.namelen);
		out = malloc(CRUSH_ONAME_MAX + 2);
		res = malloc(CRUSH_ONAME_MAX + 2);
		if (ns && key && name && out && res) {
			/* one store name per object: what decodes encodes back the same */
			if (crush_oname_encode(ns, key, name, out, CRUSH_ONAME_MAX + 1) < 0 ||
			    strcmp(out, s) != 0)
				abort();
			if (crush_oname_to_pg(&p, s, &pg) || pg >= p.pg_num)
				abort();
			if (crush_oname_list_step(ns, s, res) != CRUSH_ONAME_TAKE ||
			    crush_oname_list_step(NULL, s, res) != CRUSH_ONAME_TAKE)
				abort();
			crush_oname_list_start(ns, s, out);
			if (strcmp(out, s) < 0)
				abort();
		}
	} else if (s[0]) {
		/* a refused name: a listing still moves on from it */
		res = malloc(CRUSH_ONAME_MAX + 2);
		if (res && strlen(s) <= CRUSH_ONAME_MAX &&
		    crush_oname_list_step("ns", s, res) == CRUSH_ONAME_SKIP && strcmp(res, s) < 0)
			abort();
	}
	free(s);
	free(ns);
	free(key);
	free(name);
	free(out);
	free(res);
	return 0;
}
