/* SPDX-License-Identifier: Apache-2.0 */
/* LMDB's on-disk page format, as far as the store's checks and the salvage scan read it (lmdb's mdb.c, version 1 files). */
#ifndef CACHE_LMDB_DISK_H
#define CACHE_LMDB_DISK_H

#define LMDB_DISK_MAGIC		0xBEEFC0DEu	/* MDB_MAGIC, in each meta page */
#define LMDB_DISK_VERSION	1		/* MDB_DATA_VERSION */
#define LMDB_DISK_PAGE_HDR_BYTES 16		/* pgno, pad, flags, lower, upper */
#define LMDB_DISK_MIN_PSIZE	512
#define LMDB_DISK_MAX_PSIZE	65536
/* A page header's flags (mp_flags). */
#define LMDB_DISK_P_BRANCH	0x01
#define LMDB_DISK_P_LEAF	0x02
#define LMDB_DISK_P_OVERFLOW	0x04
#define LMDB_DISK_P_META	0x08
#define LMDB_DISK_P_LEAF2	0x20
#define LMDB_DISK_P_SUBP	0x40

#endif
