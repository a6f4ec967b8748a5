/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Capabilities: what an entity may do (docs/design/auth.md, "Caps"). A
 * caps string is grants separated by ';':
 *
 *   mon r | mon rw
 *   osd r | osd rw [pool=NAME] [namespace=NS | namespace=PREFIX*]
 *   profile osd            an OSD: mon r, osd rw everywhere, peer messages,
 *                          boots, beacons and failure reports
 *   profile bootstrap-osd  may create OSD keys (auth get-or-create osd.*)
 *   admin                  everything, auth commands included
 *
 * Threading: pure; a parsed struct cm_caps is read-only and may be shared.
 */
#ifndef CM_CAPS_H
#define CM_CAPS_H

#include "cm/stdinc.h"

#define CM_CAPS_MAX 1024 /* bytes of a caps string */

enum cm_cap_access {
	CM_CAP_R = 1,
	CM_CAP_W = 2,
	CM_CAP_RW = 3,
};

struct cm_cap_grant {
	unsigned access; /* CM_CAP_R | CM_CAP_W */
	char *pool;      /* NULL: every pool */
	char *nspace;    /* NULL: every namespace */
	bool ns_prefix;  /* nspace ended with '*': a prefix */
};

struct cm_caps {
	bool admin;
	bool profile_osd;
	bool profile_bootstrap_osd;
	unsigned mon; /* CM_CAP_R | CM_CAP_W */
	struct cm_cap_grant *osd;
	size_t nosd;
};

/*
 * Parse s into *c (zeroed first; cm_caps_fini frees it). An empty string
 * grants nothing. \return 0, -EINVAL (err, errlen bytes, says where),
 * -ENOMEM.
 */
int cm_caps_parse(const char *s, struct cm_caps *c, char *err, size_t errlen);

void cm_caps_fini(struct cm_caps *c);

/* dst = a deep copy of src (cm_caps_fini frees it). \return 0, -ENOMEM (dst: none). */
int cm_caps_copy(struct cm_caps *dst, const struct cm_caps *src);

/* May c run a monitor request needing `need` (CM_CAP_R and/or CM_CAP_W)? */
bool cm_caps_mon(const struct cm_caps *c, unsigned need);

/*
 * May c do `need` on objects of pool (its name) in namespace nspace ("":
 * the default one)? With all_ns, on every namespace at once (a listing of
 * all of them): only a grant with no namespace covers that.
 */
bool cm_caps_osd(const struct cm_caps *c, const char *pool, const char *nspace, unsigned need,
		 bool all_ns);

/* May c act as an OSD (peer messages, boots, beacons, failure reports)? profile osd or admin. */
bool cm_caps_is_osd(const struct cm_caps *c);

/*
 * The canonical text of c into out (grants in their order, single spaces,
 * "; " between). \return its length, or -ENOSPC when it does not fit in
 * len or is longer than CM_CAPS_MAX (so that it would not parse again).
 */
int cm_caps_format(const struct cm_caps *c, char *out, size_t len);

#endif
