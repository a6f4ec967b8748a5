/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clusterctl up|down: a local cluster in one directory (default ./run): a
 * private etcd on free loopback ports, N mons and M OSDs (each on a
 * preallocated file DIR/osd.<i>.data in its own CRUSH host, node<i>), and a
 * pool `default`. `up` writes DIR/cairn.conf on first use and reuses it after, so
 * `down` + `up` resumes the same cluster with its data; one pid file per
 * daemon (DIR/<daemon>.<id>.pid), one log each (DIR/<daemon>.<id>.log).
 */
#include "ctl.h"
#include "mon/proto.h"
#include "mon/cluster.h"
#include "cm/err.h"
#include "cm/etcd.h"
#include "cm/random.h"
#include "cm/sock.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>
#include <jansson.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define MAX_MONS 9

struct local {
	char dir[PATH_MAX];
	char conf[PATH_MAX + 16];
	unsigned mons, osds;
	uint64_t osd_size;
	const char *osd_addrs; /* --osd-addrs: the first OSD's own loopback address */
	bool json;
};

/*
 * OSD i's listen address ("IP:0") from the base address (IPv4 in
 * 127.0.0.0/8, each OSD on the next one), or 127.0.0.1 when base is empty.
 * \return 0, or -EINVAL (not such an address, or past .254).
 */
static int
osd_listen_addr(const char *base, unsigned i, char *out, size_t n)
{
	struct in_addr a;
	uint32_t h;

	if (!base || !base[0]) {
		snprintf(out, n, "127.0.0.1:0");
		return 0;
	}
	if (inet_pton(AF_INET, base, &a) != 1)
		return -EINVAL;
	h = ntohl(a.s_addr);
	if ((h >> 24) != 127 || (h & 0xff) == 0 || (h & 0xff) + i > 254)
		return -EINVAL;
	h += i;
	snprintf(out, n, "%u.%u.%u.%u:0", h >> 24, (h >> 16) & 0xff, (h >> 8) & 0xff, h & 0xff);
	return 0;
}

/* The first port the kernel hands out for bind(0) and connect(). */
static unsigned
ephemeral_low(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	unsigned lo = 32768;

	if (f) {
		if (fscanf(f, "%u", &lo) != 1)
			lo = 32768;
		fclose(f);
	}
	return lo;
}

/*
 * A free loopback port for a daemon of the local cluster. Its ports stay in
 * cairn.conf across down/up, so they come from below the kernel's ephemeral
 * range: while the cluster is down, nothing that asks the kernel for a free
 * port (another program's listener, any outgoing connection) takes one.
 */
static int
free_port(void)
{
	/* The ports this process handed out: one 'up' picks a dozen or more
	 * before any is bound, and two equal picks made an OSD's /metrics fail
	 * with EADDRINUSE (seen in CI). */
	static uint16_t given[256];
	static unsigned ngiven;
	unsigned lo = ephemeral_low();
	uint16_t port;

	for (int i = 0; lo > 20000 && i < 200; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET };
		uint32_t r;
		int fd, ok;
		bool dup = false;

		if (cm_random_bytes(&r, sizeof(r)))
			break;
		port = (uint16_t)(10000 + r % (lo - 10000));
		for (unsigned k = 0; k < ngiven && k < CM_ARRAY_SIZE(given); k++)
			dup |= given[k] == port;
		if (dup)
			continue;
		a.sin_port = htons(port);
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			break;
		ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
		close(fd);
		if (ok) {
			given[ngiven++ % CM_ARRAY_SIZE(given)] = port;
			return port;
		}
	}
	return cm_sock_free_port("127.0.0.1", &port) ? -1 : port;
}

static int
random_hex(char *out, size_t nbytes)
{
	unsigned char b[64];

	nbytes = CM_MIN(nbytes, sizeof(b));
	if (cm_random_bytes(b, nbytes))
		return -EIO;
	for (size_t i = 0; i < nbytes; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	return 0;
}

static int
write_conf(const struct local *l)
{
	char fsid[37], key[49];
	int etcd = free_port(), peer = free_port();
	FILE *f;

	char tls[PATH_MAX + 16];
	int rc;

	if (cm_uuid_generate(fsid) || random_hex(key, 24))
		return -EIO;
	/* etcd holds the map: only holders of a certificate of this cluster's
	 * CA may talk to it (ctl_tls_make). */
	snprintf(tls, sizeof(tls), "%s/etcd-tls", l->dir);
	rc = ctl_tls_make(tls);
	if (rc)
		return rc;
	f = fopen(l->conf, "w");
	if (!f || etcd < 0 || peer < 0) {
		if (f)
			fclose(f);
		return -errno ? -errno : -EIO;
	}
	fchmod(fileno(f), 0600);
	fprintf(f,
		"# A local Cairn cluster, written by 'clusterctl up'. 'clusterctl down' stops it;\n"
		"# 'clusterctl up' resumes it with this file and the data in this directory.\n"
		"[global]\nfsid = %s\ncluster_key = %s\netcd_endpoints = https://127.0.0.1:%d\n"
		"etcd_ca = %s/ca.pem\netcd_cert = %s/client.pem\netcd_key = %s/client.key\n"
		"mon_host = ",
		fsid, key, etcd, tls, tls, tls);
	for (unsigned i = 0; i < l->mons; i++) {
		int p = free_port();

		if (p < 0) {
			fclose(f);
			return -EADDRNOTAVAIL;
		}
		fprintf(f, "%s%c=127.0.0.1:%d", i ? "," : "", 'a' + i, p);
	}
	fprintf(f,
		"\n\n[clusterctl]\netcd_peer_port = %d\netcd_server_cert = %s/etcd.pem\n"
		"etcd_server_key = %s/etcd.key\n",
		peer, tls, tls);
	for (unsigned i = 0; i < l->mons; i++) {
		int mp = free_port();

		fprintf(f, "\n[mon.%c]\npid_file = %s/mon.%c.pid\nlog_file = %s/mon.%c.log\n",
			'a' + i, l->dir, 'a' + i, l->dir, 'a' + i);
		if (mp > 0)
			fprintf(f, "metrics_addr = 127.0.0.1:%d\n", mp);
	}
	return fclose(f) ? -errno : 0;
}

/*
 * Set key = value in the [clusterctl] section of the conf file at path
 * (replacing the key's line, or adding it after the section's header).
 * \return 0 or -errno.
 */
static int
conf_set_ctl(const char *path, const char *key, const char *value)
{
	char tmp[PATH_MAX + 32], line[4096];
	FILE *in = fopen(path, "r"), *out;
	bool in_ctl = false, done = false;
	size_t kl = strlen(key);
	int rc = 0;

	if (!in)
		return -errno;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	out = fopen(tmp, "w");
	if (!out) {
		rc = -errno;
		fclose(in);
		return rc;
	}
	fchmod(fileno(out), 0600);
	while (fgets(line, sizeof(line), in)) {
		if (line[0] == '[') {
			if (in_ctl && !done) {
				fprintf(out, "%s = %s\n", key, value);
				done = true;
			}
			in_ctl = strncmp(line, "[clusterctl]", 12) == 0;
		} else if (in_ctl && !done && strncmp(line, key, kl) == 0 &&
			   (line[kl] == ' ' || line[kl] == '=')) {
			fprintf(out, "%s = %s\n", key, value);
			done = true;
			continue;
		}
		fputs(line, out);
	}
	if (!done)
		fprintf(out, "%s%s = %s\n", in_ctl ? "" : "\n[clusterctl]\n", key, value);
	if (ferror(in))
		rc = -EIO;
	fclose(in);
	if (fclose(out) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

/*
 * A daemon killed with -9 stays a zombie until its reaper collects it (and
 * a big process takes a while to tear down): kill(pid, 0) still succeeds.
 * Look at its state instead, so 'up' restarts it.
 */
static bool
pid_exited(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return true;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

static pid_t
read_pid(const char *path)
{
	FILE *f = fopen(path, "r");
	int pid = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%d", &pid) != 1)
		pid = 0;
	fclose(f);
	return pid > 0 && kill(pid, 0) == 0 && !pid_exited(pid) ? pid : 0;
}

/* Start argv detached, output to log; the pid goes to pidfile. */
static int
spawn(char *const argv[], const char *log, const char *pidfile, pid_t *pidp)
{
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644), nul;

		setsid();
		nul = open("/dev/null", O_RDONLY);
		if (nul >= 0)
			dup2(nul, 0);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (pidfile) {
		FILE *f = fopen(pidfile, "w");

		if (f) {
			fprintf(f, "%d\n", (int)pid);
			fclose(f);
		}
	}
	*pidp = pid;
	return 0;
}

static const char *
find_etcd(void)
{
	static const char *const cands[] = { "/usr/bin/etcd", "/usr/local/bin/etcd",
					     "/usr/sbin/etcd" };

	for (size_t i = 0; i < CM_ARRAY_SIZE(cands); i++)
		if (access(cands[i], X_OK) == 0)
			return cands[i];
	return NULL;
}

/* A daemon: $CAIRN_BIN_DIR, the build tree next to us, our own directory, /usr/bin. */
static int
find_bin(const char *name, const char *subdir, char *out, size_t len)
{
	char self[PATH_MAX], dir[PATH_MAX];
	const char *env = getenv("CAIRN_BIN_DIR");
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (env) {
		snprintf(out, len, "%s/%s", env, name);
		if (access(out, X_OK) == 0)
			return 0;
	}
	if (n > 0) {
		self[n] = 0;
		snprintf(dir, sizeof(dir), "%s", dirname(self));
		if (snprintf(out, len, "%s/../%s/%s", dir, subdir, name) < (int)len &&
		    access(out, X_OK) == 0)
			return 0;
		if (snprintf(out, len, "%s/%s", dir, name) < (int)len && access(out, X_OK) == 0)
			return 0;
	}
	snprintf(out, len, "/usr/bin/%s", name);
	return access(out, X_OK) == 0 ? 0 : -ENOENT;
}

static int load_conf(const char *path, struct ctl_conf *cfg, struct cm_conf *conf);

/* How many OSDs a JSON status shows up. */
static long
osds_up(const char *status_json)
{
	json_error_t e;
	json_t *j = json_loads(status_json, 0, &e);
	long n =
		j ? (long)json_integer_value(json_object_get(json_object_get(j, "osds"), "up")) : 0;

	json_decref(j);
	return n;
}

/*
 * Start the OSDs that are not running (each makes its store on first
 * start), wait until all are up, and make the pool `default` (size 3, or
 * fewer with fewer OSDs) on a fresh cluster.
 */
static int
start_osds(const struct local *l, const struct ctl_conf *c, cairn_cluster_t *cl)
{
	/* Each OSD's /metrics port, by start index: [clusterctl] osd_metrics in
	 * cairn.conf, "127.0.0.1:P0,127.0.0.1:P1,..."; new ones are added. */
	char metrics[64][32] = { { 0 } }, mlist[64 * 32] = "", maddr[48];
	unsigned nm = 0;
	bool mnew = false;
	char osdbin[PATH_MAX], pidf[PATH_MAX + 64], log[PATH_MAX + 64], data[PATH_MAX + 64];
	char host[32], laddr[32];
	const char *base;
	const char *st[] = { "status" }, *pl[] = { "pool", "ls" };
	char *out = NULL, *msg = NULL;
	uint64_t deadline = cm_now_ms() + 30000;
	long up = 0;
	pid_t pid;

	if (find_bin("cairn-osd", "osd", osdbin, sizeof(osdbin))) {
		fprintf(stderr,
			"clusterctl up: cairn-osd not found (build it, or set CAIRN_BIN_DIR)\n");
		return -ENOENT;
	}
	if (c->osd_metrics && c->osd_metrics[0]) {
		char buf[sizeof(mlist)], *save = NULL, *tok;

		snprintf(buf, sizeof(buf), "%s", c->osd_metrics);
		for (tok = strtok_r(buf, ",", &save); tok && nm < 64;
		     tok = strtok_r(NULL, ",", &save))
			snprintf(metrics[nm++], sizeof(metrics[0]), "%s", tok);
	}
	for (unsigned i = 0; i < l->osds && i < 64; i++) {
		if (i < nm && metrics[i][0])
			continue;
		int p = free_port();

		if (p > 0)
			snprintf(metrics[i], sizeof(metrics[0]), "127.0.0.1:%d", p);
		nm = CM_MAX(nm, i + 1);
		mnew = true;
	}
	for (unsigned i = 0, at = 0; i < nm && at < sizeof(mlist) - 40; i++)
		at += (unsigned)snprintf(mlist + at, sizeof(mlist) - at, "%s%.31s", i ? "," : "",
					 metrics[i][0] ? metrics[i] : "-");
	if (mnew && conf_set_ctl(l->conf, "osd_metrics", mlist))
		fprintf(stderr, "clusterctl up: could not record the OSDs' metrics ports in %s\n",
			l->conf);
	/* Each OSD on its own address: --osd-addrs, kept for later 'up's. */
	if (l->osd_addrs && (!c->osd_addr_base || strcmp(l->osd_addrs, c->osd_addr_base)) &&
	    conf_set_ctl(l->conf, "osd_addr_base", l->osd_addrs))
		fprintf(stderr, "clusterctl up: could not record the OSDs' addresses in %s\n",
			l->conf);
	base = l->osd_addrs ? l->osd_addrs : c->osd_addr_base;
	if (osd_listen_addr(base, l->osds ? l->osds - 1 : 0, laddr, sizeof(laddr))) {
		fprintf(stderr,
			"clusterctl up: osd_addr_base %s: not an IPv4 loopback address "
			"with room for %u OSDs\n",
			base, l->osds);
		return -EINVAL;
	}
	for (unsigned i = 0; i < l->osds; i++) {
		int fd;

		snprintf(maddr, sizeof(maddr), "%s",
			 i < 64 && metrics[i][0] != '-' ? metrics[i] : "");
		snprintf(pidf, sizeof(pidf), "%s/osd.%u.pid", l->dir, i);
		snprintf(log, sizeof(log), "%s/osd.%u.log", l->dir, i);
		snprintf(data, sizeof(data), "%s/osd.%u.data", l->dir, i);
		snprintf(host, sizeof(host), "node%u", i);
		(void)osd_listen_addr(base, i, laddr, sizeof(laddr)); /* checked above */
		if (read_pid(pidf))
			continue;
		fd = open(data, O_RDWR | O_CREAT, 0600);
		if (fd < 0) {
			fprintf(stderr, "clusterctl up: %s: %s\n", data, strerror(errno));
			return -errno;
		}
		/* A new file only: an OSD's store keeps the size it was made
		 * with (a later 'up' without --osd-size must not grow it). */
		if (lseek(fd, 0, SEEK_END) == 0) {
			int rc = posix_fallocate(fd, 0, (off_t)l->osd_size);

			if (rc) {
				fprintf(stderr,
					"clusterctl up: preallocating %s (%" PRIu64 " MiB): %s\n",
					data, l->osd_size >> 20, strerror(rc));
				close(fd);
				return -rc;
			}
		}
		close(fd);
		char hosts[16];

		/* Every OSD of a local cluster shares this machine's cores:
		 * the automatic PG shard count divides them. */
		snprintf(hosts, sizeof(hosts), "%u", l->osds);
		char *args[] = { osdbin,
				 "-c",
				 (char *)l->conf,
				 "--osd-host-osds",
				 hosts,
				 "--osd-data",
				 data,
				 "--host",
				 host,
				 "--log-file",
				 log,
				 "--pid-file",
				 pidf,
				 "--metrics-addr",
				 maddr,
				 "--public-addr",
				 laddr,
				 NULL };

		if (spawn(args, log, NULL, &pid)) {
			fprintf(stderr, "clusterctl up: cannot start OSD %u\n", i);
			return -EIO;
		}
		if (!l->json)
			printf("started osd on %s (pid %d, host %s)\n", data, (int)pid, host);
	}
	while (cm_now_ms() < deadline) {
		if (cairn_mon_command(cl, st, 1, true, &out, NULL) == 0)
			up = osds_up(out);
		free(out);
		out = NULL;
		if (up >= (long)l->osds)
			break;
		usleep(100000);
	}
	if (up < (long)l->osds) {
		fprintf(stderr, "clusterctl up: %ld of %u OSDs up after 30 s (see %s/osd.*.log)\n",
			up, l->osds, l->dir);
		return -ETIMEDOUT;
	}
	if (cairn_mon_command(cl, pl, 2, false, &out, NULL) == 0 && !strstr(out, "default")) {
		char sz[8], msz[8];
		const char *pc[] = { "pool", "create", "default", "--size", sz, "--min-size", msz };
		int rc;

		snprintf(sz, sizeof(sz), "%u", CM_MIN(l->osds, 3u));
		snprintf(msz, sizeof(msz), "%u", CM_MIN(l->osds, 3u) > 1 ? 2 : 1);
		free(out);
		out = NULL;
		rc = cairn_mon_command(cl, pc, 7, false, &out, &msg);
		if (rc) {
			fprintf(stderr, "clusterctl up: creating pool default: %s\n",
				msg && msg[0] ? msg
				: out         ? strerror(-rc)
					      : "no answer");
			free(out);
			free(msg);
			return -EIO;
		}
	}
	free(out);
	free(msg);
	return 0;
}

static int
wait_etcd(const struct cm_etcd_conf *ec, unsigned ms)
{
	struct cm_etcd_opts o;
	struct cm_etcd *e;
	struct cm_etcd_range r;
	int rc;

	cm_etcd_opts_init(&o, sizeof(o));
	cm_etcd_opts_from_conf(&o, ec);
	o.timeout_ms = ms;
	o.attempt_ms = 500;
	rc = cm_etcd_create(&o, &e);
	if (rc)
		return rc;
	rc = cm_etcd_get(e, "/cairn", 6, NULL, 0, 1, &r);
	if (!rc)
		cm_etcd_range_free(&r);
	cm_etcd_destroy(e);
	return rc;
}

static int
mkfs(const struct ctl_conf *c)
{
	struct cm_etcd_opts o;
	struct cm_etcd *e;
	int rc;

	cm_etcd_opts_init(&o, sizeof(o));
	cm_etcd_opts_from_conf(&o, &c->etcd);
	rc = cm_etcd_create(&o, &e);
	if (rc)
		return rc;
	rc = mon_cluster_create(e, c->fsid, c->d.cluster_key);
	cm_etcd_destroy(e);
	return rc;
}

/* Does a JSON status show n mons, all alive, and a leader? */
static bool
all_up(const char *status_json, size_t n)
{
	json_error_t e;
	json_t *j = json_loads(status_json, 0, &e), *mons;
	const char *leader;
	bool ok = false;

	if (!j)
		return false;
	mons = json_object_get(j, "mons");
	leader = json_string_value(json_object_get(j, "leader"));
	if (json_array_size(mons) == n && leader && leader[0]) {
		ok = true;
		for (size_t i = 0; i < n; i++)
			ok &= json_is_true(json_object_get(json_array_get(mons, i), "alive"));
	}
	json_decref(j);
	return ok;
}

static int
parse_local_args(int argc, char **argv, struct local *l, bool up)
{
	const char *dir = "run";

	l->mons = 3;
	l->osds = 3;
	l->osd_size = 8ull << 30;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end;

		if (strcmp(a, "--dir") == 0 && v) {
			dir = v;
			i++;
		} else if (up && strcmp(a, "--mons") == 0 && v) {
			l->mons = (unsigned)strtoul(v, &end, 10);
			if (*end || l->mons < 1 || l->mons > MAX_MONS) {
				fprintf(stderr, "clusterctl up: --mons: 1 to %d\n", MAX_MONS);
				return 2;
			}
			i++;
		} else if (up && strcmp(a, "--osds") == 0 && v) {
			l->osds = (unsigned)strtoul(v, &end, 10);
			if (*end || l->osds > 64) {
				fprintf(stderr, "clusterctl up: --osds: 0 to 64\n");
				return 2;
			}
			i++;
		} else if (up && strcmp(a, "--osd-addrs") == 0 && v) {
			char t[32];

			if (osd_listen_addr(v, 0, t, sizeof(t))) {
				fprintf(stderr, "clusterctl up: --osd-addrs: an IPv4 loopback "
						"address (127.x.y.z, z 1-254): OSD i gets z + i\n");
				return 2;
			}
			l->osd_addrs = v;
			i++;
		} else if (up && strcmp(a, "--osd-size") == 0 && v) {
			if (cm_parse_size(v, &l->osd_size) || l->osd_size < (64u << 20)) {
				fprintf(stderr,
					"clusterctl up: --osd-size: a size >= 64M (e.g. 8G)\n");
				return 2;
			}
			i++;
		} else {
			fprintf(stderr, "usage: clusterctl %s\n",
				up ? "up [--dir DIR] [--mons N] [--osds N] [--osd-size SIZE] "
				     "[--osd-addrs IP]"
				   : "down [--dir DIR]");
			return 2;
		}
	}
	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "clusterctl: mkdir %s: %s\n", dir, strerror(errno));
		return 1;
	}
	if (!realpath(dir, l->dir)) {
		fprintf(stderr, "clusterctl: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	snprintf(l->conf, sizeof(l->conf), "%s/cairn.conf", l->dir);
	return 0;
}

int
ctl_up(int argc, char **argv, bool json)
{
	struct local l = { .json = json };
	struct ctl_conf c = { 0 };
	struct cm_conf conf = { 0 };
	struct mon_addr *mons = NULL;
	size_t nmons = 0;
	char path[PATH_MAX + 64], monbin[PATH_MAX], err[256], etcd_dir[PATH_MAX + 16];
	const char *etcd = find_etcd();
	bool fresh = false;
	pid_t pid;
	int rc, status = 1;

	rc = parse_local_args(argc, argv, &l, true);
	if (rc)
		return rc;
	if (!etcd) {
		fprintf(stderr,
			"clusterctl up: etcd is not installed (apt-get install etcd-server)\n");
		return 1;
	}
	if (find_bin("cairn-mon", "mon", monbin, sizeof(monbin))) {
		fprintf(stderr,
			"clusterctl up: cairn-mon not found (build it, or set CAIRN_BIN_DIR)\n");
		return 1;
	}
	if (access(l.conf, R_OK) != 0) {
		rc = write_conf(&l);
		if (rc) {
			fprintf(stderr, "clusterctl up: writing %s: %s\n", l.conf, cm_strerror(rc));
			return 1;
		}
		fresh = true;
	}
	if (load_conf(l.conf, &c, &conf))
		goto out;
	if (mon_parse_hosts(c.mon_host, &mons, &nmons, err, sizeof(err))) {
		fprintf(stderr, "clusterctl up: %s: %s\n", l.conf, err);
		goto out;
	}
	/* etcd */
	snprintf(path, sizeof(path), "%s/etcd.0.pid", l.dir);
	if (!read_pid(path)) {
		char client[160], peer[160], cluster[200], name[] = "cairn";
		const char *cu = c.etcd.endpoints;

		snprintf(client, sizeof(client), "%s", cu);
		snprintf(peer, sizeof(peer), "http://127.0.0.1:%" PRIu64, c.etcd_peer_port);
		snprintf(cluster, sizeof(cluster), "%s=%s", name, peer);
		snprintf(etcd_dir, sizeof(etcd_dir), "%s/etcd", l.dir);
		char *args[] = { (char *)etcd, "--name",
				 name,         "--data-dir",
				 etcd_dir,     "--listen-client-urls",
				 client,       "--advertise-client-urls",
				 client,       "--listen-peer-urls",
				 peer,         "--initial-advertise-peer-urls",
				 peer,         "--initial-cluster",
				 cluster,      "--log-level",
				 "warn",       NULL,
				 NULL,         NULL,
				 NULL,         NULL,
				 NULL,         NULL,
				 NULL,         NULL };
		char log[PATH_MAX + 16];

		snprintf(log, sizeof(log), "%s/etcd.0.log", l.dir);
		if (c.etcd_server_cert && c.etcd_server_cert[0]) {
			/* https, and only clients with a certificate of the cluster's CA */
			char **a = args;

			while (*a)
				a++;
			*a++ = "--client-cert-auth";
			*a++ = "--trusted-ca-file";
			*a++ = c.etcd.ca;
			*a++ = "--cert-file";
			*a++ = c.etcd_server_cert;
			*a++ = "--key-file";
			*a++ = c.etcd_server_key;
		}
		if (spawn(args, log, path, &pid)) {
			fprintf(stderr, "clusterctl up: cannot start etcd\n");
			goto out;
		}
		if (!json)
			printf("started etcd (pid %d) on %s\n", (int)pid, client);
	}
	rc = wait_etcd(&c.etcd, 20000);
	if (rc) {
		fprintf(stderr,
			"clusterctl up: etcd on %s does not answer: %s (see %s/etcd.0.log)\n",
			c.etcd.endpoints, cm_strerror(rc), l.dir);
		goto out;
	}
	rc = mkfs(&c);
	if (rc < 0) {
		fprintf(stderr, "clusterctl up: creating the cluster: %s\n",
			rc == -EACCES ? "it exists with another cluster_key" : cm_strerror(rc));
		goto out;
	}
	/* mons */
	for (size_t i = 0; i < nmons; i++) {
		char pidf[PATH_MAX + 64], log[PATH_MAX + 64];

		if (snprintf(pidf, sizeof(pidf), "%s/mon.%s.pid", l.dir, mons[i].name) >=
			    (int)sizeof(pidf) ||
		    snprintf(log, sizeof(log), "%s/mon.%s.out", l.dir, mons[i].name) >=
			    (int)sizeof(log))
			goto out;
		if (read_pid(pidf))
			continue;
		char *args[] = { monbin, "--id", mons[i].name, "-c", l.conf, NULL };

		if (spawn(args, log, pidf, &pid)) {
			fprintf(stderr, "clusterctl up: cannot start mon.%s\n", mons[i].name);
			goto out;
		}
		if (!json)
			printf("started mon.%s (pid %d) on %s\n", mons[i].name, (int)pid,
			       mons[i].addr);
	}
	/* Wait until every mon has registered and a leader is elected (asked
	 * through libcairn, as every other client asks). */
	{
		cairn_cluster_t *cl = NULL;
		const char *st[] = { "status" };
		char *out = NULL, *msg = NULL;
		uint64_t deadline = cm_now_ms() + 30000;
		bool ready = false;

		err[0] = 0;
		while (!ready && cm_now_ms() < deadline) {
			if (!cl && ctl_connect(&c, 3000, 3000, &cl, err, sizeof(err)))
				cl = NULL; /* (no mon answers yet, or none with a leader) */
			if (cl && cairn_mon_command(cl, st, 1, true, &out, NULL) == 0)
				ready = all_up(out, nmons);
			free(out);
			out = NULL;
			if (!ready)
				usleep(200000);
		}
		if (!ready)
			fprintf(stderr,
				"clusterctl up: the mons did not all register and elect "
				"a leader within 30 s%s%s (see %s/mon.*.log)\n",
				err[0] ? ": " : "", err, l.dir);
		else if (l.osds && start_osds(&l, &c, cl))
			ready = false; /* it said why */
		/* The status to print: a leader that changed just now may
		 * refuse it once; ask again for a while. */
		for (uint64_t until = cm_now_ms() + 15000; ready;) {
			int crc = cairn_mon_command(cl, st, 1, json, &out, &msg);

			if (crc == 0) {
				if (!json)
					printf("\n");
				fputs(out, stdout);
				status = 0;
				break;
			}
			if (cm_now_ms() >= until) {
				fprintf(stderr,
					"clusterctl up: the cluster is up but 'status' failed: "
					"%s (see %s/mon.*.log)\n",
					msg && msg[0] ? msg : "no answer", l.dir);
				break;
			}
			free(out);
			free(msg);
			out = msg = NULL;
			usleep(200000);
		}
		free(out);
		free(msg);
		if (cl)
			cairn_shutdown(cl);
	}
	if (!status && !json)
		printf("\nCluster %s is %s in %s (config %s).\n"
		       "  clusterctl -c %s status       (or export CAIRN_CONF=%s)\n"
		       "  clusterctl -c %s down         stops it; 'up' resumes it\n"
		       "  metrics (Prometheus text): http://ADDR/metrics of every mon and OSD, the\n"
		       "  addresses are in %s (metrics_addr of each mon, osd_metrics)\n",
		       c.fsid, fresh ? "up" : "running", l.dir, l.conf, l.conf, l.conf, l.conf,
		       l.conf);
out:
	free(mons);
	cm_conf_free(&conf);
	return status;
}

struct victim {
	char path[PATH_MAX + 300];
	char name[256];
	pid_t pid;
};

/* SIGTERM every one, wait up to 10 s for all, SIGKILL the rest. \return how many ran. */
static int
stop_all(struct victim *v, int n, json_t *stopped)
{
	int running = 0;

	for (int i = 0; i < n; i++) {
		v[i].pid = read_pid(v[i].path);
		if (v[i].pid) {
			kill(v[i].pid, SIGTERM);
			running++;
		} else {
			unlink(v[i].path);
		}
	}
	for (int t = 0; t < 200; t++) {
		bool any = false;

		for (int i = 0; i < n; i++)
			if (v[i].pid && kill(v[i].pid, 0) == 0) {
				waitpid(v[i].pid, NULL, WNOHANG);
				any = true;
			}
		if (!any)
			break;
		usleep(50000);
	}
	for (int i = 0; i < n; i++) {
		if (!v[i].pid)
			continue;
		if (kill(v[i].pid, 0) == 0) {
			kill(v[i].pid, SIGKILL);
			usleep(100000);
		}
		unlink(v[i].path);
		if (stopped)
			json_array_append_new(stopped, json_pack("{s:s, s:i}", "daemon", v[i].name,
								 "pid", (int)v[i].pid));
		else
			printf("stopped %s (pid %d)\n", v[i].name, (int)v[i].pid);
	}
	return running;
}

int
ctl_down(int argc, char **argv, bool json)
{
	json_t *stopped = json ? json_array() : NULL;
	struct local l = { 0 };
	struct dirent *de;
	struct victim *v = NULL, etcd;
	int rc = parse_local_args(argc, argv, &l, false), n = 0, ran;
	DIR *d;

	if (rc)
		return rc;
	d = opendir(l.dir);
	if (!d) {
		fprintf(stderr, "clusterctl down: %s: %s\n", l.dir, strerror(errno));
		return 1;
	}
	/* Daemons first, etcd last (they deregister through it). */
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		struct victim *nv;

		if (len <= 4 || strcmp(de->d_name + len - 4, ".pid") != 0 ||
		    strncmp(de->d_name, "etcd.", 5) == 0)
			continue;
		nv = realloc(v, sizeof(*v) * (size_t)(n + 1));
		if (!nv)
			break;
		v = nv;
		snprintf(v[n].name, sizeof(v[n].name), "%.*s", (int)(len - 4), de->d_name);
		snprintf(v[n].path, sizeof(v[n].path), "%s/%s", l.dir, de->d_name);
		n++;
	}
	closedir(d);
	ran = stop_all(v, n, stopped);
	free(v);
	snprintf(etcd.path, sizeof(etcd.path), "%s/etcd.0.pid", l.dir);
	snprintf(etcd.name, sizeof(etcd.name), "etcd.0");
	ran += stop_all(&etcd, 1, stopped);
	if (json) {
		json_t *o = json_pack("{s:s, s:o}", "dir", l.dir, "stopped", stopped);
		char *t = o ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;

		if (t)
			printf("%s\n", t);
		free(t);
		json_decref(o);
	} else if (!ran) {
		printf("nothing running in %s\n", l.dir);
	}
	return 0;
}

extern char **environ;

static int
load_conf(const char *path, struct ctl_conf *cfg, struct cm_conf *conf)
{
	char *argv[] = { "clusterctl", "-c", (char *)path, NULL };
	int rc;

	*conf = (struct cm_conf){
		.table = g_ctl_opts, .base = cfg, .section = "clusterctl", .env_prefix = "CAIRN_"
	};
	rc = cm_conf_init(conf, 3, argv, environ, NULL, stdout, NULL);
	if (rc) {
		fprintf(stderr, "clusterctl: %s\n", conf->err);
		return -CM_ECONF;
	}
	return 0;
}
