"""``python -m a2a_client_errors``: the ``a2a-errors`` command."""

from __future__ import annotations

import sys

from a2a_client_errors.cli import main

if __name__ == "__main__":
    sys.exit(main())
