"""The modelplane Pulumi program: read the stack's config and hand off to the library.

`pulumi preview` shows every cluster, serving stack, placed replica and route; `pulumi up`
converges them. The stack's `modelplane:role` picks one stack for the whole fleet (the default) or
the split layout's fleet stack or workload stack (`modelplane.pulumi.program`). See docs/pulumi.md for
the stack config keys and how to run it.

This is the program's entry point, so it alone sets process state: the cyclic garbage collector stays
off for the whole run, as in `modelplane.cli.run` (the manifests, the placement and the resources
live until the program ends; the collector would only rescan them). The component library leaves
the collector as it finds it.
"""

import gc
from pathlib import Path

from modelplane.pulumi.program import program

gc.disable()
program(Path(__file__).resolve().parent)
