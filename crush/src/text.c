/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The text map format of `crushtool -d` (Ceph Pacific): tunables, devices
 * with classes, types, buckets (children before parents, `id -N class C` for
 * shadow ids), rules with or without min_size/max_size. Errors say
 * "LINE:COL: what". Weights parse as crushtool's do: (int)(float w * 0x10000).
 */
#include "crush_internal.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>

struct tok {
	const char *s; /* NUL-terminated copy in the token arena */
	int line, col;
};

struct parser {
	struct tok *t;
	int n, pos;
	char *arena;
	struct crush_map *m;
	char *err;
	size_t errlen;
};

static int perr(struct parser *p, const struct tok *t, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
perr(struct parser *p, const struct tok *t, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (t)
		snprintf(p->err, p->errlen, "%d:%d: %s", t->line, t->col, msg);
	else
		snprintf(p->err, p->errlen, "end of input: %s", msg);
	return -EINVAL;
}

static int
tokenize(struct parser *p, const char *text)
{
	size_t len = strlen(text), cap = 64;
	int line = 1, col = 1;
	char *a;

	p->arena = malloc(2 * len + 2);
	p->t = malloc(sizeof(*p->t) * cap);
	if (!p->arena || !p->t)
		return -ENOMEM;
	a = p->arena;
	for (size_t i = 0; i < len;) {
		char ch = text[i];

		if (ch == '\n') {
			line++;
			col = 1;
			i++;
			continue;
		}
		if (isspace((unsigned char)ch)) {
			i++;
			col++;
			continue;
		}
		if (ch == '#') {
			while (i < len && text[i] != '\n')
				i++;
			continue;
		}
		if ((size_t)p->n == cap) {
			struct tok *nt = realloc(p->t, sizeof(*nt) * cap * 2);

			if (!nt)
				return -ENOMEM;
			p->t = nt;
			cap *= 2;
		}
		p->t[p->n].s = a;
		p->t[p->n].line = line;
		p->t[p->n].col = col;
		p->n++;
		if (ch == '{' || ch == '}') {
			*a++ = ch;
			i++;
			col++;
		} else {
			while (i < len && !isspace((unsigned char)text[i]) && text[i] != '{' &&
			       text[i] != '}' && text[i] != '#') {
				*a++ = text[i++];
				col++;
			}
		}
		*a++ = '\0';
	}
	return 0;
}

static const struct tok *
next(struct parser *p)
{
	return p->pos < p->n ? &p->t[p->pos++] : NULL;
}

static const struct tok *
peek(struct parser *p)
{
	return p->pos < p->n ? &p->t[p->pos] : NULL;
}

static int
expect(struct parser *p, const char *what)
{
	const struct tok *t = next(p);

	if (!t || strcmp(t->s, what) != 0)
		return perr(p, t, "expected '%s'%s%s", what, t ? ", got " : "", t ? t->s : "");
	return 0;
}

static int
get_int(struct parser *p, long lo, long hi, long *v)
{
	const struct tok *t = next(p);
	char *end;

	if (!t)
		return perr(p, t, "expected a number");
	errno = 0;
	*v = strtol(t->s, &end, 10);
	if (errno || *end || end == t->s)
		return perr(p, t, "'%s' is not an integer", t->s);
	if (*v < lo || *v > hi)
		return perr(p, t, "%ld is outside [%ld, %ld]", *v, lo, hi);
	return 0;
}

static int
get_name(struct parser *p, const struct tok **tp)
{
	const struct tok *t = next(p);

	if (!t || !strcmp(t->s, "{") || !strcmp(t->s, "}"))
		return perr(p, t, "expected a name");
	*tp = t;
	return 0;
}

static int
parse_tunable(struct parser *p)
{
	/*
	 * The retry counts multiply in the mapper (total x local x leaf): a
	 * map with huge ones makes every client spin for seconds per mapping
	 * (the fuzzer found 222,222,220 fallback tries). Bounded well above
	 * what Ceph ships (legacy 2 and 5 local, 50 total; EC rules use 100).
	 */
	static const struct {
		const char *name;
		size_t off;
		long max;
	} tun[] = {
		{ "choose_local_tries", offsetof(struct crush_tunables, choose_local_tries),
		  CRUSH_MAX_LOCAL_TRIES },
		{ "choose_local_fallback_tries",
		  offsetof(struct crush_tunables, choose_local_fallback_tries),
		  CRUSH_MAX_LOCAL_TRIES },
		{ "choose_total_tries", offsetof(struct crush_tunables, choose_total_tries),
		  CRUSH_MAX_TRIES },
		{ "chooseleaf_descend_once",
		  offsetof(struct crush_tunables, chooseleaf_descend_once), UINT32_MAX },
		{ "chooseleaf_vary_r", offsetof(struct crush_tunables, chooseleaf_vary_r),
		  UINT32_MAX },
		{ "chooseleaf_stable", offsetof(struct crush_tunables, chooseleaf_stable),
		  UINT32_MAX },
		{ "straw_calc_version", offsetof(struct crush_tunables, straw_calc_version),
		  UINT32_MAX },
		{ "allowed_bucket_algs", offsetof(struct crush_tunables, allowed_bucket_algs),
		  UINT32_MAX },
	};
	const struct tok *t;
	long v;
	int rc = get_name(p, &t);

	if (rc)
		return rc;
	for (size_t i = 0; i < sizeof(tun) / sizeof(tun[0]); i++) {
		if (strcmp(t->s, tun[i].name) == 0) {
			rc = get_int(p, 0, tun[i].max, &v);
			if (!rc)
				*(uint32_t *)((char *)&p->m->t + tun[i].off) = (uint32_t)v;
			return rc;
		}
	}
	return perr(p, t, "unknown tunable '%s'", t->s);
}

static int
parse_device(struct parser *p)
{
	struct crush_map *m = p->m;
	const struct tok *name, *at;
	long id;
	int rc = get_int(p, 0, 1 << 24, &id);

	if (rc || (rc = get_name(p, &name)))
		return rc;
	if (strchr(name->s, '~'))
		return perr(p, name, "device name '%s': '~' is kept for class shadow trees",
			    name->s);
	if (crush_item_by_name(m, name->s) != INT32_MIN)
		return perr(p, name, "item name '%s' already used", name->s);
	if (crush__grow_devices(m, (int)id + 1))
		return -ENOMEM;
	if (m->device_names[id])
		return perr(p, name, "device %ld defined twice", id);
	m->device_names[id] = strdup(name->s);
	if (!m->device_names[id])
		return -ENOMEM;
	at = peek(p);
	if (at && strcmp(at->s, "class") == 0) {
		const struct tok *cn;

		next(p);
		rc = get_name(p, &cn);
		if (rc)
			return rc;
		if (m->max_buckets > 0 && crush_class_by_name(m, cn->s) < 0)
			return perr(p, cn, "a new class after the buckets: list devices first");
		rc = crush__add_class(m, cn->s);
		if (rc < 0)
			return rc;
		m->device_class[id] = rc;
	}
	return 0;
}

static int
parse_type(struct parser *p)
{
	struct crush_map *m = p->m;
	const struct tok *name;
	long id;
	int rc = get_int(p, 0, 65535, &id);
	int *ti;
	char **tn;

	if (rc || (rc = get_name(p, &name)))
		return rc;
	if (crush_type_by_name(m, name->s) != INT32_MIN || crush_type_name(m, (int)id))
		return perr(p, name, "type '%s' (%ld) defined twice", name->s, id);
	ti = realloc(m->type_ids, sizeof(*ti) * (size_t)(m->ntypes + 1));
	if (!ti)
		return -ENOMEM;
	m->type_ids = ti;
	tn = realloc(m->type_names, sizeof(*tn) * (size_t)(m->ntypes + 1));
	if (!tn)
		return -ENOMEM;
	m->type_names = tn;
	ti[m->ntypes] = (int)id;
	tn[m->ntypes] = strdup(name->s);
	if (!tn[m->ntypes])
		return -ENOMEM;
	m->ntypes++;
	return 0;
}

static int
parse_weight(struct parser *p, uint32_t *w)
{
	const struct tok *t = next(p);
	char *end;
	float f;

	if (!t)
		return perr(p, t, "expected a weight");
	errno = 0;
	f = strtof(t->s, &end);
	/* 16.16 fixed point in an int: weights below 32768. */
	if (errno || *end || end == t->s || !(f >= 0) || f >= 32768.0f)
		return perr(p, t, "'%s' is not a weight (0 to 32767.99998)", t->s);
	/* As crushtool: float multiply, truncate. */
	*w = (uint32_t)(int)(f * (float)0x10000);
	return 0;
}

static int
parse_bucket(struct parser *p, int type)
{
	struct crush_map *m = p->m;
	struct crush_bucket *b = calloc(1, sizeof(*b));
	const struct tok *name, *t;
	unsigned cap = 0;
	bool have_id = false;
	int rc;

	if (!b)
		return -ENOMEM;
	b->type = type;
	b->alg = CRUSH_BUCKET_STRAW2;
	b->class_id = -1;
	b->class_ids = calloc((size_t)(m->nclasses ? m->nclasses : 1), sizeof(*b->class_ids));
	if (!b->class_ids) {
		rc = -ENOMEM;
		goto err;
	}
	if ((rc = get_name(p, &name)) || (rc = expect(p, "{")))
		goto err;
	/* Type 0 is the devices' type: a bucket of it would be a leaf without a weight. */
	if (type == 0) {
		rc = perr(p, name, "bucket '%s' has type %s, the type of devices", name->s,
			  crush_type_name(m, 0));
		goto err;
	}
	/* `X~C` names the shadow of X for class C; a real bucket may not take it. */
	if (strchr(name->s, '~')) {
		rc = perr(p, name, "bucket name '%s': '~' is kept for class shadow trees", name->s);
		goto err;
	}
	if (crush_item_by_name(m, name->s) != INT32_MIN) {
		rc = perr(p, name, "item name '%s' already used", name->s);
		goto err;
	}
	b->name = strdup(name->s);
	if (!b->name) {
		rc = -ENOMEM;
		goto err;
	}
	for (;;) {
		t = next(p);
		if (!t) {
			rc = perr(p, t, "bucket '%s' is not closed with '}'", name->s);
			goto err;
		}
		if (strcmp(t->s, "}") == 0)
			break;
		if (strcmp(t->s, "id") == 0) {
			long id;
			const struct tok *c = NULL;

			if ((rc = get_int(p, -65536, -1, &id)))
				goto err;
			if (peek(p) && strcmp(peek(p)->s, "class") == 0) {
				int cls;

				next(p);
				if ((rc = get_name(p, &c)))
					goto err;
				cls = crush_class_by_name(m, c->s);
				if (cls < 0) {
					rc = perr(p, c, "class '%s' is used by no device", c->s);
					goto err;
				}
				b->class_ids[cls] = (int32_t)id;
			} else {
				b->id = (int32_t)id;
				have_id = true;
			}
		} else if (strcmp(t->s, "alg") == 0) {
			static const char *const algs[] = { "",     "uniform", "list",
							    "tree", "straw",   "straw2" };
			const struct tok *a;

			if ((rc = get_name(p, &a)))
				goto err;
			b->alg = 0;
			for (int i = 1; i < 6; i++)
				if (strcmp(a->s, algs[i]) == 0)
					b->alg = i;
			if (!b->alg) {
				rc = perr(p, a, "unknown bucket alg '%s'", a->s);
				goto err;
			}
		} else if (strcmp(t->s, "hash") == 0) {
			const struct tok *h;

			if ((rc = get_name(p, &h)))
				goto err;
			if (strcmp(h->s, "0") && strcmp(h->s, "rjenkins1")) {
				rc = perr(p, h, "unknown hash '%s' (only 0 = rjenkins1)", h->s);
				goto err;
			}
		} else if (strcmp(t->s, "item") == 0) {
			const struct tok *in;
			int32_t it;
			uint32_t w;

			if ((rc = get_name(p, &in)))
				goto err;
			it = crush_item_by_name(m, in->s);
			if (it == INT32_MIN) {
				rc = perr(p, in, "item '%s' is not defined (yet)", in->s);
				goto err;
			}
			w = it >= 0 ? CRUSH_WEIGHT_ONE : m->buckets[-1 - it]->weight;
			while (peek(p) &&
			       (!strcmp(peek(p)->s, "weight") || !strcmp(peek(p)->s, "pos"))) {
				const struct tok *kw = next(p);
				long pos;

				if (!strcmp(kw->s, "weight"))
					rc = parse_weight(p, &w);
				else
					rc = get_int(p, 0, 65535, &pos);
				if (rc)
					goto err;
			}
			for (unsigned i = 0; i < b->size; i++) {
				if (b->items[i] == it) {
					rc = perr(p, in, "item '%s' twice in bucket '%s'", in->s,
						  name->s);
					goto err;
				}
			}
			if (b->size == cap) {
				unsigned nc = cap ? cap * 2 : 8;
				int32_t *ni = realloc(b->items, sizeof(*ni) * nc);
				uint32_t *nw;

				if (!ni) {
					rc = -ENOMEM;
					goto err;
				}
				b->items = ni;
				nw = realloc(b->item_weights, sizeof(*nw) * nc);
				if (!nw) {
					rc = -ENOMEM;
					goto err;
				}
				b->item_weights = nw;
				cap = nc;
			}
			if (w > UINT32_MAX - b->weight) {
				rc = perr(p, in, "bucket '%s' weighs more than 65535.99998",
					  name->s);
				goto err;
			}
			b->items[b->size] = it;
			b->item_weights[b->size] = w;
			b->weight += w;
			b->size++;
		} else {
			rc = perr(p, t, "unexpected '%s' in bucket '%s'", t->s, name->s);
			goto err;
		}
	}
	if (!have_id) {
		/* crushtool gives a bucket without an id the lowest free one. */
		int32_t id = -1;

		while (-1 - id < m->max_buckets && m->buckets[-1 - id])
			id--;
		b->id = id;
	}
	rc = crush__add_bucket(m, b);
	if (rc == -EEXIST)
		rc = perr(p, name, "bucket id %d is used twice", b->id);
	if (rc)
		goto err;
	return 0;
err:
	free(b->items);
	free(b->item_weights);
	free(b->name);
	free(b->class_ids);
	free(b);
	return rc;
}

static int
add_step(struct crush_rule *r, int op, int32_t a1, int32_t a2, int cls)
{
	struct crush_step *ns = realloc(r->steps, sizeof(*ns) * (r->len + 1));

	if (!ns)
		return -ENOMEM;
	r->steps = ns;
	ns[r->len].op = op;
	ns[r->len].arg1 = a1;
	ns[r->len].arg2 = a2;
	ns[r->len].take_class = cls;
	r->len++;
	return 0;
}

static int
parse_step(struct parser *p, struct crush_rule *r)
{
	static const struct {
		const char *name;
		int op;
	} sets[] = {
		{ "set_choose_tries", CRUSH_OP_SET_CHOOSE_TRIES },
		{ "set_chooseleaf_tries", CRUSH_OP_SET_CHOOSELEAF_TRIES },
		{ "set_choose_local_tries", CRUSH_OP_SET_CHOOSE_LOCAL_TRIES },
		{ "set_choose_local_fallback_tries", CRUSH_OP_SET_CHOOSE_LOCAL_FALLBACK_TRIES },
		{ "set_chooseleaf_vary_r", CRUSH_OP_SET_CHOOSELEAF_VARY_R },
		{ "set_chooseleaf_stable", CRUSH_OP_SET_CHOOSELEAF_STABLE },
	};
	struct crush_map *m = p->m;
	const struct tok *t;
	long n;
	int rc = get_name(p, &t);

	if (rc)
		return rc;
	if (!strcmp(t->s, "take")) {
		const struct tok *it, *c;
		int32_t id;
		int cls = -1;

		if ((rc = get_name(p, &it)))
			return rc;
		id = crush_item_by_name(m, it->s);
		if (id == INT32_MIN)
			return perr(p, it, "no item named '%s'", it->s);
		if (peek(p) && !strcmp(peek(p)->s, "class")) {
			next(p);
			if ((rc = get_name(p, &c)))
				return rc;
			cls = crush_class_by_name(m, c->s);
			if (cls < 0)
				return perr(p, c, "class '%s' is used by no device", c->s);
		}
		return add_step(r, CRUSH_OP_TAKE, id, 0, cls);
	}
	if (!strcmp(t->s, "emit"))
		return add_step(r, CRUSH_OP_EMIT, 0, 0, -1);
	if (!strcmp(t->s, "choose") || !strcmp(t->s, "chooseleaf")) {
		bool leaf = !strcmp(t->s, "chooseleaf");
		const struct tok *mode, *tn;
		int op, type;

		if ((rc = get_name(p, &mode)))
			return rc;
		if (!strcmp(mode->s, "firstn"))
			op = leaf ? CRUSH_OP_CHOOSELEAF_FIRSTN : CRUSH_OP_CHOOSE_FIRSTN;
		else if (!strcmp(mode->s, "indep"))
			op = leaf ? CRUSH_OP_CHOOSELEAF_INDEP : CRUSH_OP_CHOOSE_INDEP;
		else
			return perr(p, mode, "expected firstn or indep, got '%s'", mode->s);
		if ((rc = get_int(p, -1024, 1024, &n)) || (rc = expect(p, "type")) ||
		    (rc = get_name(p, &tn)))
			return rc;
		type = crush_type_by_name(m, tn->s);
		if (type == INT32_MIN)
			return perr(p, tn, "no type named '%s'", tn->s);
		return add_step(r, op, (int32_t)n, type, -1);
	}
	for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
		if (!strcmp(t->s, sets[i].name)) {
			long max = sets[i].op == CRUSH_OP_SET_CHOOSE_LOCAL_TRIES ||
						   sets[i].op ==
							   CRUSH_OP_SET_CHOOSE_LOCAL_FALLBACK_TRIES
					   ? CRUSH_MAX_LOCAL_TRIES
				   : sets[i].op == CRUSH_OP_SET_CHOOSE_TRIES ||
						   sets[i].op == CRUSH_OP_SET_CHOOSELEAF_TRIES
					   ? CRUSH_MAX_TRIES
					   : 1000000;

			if ((rc = get_int(p, 0, max, &n)))
				return rc;
			return add_step(r, sets[i].op, (int32_t)n, 0, -1);
		}
	}
	return perr(p, t, "unknown step '%s'", t->s);
}

static int
parse_rule(struct parser *p)
{
	struct crush_map *m = p->m;
	struct crush_rule *r = calloc(1, sizeof(*r));
	const struct tok *name, *t;
	long v;
	int rc;

	if (!r)
		return -ENOMEM;
	r->id = -1;
	r->type = 1;
	if ((rc = get_name(p, &name)) || (rc = expect(p, "{")))
		goto err;
	if (crush_rule_by_name(m, name->s) >= 0) {
		rc = perr(p, name, "rule '%s' defined twice", name->s);
		goto err;
	}
	r->name = strdup(name->s);
	if (!r->name) {
		rc = -ENOMEM;
		goto err;
	}
	for (;;) {
		t = next(p);
		if (!t) {
			rc = perr(p, t, "rule '%s' is not closed with '}'", name->s);
			goto err;
		}
		if (!strcmp(t->s, "}"))
			break;
		if (!strcmp(t->s, "id") || !strcmp(t->s, "ruleset")) {
			if ((rc = get_int(p, 0, 255, &v)))
				goto err;
			r->id = (int)v;
		} else if (!strcmp(t->s, "type")) {
			const struct tok *ty;

			if ((rc = get_name(p, &ty)))
				goto err;
			if (!strcmp(ty->s, "replicated"))
				r->type = 1;
			else if (!strcmp(ty->s, "erasure"))
				r->type = 3;
			else {
				rc = perr(p, ty, "rule type must be replicated or erasure");
				goto err;
			}
		} else if (!strcmp(t->s, "min_size") || !strcmp(t->s, "max_size")) {
			if ((rc = get_int(p, 0, 1024, &v)))
				goto err;
			if (!strcmp(t->s, "min_size"))
				r->min_size = (int)v;
			else
				r->max_size = (int)v;
			r->has_sizes = true;
		} else if (!strcmp(t->s, "step")) {
			if ((rc = parse_step(p, r)))
				goto err;
		} else {
			rc = perr(p, t, "unexpected '%s' in rule '%s'", t->s, name->s);
			goto err;
		}
	}
	if (r->id < 0) {
		rc = perr(p, name, "rule '%s' has no id", name->s);
		goto err;
	}
	if (r->id >= m->max_rules) {
		struct crush_rule **nr = realloc(m->rules, sizeof(*nr) * (size_t)(r->id + 1));

		if (!nr) {
			rc = -ENOMEM;
			goto err;
		}
		memset(nr + m->max_rules, 0, sizeof(*nr) * (size_t)(r->id + 1 - m->max_rules));
		m->rules = nr;
		m->max_rules = r->id + 1;
	}
	if (m->rules[r->id]) {
		rc = perr(p, name, "rule id %d is used twice", r->id);
		goto err;
	}
	m->rules[r->id] = r;
	return 0;
err:
	free(r->name);
	free(r->steps);
	free(r);
	return rc;
}

int
crush_text_parse(const char *text, struct crush_map **mp, char *err, size_t errlen)
{
	struct parser p = { .err = err, .errlen = errlen };
	int rc;

	err[0] = '\0';
	rc = crush_map_create(&p.m);
	if (rc)
		return rc;
	rc = tokenize(&p, text);
	while (!rc && p.pos < p.n) {
		const struct tok *t = next(&p);
		int type;

		if (!strcmp(t->s, "tunable"))
			rc = parse_tunable(&p);
		else if (!strcmp(t->s, "device"))
			rc = parse_device(&p);
		else if (!strcmp(t->s, "type"))
			rc = parse_type(&p);
		else if (!strcmp(t->s, "rule"))
			rc = parse_rule(&p);
		else if (!strcmp(t->s, "choose_args"))
			rc = perr(&p, t, "choose_args (weight sets) are not supported yet");
		else if ((type = crush_type_by_name(p.m, t->s)) != INT32_MIN)
			rc = parse_bucket(&p, type);
		else
			rc = perr(&p, t, "unknown keyword '%s'", t->s);
	}
	if (!rc)
		rc = crush_map_finalize(p.m, err, errlen);
	free(p.t);
	free(p.arena);
	if (rc) {
		if (rc == -ENOMEM && !err[0])
			snprintf(err, errlen, "out of memory");
		crush_map_destroy(p.m);
		return rc;
	}
	*mp = p.m;
	return 0;
}

/* ---------------- printing ---------------- */

static void
print_bucket(const struct crush_map *m, const struct crush_bucket *b, FILE *out, bool *done)
{
	static const char *const algs[] = { "?", "uniform", "list", "tree", "straw", "straw2" };
	const char *tn;

	if (done[-1 - b->id])
		return;
	done[-1 - b->id] = true;
	for (unsigned i = 0; i < b->size; i++)
		if (b->items[i] < 0)
			print_bucket(m, m->buckets[-1 - b->items[i]], out, done);
	tn = crush_type_name(m, b->type);
	if (tn)
		fprintf(out, "%s %s {\n", tn, b->name);
	else
		fprintf(out, "type%d %s {\n", b->type, b->name);
	fprintf(out, "\tid %d\t\t# do not change unnecessarily\n", b->id);
	for (int c = 0; c < m->nclasses; c++)
		if (b->class_ids && b->class_ids[c])
			fprintf(out, "\tid %d class %s\t\t# do not change unnecessarily\n",
				b->class_ids[c], m->class_names[c]);
	fprintf(out, "\t# weight %.5f\n", (double)b->weight / 0x10000);
	fprintf(out, "\talg %s\n", algs[b->alg >= 1 && b->alg <= 5 ? b->alg : 0]);
	fprintf(out, "\thash %d\t# rjenkins1\n", b->hash);
	for (unsigned i = 0; i < b->size; i++)
		fprintf(out, "\titem %s weight %.5f\n", crush_item_name(m, b->items[i]),
			(double)b->item_weights[i] / 0x10000);
	fprintf(out, "}\n");
}

static void
print_step(const struct crush_map *m, const struct crush_step *s, FILE *out)
{
	static const char *const sets[] = {
		[CRUSH_OP_SET_CHOOSE_TRIES] = "set_choose_tries",
		[CRUSH_OP_SET_CHOOSELEAF_TRIES] = "set_chooseleaf_tries",
		[CRUSH_OP_SET_CHOOSE_LOCAL_TRIES] = "set_choose_local_tries",
		[CRUSH_OP_SET_CHOOSE_LOCAL_FALLBACK_TRIES] = "set_choose_local_fallback_tries",
		[CRUSH_OP_SET_CHOOSELEAF_VARY_R] = "set_chooseleaf_vary_r",
		[CRUSH_OP_SET_CHOOSELEAF_STABLE] = "set_chooseleaf_stable"
	};

	switch (s->op) {
	case CRUSH_OP_TAKE:
		if (s->take_class >= 0) {
			/* finalize made arg1 the shadow; the text names what it shadows */
			const struct crush_bucket *sh = s->arg1 < 0 && -1 - s->arg1 < m->max_buckets
								? m->buckets[-1 - s->arg1]
								: NULL;
			const char *cls =
				s->take_class < m->nclasses ? m->class_names[s->take_class] : NULL;

			if (sh && sh->class_id >= 0 && cls)
				fprintf(out, "\tstep take %s class %s\n",
					crush_item_name(m, sh->shadow_of), cls);
			else
				fprintf(out, "\t# step take %d class %d: no such shadow\n", s->arg1,
					s->take_class);
		} else {
			fprintf(out, "\tstep take %s\n", crush_item_name(m, s->arg1));
		}
		break;
	case CRUSH_OP_EMIT:
		fprintf(out, "\tstep emit\n");
		break;
	case CRUSH_OP_CHOOSE_FIRSTN:
	case CRUSH_OP_CHOOSE_INDEP:
	case CRUSH_OP_CHOOSELEAF_FIRSTN:
	case CRUSH_OP_CHOOSELEAF_INDEP:
		fprintf(out, "\tstep %s %s %d type %s\n",
			s->op == CRUSH_OP_CHOOSELEAF_FIRSTN || s->op == CRUSH_OP_CHOOSELEAF_INDEP
				? "chooseleaf"
				: "choose",
			s->op == CRUSH_OP_CHOOSE_FIRSTN || s->op == CRUSH_OP_CHOOSELEAF_FIRSTN
				? "firstn"
				: "indep",
			s->arg1, crush_type_name(m, s->arg2));
		break;
	default:
		if (s->op >= CRUSH_OP_SET_CHOOSE_TRIES && s->op <= CRUSH_OP_SET_CHOOSELEAF_STABLE)
			fprintf(out, "\tstep %s %d\n", sets[s->op], s->arg1);
		break;
	}
}

int
crush_text_print(const struct crush_map *m, FILE *out)
{
	bool *done = calloc((size_t)(m->max_buckets ? m->max_buckets : 1), sizeof(*done));

	if (!done)
		return -ENOMEM;
	fprintf(out, "# begin crush map\n");
	fprintf(out, "tunable choose_local_tries %u\n", m->t.choose_local_tries);
	fprintf(out, "tunable choose_local_fallback_tries %u\n", m->t.choose_local_fallback_tries);
	fprintf(out, "tunable choose_total_tries %u\n", m->t.choose_total_tries);
	fprintf(out, "tunable chooseleaf_descend_once %u\n", m->t.chooseleaf_descend_once);
	fprintf(out, "tunable chooseleaf_vary_r %u\n", m->t.chooseleaf_vary_r);
	fprintf(out, "tunable chooseleaf_stable %u\n", m->t.chooseleaf_stable);
	fprintf(out, "tunable straw_calc_version %u\n", m->t.straw_calc_version);
	fprintf(out, "tunable allowed_bucket_algs %u\n", m->t.allowed_bucket_algs);
	fprintf(out, "\n# devices\n");
	for (int i = 0; i < m->max_devices; i++) {
		if (!m->device_names[i])
			continue;
		fprintf(out, "device %d %s", i, m->device_names[i]);
		if (m->device_class[i] >= 0)
			fprintf(out, " class %s", m->class_names[m->device_class[i]]);
		fprintf(out, "\n");
	}
	fprintf(out, "\n# types\n");
	for (int i = 0; i < m->ntypes; i++)
		fprintf(out, "type %d %s\n", m->type_ids[i], m->type_names[i]);
	fprintf(out, "\n# buckets\n");
	for (int i = 0; i < m->max_buckets; i++) {
		const struct crush_bucket *b = m->buckets[i];

		/* Shadows only appear as `id N class C` lines of their originals. */
		if (b && b->class_id < 0)
			print_bucket(m, b, out, done);
		else if (b)
			done[i] = true;
	}
	fprintf(out, "\n# rules\n");
	for (int i = 0; i < m->max_rules; i++) {
		const struct crush_rule *r = m->rules[i];

		if (!r)
			continue;
		fprintf(out, "rule %s {\n\tid %d\n\ttype %s\n", r->name, r->id,
			r->type == 3 ? "erasure" : "replicated");
		if (r->has_sizes)
			fprintf(out, "\tmin_size %d\n\tmax_size %d\n", r->min_size, r->max_size);
		for (unsigned s = 0; s < r->len; s++)
			print_step(m, &r->steps[s], out);
		fprintf(out, "}\n");
	}
	fprintf(out, "\n# end crush map\n");
	free(done);
	return ferror(out) ? -EIO : 0;
}
