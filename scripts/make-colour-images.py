#!/usr/bin/env python3
"""Write the test images for the colour projector (scripts/make-colour-mmproj.py)
as PNG files, with nothing but the standard library (zlib, struct):

    make-colour-images.py OUTDIR

  red.png, green.png, blue.png   28x28, one pure colour (255,0,0 and so on)
  red-large.png                  1000x600 pure red (mtmd resizes it to 28x28)
  quad-<pattern>.png             28x28, four 14x14 blocks, the pattern's letters
                                 (r, g, b) in reading order: top-left,
                                 top-right, bottom-left, bottom-right

Same bytes on every run (fixed compression level, no timestamps).
"""
import os
import struct
import sys
import zlib

COLOURS = {"r": (255, 0, 0), "g": (0, 255, 0), "b": (0, 0, 255)}
NAMES = {"r": "red", "g": "green", "b": "blue"}
# Four-block patterns that SmolLM2-135M-Instruct with the test projector
# (scripts/make-colour-mmproj.py) reads back in order, greedy, asked "Which
# colours are in the image, in order? Answer with the colour words only." in
# the GGUF's own (Jinja) chat template: "The image is: red green blue red".
# Many other patterns it gets wrong (a small model, not the projector).
QUAD_PATTERNS = ["rgbr", "gbrg", "bgrb", "rbgr", "rgbb", "brgb", "grbg", "gbrb"]


def png(width, height, pixel):
    """PNG bytes, 8-bit RGB; pixel(x, y) gives the (r, g, b) of a pixel."""
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    rows = bytearray()
    for y in range(height):
        rows.append(0)  # filter: none
        for x in range(width):
            rows.extend(pixel(x, y))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(bytes(rows), 9)) + chunk(b"IEND", b""))


def solid(colour):
    return lambda x, y: colour


def quadrants(pattern, size=28):
    half = size // 2
    return lambda x, y: COLOURS[pattern[(y >= half) * 2 + (x >= half)]]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make-colour-images.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    images = {}
    for letter, name in NAMES.items():
        images[f"{name}.png"] = png(28, 28, solid(COLOURS[letter]))
    images["red-large.png"] = png(1000, 600, solid(COLOURS["r"]))
    for pattern in QUAD_PATTERNS:
        images[f"quad-{pattern}.png"] = png(28, 28, quadrants(pattern))
    for name, data in images.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
