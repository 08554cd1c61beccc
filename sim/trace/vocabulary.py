"""What NVIDIA's own trace tools accept of a ``.cfg`` trace.

NVIDIA's trace parser and its Verilator converter know a smaller vocabulary
than our player: ``reg_write``, ``poll_reg_equal``, ``intr_notify(SOURCE,
sync_id)``, ``mem_load``, ``mem_init``, ``check_crc`` and ``check_nothing``.
Each sync id an ``intr_notify`` defines takes exactly one check, and a check
must name a sync id an ``intr_notify`` defined.  Everything this project
writes as a ``.cfg`` (``gen``, ``loadable --trace-out``) keeps to that;
:func:`bench_problems` says where a trace does not.
"""

from __future__ import annotations

from collections import Counter

from .ops import Op

BENCH_COMMANDS = {  # our Op names of the commands NVIDIA's tools accept
    "reg_write", "poll_reg", "intr_notify", "mem_load", "mem_init", "check_crc",
    "check_nothing",
}


def bench_problems(ops: list[Op]) -> list[str]:
    """One line per construct NVIDIA's trace tools would refuse (empty: none)."""
    problems = []
    defined: dict[str, str] = {}  # sync id -> where its intr_notify is
    checks: Counter = Counter()
    check_where: dict[str, str] = {}
    for op in ops:
        if op.cmd not in BENCH_COMMANDS:
            name = op.args[0] if op.cmd == "nop" else op.cmd
            problems.append(f"{op.where}: {name} is not in NVIDIA's trace vocabulary")
        elif op.cmd == "intr_notify":
            source, sync = op.args
            if not source:
                problems.append(f"{op.where}: intr_notify names no interrupt source")
            if sync in defined:
                problems.append(f"{op.where}: {sync} is defined twice (first at "
                                f"{defined[sync]})")
            defined.setdefault(sync, op.where)
        elif op.cmd in ("check_crc", "check_nothing"):
            sync = op.args[0]
            checks[sync] += 1
            check_where.setdefault(sync, op.where)
            if sync not in defined:
                problems.append(f"{op.where}: {sync} is checked but no intr_notify before "
                                f"defines it")
    for sync, where in defined.items():
        if checks[sync] != 1:
            problems.append(f"{where}: {sync} has {checks[sync]} checks (exactly one wanted)")
    return problems
