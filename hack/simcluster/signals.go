package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// stopGrace is how long simcluster ignores further signals once its
// teardown has begun. A terminal's Ctrl-C reaches every process of its
// group, simcluster and the script that started it (hack/run.sh) alike,
// and that script then stops its processes with a signal of its own: a
// second signal right after the first is no request to abandon the
// teardown, which stops the node's containers, unmounts their volumes and
// removes the node's bridge and routes. It takes seconds; each of its
// steps is bounded (10 seconds per process before SIGKILL).
const stopGrace = 2 * time.Minute

// stopSignals are the signals that stop simcluster: Ctrl-C, kill, and a
// closed terminal.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// onStopSignals returns a context that ends at the first stop signal. Any
// signal after it within grace is ignored, with a line on log, so that the
// teardown completes; one after grace ends the process at once through
// exit(130), the way out of a teardown that hangs, and the next start
// cleans what it left (realnode.Prepare). release stops the handling.
func onStopSignals(grace time.Duration, log io.Writer, exit func(int)) (_ context.Context, release func()) {
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, stopSignals...)
	done := make(chan struct{})
	go func() {
		var first time.Time
		for {
			select {
			case <-done:
				return
			case sig := <-signals:
				switch {
				case first.IsZero():
					first = time.Now()
					cancel()
				case time.Since(first) < grace:
					_, _ = fmt.Fprintf(log, "simcluster: %s ignored: still stopping (a signal after %s ends simcluster at once)\n",
						sig, (grace - time.Since(first)).Round(time.Second))
				default:
					_, _ = fmt.Fprintf(log, "simcluster: %s after %s of stopping: ending at once; the next start cleans what is left\n", sig, grace)
					exit(130)
				}
			}
		}
	}()
	return ctx, func() {
		signal.Stop(signals)
		close(done)
		cancel()
	}
}
