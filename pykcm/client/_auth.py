"""Credentials per request: static token, rotating token file, basic auth, exec plugin.

The token file source is client-go's cached file token source: the file is
read at most once per `period` (a minute), and again right after a 401 so a
rotated token is picked up at once. A read that fails keeps the last good
token (the file is being rewritten, most likely).
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable

from pykcm.api.clock import REAL_CLOCK, Clock
from pykcm.client.config import Config, ConfigError, TokenSource
from pykcm.client.exec_credential import ExecCredential, ExecCredentialProvider, cluster_info

log = logging.getLogger("pykcm.client")


class FileTokenSource:
    """A bearer token read from a file, re-read at most every `period` seconds or on reset."""

    def __init__(self, path: str, *, period: float = 60.0,
                 clock: Callable[[], float] = REAL_CLOCK.monotonic) -> None:
        self.path = path
        self.period = period
        self._clock = clock
        self._token: str | None = None
        self._read_at = 0.0
        self.read_count = 0

    def _read(self) -> str:
        with open(self.path) as f:
            tok = f.read().strip()
        self.read_count += 1
        if not tok:
            raise ValueError(f"read empty token from file {self.path!r}")
        return tok

    def token(self) -> str:
        now = self._clock()
        if self._token is not None and now - self._read_at < self.period:
            return self._token
        try:
            tok = self._read()
        except (OSError, ValueError) as exc:
            if self._token is None:
                raise ConfigError(f"reading token file {self.path}: {exc}") from None
            log.warning("reading token file %s: %s (keeping the previous token)", self.path, exc)
            self._read_at = now
            return self._token
        self._token = tok
        self._read_at = now
        return tok

    def reset(self) -> None:
        """Re-read on the next call (after a 401)."""
        self._read_at = -float("inf")


Credential = str | ExecCredential | None


class Authenticator:
    """Chooses the Authorization header for each request and refreshes it on 401."""

    def __init__(self, config: Config, clock: Clock = REAL_CLOCK) -> None:
        # the client's clock: exec credentials' expiry, the token file's re-read period
        self._static: str | None = None
        self.token_source: FileTokenSource | None = None
        self.exec: ExecCredentialProvider | None = None
        self.dynamic: TokenSource | None = config.token_source
        if config.exec_provider is not None:
            self.exec = ExecCredentialProvider(config.exec_provider, cluster=cluster_info(
                config.host, ca_data=config.read_ca_data() if config.exec_provider
                .provide_cluster_info else None, tls_server_name=config.tls_server_name,
                insecure=config.insecure, proxy_url=config.proxy_url,
                disable_compression=config.disable_compression), clock=clock.now)
        if config.token_file:
            self.token_source = FileTokenSource(config.token_file, clock=clock.monotonic)
        elif config.token:
            self._static = "Bearer " + config.token
        elif config.username is not None or config.password is not None:
            raw = f"{config.username or ''}:{config.password or ''}".encode()
            self._static = "Basic " + base64.b64encode(raw).decode()

    @property
    def refreshable(self) -> bool:
        return self.exec is not None or self.token_source is not None or self.dynamic is not None

    async def credential(self) -> tuple[str | None, Credential]:
        """(Authorization header value or None, the credential it came from)."""
        if self.dynamic is not None:
            tok = await self.dynamic.token()
            return "Bearer " + tok, tok
        if self.exec is not None:
            cred = await self.exec.get()
            if cred.token:
                return "Bearer " + cred.token, cred
            # A certificate: the TLS layer carries it; a 401 re-runs the plugin.
            if self.token_source is not None:
                return "Bearer " + self.token_source.token(), cred
            return self._static, cred
        if self.token_source is not None:
            tok = self.token_source.token()
            return "Bearer " + tok, tok
        return self._static, None

    async def exec_credential(self) -> ExecCredential | None:
        return await self.exec.get() if self.exec is not None else None

    async def refresh(self, used: Credential) -> bool:
        """After a 401 with `used`: renew; True when the credential is now different."""
        if self.dynamic is not None and isinstance(used, str):
            self.dynamic.reset()
            try:
                return await self.dynamic.token() != used
            except Exception:  # noqa: BLE001 - the 401 stands
                return False
        if self.exec is not None and isinstance(used, ExecCredential):
            fresh = await self.exec.refresh(used)
            return fresh.serial != used.serial
        if self.token_source is not None and isinstance(used, str):
            self.token_source.reset()
            try:
                return self.token_source.token() != used
            except ConfigError:
                return False
        return False
