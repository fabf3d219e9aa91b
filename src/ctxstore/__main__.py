"""``python -m ctxstore``: the ``ctxstore`` command."""

from __future__ import annotations

import sys

from ctxstore.cli import main

sys.exit(main())
