// A Wallet Standard wallet for the browser test, injected before the page loads: it registers
// itself as a real wallet extension does (the `wallet-standard:app-ready` /
// `wallet-standard:register-wallet` handshake), connects one account, and signs messages and
// transactions with a test keypair through WebCrypto's Ed25519. Nothing here is the page's code.
//
// `globalThis.__testWalletConfig` = { seed: [32 bytes], address: base58, chain: "solana:localnet" }
// is set by the test first. `globalThis.__testWallet.decline` = "message" | "transaction" makes
// the next such request fail as a user's "Reject" does, once.
(() => {
  const config = globalThis.__testWalletConfig;
  const control = (globalThis.__testWallet = { decline: null, signed: [] });
  // PKCS#8 wrapping of a raw Ed25519 seed (RFC 8410).
  const pkcs8 = new Uint8Array([
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
    ...config.seed,
  ]);
  const key = crypto.subtle.importKey("pkcs8", pkcs8, { name: "Ed25519" }, false, ["sign"]);
  const sign = async (bytes) => new Uint8Array(await crypto.subtle.sign("Ed25519", await key, bytes));
  const publicKey = new Uint8Array(config.publicKey);
  const features = ["solana:signMessage", "solana:signTransaction"];
  const account = Object.freeze({
    address: config.address,
    publicKey,
    chains: [config.chain],
    features,
  });
  const refuse = (kind) => {
    if (control.decline === kind) {
      control.decline = null;
      throw new Error("User rejected the request.");
    }
  };
  const wallet = {
    version: "1.0.0",
    name: "SkillTrial Test Wallet",
    icon: "data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCAxIDEiLz4=",
    chains: [config.chain],
    accounts: [],
    features: {
      "standard:connect": {
        version: "1.0.0",
        connect: async () => {
          wallet.accounts = [account];
          return { accounts: wallet.accounts };
        },
      },
      "standard:events": { version: "1.0.0", on: () => () => {} },
      "solana:signMessage": {
        version: "1.0.0",
        signMessage: async (...inputs) => {
          refuse("message");
          return Promise.all(
            inputs.map(async ({ message }) => ({ signedMessage: message, signature: await sign(message) })),
          );
        },
      },
      "solana:signTransaction": {
        version: "1.0.0",
        supportedTransactionVersions: ["legacy"],
        signTransaction: async (...inputs) => {
          refuse("transaction");
          return Promise.all(
            inputs.map(async ({ transaction }) => {
              // [count (one byte below 128)] [count × 64-byte signatures] [message]; the fee
              // payer's signature is the first.
              const count = transaction[0];
              const message = transaction.slice(1 + 64 * count);
              const signed = transaction.slice();
              signed.set(await sign(message), 1);
              control.signed.push(Array.from(message));
              return { signedTransaction: signed };
            }),
          );
        },
      },
    },
  };
  const register = (api) => api.register(wallet);
  window.addEventListener("wallet-standard:app-ready", (event) => register(event.detail));
  window.dispatchEvent(new CustomEvent("wallet-standard:register-wallet", { detail: register }));
})();
