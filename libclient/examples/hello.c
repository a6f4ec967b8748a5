/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A first libcairn program: built against the installed library only
 *
 *   cc hello.c $(pkg-config --cflags --libs cairn) -o hello
 *   ./hello /path/to/cairn.conf [pool]
 *
 * It writes an object, reads it back, stats, lists the pool (and finds the
 * object), writes a stream and removes both. Exit status 0 when every step
 * gave what it should; otherwise the failing step and its error.
 */
#include <cairn/cairn.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
check(const char *step, int rc)
{
	if (rc < 0)
		fprintf(stderr, "hello: %s: %s\n", step, strerror(-rc));
	return rc;
}

static int
find_in_pool(cairn_ioctx_t *io, const char *oid)
{
	struct cairn_list_cursor cur = { 0 };
	int found = 0, rc = 0;

	while (!cur.done && !rc) {
		char **names;
		size_t n;

		rc = cairn_list(io, &cur, 100, &names, &n);
		if (rc)
			break;
		for (size_t i = 0; i < n; i++)
			found += !strcmp(names[i], oid);
		cairn_names_free(names, n);
	}
	cairn_list_cursor_fini(&cur);
	return rc ? rc : found == 1 ? 0 : -ENOENT;
}

int
main(int argc, char **argv)
{
	static const char msg[] = "hello, cairn";
	struct cairn_opts o;
	struct cairn_version ver;
	cairn_cluster_t *cl;
	cairn_ioctx_t *io;
	cairn_stream_t *s;
	char err[256], buf[64];
	uint64_t size = 0;
	int64_t got;
	int rc;

	if (argc < 2) {
		fprintf(stderr, "usage: hello CAIRN_CONF [POOL]\n");
		return 2;
	}
	cairn_opts_init(&o, sizeof(o));
	o.conf_file = argv[1];
	o.op_timeout_ms = 30000;
	if ((rc = cairn_connect(&o, &cl, err, sizeof(err)))) {
		fprintf(stderr, "hello: connect: %s (%s)\n", strerror(-rc), err);
		return 1;
	}
	rc = check("ioctx", cairn_ioctx_create(cl, argc > 2 ? argv[2] : "default", &io));
	if (rc) {
		cairn_shutdown(cl);
		return 1;
	}
	if (!(rc = check("write", cairn_write_full(io, "hello-obj", msg, sizeof(msg) - 1)))) {
		got = cairn_read(io, "hello-obj", buf, sizeof(buf), 0);
		if (got != (int64_t)sizeof(msg) - 1 || memcmp(buf, msg, sizeof(msg) - 1))
			rc = check("read back", got < 0 ? (int)got : -EIO);
	}
	if (!rc && !(rc = check("stat", cairn_stat(io, "hello-obj", &size, &ver))) &&
	    size != sizeof(msg) - 1)
		rc = check("stat size", -EIO);
	if (!rc)
		rc = check("list", find_in_pool(io, "hello-obj"));
	if (!rc && !(rc = check("stream open", cairn_stream_open(io, "hello-stream",
								 CAIRN_STREAM_CREATE, NULL, &s)))) {
		rc = check("stream write", cairn_stream_write(s, 5u << 20, msg, sizeof(msg) - 1));
		if (!rc && !(rc = check("stream stat", cairn_stream_stat(s, &size))) &&
		    size != (5u << 20) + sizeof(msg) - 1)
			rc = check("stream size", -EIO);
		cairn_stream_close(s);
		if (!rc)
			rc = check("stream remove", cairn_stream_remove(io, "hello-stream"));
	}
	if (!rc)
		rc = check("remove", cairn_remove(io, "hello-obj"));
	if (!rc)
		printf("hello: wrote, read, listed and removed an object and a stream (map epoch "
		       "%llu)\n",
		       (unsigned long long)cairn_map_epoch(cl));
	cairn_ioctx_destroy(io);
	cairn_shutdown(cl);
	return rc ? 1 : 0;
}
