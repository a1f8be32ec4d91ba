module modelplane.e2e/tools/lws

go 1.26.0

require sigs.k8s.io/lws v0.9.0
