"""The manager name of a write: ``?fieldManager=``, else the client's user agent.

Role: kube-apiserver's ``managerOrUserAgent``: the user agent up to its first
``/`` (``kubectl/v1.36.2 (linux/amd64) ...`` -> ``kubectl``), with non-printable
characters dropped and cut at 128 bytes of UTF-8 (whole characters only). An
empty result becomes ``unknown`` in the managedFields entry (:mod:`.field_manager`).
Apply requires an explicit ``fieldManager``; that check is the handler's.
"""

from __future__ import annotations

FIELD_MANAGER_MAX_LENGTH = 128


def manager_or_user_agent(manager: str | None, user_agent: str | None) -> str:
    if manager:
        return manager
    return prefix_from_user_agent(user_agent or "")


def prefix_from_user_agent(user_agent: str) -> str:
    out: list[str] = []
    size = 0
    for ch in user_agent.split("/", 1)[0]:
        if not ch.isprintable() and ch != " ":
            continue
        n = len(ch.encode())
        if size + n > FIELD_MANAGER_MAX_LENGTH:
            break
        out.append(ch)
        size += n
    return "".join(out)
