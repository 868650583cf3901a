package moverprotocol

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The result of a subcommand is one small JSON object in its termination
// log, which Kubernetes keeps as the container's termination message (at
// most 4096 bytes of it):
//
//	{"size":1234,"checksum":"sha256:…","location":"s3://bucket/key","files":3}  (backup, restore: Archive)
//	{"location":"s3://bucket/key"}  (delete: Deletion)
//	{"location":"s3://bucket/key","source":{"namespace":"…","name":"…","uid":"…","generation":3},
//	 "createdAt":"2026-01-02T03:04:05Z","files":4,"dataFiles":3,"size":1234,"echo":{…}}  (inspect: Inspection)
//	{"error":"…","reason":"AccessDenied","retryable":false}  (any failure: Failure)

// MaxMessageLen is the most of a termination message Kubernetes keeps; a
// message cut short is not JSON.
const MaxMessageLen = 4096

// Archive is the result of backup and restore: the archive stored or
// restored.
type Archive struct {
	// Size is the archive's size in bytes.
	Size int64 `json:"size"`
	// Checksum is "sha256:" and the archive's hex digest.
	Checksum string `json:"checksum"`
	// Location is the artifact's URL in its store.
	Location string `json:"location"`
	// Files counts the files of the data directory.
	Files int `json:"files"`
	// Verified counts the restored files read back from the data
	// directory and found to match the manifest (restore with FlagVerify).
	Verified int `json:"verified,omitempty"`
}

// Deletion is the result of delete.
type Deletion struct {
	Location string `json:"location"`
}

// Source is the backed-up Echo as the manifest records it.
type Source struct {
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
	Generation int64  `json:"generation"`
}

// Inspection is the result of inspect, the first step of a restore.
type Inspection struct {
	Location string `json:"location"`
	Source   Source `json:"source"`
	// CreatedAt is RFC 3339, in seconds, in UTC.
	CreatedAt string `json:"createdAt"`
	// Files counts every file of the archive, config.json included.
	Files int `json:"files"`
	// DataFiles counts the files of the data directory.
	DataFiles int `json:"dataFiles"`
	// Size sums the sizes of the archive's files.
	Size int64 `json:"size"`
	// Echo is the backed-up Echo (the ConfigEcho member of the
	// configuration), verbatim, or EchoGzip the same gzipped and
	// base64-encoded (standard encoding, with padding) when it is too
	// large to go as is; neither when the configuration holds no Echo.
	Echo     json.RawMessage `json:"echo,omitempty"`
	EchoGzip string          `json:"echoGzip,omitempty"`
	// EchoOmitted is true when the Echo is too large to hand back even
	// gzipped; it is then in config.json of the artifact only.
	EchoOmitted bool `json:"echoOmitted,omitempty"`
}

// Failure is the result of any subcommand that failed.
type Failure struct {
	// Error is the error, with credentials redacted.
	Error string `json:"error"`
	// Reason classifies it: one of the Reason constants.
	Reason Reason `json:"reason"`
	// Retryable says whether running the same subcommand again may
	// succeed; it matches the exit code.
	Retryable bool `json:"retryable"`
}

// Encode encodes a result as the termination log holds it, without its
// final newline.
func Encode(result any) ([]byte, error) {
	b, err := json.Marshal(result)
	if err != nil {
		return nil, fmt.Errorf("encoding the result: %w", err)
	}
	return b, nil
}

// Decode reads a termination message: the Failure it reports, or else the
// result, decoded into result (a pointer to Archive, Deletion or
// Inspection). A message that is not a JSON object, as a mover killed
// mid-write or a foreign container would leave, is an error.
func Decode(message []byte, result any) (*Failure, error) {
	var probe struct {
		Error *string `json:"error"`
	}
	message = bytes.TrimSpace(message)
	if err := json.Unmarshal(message, &probe); err != nil {
		return nil, fmt.Errorf("decoding the data mover's result: %w", err)
	}
	if probe.Error != nil {
		f := &Failure{}
		if err := json.Unmarshal(message, f); err != nil {
			return nil, fmt.Errorf("decoding the data mover's failure: %w", err)
		}
		return f, nil
	}
	if err := json.Unmarshal(message, result); err != nil {
		return nil, fmt.Errorf("decoding the data mover's result: %w", err)
	}
	return nil, nil
}
