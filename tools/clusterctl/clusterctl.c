/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clusterctl: the operator's command line.
 *
 *   clusterctl [-c CONF] [--format json] COMMAND...
 *
 * Cluster commands go to a monitor (mon_host, cluster_key from CONF, which
 * defaults to $CAIRN_CONF, then ./run/cairn.conf): status, health [detail],
 * mon ls, crush show, osd ..., pool ... (see mon/cluster.h). `up` and `down`
 * start and stop a local cluster (local.c). The rest works offline on CRUSH
 * text maps:
 *
 *   clusterctl crush compile -i MAP.txt [-o OUT.txt]  check a text map, write it canonically
 *   clusterctl crush decompile -i MAP.txt             print a text map canonically
 *   clusterctl crush test -i MAP.txt [--rule R] [--num-rep N] [--min-x A] [--max-x B]
 *                         [--weight OSD W]...         print mappings as crushtool does
 *   clusterctl crush map-pgs|map-object -i MAP.txt POOL-OPTIONS [OSD-OPTIONS] [NAME...]
 *       POOL-OPTIONS: --pool ID --pg-num N [--pgp-num N] --size S --rule R [--erasure]
 *       OSD-OPTIONS:  --out OSD --down OSD --reweight OSD W --upmap PGID FROM TO
 *       print up sets as osdmaptool --test-map-pgs-dump / --test-map-object do
 *   clusterctl crush balance -i MAP.txt POOL-OPTIONS [OSD-OPTIONS] [--max-moves N]
 *       print an upmap plan ("upmap PGID FROM TO" lines, which --upmap-file applies)
 *       and the per-OSD targets and counts before and after
 */
#include "ctl.h"
#include "crush/crush.h"
#include "crush/placement.h"
#include "crush/balancer.h"
#include "cm/log.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static int
usage(void)
{
	fprintf(stderr,
		"usage: clusterctl crush compile -i MAP.txt [-o OUT.txt]\n"
		"       clusterctl crush decompile -i MAP.txt\n"
		"       clusterctl crush test -i MAP.txt [--rule R | --min-rule R --max-rule R] "
		"[--num-rep N] [--x X | --min-x A --max-x B] [--weight OSD W]...\n");
	return 2;
}

static char *
slurp(const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	size_t cap = 65536, len = 0, n;
	char *buf;

	if (!f) {
		fprintf(stderr, "clusterctl: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	buf = malloc(cap);
	while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
		len += n;
		if (len + 1 == cap) {
			char *nb = realloc(buf, cap * 2);

			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	if (buf)
		buf[len] = '\0';
	if (f != stdin)
		fclose(f);
	return buf;
}

static struct crush_map *
load(const char *path)
{
	struct crush_map *m = NULL;
	char err[512];
	char *text = slurp(path);
	int rc;

	if (!text)
		return NULL;
	rc = crush_text_parse(text, &m, err, sizeof(err));
	free(text);
	if (rc) {
		fprintf(stderr, "clusterctl: %s:%s\n", path, err);
		return NULL;
	}
	return m;
}

static bool
parse_long(const char *s, long lo, long hi, long *v)
{
	char *end;

	errno = 0;
	*v = strtol(s, &end, 10);
	return !errno && *s && !*end && *v >= lo && *v <= hi;
}

/*
 * What `crushtool --test --show-mappings` prints, with its options and
 * defaults: every rule (--rule R, or --min-rule/--max-rule), for every
 * replica count from the rule's min_size to its max_size (--num-rep N for
 * one count; 1..10 for a rule without sizes, which crushtool 16 cannot
 * compile), x from 0 to 1023 (--x, --min-x, --max-x), every device in a
 * bucket fully in (--weight OSD W). The map is a text map here (crushtool
 * takes a compiled one).
 */
static int
crush_test(struct crush_map *m, int argc, char **argv)
{
	long minrule = -1, maxrule = -1, nrep = -1, minx = 0, maxx = 1023, v;
	uint32_t *weight;
	int *res = NULL, nres, rc = 0;
	void *work = NULL;

	weight = calloc((size_t)(m->max_devices ? m->max_devices : 1), sizeof(*weight));
	if (!weight)
		return 1;
	/* As crushtool: every device that sits in a bucket starts fully in. */
	for (int b = 0; b < m->max_buckets; b++) {
		const struct crush_bucket *bk = m->buckets[b];

		for (unsigned i = 0; bk && i < bk->size; i++)
			if (bk->items[i] >= 0)
				weight[bk->items[i]] = CRUSH_WEIGHT_ONE;
	}
	for (int i = 0; i < argc; i += 2) {
		const char *a = argv[i];

		if (i + 1 >= argc) {
			free(weight);
			return usage();
		}
		if (!strcmp(a, "--rule") && parse_long(argv[i + 1], 0, 255, &v)) {
			minrule = maxrule = v;
		} else if (!strcmp(a, "--min-rule") && parse_long(argv[i + 1], 0, 255, &v)) {
			minrule = v;
		} else if (!strcmp(a, "--max-rule") && parse_long(argv[i + 1], 0, 255, &v)) {
			maxrule = v;
		} else if (!strcmp(a, "--num-rep") && parse_long(argv[i + 1], 1, 1024, &v)) {
			nrep = v;
		} else if (!strcmp(a, "--x") && parse_long(argv[i + 1], 0, INT_MAX, &v)) {
			minx = maxx = v;
		} else if (!strcmp(a, "--min-x") && parse_long(argv[i + 1], 0, INT_MAX, &v)) {
			minx = v;
		} else if (!strcmp(a, "--max-x") && parse_long(argv[i + 1], 0, INT_MAX, &v)) {
			maxx = v;
		} else if (!strcmp(a, "--weight") && i + 2 < argc &&
			   parse_long(argv[i + 1], 0, m->max_devices - 1, &v)) {
			float w = strtof(argv[i + 2], NULL);

			if (!(w >= 0.0f && w <= 1.0f)) {
				fprintf(stderr, "clusterctl: --weight %s: between 0 and 1\n",
					argv[i + 2]);
				free(weight);
				return 2;
			}
			weight[v] = (uint32_t)(int)(w * (float)0x10000);
			i++; /* --weight takes two values */
		} else {
			fprintf(stderr, "clusterctl: bad argument %s %s\n", a, argv[i + 1]);
			free(weight);
			return usage();
		}
	}
	/* crushtool: without both rule bounds, every rule. */
	if (minrule < 0 || maxrule < 0) {
		minrule = 0;
		maxrule = m->max_rules - 1;
	} else if (minrule == maxrule && (minrule >= m->max_rules || !m->rules[minrule])) {
		fprintf(stderr, "clusterctl: no rule %ld in the map\n", minrule);
		free(weight);
		return 1;
	}
	for (long r = minrule; r <= maxrule && r < m->max_rules; r++) {
		const struct crush_rule *rule = m->rules[r];
		long lo = nrep, hi = nrep;

		if (!rule)
			continue;
		if (nrep < 0) {
			lo = rule->has_sizes ? rule->min_size : 1;
			hi = rule->has_sizes ? rule->max_size : 10;
		}
		for (long n = CM_MAX(lo, 1); n <= hi; n++) {
			int *nr = realloc(res, sizeof(*res) * (size_t)n);
			void *nw = realloc(work, crush_work_size(m, (int)n));

			if (nr)
				res = nr;
			if (nw)
				work = nw;
			if (!nr || !nw) {
				rc = 1;
				goto out;
			}
			for (long x = minx; x <= maxx; x++) {
				nres = crush_do_rule(m, (int)r, (int)x, res, (int)n, weight,
						     m->max_devices, work);
				printf("CRUSH rule %ld x %ld [", r, x);
				for (int i = 0; i < nres; i++)
					printf("%s%d", i ? "," : "", res[i]);
				printf("]\n");
			}
		}
	}
out:
	free(res);
	free(work);
	free(weight);
	return rc;
}

struct place_args {
	unsigned max_moves;
	struct crush_pool pool;
	struct crush_osd_state *osds;
	struct crush_upmap_item *upmaps;
	size_t nupmaps;
	char **names;
	int nnames;
};

/* Lines "upmap POOL.SEED FROM TO" (what `crush balance` prints); '#' starts a comment. */
static int
read_upmaps(const char *path, struct place_args *a)
{
	FILE *f = fopen(path, "r");
	char line[256];
	int lineno = 0;

	if (!f) {
		fprintf(stderr, "clusterctl: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		long long pool;
		unsigned seed;
		int from, to;
		struct crush_upmap_item *n;

		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "upmap %lld.%x %d %d", &pool, &seed, &from, &to) != 4) {
			fprintf(stderr, "clusterctl: %s:%d: expected 'upmap POOL.SEED FROM TO'\n",
				path, lineno);
			fclose(f);
			return -1;
		}
		n = realloc(a->upmaps, sizeof(*n) * (a->nupmaps + 1));
		if (!n) {
			fclose(f);
			return -1;
		}
		a->upmaps = n;
		n[a->nupmaps++] = (struct crush_upmap_item){
			.pool = pool, .seed = seed, .from = from, .to = to
		};
	}
	fclose(f);
	return 0;
}

static int
place_parse(struct crush_map *m, int argc, char **argv, struct place_args *a)
{
	long v;

	memset(a, 0, sizeof(*a));
	a->pool.type = CRUSH_POOL_REPLICATED;
	a->pool.hashpspool = true;
	a->pool.rule = -1;
	a->osds = calloc((size_t)(m->max_devices ? m->max_devices : 1), sizeof(*a->osds));
	a->names = calloc((size_t)argc + 1, sizeof(*a->names));
	if (!a->osds || !a->names)
		return -1;
	for (int i = 0; i < m->max_devices; i++) {
		a->osds[i].exists = m->device_names[i] != NULL;
		a->osds[i].up = true;
		a->osds[i].in_weight = CRUSH_WEIGHT_ONE;
	}
	for (int i = 0; i < argc; i++) {
		const char *o = argv[i];
		bool has1 = i + 1 < argc;

		if (!strcmp(o, "--erasure")) {
			a->pool.type = CRUSH_POOL_ERASURE;
		} else if (!strcmp(o, "--pool") && has1 &&
			   parse_long(argv[i + 1], 0, INT_MAX, &v)) {
			a->pool.id = v;
			i++;
		} else if (!strcmp(o, "--pg-num") && has1 &&
			   parse_long(argv[i + 1], 1, 1 << 24, &v)) {
			a->pool.pg_num = (uint32_t)v;
			if (!a->pool.pgp_num)
				a->pool.pgp_num = (uint32_t)v;
			i++;
		} else if (!strcmp(o, "--pgp-num") && has1 &&
			   parse_long(argv[i + 1], 1, 1 << 24, &v)) {
			a->pool.pgp_num = (uint32_t)v;
			i++;
		} else if (!strcmp(o, "--size") && has1 && parse_long(argv[i + 1], 1, 64, &v)) {
			a->pool.size = (unsigned)v;
			i++;
		} else if (!strcmp(o, "--rule") && has1 && parse_long(argv[i + 1], 0, 255, &v)) {
			a->pool.rule = (int)v;
			i++;
		} else if ((!strcmp(o, "--out") || !strcmp(o, "--down")) && has1 &&
			   parse_long(argv[i + 1], 0, m->max_devices - 1, &v)) {
			if (!strcmp(o, "--out"))
				a->osds[v].in_weight = 0;
			else
				a->osds[v].up = false;
			i++;
		} else if (!strcmp(o, "--reweight") && i + 2 < argc &&
			   parse_long(argv[i + 1], 0, m->max_devices - 1, &v)) {
			float w = strtof(argv[i + 2], NULL);

			if (!(w >= 0.0f && w <= 1.0f))
				return -1;
			a->osds[v].in_weight = (uint32_t)(int)(w * (float)0x10000);
			i += 2;
		} else if (!strcmp(o, "--upmap") && i + 3 < argc) {
			struct crush_upmap_item *u;
			char *dot = strchr(argv[i + 1], '.'), *end;
			long from, to;

			u = realloc(a->upmaps, sizeof(*u) * (a->nupmaps + 1));
			if (!u)
				return -1;
			a->upmaps = u;
			u += a->nupmaps;

			if (!dot || !parse_long(argv[i + 2], 0, INT_MAX, &from) ||
			    !parse_long(argv[i + 3], 0, INT_MAX, &to))
				return -1;
			*dot = '\0';
			if (!parse_long(argv[i + 1], 0, INT_MAX, &v))
				return -1;
			u->pool = v;
			errno = 0;
			u->seed = (uint32_t)strtoul(dot + 1, &end, 16);
			if (errno || *end)
				return -1;
			u->from = (int32_t)from;
			u->to = (int32_t)to;
			a->nupmaps++;
			i += 3;
		} else if (!strcmp(o, "--max-moves") && has1 &&
			   parse_long(argv[i + 1], 0, INT_MAX, &v)) {
			a->max_moves = (unsigned)v;
			i++;
		} else if (!strcmp(o, "--upmap-file") && has1) {
			if (read_upmaps(argv[i + 1], a))
				return -1;
			i++;
		} else if (o[0] != '-') {
			a->names[a->nnames++] = argv[i];
		} else {
			fprintf(stderr, "clusterctl: bad option %s\n", o);
			return -1;
		}
	}
	if (!a->pool.pg_num || !a->pool.size || a->pool.rule < 0)
		return -1;
	return 0;
}

static void
place_args_free(struct place_args *a)
{
	free(a->osds);
	free(a->upmaps);
	free(a->names);
}

static void
print_up(const int32_t *up, int n)
{
	printf("[");
	for (int i = 0; i < n; i++)
		printf("%s%d", i ? "," : "", up[i]);
	printf("]");
}

static int
crush_place(struct crush_map *m, bool objects, int argc, char **argv)
{
	struct place_args a;
	int32_t up[64];
	uint32_t *w;
	void *work;
	int primary, n, rc = 0;

	if (place_parse(m, argc, argv, &a)) {
		rc = usage();
		goto out;
	}
	w = calloc((size_t)(m->max_devices ? m->max_devices : 1), sizeof(*w));
	work = malloc(crush_work_size(m, (int)a.pool.size));
	if (!w || !work) {
		free(w);
		free(work);
		rc = 1;
		goto out;
	}
	crush_osd_weights(a.osds, m->max_devices, w);
	if (objects) {
		for (int i = 0; i < a.nnames; i++) {
			uint32_t seed;

			if (crush_object_to_pg(&a.pool, NULL, a.names[i], &seed)) {
				fprintf(stderr, "clusterctl: out of memory\n");
				rc = 1;
				goto out;
			}

			n = crush_pg_to_up(m, &a.pool, seed, a.osds, w, m->max_devices, a.upmaps,
					   a.nupmaps, up, &primary, work);
			printf(" object '%s' -> %" PRId64 ".%x -> ", a.names[i], a.pool.id, seed);
			print_up(up, n);
			printf("\n");
		}
	} else {
		for (uint32_t seed = 0; seed < a.pool.pg_num; seed++) {
			n = crush_pg_to_up(m, &a.pool, seed, a.osds, w, m->max_devices, a.upmaps,
					   a.nupmaps, up, &primary, work);
			printf("%" PRId64 ".%x\t", a.pool.id, seed);
			print_up(up, n);
			printf("\t%d\n", primary);
		}
	}
	free(w);
	free(work);
out:
	place_args_free(&a);
	return rc;
}

static int
crush_balance_cmd(struct crush_map *m, int argc, char **argv)
{
	struct place_args a;
	struct crush_balance_plan pl;
	int rc;

	if (place_parse(m, argc, argv, &a)) {
		rc = usage();
		goto out;
	}
	rc = crush_balance(m, &a.pool, a.osds, m->max_devices, a.upmaps, a.nupmaps, NULL,
			   a.max_moves, &pl);
	if (rc) {
		fprintf(stderr, "clusterctl: cannot balance pool %" PRId64 ": %s\n", a.pool.id,
			strerror(-rc));
		rc = 1;
		goto out;
	}
	printf("# pool %" PRId64 ": %u replicas moved; max deviation %.2f -> %.2f PGs; %zu upmap "
	       "items\n",
	       a.pool.id, pl.moves, pl.max_dev_before, pl.max_dev_after, pl.nitems);
	for (size_t i = 0; i < pl.nitems; i++)
		printf("upmap %" PRId64 ".%x %d %d\n", pl.items[i].pool, pl.items[i].seed,
		       pl.items[i].from, pl.items[i].to);
	printf("# osd  target  before  after\n");
	for (int i = 0; i < pl.max_osd; i++)
		if (pl.target[i] > 0 || pl.before[i] || pl.after[i])
			printf("# %4d %7.2f %7d %6d\n", i, pl.target[i], pl.before[i], pl.after[i]);
	crush_balance_plan_free(&pl);
out:
	place_args_free(&a);
	return rc;
}

bool
ctl_crush_is_offline(const char *verb)
{
	static const char *const v[] = { "compile", "decompile",  "test",
					 "map-pgs", "map-object", "balance" };

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (strcmp(verb, v[i]) == 0)
			return true;
	return false;
}

int
ctl_crush_offline(int argc, char **argv)
{
	const char *in = NULL, *out = NULL;
	struct crush_map *m;
	int rc = 0, rest = argc;

	if (argc < 1)
		return usage();
	for (int i = 1; i + 1 < argc; i++) {
		if (!strcmp(argv[i], "-i")) {
			in = argv[i + 1];
			rest = i;
			break;
		}
	}
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "-o"))
			out = argv[i + 1];
	if (!in)
		return usage();
	m = load(in);
	if (!m)
		return 1;
	if (!strcmp(argv[0], "test")) {
		rc = crush_test(m, argc - rest - 2, argv + rest + 2);
	} else if (!strcmp(argv[0], "balance")) {
		rc = crush_balance_cmd(m, argc - rest - 2, argv + rest + 2);
	} else if (!strcmp(argv[0], "map-pgs") || !strcmp(argv[0], "map-object")) {
		rc = crush_place(m, !strcmp(argv[0], "map-object"), argc - rest - 2,
				 argv + rest + 2);
	} else if (!strcmp(argv[0], "decompile") || !strcmp(argv[0], "compile")) {
		FILE *f = out ? fopen(out, "w") : stdout;

		if (!f) {
			fprintf(stderr, "clusterctl: %s: %s\n", out, strerror(errno));
			rc = 1;
		} else {
			rc = crush_text_print(m, f) ? 1 : 0;
			if (f != stdout && fclose(f))
				rc = 1;
		}
	} else {
		rc = usage();
	}
	crush_map_destroy(m);
	return rc;
}

const struct cm_opt g_ctl_opts[] = {
	CM_DAEMON_OPTS(struct ctl_conf, d, "client.admin"),
	CM_OPT("fsid", CM_OPT_STR, "", 0, 0, 0, struct ctl_conf, fsid, "the cluster's id"),
	CM_OPT("mon_host", CM_OPT_STR, "", 0, 0, 0, struct ctl_conf, mon_host,
	       "every mon: NAME=IP:PORT,..."),
	CM_ETCD_CONF_OPTS(struct ctl_conf, etcd, ""),
	CM_OPT("etcd_server_cert", CM_OPT_STR, "", 0, 0, 0, struct ctl_conf, etcd_server_cert,
	       "clusterctl up: the certificate the cluster's etcd serves (empty: plain http)"),
	CM_OPT("etcd_server_key", CM_OPT_STR, "", 0, 0, 0, struct ctl_conf, etcd_server_key,
	       "clusterctl up: that certificate's private key"),
	CM_OPT("etcd_peer_port", CM_OPT_UINT, "0", 0, 65535, 0, struct ctl_conf, etcd_peer_port,
	       "etcd peer port of a local cluster (clusterctl up)"),
	CM_OPT("command_timeout", CM_OPT_DURATION, "15s", 100, 3600000, 0, struct ctl_conf,
	       command_timeout_ms, "give up when no monitor answers within this"),
	CM_OPT("osd_metrics", CM_OPT_STR, "", 0, 0, 0, struct ctl_conf, osd_metrics,
	       "clusterctl up: each OSD's /metrics address, by start index (written by up)"),
	CM_OPT("osd_addr_base", CM_OPT_STR, "", 0, 0, 0, struct ctl_conf, osd_addr_base,
	       "clusterctl up: OSD i listens on this loopback IPv4 address + i (written by "
	       "up --osd-addrs); empty: all on 127.0.0.1"),
	CM_OPT("op_timeout", CM_OPT_DURATION, "0", 0, 86400000, 0, struct ctl_conf, op_timeout_ms,
	       "object ops (obj, bench) give up after this (on the command line also "
	       "--timeout); 0: they wait through failures (Ctrl-C stops them)"),
	{ 0 },
};

extern char **environ;

static int
main_usage(void)
{
	fprintf(stderr,
		"usage: clusterctl [-c CONF] [--format text|json] COMMAND...\n"
		"  local cluster:  up [--dir D] [--mons N] [--osds N] | down [--dir D]\n"
		"  cluster:        status | health [detail] | mon ls | crush show\n"
		"                  osd ls | osd down|out|in|rm ID... | osd reweight ID W\n"
		"                  osd set|unset FLAG\n"
		"                  osd blocklist ls | add CLIENT [SECONDS] | rm CLIENT\n"
		"                  pool ls | pool create NAME [--size N] [--min-size N] [--ec K+M]\n"
		"                       [--stripe-unit BYTES] [--pg-num N]\n"
		"                  pool rm NAME --yes-i-really-mean-it\n"
		"                  pool set NAME size|min_size|pg_num|pgp_num|crush_rule|quota_max_bytes V\n"
		"                  pg ls [POOL [OBJECT]]   (each PG's state, primary and up set;\n"
		"                       with OBJECT: the PG that holds it)\n"
		"                  service ls [TYPE]   (gateways, MDS daemons, CSI controllers up)\n"
		"                  service beacon TYPE NAME INSTANCE ADDR TTL [META] | service rm TYPE\n"
		"                       NAME INSTANCE   (what daemons do through libcairn)\n"
		"                  mds ls [FS] | mds set FS max_mds N   (the MDS map: ranks, standbys)\n"
		"  objects:        obj put|get POOL NAME [FILE|-] | obj stat|rm POOL NAME | obj ls POOL\n"
		"                       [--namespace NS] [--key KEY] (ls: [--all-namespaces])\n"
		"                  obj ns POOL   (the namespaces holding objects)\n"
		"                  bench POOL write|seq|rand [--seconds S] [--size B] [--threads T]\n"
		"                       [--max-objects N] [--prefix P] [--cleanup]\n"
		"  S3 users:       s3 user create UID [--display-name N] | s3 user ls|info|rm UID\n"
		"                  s3 user quota UID --max-bytes B --max-objects N | s3 key add UID\n"
		"                  s3 key rm ACCESS_KEY   (in the gateway's metadata pool)\n"
		"                  s3 user stats UID [--sync] | s3 bucket quota NAME --max-bytes B\n"
		"                       --max-objects N | s3 bucket stats NAME\n"
		"  offline CRUSH:  crush compile|decompile|test|map-pgs|map-object|balance -i MAP ...\n");
	return 2;
}

int
main(int argc, char **argv)
{
	struct ctl_conf cfg = { 0 };
	struct cm_conf conf = {
		.table = g_ctl_opts, .base = &cfg, .section = "clusterctl", .env_prefix = "CAIRN_"
	};
	char **args = calloc((size_t)argc + 1, sizeof(*args));
	char **opts = calloc(2 * (size_t)argc + 4, sizeof(*opts));
	const char *conf_path = NULL;
	bool json = false;
	int n = 0, rc, status;

	int nopts = 3;

	if (!args || !opts) {
		free(args);
		free(opts);
		return 1;
	}
	/*
	 * -c and --format may come anywhere; other options before the command
	 * word are configuration (--command-timeout 2s, --cluster-key ...); the
	 * rest is the command.
	 */
	for (int i = 1; i < argc; i++) {
		if ((!strcmp(argv[i], "-c") || !strcmp(argv[i], "--conf")) && i + 1 < argc) {
			conf_path = argv[++i];
		} else if (!strncmp(argv[i], "--conf=", 7)) {
			conf_path = argv[i] + 7;
		} else if (!strcmp(argv[i], "--format") && i + 1 < argc) {
			i++;
			if (strcmp(argv[i], "json") && strcmp(argv[i], "text")) {
				fprintf(stderr, "clusterctl: --format json or text\n");
				free(args);
				free(opts);
				return 2;
			}
			json = !strcmp(argv[i], "json");
		} else if (!strncmp(argv[i], "--format=", 9)) {
			json = !strcmp(argv[i] + 9, "json");
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			free(args);
			free(opts);
			return main_usage() - 2;
		} else if (n == 0 && !strcmp(argv[i], "--timeout")) {
			/* the op timeout; "timeout" is the messenger's peer timeout */
			opts[nopts++] = "--op-timeout";
			if (i + 1 < argc)
				opts[nopts++] = argv[++i];
		} else if (n == 0 && !strncmp(argv[i], "--timeout=", 10)) {
			opts[nopts++] = "--op-timeout";
			opts[nopts++] = argv[i] + 10;
		} else if (n == 0 && !strncmp(argv[i], "--", 2)) {
			opts[nopts++] = argv[i];
			if (!strchr(argv[i], '=') && i + 1 < argc && argv[i + 1][0] != '-')
				opts[nopts++] = argv[++i];
		} else {
			args[n++] = argv[i];
		}
	}
	if (n == 0) {
		free(args);
		free(opts);
		return main_usage();
	}
	if (!strcmp(args[0], "crush") && n >= 2 && ctl_crush_is_offline(args[1])) {
		status = ctl_crush_offline(n - 1, args + 1);
		free(args);
		free(opts);
		return status;
	}
	if (!strcmp(args[0], "up") || !strcmp(args[0], "down")) {
		args[n] = NULL;
		status = !strcmp(args[0], "up") ? ctl_up(n, args, json) : ctl_down(n, args, json);
		free(args);
		free(opts);
		return status;
	}
	if (!conf_path)
		conf_path = getenv("CAIRN_CONF");
	if (!conf_path && access("run/cairn.conf", R_OK) == 0)
		conf_path = "run/cairn.conf";
	opts[0] = "clusterctl";
	opts[1] = "-c";
	opts[2] = (char *)conf_path;
	if (!conf_path) {
		memmove(opts + 1, opts + 3, sizeof(*opts) * (size_t)(nopts - 3));
		nopts -= 2;
	}
	rc = cm_conf_init(&conf, nopts, opts, environ, NULL, stdout, NULL);
	if (rc) {
		fprintf(stderr, "clusterctl: %s\n", conf.err);
		free(args);
		free(opts);
		cm_conf_free(&conf);
		return 2;
	}
	cm_log_set_level(CM_LOG_ERR);
	cfg.conf_path = conf_path;
	if (!strcmp(args[0], "obj"))
		status = ctl_obj(&cfg, n, args, json);
	else if (!strcmp(args[0], "bench"))
		status = ctl_bench(&cfg, n, args, json);
	else if (!strcmp(args[0], "s3"))
		status = ctl_s3(&cfg, n, args, json);
	else
		status = ctl_online(&cfg, n, args, json);
	free(args);
	free(opts);
	cm_conf_free(&conf);
	return status;
}
