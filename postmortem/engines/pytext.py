"""Python's own text in any server's log: a traceback's header and its exception line (the
engines print them bare, without their envelope)."""

from __future__ import annotations

from ..lazyre import lazy_re

TRACEBACK = "Traceback (most recent call last):"
#: the line that ends a traceback: ``OSError: …``, ``torch.OutOfMemoryError: …``, ``KeyboardInterrupt``
EXCEPTION_LINE = lazy_re(
    r"(?:[A-Za-z_][\w.]*\.)?(?P<type>(?:[A-Z]\w*)?(?:Error|Exception|Exit|Interrupt|Warning|Failure|Fault)"
    r"|[A-Z]\w*Error\w*)(?::|$)"
)
