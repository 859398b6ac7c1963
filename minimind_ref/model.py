"""The MiniMind language model: embeddings, a stack of pre-norm Transformer blocks, and a head.

    token ids [B, T]
      -> embed_tokens                                  [B, T, C]
      -> N x block:  x = x + attention(RMSNorm(x))     (mixes positions)
                     x = x + feed_forward(RMSNorm(x))  (mixes channels)
      -> norm -> lm_head                               [B, T, vocab] logits for the next token

Parameter names follow MiniMind exactly (`model.layers.3.self_attn.q_proj.weight`, ...), so a
state dict moves between this model and transformers' LlamaForCausalLM (qk_norm=False) or
Qwen3ForCausalLM (qk_norm=True) with `strict=True`; the tests do exactly that and compare logits.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .attention import Attention
from .config import MiniMindConfig
from .feedforward import FeedForward
from .kv_cache import KVCache
from .masks import check_attention_mask, padding_and_causal
from .norm import RMSNorm
from .rope import precompute_freqs_cis
from .sampling import check_sampling_args, select_next_token


@dataclass
class CausalLMOutput:
    """What a forward pass returns.

    logits: [B, T, vocab] (or only the last `logits_to_keep` positions);
    past_key_values: the KVCache, when use_cache=True;
    attentions: one [B, H, T, S] weight tensor per layer, when output_attentions=True;
    loss: next-token cross-entropy, when labels were given.
    """

    logits: torch.Tensor
    past_key_values: KVCache | None = None
    attentions: tuple[torch.Tensor, ...] | None = None
    loss: torch.Tensor | None = None


class MiniMindBlock(nn.Module):
    """One Transformer block, pre-norm with residual connections."""

    def __init__(self, layer_idx: int, config: MiniMindConfig):
        super().__init__()
        self.self_attn = Attention(config, layer_idx)
        self.input_layernorm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.mlp = FeedForward(config)

    def forward(self, hidden_states, position_embeddings, attn_mask=None, past_key_values=None,
                output_attentions=False):
        attn_out, weights = self.self_attn(
            self.input_layernorm(hidden_states), position_embeddings, attn_mask, past_key_values,
            output_attentions)
        hidden_states = hidden_states + attn_out
        hidden_states = hidden_states + self.mlp(self.post_attention_layernorm(hidden_states))
        return hidden_states, weights


class MiniMindModel(nn.Module):
    """The Transformer body: token ids to final hidden states."""

    def __init__(self, config: MiniMindConfig):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.dropout = nn.Dropout(config.dropout)
        self.layers = nn.ModuleList(MiniMindBlock(i, config) for i in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        # RoPE angles for every position, computed once; not saved in the state dict (derived).
        freqs_cos, freqs_sin = precompute_freqs_cis(
            config.head_dim, config.max_position_embeddings, config.rope_theta, config.rope_scaling)
        self.register_buffer("freqs_cos", freqs_cos, persistent=False)  # [max_pos, D]
        self.register_buffer("freqs_sin", freqs_sin, persistent=False)

    def forward(self, input_ids, attention_mask=None, past_key_values=None, use_cache=False,
                output_attentions=False, position_ids=None):
        """input_ids [B, T] -> (hidden states [B, T, C], the cache, per-layer attention weights).
        Checks its arguments (check_inputs), then runs the layers (`run`)."""
        check_inputs(self.config, input_ids, attention_mask, past_key_values, position_ids)
        return self.run(input_ids, attention_mask, past_key_values, use_cache, output_attentions, position_ids)

    def run(self, input_ids, attention_mask=None, past_key_values=None, use_cache=False,
            output_attentions=False, position_ids=None):
        """The forward pass itself, on arguments already checked: what `forward` and each step of
        `generate` run (a generated token needs no second look)."""
        batch, seq_len = input_ids.shape
        if use_cache and past_key_values is None:
            past_key_values = KVCache(self.config, batch, capacity=seq_len)
        past_len = past_key_values.get_seq_length() if past_key_values is not None else 0
        key_len = past_len + seq_len

        position_embeddings = self._position_embeddings(past_len, seq_len, position_ids, batch)
        attn_mask = padding_and_causal(attention_mask, seq_len, key_len)  # None: plain causal
        hidden_states = self.embed_tokens(input_ids)  # [B, T, C]
        if self.training:  # dropout is the identity in eval; no call on every generated token
            hidden_states = self.dropout(hidden_states)
        attentions = []
        for layer in self.layers:
            hidden_states, weights = layer(hidden_states, position_embeddings, attn_mask,
                                           past_key_values, output_attentions)
            attentions.append(weights)
        hidden_states = self.norm(hidden_states)
        return hidden_states, past_key_values, tuple(attentions) if output_attentions else None

    def _position_embeddings(self, past_len, seq_len, position_ids, batch):
        """(cos, sin) for the new tokens: [T, D] when positions are past_len .. past_len + T - 1,
        [B, T, D] when `position_ids` gives each sequence its own (left padding)."""
        if position_ids is None:
            return self.freqs_cos[past_len:past_len + seq_len], self.freqs_sin[past_len:past_len + seq_len]
        return self.freqs_cos[position_ids], self.freqs_sin[position_ids]


class MiniMindForCausalLM(nn.Module):
    """MiniMind with its language-model head: predicts the next token at every position."""

    def __init__(self, config: MiniMindConfig | None = None):
        super().__init__()
        self.config = config or MiniMindConfig()
        self.model = MiniMindModel(self.config)
        self.lm_head = nn.Linear(self.config.hidden_size, self.config.vocab_size, bias=False)
        self.apply(self._init_weights)
        if self.config.tie_word_embeddings:  # one matrix reads tokens in and writes them out
            self.model.embed_tokens.weight = self.lm_head.weight

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=self.config.initializer_range)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        past_key_values: KVCache | None = None,
        use_cache: bool = False,
        output_attentions: bool = False,
        position_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        logits_to_keep: int = 0,
    ) -> CausalLMOutput:
        """input_ids [B, T] -> CausalLMOutput (see its docstring).

        attention_mask [B, S]: 1 for tokens, 0 for padding, S = cached + T positions.
        past_key_values: a KVCache from an earlier call (it is updated in place); use_cache=True
        makes one if none is given and returns it. position_ids [B, T]: each token's position,
        for left-padded batches; by default positions continue from the cache. labels [B, T]:
        the input ids themselves (the shift by one happens here); -100 marks positions to skip.
        logits_to_keep: compute logits only for the last N positions (0 = all).
        """
        check_inputs(self.config, input_ids, attention_mask, past_key_values, position_ids)
        if labels is not None:
            check_labels(labels, input_ids, logits_to_keep, self.config.vocab_size)
        return self._run(input_ids, attention_mask, past_key_values, use_cache, output_attentions,
                         position_ids, labels, logits_to_keep)

    def _run(self, input_ids, attention_mask=None, past_key_values=None, use_cache=False,
             output_attentions=False, position_ids=None, labels=None, logits_to_keep=0) -> CausalLMOutput:
        """forward, on arguments already checked (each step of generate runs this)."""
        hidden_states, cache, attentions = self.model.run(
            input_ids, attention_mask, past_key_values, use_cache, output_attentions, position_ids)
        if logits_to_keep:
            hidden_states = hidden_states[:, -logits_to_keep:]
        logits = self.lm_head(hidden_states)  # [B, T, vocab]
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1),
                                   ignore_index=-100)
        return CausalLMOutput(logits=logits, past_key_values=cache if use_cache else None,
                              attentions=attentions, loss=loss)

    @torch.inference_mode()
    def generate(
        self,
        input_ids: torch.Tensor,
        max_new_tokens: int,
        temperature: float = 0.0,
        top_k: int | None = None,
        top_p: float | None = None,
        use_cache: bool = True,
        eos_token_id: int | None = None,
        attention_mask: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Extend each prompt by up to `max_new_tokens` tokens; returns [B, T + new] ids.

        Greedy when temperature is 0. With `use_cache` the prompt goes through once (prefill)
        and then one token per step; without it, every step re-reads the whole sequence (the
        slow way module 07 measures). A sequence that emits `eos_token_id` is padded with it
        until all are done. `attention_mask` marks left padding; positions then start at each
        sequence's first real token, as transformers does.
        """
        check_inputs(self.config, input_ids, attention_mask)
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be a non-negative integer, got {max_new_tokens!r}.")
        check_sampling_args(temperature, top_k, top_p, self.config.vocab_size)
        batch, prompt_len = input_ids.shape
        total = prompt_len + max_new_tokens
        if total > self.config.max_position_embeddings:
            raise ValueError(
                f"prompt ({prompt_len}) + max_new_tokens ({max_new_tokens}) = {total} passes "
                f"max_position_embeddings ({self.config.max_position_embeddings}).")
        position_ids = None
        if attention_mask is not None:
            attention_mask = attention_mask.long()
            position_ids = (attention_mask.cumsum(-1) - 1).masked_fill(attention_mask == 0, 1)

        tokens = input_ids.new_empty(batch, total)
        tokens[:, :prompt_len] = input_ids
        cache = KVCache(self.config, batch, capacity=total) if use_cache else None
        finished = torch.zeros(batch, dtype=torch.bool, device=input_ids.device)
        length, step_input, step_positions = prompt_len, input_ids, position_ids
        for _ in range(max_new_tokens):
            out = self._run(step_input, attention_mask=attention_mask, past_key_values=cache,
                            position_ids=step_positions, logits_to_keep=1)
            next_token = select_next_token(out.logits[:, -1], temperature, top_k, top_p, generator)  # [B]
            if eos_token_id is not None:
                next_token = next_token.masked_fill(finished, eos_token_id)
                finished |= next_token == eos_token_id
            tokens[:, length] = next_token
            length += 1
            if attention_mask is not None:
                attention_mask = torch.cat([attention_mask, attention_mask.new_ones(batch, 1)], dim=-1)
                position_ids = torch.cat([position_ids, position_ids[:, -1:] + 1], dim=-1)
            if use_cache:  # feed only the new token; the cache holds the rest
                step_input = next_token[:, None]
                step_positions = None if position_ids is None else position_ids[:, -1:]
            else:  # feed everything again
                step_input = tokens[:, :length]
                step_positions = position_ids
            if eos_token_id is not None and bool(finished.all()):
                break
        return tokens[:, :length]


# -- argument checks, in one place: run once per call of forward or generate, never per token ----


def check_inputs(config: MiniMindConfig, input_ids, attention_mask=None, past_key_values=None,
                 position_ids=None) -> None:
    """Refuse, before any layer runs, inputs the model cannot read, saying what was expected."""
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2:
        shape = tuple(input_ids.shape) if isinstance(input_ids, torch.Tensor) else type(input_ids).__name__
        raise ValueError(f"input_ids must be a 2-D tensor [batch, seq_len] of token ids, got {shape}.")
    if input_ids.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"input_ids must hold integer token ids (int64), got dtype {input_ids.dtype}.")
    batch, seq_len = input_ids.shape
    if batch == 0 or seq_len == 0:
        raise ValueError(
            f"input_ids has shape {tuple(input_ids.shape)}: give at least one sequence of at least one token.")
    low, high = int(input_ids.min()), int(input_ids.max())
    if low < 0 or high >= config.vocab_size:
        raise ValueError(f"input_ids must lie in [0, vocab_size={config.vocab_size}), got values from {low} to {high}.")
    past_len = 0
    if past_key_values is not None:
        past_key_values.check_input(batch, seq_len)
        past_len = past_key_values.get_seq_length()
    if attention_mask is not None:
        check_attention_mask(attention_mask, batch_size=batch, key_len=past_len + seq_len, cached=past_len)
    max_pos = config.max_position_embeddings
    if position_ids is None:
        if past_len + seq_len > max_pos:
            raise ValueError(
                f"the sequence reaches position {past_len + seq_len - 1}, past max_position_embeddings "
                f"({max_pos}): use a shorter input or a config with a larger max_position_embeddings.")
        return
    if (not isinstance(position_ids, torch.Tensor) or position_ids.dim() != 2 or position_ids.shape[1] != seq_len
            or position_ids.shape[0] not in (1, batch)):
        shape = tuple(position_ids.shape) if isinstance(position_ids, torch.Tensor) else type(position_ids).__name__
        raise ValueError(
            f"position_ids must be [batch, seq_len] = [{batch}, {seq_len}] (or [1, {seq_len}]), got {shape}.")
    if int(position_ids.min()) < 0 or int(position_ids.max()) >= max_pos:
        raise ValueError(f"position_ids must lie in [0, max_position_embeddings={max_pos}).")


def check_labels(labels, input_ids, logits_to_keep: int, vocab_size: int) -> None:
    """Labels are the input ids themselves (shifted inside forward); -100 marks a position to skip."""
    if not isinstance(labels, torch.Tensor) or labels.shape != input_ids.shape:
        shape = tuple(labels.shape) if isinstance(labels, torch.Tensor) else type(labels).__name__
        raise ValueError(f"labels must have the shape of input_ids {tuple(input_ids.shape)}, got {shape}.")
    if logits_to_keep:
        raise ValueError("labels need logits at every position: leave logits_to_keep at 0.")
    if labels.dtype not in (torch.int64, torch.int32):
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
