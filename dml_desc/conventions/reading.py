"""The one result shape of every convention: what `read` gives and what `write` gives."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class Reading:
    """A description read from a convention's JSON form.

    canonical: the map, a canonical.Resampling (a ConvSpec for ConvTransposeBackwardData);
    backward: True for a gradient description (RESAMPLE_GRAD*, InterpolateBackward, ResizeGrad,
        ConvTransposeBackwardData), False for a forward one;
    notes: what the reading assumed (for a Resampling, its own notes);
    layout: how the source lays its tensors out where the canonical form does not say (deconv: data_format,
        weights_format, dtype), so that a writer can keep it.
    """
    canonical: object
    backward: bool
    notes: tuple[str, ...] = ()
    layout: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Writing:
    """A description written in a convention's JSON form, and the notes (e.g. equal only for these shapes)."""
    obj: dict[str, object]
    notes: tuple[str, ...] = ()


class Convention(Protocol):
    """One entry of registry.CONVENTIONS: `read(obj, **options) -> Reading` and
    `write(canonical, backward=True, **options) -> Writing`, each with the options of its own format."""
    @property
    def name(self) -> str:
        """The format's name: "dml", "onednn", "onnx", "torch", "tf" or "jax"."""
        ...

    @property
    def read(self) -> Callable[..., Reading]:
        """`read(obj, **options) -> Reading`: the format's JSON form read."""
        ...

    @property
    def write(self) -> Callable[..., Writing]:
        """`write(canonical, backward=True, **options) -> Writing`: the canonical form written in the format."""
        ...
