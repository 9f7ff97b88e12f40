"""Sealing one text: AES-GCM under a card's own data key, bound to its row.

The associated data names the row (case namespace, scope, card id, and which field): a sealed
text moved into another scope, another card or another field of the same card fails its tag and
is never shown as if it belonged there. A token is ``sealed:1:`` and base64 of a fresh 96-bit
nonce followed by the ciphertext and its tag, so it fits the store's text columns unchanged.
"""

from __future__ import annotations

import base64
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

PREFIX = "sealed:1:"
KEY_BYTES = 32


def row_ad(namespace: str, scope: str, card_id: str, field: str) -> bytes:
    """The associated data of one field of one row: what a ciphertext is bound to."""
    return "\x1f".join(("bureau-seal-1", namespace, scope, card_id, field)).encode("utf-8")


def is_sealed(value: object) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX)


def seal(key: bytes, text: str, ad: bytes) -> str:
    """``text`` encrypted and authenticated under ``key``, bound to ``ad``."""
    nonce = os.urandom(12)
    body = AESGCM(key).encrypt(nonce, text.encode("utf-8"), ad)
    return PREFIX + base64.b64encode(nonce + body).decode("ascii")


def unseal(key: bytes, token: str, ad: bytes) -> str | None:
    """The text of a token sealed under ``key`` for ``ad``; ``None`` when it does not open
    (another row's, another key's, or altered)."""
    try:
        raw = base64.b64decode(token[len(PREFIX):].encode("ascii"), validate=True)
        return AESGCM(key).decrypt(raw[:12], raw[12:], ad).decode("utf-8")
    except (InvalidTag, ValueError, UnicodeError):
        return None
