// Bundles the page's TypeScript (web/src) and the wasm-bindgen glue (web/pkg) into one ES
// module, and copies the HTML, the CSS and the wasm beside it: `node build.mjs <out dir>`.
// scripts/web.sh runs it; its output is byte-for-byte the same on every run.
import { build } from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";

const out = process.argv[2];
if (!out) {
  console.error("usage: node build.mjs <out dir>");
  process.exit(2);
}
mkdirSync(out, { recursive: true });
await build({
  entryPoints: ["src/main.ts"],
  bundle: true,
  format: "esm",
  target: "es2022",
  platform: "browser",
  minify: true,
  legalComments: "eof",
  charset: "utf8",
  outfile: join(out, "app.js"),
  logLevel: "warning",
});
copyFileSync("static/index.html", join(out, "index.html"));
copyFileSync("static/style.css", join(out, "style.css"));
copyFileSync("pkg/skilltrial_web_bg.wasm", join(out, "skilltrial_web_bg.wasm"));
