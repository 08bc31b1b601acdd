#!/usr/bin/env python3
"""Print the fields of an 82-byte SPL Token mint given as base64 (maintainer helper)."""
import base64, struct, sys

B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

def b58(b):
    n, s = int.from_bytes(b, "big"), ""
    while n:
        n, r = divmod(n, 58)
        s = B58[r] + s
    return "1" * (len(b) - len(b.lstrip(b"\0"))) + s

def key(d, off):
    return b58(d[off + 4:off + 36]) if struct.unpack_from("<I", d, off)[0] == 1 else None

d = base64.b64decode(sys.argv[1])
print({"mint_authority": key(d, 0), "supply": str(struct.unpack_from("<Q", d, 36)[0]),
       "decimals": d[44], "is_initialized": d[45] == 1, "freeze_authority": key(d, 46)})
