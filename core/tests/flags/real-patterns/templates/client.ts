// Decimals per mint; the UI formats amounts with them.
export const LENDING_DECIMALS = {
  [LENDING_TOKENS.USDC]: 6,
  [LENDING_TOKENS.SOL]: 9,
};
export function forward(fn: (...args: unknown[]) => void, ...args: unknown[]) {
  return fn(...args);
}
