#!/usr/bin/env python3
"""Extracts the raw inputs of the solana-core@1.0.3 pack from the shared research data.

Run once when the pack was assembled; the committed files under fixtures/packs/ are the source of
truth and `skilltrial pack verify` checks them against their recorded SHA-256. Re-running this
script must reproduce them byte for byte (it writes nothing else).

usage: python3 scripts/extract-pack-inputs.py [../shared/data/solana]
"""
import base64
import json
import pathlib
import sys

DATA = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/solana")
PACK = pathlib.Path(__file__).resolve().parent.parent / "fixtures/packs/solana-core@1.0.3/tasks"

def load(name):
    return json.loads((DATA / name).read_text())

def write(task, name, data):
    path = PACK / task / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    print(f"{path.relative_to(PACK.parent)}: {len(data)} bytes")

usdc = load("account_usdc_mint_mainnet__dfinity-sol-rpc-canister.json")
write("acct-usdc-mint", "input.bin", base64.b64decode(usdc["account"]["data_base64"]))

fzyeg = load("account_token2022_mint_FZYEg_mainnet__p2p-solana-swift.json")
write("acct-t22-fzyeg-mint", "input.bin", base64.b64decode(fzyeg["data_base64"]))

# The `result` object of getTransaction(base64), compact, keys in the order the RPC sent them.
for task, name in [
    ("tx-legacy-nonce-bonk", "tx_legacy_mainnet_nonce_bonk_transfer_66iwZv__cordialsys-crosschain.json"),
    ("tx-v0-alt-usdc", "tx_v0_mainnet_alt_usdc_2aoWC4__cordialsys-crosschain.json"),
]:
    result = load(name)["result"]
    write(task, "input.json", json.dumps(result, separators=(",", ":")).encode() + b"\n")
