package main

// The backup, restore, delete and inspect subcommands: the data mover run
// by the operator's backup, restore and artifact deletion Jobs, in the
// operator's own image. The outcome goes to the exit code (0; 1 when
// retrying can help; 2 when it cannot), to structured logs
// on stderr and, as one small JSON object, to the termination log, from
// which the operator reads a Job's result:
//
//	{"size":1234,"checksum":"sha256:…","location":"s3://bucket/key","files":3}  (backup, restore)
//	{"location":"s3://bucket/key"}  (delete)
//	{"location":"s3://bucket/key","source":{"namespace":"…","name":"…","uid":"…","generation":3},
//	 "createdAt":"2026-01-02T03:04:05Z","files":4,"dataFiles":3,"size":1234,"echo":{…}}  (inspect)
//	{"error":"…","reason":"AccessDenied","retryable":false}
//
// inspect, the first step of a restore, reads a backup's manifest and
// checks its archive is there, without downloading it: files counts every
// file of the archive (config.json included), dataFiles those of the data
// directory, size sums their sizes, and echo is the backed-up Echo (the
// "echo" member of the configuration), verbatim; it is absent when the
// configuration has none. When the message would exceed
// maxInspectionLen, echo is replaced by echoGzip, the Echo gzipped and
// base64-encoded; when even that is too long, the Echo is left out and
// echoOmitted is true: the operator can still restore into an existing
// Echo, and says what to do when it would have to create one.

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

	"github.com/echo-operator/echo-operator/internal/datamover"
)

const (
	defaultTerminationLog = "/dev/termination-log"
	// maxConfigFileSize bounds --config-file; Kubernetes objects are far
	// smaller.
	maxConfigFileSize = 16 << 20
	// maxErrorLen keeps the termination message under the 4096 bytes
	// Kubernetes keeps.
	maxErrorLen = 3000
	// maxInspectionLen bounds the encoded result of inspect, which carries
	// the backed-up Echo: Kubernetes keeps at most 4096 bytes of a
	// termination message, and a message cut short is not JSON. Beyond it
	// the Echo goes gzipped (echoGzip), and beyond it even so inspect
	// leaves the Echo out (echoOmitted).
	maxInspectionLen = 3500
	// echoConfigMember names the backed-up Echo in the configuration given
	// to backup (and in the archive's config.json).
	echoConfigMember = "echo"
	// moverGCPercent is the GOGC of the subcommands unless GOGC is set.
	// After start-up the mover allocates little (its buffers are reused),
	// so a tight heap goal keeps the peak near the live set for almost no
	// CPU.
	moverGCPercent = 25
)

// The subcommands.
const (
	commandBackup  = "backup"
	commandRestore = "restore"
	commandDelete  = "delete"
	commandInspect = "inspect"
)

// isMoverCommand reports whether command is a data mover subcommand.
func isMoverCommand(command string) bool {
	switch command {
	case commandBackup, commandRestore, commandDelete, commandInspect:
		return true
	}
	return false
}

// takesDataDir reports whether command works on a data directory.
func takesDataDir(command string) bool {
	return command == commandBackup || command == commandRestore
}

// moverOptions are the flags of the subcommands.
type moverOptions struct {
	command        string
	dataDir        string // backup and restore
	key            string
	terminationLog string
	// backup
	compression string
	configFile  string
	source      datamover.Source
	// restore
	existingData string
	// storage
	s3     datamover.S3Config
	fsRoot string
}

type moverSuccess struct {
	Size     int64  `json:"size"`
	Checksum string `json:"checksum"`
	Location string `json:"location"`
	Files    int    `json:"files"`
}

// moverDeletion is the result of the delete subcommand.
type moverDeletion struct {
	Location string `json:"location"`
}

// moverInspection is the result of the inspect subcommand.
type moverInspection struct {
	Location string           `json:"location"`
	Source   datamover.Source `json:"source"`
	// CreatedAt is RFC 3339, in seconds, in UTC.
	CreatedAt string `json:"createdAt"`
	// Files counts every file of the archive, config.json included.
	Files int `json:"files"`
	// DataFiles counts the files of the data directory.
	DataFiles int `json:"dataFiles"`
	// Size sums the sizes of the archive's files.
	Size int64 `json:"size"`
	// Echo is the backed-up Echo, verbatim, or EchoGzip the same gzipped
	// and base64-encoded (standard encoding, with padding) when it is too
	// large to go as is; neither when the configuration holds no Echo.
	Echo     json.RawMessage `json:"echo,omitempty"`
	EchoGzip string          `json:"echoGzip,omitempty"`
	// EchoOmitted is true when the Echo is too large to hand back even
	// gzipped; it is then in config.json of the artifact only.
	EchoOmitted bool `json:"echoOmitted,omitempty"`
}

type moverFailure struct {
	Error     string `json:"error"`
	Reason    string `json:"reason"`
	Retryable bool   `json:"retryable"`
}

// runDataMover runs the subcommand named by args[0] when it is backup,
// restore, delete or inspect, and reports whether it did.
func runDataMover(args []string) (code int, ok bool) {
	if len(args) == 0 || !isMoverCommand(args[0]) {
		return 0, false
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return dataMover(ctx, args[0], args[1:], os.Stderr, os.LookupEnv), true
}

// dataMover parses the flags of command, runs it and returns the exit code.
func dataMover(ctx context.Context, command string, args []string, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	if _, ok := lookupEnv("GOGC"); !ok {
		debug.SetGCPercent(moverGCPercent)
	}
	redact := redactor(lookupEnv)
	log := slog.New(slog.NewJSONHandler(stderr, nil)).With("command", command)
	o, err := parseMoverFlags(command, args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var res any
	if err == nil {
		res, err = o.run(ctx, log)
	}
	if err != nil {
		msg := truncate(redact(err.Error()), maxErrorLen)
		reason, retryable := datamover.Reason(err), datamover.Retryable(err)
		log.Error(command+" failed", "error", msg, "reason", reason, "retryable", retryable)
		res = moverFailure{Error: msg, Reason: reason, Retryable: retryable}
	}
	if o.terminationLog != "" {
		if werr := writeTermination(o.terminationLog, res); werr != nil {
			log.Warn("could not write the termination log", "path", o.terminationLog, "error", werr.Error())
		}
	}
	switch {
	case err == nil:
		return 0
	case datamover.Retryable(err):
		return exitRetryable
	default:
		return exitPermanent
	}
}

// Exit codes of a failed data mover. The Jobs' pod failure policy fails the
// Job at once on exitPermanent: retrying cannot fix wrong credentials, a
// missing bucket or a corrupted artifact.
const (
	exitRetryable = 1
	exitPermanent = 2
)

func parseMoverFlags(command string, args []string, output io.Writer) (moverOptions, error) {
	// The termination log is found first, so that even a flag error is
	// reported there.
	o := moverOptions{command: command, terminationLog: scanTerminationLog(args)}
	fs := flag.NewFlagSet("manager "+command, flag.ContinueOnError)
	// Errors go to the log and the termination log; usage only on -h.
	fs.SetOutput(io.Discard)
	if takesDataDir(command) {
		fs.StringVar(&o.dataDir, "data-dir", "", "the Echo's data directory (required)")
	}
	fs.StringVar(&o.key, "key", "", "key of the backup in the store: <key>/manifest.json and <key>/data.tar.gz (required)")
	fs.StringVar(&o.terminationLog, "termination-log", o.terminationLog, "file receiving the JSON result; empty disables it")
	switch command {
	case commandBackup:
		fs.StringVar(&o.compression, "compression", string(datamover.CompressionGzip), "archive compression: gzip or none")
		fs.StringVar(&o.configFile, "config-file", "", "JSON file with the configuration to back up (the Echo and its Helm release)")
		fs.StringVar(&o.source.Namespace, "source-namespace", "", "namespace of the Echo, recorded in the manifest")
		fs.StringVar(&o.source.Name, "source-name", "", "name of the Echo, recorded in the manifest")
		fs.StringVar(&o.source.UID, "source-uid", "", "UID of the Echo, recorded in the manifest")
		fs.Int64Var(&o.source.Generation, "source-generation", 0, "generation of the Echo, recorded in the manifest")
	case commandRestore:
		fs.StringVar(&o.existingData, "existing-data", string(datamover.ExistingDataFail),
			"when the data directory holds data: Fail, or Replace (the old data is kept in .echo-pre-restore-<timestamp>/)")
	}
	fs.StringVar(&o.s3.Endpoint, "s3-endpoint", "", "S3 endpoint URL, http(s)://host[:port]; credentials come from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN")
	fs.StringVar(&o.s3.Region, "s3-region", datamover.DefaultS3Region, "S3 region")
	fs.StringVar(&o.s3.Bucket, "s3-bucket", "", "S3 bucket")
	fs.StringVar(&o.s3.Prefix, "s3-prefix", "", "prefix of every object key in the bucket")
	fs.BoolVar(&o.s3.PathStyle, "s3-path-style", false, "path-style bucket addressing (endpoint/bucket) instead of virtual-host (bucket.endpoint)")
	fs.StringVar(&o.s3.CAFile, "s3-ca-file", "", "PEM bundle of extra CAs to trust for the S3 endpoint")
	fs.StringVar(&o.fsRoot, "fs-root", "", "use a filesystem store rooted at this directory (a mounted PVC) instead of S3")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(output)
			_, _ = fmt.Fprintf(output, "Usage: manager %s [flags]\n", command)
			fs.PrintDefaults()
			return o, err
		}
		return o, fmt.Errorf("%w: %w", datamover.ErrInvalidArgument, err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected arguments %q", datamover.ErrInvalidArgument, fs.Args())
	}
	switch {
	case o.dataDir == "" && takesDataDir(command):
		return o, fmt.Errorf("%w: --data-dir is required", datamover.ErrInvalidArgument)
	case o.key == "":
		return o, fmt.Errorf("%w: --key is required", datamover.ErrInvalidArgument)
	}
	return o, nil
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
		if !strings.HasPrefix(args[i], "-") || name != "termination-log" {
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

// store builds the store chosen by the flags: --fs-root or the --s3-*
// flags, not both.
func (o moverOptions) store() (datamover.Store, error) {
	s3Set := o.s3.Endpoint != "" || o.s3.Bucket != "" || o.s3.Prefix != "" || o.s3.CAFile != ""
	switch {
	case o.fsRoot != "" && s3Set:
		return nil, fmt.Errorf("%w: give either --fs-root or the --s3-* flags, not both", datamover.ErrInvalidArgument)
	case o.fsRoot != "":
		return datamover.NewFSStore(o.fsRoot)
	case o.s3.Endpoint == "" || o.s3.Bucket == "":
		return nil, fmt.Errorf("%w: give --fs-root, or --s3-endpoint and --s3-bucket", datamover.ErrInvalidArgument)
	}
	return datamover.NewS3Store(o.s3)
}

func (o moverOptions) run(ctx context.Context, log *slog.Logger) (any, error) {
	store, err := o.store()
	if err != nil {
		return nil, err
	}
	var m *datamover.Manifest
	switch o.command {
	case commandBackup:
		m, err = o.backup(ctx, store, log)
	case commandRestore:
		m, err = o.restore(ctx, store, log)
	case commandInspect:
		res, err := o.inspect(ctx, store, log)
		if err != nil {
			return nil, err
		}
		return res, nil
	default:
		if err := datamover.Delete(ctx, datamover.DeleteOptions{Store: store, Key: o.key, Logger: log}); err != nil {
			return nil, err
		}
		return moverDeletion{Location: store.Location(o.key)}, nil
	}
	if err != nil {
		return nil, err
	}
	return moverSuccess{
		Size:     m.Archive.Size,
		Checksum: "sha256:" + m.Archive.SHA256,
		Location: store.Location(o.key),
		Files:    m.DataFiles(),
	}, nil
}

func (o moverOptions) backup(ctx context.Context, store datamover.Store, log *slog.Logger) (*datamover.Manifest, error) {
	compression, err := datamover.ParseCompression(o.compression)
	if err != nil {
		return nil, err
	}
	var config []byte
	if o.configFile != "" {
		if config, err = readConfigFile(o.configFile); err != nil {
			return nil, err
		}
	}
	return datamover.Backup(ctx, datamover.BackupOptions{
		DataDir:     o.dataDir,
		Store:       store,
		Key:         o.key,
		Compression: compression,
		Config:      config,
		Source:      o.source,
		Logger:      log,
	})
}

func (o moverOptions) restore(ctx context.Context, store datamover.Store, log *slog.Logger) (*datamover.Manifest, error) {
	policy, err := datamover.ParseExistingDataPolicy(o.existingData)
	if err != nil {
		return nil, err
	}
	return datamover.Restore(ctx, datamover.RestoreOptions{
		DataDir:      o.dataDir,
		Store:        store,
		Key:          o.key,
		ExistingData: policy,
		Logger:       log,
	})
}

// inspect reads the backup's manifest and builds the result handed back to
// the operator, within maxInspectionLen.
func (o moverOptions) inspect(ctx context.Context, store datamover.Store, log *slog.Logger) (*moverInspection, error) {
	m, err := datamover.Inspect(ctx, datamover.InspectOptions{Store: store, Key: o.key, Logger: log})
	if err != nil {
		return nil, err
	}
	echo, err := configMember(m.Config, echoConfigMember)
	if err != nil {
		return nil, err
	}
	res := &moverInspection{
		Location:  store.Location(o.key),
		Source:    m.Source,
		CreatedAt: m.CreatedAt.UTC().Format(time.RFC3339),
		Files:     len(m.Files),
		DataFiles: m.DataFiles(),
		Size:      m.DataSize(),
		Echo:      echo,
	}
	b, err := encodeTermination(res)
	if err != nil || len(b) <= maxInspectionLen {
		return res, err
	}
	if len(echo) > 0 {
		res.Echo = nil
		if res.EchoGzip, err = gzipBase64(echo); err != nil {
			return nil, err
		}
		if b, err = encodeTermination(res); err != nil {
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
		return nil, fmt.Errorf("%w: manifest config: %w", datamover.ErrCorruptArchive, err)
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
		return nil, fmt.Errorf("%w: config file: %w", datamover.ErrInvalidArgument, err)
	}
	defer func() { _ = f.Close() }() // read-only
	b, err := io.ReadAll(io.LimitReader(f, maxConfigFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read config file: %w", err)
	}
	if len(b) > maxConfigFileSize {
		return nil, fmt.Errorf("%w: config file is larger than %d bytes", datamover.ErrInvalidArgument, maxConfigFileSize)
	}
	return b, nil
}

func writeTermination(path string, v any) error {
	b, err := encodeTermination(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// encodeTermination encodes a result as the termination log holds it,
// without its final newline.
func encodeTermination(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return b, nil
}

// minRedactLen is the shortest credential blanked out by redactor: no real
// access key or secret is shorter, and shorter strings would blank out
// ordinary words.
const minRedactLen = 4

// redactor returns a function that blanks out the S3 credentials of the
// environment wherever they occur.
func redactor(lookupEnv func(string) (string, bool)) func(string) string {
	var secrets []string
	for _, name := range []string{datamover.EnvSecretAccessKey, datamover.EnvSessionToken, datamover.EnvAccessKeyID} {
		if v, ok := lookupEnv(name); ok && len(v) >= minRedactLen {
			secrets = append(secrets, v)
		}
	}
	return func(s string) string {
		for _, secret := range secrets {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
		return s
	}
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
