"""The one opcode table of `forgec.program.v1` (STYLE habit 1; Lua's `lopcodes.h`).

Ops are COARSE: one op does what a whole piece of a node does (evaluate a pre-compiled value,
call a capability with its retries, evaluate a whole condition), so the VM dispatches a few ops
per node instead of one per primitive action. A naive one-op-per-action machine measured 19×
slower than hand-written Python; per-node ops keep the loop within a small factor of it.

Every instruction is `[op, arg, node]`: `arg` is one integer operand whose meaning is the op's
`OperandKind` (an index into one of the Program's pools/tables, a jump target, or nothing), and
`node` indexes the Program's node table (the source info: node id, manifest pointer, line).

The table lives in the runtime (not the backend) because the VM needs it and the runtime must
not import the compiler; `forgec.backend` re-exports it.

ORDER OP: adding an op means a row in `OPS` (a test checks every op has one).
"""

from __future__ import annotations

import enum

import attrs


class Op(enum.IntEnum):
    ENTER = 1  # [] -> []            count one transition (bounded); arg: node index
    EVAL = 2  # [] -> [v]            push a pre-compiled value; arg: values pool index
    STORE = 3  # [v] -> []           write a variable or state.FIELD; arg: paths pool index
    POP = 4  # [v] -> []             discard (a capability step without a target)
    CALL = 5  # [in] -> [res]        one capability step, retries included; arg: calls table
    MODEL = 6  # [in] -> [res]       one llm step through the host; arg: models table
    COMPARE = 7  # [] -> [b]         evaluate a whole condition; arg: conds table
    JUMP_IF_FALSE = 8  # [b] -> []   jump when b is false; arg: target pc (forward)
    JUMP = 9  # [] -> []             jump; arg: target pc (forward, or a loop's back-edge)
    FOREACH_INIT = 10  # [src] -> [it]  check list + maxItems, push iterator; arg: loops table
    FOREACH_NEXT = 11  # [it] -> [it] | []  bind next item, or pop and jump; arg: exit pc
    RETURN = 12  # [v] -> (end)      end the run with the value as output
    FAIL = 13  # [] -> (end)         end the run with a fail node's code; arg: fails table


class OperandKind(enum.Enum):
    NONE = "none"
    NODE = "node"
    VALUE = "value"
    PATH = "path"
    CALL = "call"
    MODEL = "model"
    COND = "cond"
    LOOP = "loop"
    LABEL = "label"  # a pc once linearized
    FAIL = "fail"


@attrs.frozen
class OpInfo:
    """One row of the table. Stack slots are typed: V a JSON value, B a condition result,
    I a loop iterator. `pops`/`pushes` hold the kinds, top of stack last."""

    op: Op
    name: str  # the disassembly name
    operand: OperandKind
    pops: str = ""
    pushes: str = ""
    jumps: bool = False  # may jump to its LABEL operand (with the stack its pops left)
    falls_through: bool = True  # False for RETURN, FAIL, JUMP
    does: str = ""  # for people: docs/runtime.md's opcode table is generated from this

    @property
    def effect(self) -> int:
        """Stack effect on the path that continues to the next instruction."""
        return len(self.pushes) - len(self.pops)

    @property
    def jump_effect(self) -> int | None:
        """Stack effect on the path that jumps; None when the op never jumps."""
        return -len(self.pops) if self.jumps else None


OPS: dict[Op, OpInfo] = {
    info.op: info
    for info in (
        OpInfo(Op.ENTER, "enter", OperandKind.NODE, does="count one transition against the limit"),
        OpInfo(Op.EVAL, "eval", OperandKind.VALUE, pushes="V", does="push a pre-compiled value"),
        OpInfo(
            Op.STORE, "store", OperandKind.PATH, pops="V", does="write a variable or `state.FIELD`"
        ),
        OpInfo(
            Op.POP,
            "pop",
            OperandKind.NONE,
            pops="V",
            does="discard (a capability step without a target)",
        ),
        OpInfo(
            Op.CALL,
            "call",
            OperandKind.CALL,
            pops="V",
            pushes="V",
            does="one capability step, retries included; records its undo",
        ),
        OpInfo(
            Op.MODEL,
            "model",
            OperandKind.MODEL,
            pops="V",
            pushes="V",
            does="one `llm` step through the host",
        ),
        OpInfo(
            Op.COMPARE,
            "compare",
            OperandKind.COND,
            pushes="B",
            does="evaluate a whole condition",
        ),
        OpInfo(
            Op.JUMP_IF_FALSE,
            "jump_if_false",
            OperandKind.LABEL,
            pops="B",
            jumps=True,
            does="jump when the condition was false",
        ),
        OpInfo(
            Op.JUMP,
            "jump",
            OperandKind.LABEL,
            jumps=True,
            falls_through=False,
            does="jump (forward, or a loop body's back-edge)",
        ),
        OpInfo(
            Op.FOREACH_INIT,
            "foreach_init",
            OperandKind.LOOP,
            pops="V",
            pushes="I",
            does="check list and `maxItems`, push the iterator",
        ),
        # continues with the iterator still on the stack; jumps out having popped it
        OpInfo(
            Op.FOREACH_NEXT,
            "foreach_next",
            OperandKind.LABEL,
            pops="I",
            pushes="I",
            jumps=True,
            does="bind the next item; when done pop and jump to the exit",
        ),
        OpInfo(
            Op.RETURN,
            "return",
            OperandKind.NONE,
            pops="V",
            falls_through=False,
            does="end the run with the value as output",
        ),
        OpInfo(
            Op.FAIL,
            "fail",
            OperandKind.FAIL,
            falls_through=False,
            does="end the run with a `fail` node's code and message",
        ),
    )
}
