"""Five-field cron expressions (schedule.manage `cronExpr`, manifest schedule triggers).

Accepted: standard (Vixie) cron — minute, hour, day of month, month, day of week, separated by
spaces or tabs; each field a comma list of `*`, `N` or `N-M`, each optionally `/STEP`; month and
weekday names (`jan`, `mon`, any case) in their fields; weekday 0–7 (0 and 7 are Sunday). Refused:
other field counts (seconds, years), `@daily`-style macros and the non-standard extensions
(`L`, `W`, `#`, `?`, `H`) some schedulers take, so an expression means the same to every cron.

This module is the one cron rule (SPEC §16): the catalog's static check of `schedule.manage`
`cronExpr`, the manifest's schedule triggers and the host's `schedule.manage` at run time all call
`validate_cron` (or `check_cron`, its list form), so what one accepts the others accept.

Algorithm: our own field parser gives a precise message (which field, which value, the valid
range) and the sets of values each field selects, which also catches day-of-month/month
combinations that can never fire (`0 0 30 2 *`). A valid expression is then confirmed by
`croniter` (imported lazily, only when an expression gets that far), the library the host
schedules with, so what passes here the host can run.
"""

from __future__ import annotations

FIELDS = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 7),
)
# the largest step each field takes: its number of distinct values (a week has 7 days, though
# the field also takes 7 for Sunday); a larger step could only ever select the start
SPANS = (60, 24, 31, 12, 7)
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_MAX_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class _FieldError(Exception):
    pass


def _value(text: str, index: int) -> int:
    name, low, high = FIELDS[index]
    lowered = text.lower()
    if index == 3 and lowered in MONTHS:
        return MONTHS.index(lowered) + 1
    if index == 4 and lowered in DAYS:
        return DAYS.index(lowered)
    if not text.isascii() or not text.isdigit():
        raise _FieldError(f"`{text}` is not a valid {name} value")
    number = int(text)
    if not low <= number <= high:
        raise _FieldError(f"{name} value {number} is out of range {low}-{high}")
    return number


def _field_values(text: str, index: int) -> set[int]:
    name, low, high = FIELDS[index]
    selected: set[int] = set()
    for item in text.split(","):
        if not item:
            raise _FieldError(f"empty item in the {name} field `{text}`")
        base, slash, step_text = item.partition("/")
        step = 1
        if slash:
            span = SPANS[index]
            if (
                not step_text.isascii()
                or not step_text.isdigit()
                or not 1 <= int(step_text) <= span
            ):
                raise _FieldError(f"step `{step_text}` in the {name} field must be 1 to {span}")
            step = int(step_text)
        if base == "*":
            start, end = low, high
        elif "-" in base:
            first, _, last = base.partition("-")
            start, end = _value(first, index), _value(last, index)
            if start > end:
                raise _FieldError(f"range `{base}` in the {name} field runs backwards")
        else:
            start = _value(base, index)
            # `N/STEP` means from N to the end of the range, as Vixie cron reads it
            end = high if slash else start
        selected.update(range(start, end + 1, step))
    return selected


def check_cron(expr: str) -> list[str]:
    """Problems with a 5-field cron expression (empty when valid)."""
    if not isinstance(expr, str):
        return ["a cron expression must be a string"]
    if not expr.isascii() or any(ord(ch) < 0x20 and ch != "\t" for ch in expr):
        return ["a cron expression is plain ASCII: digits, names, `* , - /`, spaces"]
    parts = expr.split()
    if expr.strip().startswith("@"):
        return [f"`{expr.strip()[:20]}` macros are not accepted: write the 5 fields"]
    if len(parts) != 5:
        return [
            f"a cron expression has 5 fields (minute hour day-of-month month day-of-week), "
            f"this one has {len(parts)}"
        ]
    selections: list[set[int]] = []
    problems: list[str] = []
    for index, part in enumerate(parts):
        try:
            selections.append(_field_values(part, index))
        except _FieldError as error:
            problems.append(str(error))
    if problems:
        return problems
    days, months, weekday_field = selections[2], selections[3], parts[4]
    # a day of week starting with `*` leaves the day of month alone in deciding (Vixie cron);
    # otherwise either field may match, so the day of week still fires
    if weekday_field.startswith("*") and min(days) > max(_MAX_DAYS[m - 1] for m in months):
        return ["the day of month never occurs in the selected months: it would never run"]
    try:
        from croniter import croniter

        if not croniter.is_valid(" ".join(parts)):
            return ["the cron library refuses this expression"]
    except Exception as error:  # a library crash must not become a traceback
        return [f"the cron library refuses this expression ({type(error).__name__})"]
    return []


def validate_cron(expr: str) -> str | None:
    """The one cron rule: None when `expr` is accepted, else the first problem (one line)."""
    problems = check_cron(expr)
    return problems[0] if problems else None


def normalize_cron(expr: str) -> str:
    """An accepted expression as it is stored: the five fields separated by single spaces."""
    return " ".join(expr.split())
