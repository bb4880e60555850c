"""The secret rules: a leaf library (standard library and attrs only, nothing from forgec).

`forgec.passes.secrets` uses them to find secrets in a manifest, `forgec.render.text` to redact
them from what it prints; both may import a leaf, where neither may import the other.
"""
