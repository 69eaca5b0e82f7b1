import { defineConfig } from "tsup";

// One build for ESM and CommonJS with declarations. The Lua sources reach the bundle through
// src/scripts/bundle.generated.ts, so nothing is read from disk at run time (SPEC §1).
export default defineConfig({
  entry: { index: "src/index.ts", "model/index": "src/model/index.ts" },
  format: ["esm", "cjs"],
  dts: true,
  clean: true,
  sourcemap: true,
  target: "node22",
  splitting: false,
});
