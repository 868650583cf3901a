package backupstore

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"
)

// FormatVersion is the version of the backup layout and manifest written by
// this package. The data mover's Restore rejects any other version.
const FormatVersion = 1

// Object and archive entry names.
const (
	// ManifestName is the manifest's object name under a backup's key.
	ManifestName = "manifest.json"
	// ConfigName is the archive path of the configuration.
	ConfigName = "config.json"
	// DataPrefix is the archive path prefix of the data directory's
	// content.
	DataPrefix = "data/"
)

// maxManifestSize bounds how much of a manifest object is read; a manifest
// lists one short line per file, so this allows several hundred thousand.
const maxManifestSize = 64 << 20

// Compression of the archive.
type Compression string

// Supported compressions.
const (
	CompressionGzip Compression = "gzip"
	CompressionNone Compression = "none"
)

// ParseCompression accepts "gzip", "none" and "" (gzip).
func ParseCompression(s string) (Compression, error) {
	switch Compression(s) {
	case "", CompressionGzip:
		return CompressionGzip, nil
	case CompressionNone:
		return CompressionNone, nil
	}
	return "", fmt.Errorf("%w: compression %q: want gzip or none", ErrInvalidArgument, s)
}

// ArchiveName is the archive's object name under a backup's key.
func (c Compression) ArchiveName() string {
	if c == CompressionNone {
		return "data.tar"
	}
	return "data.tar.gz"
}

// Manifest describes a complete backup.
//
// Its fields are encoded in this order: the summary a listing shows
// (version, time, source, compression, archive, number of data files)
// comes first, in the first few hundred bytes, so that a listing reads
// only those (see readManifestSummary); the configuration and the
// lists of files and directories, which can run to megabytes, come last.
// Manifests written before the summary came first have the same fields
// (without DataFileCount) in another order: the version did not change,
// since JSON's order does not matter to a decoder.
type Manifest struct {
	FormatVersion int       `json:"formatVersion"`
	CreatedAt     time.Time `json:"createdAt"`
	Source        Source    `json:"source"`
	// BackupID identifies the backup that wrote the artifact (the
	// EchoBackup's UID), so that a retry of that backup recognises its own
	// artifact; empty in artifacts written without one.
	BackupID    string      `json:"backupID,omitempty"`
	Compression Compression `json:"compression"`
	Archive     Archive     `json:"archive"`
	// DataFileCount is DataFiles(), written so that a listing need not
	// read Files; nil in manifests written before it was.
	DataFileCount *int `json:"dataFiles,omitempty"`
	// Config is the caller's configuration (the Echo's spec and metadata,
	// the Helm release's chart version and values), stored verbatim
	// (compacted); the archive's config.json holds the same document.
	Config json.RawMessage `json:"config"`
	// Files lists every regular file of the archive, in archive order, by
	// archive path: config.json and data/<path in the data directory>.
	Files []File `json:"files"`
	// Directories lists every directory of the archive by archive path
	// (data/<path>), in archive order.
	Directories []Directory `json:"directories"`
}

// Source identifies the Echo a backup was taken from.
type Source struct {
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
	Generation int64  `json:"generation"`
}

// File is a regular file in the archive.
type File struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	Mode   Mode   `json:"mode"`
	SHA256 string `json:"sha256"`
}

// Directory is a directory in the archive.
type Directory struct {
	Path string `json:"path"`
	Mode Mode   `json:"mode"`
}

// Archive describes the archive object as stored.
type Archive struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Mode holds permission bits; it is encoded as an octal string ("0640").
type Mode fs.FileMode

// MarshalJSON encodes the permission bits as an octal string.
func (m Mode) MarshalJSON() ([]byte, error) {
	return json.Marshal(fmt.Sprintf("%04o", uint32(m)&0o7777))
}

// UnmarshalJSON decodes an octal string.
func (m *Mode) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("mode: %w", err)
	}
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil || v > 0o7777 {
		return fmt.Errorf("mode %q: want octal permission bits", s)
	}
	*m = Mode(v)
	return nil
}

// Perm returns the permission bits without setuid, setgid and sticky, which
// a restore never sets.
func (m Mode) Perm() fs.FileMode { return fs.FileMode(m) & fs.ModePerm }

// ManifestKey is the manifest's object key for a backup key.
func ManifestKey(key string) string { return key + "/" + ManifestName }

// ArchiveKey is the archive's object key for a backup key.
func ArchiveKey(key string, c Compression) string { return key + "/" + c.ArchiveName() }

// DataFiles counts the files of the data directory (config.json excluded).
func (m *Manifest) DataFiles() int {
	n := 0
	for _, f := range m.Files {
		if strings.HasPrefix(f.Path, DataPrefix) {
			n++
		}
	}
	return n
}

// DataSize sums the sizes of all files in the archive.
func (m *Manifest) DataSize() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

// Encode returns the manifest as indented JSON.
func (m *Manifest) Encode() ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	return append(b, '\n'), nil
}

// DecodeManifest reads and validates a manifest; its Config comes back
// compact. A format version other
// than FormatVersion is ErrUnknownFormat; a malformed manifest is
// ErrCorruptArchive, or ErrUnsafePath when a listed path could escape.
func DecodeManifest(r io.Reader) (*Manifest, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxManifestSize+1))
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	if len(b) > maxManifestSize {
		return nil, fmt.Errorf("%w: manifest is larger than %d bytes", ErrCorruptArchive, maxManifestSize)
	}
	var probe struct {
		FormatVersion *json.Number `json:"formatVersion"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("%w: manifest is not a JSON object: %w", ErrUnknownFormat, err)
	}
	if probe.FormatVersion == nil {
		return nil, fmt.Errorf("%w: manifest has no formatVersion", ErrUnknownFormat)
	}
	if v := probe.FormatVersion.String(); v != strconv.Itoa(FormatVersion) {
		return nil, fmt.Errorf("%w: manifest formatVersion %s; this mover reads version %d only", ErrUnknownFormat, v, FormatVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: manifest: %w", ErrCorruptArchive, err)
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	// Encode indents the config with the rest; hand it back compact, as
	// Backup was given it.
	var config bytes.Buffer
	if err := json.Compact(&config, m.Config); err != nil {
		return nil, fmt.Errorf("%w: manifest config: %w", ErrCorruptArchive, err)
	}
	m.Config = config.Bytes()
	return &m, nil
}

// validate checks what Restore relies on before it downloads anything.
func (m *Manifest) validate() error {
	if _, err := ParseCompression(string(m.Compression)); err != nil || m.Compression == "" {
		return fmt.Errorf("%w: manifest compression %q", ErrCorruptArchive, m.Compression)
	}
	if m.Archive.Name != m.Compression.ArchiveName() {
		return fmt.Errorf("%w: manifest archive name %q does not match compression %q", ErrCorruptArchive, m.Archive.Name, m.Compression)
	}
	if m.Archive.Size < 0 || !isSHA256(m.Archive.SHA256) {
		return fmt.Errorf("%w: manifest archive size or sha256 is malformed", ErrCorruptArchive)
	}
	if !json.Valid(m.Config) {
		return fmt.Errorf("%w: manifest config is not valid JSON", ErrCorruptArchive)
	}
	if m.DataFileCount != nil && *m.DataFileCount != m.DataFiles() {
		return fmt.Errorf("%w: manifest says %d data files and lists %d", ErrCorruptArchive, *m.DataFileCount, m.DataFiles())
	}
	seen := make(map[string]bool, len(m.Files)+len(m.Directories))
	hasConfig := false
	for _, f := range m.Files {
		if err := checkManifestPath(f.Path, false, seen); err != nil {
			return err
		}
		if f.Size < 0 || !isSHA256(f.SHA256) {
			return fmt.Errorf("%w: manifest entry %q has a malformed size or sha256", ErrCorruptArchive, f.Path)
		}
		hasConfig = hasConfig || f.Path == ConfigName
	}
	for _, d := range m.Directories {
		if err := checkManifestPath(d.Path, true, seen); err != nil {
			return err
		}
	}
	if !hasConfig {
		return fmt.Errorf("%w: manifest does not list %s", ErrCorruptArchive, ConfigName)
	}
	return nil
}

func checkManifestPath(p string, dir bool, seen map[string]bool) error {
	clean, err := CheckArchivePath(p)
	if err != nil {
		return err
	}
	if clean != p {
		return fmt.Errorf("%w: manifest path %q is not in canonical form", ErrCorruptArchive, p)
	}
	if !InArchiveLayout(p, dir) {
		return fmt.Errorf("%w: manifest path %q is neither %s nor under %s", ErrUnsafePath, p, ConfigName, DataPrefix)
	}
	if seen[p] {
		return fmt.Errorf("%w: manifest lists %q twice", ErrCorruptArchive, p)
	}
	seen[p] = true
	return nil
}

// CheckArchivePath validates an archive entry name and returns it cleaned
// (without a directory's trailing slash). It rejects empty names, absolute
// paths, NUL bytes, any ".." element and non-canonical forms such as "a//b"
// or "./a", all as ErrUnsafePath.
func CheckArchivePath(name string) (string, error) {
	p := strings.TrimSuffix(name, "/")
	switch {
	case p == "" || p == ".":
		return "", fmt.Errorf("%w: empty path", ErrUnsafePath)
	case strings.HasPrefix(p, "/"):
		return "", fmt.Errorf("%w: absolute path %q", ErrUnsafePath, name)
	case strings.ContainsRune(p, 0):
		return "", fmt.Errorf("%w: path %q contains a NUL byte", ErrUnsafePath, name)
	}
	for _, elem := range strings.Split(p, "/") {
		if elem == ".." {
			return "", fmt.Errorf("%w: path %q contains \"..\"", ErrUnsafePath, name)
		}
	}
	if path.Clean(p) != p {
		return "", fmt.Errorf("%w: path %q is not canonical", ErrUnsafePath, name)
	}
	return p, nil
}

// InArchiveLayout reports whether a clean path belongs in an archive:
// config.json as a file, anything strictly below data/ otherwise.
func InArchiveLayout(p string, dir bool) bool {
	if p == ConfigName {
		return !dir
	}
	return strings.HasPrefix(p, DataPrefix) && len(p) > len(DataPrefix)
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}
