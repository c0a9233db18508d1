_state = {"init": False, "rank": 0}


def init_process_group(backend=None, **kw):
    import os
    _state["init"] = True
    _state["rank"] = int(os.environ.get("RANK", "0"))


def is_initialized():
    return _state["init"]


def get_rank():
    return _state["rank"]


def destroy_process_group():
    _state["init"] = False
