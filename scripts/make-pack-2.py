#!/usr/bin/env python3
"""Writes the task.json and input files of fixtures/packs/solana-core@2.0.0 from the real data in
../shared/data/solana (a maintainer's step, run once per pack version; the result is committed).

Then `skilltrial pack build fixtures/packs/solana-core@2.0.0` generates every golden.json with the
decoder and every wrong.json (known-wrong answers with the checker's exact verdicts), verifies the
pack and prints its hash, which core/src/pack/mod.rs pins.

Transactions saved in `json` encoding are re-encoded to the wire bytes (base64) they were signed
as; this script refuses any whose Ed25519 signatures do not verify over the rebuilt message, so the
bytes in the pack are exactly the signed ones.

Usage: python3 scripts/make-pack-2.py ../shared/data/solana fixtures/packs/solana-core@2.0.0
"""
import base64, hashlib, json, os, subprocess, sys

# --- Finding the raw account data and the saved getTransaction result in one data file,
# whatever wrapper its source used.

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


B58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'
TOKEN = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA'
TOKEN22 = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb'
SYSTEM = '11111111111111111111111111111111'
STAKE = 'Stake11111111111111111111111111111111111111'
ALT = 'AddressLookupTab1e1111111111111111111111111'


def b58decode(s):
    n = 0
    for c in s:
        n = n * 58 + B58.index(c)
    raw = n.to_bytes((n.bit_length() + 7) // 8, 'big') if n else b''
    return b'\0' * (len(s) - len(s.lstrip('1'))) + raw


def b58encode(b):
    n = int.from_bytes(b, 'big')
    out = ''
    while n:
        n, r = divmod(n, 58)
        out = B58[r] + out
    return '1' * (len(b) - len(b.lstrip(b'\0'))) + out


def compact(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def wire_from_json(tx, version):
    """The signed bytes of a `json`-encoded transaction: signatures, then the message."""
    m = tx['message']
    msg = bytearray()
    if version == 0:
        msg.append(0x80)
    h = m['header']
    msg += bytes([h['numRequiredSignatures'], h['numReadonlySignedAccounts'], h['numReadonlyUnsignedAccounts']])
    msg += compact(len(m['accountKeys']))
    for k in m['accountKeys']:
        msg += b58decode(k).rjust(32, b'\0')
    msg += b58decode(m['recentBlockhash']).rjust(32, b'\0')
    msg += compact(len(m['instructions']))
    for ix in m['instructions']:
        msg.append(ix['programIdIndex'])
        msg += compact(len(ix['accounts'])) + bytes(ix['accounts'])
        data = b58decode(ix['data'])
        msg += compact(len(data)) + data
    if version == 0:
        lookups = m.get('addressTableLookups') or []
        msg += compact(len(lookups))
        for l in lookups:
            msg += b58decode(l['accountKey']).rjust(32, b'\0')
            msg += compact(len(l['writableIndexes'])) + bytes(l['writableIndexes'])
            readonly = l['readonlyIndexes'] if 'readonlyIndexes' in l else l['readableIndexes']  # MetaMask's name
            msg += compact(len(readonly)) + bytes(readonly)
    sigs = [b58decode(s).rjust(64, b'\0') for s in tx['signatures']]
    return bytes(compact(len(sigs)) + b''.join(sigs) + msg), bytes(msg), sigs, m['accountKeys']


def read_compact(buf, at):
    """A compact-u16 at `at`: (value, the offset after it)."""
    value, shift = 0, 0
    while True:
        b = buf[at]
        at += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, at


def verify_signatures(wire):
    """Every signature over the message, by the first num_required_signatures keys."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    count, i = read_compact(wire, 0)
    sigs = [wire[i + 64 * k: i + 64 * (k + 1)] for k in range(count)]
    msg = wire[i + 64 * count:]
    j = 1 if msg[0] & 0x80 else 0
    required = msg[j]
    nkeys, j = read_compact(msg, j + 3)
    keys = [msg[j + 32 * k: j + 32 * (k + 1)] for k in range(nkeys)]
    assert required == count, 'signature count differs from the header'
    for sig, key in zip(sigs, keys[:required]):
        Ed25519PublicKey.from_public_bytes(key).verify(sig, msg)  # raises on a bad signature
    return b58encode(sigs[0])


COMMON = ('Answer with exactly one JSON object, optionally inside one ```json fenced block, and nothing that could be '
          'read as a second answer. Extra explanatory fields (such as "notes") are allowed and ignored. If you cannot do '
          'the task without running a script, a binary or a network call, answer {"unsupported": {"needs": "script" | '
          '"binary" | "network" | "other", "reason": "..."}} instead.')

TOKEN_FIELDS = '''Fields, by what the account is:
- "account_type": "mint", "token_account" or "multisig"; "program": "spl-token" or "spl-token-2022" (the owning program)
- a mint: "mint_authority" (base58 address, or null when there is none), "supply" (raw atomic units, decimal string), "decimals" (integer), "is_initialized" (true or false), "freeze_authority" (address or null)
- a token account: "mint", "owner" (addresses), "amount" (decimal string), "delegate" (address or null), "state" ("uninitialized", "initialized" or "frozen"), "is_native" (the rent-exempt reserve of a native SOL account as a decimal string, else null), "delegated_amount" (decimal string), "close_authority" (address or null)
- a multisig: "m" and "n" (integers), "is_initialized" (true or false), "signers" (the first n signer addresses, in order)
- "extensions" (spl-token-2022 mints and token accounts only): one object per TLV extension (in any order), each {"type": snake_case extension name, ...its fields}:
  - transfer_fee_config: "transfer_fee_config_authority" and "withdraw_withheld_authority" (address or null), "withheld_amount" (decimal string), "older_transfer_fee" and "newer_transfer_fee", each {"epoch": decimal string, "maximum_fee": decimal string, "transfer_fee_basis_points": integer}
  - interest_bearing_config: "rate_authority" (address or null), "initialization_timestamp", "pre_update_average_rate", "last_update_timestamp", "current_rate" (integers)
  - default_account_state: "state" ("uninitialized", "initialized" or "frozen")
  - mint_close_authority: "close_authority" (address or null); permanent_delegate: "delegate" (address or null)
  - any other extension (transfer_fee_amount, immutable_owner, memo_transfer, non_transferable, cpi_guard, transfer_hook, metadata_pointer, token_metadata, group_pointer, ...): {"type": name} is enough'''

NONCE_FIELDS = '''Fields:
- "account_type": "nonce"; "program": "system"
- "version": "legacy" or "current"; "state": "uninitialized" or "initialized"
- when initialized: "authority" (base58 address), "durable_nonce" (the stored blockhash, base58), "lamports_per_signature" (decimal string)'''

STAKE_FIELDS = '''Fields:
- "account_type": "stake"; "program": "stake"
- "state": "uninitialized", "initialized", "delegated" or "rewards_pool"
- when initialized or delegated: "rent_exempt_reserve" (decimal string), "stake_authority" and "withdraw_authority" (addresses), "lockup": {"unix_timestamp": integer, "epoch": decimal string, "custodian": address}
- when delegated, also: "delegation": {"voter": the vote account, "stake", "activation_epoch", "deactivation_epoch" (decimal strings; u64::MAX as its decimal value)}, "credits_observed" (decimal string), "stake_flags" (integer)'''

ALT_FIELDS = '''Fields:
- "account_type": "lookup_table"; "program": "address-lookup-table"
- "authority": base58 address, or null when the table is frozen (no authority)
- "deactivation_slot" (decimal string; 18446744073709551615 when never deactivated), "deactivated" (true when a deactivation was started)
- "last_extended_slot" (decimal string), "last_extended_slot_start_index" (integer)
- "addresses": every stored address, in order'''

TX_FIELDS = '''Fields:
- "signature": the transaction id (base58 of the first signature)
- "version": "legacy" or 0
- "success": true when the transaction succeeded (a failed transaction still pays its fee)
- "fee_lamports": the fee paid, as a decimal string
- "signers": the addresses that signed
- "instructions": the top-level instructions in order, each {"program_id": address, "program": short name or null, "instruction": snake_case name or null, "accounts": [the instruction's accounts in order, as addresses], "args": {decoded arguments}}.
  Decode these programs: system (create_account {"lamports", "space", "owner"}, assign {"owner"}, transfer {"lamports"}, create_account_with_seed {"base", "seed", "lamports", "space", "owner"}, advance_nonce_account {}, withdraw_nonce_account {"lamports"}, allocate {"space"}); spl-token and spl-token-2022 (initialize_account {}, transfer {"amount"}, mint_to {"amount"}, burn {"amount"}, close_account {}, transfer_checked {"amount", "decimals"}, burn_checked {"amount", "decimals"}, sync_native {}, initialize_account3 {"owner"}, and on spl-token-2022 transfer_checked_with_fee {"amount", "decimals", "fee"}); spl-associated-token-account (create {}, create_idempotent {}, recover_nested {}); compute-budget (request_heap_frame {"bytes"}, set_compute_unit_limit {"units"}, set_compute_unit_price {"micro_lamports"}, set_loaded_accounts_data_size_limit {"bytes"}); spl-memo (memo {"memo"}). Short program names: system, spl-token, spl-token-2022, spl-associated-token-account, compute-budget, spl-memo, address-lookup-table, stake. u64 values are decimal strings, u8/u32 values integers. For any other program give "program": null, "instruction": null and "args": {}.'''

PLAN_FIELDS = '''Fields:
- "mint": the mint address; "token_program": the program that owns the mint; "decimals": integer
- "source_token_account": the sender's associated token account
- "destination_token_account": the recipient's associated token account
- "authority": the address that must sign the transfer
- "amount_atomic": the amount in atomic units, as a decimal string
- "fee_atomic": only when the mint charges a transfer fee: the fee withheld from this transfer at the current epoch, as a decimal string
- "instructions": exactly the instructions the transaction needs, each {"program_id": address, "instruction": snake_case name, "accounts": [addresses in order], "args": {...}}:
  - transfer_checked: accounts [source, mint, destination, authority], args {"amount": decimal string, "decimals": integer}
  - transfer_checked_with_fee: the same accounts, args {"amount", "decimals", "fee"}
  - memo: program MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr, no accounts, args {"memo": text}, before the transfer
Do not sign and do not send: no signatures, no signed or serialized transaction, no send step. Add no instruction the task does not require (no account creation, no compute budget).'''

NETWORK_WORDS = {
    'mainnet': 'Solana mainnet',
    'devnet': 'Solana devnet',
    'local': 'a local Solana test validator',
    'unknown': 'a Solana cluster its source does not name',
}

# id, data file, network, title, note for provenance
ACCOUNTS = [
    ('acct-usdc-mint-current', 'account_usdc_mint_mainnet__dfinity-sol-rpc-canister.json', 'mainnet',
     'Interpret the USDC mint', 'The mainnet cluster is stated in the source (a doc comment); no slot is given. Data was base64+zstd in the source; the decompressed 82 bytes are the input.'),
    ('acct-usdc-mint-2022', 'account_usdc_mint_2022_old_authorities_mainnet__p2p-solana-swift.json', 'mainnet',
     'Interpret the USDC mint as it was in 2022 (old authorities)', 'Cluster inferred (mainnet USDC mint). The authorities are the ones of 2022, rotated since: compare acct-usdc-mint-current.'),
    ('acct-usdt-mint', 'account_usdt_mint_mainnet__p2p-solana-swift.json', 'mainnet',
     'Interpret the USDT mint', 'Cluster inferred (mainnet USDT mint).'),
    ('acct-wsol-mint', 'account_wsol_mint__metamask-extension.json', 'devnet',
     'Interpret the wrapped-SOL mint', 'A devnet-labelled mock response; the native mint\'s bytes are the same on every cluster.'),
    ('acct-t22-fzyeg-mint', 'account_token2022_mint_FZYEg_mainnet__p2p-solana-swift.json', 'mainnet',
     'Interpret a Token-2022 mint with a revoked authority and three extensions', 'Raw data only; cluster not stated (epoch 489 and timestamp 1692005389 fit mainnet, Aug 2023). Both authority COption tags are 0 while stale key bytes remain.'),
    ('acct-t22-bern-mint', 'account_token2022_mint_BERN__solana-web3js-fixture.json', 'local',
     'Interpret the BERN Token-2022 mint (transfer fee)', 'A test-validator fixture of the mainnet BERN mint: the data is the real mint\'s, lamports and rent epoch are fixture values.'),
    ('acct-t22-mega-mint', 'account_token2022_mint_megatoken_14ext_local__solana-web3js-fixture.json', 'local',
     'Interpret a Token-2022 mint with fourteen extensions', 'Created on a local test validator by the web3.js fixture scripts; not a public-cluster account.'),
    ('acct-t22-bern-ata', 'account_token2022_token_account_BERN_43W7Qv_mainnet__p2p-solana-swift.json', 'mainnet',
     'Interpret a Token-2022 token account (immutable owner, withheld fees)', 'Cluster inferred (BERN mainnet mint); the address is the owner\'s ATA for BERN under Token-2022 (derived).'),
    ('acct-t22-mega-account', 'account_token2022_token_account_megatoken_local__solana-web3js-fixture.json', 'local',
     'Interpret a Token-2022 token account with eight extensions', 'Created on a local test validator by the web3.js fixture scripts.'),
    ('acct-bonk-token-account', 'account_bonk_token_account_6uJPNj_mainnet__p2p-solana-swift.json', 'mainnet',
     'Interpret a BONK token account', 'Cluster inferred (BONK mainnet mint); the address is the owner\'s ATA (derived).'),
    ('acct-usdc-token-account', 'account_usdc_token_account_3uetDD_mainnet__p2p-solana-swift.json', 'mainnet',
     'Interpret a USDC token account', 'Cluster inferred (USDC mainnet mint); the address is the owner\'s ATA (derived).'),
    ('acct-delegated-token-account', 'account_token_account_delegated_6uGCrv__solana-web3js-fixture.json', 'local',
     'Interpret a token account with a delegate', 'A test-validator fixture, probably created locally.'),
    ('acct-delegated-raw', 'account_token_account_delegated_QqCCvs__p2p-solana-swift.json', 'unknown',
     'Interpret raw token-account bytes with a delegate', 'Raw data only: no address, slot or lamports, and the source names no cluster.'),
    ('acct-multisig-2of2', 'account_spl_token_multisig_2of2_4Uh9vK__solana-web3js-fixture.json', 'local',
     'Interpret an SPL Token multisig account', 'A test-validator fixture.'),
    ('acct-nonce', 'account_nonce_AiZExP__solana-web3js-fixture.json', 'local',
     'Interpret a durable nonce account', 'A test-validator fixture, probably local.'),
    ('acct-stake-deactivated', 'account_stake_deactivated_CSg2vQ__solana-web3js-fixture.json', 'local',
     'Interpret a deactivated stake account', 'A test-validator fixture whose data is consistent with mainnet (voter Certus One); lamports are fixture values.'),
    ('acct-alt-104', 'account_address_lookup_table_BoVGDx_mainnet__cordialsys-crosschain.json', 'mainnet',
     'Interpret an address lookup table (104 addresses)', 'The table used by transaction 2aoWC4... (tx-v0-alt-usdc).'),
    ('acct-alt-deactivated', 'account_address_lookup_table_deactivated_2JPQuT__solana-web3js-fixture.json', 'local',
     'Interpret a deactivated address lookup table', 'A test-validator fixture (mainnet-like, not stated).'),
    ('acct-alt-3', 'account_address_lookup_table_3addrs_mainnet__explorer.json', 'mainnet',
     'Interpret a small frozen address lookup table', 'Mainnet is stated in the source; only the data is given (no address, lamports or slot).'),
]

OWNER_BY_FILE = {
    'account_token2022_mint_FZYEg_mainnet__p2p-solana-swift.json': TOKEN22,
    'account_token_account_delegated_QqCCvs__p2p-solana-swift.json': TOKEN,
    'account_address_lookup_table_3addrs_mainnet__explorer.json': ALT,
}

# id, data file, network, title, what to note
TRANSACTIONS = [
    ('tx-legacy-nonce-bonk', 'tx_legacy_mainnet_nonce_bonk_transfer_66iwZv__cordialsys-crosschain.json', 'mainnet',
     'Interpret a legacy durable-nonce token transfer', 'Cluster inferred from the BONK mainnet mint.'),
    ('tx-v0-alt-usdc', 'tx_v0_mainnet_alt_usdc_2aoWC4__cordialsys-crosschain.json', 'mainnet',
     'Interpret a v0 transaction with an address lookup table', 'The lookup table BoVGDx... resolves meta.loadedAddresses exactly. Cluster inferred from mainnet mints.'),
    ('tx-legacy-ata-create', 'tx_legacy_devnet_ata_create_legacy_4Dj8Xb__blocto-solana-go-sdk.json', 'devnet',
     'Interpret a legacy associated-token-account creation', 'Cluster inferred (devnet).'),
    ('tx-legacy-cu-memo-ping', 'tx_legacy_devnet_cu_limit_price_memo_ping_31gux9__solders-block.json', 'devnet',
     'Interpret a transaction with a compute-unit limit, a priority fee and a memo', 'One transaction of a getBlock result (devnet inferred); the block entry is given as a getTransaction result with the block\'s slot.'),
    ('tx-legacy-spam-20-transfers', 'tx_legacy_devnet_spam_1lamport_transfers_5LUArY__metamask-snap.json', 'devnet',
     'Interpret twenty 1-lamport transfers in one transaction', 'Devnet stated in the source.'),
    ('tx-legacy-usdc-devnet', 'tx_legacy_devnet_usdc_transferChecked_5ZrG8i__cordialsys-crosschain.json', 'devnet',
     'Interpret a devnet-USDC transfer_checked', 'Devnet inferred; the source\'s label says 0.0002 while the bytes transfer 200000 raw units (0.2).'),
    ('tx-legacy-failed-rent', 'tx_legacy_mainnet_failed_insufficient_rent_spam_4Ud63H__metamask-snap.json', 'mainnet',
     'Interpret a failed transaction (insufficient funds for rent)', 'Mainnet stated in the source. Every instruction logs success, yet the transaction failed.'),
    ('tx-legacy-jup-transfer-checked', 'tx_legacy_mainnet_jup_transferChecked_cu_price_4zvFGp__metamask-snap.json', 'mainnet',
     'Interpret a JUP transfer_checked with a priority fee', 'Mainnet inferred (the source says devnet; the mint and slot contradict it).'),
    ('tx-legacy-vote', 'tx_legacy_vote_4zExa6__solders_base64.json', 'mainnet',
     'Interpret a vote transaction', 'Cluster not stated (slot 147558327); requested without maxSupportedTransactionVersion, so the result has no version key.'),
    ('tx-v0-devnet-transfer', 'tx_v0_devnet_system_transfer_2qfNzG__metamask-snap.json', 'devnet',
     'Interpret a v0 SOL transfer', 'Devnet stated in the source.'),
    ('tx-v0-self-transfer-cu', 'tx_v0_devnet_self_transfer_cu_limit_4Ccb8P__metamask-snap.json', 'devnet',
     'Interpret a v0 self-transfer with a compute-unit limit', 'Devnet stated in the source.'),
    ('tx-v0-two-lookup-tables', 'tx_v0_devnet_two_alts_transferChecked_4fSTSD__blocto-solana-go-sdk.json', 'devnet',
     'Interpret a v0 transaction with two address lookup tables', 'Devnet inferred.'),
    ('tx-v0-failed-slippage', 'tx_v0_mainnet_failed_jupiter_slippage_6001_58Fymk__metamask-snap.json', 'mainnet',
     'Interpret a failed swap (slippage) with two lookup tables', 'Mainnet stated in the source.'),
    ('tx-v0-failed-swap-lamports', 'tx_v0_mainnet_failed_swap_system_custom1_43VK3T__metamask-snap.json', 'mainnet',
     'Interpret a failed swap through an aggregator (insufficient lamports)', 'Mainnet inferred.'),
    ('tx-v0-jupiter-wrap-sol', 'tx_v0_mainnet_jupiter_swap_sol_usdc_wrap_alt_2X4vKs__metamask-snap.json', 'mainnet',
     'Interpret a SOL-to-USDC swap that wraps and unwraps SOL', 'Mainnet inferred.'),
    ('tx-v0-jupiter-three-tables', 'tx_v0_mainnet_jupiter_swap_trump_jup_4VhDRL__metamask-snap.json', 'mainnet',
     'Interpret a swap with three address lookup tables', 'Mainnet inferred.'),
    ('tx-v0-raydium-seeded-account', 'tx_v0_mainnet_raydium_swap_create_account_with_seed_QfFVu1__metamask-snap.json', 'mainnet',
     'Interpret a Raydium swap through a seeded temporary account', 'Mainnet inferred.'),
    ('tx-v0-t22-create-ata', 'tx_v0_mainnet_token2022_transfer_create_ata_4G24Sg__metamask-snap.json', 'mainnet',
     'Interpret a Token-2022 transfer that creates the recipient\'s account', 'Mainnet stated in the source.'),
    ('tx-v0-usdc-create-ata', 'tx_v0_mainnet_usdc_transfer_create_ata_idempotent_LPaVYs__metamask-snap.json', 'mainnet',
     'Interpret a USDC transfer with an idempotent account creation', 'Mainnet inferred.'),
]

# id, mint file, network, title, sender, recipient, amount, instruction, memo, epoch
SENDER_A = '9RvNi4pPm8euMuPGPNQVjR8wWTPawZMvqfqA2QQmwVHC'   # owns USDC account HWbsF542 (p2p-org)
SENDER_B = 'AC5RDfQFmDS1deWZos921JfqscXdByf8BKHs5ACWjtW2'   # signs 66iwZv (cordialsys)
SENDER_C = '12VFrc1dFynPzs4HBRdRoMKNm1jca2S2uhaNKCkdffwy'   # signs 2aoWC4 (cordialsys)
SENDER_D = '3h1zGmCwsRJnVk5BuRNMLsPaQu1y2aqXqXDWYCgrp5UG'   # owns USDC ATA 3uetDD (p2p-org)
PLANS = [
    ('plan-usdc-memo', 'account_usdc_mint_mainnet__dfinity-sol-rpc-canister.json', 'mainnet',
     'Plan an unsigned USDC transfer with a memo', SENDER_D, SENDER_A, '250.75', 'transfer_checked', 'order 8841', None),
    ('plan-usdc-smallest-unit', 'account_usdc_mint_mainnet__dfinity-sol-rpc-canister.json', 'mainnet',
     'Plan an unsigned transfer of one atomic unit of USDC', SENDER_A, SENDER_C, '0.000001', 'transfer_checked', None, None),
    ('plan-usdt-transfer', 'account_usdt_mint_mainnet__p2p-solana-swift.json', 'mainnet',
     'Plan an unsigned USDT transfer', SENDER_B, SENDER_D, '1000000', 'transfer_checked', None, None),
    ('plan-wsol-transfer', 'account_wsol_mint__metamask-extension.json', 'mainnet',
     'Plan an unsigned wrapped-SOL transfer', SENDER_C, SENDER_B, '2.5', 'transfer_checked', None, None),
    ('plan-t22-bern-fee', 'account_token2022_mint_BERN__solana-web3js-fixture.json', 'mainnet',
     'Plan an unsigned Token-2022 transfer with a transfer fee', SENDER_A, SENDER_B, '1000', 'transfer_checked_with_fee', None, 612),
    ('plan-t22-bern-fee-memo-small', 'account_token2022_mint_BERN__solana-web3js-fixture.json', 'mainnet',
     'Plan a small Token-2022 transfer whose fee rounds up, with a memo', SENDER_B, SENDER_C, '0.00001', 'transfer_checked_with_fee', 'tip', 612),
    ('plan-t22-fzyeg-checked', 'account_token2022_mint_FZYEg_mainnet__p2p-solana-swift.json', 'mainnet',
     'Plan a Token-2022 transfer_checked on a mint that charges a fee', SENDER_C, SENDER_D, '99.99', 'transfer_checked', None, 612),
    ('plan-t22-fzyeg-fee-memo', 'account_token2022_mint_FZYEg_mainnet__p2p-solana-swift.json', 'mainnet',
     'Plan an unsigned Token-2022 transfer with a transfer fee and a memo', SENDER_C, SENDER_A, '1234.56', 'transfer_checked_with_fee', 'invoice 2026-117', 612),
]


# What each mint file's account task says of its source (devnet mocks and local fixtures say so).
MINT_NOTES = {fname: note for (_, fname, _, _, note) in ACCOUNTS}


def write_task(out, tid, task, input_name, input_bytes):
    d = os.path.join(out, 'tasks', tid)
    os.makedirs(d, exist_ok=True)
    for stale in ('golden.json', 'wrong.json'):
        if os.path.exists(os.path.join(d, stale)):
            os.remove(os.path.join(d, stale))
    task['input'] = {
        'file': input_name,
        'media_type': 'application/json' if input_name.endswith('.json') else 'application/octet-stream',
        'size': len(input_bytes),
        'sha256': hashlib.sha256(input_bytes).hexdigest(),
    }
    with open(os.path.join(d, 'task.json'), 'w') as f:
        f.write(json.dumps(task, indent=2, ensure_ascii=False) + '\n')
    with open(os.path.join(d, input_name), 'wb') as f:
        f.write(input_bytes)


def provenance(src, item, note, extra=None):
    p = {
        'repository': src['repo'],
        'path': src['path'],
        'commit': src.get('commit'),
        'license': src.get('license'),
        'item': item,
        'cluster_in_source': src.get('cluster'),
        'note': note,
        'data_file': extra,
    }
    return {k: v for k, v in p.items() if v is not None}


def main():
    data_dir, out = sys.argv[1], sys.argv[2]
    os.makedirs(os.path.join(out, 'tasks'), exist_ok=True)
    ids = []

    for tid, fname, net, title, note in ACCOUNTS:
        doc = json.load(open(os.path.join(data_dir, fname)))
        data, owner, lamports, pubkey, slot = account(doc)
        owner = owner or OWNER_BY_FILE[fname]
        where = NETWORK_WORDS[net]
        if not pubkey:
            what = f'an account on {where} (its address is not given)'
        elif where.startswith('Solana'):
            what = f'{where} account {pubkey}'
        else:
            what = f'account {pubkey} on {where}'
        ext = ', including every extension' if owner == TOKEN22 else ''
        fields = {TOKEN: TOKEN_FIELDS, TOKEN22: TOKEN_FIELDS, SYSTEM: NONCE_FIELDS, STAKE: STAKE_FIELDS, ALT: ALT_FIELDS}[owner]
        prompt = (f'The input is the raw data ({len(data)} bytes, base64) of {what}, owned by program {owner}. '
                  f'Decode it{ext}.\n\n{COMMON}\n\n{fields}')
        context = {'address': pubkey, 'owner_program': owner, 'lamports': lamports}
        context = {k: v for k, v in context.items() if v is not None}
        src = doc['_source']
        task = {
            'id': tid, 'family': 'account', 'network': net, 'slot': slot or src.get('slot'), 'title': title,
            'prompt': prompt, 'context': context, 'input': None,
            'provenance': provenance(src, src.get('item') or src.get('line') and f"line {src.get('line')}", note, fname),
            'reason_codes': ['wrong_account_type', 'wrong_program', 'authority_mismatch', 'wrong_field',
                             'missing_extension', 'extra_extension', 'not_json', 'multiple_answers', 'duplicate_key',
                             'answer_too_large', 'schema_violation', 'invalid_address', 'requires_script',
                             'requires_binary', 'requires_network', 'requires_other', 'checker_timeout'],
        }
        write_task(out, tid, task, 'input.bin', data)
        ids.append(tid)

    for tid, fname, net, title, note in TRANSACTIONS:
        doc = json.load(open(os.path.join(data_dir, fname)))
        path, result = tx_result(doc)
        result = json.loads(json.dumps(result))
        t = result['transaction']
        converted = ''
        if isinstance(t, dict):
            version = result.get('version', 'legacy')
            wire, _, _, _ = wire_from_json(t, version)
            result['transaction'] = [base64.b64encode(wire).decode(), 'base64']
            converted = (' The source saved it in json encoding; the transaction is given here as the base64 of the '
                         'exact bytes that were signed (rebuilt from the compiled message; every signature verifies).')
        wire = base64.b64decode(result['transaction'][0])
        sig = verify_signatures(wire)
        if fname.startswith('tx_legacy_devnet_cu_limit'):
            # A getBlock entry: the block's slot is the parent's plus one only if no slot was skipped,
            # so the slot is left out rather than guessed.
            result.setdefault('slot', None)
        slot = result.get('slot')
        body = json.dumps(result, indent=2, sort_keys=True) + '\n'
        prompt = (f'The input is the saved result of a finalized {NETWORK_WORDS[net].replace("Solana ", "")} getTransaction call '
                  '(encoding base64, maxSupportedTransactionVersion 0). Interpret the transaction; resolve every '
                  f'account index, including those loaded from address lookup tables.\n\n{COMMON}\n\n{TX_FIELDS}')
        src = doc['_source']
        task = {
            'id': tid, 'family': 'transaction', 'network': net, 'slot': slot, 'title': title, 'prompt': prompt,
            'context': {'rpc_call': 'getTransaction(signature, {encoding: "base64", maxSupportedTransactionVersion: 0})',
                        'signature': sig},
            'input': None,
            'provenance': provenance(src, src.get('item') or (src.get('line') and f"line {src.get('line')}"),
                                     f'Signatures verified (Ed25519 over the message bytes; the first is the id).{converted} {note}', fname),
            'reason_codes': ['wrong_field', 'wrong_outcome', 'wrong_address', 'wrong_instruction',
                             'missing_instruction', 'extra_instruction', 'wrong_amount_atomic', 'wrong_asset',
                             'wrong_fee', 'not_json',
                             'multiple_answers', 'duplicate_key', 'answer_too_large', 'schema_violation',
                             'invalid_address', 'requires_script', 'requires_binary', 'requires_network',
                             'requires_other', 'checker_timeout'],
        }
        write_task(out, tid, task, 'input.json', body.encode())
        ids.append(tid)

    for tid, fname, net, title, sender, recipient, amount, instruction, memo, epoch in PLANS:
        doc = json.load(open(os.path.join(data_dir, fname)))
        data, owner, lamports, pubkey, slot = account(doc)
        owner = owner or OWNER_BY_FILE.get(fname, TOKEN22)
        t22 = owner == TOKEN22
        inp = {
            'network': net, 'mint': pubkey, 'mint_owner_program': owner,
            'mint_account_data_base64': base64.b64encode(data).decode(),
            'sender_owner': sender, 'recipient_owner': recipient, 'amount': amount,
            'constraints': {'instruction': instruction, 'memo': memo, 'token_accounts_exist': True},
        }
        if epoch is not None:
            inp['current_epoch'] = epoch
        kind = 'Token-2022' if t22 else 'SPL token'
        first = (f'Plan an unsigned {kind} transfer with the parameters in the input (JSON): send the given amount (in whole '
                 "tokens) of the mint from the sender's associated token account to the recipient's associated token "
                 "account. Both token accounts already exist. The mint's raw account data is given: read its decimals"
                 + (' and any transfer fee in force at the current epoch' if t22 else '') + ' from it. Use the instruction named in the constraints'
                 + (', and attach the memo from the constraints' if memo else '') + '.')
        context = {'mint': pubkey, 'token_program': owner}
        if epoch is not None:
            context['current_epoch'] = epoch
        src = doc['_source']
        task = {
            'id': tid, 'family': 'transfer_plan', 'network': net, 'slot': None, 'title': title,
            'prompt': f'{first}\n\n{COMMON}\n\n{PLAN_FIELDS}', 'context': context, 'input': None,
            'provenance': {
                'repository': 'this project', 'path': 'scripts/make-pack-2.py', 'license': 'Apache-2.0',
                'note': ('Task parameters written for this pack. The mint bytes are real: ' + src['repo'] + ' ' +
                         src['path'] + ' @ ' + (src.get('commit') or 'unpinned') + ' (' + (src.get('license') or '') +
                         '). The parties are real mainnet owners from the shared data: 9RvNi4p... owns USDC account HWbsF542... '
                         'and 3h1zGm... owns USDC ATA 3uetDD... (p2p-org/solana-swift @ aeb1ab9e); AC5RDfQ... and 12VFrc1... '
                         'sign 66iwZv... and 2aoWC4... (cordialsys/crosschain @ 37ce3cd6). About the mint bytes: '
                         + MINT_NOTES[fname]),
                'data_file': fname,
            },
            'reason_codes': ['wrong_asset', 'wrong_address', 'wrong_amount_atomic', 'wrong_fee', 'wrong_instruction',
                             'missing_instruction', 'extra_instruction', 'wrong_field', 'signature_present',
                             'sends_transaction', 'not_json', 'multiple_answers', 'duplicate_key', 'answer_too_large',
                             'schema_violation', 'invalid_address', 'requires_script', 'requires_binary',
                             'requires_network', 'requires_other', 'checker_timeout'],
        }
        write_task(out, tid, task, 'input.json', (json.dumps(inp, indent=2) + '\n').encode())
        ids.append(tid)

    pack = {
        'format': 'skilltrial-pack-v1',
        'name': 'solana-core',
        'version': '2.0.0',
        'description': (f'{len(ids)} Solana tasks in three families, for runs where the paired test can reach a small p: '
                        f'{len(ACCOUNTS)} accounts (mints and token accounts under SPL Token and Token-2022 with many '
                        'extensions, delegated token accounts, a multisig, a durable nonce, a stake account, lookup tables), '
                        f'{len(TRANSACTIONS)} saved transactions (legacy and v0, failed ones, several lookup tables, swaps through '
                        f'unknown programs, compute budget, memos, account creation) and {len(PLANS)} transfer plans (legacy and '
                        'Token-2022 mints, with and without fees). Every input is real data from public repositories, '
                        'tagged mainnet, devnet or local.'),
        'checker': {'name': 'solana-core', 'version': '1.1.0'},
        'transaction_versions': ['legacy', 0],
        'tasks': ids,
    }
    with open(os.path.join(out, 'pack.json'), 'w') as f:
        f.write(json.dumps(pack, indent=2) + '\n')
    print(f'{len(ids)} tasks written to {out}')


if __name__ == '__main__':
    main()
