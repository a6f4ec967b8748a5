/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/conf.h"
#include "cm/err.h"

#include <ini.h>

#define NAME_MAX_LEN 128

/* "OSD grace" / "osd-grace" -> "osd_grace". \return 0 or -EINVAL (too long). */
static int
norm_name(const char *in, char *out, size_t outlen)
{
	size_t i = 0;

	for (; *in && i + 1 < outlen; in++) {
		char ch = *in;

		if (ch == ' ' || ch == '-' || ch == '\t')
			ch = '_';
		else if (ch >= 'A' && ch <= 'Z')
			ch = (char)(ch - 'A' + 'a');
		out[i++] = ch;
	}
	out[i] = '\0';
	return *in ? -EINVAL : 0;
}

static const struct cm_opt *
find_opt(const struct cm_conf *c, const char *name)
{
	char n[NAME_MAX_LEN];

	if (norm_name(name, n, sizeof(n)))
		return NULL;
	for (const struct cm_opt *o = c->table; o->name; o++)
		if (strcmp(o->name, n) == 0)
			return o;
	return NULL;
}

int
cm_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };

	for (size_t i = 0; i < CM_ARRAY_SIZE(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* Digits, then an optional suffix from the table. */
static int
parse_scaled(const char *s, const char *const *suffix, const uint64_t *mult, size_t n,
	     uint64_t *out)
{
	char *end;
	unsigned long long v;

	while (*s == ' ')
		s++;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	while (*end == ' ')
		end++;
	for (size_t i = 0; i < n; i++) {
		if (strcasecmp(end, suffix[i]) == 0) {
			if (mult[i] && v > UINT64_MAX / mult[i])
				return -EINVAL;
			*out = (uint64_t)v * mult[i];
			return 0;
		}
	}
	return -EINVAL;
}

int
cm_parse_size(const char *s, uint64_t *out)
{
	static const char *const suf[] = { "",    "b", "k",  "kb",  "kib", "m",  "mb",
					   "mib", "g", "gb", "gib", "t",   "tb", "tib" };
	static const uint64_t mul[] = { 1,          1,          1ull << 10, 1ull << 10, 1ull << 10,
					1ull << 20, 1ull << 20, 1ull << 20, 1ull << 30, 1ull << 30,
					1ull << 30, 1ull << 40, 1ull << 40, 1ull << 40 };

	return parse_scaled(s, suf, mul, CM_ARRAY_SIZE(suf), out);
}

int
cm_parse_duration_ms(const char *s, uint64_t *out)
{
	static const char *const suf[] = { "", "ms", "s", "sec", "m", "min", "h" };
	static const uint64_t mul[] = { 1, 1, 1000, 1000, 60000, 60000, 3600000 };

	return parse_scaled(s, suf, mul, CM_ARRAY_SIZE(suf), out);
}

static void seterr(struct cm_conf *c, const char *where, const struct cm_opt *o, const char *fmt,
		   ...) __attribute__((format(printf, 4, 5)));

static void
seterr(struct cm_conf *c, const char *where, const struct cm_opt *o, const char *fmt, ...)
{
	char msg[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (o)
		snprintf(c->err, sizeof(c->err), "%s: option '%s': %s", where, o->name, msg);
	else
		snprintf(c->err, sizeof(c->err), "%s: %s", where, msg);
}

static const char *
type_name(enum cm_opt_type t)
{
	static const char *const n[] = { "bool", "int", "uint", "size", "duration", "string" };

	return (unsigned)t < CM_ARRAY_SIZE(n) ? n[t] : "?";
}

static int
set_opt(struct cm_conf *c, const struct cm_opt *o, const char *value, const char *where)
{
	void *field = (char *)c->base + o->offset;
	bool ranged = o->min != 0 || o->max != 0;
	const char *shown = (o->flags & CM_OPT_F_SECRET) ? "(secret)" : value;
	char verr[200] = "";
	int rc = 0;

	if (!value)
		value = "";
	if (o->validate && o->validate(o, value, verr, sizeof(verr))) {
		seterr(c, where, o, "value '%s' refused: %s", shown, verr);
		return -CM_ECONF;
	}
	switch (o->type) {
	case CM_OPT_BOOL: {
		bool b;

		if (cm_parse_bool(value, &b)) {
			seterr(c, where, o, "'%s' is not a boolean (true/false/yes/no/on/off)",
			       shown);
			return -CM_ECONF;
		}
		*(bool *)field = b;
		break;
	}
	case CM_OPT_INT: {
		char *end;
		long long v;

		errno = 0;
		v = strtoll(value, &end, 10);
		if (errno || end == value || *end) {
			seterr(c, where, o, "'%s' is not an integer", shown);
			return -CM_ECONF;
		}
		if (ranged && (v < o->min || v > o->max)) {
			seterr(c, where, o, "value %lld is outside [%" PRId64 ", %" PRId64 "]", v,
			       o->min, o->max);
			return -CM_ECONF;
		}
		*(int64_t *)field = v;
		break;
	}
	case CM_OPT_UINT:
	case CM_OPT_SIZE:
	case CM_OPT_DURATION: {
		uint64_t v;

		if (o->type == CM_OPT_UINT) {
			char *end;

			errno = 0;
			v = strtoull(value, &end, 10);
			rc = (errno || end == value || *end || value[0] == '-') ? -EINVAL : 0;
		} else if (o->type == CM_OPT_SIZE) {
			rc = cm_parse_size(value, &v);
		} else {
			rc = cm_parse_duration_ms(value, &v);
		}
		if (rc) {
			seterr(c, where, o, "'%s' is not a valid %s%s", shown, type_name(o->type),
			       o->type == CM_OPT_SIZE       ? " (e.g. 4096, 64K, 4M, 1G)"
			       : o->type == CM_OPT_DURATION ? " (e.g. 500ms, 20s, 10m)"
							    : "");
			return -CM_ECONF;
		}
		if (ranged && (v < (uint64_t)o->min || v > (uint64_t)o->max)) {
			seterr(c, where, o, "value %s is outside [%" PRId64 ", %" PRId64 "]", shown,
			       o->min, o->max);
			return -CM_ECONF;
		}
		*(uint64_t *)field = v;
		break;
	}
	case CM_OPT_STR: {
		char *d = strdup(value);

		if (!d)
			return -ENOMEM;
		free(*(char **)field);
		*(char **)field = d;
		break;
	}
	}
	return 0;
}

int
cm_conf_set(struct cm_conf *c, const char *name, const char *value, const char *where)
{
	const struct cm_opt *o = find_opt(c, name);

	if (!o) {
		seterr(c, where, NULL, "unknown option '%s'", name);
		return -ENOENT;
	}
	return set_opt(c, o, value, where);
}

int
cm_conf_defaults(struct cm_conf *c)
{
	for (const struct cm_opt *o = c->table; o->name; o++) {
		const char *d = o->def;

		if (!d)
			d = o->type == CM_OPT_STR ? "" : o->type == CM_OPT_BOOL ? "false" : "0";
		if (set_opt(c, o, d, "default"))
			return -CM_ECONF;
	}
	return 0;
}

struct ini_ctx {
	struct cm_conf *c;
	const char *file;    /* for messages */
	const char *section; /* the one section this pass applies */
	bool global;
	bool have_err;
	int err_rc;
	char msg[400];
};

static int
conf_ini_entry(void *user, const char *section, const char *name, const char *value)
{
	struct ini_ctx *x = user;
	const struct cm_opt *o;
	char saved[sizeof(x->c->err)];
	int rc;

	if (strcasecmp(section, x->section) != 0)
		return 1; /* another pass's, or another daemon's, section */
	if (x->have_err)
		return 1; /* the first error is the one reported */
	o = find_opt(x->c, name);
	if (!o) {
		if (x->global) {
			if (x->c->unknown_global++ == 0)
				snprintf(x->c->warning, sizeof(x->c->warning),
					 "%s: [global] option '%s' is not one of ours (skipped)",
					 x->file, name);
			return 1;
		}
		snprintf(x->msg, sizeof(x->msg), "unknown option '%s' in [%s]", name, section);
		x->have_err = true;
		x->err_rc = -CM_ECONF;
		return 0;
	}
	memcpy(saved, x->c->err, sizeof(saved));
	rc = set_opt(x->c, o, value, "");
	if (rc) {
		/* set_opt wrote ": option 'x': ..." with an empty place; keep the rest. */
		snprintf(x->msg, sizeof(x->msg), "%s", x->c->err + 2);
		memcpy(x->c->err, saved, sizeof(saved));
		x->have_err = true;
		x->err_rc = rc;
		return 0;
	}
	return 1;
}

/*
 * Sections apply in the order [global] < [section] < [section.id], one pass
 * each, so precedence does not depend on where they sit in the file. inih
 * does not tell the handler its line but returns the line of the first error,
 * which is where the handler's first message belongs.
 */
static int
load(struct cm_conf *c, const char *text, const char *path, const char *file)
{
	char idsec[NAME_MAX_LEN] = "";
	const char *secs[3];
	int n = 0;

	secs[n++] = "global";
	if (c->section)
		secs[n++] = c->section;
	if (c->section && c->id) {
		snprintf(idsec, sizeof(idsec), "%s.%s", c->section, c->id);
		secs[n++] = idsec;
	}
	c->unknown_global = 0;
	for (int pass = 0; pass < n; pass++) {
		struct ini_ctx x = {
			.c = c, .file = file, .section = secs[pass], .global = pass == 0
		};
		int line = text ? ini_parse_string(text, conf_ini_entry, &x)
				: ini_parse(path, conf_ini_entry, &x);

		if (line == -1)
			return -ENOENT;
		if (line == -2)
			return -ENOMEM;
		if (line > 0) {
			snprintf(c->err, sizeof(c->err), "%s:%d: %s", file, line,
				 x.have_err
					 ? x.msg
					 : "syntax error (expected 'name = value' or '[section]')");
			return x.err_rc ? x.err_rc : -CM_ECONF;
		}
	}
	return 0;
}

int
cm_conf_load_file(struct cm_conf *c, const char *path)
{
	int rc = load(c, NULL, path, path);

	if (rc == -ENOENT)
		snprintf(c->err, sizeof(c->err), "%s: cannot open: %s", path, strerror(errno));
	else if (rc == 0)
		snprintf(c->conf_path, sizeof(c->conf_path), "%s", path);
	return rc;
}

int
cm_conf_load_string(struct cm_conf *c, const char *text, const char *name)
{
	return load(c, text, NULL, name);
}

int
cm_conf_load_env(struct cm_conf *c, char *const *envp)
{
	size_t plen = c->env_prefix ? strlen(c->env_prefix) : 0;

	if (!envp || !plen)
		return 0;
	for (const struct cm_opt *o = c->table; o->name; o++) {
		char var[NAME_MAX_LEN + 32];
		size_t vlen;

		snprintf(var, sizeof(var), "%s%s", c->env_prefix, o->name);
		for (char *p = var + plen; *p; p++)
			*p = (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
		vlen = strlen(var);
		for (char *const *e = envp; *e; e++) {
			if (strncmp(*e, var, vlen) == 0 && (*e)[vlen] == '=') {
				char where[NAME_MAX_LEN + 48];

				snprintf(where, sizeof(where), "environment %s", var);
				if (set_opt(c, o, *e + vlen + 1, where))
					return -CM_ECONF;
			}
		}
	}
	return 0;
}

static bool
is_conf_flag(const char *a)
{
	return strcmp(a, "-c") == 0 || strcmp(a, "--conf") == 0;
}

int
cm_conf_init(struct cm_conf *c, int argc, char **argv, char *const *envp, const char *default_path,
	     FILE *out, int *first_arg)
{
	const char *path = NULL;
	int rc, i, first = argc;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			cm_conf_help(c, out, argv[0], NULL);
			return 1;
		}
		if (is_conf_flag(argv[i])) {
			if (i + 1 >= argc) {
				snprintf(c->err, sizeof(c->err), "command line: %s needs a file",
					 argv[i]);
				return -CM_ECONF;
			}
			path = argv[++i];
		} else if (strncmp(argv[i], "--conf=", 7) == 0) {
			path = argv[i] + 7;
		}
	}
	rc = cm_conf_defaults(c);
	if (rc)
		return rc;
	if (!path && default_path && access(default_path, R_OK) == 0)
		path = default_path;
	if (path) {
		rc = cm_conf_load_file(c, path);
		if (rc)
			return rc == -ENOENT ? -CM_ECONF : rc;
	}
	rc = cm_conf_load_env(c, envp);
	if (rc)
		return rc;
	for (i = 1; i < argc; i++) {
		char name[NAME_MAX_LEN], where[NAME_MAX_LEN + 32];
		const char *a = argv[i], *eq, *val;
		const struct cm_opt *o;

		if (is_conf_flag(a)) {
			i++;
			continue;
		}
		if (strncmp(a, "--conf=", 7) == 0)
			continue;
		if (strcmp(a, "--") == 0) {
			first = i + 1;
			break;
		}
		if (strncmp(a, "--", 2) != 0) {
			first = i;
			break;
		}
		eq = strchr(a + 2, '=');
		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - a - 2) : (int)strlen(a + 2),
			 a + 2);
		snprintf(where, sizeof(where), "command line --%s", name);
		o = find_opt(c, name);
		if (!o) {
			snprintf(c->err, sizeof(c->err),
				 "command line: unknown option --%s (see --help)", name);
			return -CM_ECONF;
		}
		if (eq) {
			val = eq + 1;
		} else if (o->type == CM_OPT_BOOL &&
			   (i + 1 >= argc || strncmp(argv[i + 1], "-", 1) == 0)) {
			val = "true"; /* a bare boolean flag */
		} else if (i + 1 < argc) {
			val = argv[++i];
		} else {
			snprintf(c->err, sizeof(c->err), "%s: needs a value", where);
			return -CM_ECONF;
		}
		rc = set_opt(c, o, val, where);
		if (rc)
			return rc;
	}
	if (first_arg)
		*first_arg = first;
	return 0;
}

void
cm_conf_help(const struct cm_conf *c, FILE *out, const char *prog, const char *summary)
{
	fprintf(out, "usage: %s [-c FILE] [--OPTION VALUE]...\n", prog ? prog : "cairn");
	if (summary)
		fprintf(out, "%s\n", summary);
	fprintf(out,
		"\nOptions (also from the config file's [global]/[%s] sections, and from "
		"%sNAME in the environment):\n",
		c->section ? c->section : "daemon", c->env_prefix ? c->env_prefix : "");
	fprintf(out, "  -c, --conf FILE\n      configuration file (INI)\n");
	for (const struct cm_opt *o = c->table; o->name; o++) {
		char flag[NAME_MAX_LEN];
		size_t i;

		for (i = 0; o->name[i] && i + 1 < sizeof(flag); i++)
			flag[i] = o->name[i] == '_' ? '-' : o->name[i];
		flag[i] = '\0';
		fprintf(out, "  --%s <%s>", flag, type_name(o->type));
		if (o->def && o->def[0])
			fprintf(out, "  (default %s)", o->def);
		if (o->min || o->max)
			fprintf(out, "  [%" PRId64 "..%" PRId64 "]", o->min, o->max);
		fprintf(out, "\n      %s\n", o->help ? o->help : "");
	}
}

void
cm_conf_dump(const struct cm_conf *c, FILE *out)
{
	for (const struct cm_opt *o = c->table; o->name; o++) {
		const void *f = (const char *)c->base + o->offset;

		fprintf(out, "%s = ", o->name);
		if (o->flags & CM_OPT_F_SECRET) {
			fprintf(out, "(secret)\n");
			continue;
		}
		switch (o->type) {
		case CM_OPT_BOOL:
			fprintf(out, "%s\n", *(const bool *)f ? "true" : "false");
			break;
		case CM_OPT_INT:
			fprintf(out, "%" PRId64 "\n", *(const int64_t *)f);
			break;
		case CM_OPT_DURATION:
			fprintf(out, "%" PRIu64 "ms\n", *(const uint64_t *)f);
			break;
		case CM_OPT_UINT:
		case CM_OPT_SIZE:
			fprintf(out, "%" PRIu64 "\n", *(const uint64_t *)f);
			break;
		case CM_OPT_STR:
			fprintf(out, "%s\n", *(char *const *)f ? *(char *const *)f : "");
			break;
		}
	}
}

void
cm_conf_free(struct cm_conf *c)
{
	for (const struct cm_opt *o = c->table; o->name; o++) {
		if (o->type == CM_OPT_STR) {
			char **f = (char **)((char *)c->base + o->offset);

			CM_FREE(*f);
		}
	}
}
