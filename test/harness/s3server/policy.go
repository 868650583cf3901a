package s3server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/minio/minio-go/v7/pkg/signer"
)

// AddPolicy creates the server's IAM policy name with the document policy
// (JSON), through MinIO's admin API with the root credentials. A token
// whose OpenID claim names it gets its rights.
func (s *Server) AddPolicy(tb testing.TB, name, policy string) {
	tb.Helper()
	u := s.Endpoint + "/minio/admin/v3/add-canned-policy?name=" + url.QueryEscape(name)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPut, u, bytes.NewReader([]byte(policy)))
	if err != nil {
		tb.Fatal(err)
	}
	sum := sha256.Sum256([]byte(policy))
	req.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
	req = signer.SignV4(*req, s.AccessKey, s.SecretKey, "", Region)
	resp, err := s.httpClient(tb).Do(req)
	if err != nil {
		tb.Fatalf("adding policy %s: %v", name, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		tb.Fatalf("adding policy %s: HTTP %d: %s", name, resp.StatusCode, body)
	}
}

// BucketPolicy is an IAM policy that allows every S3 action on bucket and
// its objects, and nothing else.
func BucketPolicy(bucket string) string {
	return fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:*"],`+
		`"Resource":["arn:aws:s3:::%s","arn:aws:s3:::%s/*"]}]}`, bucket, bucket)
}
