"""Commands a simulated container can run (``kubectl exec``), with their output.

Role: the answer of the kubelet's exec endpoint. There is no process to run
the command in, so a few commands are simulated from the pod itself:

- ``echo [-n] ARGS``, ``true``, ``false``, ``exit N``;
- ``hostname`` (the pod's name, as the container's UTS namespace has it),
  ``pwd`` (``/``), ``whoami`` (``root``), ``env`` (HOSTNAME, PATH and the
  container's literal ``env`` values);
- ``cat`` with no arguments: stdin back on stdout;
- ``sh -c SCRIPT`` / ``bash -c SCRIPT``: the commands of SCRIPT separated by
  ``;`` or newlines, each one of the above (the last exit code is returned).

Anything else fails as containerd fails to start an unknown executable
(exit 126 is not reached: the exec itself errors, as on a real node).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ExecResult", "run_command"]

_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(slots=True)
class ExecResult:
    stdout: bytes = b""
    stderr: bytes = b""
    exit_code: int = 0
    error: str | None = None
    """The exec could not start (the runtime's error message)."""
    reads_stdin: bool = False


def _env(pod: Mapping[str, Any], container: Mapping[str, Any]) -> bytes:
    lines = [f"PATH={_PATH}", f"HOSTNAME={(pod.get('metadata') or {}).get('name', '')}"]
    for e in container.get("env") or ():
        if "value" in e:
            lines.append(f"{e.get('name', '')}={e.get('value', '')}")
    lines.append("HOME=/root")
    return ("\n".join(lines) + "\n").encode()


def _one(argv: list[str], pod: Mapping[str, Any], container: Mapping[str, Any],
         stdin: bytes, out: ExecResult) -> bool:
    """Run one simple command into ``out``; False when it does not exist."""
    cmd, args = argv[0], argv[1:]
    name = cmd.rsplit("/", 1)[-1]
    if name == "echo":
        newline = True
        if args[:1] == ["-n"]:
            newline, args = False, args[1:]
        out.stdout += (" ".join(args) + ("\n" if newline else "")).encode()
        out.exit_code = 0
    elif name == "true":
        out.exit_code = 0
    elif name == "false":
        out.exit_code = 1
    elif name == "exit":
        try:
            out.exit_code = int(args[0]) & 0xFF if args else 0
        except ValueError:
            out.stderr += f"exit: Illegal number: {args[0]}\n".encode()
            out.exit_code = 2
    elif name == "hostname":
        out.stdout += ((pod.get("metadata") or {}).get("name", "") + "\n").encode()
        out.exit_code = 0
    elif name == "pwd":
        out.stdout += b"/\n"
        out.exit_code = 0
    elif name == "whoami":
        out.stdout += b"root\n"
        out.exit_code = 0
    elif name in ("env", "printenv") and not args:
        out.stdout += _env(pod, container)
        out.exit_code = 0
    elif name == "cat" and not args:
        out.reads_stdin = True
        out.stdout += stdin
        out.exit_code = 0
    else:
        return False
    return True


def _not_found(cmd: str) -> str:
    return (f'failed to exec in container: failed to start exec: OCI runtime exec failed: '
            f'exec failed: unable to start container process: exec: "{cmd}": executable file '
            f'not found in $PATH: unknown')


def run_command(command: list[str], pod: Mapping[str, Any], container: Mapping[str, Any],
                stdin: bytes = b"") -> ExecResult:
    """The outcome of ``command`` in the container (``stdin``: all the input it gets)."""
    out = ExecResult()
    if not command:
        out.error = "command is required"
        return out
    name = command[0].rsplit("/", 1)[-1]
    if name in ("sh", "bash", "ash") and len(command) >= 3 and command[1] == "-c":
        for part in command[2].replace("\n", ";").split(";"):
            try:
                argv = shlex.split(part)
            except ValueError as e:
                out.stderr += f"{name}: syntax error: {e}\n".encode()
                out.exit_code = 2
                return out
            if not argv:
                continue
            if argv[0] == "exit":
                _one(argv, pod, container, stdin, out)
                return out
            if not _one(argv, pod, container, stdin, out):
                out.stderr += f"{name}: {argv[0]}: not found\n".encode()
                out.exit_code = 127
        return out
    if not _one(list(command), pod, container, stdin, out):
        out.error = _not_found(command[0])
    return out
