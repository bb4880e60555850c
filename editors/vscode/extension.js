// The forgec extension: starts `forgec lsp --stdio` for .forge and .talostool files.
// Highlighting of .forge comes from the TextMate grammar (syntaxes/), and the server adds
// semantic tokens (node ids, capabilities, variables) on top.
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const config = vscode.workspace.getConfiguration("forgec");
  const [command, ...args] = config.get("command") || ["forgec"];
  const target = config.get("target");
  client = new LanguageClient(
    "forgec",
    "forgec",
    { command, args: [...args, "lsp", "--stdio"] },
    {
      documentSelector: [
        { scheme: "file", language: "forge" },
        { scheme: "file", language: "talostool" },
      ],
      initializationOptions: target ? { forgec: { target } } : {},
    },
  );
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
