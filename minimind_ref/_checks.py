"""Every input check of minimind_ref, so that the files that teach show the ideas. Each public function
calls its check once, at its top; those the model runs on every token ask plain comparisons first, so
good arguments cost that one call. Nothing here imports minimind_ref: no import goes round in a circle."""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable
from typing import Any, NamedTuple

import torch


# -- values ---------------------------------------------------------------------------------------
def is_int(value) -> bool:
    """A true integer, numpy's included; not a bool (True is 1 to Python, never a size to a reader)."""
    return type(value) is int or isinstance(value, numbers.Integral) and not isinstance(value, bool)

def is_real(value) -> bool:
    return type(value) in (int, float) or isinstance(value, numbers.Real) and not isinstance(value, bool)

def is_bool(value) -> bool:  # numpy's np.True_ too, which is no Python bool
    return type(value) is bool or type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_")

def plain(value):  # numpy's bools, integers and reals (any numbers.Integral or Real) as Python's
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    return bool(value) if is_bool(value) else int(value) if is_int(value) else float(value) if is_real(value) else value

def got(value) -> str:  # a value as a message shows it: a number as itself, anything else with its type
    number = is_real(value) or value is None or is_bool(value)
    return repr(value) if number else f"{type(value).__name__} {value!r}"

class Rule(NamedTuple):
    what: str  # the message's "<name> must be <what>, got <value>"
    ok: Callable[[Any], bool]
    optional: str = ""  # what None means, where None is allowed

def integer(low: int | None = 1, what: str = "a positive integer", optional: str = "", high: int | None = None):
    return Rule(what, lambda v: is_int(v) and (low is None or v >= low) and (high is None or v <= high), optional)

def number(ok: Callable[[float], bool], what: str) -> Rule:
    return Rule(what, lambda v: is_real(v) and math.isfinite(v) and ok(v))

BOOL = Rule("True or False", is_bool)
POSITIVE = number(lambda v: v > 0, "a finite positive number")

def check_value(name: str, value, rule: Rule, error: type[Exception] = ValueError) -> None:
    if (value is not None or not rule.optional) and not rule.ok(value):
        raise error(f"{name} must be {rule.what}{f' or None ({rule.optional})' if rule.optional else ''}, "
                    f"got {got(value)}.")

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)  # half: computed in float32

def require_tensor(where: str, name: str, value, dims: int | None = None, layout: str = "", floats=False) -> None:
    """A tensor with values (dense, not on the meta device) of `dims` dimensions, and floating-point if `floats`."""
    if type(value) is not torch.Tensor and not isinstance(value, torch.Tensor):
        raise TypeError(f"{where}{name} must be a torch.Tensor {layout}, got {type(value).__name__}.")
    if value.is_meta or value.layout != torch.strided:
        raise TypeError(f"{where}{name} must be a dense tensor with values (not on the meta device, not sparse), got "
                        f"{value.layout} on {value.device}: use {name}.to_dense(), or make it on a real device.")
    if floats and value.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{where}{name} is {value.dtype}, but attention needs floating-point tensors (float32, "
                        f"float64, bfloat16 or float16): convert with {name}.float().")
    if dims is not None and value.ndim != dims:
        raise ValueError(f"{where}{name} must be {dims}-D {layout}, got shape {tuple(value.shape)}.")

ARGUMENTS = {"dim": integer(), "eps": POSITIVE, "hidden_size": integer(), "layer_idx": integer(0, "an integer >= 0"),
             "batch_size": integer(), "capacity": integer(optional="DEFAULT_CAPACITY, 256 positions")}

def check_arguments(owner: str, config=None, config_type: type | None = None, error=ValueError, **values) -> None:
    """A constructor's or a helper's: its `config` (when `config_type` is given), then each of `values` by its rule."""
    if config_type is not None and not isinstance(config, config_type):
        raise TypeError(f"{owner}: config must be a {config_type.__name__}, got {type(config).__name__}: build one "
                        f"with {config_type.__name__}(...), and check the order of the arguments.")
    for name, value in values.items():
        check_value(f"{owner}: {name}", value, ARGUMENTS[name], error)

def check_features(owner: str, x, width: int | None = None) -> None:
    """x [..., width] of floats, or, width None, a tensor of any even width (rotate_half's pairs)."""
    want = f"floats [..., {width}] (the width it was built for)" if width else "[..., even] (pairs i, i + dim/2)"
    require_tensor(f"{owner}: ", "x", x, None, want)
    if x.ndim == 0 or (x.shape[-1] != width or not x.dtype.is_floating_point if width else x.shape[-1] % 2):
        raise ValueError(f"{owner}: x must be {want}, got shape {tuple(x.shape)} {x.dtype}: " + (
            "convert it with x.float(), or build the layer for its width." if width else "use an even last dimension."))

# -- configs --------------------------------------------------------------------------------------
class ConfigError(ValueError):
    """A config field breaks a rule; the message names the field and the fix."""

MINIMIND_FIELDS: dict[str, Rule] = {
    "hidden_size": integer(), "num_hidden_layers": integer(), "num_attention_heads": integer(),
    "num_key_value_heads": integer(optional="as many as num_attention_heads"),
    "head_dim": integer(optional="hidden_size // num_attention_heads"),
    "intermediate_size": integer(optional="derived from hidden_size, as the MiniMind2 series does"),
    "vocab_size": integer(), "max_position_embeddings": integer(),
    # a base of 1 or less makes no geometric frequencies (0 or less: NaN angles)
    "rope_theta": number(lambda v: v > 1, "a finite number greater than 1 (MiniMind uses 1e6)"),
    "inference_rope_scaling": BOOL, "rope_scaling": Rule("a dict", lambda v: isinstance(v, dict), "no YaRN"),
    "rms_norm_eps": POSITIVE, "dropout": number(lambda v: 0 <= v < 1, "in [0, 1)"),
    "flash_attn": BOOL, "tie_word_embeddings": BOOL, "qk_norm": BOOL,
    "hidden_act": Rule("'silu' (SwiGLU, as MiniMind)", lambda v: v == "silu"),
    "bos_token_id": integer(None, "an integer token id"), "eos_token_id": integer(None, "an integer token id"),
    "initializer_range": POSITIVE,
}
YARN_FIELDS: dict[str, Rule] = {
    "type": Rule("'yarn'", lambda v: v == "yarn"), "beta_fast": number(lambda v: v > 0, "a finite number > 0"),
    "beta_slow": number(lambda v: v > 0, "a finite number > 0"),
    "factor": number(lambda v: v >= 1, "a finite number, at least 1"),
    "original_max_position_embeddings": integer(), "attention_factor": POSITIVE,
}

def check_fields(config, table: dict[str, Rule], prefix: str = "") -> None:
    """Every field by its rule, once numpy's numbers are made Python's (a config holds plain values)."""
    for field in dataclasses.fields(config):
        object.__setattr__(config, field.name, plain(getattr(config, field.name)))
    for name, rule in table.items():
        check_value(prefix + name, getattr(config, name), rule, ConfigError)

def check_minimind_config(config, yarn_defaults: dict) -> None:
    """Before the derived fields are filled in; `rope_scaling` as `yarn_defaults` complete it."""
    check_fields(config, MINIMIND_FIELDS)
    heads = config.num_attention_heads
    kv = config.num_key_value_heads or heads
    if kv > heads:
        raise ConfigError(f"num_key_value_heads ({kv}) is larger than num_attention_heads ({heads}): each "
                          f"key/value head is shared by a group of query heads, so use at most {heads}.")
    if heads % kv:
        raise ConfigError(f"num_attention_heads ({heads}) is not divisible by num_key_value_heads ({kv}): query heads "
                          f"are split into equal groups that share one key/value head. Valid num_key_value_heads for "
                          f"{heads} heads: {[d for d in range(1, heads + 1) if heads % d == 0]}.")
    if config.head_dim is None and config.hidden_size % heads:
        raise ConfigError(f"hidden_size ({config.hidden_size}) is not divisible by num_attention_heads ({heads}), so "
                          f"head_dim cannot be derived: choose a hidden_size that is a multiple of {heads}, or set "
                          f"head_dim explicitly.")
    if (head_dim := config.head_dim or config.hidden_size // heads) % 2:
        raise ConfigError(f"head_dim ({head_dim}) must be even: RoPE rotates pairs of dimensions.")
    for name in ("bos_token_id", "eos_token_id"):
        if not 0 <= (token := getattr(config, name)) < config.vocab_size:
            raise ConfigError(f"{name} ({token}) must be a token id in [0, vocab_size={config.vocab_size}).")
    if config.rope_scaling is not None:
        check_rope_scaling(config.rope_scaling, yarn_defaults)

def check_rope_scaling(rope_scaling, defaults: dict) -> None:
    if not isinstance(rope_scaling, dict):
        raise ConfigError(f"rope_scaling must be a dict (or None), got {type(rope_scaling).__name__}.")
    if extra := set(rope_scaling) - set(YARN_FIELDS):
        raise ConfigError(f"rope_scaling has unknown keys {sorted(extra)}; MiniMind's YaRN uses {sorted(YARN_FIELDS)}.")
    merged = {**defaults, **rope_scaling}
    for key, rule in YARN_FIELDS.items():
        check_value(f"rope_scaling[{key!r}]", merged[key], rule, ConfigError)
    if not merged["beta_fast"] > merged["beta_slow"]:
        raise ConfigError(f"rope_scaling needs beta_fast > beta_slow > 0 (rotations that bound the ramp), "
                          f"got beta_fast={merged['beta_fast']!r}, beta_slow={merged['beta_slow']!r}.")

def check_rope_table(dim, end, rope_base, rope_scaling, yarn_defaults: dict) -> None:
    check_value("precompute_freqs_cis: dim", dim, Rule("a positive even number (pairs of dimensions)",
                                                       lambda v: is_int(v) and v >= 2 and v % 2 == 0))
    check_value("precompute_freqs_cis: end (number of positions)", end, integer(what="positive"))
    check_value("precompute_freqs_cis: rope_base", rope_base, MINIMIND_FIELDS["rope_theta"])
    if rope_scaling is not None:
        check_rope_scaling(rope_scaling, yarn_defaults)

# -- attention, RoPE, repeat_kv and the masks -----------------------------------------------------
def check_attention_args(caller: str, q, k, v, attn_mask=None, is_causal=False, scale=None, dropout_p=0.0,
                         enable_gqa=False) -> None:
    """Every attention path's: torch SDPA's rules but for two. Causal is aligned bottom-right, so T <= S;
    an integer mask is refused (a 0/1 padding mask added to the scores would hide nothing)."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if type(t) is not torch.Tensor or t.dtype not in FLOAT_DTYPES or t.is_meta or t.layout != torch.strided:
            require_tensor(f"{caller}: ", name, t, floats=True)
        if t.ndim != 4:
            raise ValueError(f"{caller} expects {name} as [batch, heads, seq, head_dim], got shape {tuple(t.shape)}.")
    if not q.dtype == k.dtype == v.dtype or not q.device == k.device == v.device:
        raise TypeError(f"{caller}: q, k and v must share one dtype and device, got {q.dtype}, {k.dtype}, {v.dtype} "
                        f"on {q.device}, {k.device}, {v.device}: convert them with .to(q).")
    if k.shape[:-1] != v.shape[:-1] or q.shape[0] != k.shape[0] or q.shape[3] != k.shape[3]:
        raise ValueError(f"{caller}: k and v must agree on batch, heads and length (one value per key), and q and k on "
                         f"batch and head_dim (a score is a query . key), got q {tuple(q.shape)}, k {tuple(k.shape)} "
                         f"and v {tuple(v.shape)}.")
    heads, kv_heads = q.shape[1], k.shape[1]
    if kv_heads != heads and not enable_gqa:
        raise ValueError(f"{caller}: q has {heads} heads but k and v have {kv_heads}: pass enable_gqa=True to share "
                         f"key/value heads across groups of query heads, or repeat them with repeat_kv.")
    if kv_heads != heads and (kv_heads == 0 or heads % kv_heads):
        raise ValueError(f"{caller}: q's {heads} heads cannot be split into equal groups over k's {kv_heads} heads: "
                         f"the number of query heads must be a multiple of the number of key/value heads.")
    mask, scores = attn_mask, (q.shape[0], heads, q.shape[2], k.shape[2])
    if mask is not None and not (type(mask) is torch.Tensor and mask.dtype == torch.bool and mask.ndim == 4
                                 and mask.shape[0] in (1, scores[0]) and mask.shape[1] in (1, heads)
                                 and mask.shape[2:] == scores[2:] and mask.device == q.device
                                 and mask.layout == torch.strided):  # the model's: no call
        check_mask(caller, mask, scores, q.device, floats=True)
    if type(is_causal) is not bool and not is_bool(is_causal):
        raise TypeError(f"{caller}: is_causal must be True or False, got {is_causal!r}.")
    if is_causal and q.shape[2] > k.shape[2]:
        raise ValueError(f"{caller}: is_causal with {q.shape[2]} queries over {k.shape[2]} keys: the causal mask is "
                         f"aligned bottom-right (the queries are the last tokens of the keys), so it needs no more "
                         f"queries than keys. For torch's top-left alignment, pass an explicit bool attn_mask.")
    if scale is not None and (not is_real(scale) or not math.isfinite(scale)):
        raise (ValueError if is_real(scale) else TypeError)(
            f"{caller}: scale must be {'finite' if is_real(scale) else 'a number'} (or None for 1/sqrt(head_dim)), "
            f"got {got(scale)}.")
    if type(dropout_p) is not float and not is_real(dropout_p) or not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{caller}: dropout_p must be a number in [0, 1], got {dropout_p!r}.")
    if type(enable_gqa) is not bool and not is_bool(enable_gqa):
        raise TypeError(f"{caller}: enable_gqa must be True or False, got {enable_gqa!r}.")

def check_mask(caller: str, attn_mask, scores: tuple, device, floats: bool) -> None:
    """attn_mask broadcasts *to* the scores [B, H, T, S] (not growing them); bool, or float when `floats`."""
    require_tensor(f"{caller}: ", "attn_mask", attn_mask, None, "or None")
    if attn_mask.dtype != torch.bool and not (floats and attn_mask.dtype.is_floating_point):
        floats = " or float (added to the scores: 0 keeps a key, -inf hides it)" if floats else ""
        raise TypeError(f"{caller}: attn_mask is {attn_mask.dtype}; it must be bool (True = may attend){floats}. An "
                        f"integer 0/1 mask would be added as a bias and hide nothing: pass attn_mask.bool().")
    shape = (1,) * (4 - attn_mask.ndim) + attn_mask.shape
    if not 2 <= attn_mask.ndim <= 4 or attn_mask.device != device or not (
            shape[0] in (1, scores[0]) and shape[1] in (1, scores[1]) and shape[2] in (1, scores[2])
            and shape[3] in (1, scores[3])):
        raise ValueError(f"{caller}: attn_mask of shape {tuple(attn_mask.shape)} does not broadcast to the scores "
                         f"[batch, heads, queries, keys] = {scores} on {device} (it is on {attn_mask.device}): each of "
                         f"its 2 to 4 dimensions must be 1 or the scores' own (a mask of the keys alone: [1, keys]).")

def check_rotary_args(q, k, cos, sin) -> None:
    for name, t in (("q", q), ("k", k), ("cos", cos), ("sin", sin)):
        if type(t) is not torch.Tensor or not t.dtype.is_floating_point or t.is_meta or t.layout != torch.strided:
            require_tensor("apply_rotary_pos_emb: ", name, t, floats=True)
    if q.ndim != 4 or k.ndim != 4 or sin.shape != cos.shape or k.shape[0] != q.shape[0] or k.shape[2:] != q.shape[2:] \
            or q.shape[3] % 2 or cos.shape != q.shape[2:] and cos.shape != (q.shape[0], *q.shape[2:]) \
            or not q.device == k.device == cos.device == sin.device:
        raise ValueError(f"apply_rotary_pos_emb: q {tuple(q.shape)} and k {tuple(k.shape)} must be [B, H, T, D] with "
                         f"one batch, length T and even head_dim D, and cos and sin [T, D] or [B, T, D] on q's device "
                         f"({q.device}; move them with .to(q.device)), got cos {tuple(cos.shape)} and sin "
                         f"{tuple(sin.shape)} on {cos.device} and {sin.device} (k on {k.device}).")

def check_repeat_kv(x, n_rep) -> None:
    if type(x) is not torch.Tensor or x.ndim != 4 or x.is_meta or x.layout != torch.strided:
        require_tensor("repeat_kv: ", "x", x, 4, "[batch, kv_heads, seq, D]")
    if type(n_rep) is not int and not is_int(n_rep) or n_rep < 1:
        raise ValueError(f"repeat_kv's n_rep must be a positive integer, got {n_rep!r}.")

def check_mask_lengths(query_len, key_len, window=0, caller: str = "causal_mask", least: int = 0, causal=True,
                       device=None) -> None:
    """The masks' lengths and device (the model builds one on every token: plain ints cost this one call)."""
    for name, value in (("query_len", query_len), ("key_len", key_len), ("window", window)):
        if type(value) is not int and not is_int(value):
            raise TypeError(f"{caller}: {name} must be an int, got {got(value)}.")
    if type(causal) is not bool and not is_bool(causal):
        raise TypeError(f"{caller}: causal must be True or False, got {causal!r}.")
    if query_len < least or key_len < query_len:
        raise ValueError(f"{caller} needs {least} <= query_len <= key_len (the queries are the last tokens of the "
                         f"keys), got query_len={query_len}, key_len={key_len}.")
    if caller == "sliding_window_mask" and window < 1:
        raise ValueError(f"{caller} needs window >= 1 (the keys a query sees, itself included), got window={window}.")
    if device is not None and type(device) is not torch.device:
        try:
            torch.empty(0, device=device)
        except Exception as error:
            raise ValueError(f"{caller}: device must be a device this machine has, got {got(device)}.") from error

def check_attention_mask(attention_mask, batch_size: int | None = None, key_len: int | None = None,
                         cached: int = 0) -> None:
    """A padding mask [batch, key_len] of 1 (token) / 0 (padding); a bool one's values need no look."""
    if type(attention_mask) is not torch.Tensor or attention_mask.ndim != 2 or attention_mask.is_meta \
            or attention_mask.layout != torch.strided:
        require_tensor("", "attention_mask", attention_mask, 2, "[batch, key_len] of 1 (token) / 0 (padding)")
    if batch_size is not None and attention_mask.shape[0] != batch_size:
        raise ValueError(f"attention_mask has batch size {attention_mask.shape[0]} but input_ids has {batch_size}.")
    if key_len is not None and attention_mask.shape[1] != key_len:
        raise ValueError(f"attention_mask covers {attention_mask.shape[1]} positions but " + (
            f"attention sees {key_len} keys ({cached} cached + {key_len - cached} new tokens): with a KV cache, the "
            f"mask must cover the cached tokens too." if cached else
            f"there are {key_len} tokens: it needs one 1/0 entry per token of input_ids."))
    if attention_mask.dtype.is_complex or (
            attention_mask.dtype != torch.bool and not bool(((attention_mask == 0) | (attention_mask == 1)).all())):
        raise ValueError("attention_mask must hold only 0 (padding) and 1 (token).")

# -- the KV cache ---------------------------------------------------------------------------------
class CacheError(ValueError):
    """A KV cache used with inputs it cannot hold; the message says which and why."""

def check_cache_fits(cache, config, batch_size: int, new_tokens: int, layer_idx: int | None = None) -> None:
    """A KVCache built for this model (for one layer, `layer_idx`: its slot and head sizes) and batch, with
    room for the new tokens: checked before any layer runs."""
    if not hasattr(cache, "num_kv_heads"):
        raise TypeError(f"past_key_values must be a minimind_ref.KVCache or None, got {type(cache).__name__}.")
    built = (cache.num_layers, cache.num_kv_heads, cache.head_dim)
    model = (config.num_hidden_layers if layer_idx is None else cache.num_layers, config.num_key_value_heads,
             config.head_dim)
    if built != model:
        raise CacheError(f"this KV cache was built for (num_hidden_layers, num_key_value_heads, head_dim) = {built}, "
                         f"but the model has {model}: build it with the model's config, KVCache(model.config, batch).")
    if batch_size != cache.batch_size:
        raise CacheError(f"this KV cache was built for batch size {cache.batch_size}, but the input has batch size "
                         f"{batch_size}: a cache holds one batch; start a new one (past_key_values=None).")
    check_layer_index(cache, layer_idx := layer_idx or 0)
    if cache.lengths[layer_idx] + new_tokens > cache.max_length:
        raise room_error(cache, layer_idx, new_tokens)

def room_error(cache, layer_idx: int, new_tokens: int) -> CacheError:
    return CacheError(f"the KV cache holds {cache.lengths[layer_idx]} positions and {new_tokens} more would pass "
                      f"max_position_embeddings ({cache.max_length}).")

def check_layer_index(cache, layer_idx) -> None:
    if type(layer_idx) is not int and not is_int(layer_idx) or not 0 <= layer_idx < cache.num_layers:
        raise CacheError(f"layer_idx must be an integer in [0, {cache.num_layers - 1}], got {got(layer_idx)}.")

def check_cache_update(cache, layer_idx, k, v) -> None:
    if type(layer_idx) is not int or not 0 <= layer_idx < cache.num_layers:
        check_layer_index(cache, layer_idx)
    for name, t in (("k", k), ("v", v)):
        if type(t) is not torch.Tensor or not t.dtype.is_floating_point or t.is_meta or t.layout != torch.strided:
            require_tensor("KVCache.update: ", name, t, floats=True)
    layout, stored = (cache.batch_size, cache.num_kv_heads, cache.head_dim), cache.keys[layer_idx]
    if k.shape != v.shape or k.ndim != 4 or (k.shape[0], k.shape[1], k.shape[3]) != layout or k.dtype != v.dtype \
            or k.device != v.device or stored is not None and stored.device != k.device:
        raise CacheError(f"KVCache.update: k and v must both be [batch, num_key_value_heads, new positions, "
                         f"head_dim] = [{layout[0]}, {layout[1]}, T, {layout[2]}], of one dtype, on the device of layer"
                         f" {layer_idx}'s storage; got k {tuple(k.shape)} {k.dtype} {k.device}, v {tuple(v.shape)} "
                         f"{v.dtype} {v.device}.")
    if cache.lengths[layer_idx] + k.shape[2] > cache.max_length:
        raise room_error(cache, layer_idx, k.shape[2])

# -- the model, and an Attention layer called on its own ------------------------------------------
INT_DTYPES = (torch.int64, torch.int32)

class Door(NamedTuple):  # a forward pre-hook: `check(module, *args, **kwargs)` once per call (and picklable)
    check: Callable
    def __call__(self, module, args, kwargs) -> None:
        self.check(module, *args, **kwargs)

def check_forward(model, input_ids, attention_mask=None, past_key_values=None, use_cache=False,
                  output_attentions=False, position_ids=None, labels=None, logits_to_keep=0) -> None:
    config, (batch, seq_len) = model.config, check_input_ids(model.config, input_ids)
    if past_key_values is not None:
        check_cache_fits(past_key_values, config, batch, seq_len)
    past_len = 0 if past_key_values is None else len(past_key_values)
    check_value("use_cache", use_cache, BOOL)
    check_value("output_attentions", output_attentions, BOOL)
    if attention_mask is not None:
        check_attention_mask(attention_mask, batch_size=batch, key_len=past_len + seq_len, cached=past_len)
    max_pos = config.max_position_embeddings
    if position_ids is None and past_len + seq_len > max_pos:
        raise ValueError(f"the sequence reaches position {past_len + seq_len - 1}, past max_position_embeddings "
                         f"({max_pos}): use a shorter input or a config with a larger max_position_embeddings.")
    if (ids := position_ids) is not None:
        require_tensor("", "position_ids", ids, 2, f"[batch, seq_len] = [{batch}, {seq_len}] of positions")
        if ids.shape[1] != seq_len or ids.shape[0] not in (1, batch) or ids.dtype not in INT_DTYPES:
            raise ValueError(f"position_ids must be integers of shape [batch, seq_len] = [{batch}, {seq_len}] (or "
                             f"[1, {seq_len}]), got {tuple(ids.shape)} {ids.dtype}.")
        if int(ids.min()) < 0 or int(ids.max()) >= max_pos:
            raise ValueError(f"position_ids must lie in [0, max_position_embeddings={max_pos}).")
    check_value("logits_to_keep", logits_to_keep, integer(0, "an integer >= 0 (the last N positions get logits)"))
    if labels is not None:
        check_labels(labels, input_ids, logits_to_keep, config.vocab_size)

def check_attention_layer(layer, x, position_embeddings, attn_mask=None, past_key_values=None,
                          output_attentions=False) -> None:
    hidden, head_dim, weight = layer.config.hidden_size, layer.head_dim, layer.q_proj.weight
    require_tensor("Attention: ", "x", x, 3, f"[batch, seq, hidden_size={hidden}] of hidden states")
    if not x.dtype.is_floating_point or x.shape[2] != hidden or 0 in x.shape:
        raise ValueError(f"Attention expects x as hidden states [batch, seq, hidden_size={hidden}] of floats with at "
                         f"least one token, got {tuple(x.shape)} {x.dtype} (token ids go through an embedding first).")
    if x.dtype != weight.dtype or x.device != weight.device:
        raise TypeError(f"Attention: x is {x.dtype} on {x.device} but the layer's weights are {weight.dtype} on "
                        f"{weight.device}: convert one of them (x.to(...) or layer.to(...)).")
    batch, seq = x.shape[:2]
    tables = position_embeddings if isinstance(position_embeddings, (tuple, list)) else ()
    if len(tables) != 2 or not all(isinstance(t, torch.Tensor) and t.dtype.is_floating_point and t.shape in (
            (seq, head_dim), (batch, seq, head_dim)) and t.device == x.device and t.layout == torch.strided
                                   for t in tables):
        raise ValueError(f"Attention: position_embeddings must be (cos, sin), dense float tables on x's device "
                         f"({x.device}) of [seq, head_dim] = [{seq}, {head_dim}] or [batch, seq, head_dim] = [{batch}, "
                         f"{seq}, {head_dim}] (an angle per position and dimension: MiniMindModel.position_embeddings"
                         f"), got {[getattr(t, 'shape', t) for t in tables] or got(tables or position_embeddings)}.")
    if past_key_values is not None:
        check_cache_fits(past_key_values, layer.config, batch, seq, layer.layer_idx)
    if attn_mask is not None:
        cached = 0 if past_key_values is None else past_key_values.get_seq_length(layer.layer_idx)
        check_mask("Attention", attn_mask, (batch, layer.num_heads, seq, cached + seq), x.device, floats=False)
    check_value("Attention: output_attentions", output_attentions, BOOL)

def check_input_ids(config, input_ids) -> tuple[int, int]:
    require_tensor("", "input_ids", input_ids, 2, "[batch, seq_len] of token ids")
    if input_ids.dtype not in INT_DTYPES:
        raise ValueError(f"input_ids must hold integer token ids (int64), got dtype {input_ids.dtype}.")
    if 0 in input_ids.shape:
        raise ValueError(f"input_ids has shape {tuple(input_ids.shape)}: give at least one sequence of one token.")
    low, high = int(input_ids.min()), int(input_ids.max())
    if low < 0 or high >= config.vocab_size:
        raise ValueError(f"input_ids must lie in [0, vocab_size={config.vocab_size}), got values from {low} to {high}.")
    return input_ids.shape[0], input_ids.shape[1]

def check_labels(labels, input_ids, logits_to_keep: int, vocab_size: int) -> None:
    """Labels are the input ids themselves (shifted inside forward); -100 marks a position to skip."""
    require_tensor("", "labels", labels, None, "of token ids")
    if labels.shape != input_ids.shape or labels.dtype not in INT_DTYPES:
        raise ValueError(f"labels must hold integer token ids (int64), in the shape of input_ids "
                         f"{tuple(input_ids.shape)}, got {tuple(labels.shape)} {labels.dtype}.")
    if logits_to_keep:
        raise ValueError("labels need logits at every position: leave logits_to_keep at 0.")
    outside = (labels != -100) & ((labels < 0) | (labels >= vocab_size))
    if bool(outside.any()):
        row, col = (int(i) for i in outside.nonzero()[0])
        raise ValueError(f"labels must be token ids in [0, vocab_size={vocab_size}) or -100 (skip this position); "
                         f"labels[{row}, {col}] is {int(labels[row, col])}.")
    if not bool((labels[:, 1:] != -100).any()):
        raise ValueError("every label that is predicted (positions 1 and later: position 0 has no token before it) "
                         "is -100, so the loss would average over no position (NaN): leave at least one unmasked.")

def check_generate(model, input_ids, max_new_tokens, temperature, top_k, top_p, use_cache, eos_token_id,
                   attention_mask, generator) -> None:
    vocab, (batch, prompt_len) = model.config.vocab_size, check_input_ids(model.config, input_ids)
    if attention_mask is not None:
        check_attention_mask(attention_mask, batch_size=batch, key_len=prompt_len)
    check_value("max_new_tokens", max_new_tokens, integer(0, "a non-negative integer"))
    if prompt_len + max_new_tokens > model.config.max_position_embeddings:
        raise ValueError(f"prompt ({prompt_len}) + max_new_tokens ({max_new_tokens}) = {prompt_len + max_new_tokens} "
                         f"passes max_position_embeddings ({model.config.max_position_embeddings}).")
    check_sampling(temperature, top_k, top_p, vocab, generator)
    check_value("use_cache", use_cache, BOOL)
    check_value("eos_token_id", eos_token_id, integer(0, f"an integer in [0, {vocab - 1}]", "no stop", vocab - 1))

def check_sampling(temperature, top_k, top_p, vocab_size: int, generator=None) -> None:
    check_value("temperature", temperature, Rule(">= 0 and finite (0 means greedy)",
                                                 lambda v: is_real(v) and 0 <= v < math.inf))
    check_value("top_k", top_k, integer(1, f"an integer in [1, vocab_size={vocab_size}]", "no cut", vocab_size))
    check_value("top_p", top_p, Rule("in (0, 1]", lambda v: is_real(v) and 0 < v <= 1, "no cut"))
    check_value("generator", generator, Rule("a torch.Generator", lambda v: isinstance(v, torch.Generator),
                                             "torch's own"), TypeError)

def check_select_next_token(logits, temperature, top_k, top_p, generator) -> None:
    """generate calls select_next_token on every token: greedy decoding of ordinary logits costs this one call."""
    if type(logits) is not torch.Tensor or logits.ndim != 2 or logits.is_meta or logits.layout != torch.strided:
        require_tensor("select_next_token: ", "logits", logits, 2, "[batch, vocab]")
    if not logits.dtype.is_floating_point:
        raise TypeError(f"select_next_token: logits must be floating point, got {logits.dtype}: use logits.float().")
    if 0 in logits.shape:
        raise ValueError(f"select_next_token: logits {tuple(logits.shape)} holds no token to choose.")
    if not (type(temperature) is float and temperature == 0.0 and top_k is top_p is generator is None):
        check_sampling(temperature, top_k, top_p, logits.shape[1], generator)

def check_logits_values(logits) -> None:
    """select_next_token found a row whose largest logit is not finite: which kind of row it is."""
    if bool((torch.isnan(logits) | torch.isposinf(logits)).any()):
        raise ValueError("select_next_token: logits contain NaN or +inf, which no probability can come from.")
    raise ValueError(f"select_next_token: every one of logits[{int(logits.amax(-1).argmin())}] is -inf, so every "
                     f"token has probability 0: there is nothing to choose (was every token masked out?).")

# The config fields that set each parameter's shape: (name's ending, dimension) -> fields (else hidden_size).
SHAPE_FIELDS = {
    ("embed_tokens.weight", 0): "vocab_size", ("lm_head.weight", 0): "vocab_size",
    ("q_proj.weight", 0): "num_attention_heads * head_dim", ("k_proj.weight", 0): "num_key_value_heads * head_dim",
    ("v_proj.weight", 0): "num_key_value_heads * head_dim", ("o_proj.weight", 1): "num_attention_heads * head_dim",
    ("q_norm.weight", 0): "head_dim", ("k_norm.weight", 0): "head_dim", ("gate_proj.weight", 0): "intermediate_size",
    ("up_proj.weight", 0): "intermediate_size", ("down_proj.weight", 1): "intermediate_size",
}

def check_state_dict(model, state_dict, strict: bool) -> None:
    """A state dict made for another config fails here, naming the config field that differs."""
    if not hasattr(state_dict, "items"):
        raise TypeError(f"load_state_dict needs a mapping of names to tensors, got {type(state_dict).__name__}.")
    own, config = model.state_dict(), model.config
    for name, tensor in state_dict.items():
        if name in own and isinstance(tensor, torch.Tensor) and tensor.shape != own[name].shape:
            ending, shape = ".".join(name.split(".")[-2:]), own[name].shape
            fields = {SHAPE_FIELDS.get((ending, d), "hidden_size") for d in range(min(tensor.ndim, len(shape)))
                      if tensor.shape[d] != shape[d]}
            raise ValueError(f"load_state_dict: {name} is {tuple(tensor.shape)} in the state dict but {tuple(shape)} "
                             f"here: the configs differ in {' and '.join(sorted(fields) or ['hidden_size'])}; build "
                             f"the model with the config the weights were made for.")
    layers = len({int(n.split(".")[2]) for n in state_dict if n.startswith("model.layers.")})
    if strict and layers and layers != config.num_hidden_layers:
        raise ValueError(f"load_state_dict: the state dict has {layers} layers but this model has num_hidden_layers="
                         f"{config.num_hidden_layers}: build it with the config the weights were made for.")
    norms = any(".q_norm." in n for n in state_dict)
    if strict and state_dict and norms != config.qk_norm:
        raise ValueError(f"load_state_dict: the state dict {'has' if norms else 'has no'} q_norm/k_norm weights but "
                         f"this model has qk_norm={config.qk_norm}: build it with qk_norm={norms}.")
