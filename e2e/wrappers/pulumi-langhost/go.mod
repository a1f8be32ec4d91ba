module modelplane.e2e/tools/pulumi-langhost

go 1.26.0

require github.com/pulumi/pulumi/sdk/v3 v3.79.0

tool github.com/pulumi/pulumi/sdk/v3/python/cmd/pulumi-language-python
