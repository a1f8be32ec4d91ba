"""Writes the URNs that modelplane at commit b30faba (before issue 22's names) registers for two programs:
the dev stack (`__main__.py` with stacks/Pulumi.dev.yaml, as `tests/pulumi/harness.run_program` runs it)
and the `ml` fleet of examples/more-clouds (`tests/pulumi/test_clouds.build_fleet`), under Pulumi's mocks.
`tests/pulumi/test_names.py` checks that today's names reach every one of them through their aliases.

    git archive b30faba | tar -x -C OLD && PYTHONPATH=OLD python tests/data/names/generate.py OLD > tests/data/names/b30faba-urns.json
"""

import json
import sys
from pathlib import Path

from pulumi.runtime.mocks import MockMonitor

old = Path(sys.argv[1]).resolve()
sys.path.insert(0, str(old))

from tests.pulumi import harness, test_clouds  # noqa: E402  (from the old tree)

dev = harness.run_program(harness.Engine())
engine = test_clouds.CloudEngine()
_, monitor = test_clouds.build_fleet(engine)
print(json.dumps({"dev": sorted(dev.urns), "more-clouds": sorted(monitor.resources)}, indent=1))
