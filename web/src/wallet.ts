// Wallets through the Wallet Standard: discovery (`getWallets`), connect, sign a message (the
// Sign-In With Solana text the runner issues) and sign a transaction (built by the page's wasm).

import { getWallets } from "@wallet-standard/app";
import type { Wallet, WalletAccount } from "@wallet-standard/base";
import { to_base58 as base58 } from "../pkg/skilltrial_web.js";

const CONNECT = "standard:connect";
const SIGN_MESSAGE = "solana:signMessage";
const SIGN_TRANSACTION = "solana:signTransaction";
const SIGN_AND_SEND = "solana:signAndSendTransaction";

interface ConnectFeature {
  connect(input?: { silent?: boolean }): Promise<{ accounts: readonly WalletAccount[] }>;
}
interface SignMessageFeature {
  signMessage(
    ...inputs: { account: WalletAccount; message: Uint8Array }[]
  ): Promise<{ signedMessage: Uint8Array; signature: Uint8Array }[]>;
}
interface SignTransactionFeature {
  signTransaction(
    ...inputs: { account: WalletAccount; transaction: Uint8Array; chain?: string }[]
  ): Promise<{ signedTransaction: Uint8Array }[]>;
}
interface SignAndSendFeature {
  signAndSendTransaction(
    ...inputs: { account: WalletAccount; transaction: Uint8Array; chain: string }[]
  ): Promise<{ signature: Uint8Array }[]>;
}

/// A wallet declined: said as such, so the page can say nothing was signed.
export class Declined extends Error {}

function feature<T>(wallet: Wallet, name: string): T | undefined {
  return (wallet.features as Record<string, unknown>)[name] as T | undefined;
}

/// Whether `wallet` can do what the page needs on `chain` (`solana:localnet`, ...).
export function usable(wallet: Wallet, chain: string): boolean {
  const chains = wallet.chains as readonly string[];
  return (
    chains.includes(chain) &&
    feature(wallet, CONNECT) !== undefined &&
    feature(wallet, SIGN_MESSAGE) !== undefined &&
    (feature(wallet, SIGN_TRANSACTION) !== undefined || feature(wallet, SIGN_AND_SEND) !== undefined)
  );
}

/// Every wallet that registers, now and later.
export function watchWallets(onChange: (wallets: readonly Wallet[]) => void): void {
  const api = getWallets();
  onChange(api.get());
  api.on("register", () => onChange(api.get()));
  api.on("unregister", () => onChange(api.get()));
}

/// A user's "no" in a wallet's words: the standard has no code for it, so every rejection of a
/// request the user was asked about counts as declined.
function declined(e: unknown, what: string): Error {
  const text = e instanceof Error ? e.message : String(e);
  return new Declined(`${what} was declined in the wallet (${text})`);
}

export async function connect(wallet: Wallet): Promise<WalletAccount> {
  const connectFeature = feature<ConnectFeature>(wallet, CONNECT);
  if (!connectFeature) throw new Error(`${wallet.name} cannot connect`);
  let accounts: readonly WalletAccount[];
  try {
    ({ accounts } = await connectFeature.connect());
  } catch (e) {
    throw declined(e, "Connecting");
  }
  const account = accounts[0];
  if (!account) throw new Error(`${wallet.name} shared no account: unlock it and connect again`);
  return account;
}

export async function signMessage(
  wallet: Wallet,
  account: WalletAccount,
  message: Uint8Array,
): Promise<Uint8Array> {
  const f = feature<SignMessageFeature>(wallet, SIGN_MESSAGE);
  if (!f) throw new Error(`${wallet.name} cannot sign a message, which sign-in needs`);
  try {
    const [out] = await f.signMessage({ account, message });
    if (!out) throw new Error("no signature came back");
    return out.signature;
  } catch (e) {
    throw declined(e, "Signing in");
  }
}

/// Signs `transaction`; `relay` sends a signed one (the runner relays it to the cluster) and
/// answers its signature. A wallet that can only sign and send sends it itself.
export async function signAndSend(
  wallet: Wallet,
  account: WalletAccount,
  chain: string,
  transaction: Uint8Array,
  what: string,
  relay: (signed: Uint8Array) => Promise<string>,
): Promise<string> {
  const sign = feature<SignTransactionFeature>(wallet, SIGN_TRANSACTION);
  if (sign) {
    let signed: Uint8Array;
    try {
      const [out] = await sign.signTransaction({ account, transaction, chain });
      if (!out) throw new Error("no transaction came back");
      signed = out.signedTransaction;
    } catch (e) {
      throw declined(e, what);
    }
    return relay(signed);
  }
  const send = feature<SignAndSendFeature>(wallet, SIGN_AND_SEND);
  if (!send) throw new Error(`${wallet.name} cannot sign a transaction`);
  try {
    const [out] = await send.signAndSendTransaction({ account, transaction, chain });
    if (!out) throw new Error("no signature came back");
    return base58(out.signature);
  } catch (e) {
    throw declined(e, what);
  }
}
