"""The tiny MiniMind's tokenizer and training data, made on the learner's own machine.

Nothing can be downloaded, so the course's small trained model (module 09, "Reading the heads of a
trained model") learns from two sources that every machine already has or can make:

- **Python source code**: a fixed list of files from the standard library's own source folder
  (`sysconfig.get_paths()["stdlib"]`). Every file on the list is byte for byte the same in CPython
  3.10.13, 3.11.7 and 3.12.1 (checked when the list was chosen; 3.13 changed some of them), so
  the text, and with it the checkpoint, does not depend on which of those Pythons runs the
  training. `text_sha256()` is recorded in the checkpoint's metadata, so a different text is
  detected instead of silently giving different weights. Three files are held out: the held-out
  loss is measured on code the model has never seen.
- **Synthetic repeated spans**: a random string of printable characters, repeated until the
  sequence is full (`qX7#kqX7#kqX7#k...`). The first copy cannot be predicted; every later one can,
  by finding the earlier occurrence of the current character and copying what came after it. That
  is the job of an *induction head* (Olsson et al., arXiv 2209.11895), and repeated random spans
  are the cleanest way to grow one.

Every sequence starts with a BOS token (beginning of sequence), as MiniMind's do; heads with
nothing to do learn to park their weight on it (an "attention sink", arXiv 2309.17453).

The tokenizer is byte-level: token i < 256 is the byte i, and 256 is BOS. Every character of a
prompt is one token (for ASCII), so a heatmap's axes read as the text itself.
"""

from __future__ import annotations

import hashlib
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch

from .training import IGNORE_INDEX

BOS = 256  # the beginning-of-sequence token; bytes are 0..255
VOCAB_SIZE = 257

# Standard-library files identical in CPython 3.10.13, 3.11.7 and 3.12.1, all ASCII. The last three
# are held out (never trained on) to measure the loss on unseen code.
TRAIN_FILES = (
    "difflib.py", "optparse.py", "pickletools.py", "trace.py", "_osx_support.py", "tracemalloc.py",
    "_markupbase.py", "lzma.py", "bz2.py", "pyclbr.py", "shelve.py", "py_compile.py",
    "_threading_local.py", "_py_abc.py", "getpass.py", "linecache.py", "_compression.py", "stat.py",
    "_sitebuiltins.py", "nturl2path.py", "signal.py",
)
HELD_OUT_FILES = ("queue.py", "sched.py", "hmac.py")

# Printable ASCII (space to '~'): the characters of the synthetic spans, so that a heatmap of a
# repeated span has readable labels and a learner can type one.
PRINTABLE = tuple(range(32, 127))


class ByteTokenizer:
    """Text <-> token ids, one token per byte, plus BOS = 256 at the start of a sequence."""

    bos_token_id = BOS
    vocab_size = VOCAB_SIZE

    def encode(self, text: str, bos: bool = True) -> list[int]:
        """UTF-8 bytes of `text` as token ids, after a BOS token unless `bos=False`."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}.")
        return ([BOS] if bos else []) + list(text.encode("utf-8"))

    def decode(self, ids: Sequence[int]) -> str:
        """Token ids back to text; BOS tokens are dropped and broken UTF-8 becomes '\ufffd'."""
        ids = _as_list(ids)
        return bytes(i for i in ids if i != BOS).decode("utf-8", errors="replace")

    def labels(self, ids: Sequence[int]) -> list[str]:
        """One short, visible label per token, for the axes of a heatmap: 'a', '␣' for a space,
        '↵' for a newline, '⇥' for a tab, '<s>' for BOS, '\\xNN' for other bytes."""
        return [token_label(i) for i in _as_list(ids)]


def token_label(token: int) -> str:
    """A visible label for one token id (see ByteTokenizer.labels)."""
    special = {BOS: "<s>", 32: "␣", 10: "↵", 9: "⇥"}
    if token in special:
        return special[token]
    if 32 < token < 127:
        return chr(token)
    return f"\\x{token:02x}"


def _as_list(ids: Sequence[int]) -> list[int]:
    if isinstance(ids, torch.Tensor):
        if ids.dim() != 1:
            raise ValueError(f"ids must be one sequence (1-D), got a tensor of shape {tuple(ids.shape)}.")
        ids = ids.tolist()
    ids = [int(i) for i in ids]
    bad = [i for i in ids if not 0 <= i < VOCAB_SIZE]
    if bad:
        raise ValueError(f"token ids must lie in [0, {VOCAB_SIZE}), got {bad[0]}.")
    return ids


# ------------------------------------------------------------------------------- the text


def stdlib_folder() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


@lru_cache(maxsize=None)
def read_files(names: tuple[str, ...]) -> bytes:
    """The files, in the given order, joined by a blank line; line ends normalised to '\\n' (a
    Windows checkout may have '\\r\\n'). Raises FileNotFoundError naming a missing file."""
    folder = stdlib_folder()
    parts = []
    for name in names:
        path = folder / name
        if not path.is_file():
            raise FileNotFoundError(
                f"the tiny model's training text needs {path}, from the Python standard library's "
                f"source, which this Python does not have.")
        parts.append(path.read_bytes().replace(b"\r\n", b"\n"))
    return b"\n\n".join(parts)


def train_text() -> torch.Tensor:
    """The training text as a 1-D int64 tensor of byte ids."""
    return torch.frombuffer(bytearray(read_files(TRAIN_FILES)), dtype=torch.uint8).long()


def held_out_text() -> torch.Tensor:
    """The held-out text (files never trained on), as a 1-D int64 tensor of byte ids."""
    return torch.frombuffer(bytearray(read_files(HELD_OUT_FILES)), dtype=torch.uint8).long()


def text_sha256() -> str:
    """SHA-256 of the training and held-out text: the checkpoint depends on it."""
    digest = hashlib.sha256(read_files(TRAIN_FILES))
    digest.update(read_files(HELD_OUT_FILES))
    return digest.hexdigest()


# --------------------------------------------------------------------------- the batches


def text_windows(text: torch.Tensor, count: int, length: int, generator: torch.Generator) -> torch.Tensor:
    """`count` sequences [count, length]: BOS, then length - 1 bytes from random places in `text`."""
    if text.numel() < length:
        raise ValueError(f"the text has {text.numel()} bytes, fewer than a window of {length}.")
    starts = torch.randint(0, text.numel() - length + 2, (count,), generator=generator)
    offsets = torch.arange(length - 1)
    windows = text[starts[:, None] + offsets]  # [count, length - 1]
    return torch.cat([torch.full((count, 1), BOS), windows], dim=1)


def repeated_spans(count: int, length: int, generator: torch.Generator, min_span: int = 8,
                   max_span: int = 40) -> tuple[torch.Tensor, torch.Tensor]:
    """`count` sequences [count, length]: BOS, then a random span of printable characters (its
    length drawn from min_span..max_span) repeated until the sequence is full.

    Returns (ids, span_lengths [count]). Characters within a span are distinct, so each has exactly
    one earlier occurrence per earlier copy: what comes next is never ambiguous.
    """
    if not 2 <= min_span <= max_span <= len(PRINTABLE):
        raise ValueError(f"need 2 <= min_span <= max_span <= {len(PRINTABLE)}, got {min_span}, {max_span}.")
    alphabet = torch.tensor(PRINTABLE)
    spans = torch.randint(min_span, max_span + 1, (count,), generator=generator)
    rows = []
    for span in spans.tolist():
        chars = alphabet[torch.randperm(len(PRINTABLE), generator=generator)[:span]]
        repeats = -(-(length - 1) // span)  # ceil
        rows.append(torch.cat([torch.tensor([BOS]), chars.repeat(repeats)[: length - 1]]))
    return torch.stack(rows), spans


@dataclass(frozen=True)
class DataMix:
    """How a training batch is made: `batch_size` sequences of `seq_len` tokens, `synthetic` of
    them repeated spans, the rest windows of stdlib code.

    In a repeated-span row, the first copy of the span (and the first character of the second) is
    random: nothing before it says what it is. Until step `first_copy_from` those targets are
    ignored, so the rows ask for copying and nothing else; from then on they count too. There the
    best prediction is an even bet over the printable characters, and a head that copied something
    would only add noise: the heads learn to do nothing when there is nothing to copy, which a
    softmax can only do by parking its weight somewhere harmless, such as BOS.
    """

    batch_size: int = 16
    seq_len: int = 128
    synthetic: int = 8
    first_copy_from: int = 0

    def __post_init__(self):
        if not 0 <= self.synthetic <= self.batch_size or self.batch_size < 1:
            raise ValueError(f"need 0 <= synthetic <= batch_size and batch_size >= 1, got {self}.")
        if self.seq_len < 3:
            raise ValueError(f"seq_len must be at least 3, got {self.seq_len}.")

    def batch_fn(self, text: torch.Tensor):
        """A `batch(step, generator)` function for `training.train`: (inputs, targets), each
        [batch_size, seq_len - 1], the targets being the inputs shifted by one (IGNORE_INDEX where
        a target is not scored, see the class docstring)."""

        def batch(step: int, generator: torch.Generator):
            code = text_windows(text, self.batch_size - self.synthetic, self.seq_len, generator)
            spans, lengths = repeated_spans(self.synthetic, self.seq_len, generator)
            span_targets = spans[:, 1:].clone()
            if step < self.first_copy_from:
                position = torch.arange(1, self.seq_len)  # the position each target sits at
                span_targets[position[None, :] <= lengths[:, None] + 1] = IGNORE_INDEX  # unpredictable
            ids = torch.cat([code, spans])
            targets = torch.cat([code[:, 1:], span_targets])
            return ids[:, :-1], targets

        return batch
