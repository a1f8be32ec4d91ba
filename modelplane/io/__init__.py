"""The edges that read and write outside the process for the CLI and the Pulumi program: what a
cluster publishes (ResourceSlices from a file or a live cluster), kubeconfig clients whose errors
never quote credentials, folders written whole or not at all, and which install extra provides a
package that is missing.

Nothing here decides: the rules live in the pure layers (`api`, `cel`, `scheduling`, `compose`).
"""
