"""The MiniMind language model: embeddings, a stack of pre-norm Transformer blocks, and a head.

    token ids [B, T]
      -> embed_tokens                                  [B, T, C]
      -> N x block:  x = x + attention(RMSNorm(x))     (mixes positions)
                     x = x + feed_forward(RMSNorm(x))  (mixes channels)
      -> norm -> lm_head                               [B, T, vocab] logits for the next token

`model(ids)` reaches attention's core in four calls: MiniMindForCausalLM.forward, MiniMindBlock.forward,
Attention.forward, then `fused_attention` (torch's kernel: MiniMind's default, `flash_attn=True`) or,
when the weights are asked for or `flash_attn=False`, Attention.softmax after the steps before it.
Its inputs are checked once, at the door (a forward pre-hook); `generate` checks its own once, then
calls `forward` directly for each step. What a step runs (RoPE, the cache, the masks, the sampling)
checks its own arguments, in one call each.

Parameter names follow MiniMind exactly (`model.layers.3.self_attn.q_proj.weight`, ...), so a
state dict moves between this model and transformers' LlamaForCausalLM (qk_norm=False) or
Qwen3ForCausalLM (qk_norm=True) with `strict=True`; the tests do exactly that and compare logits.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import Door, check_arguments, check_forward, check_generate, check_state_dict
from .attention import Attention
from .config import MiniMindConfig
from .feedforward import FeedForward
from .kv_cache import KVCache
from .masks import combined_mask
from .norm import RMSNorm
from .rope import precompute_freqs_cis
from .sampling import select_next_token


@dataclass
class CausalLMOutput:
    """What a forward pass returns."""

    logits: torch.Tensor  # [B, T, vocab], or only the last `logits_to_keep` positions
    past_key_values: KVCache | None = None  # the KVCache, when use_cache=True
    attentions: tuple[torch.Tensor, ...] | None = None  # one [B, H, T, S] per layer, when output_attentions=True
    loss: torch.Tensor | None = None  # next-token cross-entropy, when labels were given


class MiniMindBlock(nn.Module):
    """One Transformer block, pre-norm with residual connections."""

    def __init__(self, layer_idx: int, config: MiniMindConfig):
        super().__init__()
        check_arguments("MiniMindBlock(layer_idx, config)", config, MiniMindConfig, layer_idx=layer_idx)
        self.self_attn = Attention(config, layer_idx)
        self.self_attn.door.remove()  # the model's door checks what its layers get
        self.input_layernorm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.mlp = FeedForward(config)

    def forward(self, hidden_states, position_embeddings, attn_mask=None, past_key_values=None,
                output_attentions=False):
        attn_out, weights = self.self_attn(self.input_layernorm(hidden_states), position_embeddings, attn_mask,
                                           past_key_values, output_attentions)
        hidden_states = hidden_states + attn_out
        hidden_states = hidden_states + self.mlp(self.post_attention_layernorm(hidden_states))
        return hidden_states, weights


class MiniMindModel(nn.Module):
    """The Transformer body's weights under MiniMind's names (`model.layers.3...`): embeddings, blocks,
    final norm, RoPE tables. Like nanoGPT's `transformer`, no forward: MiniMindForCausalLM's runs it."""

    def __init__(self, config: MiniMindConfig):
        super().__init__()
        check_arguments("MiniMindModel(config)", config, MiniMindConfig)
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.dropout = config.dropout  # of the embeddings, in training only
        self.layers = nn.ModuleList(MiniMindBlock(i, config) for i in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        # RoPE angles for every position, computed once; not saved in the state dict (derived).
        freqs_cos, freqs_sin = precompute_freqs_cis(
            config.head_dim, config.max_position_embeddings, config.rope_theta, config.rope_scaling)
        self.register_buffer("freqs_cos", freqs_cos, persistent=False)  # [max_pos, D]
        self.register_buffer("freqs_sin", freqs_sin, persistent=False)

    def position_embeddings(self, past_len: int, seq_len: int, position_ids=None):
        """(cos, sin) for the new tokens: [T, D] when positions are past_len .. past_len + T - 1,
        [B, T, D] when `position_ids` gives each sequence its own (left padding)."""
        if position_ids is None:
            return self.freqs_cos[past_len:past_len + seq_len], self.freqs_sin[past_len:past_len + seq_len]
        return self.freqs_cos[position_ids], self.freqs_sin[position_ids]


class MiniMindForCausalLM(nn.Module):
    """MiniMind with its language-model head: predicts the next token at every position."""

    def __init__(self, config: MiniMindConfig | None = None):
        super().__init__()
        self.config = MiniMindConfig() if config is None else config
        check_arguments("MiniMindForCausalLM(config)", self.config, MiniMindConfig)
        self.model = MiniMindModel(self.config)
        self.lm_head = nn.Linear(self.config.hidden_size, self.config.vocab_size, bias=False)
        self.apply(self._init_weights)
        if self.config.tie_word_embeddings:  # one matrix reads tokens in and writes them out
            self.model.embed_tokens.weight = self.lm_head.weight
        self.register_forward_pre_hook(Door(check_forward), with_kwargs=True)  # model(...) checks once

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=self.config.initializer_range)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                past_key_values: KVCache | None = None, use_cache: bool = False, output_attentions: bool = False,
                position_ids: torch.Tensor | None = None, labels: torch.Tensor | None = None,
                logits_to_keep: int = 0) -> CausalLMOutput:
        """input_ids [B, T] -> CausalLMOutput. attention_mask [B, S]: 1 for tokens, 0 for padding,
        S = cached + T positions. past_key_values: a KVCache from an earlier call, updated in place
        (use_cache=True makes one if none is given, and returns it). position_ids [B, T]: each
        token's position, for left-padded batches; by default they continue from the cache. labels
        [B, T]: the input ids themselves (shifted here), -100 where to skip. logits_to_keep: logits
        for the last N positions only (0 = all)."""
        body = self.model
        batch, seq_len = input_ids.shape
        if use_cache and past_key_values is None:
            past_key_values = KVCache(self.config, batch, capacity=seq_len)
        past_len = 0 if past_key_values is None else past_key_values.get_seq_length()
        position_embeddings = body.position_embeddings(past_len, seq_len, position_ids)
        attn_mask = combined_mask(attention_mask, seq_len, past_len + seq_len)  # None: plain causal

        hidden_states = torch.dropout(body.embed_tokens(input_ids), body.dropout, self.training)  # [B, T, C]
        attentions = ()
        for block in body.layers:
            hidden_states, weights = block(hidden_states, position_embeddings, attn_mask, past_key_values,
                                           output_attentions)
            attentions += (weights,)
        hidden_states = body.norm(hidden_states)

        logits = self.lm_head(hidden_states[:, -logits_to_keep:])  # [B, T, vocab]; -0: every position
        loss = None if labels is None else F.cross_entropy(  # next-token: logits at t predict labels at t + 1
            logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1), ignore_index=-100)
        return CausalLMOutput(logits=logits, past_key_values=past_key_values if use_cache else None,
                              attentions=attentions if output_attentions else None, loss=loss)

    @torch.inference_mode()
    def generate(self, input_ids: torch.Tensor, max_new_tokens: int, temperature: float = 0.0,
                 top_k: int | None = None, top_p: float | None = None, use_cache: bool = True,
                 eos_token_id: int | None = None, attention_mask: torch.Tensor | None = None,
                 generator: torch.Generator | None = None) -> torch.Tensor:
        """Extend each prompt by up to `max_new_tokens` tokens; returns [B, T + new] ids. Greedy when
        temperature is 0. With `use_cache` the prompt goes through once (prefill), then one token per
        step; without it, every step re-reads the whole sequence (the slow way module 07 measures). A
        sequence that emits `eos_token_id` is padded with it until all are done. `attention_mask`
        marks left padding; positions then start at each sequence's first real token, as in transformers."""
        check_generate(self, input_ids, max_new_tokens, temperature, top_k, top_p, use_cache, eos_token_id,
                       attention_mask, generator)
        batch, prompt_len = input_ids.shape
        total = prompt_len + max_new_tokens
        position_ids = None
        if attention_mask is not None:
            attention_mask = attention_mask.bool()  # checked: bool needs no second look at its values
            position_ids = (attention_mask.cumsum(-1) - 1).masked_fill(~attention_mask, 1)

        tokens = torch.cat([input_ids, input_ids.new_empty(batch, max_new_tokens)], dim=1)  # [B, total]
        cache = KVCache(self.config, batch, capacity=total) if use_cache else None
        finished = torch.zeros(batch, dtype=torch.bool, device=input_ids.device)
        length, step_input, step_positions = prompt_len, input_ids, position_ids
        for _ in range(max_new_tokens):
            out = self.forward(step_input, attention_mask, cache, position_ids=step_positions, logits_to_keep=1)
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

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """nn.Module's, and a state dict made for another config names the field that differs."""
        check_state_dict(self, state_dict, strict)
        return super().load_state_dict(state_dict, strict=strict, assign=assign)
