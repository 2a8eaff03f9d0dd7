"""Node's ``url.fileURLToPath`` on POSIX, which Pi's ``normalizePath`` applies to every path
starting with ``file://`` (the ``sessionDir`` setting, ``--session-dir``,
``$PI_CODING_AGENT_SESSION_DIR``, ``$PI_CODING_AGENT_DIR``, a cwd).

Node parses the text as a WHATWG URL first (``\\`` is ``/``, tabs and newlines vanish, ``.`` and
``..`` segments are resolved, the query and fragment dropped, the host must parse), then wants
an empty host (``localhost`` parses as empty), no encoded ``/`` and percent escapes that decode
as UTF-8 (``decodeURIComponent``). Each failure is one of Node's messages, kept word for word in
:class:`FileUrlError`. Only what a URL starting with ``file://`` can reach is implemented: the
file scheme's host and path states. Hosts beyond ASCII are mapped by UTS #46's ignored code
points, NFKC and lower-casing rather than the full UTS #46 table: one that maps to ``localhost``
is accepted, as by Node; any other is refused, as by Node, for an exotic one at worst with the
other of Node's two messages.
"""

from __future__ import annotations

import re
import sys
import unicodedata

__all__ = [
    "ENCODED_SLASH",
    "INVALID_URL",
    "URI_MALFORMED",
    "FileUrlError",
    "file_url_to_path",
    "host_message",
]

INVALID_URL = "Invalid URL"
ENCODED_SLASH = "File URL path must not include encoded / characters"
URI_MALFORMED = "URI malformed"


def host_message() -> str:
    platform = "freebsd" if sys.platform.startswith("freebsd") else sys.platform
    return f'File URL host must be "localhost" or empty on {platform}'


class FileUrlError(ValueError):
    """Node's error for a file URL it cannot turn into a path; ``str()`` is Node's message."""


_DRIVE_LETTER = re.compile(r"[A-Za-z][:|]\Z")
_FORBIDDEN_DOMAIN = frozenset("\x00\t\n\r #/:<>?@[\\]^|%\x7f") | frozenset(chr(c) for c in range(0x20))
_LEADING_TRAILING = "".join(chr(c) for c in range(0x21))


def file_url_to_path(url: str) -> str:
    """``fileURLToPath(url)`` for a ``url`` starting with ``file://``; raises
    :class:`FileUrlError` with Node's message where Node throws."""
    # USVString conversion, then the URL parser's clean-up of the input
    text = url.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    text = text.strip(_LEADING_TRAILING)
    text = text.replace("\t", "").replace("\n", "").replace("\r", "")
    rest = text[len("file://") :]
    host_end = len(rest)
    for at, char in enumerate(rest):
        if char in "/\\?#":
            host_end = at
            break
    host_buffer, after = rest[:host_end], rest[host_end:]
    if _DRIVE_LETTER.match(host_buffer):
        path_input = rest  # Windows drive letter quirk: no host, the letter starts the path
    else:
        if host_buffer and _parse_host(host_buffer) != "localhost":
            raise FileUrlError(host_message())
        path_input = after[1:] if after[:1] in ("/", "\\") else after
    pathname = "/" + "/".join(_path_segments(path_input))
    if re.search("%2[fF]", pathname):
        raise FileUrlError(ENCODED_SLASH)
    return _decode_uri_component(pathname)


def _single_dot(segment: str) -> bool:
    return segment.lower() in (".", "%2e")


def _double_dot(segment: str) -> bool:
    return segment.lower() in ("..", ".%2e", "%2e.", "%2e%2e")


def _path_segments(text: str) -> list[str]:
    """The WHATWG path state of a file URL (percent-encoding aside: the text is decoded whole
    afterwards, and what the encoder would write decodes back to what it was)."""
    segments: list[str] = []
    end = len(text)
    for stop in (at for at, char in enumerate(text) if char in "?#"):
        end = stop
        break
    parts = re.split(r"[/\\]", text[:end])
    for index, buffer in enumerate(parts):
        last = index == len(parts) - 1  # the segment the path ends on (not followed by a slash)
        if _double_dot(buffer):
            # Shorten the path, but never past a drive letter (file URLs' quirk)
            if segments and not (len(segments) == 1 and re.fullmatch(r"[A-Za-z]:", segments[0])):
                segments.pop()
            if last:
                segments.append("")
        elif _single_dot(buffer):
            if last:
                segments.append("")
        else:
            if not segments and _DRIVE_LETTER.match(buffer):
                buffer = buffer[0] + ":"
            segments.append(buffer)
    return segments


def _decode_uri_component(text: str) -> str:
    """JavaScript's ``decodeURIComponent``: every ``%XX`` run decoded as UTF-8."""
    if "%" not in text:
        return text
    out: list[str] = []
    at = 0
    length = len(text)
    while at < length:
        char = text[at]
        if char != "%":
            out.append(char)
            at += 1
            continue
        first = _hex_byte(text, at)
        at += 3
        if first < 0x80:
            out.append(chr(first))
            continue
        if first >= 0xF8 or 0x80 <= first < 0xC0:
            raise FileUrlError(URI_MALFORMED)
        count = 1 if first < 0xE0 else (2 if first < 0xF0 else 3)
        data = bytearray([first])
        for _ in range(count):
            if at >= length or text[at] != "%":
                raise FileUrlError(URI_MALFORMED)
            data.append(_hex_byte(text, at))
            at += 3
        try:
            out.append(bytes(data).decode("utf-8"))  # strict: no overlong forms, no surrogates
        except UnicodeDecodeError:
            raise FileUrlError(URI_MALFORMED) from None
    return "".join(out)


def _hex_byte(text: str, at: int) -> int:
    digits = text[at + 1 : at + 3]
    if len(digits) != 2 or not all(c in "0123456789abcdefABCDEF" for c in digits):
        raise FileUrlError(URI_MALFORMED)
    return int(digits, 16)


def _percent_decode(text: str) -> bytes:
    data = text.encode("utf-8")
    out = bytearray()
    at = 0
    while at < len(data):
        byte = data[at]
        if byte == 0x25 and re.fullmatch(rb"[0-9A-Fa-f]{2}", data[at + 1 : at + 3]):
            out.append(int(data[at + 1 : at + 3], 16))
            at += 3
            continue
        out.append(byte)
        at += 1
    return bytes(out)


def _parse_host(buffer: str) -> str:
    """The WHATWG host parser for a special URL: the host as serialised, or FileUrlError
    ("Invalid URL") where the parser fails."""
    if buffer.startswith("["):
        if not buffer.endswith("]") or not _is_ipv6(buffer[1:-1]):
            raise FileUrlError(INVALID_URL)
        return buffer
    domain = _percent_decode(buffer).decode("utf-8", "replace")
    ascii_domain = _domain_to_ascii(domain)
    if not ascii_domain or any(char in _FORBIDDEN_DOMAIN for char in ascii_domain):
        raise FileUrlError(INVALID_URL)
    if _ends_in_number(ascii_domain):
        _parse_ipv4(ascii_domain)
    return ascii_domain


def _domain_to_ascii(domain: str) -> str:
    labels = domain.split(".")
    if domain.isascii() and not any(label.lower().startswith("xn--") for label in labels):
        return domain.lower()
    mapped = unicodedata.normalize("NFKC", _UTS46_IGNORED.sub("", domain)).lower()
    mapped = re.sub("[\u3002\uff0e\uff61]", ".", mapped)
    out = []
    for label in mapped.split("."):
        _check_label(label)
        if label.startswith("xn--"):
            try:
                decoded = label[4:].encode("ascii").decode("punycode")
            except (UnicodeError, ValueError):
                raise FileUrlError(INVALID_URL) from None
            if not decoded or decoded.isascii():  # UTS #46: an A-label must stand for Unicode
                raise FileUrlError(INVALID_URL)
            _check_label(decoded)
            out.append(label)
        elif label.isascii():
            out.append(label)
        else:
            out.append("xn--" + label.encode("punycode").decode("ascii"))
    return ".".join(out)


# UTS #46's "ignored" code points: mapped to nothing (`local\u00adhost` is `localhost`)
_UTS46_IGNORED = re.compile(
    "[\u00ad\u034f\u180b-\u180d\u180f\u200b\u2060\u2064\ufe00-\ufe0f\ufeff"
    "\U0001bca0-\U0001bca3\U000e0100-\U000e01ef]"
)
_DISALLOWED_CATEGORIES = frozenset(("Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"))


def _check_label(label: str) -> None:
    """UTS #46's disallowed code points, approximately: controls, format characters (joiners
    among them), surrogates, private use, unassigned, spaces and the replacement character fail
    the host."""
    for char in label:
        if char == "\ufffd" or unicodedata.category(char) in _DISALLOWED_CATEGORIES:
            raise FileUrlError(INVALID_URL)


def _ends_in_number(domain: str) -> bool:
    parts = domain.split(".")
    if parts[-1] == "":
        if len(parts) == 1:
            return False
        parts.pop()
    last = parts[-1]
    if last and all(char in "0123456789" for char in last):
        return True
    return re.fullmatch(r"0[xX][0-9A-Fa-f]*", last) is not None


def _ipv4_number(text: str) -> int:
    if not text:
        raise FileUrlError(INVALID_URL)
    radix = 10
    if text[:2] in ("0x", "0X"):
        text, radix = text[2:], 16
    elif len(text) > 1 and text.startswith("0"):
        text, radix = text[1:], 8
    if not text:
        return 0
    digits = {10: "0123456789", 16: "0123456789abcdefABCDEF", 8: "01234567"}[radix]
    if not all(char in digits for char in text):
        raise FileUrlError(INVALID_URL)
    return int(text, radix)


def _parse_ipv4(domain: str) -> None:
    parts = domain.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if len(parts) > 4:
        raise FileUrlError(INVALID_URL)
    numbers = [_ipv4_number(part) for part in parts]
    if any(number > 255 for number in numbers[:-1]) or numbers[-1] >= 256 ** (5 - len(numbers)):
        raise FileUrlError(INVALID_URL)


def _is_ipv6(text: str) -> bool:
    import ipaddress

    if "%" in text:
        return False
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True
