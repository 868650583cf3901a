package datamover

// The backup, restore, delete, inspect and copy subcommands: the data mover run
// by the operator's backup, restore and artifact deletion Jobs, in the
// operator's own image. Their flags, exit codes and results are the
// contract of package moverprotocol: the outcome goes to the exit code, to
// structured logs on stderr and, as one small JSON object, to the
// termination log, from which the operator reads a Job's result.
//
// inspect, the first step of a restore, hands back the backed-up Echo. When
// the message would exceed maxInspectionLen, the Echo goes gzipped
// (EchoGzip); when even that is too long, it is left out (EchoOmitted): the
// operator can still restore into an existing Echo, and says what to do when
// it would have to create one.

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/echo-operator/echo-operator/internal/backupstore"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
)

const (
	defaultTerminationLog = "/dev/termination-log"
	// maxConfigFileSize bounds --config-file; Kubernetes objects are far
	// smaller.
	maxConfigFileSize = 16 << 20
	// maxErrorLen keeps the termination message well under
	// moverprotocol.MaxMessageLen.
	maxErrorLen = 3000
	// maxInspectionLen bounds the encoded result of inspect, which carries
	// the backed-up Echo, under moverprotocol.MaxMessageLen. Beyond it
	// the Echo goes gzipped (echoGzip), and beyond it even so inspect
	// leaves the Echo out (echoOmitted).
	maxInspectionLen = 3500
	// moverGCPercent is the GOGC of the subcommands unless GOGC is set.
	// After start-up the mover allocates little (its buffers are reused),
	// so a tight heap goal keeps the peak near the live set for almost no
	// CPU.
	moverGCPercent = 25
)

// moverOptions are the flags of the subcommands.
type moverOptions struct {
	command        moverprotocol.Command
	dataDir        string // backup and restore
	key            string
	terminationLog string
	// backup
	compression string
	configFile  string
	source      backupstore.Source
	backupID    string
	// restore
	existingData string
	restoreID    string
	verify       bool
	// storage
	s3     backupstore.S3Config
	fsRoot string
	// copy: the backup's checksum, and the destination's storage
	checksum string
	to       storeFlags
	// lookupEnv reads the environment, the credentials of both stores
	lookupEnv func(string) (string, bool)
}

// storeFlags choose a store: a filesystem root, or an S3 bucket.
type storeFlags struct {
	s3     backupstore.S3Config
	fsRoot string
}

// RunCommand runs the subcommand named by args[0] when it is backup,
// restore, delete or inspect, and reports whether it did.
func RunCommand(args []string) (code int, ok bool) {
	if len(args) == 0 {
		return 0, false
	}
	command, ok := moverprotocol.ParseCommand(args[0])
	if !ok {
		return 0, false
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return dataMover(ctx, command, args[1:], os.Stderr, os.LookupEnv), true
}

// dataMover parses the flags of command, runs it and returns the exit code.
func dataMover(ctx context.Context, command moverprotocol.Command, args []string, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	if _, ok := lookupEnv("GOGC"); !ok {
		debug.SetGCPercent(moverGCPercent)
	}
	start := time.Now()
	secrets := newRedactor(lookupEnv)
	log := slog.New(newRedactingHandler(slog.NewJSONHandler(stderr, nil), secrets)).With("command", string(command))
	o, err := parseMoverFlags(command, args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	o.lookupEnv = lookupEnv
	for _, keyFile := range []string{o.s3.Encryption.CustomerKeyFile, o.to.s3.Encryption.CustomerKeyFile} {
		if keyFile != "" {
			secrets.addFile(keyFile)
		}
	}
	var res any
	if err == nil {
		res, err = o.run(ctx, log)
	}
	if err != nil {
		msg := truncate(secrets.redact(err.Error()), maxErrorLen)
		reason, retryable := backupstore.Reason(err), retryableFailure(ctx, err)
		log.Error(string(command)+" failed", "error", msg, "reason", string(reason), "retryable", retryable,
			"seconds", time.Since(start).Seconds())
		res = moverprotocol.Failure{Error: msg, Reason: reason, Retryable: retryable}
	}
	if o.terminationLog != "" {
		if werr := writeTermination(o.terminationLog, res); werr != nil {
			log.Warn("could not write the termination log", "path", o.terminationLog, "error", werr.Error())
		}
	}
	if err != nil {
		return moverprotocol.ExitCode(retryableFailure(ctx, err))
	}
	return moverprotocol.ExitSucceeded
}

// retryableFailure reports whether another attempt may succeed where err
// failed: when datamover says so, and when a signal stopped the mover (ctx
// is then done), which says nothing about the data or the store.
func retryableFailure(ctx context.Context, err error) bool {
	return backupstore.Retryable(err) || ctx.Err() != nil
}

func parseMoverFlags(command moverprotocol.Command, args []string, output io.Writer) (moverOptions, error) {
	// The termination log is found first, so that even a flag error is
	// reported there.
	o := moverOptions{command: command, terminationLog: scanTerminationLog(args)}
	fs := flag.NewFlagSet("manager "+string(command), flag.ContinueOnError)
	// Errors go to the log and the termination log; usage only on -h.
	fs.SetOutput(io.Discard)
	if command.TakesDataDir() {
		fs.StringVar(&o.dataDir, moverprotocol.FlagDataDir, "", "the Echo's data directory (required)")
	}
	fs.StringVar(&o.key, moverprotocol.FlagKey, "", "key of the backup in the store: <key>/manifest.json and <key>/data.tar.gz (required)")
	fs.StringVar(&o.terminationLog, moverprotocol.FlagTerminationLog, o.terminationLog, "file receiving the JSON result; empty disables it")
	switch command {
	case moverprotocol.Backup:
		fs.StringVar(&o.compression, moverprotocol.FlagCompression, string(backupstore.CompressionGzip), "archive compression: gzip or none")
		fs.StringVar(&o.configFile, moverprotocol.FlagConfigFile, "", "JSON file with the configuration to back up (the Echo and its Helm release)")
		fs.StringVar(&o.source.Namespace, moverprotocol.FlagSourceNamespace, "", "namespace of the Echo, recorded in the manifest")
		fs.StringVar(&o.source.Name, moverprotocol.FlagSourceName, "", "name of the Echo, recorded in the manifest")
		fs.StringVar(&o.source.UID, moverprotocol.FlagSourceUID, "", "UID of the Echo, recorded in the manifest")
		fs.Int64Var(&o.source.Generation, moverprotocol.FlagSourceGeneration, 0, "generation of the Echo, recorded in the manifest")
		fs.StringVar(&o.backupID, moverprotocol.FlagBackupID, "",
			"identity of the backup across retries, recorded in the manifest: a retry finding its own complete artifact reports it")
	case moverprotocol.Restore:
		fs.StringVar(&o.existingData, moverprotocol.FlagExistingData, string(ExistingDataFail),
			"when the data directory holds data: Fail, or Replace (the old data is kept in .echo-pre-restore-<timestamp>/)")
		fs.StringVar(&o.restoreID, moverprotocol.FlagRestoreID, "",
			"identity of the restore across retries, recorded with the restored data: a retry finding the data its earlier attempt restored reports it")
		fs.BoolVar(&o.verify, moverprotocol.FlagVerify, false,
			"read every restored file back from the data directory and compare it with the manifest before reporting success")
	}
	if command == moverprotocol.Copy {
		fs.StringVar(&o.checksum, moverprotocol.FlagChecksum, "", "the archive's checksum the backup recorded, sha256:<hex> (required): the copy must match it")
		o.to.register(fs, moverprotocol.ToPrefix, "the copy's destination: ", moverprotocol.ToEnvPrefix)
	}
	from := storeFlags{}
	from.register(fs, "", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(output)
			_, _ = fmt.Fprintf(output, "Usage: manager %s [flags]\n", string(command))
			fs.PrintDefaults()
			return o, err
		}
		return o, fmt.Errorf("%w: %w", backupstore.ErrInvalidArgument, err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected arguments %q", backupstore.ErrInvalidArgument, fs.Args())
	}
	switch {
	case o.dataDir == "" && command.TakesDataDir():
		return o, fmt.Errorf("%w: --%s is required", backupstore.ErrInvalidArgument, moverprotocol.FlagDataDir)
	case o.key == "":
		return o, fmt.Errorf("%w: --%s is required", backupstore.ErrInvalidArgument, moverprotocol.FlagKey)
	case command == moverprotocol.Copy && o.checksum == "":
		return o, fmt.Errorf("%w: --%s is required", backupstore.ErrInvalidArgument, moverprotocol.FlagChecksum)
	}
	o.s3, o.fsRoot = from.s3, from.fsRoot
	return o, nil
}

// register defines the storage flags of f, each name prefixed with prefix
// and each usage with what; env prefixes the names of the credentials'
// variables.
func (f *storeFlags) register(fs *flag.FlagSet, prefix, what, env string) {
	fs.StringVar(&f.s3.Endpoint, prefix+moverprotocol.FlagS3Endpoint, "", what+"S3 endpoint URL, http(s)://host[:port]; credentials come from "+
		env+"AWS_ACCESS_KEY_ID, "+env+"AWS_SECRET_ACCESS_KEY and "+env+"AWS_SESSION_TOKEN, "+
		"or from the web identity token of "+env+"AWS_WEB_IDENTITY_TOKEN_FILE (with "+env+"AWS_ROLE_ARN)")
	fs.StringVar(&f.s3.Region, prefix+moverprotocol.FlagS3Region, moverprotocol.DefaultS3Region, what+"S3 region")
	fs.StringVar(&f.s3.Bucket, prefix+moverprotocol.FlagS3Bucket, "", what+"S3 bucket")
	fs.StringVar(&f.s3.Prefix, prefix+moverprotocol.FlagS3Prefix, "", what+"prefix of every object key in the bucket")
	fs.BoolVar(&f.s3.PathStyle, prefix+moverprotocol.FlagS3PathStyle, false, what+"path-style bucket addressing (endpoint/bucket) instead of virtual-host (bucket.endpoint)")
	fs.StringVar(&f.s3.CAFile, prefix+moverprotocol.FlagS3CAFile, "", what+"PEM bundle of extra CAs to trust for the S3 endpoint")
	fs.StringVar(&f.s3.STSEndpoint, prefix+moverprotocol.FlagS3STSEndpoint, "",
		what+"where the web identity token of "+env+"AWS_WEB_IDENTITY_TOKEN_FILE is exchanged for credentials; the S3 endpoint when empty")
	fs.StringVar(&f.s3.Encryption.Type, prefix+moverprotocol.FlagS3SSE, "",
		what+"server-side encryption of the objects written: "+moverprotocol.SSES3+", "+moverprotocol.SSEKMS+" or "+moverprotocol.SSEC)
	fs.StringVar(&f.s3.Encryption.KMSKeyID, prefix+moverprotocol.FlagS3SSEKMSKeyID, "", what+"the KMS key of "+moverprotocol.SSEKMS)
	fs.StringVar(&f.s3.Encryption.CustomerKeyFile, prefix+moverprotocol.FlagS3SSECustomerKeyFile, "",
		what+"file holding the key of "+moverprotocol.SSEC+" (32 bytes, or their base64), which reads present too")
	fs.StringVar(&f.fsRoot, prefix+moverprotocol.FlagFSRoot, "", what+"use a filesystem store rooted at this directory (a mounted PVC) instead of S3")
}

// scanTerminationLog returns the value of the last --termination-log flag
// in args, or the default.
func scanTerminationLog(args []string) string {
	path := defaultTerminationLog
	for i := 0; i < len(args); i++ {
		if args[i] == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") || name != moverprotocol.FlagTerminationLog {
			continue
		}
		if !hasValue && i+1 < len(args) {
			i++
			value = args[i]
		}
		path = value
	}
	return path
}

// storeAttrs say in the log which store the flags chose, and how it is
// reached: never a credential, nor where one is kept.
func (o moverOptions) storeAttrs() []any {
	if o.fsRoot != "" {
		return []any{"store", "filesystem", "root", o.fsRoot, "key", o.key}
	}
	attrs := []any{"store", "s3", "endpoint", o.s3.Endpoint, "bucket", o.s3.Bucket, "prefix", o.s3.Prefix,
		"region", o.s3.Region, "pathStyle", o.s3.PathStyle, "key", o.key}
	if o.s3.Encryption.Type != "" {
		attrs = append(attrs, "encryption", o.s3.Encryption.Type)
	}
	if o.s3.CAFile != "" {
		attrs = append(attrs, "caFile", o.s3.CAFile)
	}
	return attrs
}

// store builds the store chosen by the flags: --fs-root or the --s3-*
// flags, not both.
func (o moverOptions) store() (backupstore.Store, error) {
	return storeFlags{s3: o.s3, fsRoot: o.fsRoot}.store("", o.command == moverprotocol.Backup, o.env(""))
}

// destination builds the store a copy writes to: --to-fs-root or the
// --to-s3-* flags, with the credentials of moverprotocol.ToEnv.
func (o moverOptions) destination() (backupstore.Store, error) {
	return o.to.store(moverprotocol.ToPrefix, true, o.env(moverprotocol.ToEnvPrefix))
}

// env reads the environment under names prefixed with prefix.
func (o moverOptions) env(prefix string) func(string) (string, bool) {
	lookup := o.lookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	return func(name string) (string, bool) { return lookup(prefix + name) }
}

// store builds the store chosen by flags named with prefix: a filesystem
// root (created when writes is set: a claim's subPath is a directory the
// first write creates) or S3 with the credentials lookupEnv reads.
func (f storeFlags) store(prefix string, writes bool, lookupEnv func(string) (string, bool)) (backupstore.Store, error) {
	s3Set := f.s3.Endpoint != "" || f.s3.Bucket != "" || f.s3.Prefix != "" || f.s3.CAFile != "" || f.s3.Encryption.Type != "" || f.s3.Encryption.CustomerKeyFile != ""
	switch {
	case f.fsRoot != "" && s3Set:
		return nil, fmt.Errorf("%w: give either --%s%s or the --%ss3-* flags, not both", backupstore.ErrInvalidArgument, prefix, moverprotocol.FlagFSRoot, prefix)
	case f.fsRoot != "" && writes:
		if err := os.MkdirAll(f.fsRoot, backupstore.FSStoreDirPerm); err != nil {
			return nil, backupstore.ClassifyFS(fmt.Errorf("create filesystem store root: %w", err))
		}
		return backupstore.NewFSStore(f.fsRoot)
	case f.fsRoot != "":
		return backupstore.NewFSStore(f.fsRoot)
	case f.s3.Endpoint == "" || f.s3.Bucket == "":
		return nil, fmt.Errorf("%w: give --%s%s, or --%s%s and --%s%s", backupstore.ErrInvalidArgument,
			prefix, moverprotocol.FlagFSRoot, prefix, moverprotocol.FlagS3Endpoint, prefix, moverprotocol.FlagS3Bucket)
	}
	return backupstore.NewS3StoreFromEnv(f.s3, lookupEnv)
}

func (o moverOptions) run(ctx context.Context, log *slog.Logger) (any, error) {
	store, err := o.store()
	if err != nil {
		return nil, err
	}
	log.Info("connecting to the store", o.storeAttrs()...)
	var m *backupstore.Manifest
	switch o.command {
	case moverprotocol.Backup:
		m, err = o.backup(ctx, store, log)
	case moverprotocol.Restore:
		m, err = o.restore(ctx, store, log)
	case moverprotocol.Inspect:
		res, err := o.inspect(ctx, store, log)
		if err != nil {
			return nil, err
		}
		return res, nil
	case moverprotocol.Copy:
		return o.copy(ctx, store, log)
	default:
		if err := Delete(ctx, DeleteOptions{Store: store, Key: o.key, Logger: log}); err != nil {
			return nil, err
		}
		return moverprotocol.Deletion{Location: store.Location(o.key)}, nil
	}
	if err != nil {
		return nil, err
	}
	res := moverprotocol.Archive{
		Size:     m.Archive.Size,
		Checksum: "sha256:" + m.Archive.SHA256,
		Location: store.Location(o.key),
		Files:    m.DataFiles(),
	}
	if o.verify {
		res.Verified = res.Files
	}
	return res, nil
}

// copy copies the backup to the destination and reports the copy.
func (o moverOptions) copy(ctx context.Context, from backupstore.Store, log *slog.Logger) (*moverprotocol.Archive, error) {
	to, err := o.destination()
	if err != nil {
		return nil, err
	}
	m, err := Copy(ctx, CopyOptions{From: from, To: to, Key: o.key, Checksum: o.checksum, Logger: log})
	if err != nil {
		return nil, err
	}
	return &moverprotocol.Archive{
		Size:     m.Archive.Size,
		Checksum: checksumPrefix + m.Archive.SHA256,
		Location: to.Location(o.key),
		Files:    m.DataFiles(),
	}, nil
}

func (o moverOptions) backup(ctx context.Context, store backupstore.Store, log *slog.Logger) (*backupstore.Manifest, error) {
	compression, err := backupstore.ParseCompression(o.compression)
	if err != nil {
		return nil, err
	}
	var config []byte
	if o.configFile != "" {
		if config, err = readConfigFile(o.configFile); err != nil {
			return nil, err
		}
	}
	return Backup(ctx, BackupOptions{
		DataDir:     o.dataDir,
		Store:       store,
		Key:         o.key,
		Compression: compression,
		Config:      config,
		Source:      o.source,
		BackupID:    o.backupID,
		Logger:      log,
	})
}

func (o moverOptions) restore(ctx context.Context, store backupstore.Store, log *slog.Logger) (*backupstore.Manifest, error) {
	policy, err := ParseExistingDataPolicy(o.existingData)
	if err != nil {
		return nil, err
	}
	return Restore(ctx, RestoreOptions{
		DataDir:      o.dataDir,
		Store:        store,
		Key:          o.key,
		ExistingData: policy,
		RestoreID:    o.restoreID,
		Verify:       o.verify,
		Logger:       log,
	})
}

// inspect reads the backup's manifest and builds the result handed back to
// the operator, within maxInspectionLen.
func (o moverOptions) inspect(ctx context.Context, store backupstore.Store, log *slog.Logger) (*moverprotocol.Inspection, error) {
	m, err := Inspect(ctx, InspectOptions{Store: store, Key: o.key, Logger: log})
	if err != nil {
		return nil, err
	}
	echo, err := configMember(m.Config, moverprotocol.ConfigEcho)
	if err != nil {
		return nil, err
	}
	res := &moverprotocol.Inspection{
		Location:  store.Location(o.key),
		Source:    moverprotocol.Source(m.Source),
		CreatedAt: m.CreatedAt.UTC().Format(time.RFC3339),
		Files:     len(m.Files),
		DataFiles: m.DataFiles(),
		Size:      m.DataSize(),
		Echo:      echo,
	}
	b, err := moverprotocol.Encode(res)
	if err != nil || len(b) <= maxInspectionLen {
		return res, err
	}
	if len(echo) > 0 {
		res.Echo = nil
		if res.EchoGzip, err = gzipBase64(echo); err != nil {
			return nil, err
		}
		if b, err = moverprotocol.Encode(res); err != nil {
			return nil, err
		}
	}
	if len(b) > maxInspectionLen {
		log.Warn("the backed-up Echo is too large to hand back: left out", "bytes", len(echo),
			"gzipBase64Bytes", len(res.EchoGzip), "limit", maxInspectionLen)
		res.EchoGzip, res.EchoOmitted = "", true
		return res, nil
	}
	log.Info("the backed-up Echo is handed back gzipped", "bytes", len(echo), "gzipBase64Bytes", len(res.EchoGzip))
	return res, nil
}

// configMember returns the member name of the configuration object config,
// verbatim, or nil when config is not an object or has no such member.
func configMember(config json.RawMessage, name string) (json.RawMessage, error) {
	if trimmed := bytes.TrimSpace(config); len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(config, &members); err != nil {
		return nil, fmt.Errorf("%w: manifest config: %w", backupstore.ErrCorruptArchive, err)
	}
	return members[name], nil
}

// gzipBase64 compresses b with gzip and encodes the result in standard
// base64.
func gzipBase64(b []byte) (string, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return "", fmt.Errorf("gzip: %w", err)
	}
	if _, err := zw.Write(b); err != nil {
		return "", fmt.Errorf("gzip: %w", err)
	}
	if err := zw.Close(); err != nil {
		return "", fmt.Errorf("gzip: %w", err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

func readConfigFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("%w: config file: %w", backupstore.ErrInvalidArgument, err)
	}
	defer func() { _ = f.Close() }() // read-only
	b, err := io.ReadAll(io.LimitReader(f, maxConfigFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read config file: %w", err)
	}
	if len(b) > maxConfigFileSize {
		return nil, fmt.Errorf("%w: config file is larger than %d bytes", backupstore.ErrInvalidArgument, maxConfigFileSize)
	}
	return b, nil
}

func writeTermination(path string, v any) error {
	b, err := moverprotocol.Encode(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
