// Package olderschema turns the EchoBackupSchedule CRD back into a schema
// as loose as an older one was, so that tests can store what such a schema
// admitted: a retention.maxAge of "7d", which no Go duration decodes.
// Test gear: only tests, hack/ and the benchmark import it, never the
// product.
package olderschema
