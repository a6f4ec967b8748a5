/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What libcairn reads from the cluster before handing results to its
 * caller (libclient/src/client.c): the map the monitors send (taken as the
 * client takes it: its pool table and placement, and an op targeted in
 * it), then an OSD's answer to the op -- an OSD_OP_REPLY whose front and
 * data segment fill the op's outputs, or a PG_LIST_REPLY to a listing.
 *
 * Input: byte 0: bit 0 list reply (else op reply), bits 1-7 the sub-ops
 * the op has (read, stat, getxattr, getxattrs, omap_get, omap_list,
 * omap_get_header; none: a read); byte 1: the caller's buffer sizes; then
 * le16 length + the map (protobuf OsdMap; undecodable: a small map made
 * here), le16 length + the reply's front, and the rest is its data segment.
 */
#include "../../libclient/src/client_int.h"
#include "mon/osdmap.h"
#include "osd/proto.h"
#include "cm/log.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static Cairn__Map__OsdMap *g_map; /* when the input's map does not decode */

/* A map with three OSDs up and in, on three hosts, and a replicated pool of 8 PGs. */
static Cairn__Map__OsdMap *
small_map(void)
{
	Cairn__Map__OsdMap *m;
	char err[MON_ERRLEN], uuid[40], addr[40], host[8];
	struct mon_pool_spec s = { .name = "rbd", .pg_num = 8 };
	int64_t pid;

	if (mon_map_initial("fsid", &m))
		return NULL;
	for (int i = 0; i < 3; i++) {
		struct mon_osd_boot b = { .id = -1, .uuid = uuid, .addr = addr, .host = host };
		int32_t id;

		snprintf(uuid, sizeof(uuid), "00000000-0000-0000-0000-00000000000%d", i);
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", 6800 + i);
		snprintf(host, sizeof(host), "h%d", i);
		mon_osd_boot(m, &b, &id, err);
	}
	mon_pool_create(m, &s, &pid, err);
	return m;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	cm_log_set_file("/dev/null");
	g_map = small_map();
	if (g_map)
		g_map->epoch = UINT64_MAX; /* see cairn__reply_decode */
	return 0;
}

static size_t
le16(const uint8_t *p)
{
	return (size_t)p[0] | (size_t)p[1] << 8;
}

/* Append a copy of p[0, n) to s in two slices (a reply's data may arrive in pieces). */
static int
sgl_put(struct cm_sgl *s, const uint8_t *p, size_t n)
{
	size_t half = n / 2;
	struct cm_buf *b;
	int rc;

	if (!n)
		return 0;
	if (half && sgl_put(s, p, half))
		return -ENOMEM;
	if (cm_buf_alloc(n - half, &b))
		return -ENOMEM;
	memcpy(b->data, p + half, n - half);
	rc = cm_sgl_append(s, b, 0, n - half);
	cm_buf_put(b);
	return rc;
}

static size_t
touch(const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t sum = 0;

	for (size_t i = 0; p && i < n; i++)
		sum += b[i];
	return sum;
}

static size_t
touch_kvs(struct cairn_kv *kvs, size_t n)
{
	size_t sum = 0;

	for (size_t i = 0; kvs && i < n; i++)
		sum += touch(kvs[i].key, kvs[i].klen + 1) + touch(kvs[i].val, kvs[i].vlen + 1);
	cairn_kvs_free(kvs, n);
	return sum;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Cairn__Map__OsdMap *in = NULL;
	const Cairn__Map__OsdMap *map;
	unsigned subs = data[0] >> 1;
	size_t ml, fl, pos = 4, got = 0, xlen = 0, nx = 0, nk = 0, nl = 0, nnames = 0, sum = 0;
	uint8_t rbuf[16384], xbuf[64];
	char kname[] = "k";
	struct cairn_kv key = { .key = kname, .klen = 1 }, *xkvs = NULL, *okvs = NULL, *lkvs = NULL,
			header = { 0 };
	struct cairn_version ver = { 0, 0 };
	uint64_t osize = 0;
	int rv[10] = { 0 };
	struct cairn_lock_info li = { 0 };
	struct cairn_notify_result nres = { 0 };
	struct cairn_watcher *wl = NULL;
	size_t nw = 0;
	bool more = false, lmore = false;
	char **names = NULL;
	struct cm_msg *m;
	cairn_op_t *op;
	int64_t pool = 1;

	if (size < 4 || size > 65536)
		return 0;
	ml = le16(data + 2);
	if (ml > size - pos)
		return 0;
	in = cairn__map__osd_map__unpack(NULL, ml, data + pos);
	pos += ml;
	if (in)
		in->epoch = UINT64_MAX; /* see cairn__reply_decode */
	map = in ? in : g_map;
	if (!map || size - pos < 2 || le16(data + pos) > size - pos - 2)
		goto out;
	fl = le16(data + pos);
	pos += 2;
	if (map->n_pools)
		pool = map->pools[0]->id;
	if (cm_msg_create(data[0] & 1 ? OSD_MSG_PG_LIST_REPLY : OSD_MSG_OP_REPLY, 1, &m))
		goto out;
	if (sgl_put(&m->front, data + pos, fl) ||
	    sgl_put(&m->data, data + pos + fl, size - pos - fl)) {
		cm_msg_destroy(m);
		goto out;
	}
	op = cairn_op_create();
	if (!op) {
		cm_msg_destroy(m);
		goto out;
	}
	if (!subs || subs & 1)
		cairn_op_read(op, 0, 1 + (size_t)data[1] * 64, rbuf, &got, &rv[0]);
	if (subs & 2)
		cairn_op_stat(op, &osize, &ver, &rv[1]);
	if (subs & 4)
		cairn_op_getxattr(op, "a", xbuf, data[1] % sizeof(xbuf), &xlen, &rv[2]);
	if (subs & 8)
		cairn_op_getxattrs(op, &xkvs, &nx, &rv[3]);
	if (subs & 16)
		cairn_op_omap_get(op, &key, 1, &okvs, &nk, &rv[4]);
	if (subs & 32)
		cairn_op_omap_list(op, NULL, 0, "", 0, 16, &lkvs, &nl, &more, &rv[5]);
	if (subs & 64)
		cairn_op_omap_get_header(op, &header, &rv[6]);
	if (data[1] & 1)
		cairn_op_lock_info(op, "l", &li, &rv[7]);
	if (data[1] & 2)
		cairn_op_notify(op, "p", 1, 1000, &nres, &rv[8]);
	if (data[1] & 4)
		cairn_op_list_watchers(op, &wl, &nw, &rv[9]);
	(void)cairn__reply_decode(map, pool, "obj", 0, op, m, &names, &nnames, &lmore);
	/* Whatever the op says it returned must be there to read. */
	sum += touch(rbuf, got) + (size_t)osize + ver.epoch + ver.seq;
	if (subs & 4 && !rv[2])
		sum += touch(xbuf, xlen);
	sum += touch_kvs(xkvs, nx) + touch_kvs(okvs, nk) + touch_kvs(lkvs, nl);
	sum += touch(header.val, header.val ? header.vlen + 1 : 0);
	free(header.val);
	sum += touch(li.tag, li.tag ? strlen(li.tag) : 0);
	for (size_t i = 0; i < li.n; i++)
		sum += touch(li.lockers[i].entity, strlen(li.lockers[i].entity)) +
		       touch(li.lockers[i].cookie, strlen(li.lockers[i].cookie)) +
		       touch(li.lockers[i].description, strlen(li.lockers[i].description)) +
		       (size_t)li.lockers[i].expires_ns;
	cairn_lock_info_free(&li);
	for (size_t i = 0; i < nres.nacks; i++)
		sum += touch(nres.acks[i].entity, strlen(nres.acks[i].entity)) +
		       touch(nres.acks[i].data, nres.acks[i].len) + (size_t)nres.acks[i].cookie;
	for (size_t i = 0; i < nres.ntimeouts; i++)
		sum += touch(nres.timeouts[i].entity, strlen(nres.timeouts[i].entity));
	cairn_notify_result_free(&nres);
	for (size_t i = 0; i < nw; i++)
		sum += touch(wl[i].entity, strlen(wl[i].entity)) + wl[i].timeout_ms;
	cairn_watchers_free(wl, nw);
	for (size_t i = 0; i < nnames; i++)
		sum += touch(names[i], strlen(names[i]));
	cairn_names_free(names, nnames);
	cairn_op_release(op);
	__asm__ volatile("" : : "r"(sum));
out:
	if (in)
		cairn__map__osd_map__free_unpacked(in, NULL);
	return 0;
}
