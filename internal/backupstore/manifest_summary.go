package backupstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// DefaultManifestSummaryBytes is how much of a manifest a listing reads
// at most (ListOptions.ManifestBytes). A manifest written with its summary
// first needs a few hundred bytes; one of the older layout, whose summary
// ends after the list of its files, fits when it lists up to about 5,000
// files.
const DefaultManifestSummaryBytes = 1 << 20

// errManifestTooLarge: a manifest's summary does not fit in the bytes a
// listing reads of it.
var errManifestTooLarge = errors.New("manifest too large for a listing")

// Bounds of the source a summary carries: those of a namespace's name,
// an object's name, and more than a UID's.
const (
	maxSourceNamespaceLength = 63
	maxSourceFieldLength     = 253
)

// manifestSummary is what a listing shows of a manifest.
type manifestSummary struct {
	FormatVersion int
	CreatedAt     time.Time
	Source        Source
	Compression   Compression
	Archive       Archive
	DataFiles     int
}

// The top-level fields of a manifest a summary needs, as bits.
const (
	hasVersion = 1 << iota
	hasCreatedAt
	hasSource
	hasCompression
	hasArchive
	hasDataFiles
	hasSummary = hasVersion | hasCreatedAt | hasSource | hasCompression | hasArchive | hasDataFiles
)

// readManifestSummary reads the summary of the manifest r holds, at most
// limit bytes of it, token by token: its memory does not grow with the
// manifest, only with its longest value, and it stops reading as soon as
// it has the summary. A manifest written with the summary first is read
// for a few hundred bytes; one of the older layout up to the end of its
// files, which it counts without keeping them.
//
// Errors are those of DecodeManifest for what the summary holds
// (ErrUnknownFormat, ErrCorruptArchive), errManifestTooLarge when the
// summary does not end within limit bytes, or r's own.
func readManifestSummary(r io.Reader, limit int64) (manifestSummary, error) {
	in := &countingReader{r: io.LimitReader(r, limit+1)}
	dec := json.NewDecoder(in)
	dec.UseNumber()
	var s manifestSummary
	err := s.decode(dec)
	switch {
	case in.err != nil:
		return s, in.err
	case err != nil && in.n > limit:
		return s, fmt.Errorf("%w: the manifest lists its files before its summary, as manifests written by earlier versions of the operator do, "+
			"and is larger than the %d bytes a listing reads: a restore reads it whole", errManifestTooLarge, limit)
	case err != nil:
		return s, err
	}
	return s, s.validate()
}

// decode reads the manifest's top-level fields until it has those of the
// summary, or to the end of the object.
func (s *manifestSummary) decode(dec *json.Decoder) error {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("%w: manifest is not a JSON object", ErrUnknownFormat)
	}
	var has int
	for has != hasSummary && dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return s.malformed(has, err)
		}
		field, _ := tok.(string)
		bit, err := s.decodeField(dec, field)
		if err != nil {
			if errors.Is(err, ErrUnknownFormat) {
				return err
			}
			return s.malformed(has, fmt.Errorf("%s: %w", field, err))
		}
		has |= bit
	}
	if has&hasVersion == 0 {
		return fmt.Errorf("%w: manifest has no formatVersion", ErrUnknownFormat)
	}
	return nil
}

// malformed is the error of a manifest that does not decode: of an
// unknown format until its version is known to be FormatVersion.
func (s *manifestSummary) malformed(has int, err error) error {
	if has&hasVersion == 0 {
		return fmt.Errorf("%w: manifest: %w", ErrUnknownFormat, err)
	}
	return fmt.Errorf("%w: manifest: %w", ErrCorruptArchive, err)
}

// decodeField decodes the value of one top-level field into s, or skips
// it, and returns the bit of the summary it gave.
func (s *manifestSummary) decodeField(dec *json.Decoder, field string) (int, error) {
	switch field {
	case "formatVersion":
		var v json.Number
		if err := dec.Decode(&v); err != nil {
			return 0, err
		}
		if v.String() != strconv.Itoa(FormatVersion) {
			return 0, fmt.Errorf("%w: manifest formatVersion %s; this mover reads version %d only", ErrUnknownFormat, v, FormatVersion)
		}
		s.FormatVersion = FormatVersion
		return hasVersion, nil
	case "createdAt":
		return hasCreatedAt, dec.Decode(&s.CreatedAt)
	case "source":
		return hasSource, dec.Decode(&s.Source)
	case "compression":
		return hasCompression, dec.Decode(&s.Compression)
	case "archive":
		return hasArchive, dec.Decode(&s.Archive)
	case "dataFiles":
		return hasDataFiles, dec.Decode(&s.DataFiles)
	case "files":
		n, err := countDataFiles(dec)
		s.DataFiles = n
		return hasDataFiles, err
	}
	return 0, skipValue(dec)
}

// countDataFiles counts the data files of a manifest's list of files,
// one entry in memory at a time.
func countDataFiles(dec *json.Decoder) (int, error) {
	tok, err := dec.Token()
	if err != nil || tok == nil {
		return 0, err
	}
	if tok != json.Delim('[') {
		return 0, errors.New("not a list")
	}
	n := 0
	for dec.More() {
		var f struct {
			Path string `json:"path"`
		}
		if err := dec.Decode(&f); err != nil {
			return 0, err
		}
		if strings.HasPrefix(f.Path, DataPrefix) {
			n++
		}
	}
	_, err = dec.Token() // ]
	return n, err
}

// skipValue reads past the next value, one token at a time.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// validate checks the summary as Manifest.validate checks the manifest.
func (s *manifestSummary) validate() error {
	if _, err := ParseCompression(string(s.Compression)); err != nil || s.Compression == "" {
		return fmt.Errorf("%w: manifest compression %q", ErrCorruptArchive, s.Compression)
	}
	if s.Archive.Name != s.Compression.ArchiveName() {
		return fmt.Errorf("%w: manifest archive name %q does not match compression %q", ErrCorruptArchive, s.Archive.Name, s.Compression)
	}
	if s.Archive.Size < 0 || !isSHA256(s.Archive.SHA256) {
		return fmt.Errorf("%w: manifest archive size or sha256 is malformed", ErrCorruptArchive)
	}
	if s.DataFiles < 0 {
		return fmt.Errorf("%w: manifest says %d data files", ErrCorruptArchive, s.DataFiles)
	}
	if len(s.Source.Namespace) > maxSourceNamespaceLength || len(s.Source.Name) > maxSourceFieldLength || len(s.Source.UID) > maxSourceFieldLength {
		return fmt.Errorf("%w: manifest source is longer than an Echo's namespace, name and UID can be", ErrCorruptArchive)
	}
	return nil
}

// countingReader counts the bytes read, and keeps the first error of its
// source other than the end of it.
type countingReader struct {
	r   io.Reader
	n   int64
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && !errors.Is(err, io.EOF) && c.err == nil {
		c.err = err
	}
	return n, err
}
