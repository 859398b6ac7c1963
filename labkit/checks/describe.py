"""What a value is, in a few words: how check() names the learner's answer and a case's inputs.

A value is described by its type and size (a tensor by its shape and dtype, a model by its class
and parameter count, a list by its length), never by its repr: a model, a long list or a big
tensor would fill the message and hide what it says. Only a value answer that is small by nature
(a number, a bool, a short string) is shown as itself, and only the learner's own.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from typing import Any

import torch

from labkit.i18n import phrase, tr

# How many characters of a learner's own value or error message a line shows.
SHORT = 80
# A string input longer than this is described by its length.
SHORT_INPUT = 24
# How many dict keys a message lists before "and N more".
KEYS_SHOWN = 6

# The kinds of dtype, which must match; shown to the learner through tr().
FLOATING, INTEGER, BOOLEAN = phrase("floating point"), phrase("integer"), phrase("boolean")
COMPLEX, TEXT = phrase("complex"), phrase("text")


def is_ndarray(value: Any) -> bool:
    np = sys.modules.get("numpy")  # no numpy loaded means this cannot be an array
    return np is not None and isinstance(value, np.ndarray)


def numpy():
    import numpy

    return numpy


def plain_scalar(value: Any) -> Any:
    """A numpy scalar (np.float32(0.5), np.int64(3), np.bool_(True)) as the Python number it is."""
    module = type(value).__module__
    if module == "numpy" and hasattr(value, "item") and getattr(value, "ndim", None) == 0 and not is_ndarray(value):
        return value.item()
    return value


def kind(array: Any) -> str:
    """The kind of a dtype, which must match: floating point, integer, boolean, complex, text.
    A quantized tensor stands for floats."""
    if isinstance(array, torch.Tensor):
        if array.dtype == torch.bool:
            return BOOLEAN
        if array.is_complex():
            return COMPLEX
        return FLOATING if array.is_floating_point() or array.is_quantized else INTEGER
    return {"b": BOOLEAN, "i": INTEGER, "u": INTEGER, "f": FLOATING, "c": COMPLEX,
            "U": TEXT, "S": TEXT}.get(array.dtype.kind, f"dtype {array.dtype}")


def dtype(array: Any) -> str:
    return str(array.dtype) if isinstance(array, torch.Tensor) else f"numpy {array.dtype}"


def short_dtype(array: Any) -> str:
    """float32, int64, bool: a tensor's dtype without the `torch.` in front."""
    return str(array.dtype).removeprefix("torch.")


def layout_of(tensor: torch.Tensor) -> str | None:
    """What makes a tensor other than a plain one, in a word (None for a plain one)."""
    if tensor.is_nested:
        return "nested"
    if tensor.is_meta:
        return "meta"
    if tensor.layout != torch.strided:
        return "sparse"
    return None


def parameter_count(module: torch.nn.Module) -> int | None:
    try:
        return sum(p.numel() for p in module.parameters())
    except Exception:  # a half-built learner's module: its class name will do
        return None


def value(thing: Any) -> str:
    """What a value is, in a few words: 'a torch.Tensor of shape [3, 4], float32', 'a float (0.5)',
    'a Linear (12 parameters)'. Never a repr longer than SHORT."""
    thing = plain_scalar(thing)
    if thing is None:
        return "None"
    if isinstance(thing, torch.Tensor):
        return tensor(thing)
    if is_ndarray(thing):
        return tr("a numpy array of shape {shape}, {dtype}", shape=shape(thing.shape), dtype=thing.dtype)
    if isinstance(thing, bool):
        return tr("a bool ({value})", value=thing)
    if isinstance(thing, int):
        return tr("an int ({value})", value=integer(thing))
    if isinstance(thing, float):
        return tr("a float ({value})", value=num(thing))
    if isinstance(thing, complex):
        return tr("a complex number ({value})", value=num(thing))
    if isinstance(thing, str):
        return tr("a str ({value})", value=short(repr(thing)))
    if isinstance(thing, (list, tuple)):
        return tr("a {type} of {items}", type=type(thing).__name__, items=items_of(thing))
    if isinstance(thing, dict):
        return tr("a dict with {entries}", entries=keys(len(thing)))
    if isinstance(thing, torch.nn.Module):
        count = parameter_count(thing)
        if count is None:
            return tr("a {type}", type=type(thing).__name__)
        return tr("a {type} ({parameters})", type=type(thing).__name__, parameters=parameters(count))
    if callable(thing) and not isinstance(thing, type):
        return tr("a function ({name})", name=function_name(thing))
    return tr("a {type}", type=type(thing).__name__)


def tensor(thing: torch.Tensor) -> str:
    layout = layout_of(thing)
    if layout == "nested":
        return tr("a nested torch.Tensor of {count} tensors, {dtype}", count=thing.size(0),
                  dtype=short_dtype(thing))
    if layout == "meta":
        return tr("a torch.Tensor of shape {shape} on the meta device, which holds no values",
                  shape=shape(thing.shape))
    if layout == "sparse":
        return tr("a sparse torch.Tensor of shape {shape}, {dtype}", shape=shape(thing.shape),
                  dtype=short_dtype(thing))
    if thing.dim() == 0 and not thing.is_quantized:
        return tr("a 0-d torch.Tensor ({value})", value=num(thing.item()))
    return tr("a torch.Tensor of shape {shape}, {dtype}", shape=shape(thing.shape), dtype=short_dtype(thing))


def kind_of(thing: Any) -> str:
    """What the expected value is, by its type and structure only, never by its value: 'an int',
    'a torch.Tensor of shape [3, 4], float32', 'a list of 2 items'."""
    thing = plain_scalar(thing)
    if isinstance(thing, bool):
        return tr("a bool")
    if isinstance(thing, int):
        return tr("an int")
    if isinstance(thing, float):
        return tr("a float")
    if isinstance(thing, complex):
        return tr("a complex number")
    if isinstance(thing, str):
        return tr("a str")
    if isinstance(thing, torch.Tensor) and thing.dim() == 0 and layout_of(thing) is None:
        return tr("a 0-d torch.Tensor")
    return value(thing)


def brief(thing: Any) -> str:
    """One input of a case, in a few words: a tensor by its dtype and shape, a number by itself, a
    model by its class and size, a list by its length; never its repr when that would be long."""
    thing = plain_scalar(thing)
    if isinstance(thing, torch.Tensor):
        layout = layout_of(thing)
        if layout == "nested":
            return tr("nested {dtype} of {count}", dtype=short_dtype(thing), count=thing.size(0))
        text = f"{short_dtype(thing)} {shape(thing.shape)}"
        return f"{text} ({layout})" if layout else text
    if is_ndarray(thing):
        return f"numpy {thing.dtype} {shape(thing.shape)}"
    if thing is None or isinstance(thing, (bool, float, complex, torch.dtype, torch.device)):
        return num(thing) if isinstance(thing, (float, complex)) else str(thing)
    if isinstance(thing, int):
        return integer(thing)
    if isinstance(thing, str):
        return repr(thing) if len(thing) <= SHORT_INPUT else tr("a str of {count} characters", count=len(thing))
    if isinstance(thing, (list, tuple)):
        return f"{type(thing).__name__} {items_of(thing)}" if not thing else tr(
            "{type} of {items}", type=type(thing).__name__, items=items_of(thing))
    if isinstance(thing, dict):
        return tr("dict with {entries}", entries=keys(len(thing)))
    if isinstance(thing, torch.nn.Module):
        count = parameter_count(thing)
        return type(thing).__name__ if count is None else f"{type(thing).__name__} ({parameters(count)})"
    if callable(thing) and not isinstance(thing, type):
        return tr("function {name}", name=function_name(thing))
    return type(thing).__name__


def inputs(args: tuple[Any, ...]) -> str:
    if len(args) == 0:
        return tr("no inputs")
    if len(args) == 1:
        return tr("input {value}", value=brief(args[0]))
    return tr("inputs ({listed})", listed=", ".join(brief(arg) for arg in args))


def items_of(sequence: Sequence[Any]) -> str:
    """'3 items', or '3 tensors' when every item is a tensor."""
    if sequence and all(isinstance(item, torch.Tensor) for item in sequence):
        return tr("1 tensor") if len(sequence) == 1 else tr("{count} tensors", count=len(sequence))
    return items(len(sequence))


def function_name(function: Callable) -> str:
    return getattr(function, "__name__", type(function).__name__)


def error_text(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {short(text[0])}" if text else type(error).__name__


def key_list(found: Sequence[Any]) -> str:
    """Dict keys for a message: at most KEYS_SHOWN of them, each short, then how many more."""
    shown = "[" + ", ".join(short(repr(key), 30) for key in found[:KEYS_SHOWN]) + "]"
    if len(found) > KEYS_SHOWN:
        return tr("{listed} and {count} more", listed=shown, count=len(found) - KEYS_SHOWN)
    return shown


def shape(dims: Any) -> str:
    return "[" + ", ".join(str(int(n)) for n in dims) + "]"


def index(position: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(i)) for i in position) + "]"


def integer(number: int) -> str:
    """An int as written, or by its length when it would not fit on a line (str() of an int of
    more than 4300 digits even raises)."""
    if abs(number) < 10 ** 30:
        return repr(number)
    return tr("a number of about {count} digits", count=int(abs(number).bit_length() * math.log10(2)) + 1)


def num(number: Any) -> str:
    """A number to read: 4 significant digits for floats, exact for the rest."""
    if isinstance(number, complex):
        return f"{number:.4g}"
    if isinstance(number, float):
        if math.isnan(number):
            return "NaN"
        if number.is_integer() and abs(number) < 1e15:
            return repr(number)  # 1024.0, not 1024: a float that looks like an int is still a float
        return format(number, ".4g")
    if isinstance(number, int) and not isinstance(number, bool):
        return integer(number)
    return short(repr(number))


def items(n: int) -> str:
    return tr("1 item") if n == 1 else tr("{count} items", count=n)


def keys(n: int) -> str:
    return tr("1 key") if n == 1 else tr("{count} keys", count=n)


def positions(n: int) -> str:
    return tr("1 position") if n == 1 else tr("{count} positions", count=n)


def parameters(n: int) -> str:
    return tr("1 parameter") if n == 1 else tr("{count} parameters", count=f"{n:,}")


def short(text: str, limit: int = SHORT) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
