#!/usr/bin/env bash
# Builds Operator Lifecycle Manager (OLM) and the operator registry's `opm`
# from the Go module proxy, skipping what is already there:
#   $BIN_DIR/olm/<version>/      olm, catalog, package-server, copy-content
#                                and cpb: every binary of OLM's image; its
#                                CRDs (crds/), its image's Dockerfile
#                                (image/), and the chart and values its
#                                releases render their manifests from
#                                (release/)
#   $BIN_DIR/opm/<version>/      opm, and opm's image Dockerfile with the
#                                nsswitch.conf it copies (image/)
#   $BIN_DIR/grpc-health-probe/<version>/grpc_health_probe, which opm's
#                                image carries for OLM's catalog pods
# `make catalog` renders the catalog's template with `opm alpha
# render-template` (go run ./hack/catalog). The OLM tests on the simulated
# cluster (test/olm) run olm, catalog and opm as processes; those on the
# real node (test/olmnode) build OLM's and opm's images from their own
# Dockerfiles and install OLM from the manifests its release renders. Both find the
# files through the environment variables `paths` prints.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 1

OLM_VERSION="${OLM_VERSION:-v0.46.0}"
OPM_VERSION="${OPM_VERSION:-v1.73.0}"
# The version opm v1.73.0 requires in its go.mod, which its release passes
# to its image Dockerfile (GRPC_HEALTH_PROBE_VERSION).
GRPC_HEALTH_PROBE_VERSION="${GRPC_HEALTH_PROBE_VERSION:-v0.4.53}"

olm_dir="${BIN_DIR}/olm/${OLM_VERSION}"
opm_dir="${BIN_DIR}/opm/${OPM_VERSION}"
probe_dir="${BIN_DIR}/grpc-health-probe/${GRPC_HEALTH_PROBE_VERSION}"

# Both projects build with cgo (sqlite) and these tags in their releases.
build_tags="json1,containers_image_openpgp"

# install_cmds MODULE VERSION DIR LDFLAGS CMD... builds MODULE/CMD at
# VERSION for each CMD (a package path in the module, cmd/olm, named by its
# last element; or PATH:NAME) into DIR, linked with LDFLAGS, in which @COMMIT@
# stands for the commit the version was tagged on. The build runs in a
# throwaway module (go install pkg@version would ask the proxy for the
# module's version list, which it refuses for these modules), so nothing
# leaks into the project's go.mod. Each binary is written under a temporary
# name first, so that an interrupted build leaves nothing that looks
# complete.
install_cmds() {
  local module="$1" version="$2" dir="$3" ldflags="$4"
  shift 4
  local tmp
  tmp="$(scratch_dir echo-olm-build)"
  (
    trap 'rm -rf "${tmp}"' EXIT
    cd "${tmp}"
    go mod init echo-operator.local/olm-tools >/dev/null 2>&1
    go mod edit -require "${module}@${version}"
    {
      echo '//go:build tools'
      echo 'package tools'
      echo 'import ('
      for c in "$@"; do echo "  _ \"$(package_of "${module}" "${c}")\""; done
      echo ')'
    } >tools.go
    go mod tidy >/dev/null
    local commit
    commit="$(go mod download -json "${module}@${version}" | sed -n 's/.*"Hash": "\(.*\)".*/\1/p')"
    ldflags="${ldflags//@COMMIT@/${commit}}"
    mkdir -p "${dir}"
    for c in "$@"; do
      local name
      name="$(name_of "${c}")"
      log "  go build ${name}"
      CGO_ENABLED="${CGO:-1}" GOFLAGS=-buildvcs=false go build -trimpath -tags "${TAGS:-${build_tags}}" \
        -ldflags "-s -w ${ldflags}" -o "${dir}/${name}.tmp" "$(package_of "${module}" "${c}")"
      mv "${dir}/${name}.tmp" "${dir}/${name}"
    done
  )
}

# name_of CMD is the binary's name: NAME of PATH:NAME, else PATH's last element.
name_of() {
  if [[ "$1" == *:* ]]; then echo "${1##*:}"; else echo "${1##*/}"; fi
}

# package_of MODULE CMD is CMD's import path.
package_of() {
  local path="${2%%:*}"
  if [[ "${path}" == . ]]; then echo "$1"; else echo "$1/${path}"; fi
}

# built DIR CMD... is true when every CMD's binary is in DIR, linked
# statically (no program interpreter): the images need static binaries,
# which earlier builds were not.
built() {
  local dir="$1"
  shift
  for c in "$@"; do
    local bin
    bin="${dir}/$(name_of "${c}")"
    [[ -x "${bin}" ]] || return 1
    if readelf -l "${bin}" | grep -q 'program interpreter'; then return 1; fi
  done
}

# OLM's image holds these (its Dockerfile COPYs them).
olm_cmds=(cmd/olm cmd/catalog cmd/package-server cmd/copy-content util/cpb)

build_olm() {
  copy_olm_files
  if built "${olm_dir}" "${olm_cmds[@]}"; then return; fi
  log "building OLM ${OLM_VERSION} (first run only, several minutes)"
  local pkg=github.com/operator-framework/operator-lifecycle-manager
  # As OLM's release builds stamp them (`olm --version`, ClusterOperator
  # status); the release builds them static, as its distroless image needs.
  CGO=0 install_cmds "${pkg}" "${OLM_VERSION}" "${olm_dir}" \
    "-X ${pkg}/pkg/version.OLMVersion=${OLM_VERSION#v} -X ${pkg}/pkg/version.GitCommit=@COMMIT@" \
    "${olm_cmds[@]}"
}

# module_dir MODULE VERSION prints the module's directory in the module
# cache, downloading it first.
module_dir() {
  go mod download -json "$1@$2" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p'
}

# copy_files DEST SRC... copies SRC (files or directories) into the
# directory DEST, which appears complete or not at all.
copy_files() {
  local dest="$1"
  shift
  if [[ -d "${dest}" ]]; then return; fi
  rm -rf "${dest}.tmp" && mkdir -p "${dest}.tmp"
  cp -R "$@" "${dest}.tmp/"
  chmod -R u+w "${dest}.tmp"
  mv "${dest}.tmp" "${dest}"
}

# OLM's own CRDs (CatalogSource, Subscription, ...), which a cluster needs
# before olm and catalog start, its image's Dockerfile, and its chart with
# the values its releases render it with (`make package` in OLM), as they
# ship in its module.
copy_olm_files() {
  local src
  src="$(module_dir github.com/operator-framework/operator-lifecycle-manager "${OLM_VERSION}")"
  copy_files "${olm_dir}/crds" "${src}"/deploy/chart/crds/*.yaml
  copy_files "${olm_dir}/release" "${src}/deploy/chart" "${src}/deploy/upstream/values.yaml"
  copy_files "${olm_dir}/image" "${src}/Dockerfile"
}

build_opm() {
  local src
  src="$(module_dir github.com/operator-framework/operator-registry "${OPM_VERSION}")"
  copy_files "${opm_dir}/image" "${src}/release/goreleaser.opm.Dockerfile" "${src}/nsswitch.conf"
  if built "${opm_dir}" cmd/opm; then return; fi
  log "building opm ${OPM_VERSION} (first run only, a few minutes)"
  local pkg=github.com/operator-framework/operator-registry
  # As the registry's release builds stamp and link it (`opm version`):
  # with cgo (sqlite) and static, for its distroless image.
  TAGS="json1,netgo,osusergo,containers_image_openpgp" install_cmds "${pkg}" "${OPM_VERSION}" "${opm_dir}" \
    "-X ${pkg}/cmd/opm/version.opmVersion=${OPM_VERSION} -X ${pkg}/cmd/opm/version.gitCommit=@COMMIT@ -extldflags=-static" \
    cmd/opm
}

build_grpc_health_probe() {
  if built "${probe_dir}" .:grpc_health_probe; then return; fi
  log "building grpc_health_probe ${GRPC_HEALTH_PROBE_VERSION} (first run only)"
  CGO=0 TAGS=netgo install_cmds github.com/grpc-ecosystem/grpc-health-probe "${GRPC_HEALTH_PROBE_VERSION}" "${probe_dir}" "" .:grpc_health_probe
}

print_paths() {
  cat <<OUT
OLM=${olm_dir}/olm
OLM_CATALOG=${olm_dir}/catalog
OLM_CRDS=${olm_dir}/crds
OPM=${opm_dir}/opm
OLM_DIR=${olm_dir}
OPM_IMAGE_DIR=${opm_dir}/image
GRPC_HEALTH_PROBE=${probe_dir}/grpc_health_probe
OUT
}

case "${1:-build}" in
  build)
    fence_bin_dir
    build_opm
    build_olm
    build_grpc_health_probe
    print_paths
    ;;
  opm)
    fence_bin_dir
    build_opm
    echo "OPM=${opm_dir}/opm"
    ;;
  paths) print_paths ;;
  *) echo "usage: $0 [build|opm|paths]" >&2; exit 2 ;;
esac
