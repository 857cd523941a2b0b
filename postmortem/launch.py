"""The ``postmortem`` command's entry point: forks the figure-drawing process for ``build`` before
anything heavy is imported (see :mod:`postmortem.drawing`), then runs the command line."""

from __future__ import annotations

import sys


def main() -> None:
    from .drawing import start, stop, wants_drawing

    if wants_drawing(sys.argv[1:]):
        start()
    try:
        from .cli import main as cli_main

        cli_main()
    finally:
        stop()  # when the command ended before its reports were drawn
