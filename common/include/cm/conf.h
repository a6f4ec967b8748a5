/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Configuration: one static option table per daemon, filled from (in rising
 * precedence) the table's defaults, an INI file (libinih), the environment and
 * the command line.
 *
 * INI sections read: [global], then [<section>], then [<section>.<id>] (e.g.
 * [osd] then [osd.3]); other sections belong to other daemons and are skipped.
 * Option names are normalised: "osd grace", "osd-grace" and "osd_grace" are
 * one name. Environment: <PREFIX><NAME> upper-cased (CAIRN_OSD_GRACE).
 * Command line: --name value or --name=value (dashes or underscores);
 * -c/--conf FILE names the file; --help prints the generated help.
 *
 * Values: bool (true/false/yes/no/on/off/1/0), int, uint, size (4096, 64K,
 * 4M, 1G, 1T; KiB multiples), duration (500ms, 20s, 10m, 1h; a bare number is
 * milliseconds), string.
 *
 * Errors name the place and the option: "cairn.conf:12: option 'timeout_ms':
 * value '-5' is below the minimum 1". Unknown options in our own sections and
 * on the command line are errors; in [global] they are skipped and counted
 * (another daemon's), with the first reported as a warning.
 *
 * Threading: not thread-safe; a daemon loads its configuration at start.
 */
#ifndef CM_CONF_H
#define CM_CONF_H

#include "cm/stdinc.h"

enum cm_opt_type {
	CM_OPT_BOOL,     /* bool */
	CM_OPT_INT,      /* int64_t */
	CM_OPT_UINT,     /* uint64_t */
	CM_OPT_SIZE,     /* uint64_t bytes */
	CM_OPT_DURATION, /* uint64_t milliseconds */
	CM_OPT_STR,      /* char *, owned by the config (cm_conf_free) */
};

#define CM_OPT_F_STARTUP 0x1u /* only at start-up (all options, for now) */
#define CM_OPT_F_RUNTIME 0x2u /* may change at run time (central config, later) */
#define CM_OPT_F_SECRET  0x4u /* never printed */

struct cm_opt {
	const char *name; /* canonical, with underscores */
	enum cm_opt_type type;
	const char *def;  /* default as text; NULL: empty string / 0 */
	int64_t min, max; /* numeric range; both 0: unbounded */
	unsigned flags;
	size_t offset; /* of the field in the daemon's config struct */
	const char *help;
	/* Extra check; fill err and return -EINVAL to refuse. May be NULL. */
	int (*validate)(const struct cm_opt *o, const char *value, char *err, size_t errlen);
};

#define CM_OPT(name_, type_, def_, min_, max_, flags_, st_, field_, help_)                     \
	{                                                                                      \
		.name = (name_), .type = (type_), .def = (def_), .min = (min_), .max = (max_), \
		.flags = (flags_), .offset = offsetof(st_, field_), .help = (help_)            \
	}

struct cm_conf {
	const struct cm_opt *table; /* terminated by an entry with name NULL */
	void *base;                 /* the daemon's config struct */
	const char *section;        /* e.g. "osd" */
	const char *id;             /* e.g. "3"; may be NULL */
	const char *env_prefix;     /* e.g. "CAIRN_" */
	char conf_path[256];        /* the file loaded, if any */
	unsigned unknown_global;    /* [global] keys no option of ours matched */
	char warning[256];          /* the first of those */
	char err[512];              /* on failure: what and where */
};

/*
 * Apply every default. \return 0, or -CM_ECONF when a default does not parse
 * (a programming error; err says which).
 */
int cm_conf_defaults(struct cm_conf *c);

/*
 * Set one option from text. `where` prefixes errors ("cairn.conf:3").
 * \return 0; -ENOENT (no such option); -CM_ECONF (bad value; err set).
 */
int cm_conf_set(struct cm_conf *c, const char *name, const char *value, const char *where);

/* Load an INI file / text. \return 0, -CM_ECONF (err set), -ENOENT (no file). */
int cm_conf_load_file(struct cm_conf *c, const char *path);
int cm_conf_load_string(struct cm_conf *c, const char *text, const char *name);

/* Apply <env_prefix><NAME> variables from envp. \return 0 or -CM_ECONF. */
int cm_conf_load_env(struct cm_conf *c, char *const *envp);

/*
 * Everything in order: defaults, the file (-c/--conf, else default_path if
 * it exists), environment, command line. Non-option arguments are left in
 * argv[*first_arg..argc).
 * \return 0; 1 when --help was asked (help text written to out); -CM_ECONF
 * (err set).
 */
int cm_conf_init(struct cm_conf *c, int argc, char **argv, char *const *envp,
		 const char *default_path, FILE *out, int *first_arg);

/* Write generated help for the table. */
void cm_conf_help(const struct cm_conf *c, FILE *out, const char *prog, const char *summary);

/* Write "name = value" for every option (secrets masked). */
void cm_conf_dump(const struct cm_conf *c, FILE *out);

/* Free string values. */
void cm_conf_free(struct cm_conf *c);

/* Parsers, exposed for tests and for other readers of user input. \return 0 or -EINVAL. */
int cm_parse_size(const char *s, uint64_t *out);
int cm_parse_duration_ms(const char *s, uint64_t *out);
int cm_parse_bool(const char *s, bool *out);

#endif
