"""pykcm.manager.delegated_auth with a fake API server: who is anonymous, what is cached,
what a review error turns into, which paths skip authorization."""

from __future__ import annotations

from typing import Any, cast

from pykcm.client import Client
from pykcm.manager.delegated_auth import ANONYMOUS, DelegatedAuth, UserInfo, path_allowed


class FakeClient:
    """Answers TokenReviews from ``tokens`` and SubjectAccessReviews from ``allowed``."""

    def __init__(self, tokens: dict[str, dict[str, Any]], allowed: set[tuple[str, str]],
                 fail: bool = False) -> None:
        self.tokens = tokens
        self.allowed = allowed
        self.fail = fail
        self.calls: list[str] = []

    async def request(self, method: str, path: str, *, body: Any = None) -> Any:
        self.calls.append(path)
        if self.fail:
            raise ConnectionError("connection refused")
        spec = body["spec"]
        if path.endswith("/tokenreviews"):
            user = self.tokens.get(spec["token"])
            return {"status": {"authenticated": True, "user": user} if user else {}}
        allowed = (spec["user"], spec["nonResourceAttributes"]["path"]) in self.allowed
        return {"status": {"allowed": allowed}}

    async def close(self) -> None:
        pass


def _auth(fake: FakeClient) -> DelegatedAuth:
    return DelegatedAuth(cast(Client, fake), cast(Client, fake))


def test_path_allowed_exact_and_prefix() -> None:
    assert path_allowed(["/healthz"], "/healthz")
    assert not path_allowed(["/healthz"], "/healthz/x")
    assert path_allowed(["/healthz*"], "/healthz/x")
    assert path_allowed(["metrics"], "/metrics")  # the leading / is optional
    assert not path_allowed([], "/healthz")


async def test_anonymous_without_a_token_and_401_for_a_bad_one() -> None:
    fake = FakeClient({"good": {"username": "alice", "groups": ["g"]}}, set())
    auth = _auth(fake)
    assert await auth.authenticate(None) == ANONYMOUS
    assert await auth.authenticate("Basic abc") == ANONYMOUS
    assert await auth.authenticate("Bearer good") == UserInfo("alice", groups=("g",))
    assert await auth.authenticate("Bearer bad") is None
    refusal = await auth.check("Bearer bad", "GET", "/healthz")
    assert refusal is not None and refusal.code == 401  # even on an always-allowed path


async def test_reviews_are_cached_both_ways() -> None:
    fake = FakeClient({"t": {"username": "alice"}}, {("alice", "/metrics")})
    auth = _auth(fake)
    for _ in range(3):
        assert await auth.check("Bearer t", "GET", "/metrics") is None
        refusal = await auth.check("Bearer t", "GET", "/configz")
        assert refusal is not None and refusal.code == 403
        assert await auth.check("Bearer nope", "GET", "/metrics") is not None
    assert fake.calls.count("/apis/authentication.k8s.io/v1/tokenreviews") == 2
    assert fake.calls.count("/apis/authorization.k8s.io/v1/subjectaccessreviews") == 2


async def test_privileged_group_and_always_allowed_paths_ask_nobody() -> None:
    fake = FakeClient({}, set())
    auth = _auth(fake)
    masters = UserInfo("admin", groups=("system:masters",))
    assert await auth.authorize(masters, "get", "/configz") == (True, "")
    assert await auth.authorize(ANONYMOUS, "get", "/readyz") == (True, "")
    assert fake.calls == []


async def test_a_failed_review_is_a_401_or_a_500() -> None:
    auth = _auth(FakeClient({}, set(), fail=True))
    refusal = await auth.check("Bearer t", "GET", "/metrics")
    assert refusal is not None and refusal.code == 401
    refusal = await auth.check(None, "GET", "/metrics", "/metrics?x=1")
    assert refusal is not None and refusal.code == 500
    assert refusal.body == ('Internal Server Error: "/metrics?x=1": connection refused\n')
