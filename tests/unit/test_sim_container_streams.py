"""The simulated containers' logs (scripted lines, ticks, RFC 3339 nano stamps) and the
commands ``kubectl exec`` can run in them."""

from __future__ import annotations

from typing import Any

from pykcm.sim.container_exec import run_command
from pykcm.sim.container_logs import (
    ANNOTATION_LOG_INTERVAL,
    ANNOTATION_LOGS,
    LogLine,
    format_line,
    format_nano,
    next_line_at,
    run_lines,
)

T0 = 1_800_000_000.0


def pod(**annotations: str) -> dict[str, Any]:
    return {"metadata": {"name": "web-1", "annotations": annotations},
            "spec": {"containers": [{"name": "app", "env": [{"name": "MODE", "value": "x"}]}]}}


def test_a_run_writes_its_script_at_start_then_ticks() -> None:
    p = pod(**{ANNOTATION_LOGS: "hello\nworld", ANNOTATION_LOG_INTERVAL: "2"})
    assert run_lines(p, T0, T0 + 5) == [LogLine(T0, "hello"), LogLine(T0, "world"),
                                        LogLine(T0 + 2, "tick 1"), LogLine(T0 + 4, "tick 2")]
    assert next_line_at(p, T0, T0 + 4) == T0 + 6
    assert run_lines(pod(), T0, T0 + 100) == []
    assert next_line_at(pod(), T0, T0) is None
    assert run_lines(pod(**{ANNOTATION_LOG_INTERVAL: "-1"}), T0, T0 + 9) == []


def test_lines_and_stamps_as_the_runtime_writes_them() -> None:
    assert format_nano(T0 + 0.25) == "2027-01-15T08:00:00.250000000Z"
    assert format_line(LogLine(T0, "hi"), False) == b"hi\n"
    assert format_line(LogLine(T0, "hi"), True) == b"2027-01-15T08:00:00.000000000Z hi\n"


def test_simulated_commands() -> None:
    p = pod()
    c = p["spec"]["containers"][0]
    assert run_command(["echo", "hi", "there"], p, c).stdout == b"hi there\n"
    assert run_command(["echo", "-n", "x"], p, c).stdout == b"x"
    assert run_command(["/bin/hostname"], p, c).stdout == b"web-1\n"
    assert run_command(["false"], p, c).exit_code == 1
    assert b"MODE=x\n" in run_command(["env"], p, c).stdout
    cat = run_command(["cat"], p, c, b"in")
    assert (cat.stdout, cat.reads_stdin) == (b"in", True)
    sh = run_command(["sh", "-c", "echo a; hostname\nexit 3"], p, c)
    assert (sh.stdout, sh.exit_code) == (b"a\nweb-1\n", 3)
    missing = run_command(["sh", "-c", "nope"], p, c)
    assert (missing.stderr, missing.exit_code) == (b"sh: nope: not found\n", 127)
    err = run_command(["nope"], p, c).error
    assert err is not None and 'exec: "nope": executable file not found in $PATH' in err
