// Tokenise files with VS Code's own TextMate engine (vscode-textmate + vscode-oniguruma):
//   node tokenize.mjs GRAMMAR FILE...  ->  one JSON line: {FILE: [[{text, scopes}, ...], ...]}
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import oniguruma from "vscode-oniguruma";
import textmate from "vscode-textmate";

const require = createRequire(import.meta.url);
const wasm = readFileSync(require.resolve("vscode-oniguruma/release/onig.wasm")).buffer;
await oniguruma.loadWASM(wasm);

const [grammarPath, ...files] = process.argv.slice(2);
const registry = new textmate.Registry({
  onigLib: Promise.resolve({
    createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
    createOnigString: (s) => new oniguruma.OnigString(s),
  }),
  loadGrammar: async () =>
    textmate.parseRawGrammar(readFileSync(grammarPath, "utf8"), grammarPath),
});
const grammar = await registry.loadGrammar("source.forge");
const out = {};
for (const file of files) {
  let stack = textmate.INITIAL;
  const lines = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const result = grammar.tokenizeLine(line, stack);
    lines.push(
      result.tokens.map((t) => ({
        text: line.slice(t.startIndex, t.endIndex),
        scopes: t.scopes,
      })),
    );
    stack = result.ruleStack;
  }
  out[file] = lines;
}
process.stdout.write(JSON.stringify(out) + "\n");
