// Resolves `fs` to fs-shim.mjs for every module but the shim itself.
const SHIM = new URL("./fs-shim.mjs", import.meta.url).href;

export async function resolve(specifier, context, next) {
  if ((specifier === "fs" || specifier === "node:fs") && context.parentURL !== SHIM) {
    return { url: SHIM, shortCircuit: true };
  }
  return next(specifier, context);
}
