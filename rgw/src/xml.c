/* SPDX-License-Identifier: Apache-2.0 */
#include "rgw/xml.h"

#include <expat.h>

struct px {
	XML_Parser p;
	struct rgw_xml *root, *cur;
	unsigned depth, nodes;
	const char *why;
	bool nomem;
};

static void
stop(struct px *x, const char *why)
{
	if (!x->why)
		x->why = why;
	XML_StopParser(x->p, XML_FALSE);
}

static void XMLCALL
on_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
	struct px *x = ud;
	struct rgw_xml *e;
	const char *colon = strchr(name, ':');

	(void)attrs;
	if (x->why)
		return;
	if (++x->depth > RGW_XML_MAX_DEPTH) {
		stop(x, "XML nested too deep");
		return;
	}
	if (++x->nodes > RGW_XML_MAX_NODES) {
		stop(x, "too many XML elements");
		return;
	}
	if (!(e = calloc(1, sizeof(*e))) || !(e->name = strdup(colon ? colon + 1 : name))) {
		free(e);
		x->nomem = true;
		stop(x, "out of memory");
		return;
	}
	e->parent = x->cur;
	if (x->cur) {
		if (x->cur->last)
			x->cur->last->next = e;
		else
			x->cur->child = e;
		x->cur->last = e;
	} else if (!x->root) {
		x->root = e;
	} else {
		free(e->name);
		free(e);
		stop(x, "more than one document element");
		return;
	}
	x->cur = e;
}

static void XMLCALL
on_end(void *ud, const XML_Char *name)
{
	struct px *x = ud;

	(void)name;
	if (x->why || !x->cur)
		return;
	x->depth--;
	x->cur = x->cur->parent;
}

static void XMLCALL
on_text(void *ud, const XML_Char *s, int len)
{
	struct px *x = ud;
	struct rgw_xml *e = x->cur;
	char *t;

	if (x->why || !e || len <= 0)
		return;
	if (e->tlen + (size_t)len > (1u << 20)) {
		stop(x, "XML text too long");
		return;
	}
	if (!(t = realloc(e->text, e->tlen + (size_t)len + 1))) {
		x->nomem = true;
		stop(x, "out of memory");
		return;
	}
	memcpy(t + e->tlen, s, (size_t)len);
	e->tlen += (size_t)len;
	t[e->tlen] = '\0';
	e->text = t;
}

static void XMLCALL
on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid, const XML_Char *pubid,
	   int has_internal)
{
	struct px *x = ud;

	(void)name;
	(void)sysid;
	(void)pubid;
	(void)has_internal;
	stop(x, "a DTD is not accepted");
}

int
rgw_xml_parse(const char *b, size_t n, struct rgw_xml **root, char *err, size_t elen)
{
	struct px x = { 0 };
	enum XML_Status st;

	*root = NULL;
	if (n > INT_MAX) {
		snprintf(err, elen, "XML body too long");
		return -EBADMSG;
	}
	if (!(x.p = XML_ParserCreate("UTF-8")))
		return -ENOMEM;
	XML_SetUserData(x.p, &x);
	XML_SetElementHandler(x.p, on_start, on_end);
	XML_SetCharacterDataHandler(x.p, on_text);
	XML_SetStartDoctypeDeclHandler(x.p, on_doctype);
	st = XML_Parse(x.p, b, (int)n, XML_TRUE);
	if (st != XML_STATUS_OK || x.why || !x.root) {
		if (x.nomem) {
			XML_ParserFree(x.p);
			rgw_xml_free(x.root);
			return -ENOMEM;
		}
		snprintf(err, elen, "%s",
			 x.why ? x.why
			 : (!x.root && st == XML_STATUS_OK)
				 ? "no XML element"
				 : XML_ErrorString(XML_GetErrorCode(x.p)));
		XML_ParserFree(x.p);
		rgw_xml_free(x.root);
		return -EBADMSG;
	}
	XML_ParserFree(x.p);
	*root = x.root;
	return 0;
}

void
rgw_xml_free(struct rgw_xml *x)
{
	while (x) {
		struct rgw_xml *n = x->next;

		rgw_xml_free(x->child);
		free(x->name);
		free(x->text);
		free(x);
		x = n;
	}
}

const struct rgw_xml *
rgw_xml_child(const struct rgw_xml *x, const char *name)
{
	for (const struct rgw_xml *c = x ? x->child : NULL; c; c = c->next)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

const char *
rgw_xml_child_text(const struct rgw_xml *x, const char *name)
{
	const struct rgw_xml *c = rgw_xml_child(x, name);

	return c ? (c->text ? c->text : "") : NULL;
}
