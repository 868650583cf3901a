// Package fakes3 is an S3 service for tests that plays a storage a tenant
// controls: it answers the requests a listing sends (ListObjectsV2, GET
// and HEAD of objects, path-style) on 127.0.0.1 or another loopback
// address, without checking credentials, with buckets that behave as a
// test chooses: objects as stored, a listing page that never ends, or
// that says megabytes about one object, truncated pages forever,
// manifests of hundreds of megabytes, or no answer at all until the
// client gives up. Its hostile answers are generated as they are sent, so
// the server holds none of them; it counts what it sent for each bucket,
// so a test can tell how much its client read.
// Test gear: only tests, hack/ and the benchmark import it, never the
// product.
package fakes3
