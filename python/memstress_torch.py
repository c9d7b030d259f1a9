"""The memstress recorder, memstress.recorder (python/memstress/recorder.py), under the name PyTorch programs
import: ``import memstress_torch``, ``python -m memstress_torch``. Its documentation is the recorder's."""

import sys

# Programs written for `import memstress_torch` keep working: the recorder moved into the package memstress.
from memstress import recorder
from memstress.recorder import *  # noqa: F403

__all__ = recorder.__all__

if __name__ == "__main__":
    sys.exit(recorder.main())
