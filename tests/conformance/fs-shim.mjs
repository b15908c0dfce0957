// `fs` with the one thing Node 20 lacks that the conformance suite uses: `globSync`, for
// patterns of the form `**/<name>` (its `tier-check` reads `**/checks.json`).
import fs from "node:fs";
import path from "node:path";

export * from "node:fs";
export default fs;

export function globSync(pattern, options = {}) {
  const cwd = options.cwd ?? process.cwd();
  const name = pattern.replace(/^\*\*\//, "");
  const found = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(path.join(cwd, dir), { withFileTypes: true })) {
      const relative = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(relative);
      else if (entry.name === name) found.push(relative);
    }
  };
  walk("");
  return found;
}
