"""The edges that read and write outside the process for the CLI and the Pulumi program: what a
cluster publishes (ResourceSlices from a file or a live cluster), kubeconfig clients whose errors
never quote credentials, and folders written whole or not at all.

Nothing here decides: the rules live in the pure layers (`api`, `cel`, `scheduling`, `compose`).
"""
