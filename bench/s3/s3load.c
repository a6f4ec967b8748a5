/* SPDX-License-Identifier: Apache-2.0 */
/*
 * s3load: a small, fast S3 load client for bench/s3, used unchanged
 * against cairn-rgw and radosgw. One thread per client, each with its own
 * keep-alive connection, requests signed with SigV4 (UNSIGNED-PAYLOAD),
 * bodies sent from and read into reused buffers: per request it costs a
 * few microseconds of CPU where boto3 costs a millisecond, so on a 2-core
 * machine more of the cores go to the server under test.
 *
 *   s3load HOST:PORT BUCKET PHASE SIZE COUNT THREADS [PREFIX]
 *
 * PHASE: mkbucket, put, get, head, delete (COUNT objects PREFIX%08d, SIZE
 * bytes, THREADS clients), list (the whole bucket in pages of 1000, one
 * client; COUNT: the keys expected). Keys from AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY, region S3_REGION (us-east-1). Prints one JSON line:
 * ops/s, MiB/s, latency p50/p99/max, errors, the client's CPU in cores.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char *host, *bucket, *phase, *prefix = "obj-";
static char hostport[128];
static uint16_t port;
static const char *ak, *sk, *region = "us-east-1";
static size_t size;
static long count;
static int threads;
static uint8_t *payload;
static atomic_long next_idx, errors;
static double *lat; /* per op, seconds */

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
hex(const uint8_t *b, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = d[b[i] >> 4];
		out[2 * i + 1] = d[b[i] & 15];
	}
	out[2 * n] = '\0';
}

static void
hmac(const uint8_t *key, size_t klen, const char *msg, uint8_t out[32])
{
	unsigned int l = 32;

	HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg), out, &l);
}

/* RFC 3986 encoding (S3's: unreserved characters kept; '/' kept when slash). */
static void
uri_enc(const char *s, bool slash, char *out, size_t len)
{
	size_t o = 0;

	for (; *s && o + 4 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~' || (slash && c == '/'))
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, len - o, "%%%02X", c);
	}
	out[o] = '\0';
}

/* The request head of method path?query (query: canonical, sorted, encoded). */
static int
sign(const char *method, const char *path, const char *query, size_t clen, char *out, size_t len)
{
	char date[20], day[9], canon[4096], sts[512], h[65], sig[65];
	uint8_t d[32], k[32], kd[32], kr[32], ks[32];
	char secret[256];
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(date, sizeof(date), "%Y%m%dT%H%M%SZ", &tm);
	memcpy(day, date, 8);
	day[8] = '\0';
	snprintf(canon, sizeof(canon),
		 "%s\n%s\n%s\nhost:%s\nx-amz-content-sha256:UNSIGNED-PAYLOAD\nx-amz-date:%s\n\n"
		 "host;x-amz-content-sha256;x-amz-date\nUNSIGNED-PAYLOAD",
		 method, path, query, hostport, date);
	SHA256((const unsigned char *)canon, strlen(canon), d);
	hex(d, 32, h);
	snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256\n%s\n%s/%s/s3/aws4_request\n%s", date, day,
		 region, h);
	snprintf(secret, sizeof(secret), "AWS4%s", sk);
	hmac((const uint8_t *)secret, strlen(secret), day, kd);
	hmac(kd, 32, region, kr);
	hmac(kr, 32, "s3", ks);
	hmac(ks, 32, "aws4_request", k);
	hmac(k, 32, sts, d);
	hex(d, 32, sig);
	return snprintf(out, len,
			"%s %s%s%s HTTP/1.1\r\nHost: %s\r\nx-amz-date: %s\r\n"
			"x-amz-content-sha256: UNSIGNED-PAYLOAD\r\n"
			"Authorization: AWS4-HMAC-SHA256 Credential=%s/%s/%s/s3/aws4_request, "
			"SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=%s\r\n"
			"Content-Length: %zu\r\n\r\n",
			method, path, *query ? "?" : "", query, hostport, date, ak, day, region,
			sig, clen);
}

struct conn {
	int fd;
	char *in; /* received, not yet consumed */
	size_t ilen, icap;
	uint8_t *body;
	size_t blen, bcap;
};

static int
conn_open(struct conn *c)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1;

	if (c->fd >= 0)
		close(c->fd);
	c->ilen = 0;
	if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
		return -EINVAL;
	if ((c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c->fd, (struct sockaddr *)&a, sizeof(a)))
		return -errno;
	return 0;
}

static int
send_all(int fd, const void *b, size_t n)
{
	const char *p = b;

	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* More bytes into c->in. */
static int
fill(struct conn *c)
{
	ssize_t r;

	if (c->icap - c->ilen < 65536) {
		size_t nc = c->icap ? c->icap * 2 : 1 << 17;
		char *n = realloc(c->in, nc);

		if (!n)
			return -ENOMEM;
		c->in = n;
		c->icap = nc;
	}
	do
		r = recv(c->fd, c->in + c->ilen, c->icap - c->ilen, 0);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return -EIO;
	c->ilen += (size_t)r;
	return 0;
}

static void
consume(struct conn *c, size_t n)
{
	memmove(c->in, c->in + n, c->ilen - n);
	c->ilen -= n;
}

static int
body_add(struct conn *c, const char *b, size_t n, bool keep)
{
	if (!keep) {
		c->blen += n;
		return 0;
	}
	if (c->blen + n + 1 > c->bcap) {
		size_t nc = (c->blen + n + 1) * 2;
		uint8_t *nb = realloc(c->body, nc);

		if (!nb)
			return -ENOMEM;
		c->body = nb;
		c->bcap = nc;
	}
	memcpy(c->body + c->blen, b, n);
	c->blen += n;
	c->body[c->blen] = '\0';
	return 0;
}

/* Read one response: its status; the body counted (kept when keep). */
static int
response(struct conn *c, bool head, bool keep, int *status)
{
	char *e;
	size_t hl;
	long long cl = -1;
	bool chunked = false;

	c->blen = 0;
	while (!(e = memmem(c->in, c->ilen, "\r\n\r\n", 4)))
		if (fill(c))
			return -EIO;
	hl = (size_t)(e - c->in) + 4;
	*e = '\0';
	if (sscanf(c->in, "HTTP/1.%*c %d", status) != 1)
		return -EIO;
	for (char *l = strstr(c->in, "\r\n"); l; l = strstr(l + 2, "\r\n")) {
		if (!strncasecmp(l + 2, "content-length:", 15))
			cl = strtoll(l + 17, NULL, 10);
		if (!strncasecmp(l + 2, "transfer-encoding:", 18) && strcasestr(l + 2, "chunked"))
			chunked = true;
	}
	consume(c, hl);
	if (head || *status == 204 || *status == 304)
		return 0;
	if (!chunked) {
		size_t want = cl < 0 ? 0 : (size_t)cl;

		while (c->blen < want) {
			size_t n;

			if (!c->ilen && fill(c))
				return -EIO;
			n = c->ilen < want - c->blen ? c->ilen : want - c->blen;
			if (body_add(c, c->in, n, keep))
				return -ENOMEM;
			consume(c, n);
		}
		return 0;
	}
	for (;;) {
		char *nl;
		size_t n;

		while (!(nl = memmem(c->in, c->ilen, "\r\n", 2)))
			if (fill(c))
				return -EIO;
		n = strtoul(c->in, NULL, 16);
		consume(c, (size_t)(nl - c->in) + 2);
		while (c->ilen < n + 2)
			if (fill(c))
				return -EIO;
		if (body_add(c, c->in, n, keep))
			return -ENOMEM;
		consume(c, n + 2);
		if (n == 0)
			return 0; /* (no trailers expected) */
	}
}

/* One request; reconnects once if the kept connection was closed. */
static int
request(struct conn *c, const char *method, const char *path, const char *query, const void *body,
	size_t blen, bool keep, int *status)
{
	char head[2048];

	for (int attempt = 0; attempt < 2; attempt++) {
		int n = sign(method, path, query, blen, head, sizeof(head));

		if ((c->fd < 0 && conn_open(c)) || send_all(c->fd, head, (size_t)n) ||
		    (blen && send_all(c->fd, body, blen)) ||
		    response(c, !strcmp(method, "HEAD"), keep, status)) {
			close(c->fd);
			c->fd = -1;
			continue;
		}
		return 0;
	}
	return -EIO;
}

static void
report_error(struct conn *c, const char *what, int status)
{
	if (atomic_fetch_add(&errors, 1) < 3)
		fprintf(stderr, "s3load: %s: HTTP %d %.300s\n", what, status,
			c->body && c->blen ? (char *)c->body : "");
}

static void *
worker(void *arg)
{
	struct conn c = { .fd = -1 };
	long i;

	(void)arg;
	while ((i = atomic_fetch_add(&next_idx, 1)) < count) {
		char path[1100], key[256], ek[768];
		const char *m = !strcmp(phase, "put")    ? "PUT"
				: !strcmp(phase, "get")  ? "GET"
				: !strcmp(phase, "head") ? "HEAD"
							 : "DELETE";
		double t0 = now_s();
		int st = 0;

		snprintf(key, sizeof(key), "%s%08ld", prefix, i);
		uri_enc(key, true, ek, sizeof(ek));
		snprintf(path, sizeof(path), "/%s/%s", bucket, ek);
		if (request(&c, m, path, "", !strcmp(m, "PUT") ? payload : NULL,
			    !strcmp(m, "PUT") ? size : 0, strcmp(m, "GET") != 0, &st) ||
		    st >= 300) {
			report_error(&c, path, st);
		} else if (!strcmp(m, "GET") && c.blen != size) {
			fprintf(stderr, "s3load: %s: %zu bytes, want %zu\n", path, c.blen, size);
			atomic_fetch_add(&errors, 1);
		}
		lat[i] = now_s() - t0;
	}
	if (c.fd >= 0)
		close(c.fd);
	free(c.in);
	free(c.body);
	return NULL;
}

static int
cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* The text of <tag>...</tag> in b (XML entities of a token undone), or "". */
static void
xml_text(const char *b, const char *tag, char *out, size_t len)
{
	char open[64], close_[64];
	const char *s, *e;
	size_t o = 0;

	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close_, sizeof(close_), "</%s>", tag);
	out[0] = '\0';
	if (!(s = strstr(b, open)) || !(e = strstr(s, close_)))
		return;
	for (s += strlen(open); s < e && o + 1 < len; s++) {
		if (*s == '&') {
			static const struct {
				const char *ent;
				char c;
			} ents[] = { { "&amp;", '&' },
				     { "&lt;", '<' },
				     { "&gt;", '>' },
				     { "&quot;", '"' },
				     { "&apos;", '\'' } };

			size_t j;

			for (j = 0; j < sizeof(ents) / sizeof(ents[0]); j++)
				if (!strncmp(s, ents[j].ent, strlen(ents[j].ent)))
					break;
			if (j < sizeof(ents) / sizeof(ents[0])) {
				out[o++] = ents[j].c;
				s += strlen(ents[j].ent) - 1;
				continue;
			}
		}
		out[o++] = *s;
	}
	out[o] = '\0';
}

static int
list_all(void)
{
	struct conn c = { .fd = -1 };
	char path[300], token[2048] = "", etok[6144], query[6400];
	long keys = 0, pages = 0;
	double t0 = now_s(), first = 0, c0 = cpu_s(), maxl = 0;

	snprintf(path, sizeof(path), "/%s", bucket);
	for (;;) {
		double ts = now_s(), l;
		int st = 0;
		char trunc[16];

		uri_enc(token, false, etok, sizeof(etok));
		if (*token)
			snprintf(query, sizeof(query),
				 "continuation-token=%s&list-type=2&max-keys=1000", etok);
		else
			snprintf(query, sizeof(query), "list-type=2&max-keys=1000");
		if (request(&c, "GET", path, query, NULL, 0, true, &st) || st != 200) {
			report_error(&c, "list", st);
			break;
		}
		l = now_s() - ts;
		if (!pages)
			first = l;
		if (l > maxl)
			maxl = l;
		pages++;
		for (const char *p = (const char *)c.body; (p = strstr(p, "<Key>")); p += 5)
			keys++;
		xml_text((const char *)c.body, "IsTruncated", trunc, sizeof(trunc));
		xml_text((const char *)c.body, "NextContinuationToken", token, sizeof(token));
		if (strcmp(trunc, "true") || !*token)
			break;
	}
	{
		double wall = now_s() - t0;

		printf("{\"phase\": \"list\", \"keys\": %ld, \"expected\": %ld, \"pages\": %ld, "
		       "\"keys_s\": %.0f, \"first_page_ms\": %.2f, \"max_page_ms\": %.2f, "
		       "\"wall_s\": %.2f, \"errors\": %ld, \"client_cpu\": %.2f}\n",
		       keys, count, pages, (double)keys / wall, first * 1e3, maxl * 1e3, wall,
		       (long)atomic_load(&errors), (cpu_s() - c0) / wall);
	}
	if (c.fd >= 0)
		close(c.fd);
	free(c.in);
	free(c.body);
	return keys == count && !atomic_load(&errors) ? 0 : 1;
}

int
main(int argc, char **argv)
{
	const char *colon;
	pthread_t *tids;
	double t0, wall, c0;

	if (argc < 7) {
		fprintf(stderr,
			"usage: s3load HOST:PORT BUCKET PHASE SIZE COUNT THREADS [PREFIX]\n");
		return 2;
	}
	snprintf(hostport, sizeof(hostport), "%s", argv[1]);
	if (!(colon = strrchr(argv[1], ':')))
		return 2;
	host = strndup(argv[1], (size_t)(colon - argv[1]));
	port = (uint16_t)strtoul(colon + 1, NULL, 10);
	bucket = argv[2];
	phase = argv[3];
	size = strtoull(argv[4], NULL, 0);
	count = strtol(argv[5], NULL, 10);
	threads = (int)strtol(argv[6], NULL, 10);
	if (argc > 7)
		prefix = argv[7];
	ak = getenv("AWS_ACCESS_KEY_ID");
	sk = getenv("AWS_SECRET_ACCESS_KEY");
	if (getenv("S3_REGION"))
		region = getenv("S3_REGION");
	if (!ak || !sk) {
		fprintf(stderr,
			"s3load: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set\n");
		return 2;
	}
	if (!strcmp(phase, "mkbucket")) {
		struct conn c = { .fd = -1 };
		char path[300];
		int st = 0;

		snprintf(path, sizeof(path), "/%s", bucket);
		if (request(&c, "PUT", path, "", NULL, 0, true, &st) || (st != 200 && st != 409)) {
			report_error(&c, "create bucket", st);
			return 1;
		}
		return 0;
	}
	if (!strcmp(phase, "list"))
		return list_all();
	if (threads < 1 || count < 1 || !(lat = calloc((size_t)count, sizeof(*lat))) ||
	    !(payload = malloc(size ? size : 1)) ||
	    !(tids = calloc((size_t)threads, sizeof(*tids))))
		return 2;
	for (size_t i = 0; i < size; i++)
		payload[i] = (uint8_t)(rand() >> 7);
	c0 = cpu_s();
	t0 = now_s();
	for (int i = 0; i < threads; i++)
		pthread_create(&tids[i], NULL, worker, NULL);
	for (int i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	wall = now_s() - t0;
	qsort(lat, (size_t)count, sizeof(*lat), cmpd);
	printf("{\"phase\": \"%s\", \"size\": %zu, \"n\": %ld, \"threads\": %d, \"ops_s\": %.1f, "
	       "\"mib_s\": %.1f, \"p50_ms\": %.2f, \"p99_ms\": %.2f, \"max_ms\": %.2f, "
	       "\"errors\": %ld, \"wall_s\": %.2f, \"client_cpu\": %.2f}\n",
	       phase, size, count, threads, (double)count / wall,
	       (double)count * (double)size / wall / 1048576.0, lat[count / 2] * 1e3,
	       lat[(size_t)((double)count * 0.99)] * 1e3, lat[count - 1] * 1e3,
	       (long)atomic_load(&errors), wall, (cpu_s() - c0) / wall);
	return atomic_load(&errors) ? 1 : 0;
}
