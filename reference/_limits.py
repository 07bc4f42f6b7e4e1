"""Size limits of the engine (DESIGN §3); every one is configurable."""

from __future__ import annotations

import attrs

KiB = 1024
MiB = 1024 * KiB


@attrs.frozen(kw_only=True)
class Limits:
    """Bounds that turn runaway input into ``TOO_LARGE`` before any work scales with it."""

    patch_bytes: int = 1 * MiB
    patch_files: int = 100
    patch_hunks: int = 1000
    patch_lines: int = 50_000
    edit_file_bytes: int = 10 * MiB
    transaction_bytes: int = 32 * MiB
    read_max_bytes: int = 256 * KiB
    binary_preview_bytes: int = 64
    grep_file_bytes: int = 10 * MiB
    growth_warning_factor: int = 10
