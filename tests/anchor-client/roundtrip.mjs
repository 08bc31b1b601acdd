// The official Anchor TypeScript client (@anchor-lang/core) against `skilltrial localnet`, loading
// the committed IDL as a developer would: open a run, cancel it, let the runner finalize it, close
// it; decode the Run, Config and FeeVault accounts by name; parse each transaction's events from
// `getTransaction` logs (EventParser) and from `logsSubscribe` (addEventListener); and get refused
// instructions' errors by name. Prints one JSON document on stdout; tests/hosted/anchor_client.rs
// starts the validator, runs this and asserts on it.
//
// Env: SKILLTRIAL_RPC_URL, SKILLTRIAL_WS_URL, SKILLTRIAL_WALLET (the user's keypair file),
// SKILLTRIAL_RUNNER (the runner's keypair file), SKILLTRIAL_IDL (idl/skilltrial.json).

import { readFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import anchor from "@anchor-lang/core";
import { Connection, Keypair, PublicKey } from "@solana/web3.js";

const { AnchorProvider, AnchorError, BN, EventParser, Program, Wallet } = anchor;

function env(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

function keypair(path) {
  return Keypair.fromSecretKey(Uint8Array.from(JSON.parse(readFileSync(path, "utf8"))));
}

// BN and PublicKey as strings, so the Rust side compares plain JSON.
function plain(value) {
  if (value instanceof BN) return value.toString();
  if (value instanceof PublicKey) return value.toBase58();
  if (Array.isArray(value)) return value.map(plain);
  if (value instanceof Uint8Array) return Array.from(value);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  }
  return value;
}

// A refused call's error as Anchor decodes it: the IDL's name and number for the program's own
// errors.
async function refusal(call) {
  try {
    const signature = await call();
    return { refused: false, signature };
  } catch (err) {
    if (err instanceof AnchorError) {
      return {
        refused: true,
        anchor_error: true,
        code: err.error.errorCode.code,
        number: err.error.errorCode.number,
        message: err.error.errorMessage,
      };
    }
    return { refused: true, anchor_error: false, message: String(err) };
  }
}

const idl = JSON.parse(readFileSync(env("SKILLTRIAL_IDL"), "utf8"));
const user = keypair(env("SKILLTRIAL_WALLET"));
const runner = keypair(env("SKILLTRIAL_RUNNER"));
const connection = new Connection(env("SKILLTRIAL_RPC_URL"), {
  commitment: "confirmed",
  wsEndpoint: env("SKILLTRIAL_WS_URL"),
});
const provider = new AnchorProvider(connection, new Wallet(user), {
  commitment: "confirmed",
  preflightCommitment: "confirmed",
});
const program = new Program(idl, provider);
const out = { program_id: program.programId.toBase58() };

// Events pushed over the websocket (logsSubscribe), registered before anything is sent.
const pushed = [];
const listeners = ["runOpened", "runCancelled", "runClosed"].map((name) =>
  program.addEventListener(name, (event, slot, signature) => {
    pushed.push({ name, signature, slot, run: event.run.toBase58(), run_id: event.runId.toString() });
  }),
);

const configAddress = new PublicKey(
  idl.instructions.find((ix) => ix.name === "run_open").accounts.find((a) => a.name === "config")
    .address,
);
const config = await program.account.config.fetch(configAddress);
out.config = plain({
  admin: config.admin,
  runner: config.runner,
  runnerPayout: config.runnerPayout,
  feePerTrial: config.feePerTrial,
  minDeadlineSecs: config.minDeadlineSecs,
  sktrialMint: config.sktrialMint,
});

// The deadline from cluster time, a minute past the config's minimum.
const now = await connection.getBlockTime(await connection.getSlot("confirmed"));
const manifestHash = Array.from(randomBytes(32));
const planned = 2;
const cap = new BN(5_000);
const openArgs = {
  manifestHash,
  plannedTrials: planned,
  perRequestCap: cap,
  escrow: cap.add(config.feePerTrial).muln(planned),
  deadline: new BN(now).add(config.minDeadlineSecs).addn(60),
  expectedFeePerTrial: config.feePerTrial,
  expectedRunner: config.runner,
};
const [run] = PublicKey.findProgramAddressSync(
  [Buffer.from("run"), user.publicKey.toBuffer(), Buffer.from(manifestHash)],
  program.programId,
);
out.run = run.toBase58();

out.errors = {
  // A cap of 1 lamport: below one signature's base fee.
  run_open_cap_1: await refusal(() =>
    program.methods
      .runOpen({ ...openArgs, manifestHash: Array.from(randomBytes(32)), perRequestCap: new BN(1) })
      .accounts({ user: user.publicKey })
      .rpc(),
  ),
};

const signatures = {};
// Anchor resolves config, fee_vault, run (from the argument) and system_program from the IDL.
signatures.open = await program.methods.runOpen(openArgs).accounts({ user: user.publicKey }).rpc();
out.run_after_open = plain(await program.account.run.fetch(run));
out.errors.run_close_while_open = await refusal(() =>
  program.methods.runClose().accountsPartial({ user: user.publicKey, run }).rpc(),
);
signatures.cancel = await program.methods
  .runCancel()
  .accountsPartial({ user: user.publicKey, run })
  .rpc();
out.run_after_cancel = plain(await program.account.run.fetch(run));
signatures.finalize = await program.methods
  .runFinalize({ expectedRunId: new BN(out.run_after_open.runId), reportHash: Array(32).fill(7) })
  .accountsPartial({ runner: runner.publicKey, run })
  .signers([runner])
  .rpc();
out.run_after_finalize = plain(await program.account.run.fetch(run));
signatures.close = await program.methods
  .runClose()
  .accountsPartial({ user: user.publicKey, run })
  .rpc();
out.run_after_close = await program.account.run.fetchNullable(run);
const feeVaultAddress = new PublicKey(
  idl.instructions.find((ix) => ix.name === "run_open").accounts.find((a) => a.name === "fee_vault")
    .address,
);
out.fee_vault = plain(await program.account.feeVault.fetch(feeVaultAddress));
// The same accounts through the coder by the IDL's own names.
const raw = await connection.getAccountInfo(configAddress);
out.config_by_coder_name = plain(program.coder.accounts.decode("config", raw.data).runner);

// A landed transaction as `getTransaction` serves it: null for a while after its confirmation
// (the validator writes its status apart), so polled as any client must.
async function landed(signature) {
  const giveUp = Date.now() + 120_000;
  for (;;) {
    const tx = await connection.getTransaction(signature, {
      commitment: "confirmed",
      maxSupportedTransactionVersion: 0,
    });
    if (tx !== null || Date.now() > giveUp) return tx;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

// Each transaction's events, parsed from the log messages `getTransaction` serves.
const parser = new EventParser(program.programId, program.coder);
out.transactions = {};
for (const [step, signature] of Object.entries(signatures)) {
  const tx = await landed(signature);
  const logs = tx?.meta?.logMessages ?? null;
  out.transactions[step] = {
    signature,
    found: tx !== null,
    log_messages: logs === null ? null : logs.length,
    events: logs === null ? [] : [...parser.parseLogs(logs)].map((e) => ({ name: e.name, data: plain(e.data) })),
  };
}

// The websocket's events may trail the confirmations a little.
const waitUntil = Date.now() + 20_000;
while (pushed.length < 3 && Date.now() < waitUntil) {
  await new Promise((resolve) => setTimeout(resolve, 200));
}
out.subscribed = pushed;
for (const id of listeners) await program.removeEventListener(id);

process.stdout.write(`${JSON.stringify(out)}\n`);
process.exit(0);
