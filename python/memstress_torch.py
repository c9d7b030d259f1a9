"""The memstress recorder (memstress.recorder, python/memstress/recorder.py) and its batch finder
(memstress.find_max, python/memstress/find_max.py), under the name PyTorch programs import: ``import
memstress_torch``, ``python -m memstress_torch``. Their documentation is theirs."""

import sys

# Programs written for `import memstress_torch` keep working: the recorder moved into the package memstress.
from memstress import find_max, recorder
from memstress.find_max import *  # noqa: F403
from memstress.recorder import *  # noqa: F403

__all__ = recorder.__all__ + find_max.__all__

if __name__ == "__main__":
    sys.exit(recorder.main())
