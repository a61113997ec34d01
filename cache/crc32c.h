/* SPDX-License-Identifier: Apache-2.0 */
/* CRC-32C (Castagnoli), the records' checksum: the x86 instruction where the CPU has it, tables elsewhere. */
#ifndef CACHE_CRC32C_H
#define CACHE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/*
 * The CRC-32C of len bytes at p, continuing from crc (0 to start; the
 * result of the previous part to go on): iSCSI's CRC (RFC 3720 B.4), so
 * crc32c(0, "123456789", 9) is 0xe3069283. Safe on any thread.
 */
uint32_t	crc32c(uint32_t crc, const void *p, size_t len);

#endif
