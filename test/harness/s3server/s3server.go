package s3server

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/echo-operator/echo-operator/test/harness/freeport"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/echo-operator/echo-operator/test/harness/testcerts"
	"github.com/echo-operator/echo-operator/test/harness/toolbin"
)

// EnvBinary names the environment variable holding the server's path.
const EnvBinary = "MINIO"

// Region is the region the server answers for.
const Region = "us-east-1"

// KMSKeyID is the key of the server's KMS, MinIO's built-in one with a
// random key: SSE-S3 encrypts with it, and SSE-KMS takes it by this id.
const KMSKeyID = "echo-test-key"

const (
	startTimeout = 60 * time.Second
	stopTimeout  = 10 * time.Second
	pollInterval = 50 * time.Millisecond
	logTailBytes = 4 << 10
)

// Server is a running S3 service.
type Server struct {
	// Endpoint is the service URL, http://127.0.0.1:<port>.
	Endpoint string
	// AccessKey and SecretKey are the root credentials.
	AccessKey string
	SecretKey string
	// DataDir holds the server's objects.
	DataDir string
	// CAFile is the PEM file of the CA that issued the server's
	// certificate; empty on plain HTTP.
	CAFile string

	logFile string
	bin     string   // the server binary
	args    []string // its arguments, the same on every start
	env     []string // its environment
	cmd     *exec.Cmd
	exited  chan struct{} // closed once cmd has exited
}

// Start runs a server on plain HTTP and creates the given buckets. It skips
// the test when MINIO is unset and stops the server when the test ends.
func Start(tb testing.TB, buckets ...string) *Server {
	tb.Helper()
	return startServer(tb, options{host: "127.0.0.1"}, buckets)
}

// StartAt is Start on another loopback address than 127.0.0.1, for a test
// whose clients may connect to that one address only.
func StartAt(tb testing.TB, host string, buckets ...string) *Server {
	tb.Helper()
	return startServer(tb, options{host: host}, buckets)
}

// StartTLS is Start on HTTPS, with a certificate for 127.0.0.1 issued by a
// throwaway CA whose PEM file is CAFile.
func StartTLS(tb testing.TB, buckets ...string) *Server {
	tb.Helper()
	return startServer(tb, options{host: "127.0.0.1", tls: true}, buckets)
}

// StartTLSAt is StartTLS on another loopback address, which the server's
// certificate is for.
func StartTLSAt(tb testing.TB, host string, buckets ...string) *Server {
	tb.Helper()
	return startServer(tb, options{host: host, tls: true}, buckets)
}

// OpenID is the OpenID Connect provider whose tokens the server's STS
// exchanges for credentials (AssumeRoleWithWebIdentity): kube-apiserver's
// ServiceAccount issuer, say.
type OpenID struct {
	// ConfigURL is the provider's discovery document,
	// <issuer>/.well-known/openid-configuration.
	ConfigURL string
	// CA is the PEM bundle the server trusts the provider's certificate
	// with.
	CA []byte
	// ClientID is the audience the server requires of a token.
	ClientID string
	// ClaimName is the claim whose value names the policy of the
	// credentials: a token whose claim names no policy is refused.
	ClaimName string
}

// StartWithOpenID is StartAt, with an STS that exchanges the tokens of
// provider for credentials.
func StartWithOpenID(tb testing.TB, host string, provider OpenID, buckets ...string) *Server {
	tb.Helper()
	return startServer(tb, options{host: host, openID: &provider}, buckets)
}

// StartTLSWithOpenID is StartWithOpenID on HTTPS, as an STS must be: the
// tokens it takes are bearer credentials.
func StartTLSWithOpenID(tb testing.TB, host string, provider OpenID, buckets ...string) *Server {
	tb.Helper()
	return startServer(tb, options{host: host, tls: true, openID: &provider}, buckets)
}

// options are how a server is started.
type options struct {
	host   string
	tls    bool
	openID *OpenID
}

func startServer(tb testing.TB, o options, buckets []string) *Server {
	tb.Helper()
	bin := toolbin.Path(tb, EnvBinary, "MinIO")
	var s *Server
	var err error
	// A free port can be taken between finding it and the server binding
	// it; another pair of ports then does.
	for attempt := 0; attempt < 3; attempt++ {
		if s, err = start(tb, bin, o); err == nil {
			break
		}
	}
	if err != nil {
		tb.Fatalf("S3 server did not become ready: %v\n%s", err, s.LogTail())
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := s.waitIAM(ctx, tb); err != nil {
		tb.Fatalf("S3 server did not finish starting: %v\n%s", err, s.LogTail())
	}
	for _, b := range buckets {
		if err := s.Client(tb).MakeBucket(ctx, b, minio.MakeBucketOptions{Region: Region}); err != nil {
			tb.Fatalf("create bucket %s: %v", b, err)
		}
	}
	return s
}

func start(tb testing.TB, bin string, o options) (*Server, error) {
	host := o.host
	dir := tb.TempDir()
	s := &Server{
		AccessKey: "test-" + randomHex(6),
		SecretKey: randomHex(20),
		DataDir:   filepath.Join(dir, "data"),
		logFile:   filepath.Join(dir, "minio.log"),
		bin:       bin,
	}
	apiPort, consolePort := freePort(tb, host), freePort(tb, host)
	address := net.JoinHostPort(host, strconv.Itoa(apiPort))
	s.Endpoint = "http://" + address
	s.args = []string{"server", "--quiet",
		"--address", address,
		"--console-address", net.JoinHostPort(host, strconv.Itoa(consolePort))}
	certs := filepath.Join(dir, "certs")
	if o.tls {
		caFile, err := writeCerts(certs, host)
		if err != nil {
			tb.Fatalf("writing the S3 server's certificates: %v", err)
		}
		s.CAFile = caFile
		s.Endpoint = "https://" + address
	}
	if o.openID != nil {
		// MinIO trusts the CAs of <certs-dir>/CAs besides the system's.
		cas := filepath.Join(certs, "CAs")
		if err := os.MkdirAll(cas, 0o700); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cas, "openid-ca.crt"), o.openID.CA, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	if o.tls || o.openID != nil {
		s.args = append(s.args, "--certs-dir", certs)
	}
	s.args = append(s.args, s.DataDir)
	s.env = append(os.Environ(),
		"MINIO_ROOT_USER="+s.AccessKey,
		"MINIO_ROOT_PASSWORD="+s.SecretKey,
		"MINIO_KMS_SECRET_KEY="+KMSKeyID+":"+base64.StdEncoding.EncodeToString(randomBytes(32)),
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
		"HOME="+dir,
	)
	if id := o.openID; id != nil {
		s.env = append(s.env, "MINIO_IDENTITY_OPENID_CONFIG_URL="+id.ConfigURL, "MINIO_IDENTITY_OPENID_CLIENT_ID="+id.ClientID,
			"MINIO_IDENTITY_OPENID_CLAIM_NAME="+id.ClaimName)
	}
	s.launch(tb)
	tb.Cleanup(func() { s.stop(tb) })
	return s, s.waitReady()
}

// writeCerts writes, in MinIO's layout (public.crt and private.key in dir),
// a certificate for host issued by a throwaway CA, and returns the path of
// the CA's PEM file.
func writeCerts(dir, host string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	ca, err := testcerts.NewCA("echo-operator test S3 CA", 24*time.Hour)
	if err != nil {
		return "", err
	}
	leaf := testcerts.Leaf{CommonName: host, IPAddresses: []net.IP{net.ParseIP(host)}}
	if err := ca.WriteSigned(leaf, filepath.Join(dir, "public.crt"), filepath.Join(dir, "private.key")); err != nil {
		return "", err
	}
	caFile := dir + "-ca.crt"
	return caFile, os.WriteFile(caFile, ca.CertPEM(), 0o600)
}

// launch starts the server process; its output goes to the end of the log.
func (s *Server) launch(tb testing.TB) {
	tb.Helper()
	logOut, err := os.OpenFile(s.logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		tb.Fatalf("open server log: %v", err)
	}
	s.cmd = exec.Command(s.bin, s.args...)
	s.cmd.Env = s.env
	s.cmd.Stdout, s.cmd.Stderr = logOut, logOut
	if err := s.cmd.Start(); err != nil {
		_ = logOut.Close()
		tb.Fatalf("start %s: %v", s.bin, err)
	}
	cmd, exited := s.cmd, make(chan struct{})
	s.exited = exited
	go func() {
		_ = cmd.Wait()
		_ = logOut.Close()
		close(exited)
	}()
}

// Stop ends the server process at once (SIGKILL), as a crash or the loss of
// its node would: requests in flight are cut off and clients find nothing
// listening until Restart. What the server had stored stays in DataDir.
func (s *Server) Stop(tb testing.TB) {
	tb.Helper()
	if !s.running() {
		tb.Fatal("stop: the S3 server is not running")
	}
	if err := s.cmd.Process.Kill(); err != nil {
		tb.Fatalf("stop the S3 server: %v", err)
	}
	<-s.exited
}

// Restart starts a stopped server again on the same address, with the same
// credentials and data directory, and waits until it serves requests: its
// buckets, objects and unfinished multipart uploads are those the stopped
// server left.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	if s.running() {
		tb.Fatal("restart: the S3 server is still running; Stop it first")
	}
	s.launch(tb)
	if err := s.waitReady(); err != nil {
		tb.Fatalf("S3 server did not become ready again: %v\n%s", err, s.LogTail())
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := s.waitIAM(ctx, tb); err != nil {
		tb.Fatalf("S3 server did not finish starting again: %v\n%s", err, s.LogTail())
	}
}

// running reports whether the server process has not exited.
func (s *Server) running() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Env returns the environment entries that give a mover the server's
// credentials.
func (s *Server) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + s.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s.SecretKey}
}

// Client returns a client with the root credentials, for tests that look at
// or tamper with objects directly.
func (s *Server) Client(tb testing.TB) *minio.Client {
	tb.Helper()
	return s.clientAs(tb, s.AccessKey, s.SecretKey)
}

// clientAs is a client that signs with the given keys.
func (s *Server) clientAs(tb testing.TB, accessKey, secretKey string) *minio.Client {
	tb.Helper()
	c, err := minio.New(strings.TrimPrefix(strings.TrimPrefix(s.Endpoint, "http://"), "https://"), &minio.Options{
		Creds:        credentials.NewStaticV4(accessKey, secretKey, ""),
		Region:       Region,
		BucketLookup: minio.BucketLookupPath,
		Secure:       strings.HasPrefix(s.Endpoint, "https://"),
		Transport:    s.transport(tb),
	})
	if err != nil {
		tb.Fatalf("S3 client: %v", err)
	}
	return c
}

// httpClient is a client of the server's endpoint.
func (s *Server) httpClient(tb testing.TB) *http.Client {
	tb.Helper()
	return &http.Client{Transport: s.transport(tb)}
}

// transport trusts the server's CA, on HTTPS.
func (s *Server) transport(tb testing.TB) *http.Transport {
	tb.Helper()
	transport, err := minio.DefaultTransport(strings.HasPrefix(s.Endpoint, "https://"))
	if err != nil {
		tb.Fatalf("S3 transport: %v", err)
	}
	if s.CAFile != "" {
		pool := x509.NewCertPool()
		pem, err := os.ReadFile(s.CAFile)
		if err != nil || !pool.AppendCertsFromPEM(pem) {
			tb.Fatalf("read CA file: %v", err)
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return transport
}

// LogTail returns the end of the server's log.
func (s *Server) LogTail() string {
	b, err := os.ReadFile(s.logFile)
	if err != nil {
		return "(no server log: " + err.Error() + ")"
	}
	if len(b) > logTailBytes {
		b = b[len(b)-logTailBytes:]
	}
	return string(bytes.TrimSpace(b))
}

// waitReady polls the readiness endpoint until it answers 200, the process
// exits or startTimeout passes.
func (s *Server) waitReady() error {
	client := &http.Client{Timeout: time.Second}
	if s.CAFile != "" {
		pool := x509.NewCertPool()
		pem, err := os.ReadFile(s.CAFile)
		if err != nil || !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("read CA file: %w", err)
		}
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		resp, err := client.Get(s.Endpoint + "/minio/health/ready")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.exited:
			return errors.New("the server exited")
		case <-deadline.C:
			return fmt.Errorf("no answer within %s", startTimeout)
		case <-tick.C:
		}
	}
}

// waitIAM waits until the server checks credentials. MinIO reports ready
// before its IAM sub-system has loaded: until then it answers a request
// signed with unknown keys 503 XMinioIAMNotInitialized instead of access
// denied, which the tests of credential errors would take for a storage
// fault.
func (s *Server) waitIAM(ctx context.Context, tb testing.TB) error {
	stranger := s.clientAs(tb, "unknown-"+randomHex(6), "unknown-secret-"+randomHex(6))
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		_, err := stranger.ListBuckets(ctx)
		if minio.ToErrorResponse(err).Code != "XMinioIAMNotInitialized" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("IAM not initialized: %w", ctx.Err())
		case <-s.exited:
			return errors.New("the server exited")
		case <-tick.C:
		}
	}
}

// stop sends SIGTERM and, if the server lingers, SIGKILL.
func (s *Server) stop(tb testing.TB) {
	if !s.running() {
		if tb.Failed() {
			tb.Logf("S3 server log:\n%s", s.LogTail())
		}
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-s.exited:
	case <-timer.C:
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	if tb.Failed() {
		tb.Logf("S3 server log:\n%s", s.LogTail())
	}
}

// freePort returns a TCP port on host that was free a moment ago.
func freePort(tb testing.TB, host string) int {
	tb.Helper()
	port, err := freeport.On(host)
	if err != nil {
		tb.Fatalf("find a free port: %v", err)
	}
	return port
}

func randomHex(n int) string { return hex.EncodeToString(randomBytes(n)) }

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails on Linux
	return b
}
