"""An a2a-sdk ``ClientFactory`` that wraps every client it creates: for code that takes a factory.

Frameworks that build their a2a-sdk clients themselves take a ``ClientFactory`` (google-adk's
``RemoteA2aAgent(a2a_client_factory=...)``). `wrapping_factory` makes one whose ``create``
hands each client to a function first; `guarded_factory` (in
`a2a_client_errors.integrations.a2a_sdk`) gives it `guard_client`. The factory is an instance
of a subclass of a2a-sdk's own ``ClientFactory``, so code that copies it or reads its
configuration keeps working; a copy wraps as the original does.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from a2a_client_errors.integrations.a2a_sdk._compat import client_factory_class

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["wrapping_factory"]


def wrapping_factory(config: Any, wrap: Callable[[Any], Any]) -> Any:
    """An a2a-sdk ``ClientFactory`` whose ``create`` returns ``wrap(client)``.

    Args:
        config: the a2a-sdk ``ClientConfig`` (None: a2a-sdk's default).
        wrap: what each client ``create`` builds is handed to; its answer is returned.

    Raises:
        ImportError: a2a-sdk is not installed.
    """
    factory = _factory_class()(config)
    factory.wrap = wrap
    return factory


@functools.cache
def _factory_class() -> type[Any]:
    """The ``ClientFactory`` subclass, made once a2a-sdk is imported."""

    class WrappingClientFactory(client_factory_class()):  # type: ignore[misc]
        """A ``ClientFactory`` whose clients are handed to ``wrap`` (see `wrapping_factory`)."""

        wrap: Callable[[Any], Any]

        def create(self, *args: Any, **kwargs: Any) -> Any:
            """a2a-sdk's client for the card, wrapped."""
            return self.wrap(super().create(*args, **kwargs))

    return WrappingClientFactory
