"""Sealing one text or one vector: AES-GCM under a card's own data key, bound to its row.

The associated data names the row (case namespace, scope, card id, and which field): a sealed
value moved into another scope, another card or another field of the same card fails its tag and
is never shown as if it belonged there. A token is ``sealed:1:`` and base64 of a fresh 96-bit
nonce followed by the ciphertext and its tag, so it fits the store's text and JSON columns
unchanged.
"""

from __future__ import annotations

import base64
import binascii
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

PREFIX = "sealed:1:"
KEY_BYTES = 32
NONCE_BYTES = 12


def row_ad(namespace: str, scope: str, card_id: str, field: str) -> bytes:
    """The associated data of one field of one row: what a ciphertext is bound to."""
    return "\x1f".join(("bureau-seal-1", namespace, scope, card_id, field)).encode("utf-8")


def is_sealed(value: object) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX)


def seal_bytes(key: bytes, data: bytes, ad: bytes) -> str:
    """``data`` encrypted and authenticated under ``key``, bound to ``ad``, as a token."""
    nonce = os.urandom(NONCE_BYTES)
    body = AESGCM(key).encrypt(nonce, data, ad)
    return PREFIX + base64.b64encode(nonce + body).decode("ascii")


def unseal_bytes(key: bytes, token: str, ad: bytes) -> bytes | None:
    """The bytes of a token sealed under ``key`` for ``ad``; ``None`` when it does not open
    (another row's, another key's, or altered)."""
    try:
        raw = binascii.a2b_base64(token[len(PREFIX):].encode("ascii"), strict_mode=True)
        return AESGCM(key).decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], ad)
    except (InvalidTag, ValueError, UnicodeError, binascii.Error):
        return None


def seal(key: bytes, text: str, ad: bytes) -> str:
    """``text`` encrypted and authenticated under ``key``, bound to ``ad``."""
    return seal_bytes(key, text.encode("utf-8"), ad)


def unseal(key: bytes, token: str, ad: bytes) -> str | None:
    """The text of a token sealed under ``key`` for ``ad``; ``None`` when it does not open."""
    raw = unseal_bytes(key, token, ad)
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeError:
        return None
