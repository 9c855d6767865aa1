"""engine.redaction: the one masking function for database and broker URLs, and text that may echo them."""

from __future__ import annotations

import logging
import string
from urllib.parse import quote

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from engine.redaction import install_log_masking, mask_text, mask_url, url_secrets, userinfo_needs_encoding
from streams.cli.common import urls_in_use

PASSWORD = "p@ss:w/rd%"
ENCODED = quote(PASSWORD, safe="")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (f"postgresql://drift:{ENCODED}@127.0.0.1:5433/drift", "postgresql://drift:***@127.0.0.1:5433/drift"),
        (f"postgresql://drift:{PASSWORD}@db/drift", "postgresql://drift:***@db/drift"),  # left unencoded
        (f"postgresql://drift@db/drift?sslmode=require&password={ENCODED}",
         "postgresql://drift@db/drift?sslmode=require&password=***"),
        (f"postgres://:{ENCODED}@db/drift", "postgres://:***@db/drift"),
        ("postgresql://postgres:@/postgres?host=/var/lib/drift/pgdata",  # the embedded database: usable as is
         "postgresql://postgres:@/postgres?host=/var/lib/drift/pgdata"),
        ("127.0.0.1:9092,127.0.0.1:9093", "127.0.0.1:9092,127.0.0.1:9093"),
    ],
)  # fmt: skip
def test_mask_url(url: str, expected: str) -> None:
    assert mask_url(url) == expected


def test_secrets_and_encoding_hint() -> None:
    assert url_secrets(f"postgresql://drift:{ENCODED}@db/x") == {ENCODED, PASSWORD}
    assert userinfo_needs_encoding(f"postgresql://drift:{PASSWORD}@db/x")
    assert not userinfo_needs_encoding(f"postgresql://drift:{ENCODED}@db/x")


def test_mask_text_hides_urls_it_finds_and_passwords_it_is_told_about() -> None:
    url = f"postgresql://drift:{ENCODED}@db:5432/drift"
    text = f"connect {url} failed; password {PASSWORD!r} rejected; other mysql://u:hunter22@h/d"
    masked = mask_text(text, [url])
    assert PASSWORD not in masked and ENCODED not in masked and "hunter22" not in masked
    assert "postgresql://drift:***@db:5432/drift" in masked and "mysql://u:***@h/d" in masked


@given(st.text(alphabet=string.ascii_letters + string.digits + "@:/!#$%^&*()-_=+?.,;~é", min_size=4))
def test_a_password_never_survives_in_its_url(password: str) -> None:
    url = f"postgresql://drift:{password}@db.example.org:5432/drift?sslmode=require"
    assume(password not in url.replace(password, "", 1))
    assert password not in mask_text(f"error: {url}", [url])
    encoded = f"postgresql://drift:{quote(password, safe='')}@db.example.org:5432/drift"
    assert password not in mask_text(f"error with {password} in {encoded}", [encoded])


def test_log_records_are_masked(caplog: pytest.LogCaptureFixture) -> None:
    url = f"postgresql://drift:{ENCODED}@db/drift"
    previous = logging.getLogRecordFactory()
    install_log_masking([url])
    try:
        with caplog.at_level(logging.INFO):
            logging.getLogger("drift.test").info("connecting to %s with %s", url, PASSWORD)
            try:
                raise ValueError(f"bad dsn {url}")
            except ValueError:
                logging.getLogger("drift.test").exception("failed")
        assert ENCODED not in caplog.text and PASSWORD not in caplog.text
        assert "postgresql://drift:***@db/drift" in caplog.text and "ValueError: bad dsn" in caplog.text
    finally:
        logging.setLogRecordFactory(previous)


def test_urls_in_use_come_from_flags_and_environment() -> None:
    argv = ["up", "--database", "postgresql://a:b@h/d", "--broker=k:1"]
    assert urls_in_use(argv, {"DATABASE_URL": "postgresql://c:d@h/e"}) == [
        "postgresql://c:d@h/e", "postgresql://a:b@h/d", "k:1"
    ]  # fmt: skip
