"""Stored formats -> current models: the upgrade mapper and its row and document readers.

``mapper`` declares every kind's formats and runs the one upgrade loop; ``messages`` maps
message rows and serialized messages, ``documents`` summaries, states and profiles, and
``layouts`` writes messages for the Go struct that reads them (docs/legacy-formats.md).
"""

from __future__ import annotations
