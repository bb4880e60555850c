"""The Tool Forge screen (SPEC §18): a person's screen in a browser over the same store, checks
and consent as the CLI.

`app.build_app` is the ASGI app (Starlette, Jinja2 templates with autoescape, a few lines of
plain JS from `static/`), wrapped in `security.Guard` (loopback Host, launch token, CSRF and
Origin, CSP). `pages` are the HTML routes, `api` the JSON ones; both call the functions the CLI
calls (`forgec.api.check`, `forgec.answers`, `forgec.store.Store`, `forgec.store.running`).
`server.serve` binds 127.0.0.1, prints the launch URL and runs until Ctrl-C or SIGTERM.
The security model, for a reviewer: docs/screen.md.
"""
