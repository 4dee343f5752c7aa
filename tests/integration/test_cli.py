"""The `pykcm` command: one clear line and a non-zero exit on bad input."""

from __future__ import annotations

import socket
import subprocess
import sys


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pykcm", *args], capture_output=True, text=True,
                          timeout=60, check=False)


def test_unknown_command_and_flag() -> None:
    p = run("nosuch")
    assert p.returncode == 2 and "invalid choice" in p.stderr
    p = run("apiserver", "--port", "notaport")
    assert p.returncode == 2 and "argument --port: 'notaport' is not a whole number" in p.stderr


def test_port_in_use_is_one_line(tmp_path: object) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        p = run("apiserver", "--port", str(port))
    assert p.returncode == 1
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pykcm: error:"), p.stderr


def test_missing_token_file_is_one_line() -> None:
    p = run("apiserver", "--port", "0", "--token-auth-file", "/nonexistent/tokens.csv")
    assert p.returncode == 1
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "tokens.csv" in lines[0], p.stderr


def test_bad_service_account_flags_are_one_line(tmp_path: object) -> None:
    p = run("apiserver", "--port", "0", "--service-account-max-token-expiration", "soon")
    assert p.returncode == 2 and p.stderr.strip() == (
        'pykcm: error: time: invalid duration "soon"'), p.stderr
    p = run("apiserver", "--port", "0", "--service-account-signing-key-file",
            "/nonexistent/sa.key")
    assert p.returncode == 1
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "sa.key" in lines[0], p.stderr
    p = run("apiserver", "--port", "0", "--service-account-max-token-expiration", "10m")
    assert p.returncode == 1 and p.stderr.strip() == (
        "pykcm: error: the service-account-max-token-expiration must be between 1 hour and "
        "2^32 seconds"), p.stderr
