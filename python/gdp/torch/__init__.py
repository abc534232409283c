"""gdp.torch: PyTorch training steps as gdp graphs (docs/python.md, "Importing PyTorch models").

    import torch, torchvision, gdp.torch
    model = torchvision.models.resnet18()
    x, y = torch.randn(8, 3, 64, 64), torch.randint(0, 1000, (8,))
    graph = gdp.torch.export(model, (x,), target=y, optimizer="adam")
    gdp.torch.save(graph, "r18.json")     # then: build/gdp place --graph r18.json ...

Pure Python over PyTorch (>= 1.13 with functorch); needs no compiled gdp extension.
"""

__all__ = ["export", "export_full", "save", "measure", "eager_step_time", "from_traced",
           "trace_training_step", "torchvision_case", "ExportError", "UnknownOpError",
           "TraceError", "ModelSpecError", "Exported"]

try:
    import torch as _torch  # noqa: F401
except ImportError as _e:  # keep `python3 -m gdp.torch` able to say so in one line
    _missing = _e

    def __getattr__(name):
        raise ImportError(f"gdp.torch needs PyTorch (Debian: python3-torch): {_missing}")

else:
    from .export import (ExportError, Exported, UnknownOpError, export, export_full,
                         from_traced, save)
    from .models import ModelSpecError, torchvision_case
    from .timing import eager_step_time, measure
    from .trace import TraceError, trace_training_step
