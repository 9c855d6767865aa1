"""Credentials never printed: one masking function for database and broker URLs, and text that may echo them.

:func:`mask_url` turns ``postgresql://drift:p%40ss@db:5432/drift`` into ``postgresql://drift:***@db:5432/drift``
(and ``?password=…`` query parameters into ``?password=***``). :func:`mask_text` applies it to any text: every
URL with credentials in it, plus every spelling (raw and percent-decoded) of the passwords of the URLs it is
given, since a driver's error message may quote a password on its own. :func:`install_log_masking` runs every
log record through it. The embedded database's URL has no password and passes unchanged.
"""

from __future__ import annotations

import logging
import re
import traceback
from collections.abc import Iterable
from urllib.parse import unquote

MASK = "***"
#: Shorter secrets are not searched for in free text (they would mask ordinary words); URLs are still masked.
MIN_SECRET_CHARS = 3
_SECRET_PARAMS = ("password", "sslpassword")
_QUERY_SECRET = re.compile(r"(?i)([?&](?:" + "|".join(_SECRET_PARAMS) + r")=)([^&#\s'\"]*)")
_URL_WITH_USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]*@[^\s'\"<>]*")


def _split_userinfo(url: str) -> tuple[str, str, str] | None:
    """``(scheme://, userinfo, @rest)`` of a URL with user information, else None.

    The user information ends at the *last* ``@``: an unencoded ``@`` in a password stays on the secret side."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return None
    userinfo, _, after = rest.rpartition("@")
    return f"{scheme}://", userinfo, f"@{after}"


def mask_url(url: str) -> str:
    """``url`` with its password (user information and ``password=`` query parameters) replaced by ``***``."""
    parts = _split_userinfo(url)
    if parts is not None:
        head, userinfo, tail = parts
        user, _, password = userinfo.partition(":")
        url = f"{head}{user}:{MASK}{tail}" if password else url  # no password (the embedded database): as is
    return _QUERY_SECRET.sub(lambda m: m.group(1) + MASK, url)


_LONE_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


def userinfo_needs_encoding(url: str) -> bool:
    """True when the user name or password of ``url`` holds characters a URL parser splits on."""
    parts = _split_userinfo(url)
    if parts is None:
        return False
    password = parts[1].partition(":")[2]
    return any(char in parts[1] for char in "@/?#[]") or ":" in password or bool(_LONE_PERCENT.search(parts[1]))


ENCODING_HINT = "percent-encode reserved characters in the user name and password (@ %40, : %3A, / %2F, % %25)"


def url_secrets(url: str) -> set[str]:
    """Every spelling of the passwords in ``url`` (as written and percent-decoded)."""
    found: list[str] = [m.group(2) for m in _QUERY_SECRET.finditer(url)]
    parts = _split_userinfo(url)
    if parts is not None and ":" in parts[1]:
        found.append(parts[1].partition(":")[2])
    return {spelling for secret in found if secret for spelling in (secret, unquote(secret))}


def mask_text(text: str, urls: Iterable[str] = ()) -> str:
    """``text`` with every URL's credentials and every password of ``urls`` masked."""
    secrets: set[str] = set()
    for url in urls:
        if url:
            text = text.replace(url, mask_url(url))
            secrets |= url_secrets(url)
    text = _URL_WITH_USERINFO.sub(lambda m: mask_url(m.group(0)), text)
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= MIN_SECRET_CHARS and secret != MASK:
            text = text.replace(secret, MASK)
    return text


def install_log_masking(urls: Iterable[str]) -> None:
    """Mask credentials in every log record created from now on (message, arguments and traceback)."""
    known = tuple(u for u in urls if u)
    previous = logging.getLogRecordFactory()
    if getattr(previous, "drift_masking", None) == known:
        return

    def factory(*args: object, **kwargs: object) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: let the handler report it as usual
            return record
        record.msg, record.args = mask_text(message, known), ()
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = mask_text("".join(traceback.format_exception(*record.exc_info)).rstrip(), known)
        return record

    factory.drift_masking = known  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)
