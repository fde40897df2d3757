"""How the client signs in: a password (tokens from the server, renewed when refused), an API
key of a service user, or a token from elsewhere (the identity provider's, say)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional

if TYPE_CHECKING:
    from ._transport import Call


class Credential:
    """What the client sends as its bearer credential, and how it gets a new one."""

    #: The bearer credential to send, when there is one.
    token: Optional[str] = None

    def must_sign_in(self) -> bool:
        """Whether a call is needed before the first request."""
        return False

    def renewable(self) -> bool:
        """Whether a refused credential can be replaced by signing in again."""
        return False

    def renewals(self) -> "List[Call]":
        """The calls that may give a new credential, to try in order."""
        return []

    def took(self, answer: Any) -> None:
        """Keeps what a successful renewal call answered."""

    def expired(self) -> None:
        """The server refused the current credential."""
        self.token = None


class Anonymous(Credential):
    """No credential: a server run with `--no-auth`."""


class Token(Credential):
    """A bearer token as it is: an access token from `pangolin login`, an identity provider's
    token, or an API key (`pgl_...`)."""

    def __init__(self, token: str) -> None:
        self.token = token

    def __repr__(self) -> str:
        return "Token(<redacted>)"


class ApiKey(Token):
    """A service user's API key (`pgl_<id>_<secret>`)."""

    def __init__(self, key: str) -> None:
        if not key.startswith("pgl_"):
            raise ValueError("an API key starts with `pgl_`")
        super().__init__(key)

    def __repr__(self) -> str:
        return "ApiKey(<redacted>)"


class Password(Credential):
    """A user's name and password (`tenant` None for a root-scope user): the client signs in
    with `POST /api/v1/login` before its first request, and when the server refuses the access
    token it renews the pair with the refresh token, or signs in again."""

    def __init__(self, username: str, password: str, tenant: Optional[str] = None) -> None:
        self.username = username
        self._password = password
        self.tenant = tenant
        self.refresh_token: Optional[str] = None

    def __repr__(self) -> str:
        return f"Password(username={self.username!r}, tenant={self.tenant!r})"

    def must_sign_in(self) -> bool:
        return self.token is None

    def renewable(self) -> bool:
        return True

    def renewals(self) -> "List[Call]":
        from ._transport import Call

        calls = []
        if self.refresh_token:
            calls.append(
                Call(
                    "POST",
                    "/api/v1/token/refresh",
                    json={"refresh_token": self.refresh_token},
                    anonymous=True,
                )
            )
        body = {"username": self.username, "password": self._password}
        if self.tenant:
            body["tenant"] = self.tenant
        calls.append(Call("POST", "/api/v1/login", json=body, anonymous=True))
        return calls

    def took(self, answer: Any) -> None:
        self.token = answer["access_token"]
        self.refresh_token = answer.get("refresh_token")
