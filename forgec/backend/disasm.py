"""A readable listing of a Program: one instruction per line, with its node and source line.

    ; dynamic:daily-digest v1  maxTransitions 40  risk R2
       0  enter          fetch                         ; fetch (capability) line 14
       1  eval           {query: $input.q, limit: 5}   ; fetch (capability) line 14

Operands are shown as what they mean (a value in manifest-like notation, a call with its retry
and undo, a jump's target pc), never as bare pool indices.
"""

from __future__ import annotations

from typing import Any

from forgec.runtime.jsontext import dumps_text
from forgec.runtime.opcodes import OPS, Op, OperandKind
from forgec.runtime.program import Program
from forgec.runtime.values import path_text

_WIDTH = 48


def _short(text: str, width: int = _WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def describe_value(program: Program, desc: Any) -> str:
    kind, arg = desc
    if kind == "const":
        return dumps_text(program.consts[arg])
    if kind == "ref":
        return "$" + path_text(program.paths[arg])
    if kind == "tpl":
        text = "".join(
            p if isinstance(p, str) else "{{" + path_text(program.paths[p[1]]) + "}}" for p in arg
        )
        return "$" + dumps_text(text)
    if kind == "cred":
        return f"$credential({arg})"
    if kind == "obj":
        return "{" + ", ".join(f"{k}: {describe_value(program, v)}" for k, v in arg) + "}"
    if kind == "list":
        return "[" + ", ".join(describe_value(program, v) for v in arg) + "]"
    return repr(desc)


def describe_operand(program: Program, op: Op, arg: int) -> str:
    kind = OPS[op].operand
    if kind is OperandKind.NONE:
        return ""
    if kind is OperandKind.NODE:
        return str(program.nodes[arg]["id"])
    if kind is OperandKind.VALUE:
        return describe_value(program, program.values[arg])
    if kind is OperandKind.PATH:
        return path_text(program.paths[arg])
    if kind is OperandKind.LABEL:
        return f"-> {arg}"
    if kind is OperandKind.CALL:
        call = program.calls[arg]
        text = str(call["capability"])
        if call["attempts"] > 1:
            text += f" retry={call['attempts']}x{call['backoffMs']}ms"
        if call["compensation"]:
            text += f" undo={call['compensation']}"
        return text
    if kind is OperandKind.MODEL:
        model = program.models[arg]
        reqs = ",".join(f"{k}={v}" for k, v in model["requirements"].items())
        schema = " schema" if model.get("outputSchema") is not None else ""
        return f"{model['op']}" + (f" [{reqs}]" if reqs else "") + schema
    if kind is OperandKind.COND:
        cond = program.conds[arg]
        left = describe_value(program, program.values[cond["left"]])
        if cond["right"] is None:
            return f"{cond['op']} {left}"
        return f"{left} {cond['op']} {describe_value(program, program.values[cond['right']])}"
    if kind is OperandKind.LOOP:
        loop = program.loops[arg]
        index = f", {loop['indexVar']}" if loop["indexVar"] else ""
        return f"{loop['itemVar']}{index} max={loop['maxItems']}"
    if kind is OperandKind.FAIL:
        fail = program.fails[arg]
        return f"{fail['code']} {dumps_text(fail['message'])}"
    return str(arg)


def disassemble(program: Program) -> str:
    risk = program.marks.get("risk", "R0")
    lines = [
        f"; {program.name} v{program.version}  maxTransitions {program.max_transitions}"
        f"  risk {risk}"
    ]
    for pc, (op_num, arg, node_index) in enumerate(program.code):
        op = Op(op_num)
        node = program.nodes[node_index]
        where = f"{node['id']} ({node['type']})"
        if node.get("line") is not None:
            where += f" line {node['line']}"
        operand = _short(describe_operand(program, op, arg))
        lines.append(f"{pc:4d}  {OPS[op].name:<14} {operand:<{_WIDTH}} ; {where}".rstrip())
    return "\n".join(lines) + "\n"
