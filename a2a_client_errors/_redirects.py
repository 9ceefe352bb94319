"""Redirects of A2A calls: where one points, whether it leaves the call's origin, refusing it.

httpx's ``Client`` follows a redirect (with ``follow_redirects=True``) wherever its
``Location`` points, and to another origin it strips only ``Authorization``: an
``X-API-Key``, a cookie, every header set on the client goes along, and the other origin's
answer comes back as the call's. No redirect carries an A2A call to another origin: a door
that sees a 3xx answer before the client follows it makes a cross-origin one unfollowable
(`refuse`: its ``Location`` is taken out, where it pointed kept in the response's
``extensions``), and `normalize` reads the answer as a ``fix_request`` naming that location
(`CallError.location`). A redirect on the request's own origin is left to the client.

An origin is a URL's scheme, host and port (the scheme's default port when none is written),
as RFC 6454 compares them: ``http://agent`` and ``https://agent`` are two origins.

A location is the peer's text. What is kept of one (`safe_location`) is its scheme, host,
port and path, percent-encoded as httpx reads them (so no control character survives),
without user info, query or fragment (where tokens travel), and capped.
"""

from __future__ import annotations

from typing import Final

import httpx

from a2a_client_errors._wire import cut

__all__ = [
    "FOLLOWED",
    "LOCATION",
    "REFUSED",
    "crosses_origin",
    "followed_elsewhere",
    "location_of",
    "origin_of",
    "refuse",
    "refuse_redirects",
    "refuse_redirects_of",
    "safe_location",
]

LOCATION: Final = "a2a_redirect_location"
"""The key of a response's ``extensions`` that holds where a redirect pointed (`refuse`)."""
REFUSED: Final = "a2a_redirect_refused"
"""The key of a response's ``extensions`` that says its redirect was refused (`refuse`)."""

FOLLOWED: Final = frozenset({301, 302, 303, 307, 308})
"""The statuses httpx follows when they come with a ``Location``."""

_DEFAULT_PORTS: Final = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def origin_of(url: httpx.URL) -> tuple[str, str, int | None]:
    """A URL's origin: scheme, host and port (the scheme's default when none is written)."""
    return (url.scheme, url.host, url.port or _DEFAULT_PORTS.get(url.scheme))


def _request_of(response: httpx.Response) -> httpx.Request | None:
    try:
        return response.request
    except RuntimeError:  # a response built without its request
        return None


def _target(response: httpx.Response, request: httpx.Request | None) -> httpx.URL | None:
    """Where a response's ``Location`` points, read as httpx reads it (None: none, unreadable).

    A relative location is joined to the URL of ``request`` (the one it answers); an absolute
    one without a host gets the request's host, as httpx does when it follows.
    """
    location = response.headers.get("location")
    if location is None:
        return None
    try:
        url = httpx.URL(location)
        if request is not None:
            if url.scheme and not url.host:
                url = url.copy_with(host=request.url.host)
            if url.is_relative_url:
                url = request.url.join(url)
    except (httpx.InvalidURL, TypeError, ValueError):  # httpx would not follow it either
        return None
    return url


def safe_location(url: httpx.URL) -> str:
    """What is kept of a location: ``scheme://host[:port]/path``, percent-encoded, capped.

    >>> safe_location(httpx.URL("https://user:secret@b.example:8443/a2a?token=t#f"))
    'https://b.example:8443/a2a'
    """
    host = url.raw_host.decode("ascii", "replace")
    if ":" in host:
        host = f"[{host}]"  # an IPv6 address
    port = "" if url.port is None else f":{url.port}"
    path = url.raw_path.partition(b"?")[0].decode("ascii", "replace")
    if not url.host:
        return cut(path)  # relative, with no request to join it to
    scheme = f"{url.scheme}:" if url.scheme else ""
    return cut(f"{scheme}//{host}{port}{path}")


def crosses_origin(response: httpx.Response, request: httpx.Request | None = None) -> bool:
    """Whether httpx would follow ``response`` to another origin than ``request``'s.

    ``request``: the request it answers (default: ``response.request``; a transport's
    response has none yet, the client sets it once the transport returned).
    """
    if response.status_code not in FOLLOWED:
        return False
    if request is None:
        request = _request_of(response)
    target = _target(response, request)
    if request is None or target is None:
        return False
    return origin_of(target) != origin_of(request.url)


def refuse(response: httpx.Response, request: httpx.Request | None = None) -> bool:
    """Make a redirect to another origin than ``request``'s unfollowable; whether it was one.

    Its ``Location`` header is taken out, so that no httpx client follows it, and
    ``response.extensions`` says so (`REFUSED`). Every redirect httpx would follow, refused
    or not, gets what is kept of where it points (`safe_location`, joined to ``request``'s
    URL) in ``response.extensions`` under `LOCATION`, which `location_of` reads: a transport's
    response does not know its request yet. The response is the door's own, never the
    caller's request; any other response is left as it is. ``request``: as for
    `crosses_origin`.
    """
    if response.status_code not in FOLLOWED:
        return False
    if request is None:
        request = _request_of(response)
    target = _target(response, request)
    if target is None:
        return False
    response.extensions[LOCATION] = safe_location(target)
    if request is None or origin_of(target) == origin_of(request.url):
        return False
    response.extensions[REFUSED] = True
    del response.headers["location"]
    return True


def location_of(response: httpx.Response) -> str | None:
    """Where a redirect points, as kept (`safe_location`): refused or not; None without one."""
    kept = response.extensions.get(LOCATION)
    if isinstance(kept, str):
        return kept
    target = _target(response, _request_of(response))
    return None if target is None else safe_location(target)


def followed_elsewhere(response: httpx.Response) -> httpx.Response | None:
    """The redirect, in ``response.history``, that an httpx client followed to another origin.

    The origin is the first request's: a chain that leaves it at any hop was carried
    elsewhere, and its final answer is not the agent's. None when every hop kept to it.
    """
    history = response.history
    if not history:
        return None
    first = _request_of(history[0])
    if first is None:
        return None
    home = origin_of(first.url)
    for redirect, hop in zip(history, [*history[1:], response], strict=True):
        request = _request_of(hop)
        if request is not None and origin_of(request.url) != home:
            return redirect
    return None


async def refuse_redirects(response: httpx.Response) -> None:
    """An ``httpx.AsyncClient`` response hook: `refuse` every redirect to another origin.

    httpx calls its response hooks on each response of its redirect loop, before it decides
    to follow: one refused here ends the loop, and the client answers with the 3xx itself,
    as it does with ``follow_redirects=False``.
    """
    refuse(response)


def refuse_redirects_of(client: httpx.AsyncClient) -> None:
    """Install `refuse_redirects` on ``client`` (once), after its own response hooks.

    Through httpx's public ``event_hooks``: the client's other hooks stay as they are, in
    their order, and every one of them sees the redirect before it is refused.
    """
    hooks = client.event_hooks
    responses = list(hooks.get("response", ()))
    if refuse_redirects not in responses:
        client.event_hooks = {**hooks, "response": [*responses, refuse_redirects]}
