// Bundles the console into dist/ (index.html, app.js, app.css), which the router embeds.
// Run by ./dev setup (npm run build); nothing is fetched.
import { build } from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";

mkdirSync("dist", { recursive: true });
await build({
  entryPoints: ["src/main.tsx"],
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2020",
  jsx: "automatic",
  jsxImportSource: "preact",
  outfile: "dist/app.js",
  legalComments: "none",
  // The client and its protobuf runtime come from clients/ts (one copy of each).
  nodePaths: ["../../clients/ts/node_modules"],
  logLevel: "warning",
});
copyFileSync("src/index.html", "dist/index.html");
copyFileSync("src/app.css", "dist/app.css");
