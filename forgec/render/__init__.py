"""Renderers: diagnostics as text/JSON/SARIF, consent cards, flow pictures."""
