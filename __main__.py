"""The modelplane Pulumi program: read the stack's config and hand off to the library.

`pulumi preview` shows every cluster, serving stack, placed replica and route; `pulumi up`
converges them. The stack's `modelplane:role` picks one stack for the whole fleet (the default) or
the split layout's fleet stack or workload stack (`modelplane.pulumi.roles`). See docs/pulumi.md for
the stack config keys and how to run it.
"""

from pathlib import Path

from modelplane.pulumi.roles import program

program(Path(__file__).resolve().parent)
