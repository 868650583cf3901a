package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/echo-operator/echo-operator/internal/echoserver"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

type options struct {
	listen          string
	message         string
	dataDir         string
	instance        string // empty: the hostname
	shutdownTimeout time.Duration
	logLevel        slog.Level
}

func main() {
	os.Exit(run(os.Args[1:], os.LookupEnv, os.Stderr))
}

// run parses the configuration, serves until SIGTERM or SIGINT and returns
// the process exit code.
func run(args []string, lookupEnv func(string) (string, bool), stderr io.Writer) int {
	opts, err := parseOptions(args, lookupEnv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		// Nothing sensible is left to do if stderr cannot be written.
		_, _ = fmt.Fprintf(stderr, "echo-server: %v\n", err)
		return exitUsage
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: opts.logLevel}))
	slog.SetDefault(logger)
	if err := serve(opts, logger); err != nil {
		logger.Error("echo-server failed", "error", err)
		return exitError
	}
	return exitOK
}

func parseOptions(args []string, lookupEnv func(string) (string, bool), output io.Writer) (options, error) {
	fs := flag.NewFlagSet("echo-server", flag.ContinueOnError)
	fs.SetOutput(output)
	env := func(name, def string) string {
		if v, ok := lookupEnv(name); ok {
			return v
		}
		return def
	}
	var o options
	var timeout, level string
	fs.StringVar(&o.listen, "listen", env("ECHO_LISTEN", echoserver.DefaultListen), "TCP address to listen on (env ECHO_LISTEN)")
	fs.StringVar(&o.message, "message", env("ECHO_MESSAGE", echoserver.DefaultMessage), "message included in every echo response (env ECHO_MESSAGE)")
	fs.StringVar(&o.dataDir, "data-dir", env("ECHO_DATA_DIR", ""), "directory for the request journal; empty disables persistence (env ECHO_DATA_DIR)")
	fs.StringVar(&o.instance, "instance", env("ECHO_INSTANCE", ""), "instance name; defaults to the hostname (env ECHO_INSTANCE)")
	fs.StringVar(&timeout, "shutdown-timeout", env("ECHO_SHUTDOWN_TIMEOUT", echoserver.DefaultShutdownTimeout.String()), "time allowed for in-flight requests on shutdown (env ECHO_SHUTDOWN_TIMEOUT)")
	fs.StringVar(&level, "log-level", env("ECHO_LOG_LEVEL", "info"), "log level: debug, info, warn or error (env ECHO_LOG_LEVEL)")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	var err error
	if o.shutdownTimeout, err = time.ParseDuration(timeout); err != nil || o.shutdownTimeout <= 0 {
		return options{}, fmt.Errorf("invalid shutdown timeout %q: must be a positive duration", timeout)
	}
	if err := o.logLevel.UnmarshalText([]byte(level)); err != nil {
		return options{}, fmt.Errorf("invalid log level: %w", err)
	}
	return o, nil
}

// serve runs the server until a termination signal and closes it.
func serve(opts options, logger *slog.Logger) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// After the first signal, a second one terminates the process at once.
	context.AfterFunc(ctx, stop)

	instance := opts.instance
	if instance == "" {
		if instance, err = os.Hostname(); err != nil {
			return fmt.Errorf("determine instance name from hostname: %w", err)
		}
	}
	srv, err := echoserver.New(echoserver.Config{
		Listen:          opts.listen,
		Message:         opts.message,
		Instance:        instance,
		DataDir:         opts.dataDir,
		ShutdownTimeout: opts.shutdownTimeout,
		Logger:          logger,
	})
	if err != nil {
		return fmt.Errorf("create server: %w", err)
	}
	defer func() {
		if cerr := srv.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close server: %w", cerr))
		}
	}()
	logger.Info("starting echo-server", "instance", srv.Instance(), "listen", opts.listen,
		"persistence", opts.dataDir != "", "dataDir", opts.dataDir)
	return srv.Run(ctx)
}
