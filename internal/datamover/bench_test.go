package datamover

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/echo-operator/echo-operator/test/harness/s3server"
)

// The benchmark's data set: 1 GiB, half journal-like JSON lines (eight
// journals of 64 MiB) and half incompressible data (64 files of 8 MiB).
const (
	benchJournals     = 8
	benchJournalBytes = 64 << 20
	benchBlobs        = 64
	benchBlobBytes    = 8 << 20
	benchDataBytes    = benchJournals*benchJournalBytes + benchBlobs*benchBlobBytes
)

var benchData struct {
	once sync.Once
	dir  string // holds data/ and scratch space
	err  error
}

// benchDataDir generates the data set once per test binary run.
func benchDataDir(b *testing.B) string {
	b.Helper()
	benchData.once.Do(func() {
		benchData.dir, benchData.err = os.MkdirTemp("", "datamover-bench-")
		if benchData.err == nil {
			benchData.err = generateBenchData(filepath.Join(benchData.dir, "data"))
		}
	})
	if benchData.err != nil {
		b.Fatalf("generating the benchmark data: %v", benchData.err)
	}
	return filepath.Join(benchData.dir, "data")
}

func cleanupBenchData() {
	if benchData.dir != "" {
		_ = os.RemoveAll(benchData.dir)
	}
}

func generateBenchData(dir string) error {
	rnd := rand.New(rand.NewPCG(42, 1))
	for i := range benchJournals {
		if err := writeBenchFile(filepath.Join(dir, "journal", fmt.Sprintf("echo-%d.jsonl", i)), func(w *bufio.Writer) error {
			return writeJournalLines(w, rnd, benchJournalBytes)
		}); err != nil {
			return err
		}
	}
	for i := range benchBlobs {
		src := rand.NewChaCha8([32]byte{byte(i), 1})
		if err := writeBenchFile(filepath.Join(dir, "blobs", fmt.Sprintf("blob-%02d.bin", i)), func(w *bufio.Writer) error {
			_, err := io.CopyN(w, src, benchBlobBytes)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

func writeBenchFile(path string, fill func(*bufio.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := fill(w); err != nil {
		_ = f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// writeJournalLines writes entries shaped like the echo server's until size
// bytes are written (the last line is cut to fit exactly).
func writeJournalLines(w *bufio.Writer, rnd *rand.Rand, size int) error {
	methods := []string{"GET", "POST", "PUT", "DELETE"}
	messages := []string{"Hello from Echo", "Hello from echo-sample", "maintenance window"}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var line []byte
	var sum [32]byte
	written := 0
	for seq := 1; written < size; seq++ {
		for i := range sum {
			sum[i] = byte(rnd.Uint32())
		}
		line = line[:0]
		line = append(line, `{"seq":`...)
		line = strconv.AppendInt(line, int64(seq), 10)
		line = append(line, `,"time":"`...)
		line = start.Add(time.Duration(seq)*1713*time.Microsecond).AppendFormat(line, time.RFC3339Nano)
		line = append(line, `","method":"`...)
		line = append(line, methods[rnd.IntN(len(methods))]...)
		line = append(line, `","path":"/api/v1/orders/`...)
		line = strconv.AppendInt(line, int64(rnd.IntN(100000)), 10)
		line = append(line, `/items?page=`...)
		line = strconv.AppendInt(line, int64(rnd.IntN(50)), 10)
		line = append(line, `","bodySize":`...)
		line = strconv.AppendInt(line, int64(rnd.IntN(4096)), 10)
		line = append(line, `,"bodySha256":"`...)
		line = hex.AppendEncode(line, sum[:])
		line = append(line, `","message":"`...)
		line = append(line, messages[rnd.IntN(len(messages))]...)
		line = append(line, "\"}\n"...)
		if written+len(line) > size {
			line = line[:size-written]
			line[len(line)-1] = '\n'
		}
		if _, err := w.Write(line); err != nil {
			return err
		}
		written += len(line)
	}
	return nil
}

// measured is one subprocess run.
type measured struct {
	elapsed time.Duration
	rssKiB  int64
}

func (m measured) report(b *testing.B, extra map[string]float64) {
	b.ReportMetric(float64(benchDataBytes)/1e6/m.elapsed.Seconds(), "MB/s")
	b.ReportMetric(float64(m.rssKiB)/1024, "peak-RSS-MiB")
	for unit, v := range extra {
		b.ReportMetric(v, unit)
	}
}

func maxRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss // KiB on Linux
	}
	return 0
}

// runMeasured runs the manager with args and returns its wall time and
// peak RSS.
func runMeasured(b *testing.B, env []string, args ...string) measured {
	b.Helper()
	cmd := exec.Command(managerBin, append(args, "--termination-log", "")...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	logFile, err := os.CreateTemp(b.TempDir(), "manager-*.log")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = logFile.Close() }()
	cmd.Stderr = logFile
	start := time.Now()
	if err := cmd.Run(); err != nil {
		log, _ := os.ReadFile(logFile.Name())
		b.Fatalf("manager %s: %v\n%s", args[0], err, log)
	}
	return measured{elapsed: time.Since(start), rssKiB: maxRSS(cmd.ProcessState)}
}

// BenchmarkDataMover measures the manager's backup and restore of 1 GiB
// against tar | gzip on the same data, as subprocesses so that peak RSS is
// the process's own. Run it with make bench; docs/benchmarks.md has
// results.
func BenchmarkDataMover(b *testing.B) {
	needManager(b)
	data := benchDataDir(b)
	scratch := b.TempDir()
	fsRoot := filepath.Join(scratch, "store")
	if err := os.Mkdir(fsRoot, 0o750); err != nil {
		b.Fatal(err)
	}
	srv := s3server.Start(b, testBucket)
	fsFlags := []string{"--fs-root", fsRoot}
	s3 := []string{"--s3-endpoint", srv.Endpoint, "--s3-bucket", testBucket, "--s3-path-style"}
	// Restores read the first backup of each store.
	var fsKey, s3Key string

	b.Run("tar+gzip", func(b *testing.B) {
		for i := range b.N {
			out := filepath.Join(scratch, fmt.Sprintf("tar-%d.tar.gz", i))
			m, size := tarGzip(b, data, out)
			m.report(b, map[string]float64{"archive-MiB": float64(size) / (1 << 20), "spawn-floor-MiB": spawnFloor(b)})
			if err := os.Remove(out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("backup/fs", func(b *testing.B) {
		for i := range b.N {
			key := fmt.Sprintf("bench/fs-%d", i)
			m := runMeasured(b, nil, append([]string{"backup", "--data-dir", data, "--key", key}, fsFlags...)...)
			info, err := os.Stat(filepath.Join(fsRoot, key, "data.tar.gz"))
			if err != nil {
				b.Fatal(err)
			}
			m.report(b, map[string]float64{"archive-MiB": float64(info.Size()) / (1 << 20)})
			if fsKey == "" {
				fsKey = key
			}
		}
	})
	b.Run("backup/s3", func(b *testing.B) {
		for i := range b.N {
			key := fmt.Sprintf("bench/s3-%d", i)
			m := runMeasured(b, srv.Env(), append([]string{"backup", "--data-dir", data, "--key", key}, s3...)...)
			m.report(b, nil)
			if s3Key == "" {
				s3Key = key
			}
		}
	})
	b.Run("restore/fs", func(b *testing.B) {
		if fsKey == "" {
			b.Skip("needs backup/fs")
		}
		for i := range b.N {
			target := filepath.Join(scratch, fmt.Sprintf("restore-fs-%d", i))
			runMeasured(b, nil, append([]string{"restore", "--data-dir", target, "--key", fsKey}, fsFlags...)...).report(b, nil)
			if err := os.RemoveAll(target); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("restore/s3", func(b *testing.B) {
		if s3Key == "" {
			b.Skip("needs backup/s3")
		}
		for i := range b.N {
			target := filepath.Join(scratch, fmt.Sprintf("restore-s3-%d", i))
			runMeasured(b, srv.Env(), append([]string{"restore", "--data-dir", target, "--key", s3Key}, s3...)...).report(b, nil)
			if err := os.RemoveAll(target); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// spawnFloor is the peak RSS reported for a process that uses next to no
// memory (true). The kernel records the spawning process's high-water mark
// when a vfork'ed child calls exec, so every measurement here is at least
// this; it matters for tar and gzip, whose own footprint is smaller.
func spawnFloor(b *testing.B) float64 {
	b.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		b.Fatalf("true: %v", err)
	}
	return float64(maxRSS(cmd.ProcessState)) / 1024
}

// tarGzip runs tar -cf - -C data . | gzip > out and returns the pipeline's
// wall time, the sum of the two processes' peak RSS and the archive size.
func tarGzip(b *testing.B, data, out string) (measured, int64) {
	b.Helper()
	f, err := os.Create(out)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	pr, pw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	tarCmd := exec.CommandContext(ctx, "tar", "-cf", "-", "-C", data, ".")
	gzipCmd := exec.CommandContext(ctx, "gzip")
	tarCmd.Stdout, gzipCmd.Stdin, gzipCmd.Stdout = pw, pr, f
	tarCmd.Stderr, gzipCmd.Stderr = os.Stderr, os.Stderr
	start := time.Now()
	if err := tarCmd.Start(); err != nil {
		b.Skipf("tar is not available: %v", err)
	}
	if err := gzipCmd.Start(); err != nil {
		b.Skipf("gzip is not available: %v", err)
	}
	_ = pw.Close()
	_ = pr.Close()
	if err := tarCmd.Wait(); err != nil {
		b.Fatalf("tar: %v", err)
	}
	if err := gzipCmd.Wait(); err != nil {
		b.Fatalf("gzip: %v", err)
	}
	elapsed := time.Since(start)
	info, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	return measured{elapsed: elapsed, rssKiB: maxRSS(tarCmd.ProcessState) + maxRSS(gzipCmd.ProcessState)}, info.Size()
}
