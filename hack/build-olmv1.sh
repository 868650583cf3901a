#!/usr/bin/env bash
# Builds OLM v1 (operator-framework/operator-controller: the
# operator-controller and catalogd managers, one Go module) from the Go module
# proxy, skipping what is already there:
#   $BIN_DIR/olmv1/<version>/    operator-controller and catalogd, static,
#                                built as the project's releases build them;
#                                their images' Dockerfiles (image/); the
#                                kustomize tree the manifests are rendered
#                                from (config/); and the files a release
#                                publishes besides the images, rendered as
#                                `make quickstart` renders them (release/:
#                                operator-controller.yaml, default-catalogs.yaml,
#                                and install.tpl.sh, from which the release
#                                renders install.sh)
# The version is v1.2.0 because it is the newest one the public proxy serves
# with all of its dependencies: v1.3.0 to v1.9.0 are refused (403), v1.5.1
# fails its checksum, and v1.10.0 and later need
# pkg.package-operator.run/boxcutter, which the proxy refuses in every
# version. Every dependency must match the go.sum of OLM v1's module, which
# the build starts from.
# The manifest needs cert-manager (Issuers, Certificates, CA injection) and
# names quay.io images; a test on an offline cluster builds the images from
# image/ and edits the manifest before it applies it. Tests find the files
# through the variables `paths` prints.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || exit 1

OLMV1_VERSION="${OLMV1_VERSION:-v1.2.0}"
# The project's kustomize (`make kustomize`), as the Makefile names it.
KUSTOMIZE="${KUSTOMIZE:-${BIN_DIR}/kustomize/${KUSTOMIZE_VERSION:-v5.8.1}/kustomize}"

module=github.com/operator-framework/operator-controller
olmv1_dir="${BIN_DIR}/olmv1/${OLMV1_VERSION}"

# The project's Makefile (GO_BUILD_TAGS, CGO_ENABLED := 0) and its
# .goreleaser.yml, which takes both from the Makefile's environment.
build_tags="containers_image_openpgp"
# The release's image repositories (OPCON_IMAGE_REPO, CATD_IMAGE_REPO in the
# Makefile), which the manifest names with the version's tag.
image_registry="quay.io/operator-framework"
# The overlay a release renders (KUSTOMIZE_BUILD_DIR in the Makefile).
release_overlay="config/overlays/cert-manager"

# download_field FIELD prints FIELD of `go mod download -json` for OLM v1's
# module, downloading it first.
download_field() {
  go mod download -json "${module}@${OLMV1_VERSION}" | sed -n "s/.*\"$1\": \"\(.*\)\".*/\1/p"
}

# module_dir prints the module's directory in the module cache.
module_dir() { download_field Dir; }

# info_field FIELD prints the string FIELD of the version's .info file from
# the proxy (Hash, of Origin, which the proxy records for some versions only).
info_field() {
  sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p" "$(download_field Info)"
}

# throwaway_module DIR makes DIR a module that requires OLM v1, starting from
# its go.sum.
throwaway_module() {
  local sum
  sum="$(module_dir)/go.sum"
  (
    cd "$1"
    go mod init echo-operator.local/olmv1-tools >/dev/null 2>&1
    go mod edit -require "${module}@${OLMV1_VERSION}"
    cp "${sum}" go.sum
    chmod u+w go.sum
  )
}

# built NAME... is true when every NAME is in olmv1_dir, linked statically
# (no program interpreter), as the distroless images need.
built() {
  for name in "$@"; do
    local bin="${olmv1_dir}/${name}"
    [[ -x "${bin}" ]] || return 1
    if readelf -l "${bin}" | grep -q 'program interpreter'; then return 1; fi
  done
}

managers=(operator-controller catalogd)

# version_ldflags prints the -X flags that stamp internal/shared/version.
# The release sets version (GO_BUILD_LDFLAGS) and builds in a clean checkout
# of the tag, from which go stamps the commit and its date; a build from the
# module cache has no checkout, so they are set here: for v1.2.0 as its tag
# records them (the proxy's .info has no commit for it, and its Time is not
# the commit's), else the commit where the proxy records it.
version_ldflags() {
  local pkg="${module}/internal/shared/version" commit="" date=""
  case "${OLMV1_VERSION}" in
    v1.2.0) commit=c899dc1b2a412b7797ce8435825e58c885a34502 date=2025-03-04T15:02:34Z ;;
    *) commit="$(info_field Hash)" ;;
  esac
  printf -- "-X '%s.version=%s' -X '%s.repoState=clean'" "${pkg}" "${OLMV1_VERSION}" "${pkg}"
  if [[ -n "${commit}" ]]; then printf -- " -X '%s.gitCommit=%s'" "${pkg}" "${commit}"; fi
  if [[ -n "${date}" ]]; then printf -- " -X '%s.commitDate=%s'" "${pkg}" "${date}"; fi
}

# build_managers builds cmd/<name> of the module for each manager in a
# throwaway module: go install pkg@version would ask the proxy for the
# module's version list, and nothing leaks into the project's go.mod. Each
# binary is written under a temporary name first, so that an interrupted
# build leaves nothing that looks complete.
build_managers() {
  if built "${managers[@]}"; then return; fi
  log "building OLM v1 ${OLMV1_VERSION} (first run only, several minutes)"
  local tmp ldflags
  ldflags="-s -w $(version_ldflags)"
  tmp="$(scratch_dir olmv1-build)"
  (
    trap 'rm -rf "${tmp}"' EXIT
    throwaway_module "${tmp}"
    cd "${tmp}"
    {
      echo '//go:build tools'
      echo 'package tools'
      echo 'import ('
      for name in "${managers[@]}"; do echo "  _ \"${module}/cmd/${name}\""; done
      echo ')'
    } >tools.go
    if ! go mod tidy; then
      log "a dependency of ${module}@${OLMV1_VERSION} could not be downloaded (see above)"
      exit 1
    fi
    mkdir -p "${olmv1_dir}"
    for name in "${managers[@]}"; do
      log "  go build ${name}"
      CGO_ENABLED=0 go build -trimpath -tags "${build_tags}" -ldflags "${ldflags}" \
        -o "${olmv1_dir}/${name}.tmp" "${module}/cmd/${name}"
      mv "${olmv1_dir}/${name}.tmp" "${olmv1_dir}/${name}"
    done
  )
}

# stage DEST FN fills the directory DEST by running FN with a staging
# directory as its argument, so that DEST appears complete or not at all;
# an existing DEST is kept.
stage() {
  local dest="$1" fn="$2"
  if [[ -d "${dest}" ]]; then return; fi
  rm -rf "${dest}.tmp" && mkdir -p "${dest}.tmp"
  "${fn}" "${dest}.tmp"
  chmod -R u+w "${dest}.tmp"
  mv "${dest}.tmp" "${dest}"
}

# The Dockerfiles COPY the binary from the build context's root.
copy_image() {
  cp "${src}/Dockerfile.operator-controller" "${src}/Dockerfile.catalogd" "$1/"
}

copy_config() {
  cp -R "${src}/config/." "$1/"
}

# render_release writes what a release publishes besides the images, as
# `make quickstart` renders it: the cert-manager overlay with the release's
# image tags and certificate Secret names, the default catalogs, and the
# install script's template (the release runs envsubst on it for MANIFEST,
# DEFAULT_CATALOG and CERT_MGR_VERSION).
render_release() {
  if [[ ! -x "${KUSTOMIZE}" ]]; then
    echo "no kustomize at ${KUSTOMIZE}: run make kustomize, or set KUSTOMIZE" >&2
    return 1
  fi
  "${KUSTOMIZE}" build "${src}/${release_overlay}" |
    sed -e "s/cert-git-version/cert-${OLMV1_VERSION}/g" -e "s/:devel/:${OLMV1_VERSION}/g" \
      >"$1/operator-controller.yaml"
  # The Makefile's repositories are the defaults the sed keeps.
  local repo
  for repo in operator-controller catalogd; do
    if ! grep -q "image: ${image_registry}/${repo}:${OLMV1_VERSION}\$" "$1/operator-controller.yaml"; then
      echo "the rendered manifest does not name ${image_registry}/${repo}:${OLMV1_VERSION}" >&2
      return 1
    fi
  done
  cp "${src}/config/catalogs/clustercatalogs/default-catalogs.yaml" "${src}/scripts/install.tpl.sh" "$1/"
}

copy_files() {
  local src
  src="$(module_dir)"
  stage "${olmv1_dir}/image" copy_image
  stage "${olmv1_dir}/config" copy_config
  stage "${olmv1_dir}/release" render_release
}

print_paths() {
  cat <<OUT
OLMV1_DIR=${olmv1_dir}
OLMV1_OPERATOR_CONTROLLER=${olmv1_dir}/operator-controller
OLMV1_CATALOGD=${olmv1_dir}/catalogd
OLMV1_MANIFEST=${olmv1_dir}/release/operator-controller.yaml
OUT
}

case "${1:-build}" in
  build)
    fence_bin_dir
    copy_files
    build_managers
    print_paths
    ;;
  paths) print_paths ;;
  *) echo "usage: $0 [build|paths]" >&2; exit 2 ;;
esac
