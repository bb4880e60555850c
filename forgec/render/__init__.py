"""Renderers: diagnostics as text/JSON/SARIF, consent cards, flow pictures; `safe.safe_text`,
which every text renderer sends a tool's text through."""
