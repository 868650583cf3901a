# The images a local cluster's real node runs besides the project's: the
# pod sandbox (pause) and the cluster's services, CoreDNS and
# local-path-provisioner with its helper pods' busybox. `make node` builds
# their binaries from source (hack/build-node.sh); test/harness/imagebuild
# builds each stage with BuildKit from a context holding a stage's files
# under a directory named after it (realnode.NodeImages lists them), and
# the node imports the results. A node with no builder beside it writes
# the same images from the same binaries; imagebuild's tests check both
# match.

FROM scratch AS pause
COPY pause/pause /pause
USER 65535:65535
ENTRYPOINT ["/pause"]

FROM scratch AS coredns
COPY coredns/coredns /coredns
USER 65532:65532
ENTRYPOINT ["/coredns"]

FROM scratch AS local-path-provisioner
COPY local-path-provisioner/local-path-provisioner /local-path-provisioner
USER 65532:65532
ENTRYPOINT ["/local-path-provisioner"]

# The helper pods run sh, mkdir and rm: Debian's static busybox, whose
# applets are links to it.
FROM scratch AS busybox
COPY busybox/bin/busybox /bin/busybox
RUN ["/bin/busybox", "ln", "-s", "busybox", "/bin/sh"]
RUN ["/bin/sh", "-c", "ln -s busybox /bin/mkdir && ln -s busybox /bin/rm"]
ENV PATH=/bin
ENTRYPOINT ["/bin/sh"]
