"""A local fleet for `make demo` and the end-to-end suite: Kubernetes API servers on 127.0.0.1
(`servers`), the real Pulumi CLI running the program of this checkout (`project`), the tools they
need (`toolset`) and the demo itself (`demo`). Runs from a checkout; needs the `pulumi` extra.
"""
