// Package s3server runs a real S3 service for tests: the MinIO server named
// by the MINIO environment variable (built by `make minio`), as a separate
// process on 127.0.0.1 (or another loopback address) with a fresh data
// directory and random credentials.
// A test can stop the server and start it again on the same address and
// data (Stop, Restart), to see how its clients ride out an outage.
// Test gear: only tests, hack/ and the benchmark import it, never the
// product.
package s3server
