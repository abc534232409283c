"""Resolves the CLI's model spec into (model, example inputs, target, loss): a torchvision
classification model by name (`torchvision:resnet18`) or the user's `module:function`."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch


class ModelSpecError(ValueError):
    """A model spec that names nothing loadable (the message says what was expected)."""


@dataclass
class ModelCase:
    name: str
    model: torch.nn.Module
    example_inputs: Any
    target: Optional[torch.Tensor] = None
    loss: Optional[Callable] = None


# Smallest input side each model accepts (torchvision's own checks or its downsampling).
MIN_IMAGE_SIZE = {"inception_v3": 75, "googlenet": 32}
# Models whose constructor takes the image size (positional embeddings sized by it).
SIZED_MODELS = ("vit_",)
INCEPTION_AUX_MIN = 299


def inception_loss(output: Any, target: torch.Tensor) -> torch.Tensor:
    """torchvision's reference recipe for Inception-v3: main loss + 0.4 x auxiliary loss."""
    ce = torch.nn.functional.cross_entropy
    if isinstance(output, tuple) and len(output) == 2 and output[1] is not None:
        return ce(output[0], target) + 0.4 * ce(output[1], target)
    return ce(output, target)


def torchvision_case(name: str, batch: int, image_size: int, seed: int = 0,
                     num_classes: int = 1000) -> ModelCase:
    """torchvision.models.<name> (random weights), a seeded input batch (batch, 3, S, S) and
    seeded labels; the loss is cross-entropy (Inception-v3: plus 0.4 x the auxiliary head)."""
    try:
        import torchvision
    except ImportError as e:
        raise ModelSpecError(
            "torchvision:NAME needs torchvision (Debian: python3-torchvision)") from e
    builders = {n for n in dir(torchvision.models) if not n.startswith("_")
                and callable(getattr(torchvision.models, n)) and n.islower()
                and n not in ("get_model", "get_weight", "list_models", "get_model_weights",
                              "get_model_builder")}
    if name not in builders:
        raise ModelSpecError(
            f"torchvision:{name}: no such model in torchvision {torchvision.__version__} "
            f"(e.g. resnet18, resnet50, inception_v3, vgg16, densenet121, mobilenet_v3_large, "
            f"vit_b_16, swin_t)")
    if batch < 1:
        raise ModelSpecError(f"--batch: expected an integer >= 1, got {batch}")
    low = MIN_IMAGE_SIZE.get(name, 32)
    if image_size < low:
        raise ModelSpecError(f"--image-size: {name} needs at least {low}, got {image_size}")
    kwargs: dict = {"num_classes": num_classes}
    if name.startswith(SIZED_MODELS):
        if image_size % 16 != 0 and name.endswith("_16"):
            raise ModelSpecError(f"--image-size: {name} needs a multiple of 16, got {image_size}")
        if image_size % 14 != 0 and name.endswith("_14"):
            raise ModelSpecError(f"--image-size: {name} needs a multiple of 14, got {image_size}")
        if image_size % 32 != 0 and name.endswith("_32"):
            raise ModelSpecError(f"--image-size: {name} needs a multiple of 32, got {image_size}")
        kwargs["image_size"] = image_size
    if name == "inception_v3":
        kwargs["init_weights"] = False  # scipy-free, fast; the graph does not depend on values
        # The auxiliary head pools a 17x17 map with a 5x5 window then a 5x5 conv: it needs the
        # full 299x299 input, so smaller images train the main head only.
        kwargs["aux_logits"] = image_size >= INCEPTION_AUX_MIN
    torch.manual_seed(seed)
    model = getattr(torchvision.models, name)(**kwargs)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, 3, image_size, image_size, generator=gen)
    y = torch.randint(0, num_classes, (batch,), generator=gen)
    loss = inception_loss if name == "inception_v3" else None
    return ModelCase(f"{name}_b{batch}_s{image_size}", model, (x,), y, loss)


def user_case(spec: str) -> ModelCase:
    """`module:function`: function() returns (model, example_inputs) or
    (model, example_inputs, loss) or (model, example_inputs, loss, target)."""
    mod_name, _, fn_name = spec.partition(":")
    if not mod_name or not fn_name:
        raise ModelSpecError(f"model {spec!r}: expected torchvision:NAME or module:function")
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as e:
        raise ModelSpecError(f"model {spec!r}: cannot import module {mod_name!r}: {e}") from e
    fn = getattr(mod, fn_name, None)
    if not callable(fn):
        raise ModelSpecError(f"model {spec!r}: module {mod_name!r} has no function {fn_name!r}")
    result = fn()
    if not isinstance(result, tuple) or not 2 <= len(result) <= 4:
        raise ModelSpecError(
            f"model {spec!r}: {fn_name}() must return (model, example_inputs[, loss[, target]]), "
            f"got {type(result).__name__}")
    model, inputs = result[0], result[1]
    loss = result[2] if len(result) > 2 else None
    target = result[3] if len(result) > 3 else None
    if not isinstance(model, torch.nn.Module):
        raise ModelSpecError(f"model {spec!r}: {fn_name}()[0] must be a torch.nn.Module, "
                             f"got {type(model).__name__}")
    if loss is not None and not callable(loss):
        raise ModelSpecError(f"model {spec!r}: {fn_name}()[2] (the loss) must be callable")
    return ModelCase(fn_name, model, inputs, target, loss)


def resolve(spec: str, batch: int, image_size: int, seed: int = 0) -> ModelCase:
    if spec.startswith("torchvision:"):
        return torchvision_case(spec.split(":", 1)[1], batch, image_size, seed)
    return user_case(spec)
