/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Request bodies in XML (CreateBucketConfiguration, Delete,
 * CompleteMultipartUpload, ...): parsed by expat into a small tree, under
 * limits (depth, nodes, size); namespace prefixes are dropped from names
 * and no DTD is accepted.
 */
#ifndef RGW_XML_H
#define RGW_XML_H

#include "cm/stdinc.h"

#define RGW_XML_MAX_DEPTH 16
#define RGW_XML_MAX_NODES 20000

struct rgw_xml {
	char *name;
	char *text; /* the element's own character data, NUL-terminated */
	size_t tlen;
	struct rgw_xml *child, *last, *next, *parent;
};

/*
 * Parse b. \return 0 (*root: the document element), -EBADMSG (not
 * well-formed, a DTD, past the limits: err says which), -ENOMEM.
 */
int rgw_xml_parse(const char *b, size_t n, struct rgw_xml **root, char *err, size_t elen);
void rgw_xml_free(struct rgw_xml *x);
/* The first child element named name, or NULL. */
const struct rgw_xml *rgw_xml_child(const struct rgw_xml *x, const char *name);
/* Its text, or NULL when there is no such child. */
const char *rgw_xml_child_text(const struct rgw_xml *x, const char *name);

#endif
