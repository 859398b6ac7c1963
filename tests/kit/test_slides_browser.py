"""`make slides M=NN` as the audience sees it: every module's deck, English and Chinese, opened
from disk in headless Chromium at 1280x720.

reveal.js lays every slide out on one 1280x720 canvas and scales the canvas to the screen, so a
deck that fits at 1280x720 fits at 1920x1080, 1.5 times larger; and the deck without the worked
solutions is the full deck less its solution slides (test_slides.py holds that for every deck).
So every deck of each language is measured once, in full at 1280x720, and the other size and
variant on the deck with the most solutions (module 10), which shows that the scaling and the
variant hold.

Every slide is laid out with all its fragments and measured. It fails on:
- an element whose content is clipped or scrolled (scrollHeight > clientHeight, or wider than it
  is shown, where the element hides or scrolls its overflow), or whose box lies beyond the slide;
- a slide without a title (a heading);
- a figure whose alt text does not say the words it shows (slide_deck.figure_alt), which a screen
  reader reads in its place;
- text smaller than 16 px on the screen (its CSS size times reveal.js's scale);
- a figure whose smallest label is smaller than FIGURE_TEXT_PX on the screen: the figure's
  smallest text in its own pixels (recorded when the notebook ran, labkit/figures.py) times the
  scale at which the slide shows the image, times reveal.js's (unless SMALL_LABELS lists it: a
  figure its notebook draws too large, or with too small a font, for any slide to show legibly);
- raw LaTeX left untypeset, a formula MathJax could not parse, a failed or non-local request, a
  console error, a link to a file that does not exist.

Chinese text is measured whichever fonts the machine has: every wide character (Chinese, and
full-width punctuation) is drawn with a stand-in font made here, whose glyphs are a square em
with a Chinese font's height, as every Chinese font's are; so a deck measured on a machine without a
Chinese font (CI has none) fits on one with it, and the contact sheets show those glyphs as boxes.

For a reviewer, contact sheets: every slide of a deck as a thumbnail, in order (the full variant
at 1280x720), one picture per deck to see it whole. They are asked for by language, since they take
a screenshot per slide, as long again as measuring the deck:
    ATTENTION_LAB_CONTACT_SHEETS=en make test ARGS=tests/kit/test_slides_browser.py
saves outputs/slides/contact/NN_slug.png; `en,zh-CN` adds the Chinese ones (contact/zh-CN/), whose
Chinese text shows as the stand-in's boxes.

One browser and two pages (one per screen size) serve every deck, and each deck is built once.
The browser is the system's Chromium (Debian's `chromium` package), driven by playwright, which
never downloads a browser of its own here. Without Chromium the tests are skipped, saying so, on a
laptop, and fail in CI (CI is set), where .ci/run installs it.
"""

from __future__ import annotations

import base64
import io
import os
import shutil
import sys
import unicodedata
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from labkit.course.slide_deck import FIGURE_TEXT_PX
from labkit.course.slides import HEIGHT, NO_ALT, WIDTH, deck_name, write_slides
from labkit.i18n import speaking
from labkit.syllabus import all_modules, find_course_root

ROOT = Path(__file__).resolve().parents[2]
CONTACT = ROOT / "outputs" / "slides" / "contact"
CHROMIUM = os.environ.get("ATTENTION_LAB_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SIZES = [(WIDTH, HEIGHT), (1920, 1080)]
LANGUAGES = ["en", "zh-CN"]
SHEETS = os.environ.get("ATTENTION_LAB_CONTACT_SHEETS", "").split(",")  # the languages with contact sheets
MIN_TEXT_PX = 16
THUMB_SCALE = 0.375  # contact-sheet thumbnails: 480x270 for a 1280x720 slide
THUMB_COLUMNS = 5
STAND_IN = "CJK stand-in"

# Every slide laid out at once, each with all its fragments, on its own 1280x720 canvas (they lie
# on top of one another): what each would show when it is the one on the screen, measured in one
# layout of the page instead of one per slide (a tenth of the time, the same problems found).
ALL_SHOWN = """.reveal .slides section { display: block !important; visibility: visible !important;
                                        opacity: 1 !important; }
.reveal .slides .fragment { opacity: 1 !important; visibility: visible !important; }"""

# Runs in the page once MathJax is done and ALL_SHOWN applies: measures what each slide shows.
# Returns, per slide, its label, its problems and its figures' smallest labels.
MEASURE = """([minText, noAlt]) => {
  const scale = Reveal.getScale();
  const out = [];
  for (const slide of Reveal.getSlides()) {
    const where = Reveal.getIndices(slide);
    const problems = [];
    const title = slide.querySelector('h1, h2, h3, h4');
    if (!title || !title.innerText.trim()) problems.push('no title');
    const frame = slide.getBoundingClientRect();
    const text = el => (el.innerText || el.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 60);
    for (const el of slide.querySelectorAll('*')) {
      if (el.closest('aside.notes') || el.parentElement.closest('mjx-container, svg')) continue;
      const style = getComputedStyle(el);
      if (style.display === 'none' || style.visibility === 'hidden') continue;
      const hides = v => v !== 'visible';
      if ((el.scrollHeight > el.clientHeight + 1 && el.clientHeight > 0 && hides(style.overflowY))
          || (el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0 && hides(style.overflowX))) {
        problems.push(`<${el.tagName.toLowerCase()} class="${el.className}"> shows `
                      + `${el.clientWidth}x${el.clientHeight} of its ${el.scrollWidth}x${el.scrollHeight}: `
                      + text(el));
        continue;
      }
      const box = el.getBoundingClientRect();
      if (box.width > 0 && box.height > 0 && (box.bottom > frame.bottom + 1 || box.right > frame.right + 1
          || box.top < frame.top - 1 || box.left < frame.left - 1)) {
        problems.push(`<${el.tagName.toLowerCase()}> lies beyond the slide `
                      + `(${Math.round(box.right - frame.left)}x${Math.round(box.bottom - frame.top)} of `
                      + `${Math.round(frame.width)}x${Math.round(frame.height)}): ${text(el)}`);
      }
    }
    const walker = document.createTreeWalker(slide, NodeFilter.SHOW_TEXT);
    let smallest = Infinity;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const parent = node.parentElement;
      if (!node.textContent.trim() || parent.closest('aside.notes, mjx-container, svg, style, script')) continue;
      if (!parent.getClientRects().length) continue;
      const px = parseFloat(getComputedStyle(parent).fontSize) * scale;
      if (px < smallest) smallest = px;
      if (px < minText - 0.05) {
        problems.push(`text at ${px.toFixed(1)} px: ${node.textContent.trim().slice(0, 40)}`);
        break;
      }
    }
    const figures = [];
    for (const img of slide.querySelectorAll('img')) {
      if (!img.alt.trim() || img.alt === noAlt) {
        problems.push('a figure whose alt text does not say its words: re-run the notebook (make notebooks M=NN)');
      }
      const own = img.dataset.textPx;
      if (own === undefined) {
        problems.push('a figure whose text size was not recorded: re-run the notebook (make notebooks M=NN)');
      } else if (own !== 'none') {
        const shown = img.clientWidth / img.naturalWidth;
        const px = parseFloat(own) * shown * scale;
        figures.push({px, shown, own: parseFloat(own), width: img.naturalWidth, height: img.naturalHeight});
      }
    }
    out.push({label: `${where.h + 1}.${(where.v || 0) + 1}`, problems, figures,
              smallest: isFinite(smallest) ? smallest : null});
  }
  return out;
}"""

# Text left in the page that MathJax should have typeset: $...$ or a TeX command, outside code.
RAW_LATEX = r"""() => {
  const walker = document.createTreeWalker(document.querySelector('.reveal .slides'), NodeFilter.SHOW_TEXT);
  const found = [];
  const tex = /\$[^$\s][^$]*\$|\$\$|\\(?:frac|theta|sqrt|sum|mathrm|text|cdot|times|le|ge|top|in)\b/;
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement.closest('pre, code, script, style, mjx-container')) continue;
    if (tex.test(node.textContent)) found.push(node.textContent.trim().slice(0, 100));
  }
  return found;
}"""

# Puts the stand-in font first in every element's font list, so that it draws every wide character.
STAND_IN_FIRST = """(family) => {
  for (const el of document.querySelectorAll('.reveal .slides, .reveal .slides *')) {
    const fonts = getComputedStyle(el).fontFamily;
    if (!fonts.startsWith(`"${family}"`)) el.style.fontFamily = `"${family}", ${fonts}`;
  }
}"""


def chromium_reason() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium, or set ATTENTION_LAB_CHROMIUM)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (it is in requirements.txt: make setup)"
    return None


def wide_characters(text: str) -> list[str]:
    """The characters of `text` that take two columns (labkit.course.slide_deck.text_width)."""
    return sorted({char for char in text if not char.isascii() and unicodedata.east_asian_width(char) in "WF"})


def stand_in_font(characters: list[str]) -> bytes:
    """A TrueType font that draws each of `characters` as a box one em wide, with the vertical
    metrics of Noto Sans CJK (ascent 1.16 em, descent 0.288 em), the tallest of the common
    Chinese fonts: what a Chinese font takes on a slide, whichever one a machine has."""
    from fontTools.fontBuilder import FontBuilder
    from fontTools.pens.ttGlyphPen import TTGlyphPen

    box = TTGlyphPen(None)
    for x0, y0, x1, y1 in ((60, -60, 940, 780), (140, 20, 860, 700)):  # an outline: outer, then the hole
        points = [(x0, y0), (x0, y1), (x1, y1), (x1, y0)] if x0 == 60 else [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
        box.moveTo(points[0])
        for point in points[1:]:
            box.lineTo(point)
        box.closePath()
    font = FontBuilder(1000, isTTF=True)
    font.setupGlyphOrder([".notdef", "wide"])
    font.setupCharacterMap({ord(char): "wide" for char in characters})
    font.setupGlyf({".notdef": TTGlyphPen(None).glyph(), "wide": box.glyph()})
    font.setupHorizontalMetrics({".notdef": (500, 0), "wide": (1000, 60)})
    font.setupHorizontalHeader(ascent=1160, descent=-288)
    font.setupNameTable({"familyName": STAND_IN, "styleName": "Regular"})
    font.setupOS2(sTypoAscender=880, sTypoDescender=-120, sTypoLineGap=0, usWinAscent=1160, usWinDescent=288)
    font.setupPost()
    out = io.BytesIO()
    font.save(out)
    return out.getvalue()


@pytest.fixture(scope="session")
def browser():
    reason = chromium_reason()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must have it: .ci/run installs it")
        pytest.skip(f"the browser tests need Chromium: {reason}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def pages(browser):
    """One page per screen size, reused for every deck; each collects its failed requests and errors."""
    made = {}
    for width, height in SIZES:
        scale = THUMB_SCALE if (width, height) == (WIDTH, HEIGHT) else 1
        page = browser.new_page(viewport={"width": width, "height": height}, device_scale_factor=scale)
        page.failures = []
        page.on("requestfailed", lambda r, p=page: p.failures.append(f"failed: {r.url} ({r.failure})"))
        page.on("request", lambda r, p=page: None if r.url.startswith(("file:", "data:", "blob:"))
                else p.failures.append(f"not from disk: {r.url}"))
        page.on("console", lambda m, p=page: p.failures.append(f"console {m.type}: {m.text}")
                if m.type == "error" else None)
        page.on("pageerror", lambda e, p=page: p.failures.append(f"page error: {e}"))
        made[(width, height)] = page
    yield made
    for page in made.values():
        page.close()


MODULES = [m for m in all_modules(find_course_root(ROOT)) if m.notebook]


def edition(notebook: Path, lang: str) -> Path:
    return notebook if lang == "en" else notebook.parent / lang / notebook.name


@pytest.fixture(scope="session")
def decks(tmp_path_factory):
    """deck(module, lang, solutions): the deck's file, written once per session."""
    folder = tmp_path_factory.mktemp("slides")
    written: dict[tuple[str, str, bool], Path] = {}

    def deck(module, lang: str, solutions: bool) -> Path:
        key = (module.name, lang, solutions)
        if key not in written:
            notebook = edition(module.notebook, lang)
            if not notebook.exists():
                pytest.fail(f"{notebook.relative_to(ROOT)} is missing: make translations")
            with speaking(lang):
                written[key] = write_slides(notebook, folder / lang, ROOT, solutions=solutions)
            assert written[key].name == deck_name(notebook, solutions)
        return written[key]
    return deck


def use_stand_in(page, characters: list[str]) -> None:
    """Draw `characters` (the page's wide ones) with the stand-in font, in every element."""
    if not characters:
        return
    font = base64.b64encode(stand_in_font(characters)).decode()
    page.add_style_tag(content=f'@font-face {{ font-family: "{STAND_IN}"; '
                               f'src: url(data:font/ttf;base64,{font}) format("truetype"); }}')
    page.evaluate(STAND_IN_FIRST, STAND_IN)
    page.evaluate("([family, char]) => document.fonts.load(`20px \"${family}\"`, char)", [STAND_IN, characters[0]])


def open_deck(page, deck: Path) -> None:
    page.failures.clear()
    page.goto(deck.as_uri())
    page.wait_for_function("window.Reveal && Reveal.isReady() && window.MathJax && MathJax.startup"
                           " && MathJax.startup.promise")
    page.evaluate("MathJax.startup.promise")
    use_stand_in(page, wide_characters(page.inner_text(".reveal .slides")))
    page.evaluate("document.fonts.ready.then(() => true)")


def measure(page, deck: Path, contact_sheet: Path | None = None) -> list[dict]:
    """Every slide of `deck` with its problems (see MEASURE); a contact sheet first if asked."""
    open_deck(page, deck)
    if contact_sheet is not None:
        save_contact_sheet(page, contact_sheet)
    page.add_style_tag(content=ALL_SHOWN)
    return page.evaluate(MEASURE, [MIN_TEXT_PX, NO_ALT])


def save_contact_sheet(page, path: Path) -> None:
    """Every slide of the open deck as the audience sees it, all its fragments shown, in a grid."""
    from PIL import Image

    thumbs = []
    for where in page.evaluate("Reveal.getSlides().map(slide => Reveal.getIndices(slide))"):
        page.evaluate(f"Reveal.slide({where['h']}, {where.get('v') or 0}, Number.MAX_SAFE_INTEGER)")
        thumbs.append(Image.open(io.BytesIO(page.screenshot(animations="disabled"))).convert("RGB"))
    width, height = thumbs[0].size
    rows = -(-len(thumbs) // THUMB_COLUMNS)
    gap = 6
    sheet = Image.new("RGB", (THUMB_COLUMNS * (width + gap) + gap, rows * (height + gap) + gap), (90, 90, 90))
    for index, thumb in enumerate(thumbs):
        row, column = divmod(index, THUMB_COLUMNS)
        sheet.paste(thumb, (gap + column * (width + gap), gap + row * (height + gap)))
    path.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(path)


def test_without_chromium_the_browser_tests_say_why(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "CHROMIUM", "/nonexistent/chromium")
    assert chromium_reason() == ("no Chromium at /nonexistent/chromium "
                                 "(apt-get install chromium, or set ATTENTION_LAB_CHROMIUM)")


def test_the_stand_in_draws_a_wide_character_one_em_wide_whatever_the_fonts(pages):
    """What makes a Chinese deck's measurement independent of the fonts installed: each wide
    character is one em (here 20 px), as in every Chinese font; Latin text keeps its own font."""
    page = pages[(WIDTH, HEIGHT)]
    text = "注意力，机制"
    page.set_content(f'<div class="reveal"><div class="slides"><span id="zh" style="font: 20px sans-serif">{text}'
                     '</span><span id="en" style="font: 20px sans-serif">attention</span></div></div>')
    latin = page.evaluate("document.getElementById('en').getBoundingClientRect().width")
    use_stand_in(page, wide_characters(text))
    assert page.evaluate("document.getElementById('zh').getBoundingClientRect().width") == pytest.approx(20 * len(text))
    assert page.evaluate("document.getElementById('en').getBoundingClientRect().width") == pytest.approx(latin)


# The figures whose smallest label is under FIGURE_TEXT_PX on a 1280x720 slide however the deck
# lays them out, as the notebooks draw them now: (module, width, height) of the PNG. Each needs
# its notebook (or show_heatmaps) to draw it within a slide's 1224x520 px with labels of 9 pt or
# more (CONTRIBUTING.md, "Who uses the course"); the test fails on any other figure with small
# labels, and on a listed one that no longer has them in the English deck, so the list only
# shrinks. (A Chinese deck may give a listed figure more room, its prose laid out otherwise.)
SMALL_LABELS = {
    ("01_attention_basics", 1086, 649),   # show_heatmaps grid, 9 pt, taller than a slide: 11.0 px
    ("01_attention_basics", 1190, 330),   # three panels, legend at 8 pt: 11.4 px
    ("02_qkv", 1206, 679),                # show_heatmaps, taller than a slide: 9.6 px
    ("02_qkv", 1190, 250),                # legend at 8 pt: 11.4 px
    ("03_multi_head", 1039, 551),         # show_heatmaps, two heads: 11.9 px
    ("04_gqa", 1286, 358),                # annotations at 7 pt: 9.2 px
    ("04_gqa", 1159, 911),                # show_heatmaps 3x4 grid: 7.8 px
    ("04_gqa", 1159, 1181),               # show_heatmaps 4x4 grid: 6.0 px
    ("05_masking", 1189, 621),            # show_heatmaps row of maps: 11.7 px
    ("06_rope", 1181, 414),               # legend at 8 pt: 11.5 px
    ("06_rope", 790, 721),                # one heatmap, taller than a slide: 11.0 px
    ("06_rope", 1190, 370),               # legend at 8 pt: 11.4 px
    ("08_flash", 730, 701),               # tile map, taller than a slide: 11.3 px
    ("09_reading_heads", 1206, 709),      # show_heatmaps, taller than a slide: 10.0 px (two figures)
    ("09_reading_heads", 1196, 469),      # show_heatmaps, annotated, 8 pt: 11.3 px
}


def listed(module: str, width: int, height: int) -> tuple[str, int, int]:
    """The SMALL_LABELS entry of a figure of this size, or its own key. The Chinese edition draws
    the same figure a pixel or two taller or wider (a Chinese font's line height), so a size within
    SIZE_SLACK pixels is the same figure."""
    for key in SMALL_LABELS:
        if key[0] == module and abs(key[1] - width) <= SIZE_SLACK and abs(key[2] - height) <= SIZE_SLACK:
            return key
    return (module, width, height)


SIZE_SLACK = 3


def figure_label_problems(module: str, slides: list[dict], check_list: bool) -> list[str]:
    """Figures shown with labels under FIGURE_TEXT_PX that SMALL_LABELS does not list; with
    `check_list`, also the listed figures of `module` that no longer are (remove them)."""
    problems, small = [], set()
    for slide in slides:
        for figure in slide["figures"]:
            key = listed(module, figure["width"], figure["height"])
            if figure["px"] >= FIGURE_TEXT_PX - 0.05:
                continue
            small.add(key)
            if key not in SMALL_LABELS:
                problems.append(f"slide {slide['label']}: figure labels at {figure['px']:.1f} px "
                                f"({figure['width']}x{figure['height']} shown at {figure['shown']:.0%}, "
                                f"labels of {figure['own']} px): draw it smaller or its labels larger")
    if check_list:
        problems += [f"{key} is listed in SMALL_LABELS but its labels read now (or it was redrawn): remove it"
                     for key in sorted(SMALL_LABELS) if key[0] == module and key not in small]
    return problems


def summary(name: str, size: tuple[int, int], slides: list[dict]) -> str:
    """One line of what was measured on a deck: slides clipped and untitled, the smallest text and
    the smallest figure label on the screen."""
    untitled = sum("no title" in slide["problems"] for slide in slides)
    clipped = sum(any(" shows " in p or "lies beyond" in p for p in slide["problems"]) for slide in slides)
    text = min((s["smallest"] for s in slides if s["smallest"] is not None), default=None)
    labels = min((f["px"] for s in slides for f in s["figures"]), default=None)
    return (f"{name} at {size[0]}x{size[1]}: {len(slides)} slides, {clipped} clipped, {untitled} untitled, "
            f"smallest text {text:.1f} px, smallest figure label "
            + (f"{labels:.1f} px" if labels is not None else "none"))


# (language, module, variants, sizes): every deck in full at 1280x720; the sample adds the rest.
SAMPLE = "10_capstone"
RUNS = [(lang, m, [True], [(WIDTH, HEIGHT)]) for lang in LANGUAGES for m in MODULES] + [
    (lang, m, [True, False], [(1920, 1080)]) for lang in LANGUAGES for m in MODULES if m.name == SAMPLE] + [
    (lang, m, [False], [(WIDTH, HEIGHT)]) for lang in LANGUAGES for m in MODULES if m.name == SAMPLE]


@pytest.mark.parametrize(("lang", "module", "variants", "sizes"), RUNS,
                         ids=[f"{lang}-{m.name}-{'+'.join('full' if v else 'no-solutions' for v in vs)}-{s[0][0]}"
                              for lang, m, vs, s in RUNS])
def test_every_slide_fits_is_titled_and_readable(lang, module, variants, sizes, decks, pages):
    """No clipped or scrolled content, every slide titled, no text under 16 px, no figure label
    under FIGURE_TEXT_PX; the math is typeset, and only local files are loaded."""
    problems = []
    for solutions in variants:
        deck = decks(module, lang, solutions)
        name = f"{lang}/{deck.name}"
        for size in sizes:
            page = pages[size]
            sheet = (CONTACT / ("" if lang == "en" else lang) / f"{module.name}.png"
                     if lang in SHEETS and solutions and size == (WIDTH, HEIGHT) else None)
            slides = measure(page, deck, sheet)
            assert len(slides) > 5, f"{name}: only {len(slides)} slides"
            for slide in slides:
                problems += [f"{name} at {size[0]}x{size[1]}, slide {slide['label']}: {p}"
                             for p in slide["problems"]]
            problems += [f"{name} at {size[0]}x{size[1]}, {p}" for p in figure_label_problems(
                module.name, slides, check_list=lang == "en" and solutions and size == (WIDTH, HEIGHT))]
            print(summary(name, size, slides))  # the measured numbers, for a reviewer (pytest -rA)
            problems += [f"{name}: {failure}" for failure in page.failures]
            if size == (WIDTH, HEIGHT):
                problems += [f"{name}: raw LaTeX: {t}" for t in page.evaluate(RAW_LATEX)]
                if page.evaluate("document.querySelectorAll('mjx-merror, [data-mjx-error]').length"):
                    problems.append(f"{name}: a formula MathJax could not parse")
                for href in page.evaluate("[...document.querySelectorAll('a[href]')].map(a => a.href)"):
                    if href.startswith("file:") and not Path(unquote(urlparse(href).path)).exists():
                        problems.append(f"{name}: the link {href} points at nothing")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:60])
