#!/usr/bin/env python3
"""torchrun (python3 -m torch.distributed.run), working around a bug of Debian 12's PyTorch
1.13 on Python 3.11: its Std.from_str looks values up by iterating the IntFlag, which on
Python 3.11 skips NONE (0) and ALL (3), so every launch fails in to_map with "'NoneType'
object has no attribute 'get'". Where torchrun works, this is plain torchrun.

    python3 examples/charlm/torchrun.py --nproc_per_node=2 examples/charlm/train.py --ddp
"""

import sys

from torch.distributed.elastic.multiprocessing import api
from torch.distributed.run import main

if api.Std.from_str("0") is None:
    _broken = api.Std.from_str

    def _from_str(vm):
        if vm.isdigit():
            return api.Std(int(vm))
        mapping = _broken(vm)
        return {rank: api.Std(int(v)) for rank, v in
                (m.split(":") for m in vm.split(","))} if isinstance(mapping, dict) else mapping

    api.Std.from_str = staticmethod(_from_str)

if __name__ == "__main__":
    sys.exit(main())
