"""Helpers for tests that open a report in a real headless Chromium (selenium driving
Debian's ``chromium`` through ``chromium-driver``), with the network blocked."""

from __future__ import annotations

import json
import shutil
import struct
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--disable-default-apps", "--disable-extensions", "--window-size=1280,1600",
         # every request goes to a closed port and no name resolves: nothing can leave
         "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
         "--host-resolver-rules=MAP * ~NOTFOUND")


@contextmanager
def chromium(profile: Path) -> Iterator[Any]:
    """A headless Chromium with a fresh profile in ``profile``, logging the console and
    every network event."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.get("about:blank")  # the start-up tab's own loads end here
        driver.get_log("performance")
        driver.get_log("browser")
        yield driver
    finally:
        driver.quit()


def requests(driver: Any) -> list[str]:
    """The URLs of every request made since the last call (from the performance log),
    but Chromium's own ``chrome://`` pages (its start-up tab), which are no page's."""
    out = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            url = message["params"]["request"]["url"]
            if not url.startswith("chrome://"):
                out.append(url)
    return out


def png_colours(data: bytes) -> tuple[int, int]:
    """(distinct colours, pixels unlike the top-left one) of an 8-bit RGB/RGBA PNG,
    decoded with zlib and numpy (no image library). Rows filtered by None, Sub or Up (most
    of a screenshot's) are undone a row at a time in numpy; Average and Paeth, whose every
    byte needs the one before it, byte by byte."""
    import numpy as np

    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        header = chunk if kind == b"IHDR" else header
        idat += chunk if kind == b"IDAT" else b""
        pos += 12 + length
    width, height, depth, ctype = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and ctype in (2, 6), f"unexpected PNG format {depth}/{ctype}"
    bpp = 4 if ctype == 6 else 3
    stride = width * bpp
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, stride + 1)
    image = np.empty((height, stride), np.uint8)
    prev = np.zeros(stride, np.uint8)
    for y in range(height):
        kind, line = int(raw[y, 0]), raw[y, 1:]
        if kind == 0:
            image[y] = line
        elif kind == 1:  # Sub: each byte adds the one bpp before it, a running sum a channel
            image[y] = np.cumsum(line.reshape(width, bpp), axis=0, dtype=np.uint8).ravel()
        elif kind == 2:  # Up
            image[y] = line + prev
        else:
            image[y] = np.frombuffer(_unfilter(kind, line.tobytes(), prev.tobytes(), bpp),
                                     np.uint8)
        prev = image[y]
    pixels = image.reshape(height * width, bpp).astype(np.uint64)
    keys = sum(pixels[:, i] << np.uint64(8 * i) for i in range(bpp))
    return len(np.unique(keys)), int(np.count_nonzero(keys != keys[0]))


def _unfilter(kind: int, line: bytes, prev: bytes, bpp: int) -> bytes:
    """Average (3) or Paeth (4): each byte adds a prediction from the decoded byte ``bpp``
    before it (a), the one above (b) and the one above that (c); 0 left of the row."""
    out = bytearray(bpp + len(line))  # out[i] is the decoded byte bpp before line[i]
    above = bytes(bpp) + prev
    for i, (x, b, c) in enumerate(zip(line, above[bpp:], above, strict=False)):
        a = out[i]
        if kind == 3:
            out[i + bpp] = (x + (a + b) // 2) & 0xFF
            continue
        pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)  # |p - a|, |p - b|, |p - c|
        out[i + bpp] = (x + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
    return bytes(out[bpp:])
