"""Shared extraction for scripts/make-pack-2.py: finds the raw account data and the saved
getTransaction result in one file of ../shared/data/solana, whatever wrapper its source used."""
import base64, json, subprocess

def walk(x, path=()):
    yield path, x
    if isinstance(x, dict):
        for k, v in x.items():
            yield from walk(v, path + (k,))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from walk(v, path + (i,))

def account(doc):
    """(data bytes, owner or None, lamports or None, pubkey or None, slot or None)."""
    data = owner = lamports = pubkey = slot = None
    for path, v in walk(doc):
        if path and path[0] in ('decoded_by_research_script', 'test_expectations_in_source', 'expected_addresses_in_source'):
            continue
        if isinstance(v, list) and len(v) == 2 and v[1] == 'base64' and isinstance(v[0], str) and data is None:
            data = base64.b64decode(v[0])
        if isinstance(v, list) and len(v) == 2 and v[1] == 'base64+zstd' and data is None:
            raw = base64.b64decode(v[0])
            data = subprocess.run(['zstd', '-d', '-c'], input=raw, capture_output=True, check=True).stdout
        if path and path[-1] == 'data_base64' and isinstance(v, str) and data is None:
            data = base64.b64decode(v)
        if path and path[-1] == 'owner' and isinstance(v, str) and owner is None and len(v) > 30:
            owner = v
        if path and path[-1] == 'lamports' and isinstance(v, int) and lamports is None:
            lamports = v
        if path and path[-1] == 'pubkey' and isinstance(v, str) and pubkey is None:
            pubkey = v
        if path and path[-1] == 'slot' and isinstance(v, int) and slot is None:
            slot = v
    return data, owner, lamports, pubkey, slot

def tx_result(doc):
    """The getTransaction result object (has transaction and meta)."""
    for path, v in walk(doc):
        if isinstance(v, dict) and 'transaction' in v and 'meta' in v:
            return path, v
    return None, None
