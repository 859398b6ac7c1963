"""The SwiGLU feed-forward network that follows attention in every block.

down(silu(gate(x)) * up(x)): a gated MLP (Shazeer 2020, arXiv 2002.05202). `gate_proj` decides,
per hidden unit, how much of `up_proj`'s value passes; `down_proj` maps back to the model width.
Attention mixes information across positions; this mixes it across channels, a position at a time.
"""

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import check_arguments, check_features
from .config import MiniMindConfig


class FeedForward(nn.Module):
    def __init__(self, config: MiniMindConfig):
        super().__init__()
        check_arguments("FeedForward(config)", config, MiniMindConfig)
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)
        self.dropout = config.dropout  # in training only
        self.hidden_size = config.hidden_size  # the width of x it reads and writes

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [B, T, C] -> [B, T, C]
        if type(x) is not torch.Tensor or not x.dtype.is_floating_point or x.shape[-1:] != (self.hidden_size,):
            check_features("FeedForward", x, self.hidden_size)
        out = self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))
        return torch.dropout(out, self.dropout, self.training)
