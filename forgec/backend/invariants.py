"""Named invariants of lowered code, checked after every lowering (CPython `check_cfg`).

Each is a predicate over the linear code returning the problems it finds (empty: it holds).
A failure is a compiler bug, never the user's: `check_invariants` raises `LoweringError` with
every broken invariant named, so a bad Program never leaves the backend.
"""

from __future__ import annotations

from collections.abc import Callable

from forgec.runtime.opcodes import OPS, Op, OperandKind
from forgec.runtime.program import Program, ProgramError, stack_depths, verify

Code = list[list[int]]


def _targets(code: Code, pc: int) -> list[int]:
    """Control-flow successors of one instruction."""
    op = Op(code[pc][0])
    info = OPS[op]
    out = []
    if info.falls_through:
        out.append(pc + 1)
    if info.jump_effect is not None:
        out.append(code[pc][1])
    return out


def jumps_in_range(code: Code) -> list[str]:
    problems = []
    for pc, (op, arg, _node) in enumerate(code):
        if OPS[Op(op)].operand is OperandKind.LABEL and not 0 <= arg < len(code):
            problems.append(f"code[{pc}] jumps to {arg}, outside 0..{len(code) - 1}")
    return problems


def stack_depth_consistent(code: Code) -> list[str]:
    try:
        stack_depths(code)
    except ProgramError as exc:
        return [str(exc)]
    return []


def forward_jumps_only_except_loop_back_edges(code: Code) -> list[str]:
    """Jumps go forward, except a JUMP from inside a loop body back to its FOREACH_NEXT."""
    problems = []
    for pc, (op, arg, _node) in enumerate(code):
        if OPS[Op(op)].operand is not OperandKind.LABEL or arg > pc:
            continue
        head = code[arg] if 0 <= arg < len(code) else None
        is_back_edge = (
            op == Op.JUMP
            and head is not None
            and head[0] == Op.FOREACH_NEXT
            and arg < pc < head[1]  # inside the loop: after its head, before its exit
        )
        if not is_back_edge:
            problems.append(f"code[{pc}] jumps backwards to {arg}")
    return problems


def every_path_terminates(code: Code) -> list[str]:
    """Every reachable instruction can reach a RETURN or FAIL, and none falls off the end."""
    problems = []
    reachable = {0}
    work = [0]
    while work:
        pc = work.pop()
        for target in _targets(code, pc):
            if not 0 <= target < len(code):
                problems.append(f"code[{pc}] continues past the end of the code")
                continue
            if target not in reachable:
                reachable.add(target)
                work.append(target)
    preds: dict[int, list[int]] = {}
    for pc in reachable:
        for target in _targets(code, pc):
            preds.setdefault(target, []).append(pc)
    ends = [pc for pc in reachable if code[pc][0] in (Op.RETURN, Op.FAIL)]
    finishing = set(ends)
    work = list(ends)
    while work:
        pc = work.pop()
        for pred in preds.get(pc, []):
            if pred not in finishing:
                finishing.add(pred)
                work.append(pred)
    stuck = sorted(reachable - finishing)
    if stuck:
        problems.append(f"code{stuck} never reaches a return or fail")
    return problems


INVARIANTS: tuple[tuple[str, Callable[[Code], list[str]]], ...] = (
    ("jumps_in_range", jumps_in_range),
    ("forward_jumps_only_except_loop_back_edges", forward_jumps_only_except_loop_back_edges),
    ("stack_depth_consistent", stack_depth_consistent),
    ("every_path_terminates", every_path_terminates),
)


def check_invariants(program: Program) -> None:
    from forgec.backend.lower import LoweringError

    problems: list[str] = []
    for name, check in INVARIANTS:
        problems.extend(f"{name}: {problem}" for problem in check(program.code))
        if problems and name == "jumps_in_range":
            break  # the others follow jumps and assume they land inside the code
    if not problems:
        try:
            verify(program)
        except ProgramError as exc:
            problems.append(f"program_well_formed: {exc}")
    if problems:
        raise LoweringError("lowered code breaks its invariants: " + "; ".join(problems))
