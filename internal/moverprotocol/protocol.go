package moverprotocol

import "strings"

// Command is a data mover subcommand of the manager binary.
type Command string

// The subcommands.
const (
	// Backup archives a data directory and the configuration to back up
	// into a store; its result is an Archive.
	Backup Command = "backup"
	// Restore writes an archive back into a data directory; its result is
	// an Archive.
	Restore Command = "restore"
	// Inspect reads a backup's manifest and checks its archive is there;
	// its result is an Inspection.
	Inspect Command = "inspect"
	// Delete deletes a backup from its store; its result is a Deletion.
	Delete Command = "delete"
	// Copy copies a backup (its archive, then its manifest) from its
	// store to another, the destination of the ToFlag flags, verifying
	// the archive against FlagChecksum; its result is an Archive in the
	// destination.
	Copy Command = "copy"
)

// Commands lists every subcommand.
var Commands = []Command{Backup, Restore, Inspect, Delete, Copy}

// ParseCommand returns the subcommand named name.
func ParseCommand(name string) (Command, bool) {
	for _, c := range Commands {
		if string(c) == name {
			return c, true
		}
	}
	return "", false
}

// TakesDataDir reports whether the subcommand works on a data directory.
func (c Command) TakesDataDir() bool { return c == Backup || c == Restore }

// The flags of the subcommands.
const (
	// FlagDataDir is the data directory (backup, restore).
	FlagDataDir = "data-dir"
	// FlagKey is the backup's key in the store: <key>/manifest.json and
	// <key>/data.tar.gz.
	FlagKey = "key"
	// FlagTerminationLog is the file receiving the JSON result.
	FlagTerminationLog = "termination-log"

	// FlagCompression is the archive's compression (backup): gzip or none.
	FlagCompression = "compression"
	// FlagConfigFile is a JSON object holding the configuration to back
	// up (backup); see ConfigEcho.
	FlagConfigFile = "config-file"
	// FlagSourceNamespace, FlagSourceName, FlagSourceUID and
	// FlagSourceGeneration record the backed-up Echo in the manifest.
	FlagSourceNamespace  = "source-namespace"
	FlagSourceName       = "source-name"
	FlagSourceUID        = "source-uid"
	FlagSourceGeneration = "source-generation"
	// FlagBackupID identifies the backup across the Job's retries (the
	// EchoBackup's UID): a retry that finds the artifact its own earlier
	// attempt completed reports it instead of failing.
	FlagBackupID = "backup-id"

	// FlagExistingData says what a restore does to a data directory
	// holding data: Fail, or Replace.
	FlagExistingData = "existing-data"
	// FlagRestoreID identifies the restore across the Job's retries (the
	// EchoRestore's UID), recorded in the data directory with the
	// restored data: a retry that finds the data its own earlier attempt
	// swapped in reports it instead of finding it in its way.
	FlagRestoreID = "restore-id"
	// FlagVerify makes a restore read every restored file back from the
	// data directory and compare it with the manifest (a restore test).
	FlagVerify = "verify"

	// FlagChecksum is the checksum the backup recorded for its archive,
	// "sha256:<hex>" (copy): what the copy writes must match it.
	FlagChecksum = "checksum"

	// FlagFSRoot selects a filesystem store rooted at a directory (a
	// mounted claim).
	FlagFSRoot = "fs-root"
	// The S3 store. Credentials come from the environment (EnvAccessKeyID,
	// EnvSecretAccessKey, EnvSessionToken), never from flags.
	FlagS3Endpoint  = "s3-endpoint"
	FlagS3Region    = "s3-region"
	FlagS3Bucket    = "s3-bucket"
	FlagS3Prefix    = "s3-prefix"
	FlagS3PathStyle = "s3-path-style"
	FlagS3CAFile    = "s3-ca-file"
	// FlagS3STSEndpoint is where a web identity token is exchanged for
	// credentials (EnvWebIdentityTokenFile); the S3 endpoint when absent.
	FlagS3STSEndpoint = "s3-sts-endpoint"
	// The server-side encryption of what the mover writes, and of what it
	// reads with SSE-C: FlagS3SSE is SSE-S3, SSE-KMS (FlagS3SSEKMSKeyID
	// names the key) or SSE-C (FlagS3SSECustomerKeyFile is the file holding
	// the key, 32 bytes or their base64: never a flag's value).
	FlagS3SSE                = "s3-sse"
	FlagS3SSEKMSKeyID        = "s3-sse-kms-key-id"
	FlagS3SSECustomerKeyFile = "s3-sse-customer-key-file"
)

// ToPrefix is the prefix of the destination's storage flags of a copy:
// every storage flag (FlagFSRoot, FlagS3Endpoint ...) has a ToFlag twin.
const ToPrefix = "to-"

// ToFlag is the destination's twin of the storage flag f (copy).
func ToFlag(f string) string { return ToPrefix + f }

// ToEnvPrefix is the prefix of the destination's credentials in a copy's
// environment: ToEnv(EnvAccessKeyID) and so on, so that each side of a
// copy has credentials of its own.
const ToEnvPrefix = "COPY_TO_"

// ToEnv is the destination's twin of the environment variable name (copy).
func ToEnv(name string) string { return ToEnvPrefix + name }

// Arg is the argument setting flag to value.
func Arg(flag, value string) string { return "--" + flag + "=" + value }

// Switch is the argument turning a boolean flag on.
func Switch(flag string) string { return "--" + flag }

// The environment through which the S3 credentials reach the mover: keys
// (and a session token), or the file of a web identity token with the
// role to assume, as the AWS SDKs read them.
const (
	EnvAccessKeyID          = "AWS_ACCESS_KEY_ID"
	EnvSecretAccessKey      = "AWS_SECRET_ACCESS_KEY"
	EnvSessionToken         = "AWS_SESSION_TOKEN"
	EnvWebIdentityTokenFile = "AWS_WEB_IDENTITY_TOKEN_FILE"
	EnvRoleARN              = "AWS_ROLE_ARN"
)

// DefaultS3Region is the region used when none is given.
const DefaultS3Region = "us-east-1"

// ConfigEcho is the member of the configuration object (FlagConfigFile,
// and config.json in the archive) holding the backed-up Echo, which
// Inspect hands back.
const ConfigEcho = "echo"

// ContainerName is the name of the data mover's container in every Job;
// the pod failure policy and the result reader find it by this name.
const ContainerName = "mover"

// Exit codes of the subcommands. The Jobs' pod failure policy fails a Job
// at once on ExitPermanent: retrying cannot fix wrong credentials, a
// missing bucket or a corrupted artifact. A mover stopped by a signal (a
// drained node, an eviction) exits with ExitRetryable: the next attempt
// may well succeed.
const (
	ExitSucceeded = 0
	ExitRetryable = 1
	ExitPermanent = 2
)

// normalizeCompression lower-cases a compression name as FlagCompression
// takes it.
func normalizeCompression(c string) string { return strings.ToLower(c) }

// CompressionArg is the FlagCompression argument for compression c (an
// API Compression value: Gzip or None).
func CompressionArg(c string) string { return Arg(FlagCompression, normalizeCompression(c)) }
