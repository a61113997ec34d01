#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Hold an LMDB store's write lock, as a long import would: begin a write
transaction on DIR, print "held", and keep it until stdin closes; then
abort it (nothing written) and exit. With --read, hold a read transaction
instead, as a hung reader (a staplectl stopped mid-export) would: the
snapshot it names keeps every page freed after it from reuse. Uses the
system's liblmdb."""
import ctypes
import sys

MDB_NOTLS = 0x200000
MDB_RDONLY = 0x20000


def main():
    lib = ctypes.CDLL("liblmdb.so.0")
    env = ctypes.c_void_p()
    txn = ctypes.c_void_p()
    if lib.mdb_env_create(ctypes.byref(env)) != 0:
        sys.exit("mdb_env_create failed")
    lib.mdb_env_set_maxdbs(env, 8)
    lib.mdb_env_set_mapsize(env, ctypes.c_size_t(1 << 30))
    read = sys.argv[1] == "--read"
    path = sys.argv[2] if read else sys.argv[1]
    rc = lib.mdb_env_open(env, path.encode(), MDB_NOTLS, 0o660)
    if rc != 0:
        sys.exit("mdb_env_open %s: %d" % (path, rc))
    rc = lib.mdb_txn_begin(env, None, MDB_RDONLY if read else 0,
                           ctypes.byref(txn))
    if rc != 0:
        sys.exit("mdb_txn_begin: %d" % rc)
    print("held", flush=True)
    sys.stdin.read()
    lib.mdb_txn_abort(txn)
    lib.mdb_env_close(env)


if __name__ == "__main__":
    main()
