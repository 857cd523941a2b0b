"""Secret redaction and optional anonymisation of text that goes into reports.

Redaction is on by default (``--no-redact`` turns it off): bearer tokens, Hugging Face and
OpenAI-style keys, AWS keys, passwords in URLs, ``Authorization`` headers and ``api_key=`` /
``password=`` / ``token=`` assignments become ``[REDACTED]``.

>>> r = Redactor()
>>> r("curl -H 'Authorization: Bearer hf_abcdefghijklmnopqrstuvwxyz0123' https://u:pw@host/x")
"curl -H 'Authorization: [REDACTED]' https://u:[REDACTED]@host/x"
>>> r("server_args=ServerArgs(api_key='sk-proj-abcdefghijklmnopqrstuvwx', port=30000)")
"server_args=ServerArgs(api_key='[REDACTED]', port=30000)"

Anonymisation (``--anonymize``) replaces host names and IP addresses consistently within one
report: the same host or address always gets the same stand-in.

>>> a = Redactor(anonymize=True, hosts=["dflash-train"])
>>> a("dflash-train 10.20.0.15 -> 10.20.0.15, dflash-train")
'host-1 192.0.2.1 -> 192.0.2.1, host-1'
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable

from ..lazyre import lazy_re

MASK = "[REDACTED]"

#: the last word of a setting's or a variable's name that says its value is a secret:
#: ``password``, ``OPENAI_API_KEY``, ``admin_api_key``, ``ssl_keyfile_password``, ``hf_token``,
#: ``--secret``, ``PGPASSWORD``… (``max_tokens``, ``tokenizer_path`` or ``ssl_keyfile`` are not)
_SECRET_NAME = (
    r"[A-Za-z0-9_.-]*?(?:password|passwd|passphrase|secret|token|credentials?|"
    r"(?:api|secret|access|private|signing|encryption|master|admin|service)[_-]?key|apikey)"
)
#: a value: quoted (all of it), or a run without spaces, quotes, commas or closing brackets;
#: ``None`` and an already masked value are left as they are
_VALUE = r"(?!None\b|\[REDACTED\])(?:'[^'\n]*'|\"[^\"\n]*\"|[^\s'\",)}\]]+)"


def _mask_value(m: re.Match[str]) -> str:
    value = m.group("v")
    if value[:1] in ("'", '"'):
        return f"{m.group('k')}{value[0]}{MASK}{value[0]}"
    return f"{m.group('k')}{MASK}"


_PATTERNS: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    # header values first: the whole credential after "Authorization:" or a cookie header
    (
        lazy_re(
            r"(?i)\b(authorization|proxy-authorization|x-api-key|api-key|cookie|set-cookie)(\s*[:=]\s*)"
            r"([^\r\n'\"]+)"
        ),
        rf"\1\2{MASK}",
    ),
    (lazy_re(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"), f"Bearer {MASK}"),
    # PEM private keys: the whole block
    (
        lazy_re(r"-----BEGIN ([A-Z ]*)PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S),
        f"-----BEGIN \\1PRIVATE KEY-----{MASK}-----END \\1PRIVATE KEY-----",
    ),
    # token formats, whatever name they go by
    (lazy_re(r"\bhf_[A-Za-z0-9]{16,}\b"), MASK),
    (lazy_re(r"\bsk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{16,}\b"), MASK),
    (lazy_re(r"\b[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}\b"), MASK),  # Stripe
    (lazy_re(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), MASK),
    (lazy_re(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"), MASK),
    (lazy_re(r"\bgithub_pat_[A-Za-z0-9_]{22,}\b"), MASK),
    (lazy_re(r"\bglpat-[A-Za-z0-9_-]{20,}\b"), MASK),
    (lazy_re(r"\bAIza[0-9A-Za-z_-]{30,}\b"), MASK),  # Google API keys
    (lazy_re(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"), MASK),
    (lazy_re(r"(hooks\.slack\.com/services/[A-Z0-9]+/[A-Z0-9]+/)[A-Za-z0-9]+"), rf"\1{MASK}"),
    (lazy_re(r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\b"), MASK),  # JWT
    # [user]:password@ in URLs (redis://:pass@host too)
    (lazy_re(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]*:)([^\s@/]+)(@)"), rf"\1{MASK}\3"),
    # `docker login -p VALUE` (and --password VALUE, below)
    (lazy_re(r"(\blogin\b[^\n]*?\s-p\s+)(?!\[REDACTED\])(\S+)"), rf"\1{MASK}"),
    # --secret-name VALUE (a flag and its value in the next word)
    (
        lazy_re(rf"(?P<k>(?i:--{_SECRET_NAME})\s+)(?P<v>(?!-){_VALUE})"),
        _mask_value,
    ),
    # name=value, name: value, 'name': 'value', "name": "value", -e NAME=value, --name=value
    (
        lazy_re(rf"(?P<k>(?<![#\w.-])(?:--)?(?i:{_SECRET_NAME})['\"]?\s*[=:]\s*)(?P<v>{_VALUE})"),
        _mask_value,
    ),
]

_IPV4 = lazy_re(r"(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?![\d.])")
#: a run of hex groups and colons that may be an IPv6 address, compressed (``fe80::1``) or
#: not; ``ipaddress`` decides (``20:17:19`` is a time, not an address)
_IPV6 = lazy_re(r"(?<![:\w.])(?:[0-9a-fA-F]{0,4}:){2,7}(?:[0-9a-fA-F]{1,4}|(?<=:):)?(?![:\w.])")
_KEEP_IPS = {"127.0.0.1", "0.0.0.0", "::1", "::"}


class Redactor:
    """Callable that cleans one string; keeps its own consistent anonymisation map."""

    def __init__(self, *, redact: bool = True, anonymize: bool = False, hosts: Iterable[str] = ()) -> None:
        self.redact = redact
        self.anonymize = anonymize
        self.host_map: dict[str, str] = {}
        self.ip_map: dict[str, str] = {}
        for h in sorted({h.lower() for h in hosts if h}, key=lambda h: (-len(h), h)):
            self.host_map[h] = f"host-{len(self.host_map) + 1}"
        # host names are case-insensitive: GPU-NODE-7 in one log is gpu-node-7 in another
        self._host_re = (
            re.compile("|".join(rf"(?<![\w.-]){re.escape(h)}(?![\w-])" for h in self.host_map), re.IGNORECASE)
            if self.host_map
            else None
        )

    def host(self, name: str | None) -> str | None:
        if name is None or not self.anonymize:
            return name
        key = name.lower()
        if key not in self.host_map:
            self.host_map[key] = f"host-{len(self.host_map) + 1}"
        return self.host_map[key]

    def _ip(self, m: re.Match[str]) -> str:
        ip = m.group(0)
        if ip in _KEEP_IPS:
            return ip
        if ":" in ip:
            try:
                ip = str(ipaddress.ip_address(ip))  # one spelling per address
            except ValueError:
                return m.group(0)  # a time, a MAC, a label: not an address
            if ip in _KEEP_IPS:
                return m.group(0)
        if ip not in self.ip_map:
            n = len(self.ip_map) + 1
            if ":" in ip:  # a documentation address of the same family (RFC 3849, RFC 5737)
                self.ip_map[ip] = f"2001:db8::{n:x}"
            else:
                self.ip_map[ip] = f"192.0.2.{n}" if n < 255 else f"198.51.100.{n % 254 + 1}"
        return self.ip_map[ip]

    def __call__(self, text: str | None) -> str:
        if text is None:
            return ""
        s = str(text)
        if self.redact:
            for pattern, repl in _PATTERNS:
                s = pattern.sub(repl, s)
        if self.anonymize:
            if self._host_re is not None:
                s = self._host_re.sub(lambda m: self.host_map[m.group(0).lower()], s)
            s = _IPV4.sub(self._ip, s)
            s = _IPV6.sub(self._ip, s)
        return s
