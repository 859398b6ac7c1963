"""Fonts that draw Chinese: the pinned Noto Sans CJK SC (mplfonts), else a system font, else none.

Used by whatever draws a Chinese figure: labkit.figures (the map, the explorer), the output
translator (labkit/i18n/output.py) and experiment scripts. Without any such font a figure stays
English rather than showing empty boxes.
"""

from __future__ import annotations

import logging
import re
from functools import cache

__all__ = ["CHINESE_FONTS", "PINNED_FONT", "chinese_font", "use_chinese_font"]

# Fonts with Chinese characters that a learner's machine is likely to have, most likely first.
CHINESE_FONTS = ("Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "Source Han Sans CN",
                 "WenQuanYi Zen Hei", "WenQuanYi Micro Hei", "Droid Sans Fallback", "PingFang SC",
                 "Hiragino Sans GB", "Heiti SC", "STHeiti", "Songti SC", "Microsoft YaHei", "SimHei",
                 "DengXian", "SimSun", "Noto Sans CJK JP", "Arial Unicode MS")
_CHINESE = re.compile(r"[\u2e80-\u9fff\u3000-\u303f\uff00-\uffef]")


PINNED_FONT = ("mplfonts", "fonts/NotoSansCJKsc-Regular.otf")  # the package, and its font file


@cache
def chinese_font() -> str | None:
    """The name of a font that can draw Chinese: the pinned package's (PINNED_FONT, registered with
    matplotlib from its file, without importing the package), else one the system has, else None."""
    from importlib.util import find_spec
    from pathlib import Path

    from matplotlib import font_manager

    package, file = PINNED_FONT
    spec = find_spec(package)
    if spec is not None and spec.origin is not None and (Path(spec.origin).parent / file).is_file():
        path = Path(spec.origin).parent / file
        font_manager.fontManager.addfont(str(path))
        return font_manager.FontProperties(fname=str(path)).get_name()
    installed = {font.name for font in font_manager.fontManager.ttflist}
    return next((name for name in CHINESE_FONTS if name in installed), None)


def use_chinese_font(figure) -> None:
    """Draw every text of `figure` that holds Chinese characters with `chinese_font()` for them (its
    own family first, so Latin letters, digits and code keep their font). Nothing without one."""
    from matplotlib.text import Text

    font = chinese_font()
    if font is None:
        return
    # A Chinese font often comes in one weight; matplotlib would log, below the learner's cell, that
    # it draws a bold label in that weight.
    logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)
    for text in figure.findobj(Text):
        if _CHINESE.search(text.get_text()):
            family = [name for name in text.get_fontfamily() if name != font]
            text.set_fontfamily([*family, font])
