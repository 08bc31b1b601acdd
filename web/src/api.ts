// The runner daemon's HTTP API, as the page speaks it: same origin, the session in an HttpOnly
// cookie (set by sign-in), every error the daemon's `{error, code}` said in its words.

export interface Info {
  runner: string;
  origin: string;
  chain_id: string;
  program: string;
  profiles: string[];
  sol_usd: { usd_micros_per_sol: number; tolerance_bps: number; max_age_secs: number };
}

export interface Profile {
  id: string;
  provider: string;
  model: string;
  price: unknown;
  [key: string]: unknown;
}

export interface Offer {
  /// `demo`: the runner's scripted demo model (`runner serve --demo-model`), not a real model.
  profiles: { profile: Profile; endpoint: string; demo?: boolean }[];
  packs: string[];
  fee_per_trial_lamports: number;
  default_deadline_secs: number;
}

export interface Terms {
  manifest: string;
  trials: number;
  per_request_cap_lamports: number;
  fee_per_trial_lamports: number;
  escrow_lamports: number;
  runner: string;
  min_deadline_secs: number;
}

export interface RunView {
  run: string;
  user: string;
  manifest: string;
  deadline: number;
  phase: string;
  detail: string | null;
  progress: Progress | null;
  settled_trials: number;
  settle_batches: number;
  report_hash: string | null;
  finalize_signature: string | null;
}

export interface Progress {
  done: number;
  total: number;
  counts: Record<string, number>;
  spent: number;
  reserved: number;
}

/// `GET /v1/chain/blockhash`: `cluster_time` is the chain's clock (Unix seconds).
export interface Blockhash {
  blockhash: string;
  last_valid_block_height: number;
  cluster_time: number;
}

/// `GET /v1/runs/{run}/funds`, lamports read from the chain (`null` once the Run is gone).
export interface Funds {
  account: { escrowed: number; settled_usage: number; settled_fees: number; lamports: number } | null;
}

export interface Checked {
  run: string;
  manifest: string;
  registered: RunView | null;
  escrowed: boolean;
  min_deadline_secs: number;
}

export class ApiError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export async function call<T>(path: string, init: RequestInit = {}): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, {
      credentials: "same-origin",
      ...init,
      headers: init.body ? { "content-type": "application/json" } : {},
    });
  } catch {
    throw new ApiError(
      `the runner did not answer ${path}: check that it is running, then try again`,
      "unavailable",
      0,
    );
  }
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ApiError(
      `the runner answered ${path} with HTTP ${response.status} and no JSON`,
      "internal",
      response.status,
    );
  }
  if (!response.ok) {
    const e = body as { error?: string; code?: string };
    throw new ApiError(e.error ?? `HTTP ${response.status}`, e.code ?? "internal", response.status);
  }
  return body as T;
}

export const post = <T>(path: string, body: unknown): Promise<T> =>
  call<T>(path, { method: "POST", body: typeof body === "string" ? body : JSON.stringify(body) });
