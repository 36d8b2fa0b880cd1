"""A server opsbot reaches over HTTP on the model's behalf (a metrics source, an Alertmanager):
where it is, the headers sent with every request (each naming the environment variable that holds
its value, never the value), how long a request may take, and who may use it."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from .base import Access, Strict
from .commands import EnvName

# An HTTP header name (RFC 9110 token characters).
HeaderName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$")]
HttpUrl = Annotated[str, StringConstraints(pattern=r"^https?://[^\s/?#]+(/[^\s?#]*)?$")]


class HttpSource(Strict):
    description: str = Field(default="", description="what the source holds, shown to the model")
    url: HttpUrl = Field(description="the server's base URL (http or https)")
    headers: dict[HeaderName, EnvName] = Field(
        default_factory=dict,
        description="headers sent with every request, each naming the environment variable that holds "
        "its value (Authorization: PROM_AUTH); never the value itself",
    )
    timeout_s: float = Field(default=10.0, gt=0, le=120, description="per request")
    access: Access = Field(default_factory=Access, description="who may use this source; default: anyone")

    def endpoint(self, path: str) -> str:
        """`path` under the base URL, whether or not the URL ends in a slash."""
        return f"{self.url.rstrip('/')}/{path}"
