"""torch.profiler: profile logs its arguments and each step."""
import contextlib
import enum


class ProfilerActivity(enum.Enum):
    CPU = 0
    CUDA = 1


def schedule(wait, warmup, active, repeat=0):
    return f"schedule(wait={wait}, warmup={warmup}, active={active}, repeat={repeat})"


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    return f"tensorboard_trace_handler({dir_name!r}, worker_name={worker_name!r}, use_gzip={use_gzip})"


@contextlib.contextmanager
def record_function(name):
    import torch
    torch.log(f"range {name}")
    yield


class profile:
    def __init__(self, **kw):
        import torch
        for k in sorted(kw):
            v = kw[k]
            if k == "activities":
                v = "[" + ", ".join(a.name for a in v) + "]"
            torch.log(f"profile {k}={v}")

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False

    def step(self):
        import torch
        torch.log("profiler step")
