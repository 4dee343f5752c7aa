"""Argument types shared by the subcommands: a bad value is one argparse error line, exit 2.

``type=port`` accepts 0-65535 (0: the kernel picks a free port), ``count``
a whole number >= 0, ``positive`` one >= 1, ``seconds`` a finite number >= 0.
:func:`add_seed` adds ``--seed N`` (every subcommand that runs a component) and
:func:`random_source` turns it into the component's
:class:`~pykcm.api.randomness.RandomSource`.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from pykcm.api.randomness import REAL_RANDOM, RandomSource, seeded

__all__ = ["add_seed", "count", "port", "positive", "random_source", "seconds"]


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def port(text: str) -> int:
    n = _int(text)
    if not 0 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"{n} is not a port number (0-65535; 0 picks a free one)")
    return n


def count(text: str) -> int:
    n = _int(text)
    if n < 0:
        raise argparse.ArgumentTypeError(f"{n} is negative")
    return n


def positive(text: str) -> int:
    n = _int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n} is not at least 1")
    return n


def seconds(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(x) or x < 0:
        raise argparse.ArgumentTypeError(f"{text} is not a number of seconds >= 0")
    return x


def add_seed(parser: Any) -> None:
    """``--seed N`` on a subcommand's parser (or argument group)."""
    parser.add_argument(
        "--seed", type=count, default=None, metavar="N",
        help="seed the component's randomness (jitter, generated names, UIDs, scheduler "
        "ties): two runs with the same seed draw the same numbers (pykcm's own flag; "
        "default: unseeded). Keys and tokens stay cryptographically random")


def add_virtual_time(parser: Any, title: str, help: str) -> Any:
    """The virtual-time group of a subcommand (``--virtual-time`` with its ``help``,
    ``--virtual-start``, ``--no-autojump``); returned for subcommand-specific flags."""
    vt = parser.add_argument_group(title)
    vt.add_argument("--virtual-time", action="store_true", help=help)
    vt.add_argument("--virtual-start", default="", metavar="RFC3339",
                    help="the virtual clock's start (default: the real time at start)")
    vt.add_argument("--no-autojump", action="store_true",
                    help="with --virtual-time: time moves only when advanced")
    return vt


def random_source(args: argparse.Namespace, component: str) -> RandomSource:
    """``component``'s random source for ``--seed`` (unseeded without it)."""
    seed = getattr(args, "seed", None)
    return REAL_RANDOM if seed is None else seeded(seed, component)
