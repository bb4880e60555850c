"""`forgec lsp`: a language server for `.forge` and `.talostool` files (pygls 2, stdio).

Nothing here checks anything itself: every diagnostic, hint, span and fact comes from
`forgec.check` and the IR it builds, so the editor and `forgec check` can never disagree.
The modules split by job: `analysis` (one checked document and its symbol index), `positions`
(forgec spans ↔ LSP ranges), `features` (what each request answers), `server` (pygls wiring).
"""
