module modelplane.e2e/tools/pulumi-cli

go 1.26.0

require (
	github.com/pulumi/pulumi/pkg/v3 v3.259.0
	github.com/pulumi/pulumi/sdk/v3 v3.259.0
)

// Both from pkg/v3's own go.mod: the clipboard fork it uses, and a gocloud.dev release in place of
// the pre-release pseudo-version it requires, which the proxy does not serve.
replace (
	github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-20241001131231-d02d263e614e
	gocloud.dev => gocloud.dev v0.47.0
)

tool github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
