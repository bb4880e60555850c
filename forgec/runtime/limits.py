"""The bounds of a run (SPEC §8, §16), in one table that the VM, the value builders and the
static value-size pass all read. Sizes are bytes of compact UTF-8 JSON. (The transition cap
of 256 is `forgec.runtime.program.MAX_TRANSITIONS`.)"""

from __future__ import annotations

INPUT_LIMIT = 65_536  # a run's input (RUN_INPUT_TOO_LARGE)
OUTPUT_LIMIT = 262_144  # a run's output (RUN_OUTPUT_TOO_LARGE)
RESULT_LIMIT = 262_144  # a capability result or model answer, and a step's input
VALUE_LIMIT = 262_144  # any value a run builds: template, list, object (RUN_VALUE_TOO_LARGE)
