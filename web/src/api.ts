// The runner daemon's HTTP API, as the page speaks it: same origin, the session in an HttpOnly
// cookie (set by sign-in), every error the daemon's `{error, code}` said in its words.

// The bodies, progress and events are the daemon's own types (runner/src/api.rs), generated into
// wire.ts: what the page reads is what the daemon writes.
export type * from "./wire.js";

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
