/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the erasure-coded backend's files (backend/ec*.c) share: reads of
 * stripes from k shards. Reactor thread only.
 */
#ifndef OSD_BACKEND_EC_H
#define OSD_BACKEND_EC_H

#include "osd_int.h"

#define OSD_EC_IMAGE_MAX  (64ull << 20) /* the stripes one compound op may rewrite */
#define OSD_EC_GATHER_MAX 2048u         /* stripes sent as slices of the image, at most */
typedef void (*osd_ecr_cb)(struct osd_ecr *r, int rc);

struct osd_ecr {
	TAILQ_ENTRY(osd_ecr) link; /* on osd->ecrs while it runs */
	struct osd *osd;
	struct osd_pg *pg;
	char oid[OSD_NAME_MAX + 1];
	struct osd_ver ver; /* every shard must hold this version */
	uint64_t s0, ns;    /* stripes [s0, s0 + ns) */
	uint8_t *buf[OSD_EC_MAX_SHARDS];
	int32_t osd_of[OSD_EC_MAX_SHARDS];
	uint64_t tid[OSD_EC_MAX_SHARDS];
	uint32_t avail, asked, have, failed;
	unsigned local_pending; /* store reads that will call back (and holds) */
	bool finished;
	bool stepping, again;
	int rc;
	osd_ecr_cb cb;
	void *arg;
	struct cm_buf *out; /* ns whole stripes, logical order */
	/* recovery (osd__ec_fetch_shard) */
	bool any;        /* no version given: the shards read must agree */
	bool want_attrs; /* the first shard read sends the attributes */
	int tshard;      /* rebuild this shard's bytes (-1: none) */
	uint32_t need;   /* a small read: only these data shards (0: any k) */
	uint32_t skip;   /* shards not to read */
	struct os_kv *attrs;
	size_t nattrs;
	uint64_t lsize; /* the object's size, from the "s" attribute */
	bool got_meta;
	/* the caller's */
	unsigned idx;
	uint64_t uoff, ulen;
};

/* An EC write in progress (op->ecw). */
struct osd_ecw {
	uint64_t d0, d1;    /* stripes the image holds */
	struct cm_buf *img; /* their new bytes, logical order */
	unsigned reads;     /* old stripes being read */
	int rc;
	bool reset; /* the object was emptied (writefull, remove) */
	bool exists_end;
	uint64_t size_end;
	struct cm_sgl data[OSD_EC_MAX_SHARDS]; /* each shard's bytes */
};

/* ---------- backend/ec_read.c ---------- */

unsigned osd__self_shard(struct osd_pg *pg);

/* A read of stripes [s0, s0 + ns) of oid (version ver); set the caller's
 * fields, then osd__ecr_run. cb is called once, on the reactor (maybe from osd__ecr_run). */
struct osd_ecr *osd__ecr_new(struct osd_pg *pg, const char *oid, const struct osd_ver *ver,
			     uint64_t s0, uint64_t ns, osd_ecr_cb cb, void *arg);

void osd__ecr_run(struct osd_ecr *r);

/* ---------- backend/ec_write.c ---------- */

void osd__old_read_done(struct osd_ecr *r, int rc);

#endif
