"""Draw reseller/static/favicon.svg's icon as favicon.ico (16, 32, 48 px) and the 180 px
apple-touch-icon.png, with Pillow (a tool of its own, not a dependency of the project: the
files it draws are committed): ``python scripts/make_favicon.py``."""

from pathlib import Path

from PIL import Image, ImageDraw

STATIC = Path(__file__).resolve().parents[1] / "reseller" / "static"
GREEN = (10, 125, 90, 255)  # --brand
SIZE = 512  # the SVG's 32 units, 16 times
K = SIZE / 32


def draw() -> Image.Image:
    image = Image.new("RGBA", (SIZE, SIZE), (0, 0, 0, 0))
    pen = ImageDraw.Draw(image)
    width = round(2 * K)
    pen.rounded_rectangle([0, 0, SIZE - 1, SIZE - 1], radius=7 * K, fill=GREEN)
    phone = [10 * K, 5 * K, 22 * K, 27 * K]
    pen.rounded_rectangle(phone, radius=2.5 * K, outline="white", width=width)
    pen.line([16 * K, 11 * K, 16 * K, 19 * K], fill="white", width=width)
    arrow = [12.5 * K, 15.5 * K, 16 * K, 19 * K, 19.5 * K, 15.5 * K]
    pen.line(arrow, fill="white", width=width, joint="curve")
    for x, y in ((16 * K, 11 * K), (12.5 * K, 15.5 * K), (19.5 * K, 15.5 * K)):  # round caps
        pen.ellipse([x - K, y - K, x + K, y + K], fill="white")
    dot = 1.2 * K
    pen.ellipse([16 * K - dot, 23.5 * K - dot, 16 * K + dot, 23.5 * K + dot], fill="white")
    return image


if __name__ == "__main__":
    icon = draw()
    icon.save(STATIC / "favicon.ico", sizes=[(16, 16), (32, 32), (48, 48)])
    touch = Image.new("RGBA", (180, 180), GREEN)
    touch.alpha_composite(icon.resize((180, 180), Image.Resampling.LANCZOS))
    touch.convert("RGB").save(STATIC / "apple-touch-icon.png", optimize=True)
