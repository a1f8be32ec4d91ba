#!/usr/bin/env bash
# Build the end-to-end toolchain from the Go module proxy into a per-user cache.
#
# Usage: e2e/build-tools.sh [--print-bin] [--update-sums]
#   --print-bin    print only the toolset's bin directory on stdout (progress goes to stderr)
#   --update-sums  copy each wrapper's resolved go.mod/go.sum back into e2e/wrappers (maintainers)
#
# Contract:
# - Sources come from the Go module proxy only (GOPROXY without its `direct` fallback); every
#   module@version is probed before a long build, and a pin the proxy does not serve is replaced by
#   the first served version of its *_FALLBACKS list, announced on stderr and recorded in
#   MANIFEST. If none is served the script fails naming each module@version it tried.
# - Output: $MODELPLANE_E2E_CACHE (default ~/.cache/modelplane-e2e)/<key>/bin, where <key> hashes
#   versions.env. Each component is stamped when built, so a later run reuses it
#   and an interrupted run resumes. Nothing is written inside the repository (unless --update-sums).
# - bin/ holds: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, lws-controller, pulumi,
#   pulumi-language-python (+ our exec shim beside it), pulumi-resource-pulumi-python (our
#   dynamic-provider launcher) and pulumi-resource-kubernetes.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$HERE/versions.env"

PRINT_BIN=0
UPDATE_SUMS=0
for arg in "$@"; do
  case "$arg" in
    --print-bin) PRINT_BIN=1 ;;
    --update-sums) UPDATE_SUMS=1 ;;
    *) echo "build-tools.sh: unknown argument '$arg' (allowed: --print-bin, --update-sums)" >&2; exit 2 ;;
  esac
done

log() { echo "e2e-tools: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
trap 'log "ERROR: line $LINENO failed: $BASH_COMMAND"' ERR

command -v go >/dev/null || die "go is not on PATH (Go >= 1.24 is needed for go.mod tool directives)"

# Only the proxy: a `direct` fallback would try the source hosts, which are not reachable here.
proxy=$(GOFLAGS= go env GOPROXY)
proxy=${proxy%,direct}; proxy=${proxy%|direct}
[ -n "$proxy" ] && [ "$proxy" != direct ] && [ "$proxy" != off ] || die "GOPROXY ('$(go env GOPROXY)') names no module proxy"
export GOPROXY=$proxy GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false"
# The provider's pseudo-versions are not in the checksum database (it answers 404 for them).
export GONOSUMDB=github.com/pulumi/pulumi-kubernetes

# The key is the pins alone: a change to a wrapper or to what this script builds bumps TOOLSET_REVISION.
key=$(sha256sum < "$HERE/versions.env" | cut -c1-16)
ROOT=${MODELPLANE_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/modelplane-e2e}/$key
BIN=$ROOT/bin
SRC=$ROOT/src
mkdir -p "$BIN" "$SRC"
MANIFEST=$ROOT/MANIFEST

# probe MODULE@VERSION: succeeds when the proxy serves it (a refusal answers at once).
probe() { (cd "$SRC" && GOFLAGS= go mod download -json "$1" >/dev/null 2>&1); }

# pick MODULE PIN FALLBACKS...: print the first served version, trying the pin first.
pick() {
  local mod=$1 pin=$2; shift 2
  local tried=()
  for v in "$pin" "$@"; do
    if probe "$mod@$v"; then
      [ "$v" = "$pin" ] || log "WARNING: $mod@$pin is not served by $GOPROXY; using the adjacent $v"
      echo "$v"; return 0
    fi
    tried+=("$mod@$v")
  done
  die "the module proxy $GOPROXY serves none of: ${tried[*]}"
}

# stage NAME: a writable copy of the wrapper to build in (the repo stays untouched).
stage() {
  rm -rf "$SRC/$1"; mkdir -p "$SRC/$1"
  cp "$HERE/wrappers/$1/go.mod" "$SRC/$1/"
  [ ! -f "$HERE/wrappers/$1/go.sum" ] || cp "$HERE/wrappers/$1/go.sum" "$SRC/$1/"
}

# done_stamp NAME / stamp NAME LINE: per-component completion, with a manifest line.
built() { [ -f "$ROOT/.built-$1" ]; }
stamp() {
  local name=$1 line=$2 secs=$3; shift 3
  local sizes="" f
  for f in "$@"; do sizes="$sizes $(basename "$f")=$(( $(stat -c %s "$f") / 1048576 ))MiB"; done
  echo "$name: $line; built in ${secs}s;$sizes" >> "$MANIFEST"
  touch "$ROOT/.built-$name"
  log "$name done in ${secs}s ($line)"
}
save_sums() {
  [ "$UPDATE_SUMS" = 1 ] || return 0
  cp "$SRC/$1/go.mod" "$SRC/$1/go.sum" "$HERE/wrappers/$1/"
}

build_etcd() {
  built etcd && return 0
  local v t0=$SECONDS
  v=$(pick go.etcd.io/etcd/server/v3 "$ETCD_VERSION" $ETCD_FALLBACKS)
  stage etcd
  sed -i "s/ $ETCD_VERSION\$/ $v/" "$SRC/etcd/go.mod"
  log "building etcd $v"
  (cd "$SRC/etcd" && go build -trimpath -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3)
  save_sums etcd
  stamp etcd "go.etcd.io/etcd/server/v3@$v" $((SECONDS - t0)) "$BIN/etcd"
}

# kube_wrapper: stage the k8s.io/kubernetes wrapper at the version the proxy serves; sets kube_v
# (that version), kube_staging and kube_ldf (the version stamp every kube binary is linked with).
kube_wrapper() {
  local p minor
  kube_v=$(pick k8s.io/kubernetes "$KUBE_VERSION" $KUBE_FALLBACKS)
  kube_staging=v0.${kube_v#v1.}
  probe "k8s.io/apiserver@$kube_staging" || die "k8s.io/apiserver@$kube_staging (the staging release of k8s.io/kubernetes@$kube_v) is not served"
  stage kube
  sed -i "s/k8s.io\/kubernetes $KUBE_VERSION/k8s.io\/kubernetes $kube_v/; s/ v0\.${KUBE_VERSION#v1.}\$/ $kube_staging/" "$SRC/kube/go.mod"
  # The kubernetes provider reads /version: an unstamped build reports v0.0.0 and parses as 0.0.
  minor=${kube_v#v1.}; minor=${minor%%.*}
  kube_ldf="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    kube_ldf="$kube_ldf -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitVersion=$kube_v -X $p.gitTreeState=clean"
  done
}

build_kube() {
  built kube && return 0
  local t0=$SECONDS
  kube_wrapper
  log "building kube-apiserver, kube-controller-manager and kubectl $kube_v"
  (cd "$SRC/kube" && go build -trimpath -ldflags "$kube_ldf" -o "$BIN/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl)
  save_sums kube
  stamp kube "k8s.io/kubernetes@$kube_v (staging $kube_staging)" $((SECONDS - t0)) \
    "$BIN/kube-apiserver" "$BIN/kube-controller-manager" "$BIN/kubectl"
}

# kube-scheduler: its own component (and stamp), so a toolset built before it was added only
# builds this, from the same wrapper and mostly from the Go build cache.
build_scheduler() {
  built scheduler && return 0
  local t0=$SECONDS
  kube_wrapper
  log "building kube-scheduler $kube_v"
  (cd "$SRC/kube" && go build -trimpath -ldflags "$kube_ldf" -o "$BIN/" k8s.io/kubernetes/cmd/kube-scheduler)
  save_sums kube
  stamp scheduler "k8s.io/kubernetes@$kube_v (staging $kube_staging) cmd/kube-scheduler" $((SECONDS - t0)) \
    "$BIN/kube-scheduler"
}

# The LeaderWorkerSet controller (sigs.k8s.io/lws cmd/, the version of the CRD modelplane renders,
# tests/data/crds): its own component and stamp, its pin in its wrapper's go.mod, so a toolset
# built before it was added only builds this.
build_lws() {
  built lws && return 0
  local t0=$SECONDS v
  v=$(awk '{ for (i = 1; i < NF; i++) if ($i == "sigs.k8s.io/lws") print $(i + 1) }' "$HERE/wrappers/lws/go.mod")
  probe "sigs.k8s.io/lws@$v" || die "sigs.k8s.io/lws@$v (e2e/wrappers/lws/go.mod) is not served"
  stage lws
  log "building the LeaderWorkerSet controller $v"
  (cd "$SRC/lws" && go build -trimpath -ldflags "-s -w -X sigs.k8s.io/lws/pkg/version.GitVersion=$v" \
    -o "$BIN/lws-controller" sigs.k8s.io/lws/cmd)
  save_sums lws
  stamp lws "sigs.k8s.io/lws@$v cmd" $((SECONDS - t0)) "$BIN/lws-controller"
}

build_pulumi() {
  built pulumi && return 0
  local v t0=$SECONDS
  v=$(pick github.com/pulumi/pulumi/pkg/v3 "$PULUMI_VERSION" $PULUMI_FALLBACKS)
  probe "github.com/pulumi/pulumi/sdk/v3@$v" || die "github.com/pulumi/pulumi/sdk/v3@$v is not served"
  stage pulumi-cli
  sed -i "s/ $PULUMI_VERSION\$/ $v/" "$SRC/pulumi-cli/go.mod"
  log "building the Pulumi CLI $v"
  (cd "$SRC/pulumi-cli" && go build -trimpath -tags osusergo,grpcnotrace \
    -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$v" \
    -o "$BIN/pulumi" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi)
  save_sums pulumi-cli
  stamp pulumi "github.com/pulumi/pulumi/pkg/v3@$v" $((SECONDS - t0)) "$BIN/pulumi"
}

build_langhost() {
  built langhost && return 0
  local t0=$SECONDS v=$PULUMI_LANGHOST_SDK_VERSION
  probe "github.com/pulumi/pulumi/sdk/v3@$v" || die "github.com/pulumi/pulumi/sdk/v3@$v is not served"
  stage pulumi-langhost
  log "building the Python language host from sdk/v3 $v"
  (cd "$SRC/pulumi-langhost" && go build -trimpath -tags osusergo,grpcnotrace \
    -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$v" \
    -o "$BIN/pulumi-language-python" github.com/pulumi/pulumi/sdk/v3/python/cmd/pulumi-language-python)
  save_sums pulumi-langhost
  stamp langhost "github.com/pulumi/pulumi/sdk/v3@$v python/cmd/pulumi-language-python" $((SECONDS - t0)) \
    "$BIN/pulumi-language-python"
}

build_provider() {
  built provider && return 0
  local t0=$SECONDS v=$PULUMI_KUBERNETES_PROVIDER mod=github.com/pulumi/pulumi-kubernetes/provider/v4 dir
  probe "$mod@$v" || die "$mod@$v is not served (provider/v4 has no tags: only pseudo-versions the proxy cached exist)"
  dir=$(cd "$SRC" && GOFLAGS= go mod download -json "$mod@$v" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  # The module embeds generated files that are not in its zip, so build from a writable copy.
  rm -rf "$SRC/pulumi-kubernetes"; mkdir -p "$SRC/pulumi-kubernetes"
  cp -R "$dir" "$SRC/pulumi-kubernetes/provider"; chmod -R u+w "$SRC/pulumi-kubernetes/provider"
  # Its go.mod replaces sdk/v4 with ../sdk (not in the zip); the required release comes from the proxy.
  (cd "$SRC/pulumi-kubernetes/provider" && go mod edit -dropreplace github.com/pulumi/pulumi-kubernetes/sdk/v4)
  log "generating the kubernetes provider's embedded schema ($v)"
  (cd "$SRC/pulumi-kubernetes/provider/cmd/pulumi-resource-kubernetes" && VERSION=$PULUMI_KUBERNETES_STAMP go run generate.go)
  log "building the kubernetes provider $v (stamped $PULUMI_KUBERNETES_STAMP)"
  (cd "$SRC/pulumi-kubernetes/provider" && go build -trimpath \
    -ldflags "-s -w -X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$PULUMI_KUBERNETES_STAMP" \
    -o "$BIN/pulumi-resource-kubernetes" ./cmd/pulumi-resource-kubernetes)
  stamp provider "$mod@$v, stamped $PULUMI_KUBERNETES_STAMP" $((SECONDS - t0)) "$BIN/pulumi-resource-kubernetes"
}

install_shims() {
  # Ours, copied on every run (cheap): the language host finds its exec shim next to itself.
  install -m 0755 "$HERE/shims/pulumi-language-python-exec" "$BIN/pulumi-language-python-exec"
  install -m 0755 "$HERE/shims/pulumi-resource-pulumi-python" "$BIN/pulumi-resource-pulumi-python"
}

t_all=$SECONDS
build_etcd
build_kube
build_scheduler
build_lws
build_pulumi
build_langhost
build_provider
install_shims
log "toolset ready in $BIN ($((SECONDS - t_all))s this run)"
[ "$PRINT_BIN" = 1 ] && echo "$BIN"
exit 0
