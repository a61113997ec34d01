#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# big_manifest.py: a stapled manifest of COUNT OCSP records, or of about BYTES
# bytes, fast (tests/integration/t_ctl_scale.sh, tools/bench ctl).
#
# Usage: big_manifest.py TEMPLATE.der OUT (--count N | --bytes N)
#   TEMPLATE.der: an OCSP request for serial 0x10000000 (openssl ocsp
#   -issuer CA.pem -serial 0x10000000 -no_nonce -reqout ...): each record
#   is that request with the serial 0x10000000 + i, laid out as staplectl
#   manifest writes a record (JSON, indent 2). The records' "key" is not
#   read by fetch (it derives keys from the requests) and is left a
#   placeholder of the right length.
import base64
import hashlib
import sys

SERIAL = b"\x02\x04\x10\x00\x00\x00"


def record(tmpl, at, i):
    der = tmpl[:at + 2] + (0x10000000 + i).to_bytes(4, "big") + tmpl[at + 6:]
    key = hashlib.sha256(der).hexdigest()
    return ('    {\n      "key": "%s",\n      "hash": "sha1",\n'
            '      "request": "%s",\n      "subject": "CN=device %d",\n'
            '      "chain": "device"\n    }' %
            (key, base64.b64encode(der).decode(), i))


def main():
    if len(sys.argv) != 5 or sys.argv[3] not in ("--count", "--bytes"):
        sys.exit("usage: big_manifest.py TEMPLATE.der OUT (--count N | --bytes N)")
    tmpl = open(sys.argv[1], "rb").read()
    at = tmpl.find(SERIAL)
    if at < 0 or tmpl.find(SERIAL, at + 1) >= 0:
        sys.exit("big_manifest.py: the template's serial is not 0x10000000, once")
    limit = int(sys.argv[4])
    head = ('{\n  "format": "stapled-manifest",\n  "version": 1,\n'
            '  "created": "2026-01-01T00:00:00Z",\n'
            '  "generator": "big_manifest.py",\n  "ocsp": [\n')
    tail = '\n  ],\n  "rim": [],\n  "certs": []\n}\n'
    parts, size, i = [], len(head) + len(tail), 0
    while True:
        r = record(tmpl, at, i)
        if sys.argv[3] == "--count" and i == limit:
            break
        if sys.argv[3] == "--bytes" and size + len(r) + 2 > limit:
            break
        parts.append(r)
        size += len(r) + 2
        i += 1
    with open(sys.argv[2], "w") as f:
        f.write(head + ",\n".join(parts) + tail)
    print(i)


main()
