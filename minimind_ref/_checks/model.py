"""The model's inputs: forward's and generate's arguments, sampling settings, state dicts."""

from __future__ import annotations

import torch

from .cache import check_cache_fits
from .values import is_int, is_real, require_bool, require_int, require_tensor

INT_DTYPES = (torch.int64, torch.int32)


def check_forward_hook(model, args, kwargs) -> None:
    """MiniMindForCausalLM's forward pre-hook: `model(...)` checks its arguments here, once."""
    check_forward(model, *args, **kwargs)


def check_forward(model, input_ids, attention_mask=None, past_key_values=None, use_cache=False,
                  output_attentions=False, position_ids=None, labels=None, logits_to_keep=0) -> None:
    """MiniMindForCausalLM.forward's arguments, before any layer runs (its forward pre-hook)."""
    config = model.config
    batch, seq_len = check_input_ids(config, input_ids)
    past_len = 0
    if past_key_values is not None:
        check_cache_fits(past_key_values, config, batch, seq_len)
        past_len = len(past_key_values)
    require_bool("", "use_cache", use_cache)
    require_bool("", "output_attentions", output_attentions)
    if attention_mask is not None:
        check_attention_mask(attention_mask, batch_size=batch, key_len=past_len + seq_len, cached=past_len)
    check_positions(config, position_ids, batch, seq_len, past_len)
    if not is_int(logits_to_keep) or logits_to_keep < 0:
        raise ValueError(
            f"logits_to_keep must be an integer >= 0 (the last N positions get logits; 0 keeps all), "
            f"got {logits_to_keep!r}.")
    if labels is not None:
        check_labels(labels, input_ids, logits_to_keep, config.vocab_size)


def check_input_ids(config, input_ids) -> tuple[int, int]:
    require_tensor("", "input_ids", input_ids, 2, "[batch, seq_len] of token ids")
    if input_ids.dtype not in INT_DTYPES:
        raise ValueError(f"input_ids must hold integer token ids (int64), got dtype {input_ids.dtype}.")
    batch, seq_len = input_ids.shape
    if batch == 0 or seq_len == 0:
        raise ValueError(
            f"input_ids has shape {tuple(input_ids.shape)}: give at least one sequence of at least one token.")
    low, high = int(input_ids.min()), int(input_ids.max())
    if low < 0 or high >= config.vocab_size:
        raise ValueError(f"input_ids must lie in [0, vocab_size={config.vocab_size}), got values from {low} to {high}.")
    return batch, seq_len


def check_positions(config, position_ids, batch: int, seq_len: int, past_len: int) -> None:
    max_pos = config.max_position_embeddings
    if position_ids is None:
        if past_len + seq_len > max_pos:
            raise ValueError(
                f"the sequence reaches position {past_len + seq_len - 1}, past max_position_embeddings "
                f"({max_pos}): use a shorter input or a config with a larger max_position_embeddings.")
        return
    if (not isinstance(position_ids, torch.Tensor) or position_ids.dim() != 2 or position_ids.shape[1] != seq_len
            or position_ids.shape[0] not in (1, batch) or position_ids.dtype not in INT_DTYPES):
        shape = (f"{tuple(position_ids.shape)} {position_ids.dtype}" if isinstance(position_ids, torch.Tensor)
                 else type(position_ids).__name__)
        raise ValueError(
            f"position_ids must be integers of shape [batch, seq_len] = [{batch}, {seq_len}] (or [1, {seq_len}]), "
            f"got {shape}.")
    if int(position_ids.min()) < 0 or int(position_ids.max()) >= max_pos:
        raise ValueError(f"position_ids must lie in [0, max_position_embeddings={max_pos}).")


def check_attention_mask(attention_mask, batch_size: int | None = None, key_len: int | None = None,
                         cached: int = 0) -> None:
    """A padding mask [batch, key_len] of 1 (token) / 0 (padding)."""
    require_tensor("", "attention_mask", attention_mask, 2, "[batch, key_len] of 1 (token) / 0 (padding)")
    if batch_size is not None and attention_mask.shape[0] != batch_size:
        raise ValueError(
            f"attention_mask has batch size {attention_mask.shape[0]} but input_ids has {batch_size}.")
    if key_len is not None and attention_mask.shape[1] != key_len:
        if cached:
            raise ValueError(
                f"attention_mask covers {attention_mask.shape[1]} positions but attention sees {key_len} keys "
                f"({cached} cached + {key_len - cached} new tokens): with a KV cache, the mask must cover the "
                f"cached tokens too.")
        raise ValueError(
            f"attention_mask covers {attention_mask.shape[1]} positions but there are {key_len} tokens: "
            f"it needs one 1/0 entry per token of input_ids.")
    if attention_mask.dtype.is_complex or (
            attention_mask.dtype != torch.bool and not bool(((attention_mask == 0) | (attention_mask == 1)).all())):
        raise ValueError("attention_mask must hold only 0 (padding) and 1 (token).")


def check_labels(labels, input_ids, logits_to_keep: int, vocab_size: int) -> None:
    """Labels are the input ids themselves (shifted inside forward); -100 marks a position to skip."""
    if not isinstance(labels, torch.Tensor) or labels.shape != input_ids.shape:
        shape = tuple(labels.shape) if isinstance(labels, torch.Tensor) else type(labels).__name__
        raise ValueError(f"labels must have the shape of input_ids {tuple(input_ids.shape)}, got {shape}.")
    if logits_to_keep:
        raise ValueError("labels need logits at every position: leave logits_to_keep at 0.")
    if labels.dtype not in INT_DTYPES:
        raise ValueError(f"labels must hold integer token ids (int64), got dtype {labels.dtype}.")
    outside = (labels != -100) & ((labels < 0) | (labels >= vocab_size))
    if bool(outside.any()):
        row, col = (int(i) for i in outside.nonzero()[0])
        raise ValueError(
            f"labels must be token ids in [0, vocab_size={vocab_size}) or -100 (skip this position); "
            f"labels[{row}, {col}] is {int(labels[row, col])}.")
    if not bool((labels[:, 1:] != -100).any()):
        raise ValueError(
            "every label that is predicted (positions 1 and later: position 0 has no token before it) is "
            "-100, so the loss would average over no position (NaN): leave at least one label unmasked.")


def check_generate(model, input_ids, max_new_tokens, temperature, top_k, top_p, use_cache, eos_token_id,
                   attention_mask, generator) -> None:
    """MiniMindForCausalLM.generate's arguments: once per call, before the first step."""
    config = model.config
    batch, prompt_len = check_input_ids(config, input_ids)
    if attention_mask is not None:
        check_attention_mask(attention_mask, batch_size=batch, key_len=prompt_len)
    require_int("", "max_new_tokens", max_new_tokens, 0)
    total = prompt_len + max_new_tokens
    if total > config.max_position_embeddings:
        raise ValueError(
            f"prompt ({prompt_len}) + max_new_tokens ({max_new_tokens}) = {total} passes "
            f"max_position_embeddings ({config.max_position_embeddings}).")
    check_sampling(temperature, top_k, top_p, config.vocab_size, generator)
    require_bool("", "use_cache", use_cache)
    if eos_token_id is not None:
        require_int("", "eos_token_id", eos_token_id, 0, config.vocab_size - 1)


def check_sampling(temperature, top_k, top_p, vocab_size: int, generator=None) -> None:
    """Refuse sampling settings that would be silently wrong or fail deep inside torch."""
    if not (is_real(temperature) and 0.0 <= temperature < float("inf")):
        raise ValueError(f"temperature must be >= 0 and finite (0 means greedy), got {temperature!r}.")
    if top_k is not None and (not is_int(top_k) or not 1 <= top_k <= vocab_size):
        raise ValueError(f"top_k must be an integer in [1, vocab_size={vocab_size}] or None, got {top_k!r}.")
    if top_p is not None and not (is_real(top_p) and 0.0 < top_p <= 1.0):
        raise ValueError(f"top_p must be in (0, 1] or None, got {top_p!r}.")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}.")


def check_select_next_token(logits, temperature, top_k, top_p, generator) -> None:
    require_tensor("select_next_token: ", "logits", logits, 2, "[batch, vocab]")
    if not logits.dtype.is_floating_point:
        raise TypeError(f"select_next_token: logits must be floating point, got {logits.dtype}: use logits.float().")
    if logits.shape[0] == 0 or logits.shape[1] == 0:
        raise ValueError(f"select_next_token: logits {tuple(logits.shape)} holds no token to choose.")
    check_sampling(temperature, top_k, top_p, logits.shape[-1], generator)
    if bool((torch.isnan(logits) | torch.isposinf(logits)).any()):
        raise ValueError("select_next_token: logits contain NaN or +inf, which no probability can come from.")
    if not bool((logits > float("-inf")).any(dim=-1).all()):
        row = int((~(logits > float("-inf")).any(dim=-1)).nonzero()[0])
        raise ValueError(
            f"select_next_token: every one of logits[{row}] is -inf, so every token has probability 0: "
            f"there is nothing to choose (was every token masked out?).")


# Parameter shapes as the config fields that set them: (name's ending, dimension) -> fields.
_SHAPE_FIELDS = {
    ("embed_tokens.weight", 0): "vocab_size", ("embed_tokens.weight", 1): "hidden_size",
    ("lm_head.weight", 0): "vocab_size", ("lm_head.weight", 1): "hidden_size",
    ("q_proj.weight", 0): "num_attention_heads * head_dim", ("k_proj.weight", 0): "num_key_value_heads * head_dim",
    ("v_proj.weight", 0): "num_key_value_heads * head_dim", ("o_proj.weight", 1): "num_attention_heads * head_dim",
    ("q_norm.weight", 0): "head_dim", ("k_norm.weight", 0): "head_dim",
    ("gate_proj.weight", 0): "intermediate_size", ("up_proj.weight", 0): "intermediate_size",
    ("down_proj.weight", 1): "intermediate_size",
}


def check_state_dict(model, state_dict, strict: bool) -> None:
    """A state dict made for another config fails here, naming the config field that differs."""
    if not hasattr(state_dict, "items"):
        raise TypeError(f"load_state_dict needs a mapping of names to tensors, got {type(state_dict).__name__}.")
    own = model.state_dict()
    for name, tensor in state_dict.items():
        if name in own and isinstance(tensor, torch.Tensor) and tensor.shape != own[name].shape:
            ending = ".".join(name.split(".")[-2:])
            dims = [d for d in range(min(tensor.dim(), own[name].dim())) if tensor.shape[d] != own[name].shape[d]]
            fields = sorted({_SHAPE_FIELDS[(ending, d)] for d in dims if (ending, d) in _SHAPE_FIELDS})
            fields = fields or ["hidden_size"]
            raise ValueError(
                f"load_state_dict: {name} is {tuple(tensor.shape)} in the state dict but {tuple(own[name].shape)} "
                f"here: the configs differ in {' and '.join(fields)}; build the model with the config the "
                f"weights were made for.")
    if strict:
        layers = {int(n.split(".")[2]) for n in state_dict if n.startswith("model.layers.")}
        if layers and len(layers) != model.config.num_hidden_layers:
            raise ValueError(
                f"load_state_dict: the state dict has {len(layers)} layers but this model has "
                f"num_hidden_layers={model.config.num_hidden_layers}: build the model with the config the "
                f"weights were made for.")
        norms = any(".q_norm." in n for n in state_dict)
        if state_dict and norms != model.config.qk_norm:
            raise ValueError(
                f"load_state_dict: the state dict {'has' if norms else 'has no'} q_norm/k_norm weights but this "
                f"model has qk_norm={model.config.qk_norm}: build it with qk_norm={norms}.")
