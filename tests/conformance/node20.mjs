// The conformance suite imports `globSync` from `fs` (Node 22); on Node 20 `fs` is
// resolved to fs-shim.mjs, which adds it. Loaded with `node --import`.
import fs from "node:fs";
import { register } from "node:module";

if (typeof fs.globSync !== "function") {
  register("./fs-hook.mjs", import.meta.url);
}
